"""The parser on a stats.txt that gem5 itself wrote.

``fixtures/gem5_hello_stats.txt.gz`` is the stats.txt of the run script beside it
(gem5 v24.0.0.1 running its x86 ``hello`` test program); the tests on it run everywhere.
With ``GEM5`` naming a gem5.opt (marker ``gem5``) the run is repeated and must give the
same simulated statistics, so the fixture stays what gem5 writes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pimcloud.analysis import memlat, views
from pimcloud.analysis.stats_reference import parse_stats_reference
from pimcloud.stats_file import parse_stats

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT = FIXTURES / "gem5_hello_stats.py"
CAPTURED = FIXTURES / "gem5_hello_stats.txt.gz"
INTERVAL_S = 5e-6  # the script's dump interval


def _gem5() -> Path:
    binary = Path(os.environ.get("GEM5", ""))
    if not os.environ.get("GEM5") or not binary.is_file():
        pytest.skip("set GEM5 to a gem5.opt (e.g. /work/gem5/build/X86/gem5.opt)")
    return binary


@pytest.fixture(scope="module")
def fresh_gem5_stats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = _gem5()
    tree = binary.parents[2]  # gem5/build/X86/gem5.opt
    # relative, as in the script's instructions: the program's argv[0] sits on its stack,
    # so another spelling of the path changes the simulated instruction count
    hello = "tests/test-progs/hello/bin/x86/linux/hello"
    out = tmp_path_factory.mktemp("gem5-hello")
    subprocess.run([str(binary), f"--outdir={out}", str(SCRIPT), hello], check=True,
                   cwd=tree, capture_output=True, timeout=900)
    return out / "stats.txt"


@pytest.mark.gem5
def test_fixture_is_what_gem5_writes(fresh_gem5_stats: Path) -> None:
    fresh = parse_stats(fresh_gem5_stats).stats
    captured = parse_stats(CAPTURED).stats
    simulated = [frame[~frame["stat"].astype(str).str.startswith("host")]
                 .reset_index(drop=True) for frame in (fresh, captured)]
    pd.testing.assert_frame_equal(simulated[0], simulated[1])


def test_real_gem5_dumps() -> None:
    gem5_stats = CAPTURED
    parsed = parse_stats(gem5_stats)
    assert parsed.problems == ()
    assert len(parsed.dumps) >= 2
    # every dump but the last covers one whole interval, since each one resets the stats
    assert np.allclose(parsed.dumps["sim_seconds"].iloc[:-1], INTERVAL_S)
    reference = parse_stats_reference(gem5_stats)
    pd.testing.assert_frame_equal(
        parsed.stats.astype({c: object for c in ("stat", "subname", "unit", "description")}),
        reference.stats, check_dtype=False)
    units = set(parsed.stats["unit"].astype(str))
    assert {"Second", "Tick", "Count", "(Tick/Second)"} <= units


def test_real_gem5_miss_latency() -> None:
    stats = parse_stats(CAPTURED).stats
    names = stats["stat"].astype(str)
    caches = sorted({n.rsplit(".", 1)[0] for n in names.unique()
                     if n.endswith(".demandMissLatency") and "l2" in n})
    assert caches, "no L2 miss latency statistics in gem5's output"
    clock = next(n for n in names.unique() if n.endswith("clk_domain.clock"))
    estimate = memlat.miss_latency_by_requester(stats, caches[0], c_cache_cycles=0,
                                                clock_period_stat=clock)
    seen = estimate.dropna(subset=["latency_ns"])
    assert len(seen) and (seen["latency_ns"] > 0).all()
    cycles = views.scalar(stats, next(n for n in names.unique() if n.endswith("numCycles")))
    assert (cycles.iloc[:-1] > 0).all()


def test_real_gem5_controller_queue() -> None:
    """gem5's own per-dump averages, recombined over dumps that each reset (windows of
    their own): the mean wait per read is the dumps' avgQLat weighted by their reads."""
    stats = parse_stats(CAPTURED).stats
    assert len(memlat.window_dumps(stats)["dump"].unique()) == stats["dump"].nunique()
    prefix = "board.memory.mem_ctrl"
    table = memlat.controller_queues(stats, {prefix: "dram"}).iloc[0]

    def per_dump(name: str) -> pd.Series:
        return views.scalar(stats, f"{prefix}.{name}").fillna(0.0)

    served = per_dump("readBursts") - per_dump("servicedByWrQ")
    assert table["reads"] == per_dump("readBursts").sum() > 0
    expected = (per_dump("dram.avgQLat") * served).sum() / served.sum() / 1e3
    assert table["queue_ns"] == pytest.approx(expected, rel=1e-3)
    assert table["access_ns"] > table["queue_ns"] >= 0
    assert table["read_queue"] > 0
