"""A user's runs beside the bundle's reference results."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from pimcloud.analysis.reference import beside_reference, read_reference


def write_reference(folder: Path) -> None:
    folder.mkdir()
    pd.DataFrame({"arch": ["arch1"] * 3, "app": ["kvstore"] * 3,
                  "utilisation": [0.1, 0.5, 0.9], "rps": [1000.0, 5000.0, 9000.0],
                  "p99_ns": [1e5, 2e5, 1e6]}).to_csv(folder / "curves.csv", index=False)
    pd.DataFrame({"arch": ["arch1"], "app": ["kvstore"], "max_load_rps": [8000.0]}).to_csv(
        folder / "table_iii.csv", index=False)


def test_runs_of_a_covered_cell_get_the_reference_at_their_load(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    write_reference(reference)
    runs = pd.DataFrame({"run_id": ["a", "b", "c", "d"],
                         "app": ["kvstore", "kvstore", "kvstore", "imgdnn"],
                         "topology": ["arch1", "arch1", "arch8", "arch1"],
                         "rps": [3000.0, 20000.0, 3000.0, 100.0],
                         "p99_ns": [3e5, 5e6, 1e5, 1e6]})
    beside = beside_reference(runs, reference)
    assert list(beside["run_id"]) == ["a", "b"]  # arch8 and imgdnn are not in it
    inside = beside.iloc[0]
    assert inside["reference_p99_ns"] == pytest.approx(1.5e5)  # between 1000 and 5000 rps
    assert inside["p99_over_reference"] == pytest.approx(2.0)
    assert inside["reference_max_load_rps"] == 8000.0
    assert math.isnan(beside.iloc[1]["reference_p99_ns"])  # past the curve's end


def test_no_reference_no_rows(tmp_path: Path) -> None:
    assert read_reference("curves", tmp_path).empty
    (tmp_path / "validation.csv").write_text("")  # a table that had no rows
    assert read_reference("validation", tmp_path).empty
    runs = pd.DataFrame({"run_id": ["a"], "app": ["kvstore"], "topology": ["arch1"],
                         "rps": [1.0], "p99_ns": [1.0]})
    assert beside_reference(runs, tmp_path).empty
