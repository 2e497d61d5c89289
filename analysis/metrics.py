"""The paper's metrics as functions of frames.

Inputs are the tidy frames of :mod:`.campaign` (requests, decisions, progress) or
frames derived from them here; outputs are small tidy frames that figures and the
report take.  Latencies are nanoseconds throughout; loads are requests per second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

PERCENTILES = (50, 95, 99)
MONITORING_INTERVAL_NS = 100_000_000  # the manager's 100 ms monitoring interval
# Decision-log events that end an adjustment episode (the agent logs one of these
# when it has found an allocation that meets QoS, or found none exists).
CONVERGENCE_EVENTS = ("converged", "infeasible", "oversubscribed")


def _percentile_columns(values: pd.Series, percentiles: Sequence[int]) -> pd.Series:
    data = values.to_numpy(dtype=np.float64)
    out = {"requests": float(len(data)), "mean_ns": float(data.mean()) if len(data) else np.nan}
    quantiles = np.percentile(data, percentiles) if len(data) else [np.nan] * len(percentiles)
    for p, q in zip(percentiles, quantiles, strict=True):
        out[f"p{p}_ns"] = float(q)
    return pd.Series(out)


def latency_percentiles(
    requests: pd.DataFrame,
    by: Sequence[str] = ("run_id", "app"),
    latency: str = "sojourn_ns",
    percentiles: Sequence[int] = PERCENTILES,
) -> pd.DataFrame:
    """p50/p95/p99 (and mean, count) of ``latency`` per group: per run and app by default."""
    _require(requests, [*by, latency], "requests")
    grouped = requests.groupby(list(by), sort=True, observed=True)[latency]
    frame = grouped.apply(_percentile_columns, percentiles=percentiles).unstack()
    frame["requests"] = frame["requests"].astype(np.int64)
    return frame.reset_index()


def first_arrival_ns(requests: pd.DataFrame, time: str = "end_ns") -> dict[str, float]:
    """Per run, its first scheduled arrival (``time`` when arrivals are not recorded):
    t = 0 of the run's windows and timelines."""
    column = "scheduled_ns" if "scheduled_ns" in requests.columns else time
    first = requests.groupby("run_id", observed=True)[column].min()
    return {str(run): float(value) for run, value in first.items()}


