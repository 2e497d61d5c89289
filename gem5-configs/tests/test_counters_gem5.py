"""The hardware counters in gem5, end to end: the paper board with PimCounters, the guest
driver, and `pimcloud-hw hotset` (a known hot set over two stacks, some frames shared
between a host and a PIM CPU, some written) read back through the hot-page call.

Needs GEM5 pointing at a gem5 built with this checkout's scons-extra (PimCounters)."""

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
