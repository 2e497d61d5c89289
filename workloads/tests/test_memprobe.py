"""The memory-latency probe: its points per topology, the real program on this host, the
real program in a QEMU guest of the paper topology (pages land on the node asked for), and
the join of guest lines with gem5 stats dumps."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pimcloud.topology import load_topology
from pimcloud.workloads.memprobe import (
    ProbeError,
    find_program,
    format_table,
    probe_points,
    probe_results,
    scenario_script,
    write_scenario,
)


def _program() -> Path:
    try:
        return find_program()
    except ProbeError as missing:
        pytest.skip(str(missing))


def test_paper_points_cover_host_pim_local_and_pim_remote() -> None:
    points = probe_points(load_topology("paper"))
    pairs = [("host", 0, 1), ("host", 0, 2), ("pim-local", 4, 1), ("pim-remote", 4, 2),
             ("pim-local", 12, 2), ("pim-remote", 12, 1)]
    assert [(p.kind, p.cpu, p.node) for p in points] == pairs * 2
    assert [p.pattern for p in points] == ["random"] * 6 + ["row-local"] * 6
    host, pim = points[0], points[2]
    assert host.outer_cache == "board.cache_hierarchy.host_l3"
    assert host.bytes >= 8 * (8 << 20)  # well beyond the 8 MiB L3
    assert pim.outer_cache == "board.cache_hierarchy.stack0_l1d0"
    script = scenario_script(points, 1000, switch_cpu=True)
    assert "--point 4:2:4194304:row-local" in script
    assert "--switch-cpu" in script and "--m5-stats" in script
    with pytest.raises(ProbeError, match="choose from"):
        probe_points(load_topology("paper"), ("zigzag",))


def test_tiered_probes_the_ddr_node_from_the_host() -> None:
    points = probe_points(load_topology("tiered"), ("random",))
    assert [(p.kind, p.node) for p in points if p.kind == "host"] == [
        ("host", 0), ("host", 1), ("host", 2)]


def test_the_real_probe_runs_on_this_host() -> None:
    program = _program()
    done = subprocess.run([str(program), "--point", "0:0:8M", "--point", "0:0:64K",
                           "--point", "0:0:8M:row-local", "--loads", "200000"],
                          capture_output=True, text=True, timeout=120, check=True)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 3
    big, small, row_local = rows
    assert row_local["pattern"] == "row-local" and big["pattern"] == "random"
    assert big["pages_on_node"] == big["pages_checked"] > 0
    # An L1/L2-resident chain is faster than one spread over 8 MiB on any real machine.
    assert 0 < small["ns_per_load"] < big["ns_per_load"]


@pytest.mark.parametrize("args, message", [
    (["--point", "0"], "CPU:NODE"),
    (["--point", "0:63"], "cannot bind memory to node 63"),
    (["--point", "0:0:1X"], "optional K, M or G"),
    (["--point", "0:0:1M:zigzag"], "use random or row-local"),
    ([], "at least one --point"),
])
def test_bad_probe_arguments_are_named(args: list[str], message: str) -> None:
    done = subprocess.run([str(_program()), *args], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2 and message in done.stderr


STATS_DUMP = """
---------- Begin Simulation Statistics ----------
simSeconds            {seconds:.12f}   # Number of seconds simulated (Second)
board.cache_hierarchy.host_l3.overallHits::total      {hits}   # overall hits (Count)
board.cache_hierarchy.host_l3.overallMisses::total    {misses}   # overall misses (Count)
board.memory.router.pairAvgLatency::from0_to1   8400.0   # links (Tick/Count)
board.memory.mem_ctrls0.requestorReadAccesses::processor.detailed_cores00.core.data 890
board.memory.mem_ctrls0.requestorReadAccesses::processor.detailed_cores00.core.inst 10
board.memory.mem_ctrls0.requestorReadTotalLat::processor.detailed_cores00.core.data 26700000
board.memory.mem_ctrls0.requestorReadTotalLat::processor.detailed_cores00.core.inst 300000
board.memory.mem_ctrls0.dram.readBursts   1000   # bursts (Count)
board.memory.mem_ctrls0.dram.readRowHits   250   # row hits (Count)
board.counters.cpuMisses::0   {misses}   # reads (Count)
board.counters.cpuOutstandingTicks::0   {ticks}   # ticks (Tick)

