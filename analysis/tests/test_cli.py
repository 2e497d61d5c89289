"""``pimcloud analyze`` through the project's CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from pimcloud.analysis.results import write_lats_bin
from pimcloud.cli import main

THREE = Path(__file__).parent / "fixtures" / "three_dumps.txt"


def test_analyze_stats_file_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    out = tmp_path / "stats.parquet"
    assert main(["analyze", str(THREE), "--export", str(out)]) == 0
    assert "48 statistics rows" in capsys.readouterr().out
    frame = pd.read_parquet(out)
    assert len(frame) == 48
    assert set(frame["dump"]) == {0, 2}


def test_analyze_damaged_stats_file_exits_nonzero(tmp_path: Path) -> None:
    path = tmp_path / "stats.txt"
    path.write_text(THREE.read_text()[:700])
    with pytest.warns(UserWarning, match="truncated"):
        assert main(["analyze", str(path)]) == 1


def test_analyze_campaign_summary(demo_campaign: Path, capsys: pytest.CaptureFixture[str]
                                  ) -> None:
    assert main(["analyze", str(demo_campaign)]) == 0
    assert "sphinx-pim-600" in capsys.readouterr().out


def test_analyze_campaign_report_with_qos_option(tmp_path: Path) -> None:
    for rps in (100, 200):
        run = tmp_path / "c" / f"r{rps}"
        (run / "x").mkdir(parents=True)
        (run / "run.json").write_text(f'{{"run_id": "r{rps}", "app": "x", "rps": {rps}}}')
        sojourn = [rps * 10_000] * 3
        write_lats_bin(run / "x" / "lats.bin", pd.DataFrame(
            {"queue_ns": 0, "service_ns": sojourn, "sojourn_ns": sojourn}))
    out = tmp_path / "r"
    assert main(["analyze", str(tmp_path / "c"), "--report", "--out", str(out),
                 "--qos", "x=1.5"]) == 0
    loads = pd.read_csv(out / "tables" / "max_load_under_qos.csv")
    assert loads["max_load"].tolist() == [100]  # 1 ms meets 1.5 ms, 2 ms does not


def test_analyze_bad_arguments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["analyze", str(tmp_path / "missing")]) == 2
    assert "no such campaign folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["analyze", str(tmp_path), "--qos", "sphinx"])
    assert "APP=MILLISECONDS" in capsys.readouterr().err
