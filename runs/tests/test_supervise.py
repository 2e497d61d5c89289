"""A supervised simulator's host time and CPU time: the plan's speeds are fitted on CPU
time, which a machine shared with other simulators does not stretch."""

from __future__ import annotations

import sys
from pathlib import Path

from pimcloud.supervise import supervise


def test_cpu_time_is_the_work_done_and_host_time_includes_waiting(tmp_path: Path) -> None:
    # Half a second of computing, then a second of sleeping.
    busy = ("import time\nend = time.process_time() + 0.5\n"
            "while time.process_time() < end: pass\ntime.sleep(1.0)\n")
    done = supervise([sys.executable, "-c", busy], log=tmp_path / "log")
    assert done.returncode == 0
    assert done.host_seconds >= 1.5
    assert 0.45 <= done.cpu_seconds < 1.2, done  # the half second, not the sleep
    idle = supervise(["sleep", "0.5"], log=tmp_path / "log2")
    assert idle.cpu_seconds < 0.2 and idle.host_seconds >= 0.5, idle
