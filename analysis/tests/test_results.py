"""Readers of guest results and the campaign loader, on files written here."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pimcloud.analysis.campaign import load_campaign, with_axes
from pimcloud.analysis.results import (
    REQUEST_COLUMNS,
    ResultsFormatError,
    ResultsWarning,
    read_decision_log,
    read_lats_bin,
    read_request_table,
    read_run_record,
    write_lats_bin,
)
from pimcloud.analysis.synthetic import server_stats_text


def test_lats_bin_is_tailbench_triples(tmp_path: Path) -> None:
    path = tmp_path / "lats.bin"
    triples = [(10, 200, 210), (0, 300, 300), (2**40, 5, 2**40 + 5)]
    path.write_bytes(b"".join(struct.pack("<QQQ", *t) for t in triples))
    frame = read_lats_bin(path)
    assert frame[["queue_ns", "service_ns", "sojourn_ns"]].to_numpy().tolist() == [
        list(t) for t in triples]
    assert frame["request"].tolist() == [0, 1, 2]


def test_lats_bin_round_trip_and_partial_record(tmp_path: Path) -> None:
    path = tmp_path / "lats.bin"
    frame = pd.DataFrame({"queue_ns": [1, 2], "service_ns": [3, 4], "sojourn_ns": [4, 6]})
    write_lats_bin(path, frame)
    assert path.stat().st_size == 48
    with path.open("ab") as stream:
        stream.write(b"\x01\x02\x03")
    with pytest.warns(ResultsWarning, match="dropped the last 3 bytes"):
        back = read_lats_bin(path)
    pd.testing.assert_frame_equal(back.drop(columns="request"), frame, check_dtype=False)


def test_request_table_csv_and_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame({c: np.arange(3) * (i + 1) for i, c in enumerate(REQUEST_COLUMNS)})
    frame.to_csv(tmp_path / "requests.csv", index=False)
    frame.to_parquet(tmp_path / "requests.parquet")
    for name in ("requests.csv", "requests.parquet"):
        pd.testing.assert_frame_equal(read_request_table(tmp_path / name), frame,
                                      check_dtype=False)
    frame.drop(columns="thread").to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ResultsFormatError, match=r"lacks columns \['thread'\]"):
        read_request_table(tmp_path / "bad.csv")


def test_decision_log(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    records = [
        {"t_ns": 200, "event": "upsize", "app": "xapian", "from_cores": [0], "to_cores": [0, 4],
         "slack": -0.1},
        {"t_ns": 100, "event": "init", "app": "xapian", "to_cores": 1},
        {"t_ns": 300, "event": "migrate", "app": "xapian", "pages_moved": 512},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "\n")
    frame = read_decision_log(path)
    assert frame["t_ns"].tolist() == [100, 200, 300]
    assert frame["cores_after"].tolist()[:2] == [1.0, 2.0]
    assert frame["pages_moved"].tolist() == [0, 0, 512]
    path.write_text('{"t_ns": 1, "event": "x"}\n')
    with pytest.raises(ResultsFormatError, match=r"line 1 lacks \['app'\]"):
        read_decision_log(path)
    path.write_text('{"t_ns": 1, "event": "x", "app": "a"}\n{oops\n')
    with pytest.raises(ResultsFormatError, match="line 2 is not JSON"):
        read_decision_log(path)


def test_run_record_needs_run_id(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text('{"app": "xapian"}')
    with pytest.raises(ResultsFormatError, match="run_id"):
        read_run_record(path)


def _write_run(root: Path, run_id: str, axes: dict[str, object], apps: dict[str, int],
               stats: bool = False, table: bool = False) -> Path:
    run = root / "runs" / run_id
    (run / "results").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": run_id, **axes}))
    rng = np.random.default_rng(len(run_id))
    for app, count in apps.items():
        folder = run / "results" / app
        folder.mkdir()
        service = rng.integers(1000, 2000, count)
        queue = rng.integers(0, 500, count)
        lats = pd.DataFrame({"queue_ns": queue, "service_ns": service,
                             "sojourn_ns": queue + service})
        write_lats_bin(folder / "lats.bin", lats)
        if table:
            scheduled = np.arange(count) * 1000
            pd.DataFrame({
                "request_id": np.arange(count), "thread": 0, "scheduled_ns": scheduled,
                "start_ns": scheduled + queue, "end_ns": scheduled + queue + service,
                "queue_ns": queue, "service_ns": service, "sojourn_ns": queue + service,
            }).to_csv(folder / "requests.csv", index=False)
    (run / "results" / "decisions.jsonl").write_text(
        json.dumps({"t_ns": 5, "event": "init", "app": next(iter(apps))}) + "\n")
    if stats:
        (run / "m5out").mkdir()
        (run / "m5out" / "stats.txt").write_text(server_stats_text(2, host_cpus=1, pim_cpus=1))
    return run


def test_campaign_joins_everything_by_run_id(tmp_path: Path) -> None:
    _write_run(tmp_path, "a", {"app": "xapian", "rps": 100}, {"xapian": 50}, stats=True)
    _write_run(tmp_path, "b", {"app": "xapian", "rps": 200}, {"xapian": 70, "masstree": 30},
               table=True)
    campaign = load_campaign(tmp_path)
    assert campaign.runs["run_id"].tolist() == ["a", "b"]
    assert set(campaign.axes) == {"app", "rps"}
    counts = campaign.requests.groupby(["run_id", "app"]).size().to_dict()
    assert counts == {("a", "xapian"): 50, ("b", "masstree"): 30, ("b", "xapian"): 70}
    # run b has request tables, which win over its lats.bin
    assert campaign.requests.loc[campaign.requests["run_id"] == "b", "end_ns"].notna().all()
    assert set(campaign.stats["run_id"]) == {"a"}
    assert campaign.decisions["run_id"].tolist() == ["a", "b"]
    joined = with_axes(campaign.requests, campaign)
    assert set(joined.loc[joined["run_id"] == "b", "rps"]) == {200}


def test_campaign_rejects_duplicate_run_ids(tmp_path: Path) -> None:
    _write_run(tmp_path / "x", "a", {}, {"xapian": 3})
    _write_run(tmp_path / "y", "a", {}, {"xapian": 3})
    with pytest.raises(ValueError, match="run_id 'a' is also used"):
        load_campaign(tmp_path)


def test_campaign_without_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no run folders"):
        load_campaign(tmp_path)


def test_execution_record_is_not_an_axis(tmp_path: Path) -> None:
    run = _write_run(tmp_path, "a", {"app": "x", "rps": 10}, {"x": 3})
    record = json.loads((run / "run.json").read_text())
    record["execution"] = {"backend": "gem5", "host_seconds": 12.5, "attempt": 1}
    (run / "run.json").write_text(json.dumps(record))
    campaign = load_campaign(tmp_path, with_stats=False)
    assert set(campaign.axes) == {"app", "rps"}
    assert campaign.runs.loc[0, "host_seconds"] == 12.5
    assert campaign.runs.loc[0, "backend"] == "gem5"


def test_decision_log_reads_empty_core_lists_as_no_change(tmp_path: Path) -> None:
    """As the agent writes them: an untimed start line, then a concentrate with []."""
    from pimcloud.analysis import metrics

    log = tmp_path / "decisions.jsonl"
    log.write_text(
        '{"t_ns":0,"event":"start","app":"","from_cores":[],"to_cores":[]}\n'
        '{"t_ns":800000000,"event":"initial","app":"kv","from_cores":[],"to_cores":[4,5]}\n'
        '{"t_ns":1200000000,"event":"concentrate","app":"kv","from_cores":[],"to_cores":[],'
        '"pages_moved":1710}\n'
        '{"t_ns":1300000000,"event":"exit","app":"kv","from_cores":[4,5],"to_cores":[]}\n'
        '{"t_ns":1300000000,"event":"be-cpus","app":"be","from_cores":[6],"to_cores":[]}\n')
    frame = read_decision_log(log).assign(run_id="r")
    cores = frame["cores_after"]
    assert cores.iloc[1] == 2.0 and pd.isna(cores.iloc[2]) and cores.iloc[3] == 0.0
    assert cores.iloc[4] == 0.0  # an emptied best-effort pool
    # Convergence counts from the first timed line, not from the start line's t_ns 0.
    assert metrics.convergence_time(frame)["convergence_s"].tolist() == pytest.approx([0.5])
