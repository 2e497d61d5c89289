"""Where a campaign stands: done, running, failed, pending, and an ETA.

Everything is read from the folder (run.json files, failed attempts, held locks), so
``status`` works from any shell, during a run or after a crash, locally or for Slurm.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pimcloud.memory_budget import waiting_for_memory

from .campaign import Campaign
from .layout import FAILURE_RECORD, RUN_RECORD
from .progress import RunProgress
from .spec import Run
from .speeds import speed_of

# From this much of a run saved in progress checkpoints, the ETA takes the run's own pace
# (its segments' CPU seconds for their simulated span) over the plan's estimate: a plan
# prices a service by others' costs (a speech decode, translate's cache misses) and can be
# several times off, while a run's pace holds along the run. Before, a segment or two of
# its start (caches filling, the first requests faulting in pages) would stand for it.
OWN_PACE_FROM = 0.1


@dataclass
class RunState:
    run_id: str
    state: str  # done | running | failed | pending
    attempts: int  # failed attempts so far
    cause: str = ""  # last exit cause
    host_seconds: float | None = None
    since: float | None = None  # running: when it started (epoch)
    # Of a preemptible run not done: the part of its simulated length its progress
    # checkpoints hold, and when the latest was saved (epoch)
    saved_fraction: float = 0.0
    saved_at: float | None = None
    saved_host_s: float = 0.0  # CPU seconds its saved segments took
    waiting_for_memory: bool = False  # running, its simulator waiting for the budget

    def left_s(self, estimate_s: float, now: float) -> float:
        """Host seconds this run has left, ``estimate_s`` being a whole run's: none when
        done or failed; the part its progress checkpoints do not hold, at its own pace
        once they hold enough of it to tell; a running run's time since its start or its
        latest checkpoint, whichever is later, already spent."""
        if self.state not in ("pending", "running"):
            return 0.0
        per_run = estimate_s
        if self.saved_fraction >= OWN_PACE_FROM and self.saved_host_s > 0:
            per_run = self.saved_host_s / self.saved_fraction
        left = per_run * (1.0 - self.saved_fraction)
        if self.state == "running":
            # Its work up to the latest checkpoint is in saved_fraction.
            start = max(self.since or now, self.saved_at or 0.0)
            left = max(left - (now - start), 0.0)
        return left


@dataclass
class CampaignStatus:
    runs: list[RunState]
    jobs: int
    estimate_per_run_s: float
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def eta_s(self) -> float:
        """Host seconds until every unfinished run is made, at ``jobs`` at a time (a run
        resumed from progress checkpoints has only the rest of its length to make, at its
        own pace once its checkpoints hold enough of it to tell)."""
        now = time.time()
        remaining = sum(run.left_s(self.estimate_per_run_s, now) for run in self.runs)
        return remaining / max(self.jobs, 1)

    @property
    def finished(self) -> bool:
        return self.counts.get("pending", 0) == 0 and self.counts.get("running", 0) == 0


def campaign_status(campaign: Campaign, *,
                    estimate_per_run_s: float | None = None) -> CampaignStatus:
    """``estimate_per_run_s``: a run's host seconds from a better-informed plan (a study's,
    priced by the service's measured CPU a request), or the one its record keeps
    (Campaign.price_runs); else the mean of the runs done, or the speed table's figure
    before any is."""
    folder = campaign.dir
    states: list[RunState] = []
    done_seconds: list[float] = []
    for run in campaign.runs():
        failed = folder.failed_attempts(run.run_id)
        cause = ""
        if failed:
            try:
                cause = json.loads((failed[-1] / FAILURE_RECORD).read_text())["exit_cause"]
            except (OSError, ValueError, KeyError):
                cause = "unknown"
        if folder.is_done(run.run_id):
            try:
                record = json.loads((folder.run_dir(run.run_id) / RUN_RECORD).read_text())
                execution: dict[str, Any] = record.get("execution", {})
            except (OSError, ValueError):
                execution = {}
            seconds = execution.get("host_seconds")
            if isinstance(seconds, int | float):
                done_seconds.append(float(seconds))
            states.append(RunState(run.run_id, "done", len(failed),
                                   str(execution.get("exit_cause", "")), seconds))
            continue
        holder = folder.running(run.run_id)
        saved = _saved(campaign, run)
        if holder is not None:
            waiting = waiting_for_memory(folder.memory_waiter(run.run_id))
            states.append(RunState(run.run_id, "running", len(failed), cause,
                                   since=holder.get("since"), waiting_for_memory=waiting,
                                   **saved))
        elif len(failed) >= campaign.max_attempts:
            states.append(RunState(run.run_id, "failed", len(failed), cause))
        else:
            states.append(RunState(run.run_id, "pending", len(failed), cause, **saved))
    recorded = campaign.record.get("estimate_per_run_s")
    if estimate_per_run_s is None and isinstance(recorded, int | float) and recorded > 0:
        estimate_per_run_s = float(recorded)
    estimate = (estimate_per_run_s if estimate_per_run_s is not None
                else sum(done_seconds) / len(done_seconds) if done_seconds
                else _first_estimate(campaign))
    counts = {name: sum(1 for s in states if s.state == name)
              for name in ("done", "running", "failed", "pending")}
    jobs = int(campaign.record.get("jobs", 1) or 1)
    return CampaignStatus(states, jobs, estimate, counts)


# A saved fraction is of the run's warm-up and measured time; its start-up and wrap-up
# are left out of that length, so it is capped short of the whole.
MAX_SAVED_FRACTION = 0.95


def _saved(campaign: Campaign, run: Run) -> dict[str, Any]:
    """RunState's saved_fraction and saved_at from the run's progress checkpoints."""
    try:
        span = RunProgress(campaign.dir.progress / run.run_id).saved_span()
    except OSError:  # a checkpoint replaced or the folder cleared as it was read
        return {}
    length_s = run.spec.length.warmup_s + run.spec.length.measured_s
    if span is None or length_s <= 0:
        return {}
    return {"saved_fraction": min(MAX_SAVED_FRACTION, span[0] / 1e12 / length_s),
            "saved_at": span[1], "saved_host_s": span[2]}


def _first_estimate(campaign: Campaign) -> float:
    """Host seconds of one run before any is done: the plan's figure for the first run
    (the same speed table phase the runner records it under)."""
    from .plan import run_estimate  # plan imports this module

    spec = campaign.spec
    length = spec.length.warmup_s + spec.length.measured_s
    runs = campaign.runs()
    if not runs:
        return speed_of(campaign.backend_name, "run", spec.topology).host_seconds(length)
    return run_estimate(runs[0], campaign.backend_name, length)[2]


def format_seconds(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def summary_line(status: CampaignStatus) -> str:
    c = status.counts
    total = len(status.runs)
    eta = "" if status.finished else f", ETA {format_seconds(status.eta_s)}"
    waiting = sum(1 for run in status.runs if run.waiting_for_memory)
    running = f"{c['running']} running" + (f" ({waiting} waiting for memory)" if waiting
                                            else "")
    return (f"{c['done']}/{total} done, {running}, {c['failed']} failed, "
            f"{c['pending']} pending{eta}")


def _running_note(run: RunState) -> str:
    note = f"for {format_seconds(time.time() - (run.since or time.time()))}"
    return note + (", its simulator waiting for memory" if run.waiting_for_memory else "")


def plain_lines(status: CampaignStatus) -> list[str]:
    lines = [summary_line(status)]
    for run in status.runs:
        if run.state == "done":
            note = f"{format_seconds(run.host_seconds or 0)} ({run.cause})"
        elif run.state == "running":
            note = _running_note(run)
        else:
            note = f"{run.attempts} failed attempt(s), last: {run.cause}" if run.attempts else ""
        lines.append(f"  {run.state:8} {run.run_id}  {note}".rstrip())
    return lines


def rich_table(status: CampaignStatus, title: str) -> Any:
    from rich.table import Table

    colours = {"done": "green", "running": "cyan", "failed": "red", "pending": "white"}
    table = Table(title=f"{title}: {summary_line(status)}", title_justify="left")
    for column in ("state", "run", "attempts failed", "note"):
        table.add_column(column)
    for run in status.runs:
        note = run.cause
        if run.state == "running" and run.since:
            note = _running_note(run)
        elif run.state == "done":
            note = f"{format_seconds(run.host_seconds or 0)} ({run.cause})"
        table.add_row(f"[{colours[run.state]}]{run.state}[/]", run.run_id,
                      str(run.attempts), note)
    return table


class Display:
    """Live table in a terminal; otherwise one plain line whenever the counts change."""

    def __init__(self, campaign: Campaign, live: bool | None = None) -> None:
        self.campaign = campaign
        self.live_mode = sys.stdout.isatty() if live is None else live
        self._live: Any = None
        self._last = ""

    def __enter__(self) -> Display:
        if self.live_mode:
            from rich.live import Live

            self._live = Live(self._render(), refresh_per_second=2, transient=False)
            self._live.__enter__()
        return self

    def _render(self) -> Any:
        return rich_table(campaign_status(self.campaign), self.campaign.spec.name)

    def update(self) -> None:
        """Refresh. A read racing the workers' files (a progress checkpoint replaced as it
        is looked at) skips this refresh: the display must never stop the runs."""
        try:
            if self._live is not None:
                self._live.update(self._render())
                return
            line = summary_line(campaign_status(self.campaign))
        except OSError:
            return
        counts = line.split(", ETA")[0]
        if counts != self._last:
            print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)
            self._last = counts

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(None, None, None)


def watch(campaign: Campaign, until: Callable[[], bool], period_s: float = 1.0,
          live: bool | None = None) -> None:
    with Display(campaign, live) as display:
        while not until():
            display.update()
            time.sleep(period_s)
        display.update()
