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
taken for a live reservation) and its runner's budget, and holding its bytes; the files
of ended processes are removed by the next reader. The budget is
``$PIMCLOUD_MEMORY_BUDGET`` ("20GiB"), else BUDGET_SHARE of the machine's memory. Runners
started with different budgets are told so, and a run is admitted against the largest
budget of the live runners and its own: a user who raises the budget for a new runner
means the machine takes that much, and the runners started before it (which cannot be
told without losing their work) must not then wait behind the new one's runs for ever.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
import threading
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


_turn = threading.local()  # in_turn_from_now's arrival and waiter, per thread


class BudgetError(ValueError):
    """A budget setting that does not parse."""


@dataclass(frozen=True)
class Reservation:
    pid: int
    started: str  # the process's start time (/proc/<pid>/stat field 22)
    bytes: int
    budget: int | None = None  # its runner's budget (None in files written before that)


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
    """``pid``'s start time in clock ticks since boot, or None when it is not running
    (a zombie has ended: its parent has not reaped it yet)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2:].split()
    return None if fields[0] == b"Z" else fields[19].decode()


def _live(folder: Path, kind: str) -> list[tuple[Path, int]]:
    """The ``kind`` files ("reserved", "waiting") of running processes, each with its
    number; the files of ended processes are removed, whatever they hold."""
    live = []
    for entry in folder.glob(f"*.{kind}"):
        pid_text, started, *_ = [*_name_fields(entry), ""]
        if not pid_text.isdigit() or process_start(int(pid_text)) != started:
            entry.unlink(missing_ok=True)
            continue
        try:
            live.append((entry, int(entry.read_text())))
        except (OSError, ValueError):
            continue  # removed meanwhile; a file is written before it is named (_write)
    return live


def _name_fields(path: Path) -> list[str]:
    """A ledger file's name: pid, start time, a unique part, its runner's budget (files
    written since budgets are named) and what waits (in_turn_from_now's, when given)."""
    return path.name.rsplit(".", 1)[0].split("-")


def _budget_of(path: Path) -> int | None:
    """The budget a ledger file's runner had, where its name gives it."""
    fields = _name_fields(path)
    return int(fields[3]) if len(fields) > 3 and fields[3].isdigit() else None


def _admitted(folder: Path, budget: int) -> int:
    """The budget a run is admitted against: the largest of its own and the live runners'."""
    return max({budget} | live_budgets(folder))


def live_reservations(folder: Path) -> list[Reservation]:
    """The reservations of running processes; the files of ended ones are removed."""
    return [Reservation(int(_name_fields(path)[0]), _name_fields(path)[1], held,
                        _budget_of(path))
            for path, held in _live(folder, "reserved")]


def live_budgets(folder: Path) -> set[int]:
    """The budgets of the runners whose runs hold or wait for memory now."""
    return {budget for kind in ("reserved", "waiting") for path, _ in _live(folder, kind)
            if (budget := _budget_of(path)) is not None}


def _ledger(folder: Path) -> Path:
    """The ledger folder, made this user's alone: another user's, or one others may
    write to, could hold every run back with a planted reservation."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise BudgetError(f"the memory ledger {folder} is not this user's alone: remove it, "
                          f"or set {LEDGER_ENV} to a folder of yours")
    return folder


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _tag(waiter: str) -> str:
    """A ledger file's short name for what waits (a run's lock path): no slashes."""
    return hashlib.sha1(waiter.encode()).hexdigest()[:12]


def _write(folder: Path, kind: str, number: int, budget: int) -> Path:
    """A new ``kind`` file of this process holding ``number``, its name giving the
    runner's ``budget`` and what waits (in_turn_from_now's ``waiter``): written, then
    named, so a reader never finds it empty. One process may hold several (a study's
    cells run from threads)."""
    pid = os.getpid()
    waiter = getattr(_turn, "waiter", None)
    tag = f"-{_tag(waiter)}" if waiter else ""
    path = folder / (f"{pid}-{process_start(pid)}-{uuid.uuid4().hex[:8]}-{budget}{tag}"
                     f".{kind}")
    partial = folder / f".{path.name}.partial"
    partial.write_text(f"{number}\n")
    os.replace(partial, path)
    return path


def try_reserve(folder: Path, wanted: int, budget: int, ticket: Path | None = None,
                arrival: int | None = None) -> tuple[Path | None, Path | None, int]:
    """Reserve ``wanted`` bytes if they fit beside the live reservations (or none is
    live) and no run waits ahead of this one: runs wait in turn of ``arrival`` (ns since
    the epoch; default: its ticket's, or now), so a large one is not passed over for ever
    by smaller ones that keep fitting. ``ticket`` holds its place while it waits, made at
    its first try that did not fit. ``budget`` is this runner's; the run is admitted
    against the largest of it and the live runners'. The reservation (None if not made),
    the ticket (None once reserved) and the bytes held by others."""
    _ledger(folder)
    with _locked(folder):
        held = sum(r.bytes for r in live_reservations(folder))
        queue = _live(folder, "waiting")
        mine = arrival if arrival is not None else next(
            (arrived for path, arrived in queue if path == ticket), time.time_ns())
        first = all(path == ticket or arrived > mine for path, arrived in queue)
        if first and (not held or held + wanted <= _admitted(folder, budget)):
            if ticket is not None:
                ticket.unlink(missing_ok=True)
            return _write(folder, "reserved", wanted, budget), None, held
        if ticket is None or not any(path == ticket for path, _ in queue):
            # a first try, or swept meanwhile
            ticket = _write(folder, "waiting", mine, budget)
        return None, ticket, held


@contextlib.contextmanager
def in_turn_from_now(waiter: str | None = None) -> Iterator[None]:
    """The reservations this thread makes in the body wait in turn from now: a run's
    attempt keeps its place between its simulators (app checkpoint set-up, run, memory
    restarts) instead of going behind runs that came while one of them ran. ``waiter``
    names what waits (a run's lock path) for ``waiting_for_memory``."""
    _turn.arrival, _turn.waiter = time.time_ns(), waiter
    try:
        yield
    finally:
        del _turn.arrival, _turn.waiter


def waiting_for_memory(waiter: str) -> bool:
    """Whether a simulator of ``waiter`` (in_turn_from_now's) waits for memory now: a
    campaign's status tells such a run from one whose simulator runs."""
    folder = ledger_dir()
    if not folder.is_dir():
        return False
    tag = _tag(waiter)
    return any(_name_fields(path)[4:5] == [tag]
               for path, _ in _live(folder, "waiting"))


@contextlib.contextmanager
def reserved(wanted: int, say: Callable[[str], None] = lambda _line: None) -> Iterator[None]:
    """Hold ``wanted`` bytes of the machine's budget for the body, waiting for them first
    (``say`` is told once why it waits, and when it goes on)."""
    if os.environ.get("SLURM_JOB_ID"):
        yield  # Slurm's --mem has reserved it on the job's node already
        return
    folder, budget = ledger_dir(), budget_bytes()
    arrival = getattr(_turn, "arrival", None) or time.time_ns()
    waited = None
    ticket = path = None
    others = live_budgets(_ledger(folder)) - {budget}
    if others:
        say(f"runners of this machine disagree on {BUDGET_ENV}: this one has "
            f"{budget / 2**30:.1f} GiB, others "
            + ", ".join(f"{other / 2**30:.1f} GiB" for other in sorted(others))
            + f"; a run is admitted against the largest, "
            f"{max(others | {budget}) / 2**30:.1f} GiB. Give every runner one budget.")
    try:
        while True:
            path, ticket, held = try_reserve(folder, wanted, budget, ticket, arrival)
            if path is not None:
                break
            if waited is None:
                waited = time.monotonic()
                admitted = _admitted(folder, budget)
                say(f"waiting for memory: this run may use {format_size(wanted)}, runs of "
                    f"this machine hold {held / 2**30:.1f} GiB of its "
                    f"{admitted / 2**30:.1f} GiB budget ({BUDGET_ENV}; ledger {folder})")
            time.sleep(WAIT_POLL_S)
        if waited is not None:
            say(f"memory free after {time.monotonic() - waited:.0f} s of waiting: starting")
        yield
    finally:
        for held_file in (path, ticket):
            if held_file is not None:
                held_file.unlink(missing_ok=True)
