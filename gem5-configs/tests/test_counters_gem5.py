"""The hardware counters in gem5, end to end: the paper board with PimCounters, the guest
driver, and `pimcloud-hw hotset` (a known hot set over two stacks, some frames shared
between a host and a PIM CPU, some written) read back through the hot-page call.

Needs GEM5 pointing at a gem5 built with this checkout's scons-extra (PimCounters)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from pimcloud.gem5_runner import NO_GEM5, Gem5Missing
from pimcloud.gem5_session import Gem5Inputs, boot, restore

pytestmark = [
    pytest.mark.gem5,
    pytest.mark.slow,
    pytest.mark.skipif(not os.environ.get("GEM5"), reason=NO_GEM5),
]

HOTSET_SCENARIO = """#!/bin/sh
export PATH="/opt/pimcloud/bin:/sbin:/usr/sbin:/bin:/usr/bin:$PATH"
m5 switchcpu
pimcloud-hw info > "$PIMCLOUD_RESULTS/info.txt" 2>&1
pimcloud-hw hotset --nodes 1,2 --pages 200 --cold 2000 --rounds 100 \\
    > "$PIMCLOUD_RESULTS/hotset.json" 2>&1
echo $? > "$PIMCLOUD_RESULTS/hotset.rc"
pimcloud-hw cpus > "$PIMCLOUD_RESULTS/cpus.txt" 2>&1
"""


@pytest.fixture(scope="module")
def counters_boot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Gem5Inputs, Path]:
    from pimcloud.gem5_cli import gem5_inputs

    try:
        inputs = gem5_inputs("paper", None, None, 8, counters=True)
    except Gem5Missing as missing:
        pytest.skip(f"this gem5 cannot run the counters: {missing}")
    folder = tmp_path_factory.mktemp("paper-counters") / "boot"
    report = boot(inputs, folder)
    assert report.ok, report.problems
    return inputs, folder


def test_hot_page_call_finds_a_known_hot_set_with_its_types(
        counters_boot: tuple[Gem5Inputs, Path], tmp_path: Path) -> None:
    inputs, folder = counters_boot
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    (scenario / "run.sh").write_text(HOTSET_SCENARIO)
    run = restore(inputs, folder, scenario, tmp_path / "run", fast_forward=True,
                  max_seconds=1.0)
    assert run.ok, run.problems
    results = tmp_path / "run" / "results"
    info = (results / "info.txt").read_text()
    assert info.startswith("stacks ") and "node 1 " in info and "node 2 " in info, info
    answer = json.loads((results / "hotset.json").read_text())
    assert len(answer["memories"]) == 2, answer
    for memory in answer["memories"]:
        assert memory["precision"] >= 0.9, answer
        assert memory["shared_right"] >= 0.9 * memory["hits"], answer
        assert memory["written_right"] >= 0.9 * memory["hits"], answer
        assert memory["scan_ps"] < 10 * 10**9, answer  # the paper: under 10 ms
    cpus = [line.split() for line in (results / "cpus.txt").read_text().splitlines()]
    host = next(c for c in cpus if int(c[0]) == answer["host_cpu"])
    assert int(host[1]) > 0 and int(host[2]) > 0  # misses and their outstanding cycles


def test_counters_latency_estimate_beside_the_measured_load_to_use_time(
        counters_boot: tuple[Gem5Inputs, Path], tmp_path: Path) -> None:
    """Seed 003's estimate from the counters (c_cache + their mean time past the caches)
    against memprobe's load-to-use time for host and PIM cores, local and remote."""
    from pimcloud.topology import load_topology
    from pimcloud.workloads.memprobe import format_table, probe_results, write_scenario

    inputs, folder = counters_boot
    topology = load_topology(inputs.topology).with_memory_divided(inputs.mem_divisor)
    points = write_scenario(tmp_path / "scenario", topology, loads=20_000,
                            patterns=("random",))
    run = restore(inputs, folder, tmp_path / "scenario", tmp_path / "run", fast_forward=True,
                  max_seconds=1.0)
    assert run.ok, run.problems
    rows = probe_results(points, tmp_path / "run" / "results" / "memprobe.jsonl",
                         tmp_path / "run" / "m5out" / "stats.txt", topology)
    print(format_table(rows))
    for row in rows:
        assert row["counters_estimate_ns"] is not None, row
        assert row["sched_getcpu_right"], row  # the kernel's rseq, not the vDSO's `lsl`
        # The counters see every read the chase sends to memory; most loads miss.
        gap = row["counters_estimate_ns"] / row["gem5_ns_per_load"] - 1
        print(f"{row['kind']:<11} cpu {row['cpu']} -> node {row['node']}: estimate "
              f"{row['counters_estimate_ns']:.1f} ns, load-to-use {row['gem5_ns_per_load']:.1f}"
              f" ns ({gap:+.1%})")
        assert abs(gap) <= 0.15, row


# The job's 32 MiB are four times the host's 8 MiB L3, so the triad streams from memory;
# it is set up (first touch) on the atomic cores, before the switch. Each level is one
# stats dump of 2 ms; the script sleeps meanwhile (no polling traffic) on another core.
THROTTLE_SCENARIO = """#!/bin/sh
export PATH="/opt/pimcloud/bin:/sbin:/usr/sbin:/bin:/usr/bin:$PATH"
R="$PIMCLOUD_RESULTS"
taskset -pc {other} $$ > /dev/null
taskset -c {cpu} pimcloud-be membw --threads 1 --mib 32 --interval-ms 1 \\
    --stats-file "$R/membw.jsonl" > /dev/null &
job=$!
until [ -s "$R/membw.jsonl" ]; do sleep 0.01; done
m5 switchcpu
for level in {levels}; do
  pimcloud-hw throttle {cpu} $level > "$R/throttle-$level.txt" 2>&1
  m5 resetstats
  sleep 0.002
  m5 dumpstats
done
kill $job; wait $job
pimcloud-hw throttle {cpu} 0 > /dev/null
"""


def test_throttle_levels_lower_a_membw_jobs_bandwidth(
        counters_boot: tuple[Gem5Inputs, Path], tmp_path: Path) -> None:
    """A membw job on a host core at five throttle levels: the controllers' traffic
    in each level's stats dump falls as the level rises."""
    from pimcloud.analysis.memlat import memory_bandwidth
    from pimcloud.components.stat_names import stat_names
    from pimcloud.stats_file import parse_stats
    from pimcloud.topology import load_topology

    inputs, folder = counters_boot
    levels = [0, 1, 2, 4, 9]
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    (scenario / "run.sh").write_text(THROTTLE_SCENARIO.format(
        levels=" ".join(map(str, levels)), cpu=0, other=1))
    run = restore(inputs, folder, scenario, tmp_path / "run", fast_forward=True,
                  max_seconds=1.0)
    assert run.ok, run.problems
    topology = load_topology(inputs.topology).with_memory_divided(inputs.mem_divisor)
    stats = parse_stats(tmp_path / "run" / "m5out" / "stats.txt").stats
    traffic = memory_bandwidth(stats, stat_names(topology).controllers)
    gbps = traffic["gbps"].tolist()[:len(levels)]  # gem5 adds a dump at exit
    results = tmp_path / "run" / "results"
    for level, value in zip(levels, gbps, strict=True):
        answer = (results / f"throttle-{level}.txt").read_text()
        assert answer.startswith("ok cpu 0 throttle"), answer
        print(f"throttle level {level}: {value:.2f} GB/s at the controllers")
    assert all(a > b for a, b in itertools.pairwise(gbps)), gbps
