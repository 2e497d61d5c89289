"""The machine's memory budget across runners: a simulator waits while live runs of any
runner hold too much of it, and goes on when they end."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pimcloud import memory_budget
from pimcloud.memory_budget import (
    BUDGET_ENV,
    LEDGER_ENV,
    BudgetError,
    budget_bytes,
    live_reservations,
    reserved,
    try_reserve,
)
from pimcloud.supervise import supervise

GIB = 2**30
# Another runner: reserves 8 GiB, says so, and holds it until its stdin closes.
HOLDER = ("import sys\nfrom pimcloud.memory_budget import reserved\n"
          "with reserved(8 * 2**30):\n    print('held', flush=True)\n    sys.stdin.read()\n")


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "ledger"
    monkeypatch.setenv(LEDGER_ENV, str(folder))
    monkeypatch.setenv(BUDGET_ENV, "10GiB")
    monkeypatch.setattr(memory_budget, "WAIT_POLL_S", 0.1)
    return folder


def test_a_run_waits_for_another_runners_memory_and_goes_on_when_it_ends(
        ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert other.stdout is not None and other.stdout.readline() == "held\n"
        assert [r.pid for r in live_reservations(ledger)] == [other.pid]
        log = tmp_path / "gem5.log"
        finished = threading.Event()
        thread = threading.Thread(target=lambda: (
            supervise(["true"], log=log, memory_bytes=4 * GIB), finished.set()))
        thread.start()
        # 8 + 4 GiB pass the 10 GiB budget: it waits, and its log says why.
        assert not finished.wait(1.0)
        assert "waiting for memory: this run may use 4GiB" in log.read_text()
        assert other.stdin is not None
        other.stdin.close()
        other.wait(timeout=30)
        assert finished.wait(30), "still waiting after the other run ended"
        thread.join()
        assert "memory free after" in log.read_text()
        # and says so where its runner looks too, naming the log
        said = capsys.readouterr().err
        assert "waiting for memory: this run may use 4GiB" in said and str(log) in said
    finally:
        other.kill()
        other.wait()
    assert live_reservations(ledger) == []  # its own reservation went with it


def test_runs_that_fit_share_the_budget_and_a_run_alone_always_starts(ledger: Path) -> None:
    with reserved(4 * GIB), reserved(6 * GIB):  # 10 GiB: exactly the budget
        path, ticket, held = try_reserve(ledger, 1, budget_bytes())
        assert path is None and ticket is not None and held == 10 * GIB
        ticket.unlink()
    # Over the whole budget, but nothing else runs: it is not held back forever.
    with reserved(64 * GIB):
        assert sum(r.bytes for r in live_reservations(ledger)) == 64 * GIB


def test_waiting_runs_go_in_turn(ledger: Path) -> None:
    """A large run waiting is not passed over by smaller ones that would fit."""
    budget = budget_bytes()
    with reserved(4 * GIB):
        big, big_ticket, _ = try_reserve(ledger, 8 * GIB, budget)  # 12 > 10: it waits
        assert big is None and big_ticket is not None
        small, small_ticket, _ = try_reserve(ledger, 2 * GIB, budget)  # fits, but behind
        assert small is None and small_ticket is not None
    big, big_ticket, _ = try_reserve(ledger, 8 * GIB, budget, big_ticket)
    assert big is not None and big_ticket is None
    small, small_ticket, _ = try_reserve(ledger, 2 * GIB, budget, small_ticket)
    assert small is not None  # now first, and 8 + 2 fit
    assert sum(r.bytes for r in live_reservations(ledger)) == 10 * GIB


def test_an_attempt_keeps_its_place_between_its_simulators(ledger: Path) -> None:
    """A run's app checkpoint set-up, then its run: another run that came while the
    set-up ran waits behind it, not ahead (one did, and held a study's last static cell
    back for a replication cell's hour)."""
    budget = budget_bytes()
    with memory_budget.in_turn_from_now():
        with reserved(4 * GIB), reserved(4 * GIB):  # this attempt's set-up, another run
            later, later_ticket, _ = try_reserve(ledger, 4 * GIB, budget)  # 12 > 10
            assert later is None and later_ticket is not None
        # The set-up ended. Coming now, its run would go behind the one that waits ...
        run, ticket, _ = try_reserve(ledger, 4 * GIB, budget)
        assert run is None and ticket is not None
        ticket.unlink()
        # ... in the attempt's turn, it goes first.
        run, ticket, _ = try_reserve(ledger, 4 * GIB, budget,
                                     arrival=memory_budget._turn.arrival)
        assert run is not None and ticket is None
        run.unlink()
    assert not hasattr(memory_budget._turn, "arrival")
    later_ticket.unlink()


def test_runners_with_different_budgets_are_told_and_the_largest_admits(
        ledger: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner started with 20 GiB beside one of 10 GiB (two `study run`s): the older
    one's next run is admitted against 20 GiB, not held behind the newer one's 8 GiB,
    and each is told that they disagree (a run waited 20 minutes for this)."""
    other = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, BUDGET_ENV: "20GiB"})
    try:
        assert other.stdout is not None and other.stdout.readline() == "held\n"
        assert [r.budget for r in live_reservations(ledger)] == [20 * GIB]
        said: list[str] = []
        with reserved(4 * GIB, said.append):  # 8 + 4 pass this runner's 10 GiB, not 20
            assert sum(r.bytes for r in live_reservations(ledger)) == 12 * GIB
        assert len(said) == 1 and "disagree on PIMCLOUD_MEMORY_BUDGET" in said[0]
        assert "this one has 10.0 GiB, others 20.0 GiB" in said[0]
        # The same budget: nothing to say.
        monkeypatch.setenv(BUDGET_ENV, "20GiB")
        said.clear()
        with reserved(4 * GIB, said.append):
            pass
        assert said == []
    finally:
        other.kill()
        other.wait()


def test_a_reservation_written_before_budgets_were_named_still_counts(ledger: Path) -> None:
    ledger.mkdir(mode=0o700)
    old = ledger / f"{os.getpid()}-{memory_budget.process_start(os.getpid())}-cccccccc.reserved"
    old.write_text(f"{8 * GIB}\n")
    assert live_reservations(ledger) == [memory_budget.Reservation(
        os.getpid(), str(memory_budget.process_start(os.getpid())), 8 * GIB, None)]
    path, ticket, held = try_reserve(ledger, 4 * GIB, budget_bytes())  # 12 > 10
    assert path is None and ticket is not None and held == 8 * GIB
    ticket.unlink()
    old.unlink()


def test_a_ledger_others_may_write_to_is_refused(ledger: Path) -> None:
    ledger.mkdir(mode=0o777)
    ledger.chmod(0o777)
    with pytest.raises(BudgetError, match=f"{ledger} is not this user's alone"):
        try_reserve(ledger, GIB, budget_bytes())


def test_reservations_of_ended_processes_are_dropped(ledger: Path) -> None:
    ledger.mkdir(mode=0o700)
    me = memory_budget.process_start(os.getpid())
    dead = ledger / "4194303-1-aaaaaaaa.reserved"  # above the kernel's pid_max default
    reused = ledger / f"{os.getpid()}-{int(me or 0) + 1}-bbbbbbbb.reserved"  # a reused pid
    for path in (dead, reused):
        path.write_text(f"{8 * GIB}\n")
    assert live_reservations(ledger) == []
    assert not dead.exists() and not reused.exists()


def test_a_budget_that_does_not_parse_names_the_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BUDGET_ENV, "20G")
    with pytest.raises(BudgetError, match=rf"{BUDGET_ENV}='20G': .*GiB.*\(or unset it"):
        budget_bytes()
    monkeypatch.delenv(BUDGET_ENV)
    assert 0 < budget_bytes() < memory_budget.machine_memory()
