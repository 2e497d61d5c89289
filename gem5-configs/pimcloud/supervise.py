"""Run one simulator process under a run's limits: host time and memory.

The process gets its own process group (so everything it starts is stopped with it) and
SIGKILL when its parent dies (so a killed runner leaves nothing behind).  Memory is the
resident size of the whole group, sampled, because gem5 maps its guest memory without
touching most of it: an address-space limit would stop it at start.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .memory_budget import reserved

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
POLL_S = 0.2


@dataclass(frozen=True)
class Supervised:
    returncode: int | None  # None when we stopped it
    stopped_for: str | None  # "host-time-limit" | "memory-limit" | None
    host_seconds: float
    peak_rss_bytes: int
    # CPU time (user + system) of the process and the children it waited for: the host
    # time it would have taken alone, whatever else shared the machine.
    cpu_seconds: float = 0.0


def die_with_parent() -> None:
    """In the child: SIGKILL when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)


def _child_setup() -> None:
    os.setpgrp()
    die_with_parent()


def group_rss(pgid: int) -> int:
    """Resident bytes of every process in group ``pgid`` (from /proc/<pid>/stat)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stream:
                stat = stream.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        # fields[0] is field 3 (state): pgrp is field 5, rss (pages) field 24.
        if int(fields[2]) == pgid:
            total += int(fields[21]) * PAGE_BYTES
    return total


def reap(process: subprocess.Popen[bytes], timeout_s: float | None = 0.0
         ) -> resource.struct_rusage | None:
    """Reap ``process`` with wait4, which gives its own resource usage (getrusage's
    children total would also hold whatever other threads of this process reap), and set
    its returncode; None while it still runs after ``timeout_s`` (None: wait for it)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        try:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already (its returncode is set)
            return None
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return usage
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def stop_group(process: subprocess.Popen[bytes], grace_s: float = 5.0
               ) -> resource.struct_rusage | None:
    """SIGTERM the process group, then SIGKILL what is left after ``grace_s``; the
    leader's resource usage when this reaped it."""
    usage = None
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 30.0)):
        if process.returncode is not None:
            break
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        usage = reap(process, wait)
    # Stragglers in the group (children that outlived the leader).
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    return usage


def supervise(command: list[str], *, log: Path, cwd: Path | None = None,
              host_time_s: float | None = None, memory_bytes: int | None = None,
              env: dict[str, str] | None = None) -> Supervised:
    """Run ``command`` to its end or to a limit; stdout and stderr go to ``log``. With a
    memory limit, it first waits for that much of the machine's budget (memory_budget):
    its host time starts after the wait."""
    if memory_bytes is None:
        return _supervised(command, log, cwd, host_time_s, None, env)

    def say(line: str) -> None:
        # In the run's log, and where whoever started it looks: a boot in `study run`
        # that waits would otherwise show nothing but its "booting" line.
        with log.open("a") as output:
            output.write(f"pimcloud-runs: {line}\n")
        print(f"pimcloud-runs: {line} [{log}]", file=sys.stderr, flush=True)

    with reserved(memory_bytes, say):
        return _supervised(command, log, cwd, host_time_s, memory_bytes, env)


def _supervised(command: list[str], log: Path, cwd: Path | None, host_time_s: float | None,
                memory_bytes: int | None, env: dict[str, str] | None) -> Supervised:
    started = time.monotonic()
    usage: resource.struct_rusage | None = None
    peak = 0
    stopped_for: str | None = None
    with log.open("ab") as output:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                   preexec_fn=_child_setup)
        try:
            while (usage := reap(process)) is None and process.returncode is None:
                elapsed = time.monotonic() - started
                rss = group_rss(process.pid)
                peak = max(peak, rss)
                if host_time_s is not None and elapsed > host_time_s:
                    stopped_for = "host-time-limit"
                elif memory_bytes is not None and rss > memory_bytes:
                    stopped_for = "memory-limit"
                if stopped_for:
                    output.write(f"\npimcloud-runs: stopped after {elapsed:.0f} s host time: "
                                 f"{stopped_for} (resident {rss / 2**20:.0f} MiB)\n".encode())
                    output.flush()
                    usage = stop_group(process)
                    break
                time.sleep(POLL_S)
        finally:
            if process.returncode is None:
                usage = stop_group(process) or usage
            # Whatever it left running in its group goes with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
    return Supervised(None if stopped_for else process.returncode, stopped_for,
                      time.monotonic() - started, peak,
                      usage.ru_utime + usage.ru_stime if usage is not None else 0.0)
