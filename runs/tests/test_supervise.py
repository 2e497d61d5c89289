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


def test_cpu_time_is_the_commands_own_while_other_threads_reap_children(
        tmp_path: Path) -> None:
    # A study runs cells from threads: another thread reaping a busy child must not add
    # that child's CPU time to this command's.
    import subprocess
    import threading

    def busy_child() -> None:
        subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.6\n"
                        "while time.process_time() < end: pass\n"], check=True)

    other = threading.Thread(target=busy_child)
    other.start()
    idle = supervise(["sleep", "1.5"], log=tmp_path / "log")
    other.join()
    assert idle.returncode == 0
    assert idle.cpu_seconds < 0.2, idle


def test_a_stopped_command_still_reports_its_cpu_time(tmp_path: Path) -> None:
    # A third of a second of computing, then waiting past the host-time limit (long
    # enough for the computing to end on a busy machine too).
    work = ("import time\nend = time.process_time() + 0.3\n"
            "while time.process_time() < end: pass\ntime.sleep(60)\n")
    done = supervise([sys.executable, "-c", work], log=tmp_path / "log", host_time_s=5.0)
    assert done.stopped_for == "host-time-limit" and done.returncode is None
    assert 0.28 <= done.cpu_seconds < 1.0, done
