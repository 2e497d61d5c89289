"""The reference README's tables at a glance, rendered from its CSVs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from pimcloud.analysis.reference_summary import BEGIN, END, render, with_summary, write_summary
from pimcloud.runs.layout import REFERENCE_DIR


def write_tables(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    cell = {"study": "s", "cores": 4, "qos_ns": 50_000.0, "overhead_us": 0.0,
            "generator_us": 1.0, "mean_serial_us": 0.0, "sample_rps": 1000.0,
            "sample_requests": 300, "sample_p99_ns": 30_000.0,
            "model_p99_at_sample_ns": 31_000.0, "model_valid": True,
            "sample_host_seconds": 450.0, "setup_host_seconds": 250.0, "carried": False}
    pd.DataFrame([
        {"arch": "arch1", "app": "kvstore", **cell, "tail_over_qos": 0.65,
         "max_load_rps": 196_917.0, "mean_occupied_us": 2.7, "normalized_max_load": 1.0},
        {"arch": "arch8", "app": "kvstore", **cell, "tail_over_qos": 1.66,
         "max_load_rps": 0.0, "mean_occupied_us": 8.5, "normalized_max_load": 0.0},
    ]).to_csv(folder / "table_iii.csv", index=False)
    pd.DataFrame([{"arch": "arch9", "app": "kvstore", "policy": p, "normalized_to": "arch8",
                   "normalized_max_load": v} for p, v in (("cc", 0.97), ("ft+mig", 0.86))]
                 ).to_csv(folder / "placement_table2.csv", index=False)
    pd.DataFrame([{"claim": "Arch 8 beats every CPU-centric architecture",
                   "verdict": "does not hold", "numbers": "arch8 0.00 against arch1 1.00",
                   "qos": "knee"}]).to_csv(folder / "claims.csv", index=False)


def test_a_made_cell_shows_its_numbers_beside_the_papers(tmp_path: Path) -> None:
    write_tables(tmp_path)
    block = render(tmp_path)
    assert block.startswith(BEGIN) and block.rstrip().endswith(END)
    arch8 = next(line for line in block.splitlines() if line.startswith("| arch8 |"))
    # kvstore is the second service in the paper's order; the paper says 0.40 · 1.15.
    assert arch8.split(" | ")[2] == "**1.66 · 0.00** (0.40 · 1.15)"
    assert arch8.split(" | ")[1] == "· (0.58 · 0.79)"  # oltp: not made
    assert "2 of Table III's 54 cells are made" in block
    assert "arch8 kvstore | s | 0 | 8.50 us | 1,000, 300, 30.0 us (31.0 us) | 450/250" in block
    # Fig. 3: the paper's order of bars, a bar not made marked as such.
    assert "| service | normalised to | cc | ft+mig |" in block
    assert "| kvstore | arch8 | 0.97 | 0.86 |" in block
    assert "| **does not hold** |" in block


def test_the_block_is_replaced_and_the_prose_kept(tmp_path: Path) -> None:
    readme = f"# R\n\nintro\n\n{BEGIN}\nold numbers\n{END}\n\n## How\n\nprose\n"
    new = with_summary(readme, f"{BEGIN}\nnew numbers\n{END}\n")
    assert new == f"# R\n\nintro\n\n{BEGIN}\nnew numbers\n{END}\n\n## How\n\nprose\n"
    assert with_summary("# R\n", "B\n") == "# R\n\nB\n"  # no block yet: appended
    with pytest.raises(ValueError, match="one summary marker without the other"):
        with_summary(f"# R\n{BEGIN}\n", "B\n")
    write_tables(tmp_path)
    (tmp_path / "README.md").write_text(readme)
    text = write_summary(tmp_path).read_text()
    assert "old numbers" not in text and "| arch8 |" in text and text.endswith("prose\n")


def test_the_shipped_readme_shows_the_shipped_csvs() -> None:
    # Fails when a CSV was changed without `pimcloud study report DIR --reference`, or the
    # block was edited by hand.
    readme = (REFERENCE_DIR / "README.md").read_text()
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    assert readme[start:end] + "\n" == render(REFERENCE_DIR)


def test_blanks_and_tables_written_before_a_column_show_a_dash(tmp_path: Path) -> None:
    # A cell whose model was not valid (no max load), a search that found no miss, a claim
    # whose text has a `|`, and tables of an older bundle without later columns.
    pd.DataFrame([{"arch": "arch1", "app": "kvstore", "tail_over_qos": 0.5,
                   "max_load_rps": float("nan"), "mean_occupied_us": 2.7}]).to_csv(
        tmp_path / "table_iii.csv", index=False)
    pd.DataFrame([{"arch": "arch1", "app": "kvstore", "qos_ns": 1e6,
                   "predicted_rps": 1000.0, "measured_rps": 0.0, "error": float("nan"),
                   "probes": 2}]).to_csv(tmp_path / "validation.csv", index=False)
    pd.DataFrame([{"claim": "a | b", "verdict": "holds", "numbers": "x"}]).to_csv(
        tmp_path / "claims.csv", index=False)
    pd.DataFrame([{"arch": "arch9", "app": "kvstore", "policy": "ft",
                   "normalized_max_load": 1.0}]).to_csv(tmp_path / "placement.csv", index=False)
    block = render(tmp_path)
    assert "nan" not in block.lower()
    assert "| arch1 kvstore | - | - | 2.70 us | -, -, - (-) | -/- |" in block
    assert "| arch1 kvstore | - | 1.00 ms | 1,000 | 0 (-) | - | 2 | - |" in block
    assert "| a \\| b | - | **holds** | x |" in block  # one cell, not two
    assert "| kvstore | - | 1.00 |" in block
