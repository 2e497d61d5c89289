"""A campaign folder into frames joined by run id.

A campaign folder holds run folders anywhere below it; a run folder is any folder
with a ``run.json``.  Inside a run folder analysis looks for (at any depth):

- ``stats.txt``: gem5 statistics (the run's m5out);
- ``lats.bin`` and ``requests.csv`` / ``requests.parquet``: one per LC app, the app
  named by the folder that holds the file, or by a prefix (``xapian.lats.bin``);
- ``decisions.jsonl``: the agent's decision log;
- ``events.jsonl``: what the scenario did (an app arrived, exited, was killed; a stack
  was filled), drawn on the timelines;
- ``progress.jsonl``: a best-effort job's progress (pimcloud.workloads.besteffort), the
  job named by its folder;
- ``hw-hottest-node<k>.txt``: the hottest frames of node k with their page types, as the
  board's counters answered at the end of the run (pimcloud.guest.hw_counters);

Every frame carries ``run_id``; :func:`with_axes` adds the sweep axes from run.json.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pimcloud.stats_file import StatsFileWarning, parse_stats
from pimcloud.topology import Topology, load_topology

from ..guest.hw_counters import HOTTEST_GLOB, HotPagesError, read_hottest
from ..runs.guest_scenario import OOM_FILE
from ..workloads.besteffort import PROGRESS_FILE
from ..workloads.besteffort import read_progress as read_be_progress
from .results import (
    ResultsWarning,
    read_decision_log,
    read_events,
    read_lats_bin,
    read_request_table,
    read_run_record,
)
from .views import select

RUN_RECORD = "run.json"
# run.json keys that describe how a run was made, not where it sits in the sweep:
# ``execution`` is the runner's record; a few of its facts become columns.
EXECUTION = "execution"
EXECUTION_FACTS = ("backend", "exit_cause", "host_seconds", "simulated_seconds")
# ``control``: the manager's control loops (interval, windows, waits), not a sweep axis.
NOT_AXES = ("run_id", "run_dir", "qos_ns", "control", "oom_killed", EXECUTION, *EXECUTION_FACTS)


@dataclass
class Campaign:
    """Everything in a campaign folder, as tidy frames keyed by ``run_id``."""

    root: Path
    runs: pd.DataFrame  # one row per run: run_id, run_dir, the sweep axes
    requests: pd.DataFrame  # run_id, app, source, REQUEST columns (NaN where lats.bin)
    decisions: pd.DataFrame  # run_id + the decision log columns
    progress: pd.DataFrame  # run_id, app, t_ns, work
    stats: pd.DataFrame  # run_id + the stats columns
    problems: list[str] = field(default_factory=list)
    events: pd.DataFrame = field(  # run_id, at_s, kind, target: what the scenario did
        default_factory=lambda: pd.DataFrame(columns=["run_id", "at_s", "kind", "target"]))
    hot_frames: pd.DataFrame = field(  # run_id, node, pfn, count, sharing, access, ...
        default_factory=lambda: pd.DataFrame(columns=["run_id", "node", "count", "sharing",
                                                      "access"]))
    # Several campaigns read as one (load_campaigns): their folders; run ids "<name>/<id>".
    roots: tuple[Path, ...] = ()

    @property
    def axes(self) -> list[str]:
        """The sweep axes: run.json keys other than the run's id, folder, QoS targets
        and execution record."""
        return [c for c in self.runs.columns if c not in NOT_AXES]


def simulated_topology(record: dict[str, Any]) -> Topology:
    """The topology a run simulated, as gem5 built it: its run record's ``topology`` with
    the memory divided as its command said (``--mem-divisor``; divided memory changes
    how many ranges, and so memory controllers, the board has). Raises TopologyError for
    a name no preset or file has."""
    execution = record.get(EXECUTION)
    command = [str(word) for word in (execution or {}).get("command") or []] \
        if isinstance(execution, dict) else []
    divisor = (int(command[command.index("--mem-divisor") + 1])
               if "--mem-divisor" in command[:-1] else 1)
    return load_topology(str(record["topology"])).with_memory_divided(divisor)


def find_runs(root: str | os.PathLike[str]) -> list[Path]:
    """Run folders under ``root``, sorted."""
    return sorted(path.parent for path in Path(root).rglob(RUN_RECORD))


def app_of(path: Path, run_dir: Path, file_name: str) -> str:
    """The app a results file belongs to: its name prefix, else its folder's name."""
    if path.name != file_name:
        return path.name[: -len(file_name) - 1]
    parent = path.parent
    return parent.name if parent != run_dir else ""