def windowed_percentiles(
    requests: pd.DataFrame,
    window_ns: int = MONITORING_INTERVAL_NS,
    by: Sequence[str] = ("run_id", "app"),
    time: str = "end_ns",
    latency: str = "sojourn_ns",
    percentiles: Sequence[int] = PERCENTILES,
) -> pd.DataFrame:
    """Percentiles per window of ``window_ns`` (by completion time by default).

    Windows count from the first scheduled arrival of the run, so the windows of
    colocated apps line up; ``t_s`` is the window's start in seconds from there.
    """
    _require(requests, [*by, time, latency, "run_id"], "requests")
    origin = requests["run_id"].astype(str).map(first_arrival_ns(requests, time)).astype(float)
    frame = requests.assign(window=((requests[time] - origin) // window_ns).astype(np.int64))
    out = latency_percentiles(frame, by=[*by, "window"], latency=latency,
                              percentiles=percentiles)
    out["t_s"] = out["window"] * window_ns / 1e9
    return out


def violation_spans(windows: pd.DataFrame, qos_ns: Mapping[str, float],
                    window_ns: Mapping[str, int], by: Sequence[str] = ("run_id", "app"),
                    tail: str = "p99_ns") -> pd.DataFrame:
    """How long each app's tail stayed above its QoS, from :func:`windowed_percentiles`:
    windows, violated windows and their time (``violated_s``), the first and last
    violated window's start (``first_s``, ``last_s``), and ``lasted_s``, from the start of
    the first violated window to the end of the last (the span BALM's figure shows, gaps
    inside it included). Apps without a QoS are left out; NaN times where none violated.

    A window in which no request completed has no row in ``windows``. Between an app's
    first and last window it is counted (``empty``): as violated when the next window
    with answers is violated (its requests waited through the empty one: a stall), else
    as idle (nothing arrived)."""
    columns = [*by, "windows", "empty", "violated", "violated_s", "first_s", "last_s",
               "lasted_s"]
    rows = []
    for key, group in windows.groupby(list(by), observed=True, sort=True):
        keys = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        qos = qos_ns.get(str(keys.get("app", "")))
        if not qos:
            continue
        width_ns = window_ns[str(keys["run_id"])]
        width = width_ns / 1e9
        index = (group["window"].to_numpy(dtype=np.int64) if "window" in group
                 else np.rint(group["t_s"].to_numpy(dtype=float) / width).astype(np.int64))
        if len(set(index.tolist())) != len(index):
            raise ValueError(f"violation_spans: {keys} has two rows for one window; give "
                             "one row per window (windowed_percentiles' output)")
        late = dict(zip(index.tolist(), (group[tail] > qos).tolist(), strict=True))
        span = range(int(index.min()), int(index.max()) + 1)
        bad, following_late = [], False
        for window in reversed(span):  # an empty window takes the verdict of the next
            following_late = late.get(window, following_late)
            if following_late:
                bad.append(window * width_ns / 1e9)  # as windowed_percentiles' t_s
        first, last = (min(bad), max(bad)) if bad else (np.nan, np.nan)
        rows.append({**keys, "windows": len(span), "empty": len(span) - len(late),
                     "violated": len(bad), "violated_s": len(bad) * width, "first_s": first,
                     "last_s": last, "lasted_s": last + width - first})
    return pd.DataFrame(rows, columns=columns)


def achieved_rps(requests: pd.DataFrame, by: Sequence[str] = ("run_id", "app")) -> pd.DataFrame:
    """Requests per second offered in each group: count over the span of scheduled arrivals."""
    _require(requests, [*by, "scheduled_ns"], "requests")

    def rate(times: pd.Series) -> float:
        span = (times.max() - times.min()) / 1e9
        return (len(times) - 1) / span if span > 0 else np.nan

    out = requests.groupby(list(by), observed=True)["scheduled_ns"].apply(rate)
    return out.rename("achieved_rps").reset_index()


def _qos_for(frame: pd.DataFrame, qos_ns: float | Mapping[str, float] | str,
             app: str = "app") -> pd.Series:
    """The QoS target of every row: one number, a per-app mapping, or a column name."""
    if isinstance(qos_ns, str):
        return frame[qos_ns].astype(float)
    if isinstance(qos_ns, Mapping):
        targets = frame[app].map(dict(qos_ns))
        if targets.isna().any():
            missing = sorted(set(frame.loc[targets.isna(), app]))
            raise ValueError(
                f"no QoS target for {missing}; give qos_ns for every app (nanoseconds)"
            )
        return targets.astype(float)
    return pd.Series(float(qos_ns), index=frame.index)


def max_load_under_qos(
    curves: pd.DataFrame,
    qos_ns: float | Mapping[str, float] | str,
    by: Sequence[str] = ("app",),
    rps: str = "rps",
    tail: str = "p99_ns",
    contiguous: bool = False,
) -> pd.DataFrame:
    """Max load: the largest ``rps`` whose ``tail`` latency is within QoS, per group.

    ``curves`` has one row per load point (e.g. from :func:`latency_percentiles` with
    the sweep axes joined).  With ``contiguous`` a load only counts if every lower
    load of the group also met QoS, which ignores a lucky point past the knee.  A
    group where no load meets QoS gets 0.
    """
    _require(curves, [*by, rps, tail], "curves")
    frame = curves.assign(_qos=_qos_for(curves, qos_ns)).sort_values([*by, rps])
    frame["_ok"] = frame[tail] <= frame["_qos"]
    if contiguous:
        frame["_ok"] = frame.groupby(list(by), observed=True)["_ok"].cummin()
    frame["_load"] = frame[rps].where(frame["_ok"], 0.0)
    out = frame.groupby(list(by), observed=True).agg(
        max_load=("_load", "max"), qos_ns=("_qos", "first")
    )
    return out.reset_index()


def normalized_max_load(
    max_loads: pd.DataFrame, baseline: Mapping[str, object], by: Sequence[str] = ("app",)
) -> pd.DataFrame:
    """Max load over the baseline's max load for the same group (Table III: over Arch 1).

    ``baseline`` selects the baseline rows, e.g. ``{"arch": "arch1"}``; ``by`` lists
    the columns that pair a row with its baseline (the app).
    """
    mask = np.ones(len(max_loads), dtype=bool)
    for column, value in baseline.items():
        mask &= (max_loads[column] == value).to_numpy()
    base = max_loads.loc[mask, [*by, "max_load"]].rename(columns={"max_load": "_base"})
    if base.empty:
        raise ValueError(f"no rows match the baseline {dict(baseline)}")
    out = max_loads.merge(base, on=list(by), how="left")
    out["normalized_max_load"] = out["max_load"] / out["_base"].replace(0, np.nan)
    return out.drop(columns="_base")


def tail_over_qos_at_low_load(
    curves: pd.DataFrame,
    qos_ns: float | Mapping[str, float] | str,
    by: Sequence[str] = ("app",),
    rps: str = "rps",
    tail: str = "p99_ns",
) -> pd.DataFrame:
    """Tail latency at the lowest load of each group over its QoS (> 1 is a violation)."""
    _require(curves, [*by, rps, tail], "curves")
    frame = curves.assign(_qos=_qos_for(curves, qos_ns))
    low = frame.sort_values(rps).groupby(list(by), observed=True).head(1)
    low = low.assign(tail_over_qos=low[tail] / low["_qos"])
    return low[[*by, rps, "tail_over_qos"]].sort_values(list(by)).reset_index(drop=True)


def table_iii(
    curves: pd.DataFrame,
    qos_ns: float | Mapping[str, float] | str,
    baseline_arch: object,
    arch: str = "arch",
    app: str = "app",
    rps: str = "rps",
    tail: str = "p99_ns",
) -> pd.DataFrame:
    """Table III: per architecture (rows) and app, tail latency / QoS at low load and
    max load normalised to ``baseline_arch``; columns are (metric, app)."""
    by = [arch, app]
    tails = tail_over_qos_at_low_load(curves, qos_ns, by=by, rps=rps, tail=tail)
    loads = max_load_under_qos(curves, qos_ns, by=by, rps=rps, tail=tail)
    loads = normalized_max_load(loads, {arch: baseline_arch}, by=[app])
    merged = tails.merge(loads, on=by)
    wide = merged.pivot(index=arch, columns=app,
                        values=["tail_over_qos", "normalized_max_load"])
    return wide


def effective_machine_utilization(
    loads: pd.DataFrame,
    max_load: Mapping[str, float] | pd.DataFrame,
    by: Sequence[str] = ("run_id",),
    app: str = "app",
    rps: str = "rps",
    meets_qos: str = "meets_qos",
) -> pd.DataFrame:
    """EMU per run: the sum over its LC apps of load as a fraction of each app's max load.

    ``loads`` has one row per run and LC app with its offered ``rps`` and whether it
    met QoS; ``max_load`` maps each app to its max load alone (or is the frame of
    :func:`max_load_under_qos`).  ``all_meet_qos`` tells whether the load counts:
    a mix only scores its EMU when every app in it meets QoS.
    """
    if isinstance(max_load, pd.DataFrame):
        max_load = dict(zip(max_load[app], max_load["max_load"], strict=True))
    _require(loads, [*by, app, rps, meets_qos], "loads")
    frame = loads.assign(_max=loads[app].map(dict(max_load)))
    if frame["_max"].isna().any():
        missing = sorted(set(frame.loc[frame["_max"].isna(), app]))
        raise ValueError(f"no max load for {missing}; measure each app alone first")
    frame["load_fraction"] = frame[rps] / frame["_max"]
    out = frame.groupby(list(by), observed=True).agg(
        emu=("load_fraction", "sum"), all_meet_qos=(meets_qos, "all"), apps=(app, "count")
    )
    return out.reset_index()


def best_emu(emu: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The highest EMU reached under QoS per group (e.g. per manager and mix)."""
    ok = emu[emu["all_meet_qos"]]
    out = ok.groupby(list(by), observed=True)["emu"].max().rename("best_emu").reset_index()
    groups = emu[list(by)].drop_duplicates()
    return groups.merge(out, on=list(by), how="left").fillna({"best_emu": 0.0})


def colocation_frontier(
    loads: pd.DataFrame,
    max_load: Mapping[str, float],
    order: Sequence[str],
    by: Sequence[str] = ("manager",),
    rps: str = "rps",
    meets_qos: str = "meets_qos",
) -> pd.DataFrame:
    """Figs. 7 and 8: the last app's highest load under QoS for each load of the others.

    ``loads``: one row per run and app (run_id, app, ``rps``, ``meets_qos`` and the
    ``by`` columns).  Loads become percentages of each app's max load alone, rounded
    to whole percent.  For 2 apps the result has x_pct, y_pct (Fig. 7); for 3, x_pct,
    y_pct, z_pct (Fig. 8).  The last percentage is NaN where no run met QoS.
    """
    if len(order) not in (2, 3):
        raise ValueError(f"a colocation frontier needs 2 or 3 apps in order, got {order}")
    _require(loads, ["run_id", "app", rps, meets_qos, *by], "loads")
    frame = loads[loads["app"].isin(order)].copy()
    frame["pct"] = (100 * frame[rps] / frame["app"].map(dict(max_load))).round()
    wide = frame.pivot_table(index=["run_id", *by], columns="app", values="pct",
                             observed=True, aggfunc="first")
    ok = frame.groupby(["run_id", *by], observed=True)[meets_qos].all()
    wide = wide.dropna(subset=list(order)).join(ok.rename("_ok")).reset_index()
    names = ["x_pct", "y_pct", "z_pct"][: len(order)]
    wide = wide.rename(columns=dict(zip(order, names, strict=True)))
    last, given = names[-1], names[:-1]
    wide[last] = wide[last].where(wide["_ok"].astype(bool))
    out = wide.groupby([*by, *given], observed=True)[last].max().reset_index()
    return out


def measured_spans(requests: pd.DataFrame) -> pd.DataFrame:
    """Per run, the span of its LC requests (first scheduled arrival, or start where
    arrivals are not recorded, to the last end), on the guest's monotonic clock that the
    best-effort jobs' progress lines use too; no rows without timed requests."""
    if requests.empty or "end_ns" not in requests.columns:
        return pd.DataFrame(columns=["run_id", "start_ns", "end_ns"])
    first = "scheduled_ns" if "scheduled_ns" in requests.columns else "start_ns"
    timed = requests.dropna(subset=[first, "end_ns"])
    spans = timed.groupby("run_id", observed=True).agg(start_ns=(first, "min"),
                                                       end_ns=("end_ns", "max"))
    return spans.reset_index()


def be_throughput(progress: pd.DataFrame, by: Sequence[str] = ("run_id", "app"),
                  spans: pd.DataFrame | None = None) -> pd.DataFrame:
    """Best-effort throughput: work units per second over each job's progress record, or,
    for a run in ``spans`` (:func:`measured_spans`), over the part of it inside the run's
    LC requests (cumulative work interpolated at the bounds): what the job did beside the
    measured service, not before it or in a wrap-up on other cores."""
    _require(progress, [*by, "t_ns", "work"], "progress")
    bounds = ({str(r.run_id): (float(r.start_ns), float(r.end_ns))
               for r in spans.itertuples()} if spans is not None and len(spans) else {})

    def rate(group: pd.DataFrame) -> float:
        ordered = group.sort_values("t_ns")
        t = ordered["t_ns"].to_numpy(dtype=np.float64)
        work = ordered["work"].to_numpy(dtype=np.float64)
        key = group.name if isinstance(group.name, tuple) else (group.name,)
        low, high = t.min(), t.max()
        run = str(key[list(by).index("run_id")]) if "run_id" in by else None
        if run in bounds:
            low, high = max(low, bounds[run][0]), min(high, bounds[run][1])
        if high <= low:
            return np.nan
        done = np.interp(high, t, work) - np.interp(low, t, work)
        return float(done / ((high - low) / 1e9))

    out = progress.groupby(list(by), observed=True)[["t_ns", "work"]].apply(rate)
    return out.rename("throughput").reset_index()


def page_access_breakdown(hot_frames: pd.DataFrame, by: Sequence[str] = ("run_id",)
                          ) -> pd.DataFrame:
    """Fig. 4: the accesses the board's counters saw on the hottest frames, by page type
    (private/shared x read-only/read-write): per group, each type's accesses and share,
    and the frames they fell on. Counts are of requests that reached memory (past the
    caches), and "private" means one CPU touched the frame."""
    from ..guest.hw_counters import PAGE_TYPES

    _require(hot_frames, [*by, "count", "sharing", "access"], "hot frames")
    typed = hot_frames.assign(page_type=hot_frames["sharing"] + " " + hot_frames["access"])
    table = typed.groupby([*by, "page_type"], observed=True).agg(
        accesses=("count", "sum"), frames=("count", "size")).reset_index()
    # Every type for every group, zero where the counters saw none of it.
    grid = table[list(by)].drop_duplicates().merge(
        pd.DataFrame({"page_type": PAGE_TYPES}), how="cross")
    table = grid.merge(table, on=[*by, "page_type"], how="left").fillna(
        {"accesses": 0, "frames": 0}).astype({"accesses": "int64", "frames": "int64"})
    total = table.groupby(list(by), observed=True)["accesses"].transform("sum")
    table["share"] = np.where(total > 0, table["accesses"] / total, np.nan)
    return table[[*by, "page_type", "accesses", "share", "frames"]]


def _untimed_start(decisions: pd.DataFrame) -> pd.Series:
    """The agent's start line: t_ns 0 means no time, so it is no run's origin."""
    event = decisions["event"] if "event" in decisions.columns else ""
    return (decisions["t_ns"] == 0) & (event == "start")


def convergence_time(
    decisions: pd.DataFrame, by: Sequence[str] = ("run_id",), start_ns: str | None = None
) -> pd.DataFrame:
    """Seconds from the start of management to convergence, per run.

    Convergence is the first ``converged`` / ``infeasible`` / ``oversubscribed`` event
    in the decision log; without one, the last event that changed an allocation
    (``to_cores`` or ``pages_moved``).  The start is the first timed record of the run
    (the agent's start line carries t_ns 0, no time), or the column ``start_ns`` when
    given.  ``converged`` tells which rule applied.
    """
    _require(decisions, [*by, "t_ns", "event"], "decisions")
    rows = []
    for key, group in decisions.groupby(list(by), observed=True, sort=True):
        timed = group["t_ns"][~_untimed_start(group)]
        start = group[start_ns].min() if start_ns else (timed.min() if len(timed) else 0)
        ending = group[group["event"].isin(CONVERGENCE_EVENTS)]
        if len(ending):
            end, how = ending["t_ns"].iloc[0], str(ending["event"].iloc[0])
        else:
            changed = np.zeros(len(group), dtype=bool)
            if "to_cores" in group.columns:
                changed |= group["to_cores"].notna().to_numpy()
            if "pages_moved" in group.columns:
                changed |= (group["pages_moved"].fillna(0) > 0).to_numpy()
            end = group["t_ns"][changed].max() if changed.any() else start
            how = "last change"
        keys = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, keys, strict=True)),
                     "convergence_s": (end - start) / 1e9, "converged": how})
    return pd.DataFrame(rows, columns=[*by, "convergence_s", "converged"])


