"""The hardware counters' statistics and the controllers' traffic, read per dump."""

from __future__ import annotations

from pathlib import Path

import pytest
from pimcloud.analysis import memlat
from pimcloud.analysis.synthetic import dump_text, stat_line, vector_lines
from pimcloud.components.stat_names import stat_names
from pimcloud.stats_file import parse_stats
from pimcloud.topology import load_topology


def _dump(seconds: float, misses: list[float], ticks: list[float], read: float,
          written: float) -> str:
    names = stat_names(load_topology("mini"))
    lines = [stat_line("simSeconds", seconds), stat_line("simFreq", 1e12)]
    lines += vector_lines(f"{names.counters}.cpuMisses", misses, None, "reads", "Count")
    lines += vector_lines(f"{names.counters}.cpuOutstandingTicks", ticks, None, "ticks", "Tick")
    for i, controller in enumerate(names.controllers):
        lines.append(stat_line(f"{controller}.bytesReadSys", read if i == 0 else 0))
        lines.append(stat_line(f"{controller}.bytesWrittenSys", written if i == 1 else 0))
    return dump_text(lines)


def test_counters_and_traffic_per_dump(tmp_path: Path) -> None:
    names = stat_names(load_topology("mini"))
    path = tmp_path / "stats.txt"
    path.write_text(_dump(0.001, [10, 0, 4, 0, 0, 0], [1e6, 0, 8e5, 0, 0, 0], 6e6, 2e6)
                    + _dump(0.002, [5, 0, 0, 0, 0, 0], [2e6, 0, 0, 0, 0, 0], 1e6, 0))
    stats = parse_stats(path).stats
    device = memlat.device_memory_latency(stats, names.counters)
    first = device[device["dump"] == 0].set_index("cpu")
    assert first.loc[0, "memory_ns"] == pytest.approx(100.0)  # 1e6 ps over 10 reads
    assert first.loc[2, "memory_ns"] == pytest.approx(200.0)
    assert first.loc[1, "memory_ns"] != first.loc[1, "memory_ns"]  # no reads: NaN
    assert device[device["dump"] == 1].set_index("cpu").loc[0, "memory_ns"] == \
        pytest.approx(400.0)
    traffic = memlat.memory_bandwidth(stats, names.controllers).set_index("dump")
    assert traffic.loc[0, "gbps"] == pytest.approx(8.0)  # 8e6 bytes in 1 ms
    assert traffic.loc[1, "gbps"] == pytest.approx(0.5)
    # A board without the counters gives no rows, not an error.
    assert memlat.device_memory_latency(stats, "board.nothing").empty


def test_report_puts_the_counters_estimate_beside_gem5s() -> None:
    import pandas as pd
    from pimcloud.analysis.report import _counters_beside_gem5

    estimates = pd.DataFrame({  # gem5's estimate at the LLC: 40 cycles at 2 GHz + memory
        "run_id": ["r", "r"], "cpu": [0, 0], "c_cache_cycles": [40, 40],
        "frequency_hz": [2e9, 2e9], "misses": [10, 30], "latency_ns": [100.0, 120.0]})
    device = pd.DataFrame({"run_id": ["r", "r"], "cpu": [0, 0], "misses": [10, 10],
                           "outstanding_ticks": [0, 0], "memory_ns": [80.0, 100.0]})
    row = _counters_beside_gem5(estimates, device).iloc[0]
    assert row["c_cache_ns"] == pytest.approx(20.0)
    assert row["gem5_estimate_ns"] == pytest.approx(115.0)  # weighted by misses
    assert row["counters_estimate_ns"] == pytest.approx(110.0)
    assert row["difference"] == pytest.approx(110 / 115 - 1)