def load_campaign(
    root: str | os.PathLike[str], *, with_stats: bool = True, stats_pattern: str | None = None
) -> Campaign:
    """Read every run under ``root``.  Damaged files are cut with a warning.

    ``stats_pattern`` keeps only the statistics whose names match it (see
    :func:`views.select`), which bounds memory on campaigns of many large stats files.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such campaign folder")
    run_dirs = find_runs(root)
    if not run_dirs:
        raise ValueError(
            f"{root}: no run folders (folders with a {RUN_RECORD}) below it; pass the "
            "campaign's output folder"
        )
    problems: list[str] = []
    records: list[dict[str, Any]] = []
    requests: list[pd.DataFrame] = []
    decisions: list[pd.DataFrame] = []
    progress: list[pd.DataFrame] = []
    events: list[pd.DataFrame] = []
    stats: list[pd.DataFrame] = []
    hot: list[pd.DataFrame] = []
    seen: dict[str, Path] = {}
    for run_dir in run_dirs:
        record = read_run_record(run_dir / RUN_RECORD)
        run_id = record["run_id"]
        if run_id in seen:
            raise ValueError(
                f"{run_dir / RUN_RECORD}: run_id {run_id!r} is also used by {seen[run_id]}; "
                "run ids must be unique within a campaign"
            )
        seen[run_id] = run_dir
        execution = record.get(EXECUTION)
        facts = ({k: execution[k] for k in EXECUTION_FACTS if k in execution}
                 if isinstance(execution, dict) else {})
        oom = run_dir / "results" / OOM_FILE
        if oom.is_file():
            # A service the guest kernel's OOM killer ended (seed 004's PM-Always): the run
            # finished, and says which process went.
            killed = [line.strip() for line in oom.read_text().splitlines() if line.strip()]
            facts["oom_killed"] = "; ".join(killed)
            problems.extend(f"run {run_id}: killed by the guest kernel's OOM killer: {line}"
                            for line in killed)
        records.append({**record, **facts, "run_dir": str(run_dir)})

        def collect(
            name: str,
            reader: Callable[[Path], pd.DataFrame],
            into: list[pd.DataFrame],
            with_app: bool,
            run_dir: Path = run_dir,
            run_id: str = run_id,
        ) -> None:
            for path in sorted(run_dir.rglob(f"*{name}")):
                if path.name != name and not path.name.endswith("." + name):
                    continue
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ResultsWarning)
                    warnings.simplefilter("always", StatsFileWarning)
                    frame = reader(path)
                for warning in caught:
                    problems.append(str(warning.message))
                    warnings.warn_explicit(
                        warning.message, warning.category, warning.filename, warning.lineno
                    )
                frame.insert(0, "run_id", run_id)
                if with_app:
                    frame.insert(1, "app", app_of(path, run_dir, name))
                into.append(frame)

        collect("requests.csv", read_request_table, requests, True)
        collect("requests.parquet", read_request_table, requests, True)
        lats: list[pd.DataFrame] = []
        collect("lats.bin", read_lats_bin, lats, True)
        # A request table says more than lats.bin; use lats.bin only for apps without one.
        have = {(f["run_id"].iat[0], f["app"].iat[0]) for f in requests if len(f)}
        for frame in lats:
            if len(frame) and (frame["run_id"].iat[0], frame["app"].iat[0]) not in have:
                requests.append(frame.rename(columns={"request": "request_id"}))
        collect("decisions.jsonl", read_decision_log, decisions, False)
        collect(PROGRESS_FILE, read_be_progress, progress, True)
        collect("events.jsonl", read_events, events, False)
        for path in sorted(run_dir.rglob(HOTTEST_GLOB)):
            try:
                hot.append(read_hottest(path).assign(run_id=run_id))
            except HotPagesError as error:
                problems.append(str(error))
        if with_stats:
            def read(path: Path) -> pd.DataFrame:
                frame = parse_stats(path).stats
                return frame if stats_pattern is None else select(frame, stats_pattern)

            collect("stats.txt", read, stats, False)

    runs = pd.DataFrame.from_records(records)
    ordered = ["run_id", "run_dir"] + [c for c in runs.columns if c not in ("run_id", "run_dir")]
    return Campaign(
        root=root,
        runs=runs[ordered],
        requests=_concat(requests, ["run_id", "app", "sojourn_ns"]),
        decisions=_concat(decisions, ["run_id", "t_ns", "event", "app"]),
        progress=_concat(progress, ["run_id", "app", "t_ns", "work"]),
        stats=_concat(stats, ["run_id", "dump", "stat", "subname", "value"]),
        problems=problems,
        events=_concat(events, ["run_id", "at_s", "kind", "target"]),
        hot_frames=_concat(hot, ["run_id", "node", "count", "sharing", "access"]),
    )


def load_campaigns(
    roots: Sequence[str | os.PathLike[str]], *, with_stats: bool = True,
    stats_pattern: str | None = None
) -> Campaign:
    """One campaign, or several read as one: each run id prefixed with its campaign
    folder's name (``loops-paper-gem5/single``) and an axis ``campaign``, so runs of
    different campaigns (the same mix at two control intervals, say) share one report."""
    if len(roots) == 1:
        return load_campaign(roots[0], with_stats=with_stats, stats_pattern=stats_pattern)
    names = [campaign_name(root) for root in roots]
    if len(set(names)) < len(names):
        raise ValueError(f"campaign folders with the same name ({', '.join(names)}): their "
                         "runs could not be told apart; copy or link one under another name")
    loaded = [load_campaign(root, with_stats=with_stats, stats_pattern=stats_pattern)
              for root in roots]

    def merged(frames: list[pd.DataFrame]) -> pd.DataFrame:
        parts = [with_campaign_run_ids(frame, root)
                 for root, frame in zip(roots, frames, strict=True) if len(frame)]
        return _concat(parts, list(frames[0].columns))

    runs = merged([c.runs.assign(campaign=name) for name, c in zip(names, loaded,
                                                                     strict=True)])
    return Campaign(
        root=Path(os.path.commonpath([Path(root).absolute() for root in roots])),
        roots=tuple(Path(root) for root in roots),
        runs=runs[["run_id", "run_dir", *(c for c in runs.columns
                                          if c not in ("run_id", "run_dir"))]],
        requests=merged([c.requests for c in loaded]),
        decisions=merged([c.decisions for c in loaded]),
        progress=merged([c.progress for c in loaded]),
        stats=merged([c.stats for c in loaded]),
        problems=[problem for c in loaded for problem in c.problems],
        events=merged([c.events for c in loaded]),
        hot_frames=merged([c.hot_frames for c in loaded]),
    )


def campaign_name(root: str | os.PathLike[str]) -> str:
    """What a campaign folder's run ids are prefixed with when campaigns are read as one."""
    return Path(root).absolute().name