def migrations_per_second(
    decisions: pd.DataFrame, by: Sequence[str] = ("run_id",), duration_s: float | None = None
) -> pd.DataFrame:
    """Pages moved per second and migration events per second, per run.

    The duration is the span of the run's decision log unless ``duration_s`` is given.
    """
    _require(decisions, [*by, "t_ns"], "decisions")
    frame = decisions.assign(
        _pages=decisions["pages_moved"].fillna(0) if "pages_moved" in decisions else 0
    )
    rows = []
    for key, group in frame.groupby(list(by), observed=True, sort=True):
        span = duration_s if duration_s is not None else (
            (group["t_ns"].max() - group["t_ns"].min()) / 1e9)
        pages = float(group["_pages"].sum())
        events = int((group["_pages"] > 0).sum())
        keys = key if isinstance(key, tuple) else (key,)
        rows.append({
            **dict(zip(by, keys, strict=True)),
            "pages_moved": pages,
            "migrations": events,
            "pages_per_s": pages / span if span > 0 else np.nan,
            "migrations_per_s": events / span if span > 0 else np.nan,
        })
    return pd.DataFrame(rows, columns=[*by, "pages_moved", "migrations", "pages_per_s",
                                       "migrations_per_s"])


BE_QUOTA_LINE = "be quota"  # core_timeline's line of the best-effort jobs' CPU quota


