"""pimcloud-pagecheck: writes verified while another core migrates the pages, and locked
read-modify-writes across cores (a `lock xadd` counter, a spinlocked one). The real
program on this host (one node: the moves find every page in place), and in a QEMU guest
of tiered-mini, its pages moved between the DDR node and a stack. The gem5 run is
gem5-configs/tests/test_migration_gem5.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def _program() -> Path:
    from pimcloud.paths import program_candidates

    found = program_candidates("pimcloud-pagecheck")
    if not found:
        pytest.skip("pimcloud-pagecheck is not built: run `make cxx`")
    return found[0]


def test_the_real_program_runs_on_this_host() -> None:
    done = subprocess.run([str(_program()), "--mib", "1", "--rounds", "10", "--moves", "3",
                           "--writer-cpu", "0", "--mover-cpu", "0", "--nodes", "0,0",
                           "--atomic-cpus", "0,0", "--increments", "20000"],
                          capture_output=True, text=True, timeout=120)
    answer = json.loads(done.stdout)
    assert done.returncode == 0 and answer["mismatches"] == 0, answer
    assert answer["rounds"] >= 10 and answer["moves"] >= 3, answer
    assert answer["atomics_right"] and answer["locked_count"] == 40000, answer
    assert answer["xadd_unique"] and answer["pages_moved"] == 0, answer  # one node here


def test_lines_handed_between_two_cores_through_memory_arrive() -> None:
    """--handoff-cpus alone (--mib 0: no migration check): two threads take turns over 64
    lines, each flushed to memory before the other reads it back, beside a streaming one."""
    other = 1 if (os.cpu_count() or 1) > 1 else 0  # two cores where there are two
    done = subprocess.run([str(_program()), "--mib", "0", "--handoff-cpus", f"0,{other}",
                           "--handoff-rounds", "400", "--congest-cpus", "0"],
                          capture_output=True, text=True, timeout=120)
    answer = json.loads(done.stdout)
    assert done.returncode == 0 and answer["handoff_mismatches"] == 0, answer
    assert answer["handoff_rounds"] == 400 and answer["handoff_lines"] == 64, answer
    assert answer["bytes"] == 0 and answer["congest_threads"] == 1, answer


def test_handoff_takes_two_cpus_and_a_node_it_can_map() -> None:
    done = subprocess.run([str(_program()), "--mib", "0", "--handoff-cpus", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--handoff-cpus takes two CPUs" in done.stderr
    done = subprocess.run([str(_program()), "--mib", "0", "--handoff-cpus", "0,0",
                           "--handoff-node", "63"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "cannot map the hand-over's memory on node 63" in done.stderr
    assert not json.loads(done.stdout)["handoff_mapped"]
    done = subprocess.run([str(_program()), "--mib", "0"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "give --atomic-cpus or --handoff-cpus" in done.stderr


def test_moves_that_fail_fail_the_check() -> None:
    done = subprocess.run([str(_program()), "--mib", "1", "--rounds", "5", "--moves", "2",
                           "--nodes", "0,63"], capture_output=True, text=True, timeout=120)
    answer = json.loads(done.stdout)
    assert done.returncode == 1 and answer["move_errors"] > 0, answer
    assert answer["pages_moved"] == 0, answer  # nothing left another node


def test_bad_arguments_are_named() -> None:
    done = subprocess.run([str(_program()), "--nodes", "1"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "--nodes takes A,B" in done.stderr


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None,
                    reason="needs qemu-system-x86")
def test_moves_between_the_ddr_and_a_stack_keep_every_write(tmp_path: Path) -> None:
    from pimcloud.guest import qemu
    from pimcloud.guest.kernel import build_kernel

    scenario = tmp_path / "scenario"
    (scenario / "bin").mkdir(parents=True)
    shutil.copy2(_program(), scenario / "bin" / "pimcloud-pagecheck")
    (scenario / "run.sh").write_text(
        '#!/bin/sh\nhere=$(cd "$(dirname "$0")" && pwd)\nout="${PIMCLOUD_RESULTS:-/results}"\n'
        'mkdir -p "$out"\n'
        '"$here/bin/pimcloud-pagecheck" --mib 4 --rounds 50 --moves 6 --writer-cpu 1 '
        '--mover-cpu 0 --nodes 0,1 --atomic-cpus 0,1,2,3,4,5 --increments 20000 '
        '--handoff-cpus 0,2 --handoff-node 1 --handoff-rounds 400 '
        '> "$out/pagecheck.json"\n')
    result = qemu.run_scenario("tiered-mini", scenario, out=tmp_path / "run",
                               kernel=build_kernel().bzimage, timeout=600)
    assert result.ok and result.scenario_exit == 0, [*result.problems, result.console_tail]
    answer = json.loads((tmp_path / "run" / "results" / "pagecheck.json").read_text())
    print(answer)
    assert answer["pinned"] and answer["move_errors"] == 0, answer
    # Every move took all 1024 pages somewhere they were not.
    assert answer["moves"] >= 6 and answer["pages_moved"] >= 6 * 1024, answer
    assert answer["mismatches"] == 0, answer
    assert answer["atomics_pinned"] and answer["atomics_right"], answer
    assert answer["handoff_mapped"] and answer["handoff_pinned"], answer
    assert answer["handoff_mismatches"] == 0, answer
