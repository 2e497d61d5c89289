"""One memory budget for every simulator this machine's runners start.

A run's memory limit is what its simulator may reach before it is stopped (and restarted
from a progress checkpoint). A runner sizes its own pool by those limits, but two runners
(two `study run`s, a campaign beside a study) know nothing of each other: three gem5s of
8-16 GiB limits on a 23 GiB host left the kernel's OOM killer to end one, losing its work
since its last checkpoint. So each supervised simulator first reserves its limit in a
ledger that every runner of this user shares, and waits while the reservations of live
processes and its own would pass the budget. A run alone is always admitted, whatever
its limit: a budget smaller than one run must not stop everything.

The ledger is a folder (``$PIMCLOUD_MEMORY_LEDGER``, else one per user under /tmp), one
file a reservation, named for its process (pid and start time, so a reused pid is not
taken for a live reservation) and holding its bytes; the files of ended processes are
removed by the next reader. The budget is ``$PIMCLOUD_MEMORY_BUDGET`` ("20GiB"), else
BUDGET_SHARE of the machine's memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .units import UnitError, format_size, parse_size

LEDGER_ENV = "PIMCLOUD_MEMORY_LEDGER"
BUDGET_ENV = "PIMCLOUD_MEMORY_BUDGET"
BUDGET_SHARE = 0.9  # of MemTotal: the rest for the kernel, the runners and the shell
WAIT_POLL_S = 5.0


class BudgetError(ValueError):
    """A budget setting that does not parse."""


@dataclass(frozen=True)
class Reservation:
    pid: int
    started: str  # the process's start time (/proc/<pid>/stat field 22)
    bytes: int


def ledger_dir() -> Path:
    configured = os.environ.get(LEDGER_ENV)
    return Path(configured) if configured else Path(f"/tmp/pimcloud-memory-{os.getuid()}")


def machine_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise OSError("/proc/meminfo has no MemTotal line")


def budget_bytes() -> int:
    configured = os.environ.get(BUDGET_ENV)
    if not configured:
        return int(machine_memory() * BUDGET_SHARE)
    try:
        return parse_size(configured)
    except UnitError as error:
        raise BudgetError(f"{BUDGET_ENV}={configured!r}: {error} (or unset it for "
                          f"{BUDGET_SHARE:.0%} of this machine's memory)") from None


def process_start(pid: int) -> str | None:
    """``pid``'s start time in clock ticks since boot, or None when it is not running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()[19].decode()


def live_reservations(folder: Path) -> list[Reservation]:
    """The reservations of running processes; the files of ended ones are removed."""
    live = []
    for entry in folder.glob("*.reserved"):
        try:
            pid_text, started, _ = entry.name.split("-", 2)
            held = Reservation(int(pid_text), started, int(entry.read_text()))
        except (OSError, ValueError):
            continue  # being written or removed: its writer holds the lock, not us
        if process_start(held.pid) == held.started:
            live.append(held)
        else:
            entry.unlink(missing_ok=True)
    return live


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def try_reserve(folder: Path, wanted: int, budget: int) -> tuple[Path | None, int]:
    """Reserve ``wanted`` bytes if they fit beside the live reservations (or none is
    live); the reservation's file (None if it did not fit) and the bytes held by others."""
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder):
        held = sum(r.bytes for r in live_reservations(folder))
        if held and held + wanted > budget:
            return None, held
        pid = os.getpid()
        started = process_start(pid)
        # One process may hold several (a study's cells run from threads).
        path = folder / f"{pid}-{started}-{uuid.uuid4().hex[:8]}.reserved"
        path.write_text(f"{wanted}\n")
        return path, held


@contextlib.contextmanager
def reserved(wanted: int, say: Callable[[str], None] = lambda _line: None) -> Iterator[None]:
    """Hold ``wanted`` bytes of the machine's budget for the body, waiting for them first
    (``say`` is told once why it waits, and when it goes on)."""
    folder, budget = ledger_dir(), budget_bytes()
    waited = None
    while True:
        path, held = try_reserve(folder, wanted, budget)
        if path is not None:
            break
        if waited is None:
            waited = time.monotonic()
            say(f"waiting for memory: this run may use {format_size(wanted)}, runs of this "
                f"machine hold {held / 2**30:.1f} GiB of its {budget / 2**30:.1f} GiB budget "
                f"({BUDGET_ENV}; ledger {folder})")
        time.sleep(WAIT_POLL_S)
    if waited is not None:
        say(f"memory free after {time.monotonic() - waited:.0f} s of waiting: starting")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
