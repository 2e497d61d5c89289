"""Page migration on gem5's detailed cores keeps every write: pimcloud-pagecheck writes and
verifies a pattern on one core while another moves the pages back and forth between the
host's DDR and a stack with move_pages(2), the call the agent's policies use (every move
of a page the writer uses needs a TLB shootdown on the writer's core), and locked
read-modify-writes stay atomic across host and PIM cores. PIMCloud's thread migration,
BALM, tiering and HeteroOS all stand on this, and every lock of the guest kernel on the
second.

Needs GEM5 (any gem5 v24.0.0.1 with this checkout's scons-extra)."""

from __future__ import annotations

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

PAGECHECK_SCENARIO = """#!/bin/sh
export PATH="/opt/pimcloud/bin:/sbin:/usr/sbin:/bin:/usr/bin:$PATH"
R="$PIMCLOUD_RESULTS"
m5 switchcpu
pimcloud-pagecheck --mib 2 --rounds 20 --moves 6 --writer-cpu 1 --mover-cpu 0 --nodes 0,1 \\
    --atomic-cpus 0,1,2,4 --increments 2000 > "$R/pagecheck.json" 2> "$R/pagecheck.err"
echo $? > "$R/pagecheck.rc"
"""


def test_pages_moved_under_a_verifying_writer_keep_their_data(tmp_path: Path) -> None:
    from pimcloud.gem5_cli import gem5_inputs

    try:
        inputs: Gem5Inputs = gem5_inputs("tiered-mini", None, None, 16)
    except Gem5Missing as missing:
        pytest.skip(f"this gem5 cannot run tiered-mini: {missing}")
    report = boot(inputs, tmp_path / "boot")
    assert report.ok, report.problems
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    (scenario / "run.sh").write_text(PAGECHECK_SCENARIO)
    run = restore(inputs, tmp_path / "boot", scenario, tmp_path / "run", fast_forward=True,
                  max_seconds=0.5)
    assert run.ok, run.problems
    results = tmp_path / "run" / "results"
    answer = json.loads((results / "pagecheck.json").read_text())
    print(answer, f"({run.host_seconds} s host, {run.simulated_seconds} s simulated)")
    assert answer["pinned"] and answer["move_errors"] == 0, answer
    # Six rounds of moves, each every page of the 2 MiB: the writer's pages really moved.
    assert answer["moves"] >= 6 and answer["pages_moved"] >= 6 * 512, answer
    assert answer["mismatches"] == 0, answer
    # Locked read-modify-writes are atomic across the O3 host cores and the PIM cores of
    # both stacks (a `lock xadd` counter and one under a compare-and-swap spinlock).
    assert answer["atomics_pinned"] and answer["atomics_right"], answer
    assert (results / "pagecheck.rc").read_text().strip() == "0"
