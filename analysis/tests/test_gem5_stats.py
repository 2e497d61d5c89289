"""The parser on a stats.txt that gem5 itself wrote (needs a gem5.opt: marker ``gem5``).

``GEM5`` names the gem5.opt binary; the run uses gem5's own x86 ``hello`` test
program from the same gem5 tree and the run script beside the fixtures.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pimcloud.analysis import memlat, views
from pimcloud.analysis.stats import parse_stats
from pimcloud.analysis.stats_reference import parse_stats_reference

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT = FIXTURES / "gem5_hello_stats.py"
INTERVAL_S = 5e-6  # the script's dump interval


def _gem5() -> Path:
    binary = Path(os.environ.get("GEM5", ""))
    if not os.environ.get("GEM5") or not binary.is_file():
        pytest.skip("set GEM5 to a gem5.opt (e.g. /work/gem5/build/X86/gem5.opt)")
    return binary


@pytest.fixture(scope="module")
def gem5_stats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = _gem5()
    tree = binary.parents[2]  # gem5/build/X86/gem5.opt
    hello = tree / "tests" / "test-progs" / "hello" / "bin" / "x86" / "linux" / "hello"
    out = tmp_path_factory.mktemp("gem5-hello")
    subprocess.run([str(binary), f"--outdir={out}", str(SCRIPT), str(hello)], check=True,
                   cwd=tree, capture_output=True, timeout=900)
    return out / "stats.txt"


@pytest.mark.gem5
def test_real_gem5_dumps(gem5_stats: Path) -> None:
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


@pytest.mark.gem5
def test_real_gem5_miss_latency(gem5_stats: Path) -> None:
    stats = parse_stats(gem5_stats).stats
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