def core_timeline(decisions: pd.DataFrame, by: Sequence[str] = ("run_id", "app"),
                  origin_ns: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Cores held by each app over time, from the decision log (for Fig. 11).

    ``origin_ns``: per run, the time that is t = 0, on the guest's monotonic clock that the
    agent and the harness share; give the run's first scheduled arrival so the cores line
    up with :func:`windowed_percentiles` (decisions made before the load then have t < 0).
    Without it, t = 0 is the run's first timed decision.
    """
    _require(decisions, [*by, "t_ns"], "decisions")
    if "cores_after" not in decisions.columns:
        return pd.DataFrame(columns=[*by, "t_s", "cores"])
    decisions = decisions.reset_index(drop=True)  # logs of several runs, concatenated
    frame = decisions.dropna(subset=["cores_after"])
    if origin_ns is not None:
        origin = frame["run_id"].astype(str).map(origin_ns).astype(float)
    else:
        timed = decisions["t_ns"].where(~_untimed_start(decisions))
        origin = timed.groupby(decisions["run_id"], observed=True).transform("min")
        origin = origin.loc[frame.index]
    out = frame.assign(t_s=(frame["t_ns"] - origin) / 1e9, cores=frame["cores_after"])
    if "value_cores" in frame.columns and "app" in by:
        out = pd.concat([out, _be_quota_line(out, by)])
    return out[[*by, "t_s", "cores"]].reset_index(drop=True)


def _be_quota_line(out: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The best-effort jobs' CPU quota (cpu.max, in cores), a line of its own beside the
    cores they may run on. While the quota is lifted (0) the line is their cores, and
    follows them when the manager changes them later."""
    quota = out["value_cores"].where((out["event"] == "be-quota") & out["value_cores"].notna())
    lines = []
    for _, history in out.assign(quota=quota).groupby(list(by), observed=True, sort=False):
        if history["quota"].isna().all():
            continue  # an app whose quota was never set: no line
        history = history.sort_values("t_s", kind="stable")
        limit = history["quota"].ffill()  # the quota in force at each of its rows
        line = history.assign(app=BE_QUOTA_LINE, cores=limit.where(limit > 0, history["cores"]))
        lines.append(line[limit.notna()])
    return (pd.concat(lines)[[*by, "t_s", "cores"]] if lines
            else pd.DataFrame(columns=[*by, "t_s", "cores"]))


def latency_estimates(decisions: pd.DataFrame, by: Sequence[str] = ("run_id", "app")
                      ) -> pd.DataFrame:
    """The agent's memory-latency estimates (seed 003, from the board's miss counters) per
    app: the misses-weighted mean of its ``latency-estimate`` events, their count and the
    misses behind them. Empty when the run had no counters."""
    columns = [*by, "estimate_ns", "intervals", "misses"]
    if decisions.empty or "value_estimate_ns" not in decisions.columns:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
    rows = decisions[decisions["event"] == "latency-estimate"]
    _require(rows, [*by, "value_estimate_ns", "value_misses"], "decisions")

    def weighted(group: pd.DataFrame) -> pd.Series:
        misses = group["value_misses"].astype(float)
        mean = float(np.average(group["value_estimate_ns"], weights=misses))
        return pd.Series({"estimate_ns": mean, "intervals": float(len(group)),
                          "misses": float(misses.sum())})

    out = rows.groupby(list(by), observed=True)[["value_estimate_ns", "value_misses"]].apply(
        weighted)
    return out.reset_index()


HOTNESS_CHOICE_COLUMNS = ("planned_pages", "planned_hot_pages", "candidate_pages",
                          "shadow_common_pages", "shadow_hot_pages", "shadow_tied_at_cut",
                          "shadow_hot_among_planned")


def hotness_choices(decisions: pd.DataFrame, by: Sequence[str] = ("run_id",)) -> pd.DataFrame:
    """Each thread migration's page choice: how many pages the agent planned by its hotness
    source, and, with ``hotness_shadow``, how many of them the other source would also have
    chosen from the same candidates (``overlap`` = common / planned), beside the overlap
    two random choices would have (``chance`` = planned / candidates) and how many
    candidates tie at the shadow's cut (idle tracking's 0/1 counts tie by the hundred).
    One row per decision that planned pages; empty when none did."""
    columns = [*by, "t_ns", "app", *HOTNESS_CHOICE_COLUMNS, "overlap", "chance"]
    if decisions.empty or "value_planned_pages" not in decisions.columns:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
    rows = decisions.dropna(subset=["value_planned_pages"])
    _require(rows, [*by, "t_ns", "app"], "decisions")
    out = rows[[*by, "t_ns", "app"]].copy()
    for name in HOTNESS_CHOICE_COLUMNS:
        key = f"value_{name}"
        out[name] = rows[key].astype(float) if key in rows.columns else np.nan
    out["overlap"] = out["shadow_common_pages"] / out["planned_pages"]
    out["chance"] = out["planned_pages"] / out["candidate_pages"]
    return out.reset_index(drop=True)[columns]


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [column for column in dict.fromkeys(columns) if column not in frame.columns]
    if missing:
        raise ValueError(
            f"{what} frame lacks columns {missing}; it has {list(frame.columns)}"
        )


def event_times(events: pd.DataFrame, origin_ns: float | None) -> pd.DataFrame:
    """A run's scenario events with ``t_s`` on the requests' clock: the guest's uptime when
    each happened (uptime and the requests' CLOCK_MONOTONIC agree in a guest that never
    suspends) minus ``origin_ns``; without either, the scheduled ``at_s``."""
    out = events.copy()
    if origin_ns is not None and "uptime_s" in out.columns:
        measured = pd.to_numeric(out["uptime_s"], errors="coerce") - origin_ns / 1e9
        out["t_s"] = measured.fillna(out["at_s"])
    else:
        out["t_s"] = out["at_s"]
    return out