def with_campaign_run_ids(frame: pd.DataFrame, root: str | os.PathLike[str]) -> pd.DataFrame:
    """``frame``'s run ids as :func:`load_campaigns` names them: ``<campaign>/<run id>``."""
    return frame.assign(run_id=campaign_name(root) + "/" + frame["run_id"].astype(str))


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    frames = [frame for frame in frames if len(frame)]
    if not frames:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in columns})
    categorical = [c for c in frames[0].columns if isinstance(frames[0][c].dtype,
                                                                 pd.CategoricalDtype)]
    if categorical and len(frames) > 1:
        # Categoricals with different categories would concatenate as objects.
        frames = [frame.astype({c: object for c in categorical}) for frame in frames]
        combined = pd.concat(frames, ignore_index=True)
        return combined.astype({c: "category" for c in categorical})
    return pd.concat(frames, ignore_index=True)


def with_axes(frame: pd.DataFrame, campaign: Campaign, axes: list[str] | None = None
              ) -> pd.DataFrame:
    """``frame`` with the sweep axes of its run joined on ``run_id``."""
    wanted = campaign.axes if axes is None else axes
    columns = ["run_id", *[a for a in wanted if a not in frame.columns or a == "run_id"]]
    columns = list(dict.fromkeys(columns))
    return frame.merge(campaign.runs[columns], on="run_id", how="left")