---------- End Simulation Statistics   ----------
"""


def test_results_join_guest_lines_with_stats_dumps(tmp_path: Path) -> None:
    points = probe_points(load_topology("paper"), ("random",))[:2]
    guest = tmp_path / "memprobe.jsonl"
    guest.write_text("".join(json.dumps({
        "cpu": p.cpu, "node": p.node, "loads": 1000, "ns_per_load": 70.0 + i,
        "pages_on_node": 64, "pages_checked": 64, "anon_huge_kib": 2048, "cpu_after": p.cpu,
        "sched_getcpu": p.cpu + i,  # the second one wrong, as gem5 without rseq answers
    }) + "\n" for i, p in enumerate(points)))
    stats = tmp_path / "stats.txt"
    # Two probe dumps, then the one gem5 writes at exit.
    stats.write_text(STATS_DUMP.format(seconds=65e-6, hits=100, misses=900, ticks=900 * 40000)
                     + STATS_DUMP.format(seconds=66e-6, hits=50, misses=950, ticks=0)
                     + STATS_DUMP.format(seconds=1.0, hits=0, misses=1, ticks=0))
    rows = probe_results(points, guest, stats)
    assert [round(r["gem5_ns_per_load"], 3) for r in rows] == [65.0, 66.0]
    assert "link_ns" not in rows[0]  # a breakdown needs the topology
    assert [r["sched_getcpu_right"] for r in rows] == [True, False]
    paper = load_topology("paper")
    host_to_node1 = probe_results(points, guest, stats, paper)[0]
    # 8.4 ns of links; 30 ns queue and access plus the stack's fixed front and back end.
    dram = paper.stacks[0].dram
    controller_ns = 30.0 + (dram.frontend_latency + dram.backend_latency) / 1e3
    assert host_to_node1["link_ns"] == pytest.approx(8.4)
    assert host_to_node1["controller_ns"] == pytest.approx(controller_ns)
    # The counters: 40 ns past the caches, plus the host's L1 + L2 + L3 lookups (40 cycles
    # at 2.4 GHz).
    assert host_to_node1["counters_ns"] == pytest.approx(40.0)
    assert host_to_node1["counters_estimate_ns"] == pytest.approx(40.0 + 40 / 2.4)
    assert host_to_node1["on_chip_ns"] == pytest.approx(65.0 - 8.4 - controller_ns)
    assert host_to_node1["row_hit_rate"] == pytest.approx(0.25)
    assert [r["outer_cache_hit_ratio"] for r in rows] == [0.1, 0.05]
    assert rows[1]["guest_ns_per_load"] == 71.0 and rows[0]["huge_pages"]
    assert "host" in format_table(rows)
    with pytest.raises(ProbeError, match="2 results for 3 points"):
        probe_results(probe_points(load_topology("paper"), ("random",))[:3], guest, stats)
    guest.write_text("not json\n")
    with pytest.raises(ProbeError, match="not a JSON line"):
        probe_results(points, guest, None)


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None,
                    reason="needs qemu-system-x86")
def test_probe_in_a_paper_guest_binds_every_buffer_to_its_node(tmp_path: Path) -> None:
    from pimcloud.guest import qemu
    from pimcloud.guest.kernel import build_kernel

    topology = load_topology("paper")
    points = write_scenario(tmp_path / "scenario", topology, loads=20_000,
                            program=_program())
    result = qemu.run_scenario("paper", tmp_path / "scenario", out=tmp_path / "run",
                               kernel=build_kernel().bzimage, timeout=900)
    assert result.ok and result.scenario_exit == 0, [*result.problems, result.console_tail]
    rows = probe_results(points, tmp_path / "run" / "results" / "memprobe.jsonl", None)
    for row in rows:
        assert row["pages_on_node"] == row["pages_checked"] > 0, row
        assert row["stayed_on_cpu"], row
        assert row["sched_getcpu_right"], row
        assert row["guest_ns_per_load"] > 0
