"""The hardware counters' statistics and the controllers' traffic, read per dump."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pimcloud.analysis import memlat
from pimcloud.analysis.synthetic import (
    controller_window_dump,
    dump_text,
    stat_line,
    vector_lines,
)
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


def _window(final: float, ticks: float, detailed: float, boot: float, queue_ticks: float,
            reads: float, queue_length: float, switched_in: float | None = None) -> str:
    return controller_window_dump(load_topology("mini"), final, ticks, detailed, boot,
                                  reads, queue_ticks, queue_length, switched_in)


def test_a_run_in_several_processes_counts_each_access_once(tmp_path: Path) -> None:
    topology = load_topology("mini")
    names = stat_names(topology)
    path = tmp_path / "stats.txt"
    path.write_text(
        # process 1 (from tick 1e9, on the boot cores until 1.5e9): two progress dumps,
        # cumulative
        _window(2e9, 1e9, 5e6, 1e5, 1e8, 1000, 1.0, 5e8)
        + _window(3e9, 2e9, 9e6, 1e5, 3e8, 3000, 2.0, 1.5e9)
        # process 2 (resumed at 3e9): the measured part ends (dump and reset) at 4e9 ...
        + _window(4e9, 1e9, 4e6, 0, 2e8, 1000, 4.0)
        # ... and the wrap-up on the boot cores, whose reads bypass the queues
        + _window(5e9, 1e9, 16, 8e6, 0, 500, 0.0))
    stats = parse_stats(path).stats
    assert sorted(memlat.window_dumps(stats)["dump"].unique()) == [1, 2, 3]
    detailed = memlat.detailed_dumps(stats, names, stat_names(topology, "boot"))
    assert sorted(detailed["dump"].unique()) == [1, 2]
    # Of process 1's 2 ms the detailed cores ran 1.5; process 2 has no core counts.
    seconds = memlat.detailed_seconds(detailed, names)
    assert seconds.tolist() == pytest.approx([1.5e-3, 1e-3])
    queues = memlat.controller_queues(detailed, {names.controllers[0]: "stack0"},
                                      seconds=seconds)
    row = queues.set_index("memory").loc["stack0"]
    assert row["reads"] == 4000
    assert row["queue_ns"] == pytest.approx(5e8 / 4000 / 1e3)  # 125 ns
    assert row["access_ns"] == pytest.approx(140.0)
    # The held length averaged over each dump, over the time the detailed cores ran
    assert row["read_queue"] == pytest.approx((2.0 * 2 + 4.0 * 1) / 2.5)
    assert row["read_gbps"] == pytest.approx(4000 * 64 / 2.5e-3 / 1e9)
    assert row["simulated_s"] == pytest.approx(2.5e-3)
    whole = memlat.controller_queues(detailed, {names.controllers[0]: "stack0"}).iloc[0]
    assert whole["simulated_s"] == pytest.approx(3e-3)
    # A memory served by several controllers (mini's stack 1 the x86 hole splits, here
    # all three as one memory): reads and queues add up, the wait per read stays.
    count = len(names.controllers)
    both = memlat.controller_queues(detailed, dict.fromkeys(names.controllers, "stack"),
                                    per="memory").set_index("memory").loc["stack"]
    assert both["reads"] == 4000 * count
    assert both["queue_ns"] == pytest.approx(125.0)
    assert both["read_queue"] == pytest.approx(count * whole["read_queue"])
    assert both["read_gbps"] == pytest.approx(count * whole["read_gbps"])
    assert both["simulated_s"] == pytest.approx(3e-3)
    with pytest.raises(ValueError, match="per="):
        memlat.controller_queues(detailed, {}, per="stack")


def test_missing_statistics_are_unknown_and_dumps_without_ticks_stay(tmp_path: Path) -> None:
    names = stat_names(load_topology("mini"))
    path = tmp_path / "stats.txt"
    controller = names.controllers[0]
    # A dump of a board whose controllers lack queue statistics, and no finalTick
    path.write_text(dump_text([stat_line("simSeconds", 0.001), stat_line("simFreq", 1e12),
                               stat_line(f"{controller}.readBursts", 10)])
                    + _window(2e9, 1e9, 5e6, 0, 1e8, 1000, 1.0))
    stats = parse_stats(path).stats
    assert sorted(memlat.window_dumps(stats)["dump"].unique()) == [0, 1]
    first = stats[stats["dump"] == 0]
    row = memlat.controller_queues(first, {controller: "stack0"}).iloc[0]
    assert row["reads"] == 10
    assert np.isnan(row["queue_ns"]) and np.isnan(row["read_queue"])
    assert np.isnan(row["read_gbps"])
