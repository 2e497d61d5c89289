"""An HTML report of a campaign: the metrics that its sweep axes allow, as tables and figures.

The report reads the campaign once (:func:`campaign.load_campaign`), computes metric
frames (:mod:`.metrics`, :mod:`.memlat`), draws figures from them (:mod:`.figures`)
and writes ``index.html`` beside ``figures/*.png|svg`` and ``tables/*.csv``.

Sweep axes it understands in ``run.json`` (others are shown, not used):
``app`` (one LC app) or ``apps`` (a mix); ``rps`` (a number, or ``{app: rps}`` for a
mix); ``qos_ns`` (a number or ``{app: ns}``); ``system`` / ``arch`` / ``placement`` /
``manager`` (what a curve or bar is drawn per); ``mix`` (a mix's name).
"""

from __future__ import annotations

import html
import json
import numbers
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..atomic import atomic_write_text
from ..components.stat_names import controller_memories, stat_names
from ..topology import Topology, TopologyError
from . import figures, memlat, metrics
from .campaign import Campaign, load_campaigns, simulated_topology, with_campaign_run_ids

SYSTEM_AXES = ("system", "arch", "placement", "manager")
# The statistics the report uses; the others are not kept in memory.
REPORT_STATS = (r"(simSeconds|sim_seconds|simFreq|.*clk_domain\.clock|.*\.clock"
                r"|.*\.demandMisses|.*\.demandMissLatency|.*\.requestorReadTotalLat"
                r"|.*\.requestorReadAccesses|.*\.cpuMisses|.*\.cpuOutstandingTicks|"
                + memlat.QUEUE_STAT_PATTERN + ")$")
TIMELINE_RUNS = 4  # Fig. 11 panels drawn at most


@dataclass
class Section:
    title: str
    text: str = ""
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)  # caption, stem


def offered_loads(campaign: Campaign) -> pd.DataFrame:
    """One row per run and LC app: the offered ``rps`` from run.json, else the achieved
    rate of its requests."""
    pairs = campaign.requests[["run_id", "app"]].drop_duplicates()
    runs = campaign.runs.set_index("run_id")
    rows = []
    for run_id, app in pairs.itertuples(index=False):
        rps = runs.loc[run_id].get("rps") if "rps" in runs.columns else None
        if isinstance(rps, Mapping):
            rps = rps.get(app)
        rows.append({"run_id": run_id, "app": app,
                     "rps": float(rps) if _is_number(rps) else np.nan})  # type: ignore[arg-type]
    loads = pd.DataFrame(rows, columns=["run_id", "app", "rps"])
    if loads["rps"].isna().any() and "scheduled_ns" in campaign.requests.columns:
        have = campaign.requests.dropna(subset=["scheduled_ns"])
        if len(have):
            achieved = metrics.achieved_rps(have)
            loads = loads.merge(achieved, on=["run_id", "app"], how="left")
            loads["rps"] = loads["rps"].fillna(loads.pop("achieved_rps"))
    return loads


def qos_targets(campaign: Campaign, given: Mapping[str, float] | None) -> dict[str, float]:
    """QoS per app in ns: given ones win over run.json's ``qos_ns``."""
    targets: dict[str, float] = {}
    if "qos_ns" in campaign.runs.columns:
        for run in campaign.runs.itertuples(index=False):
            qos = run.qos_ns
            apps = _apps_of(run._asdict())
            if isinstance(qos, Mapping):
                targets.update({str(k): float(v) for k, v in qos.items()})
            elif _is_number(qos):
                targets.update(dict.fromkeys(apps, float(qos)))
    targets.update(given or {})
    return targets


def _apps_of(record: Mapping[str, Any]) -> list[str]:
    if isinstance(record.get("apps"), list):
        return [str(a) for a in record["apps"]]
    if isinstance(record.get("app"), str):
        return [record["app"]]
    return []


def _is_number(value: object) -> bool:
    """A real number that is not NaN or a bool (numpy scalars count)."""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
            and value == value)


def _hashable_axes(campaign: Campaign) -> list[str]:
    out = []
    for axis in campaign.axes:
        values = campaign.runs[axis]
        if values.map(lambda v: isinstance(v, list | dict)).any():
            continue
        out.append(axis)
    return out


def build_report(
    campaign_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str] | None = None,
    qos_ns: Mapping[str, float] | None = None,
) -> Path:
    """Write the report of ``campaign_dir`` (or of several campaigns read as one,
    :func:`load_campaigns`) into ``out_dir`` (default CAMPAIGN/report; needed for several);
    returns the path of index.html."""
    roots = [campaign_dir] if isinstance(campaign_dir, str | os.PathLike) else list(campaign_dir)
    if len(roots) > 1 and out_dir is None:
        raise ValueError("a report of several campaigns needs a folder of its own: --out DIR")
    campaign = load_campaigns(roots, stats_pattern=REPORT_STATS)
    out = Path(out_dir) if out_dir is not None else campaign.root / "report"
    (out / "figures").mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    sections = list(_sections(campaign, qos_targets(campaign, qos_ns), out))
    page = _html(campaign, sections)
    index = out / "index.html"
    atomic_write_text(index, page)
    for section in sections:
        for name, table in section.tables:
            atomic_write_text(out / "tables" / f"{_slug(name)}.csv", table.to_csv(index=False))
    return index


def failed_attempts(root: Path) -> pd.DataFrame:
    """Every failed attempt the campaign folder keeps (failed/<run>/attempt-N/failure.json),
    finished later or not: run, attempt, why it ended, host and simulated seconds."""
    rows = []
    for record in sorted(Path(root).glob("failed/*/attempt-*/failure.json")):
        try:
            data = json.loads(record.read_text())
        except (OSError, ValueError):
            data = {}
        rows.append({"run_id": record.parent.parent.name, "attempt": record.parent.name,
                     "exit_cause": data.get("exit_cause"),
                     "host_seconds": data.get("host_seconds"),
                     "simulated_seconds": data.get("simulated_seconds")})
    return pd.DataFrame(rows, columns=["run_id", "attempt", "exit_cause", "host_seconds",
                                       "simulated_seconds"])


def _failed_attempts_of(campaign: Campaign) -> pd.DataFrame:
    """:func:`failed_attempts` of the campaign, or of each of several read as one (their
    run ids prefixed like the runs', :func:`load_campaigns`)."""
    if not campaign.roots:
        return failed_attempts(campaign.root)
    return pd.concat([with_campaign_run_ids(failed_attempts(root), root)
                      for root in campaign.roots], ignore_index=True)


def _sections(campaign: Campaign, qos: dict[str, float], out: Path
              ) -> Iterator[Section]:
    axes = _hashable_axes(campaign)
    runs = campaign.runs.drop(columns=["run_dir", "execution"], errors="ignore")
    failed = _failed_attempts_of(campaign)
    text = (f"{len(runs)} runs of {', '.join(map(str, campaign.roots))}." if campaign.roots
            else f"{len(runs)} runs below {campaign.root}.")
    tables: list[tuple[str, pd.DataFrame]] = [("runs", runs)]
    if len(failed):
        unfinished = sorted(set(failed["run_id"]) - set(runs["run_id"]))
        text += (f" {len(failed)} failed attempt(s); not finished: "
                 f"{', '.join(unfinished) or 'none'}.")
        tables.append(("failed attempts", failed))
    yield Section("Runs", text, tables)

    if campaign.requests.empty:
        yield Section("Latency", "No latency records (lats.bin or requests tables) found.")
    else:
        percentiles = metrics.latency_percentiles(campaign.requests)
        loads = offered_loads(campaign)
        table = percentiles.merge(loads, on=["run_id", "app"], how="left")
        table = table.merge(campaign.runs[["run_id", *[a for a in axes if a not in
                                                         ("app", "rps")]]],
                            on="run_id", how="left")
        table["qos_ns"] = table["app"].map(qos)
        table["meets_qos"] = table["p99_ns"] <= table["qos_ns"]
        yield Section("Tail latency per run", "Sojourn time percentiles per run and app "
                      "(ms here, ns in the CSV).",
                      [("latency per run", table)])
        yield from _reference_section(table, campaign)
        yield from _load_sections(campaign, table, axes, qos, out)
        yield from _mix_sections(campaign, table, axes, qos, out)
        yield from _timeline_sections(campaign, qos, out)
        yield from _policy_sections(campaign, table, axes, qos, out)

    if not campaign.decisions.empty:
        group = "manager" if "manager" in axes else None
        conv = metrics.convergence_time(campaign.decisions)
        mig = metrics.migrations_per_second(campaign.decisions)
        joined = conv.merge(mig, on="run_id").merge(campaign.runs[["run_id", *axes]],
                                                    on="run_id", how="left")
        section = Section("Manager decisions", "Convergence time and page migrations per run.",
                          [("decisions per run", joined)])
        joined = joined.assign(group=joined[group] if group else "all")
        section.figures.append(("Convergence time CDF (Fig. 10 form)",
                                _save(figures.convergence_cdf(joined), out, "convergence")))
        yield section
        choices = metrics.hotness_choices(campaign.decisions)
        if not choices.empty and choices["shadow_common_pages"].notna().any():
            yield Section(
                "Pages chosen by hotness, beside the shadow source",
                "Each thread migration's pages, planned by the run's hotness source; with "
                "hotness_shadow, how many the other source would also have chosen from the "
                "same candidates (overlap), beside what two random choices would share "
                "(chance = planned / candidates) and how many candidates tie at the "
                "shadow's cut.",
                [("page choices per migration", choices.merge(
                    campaign.runs[["run_id", *(a for a in axes if a != "app")]],
                    on="run_id", how="left"))])
        estimates = metrics.latency_estimates(campaign.decisions)
        if not estimates.empty:
            yield Section(
                "Memory latency from the hardware counters",
                "The agent's estimate per app (seed 003: cache latency + the mean time its "
                "CPUs' misses stayed outstanding below the caches, weighted by misses), from "
                "the board's miss counters; gem5's own view is the memory read latency by "
                "requester and target below.",
                [("latency estimate per run and app", estimates)])

    if not campaign.progress.empty:
        # The job is the progress frame's "app"; a run's own "app" axis (single-app
        # runs) names an LC service and is left out.
        thr = _be_throughput(campaign).merge(
            campaign.runs[["run_id", *(a for a in axes if a != "app")]], on="run_id",
            how="left")
        units = campaign.progress.groupby("app", observed=True)["unit"].first() \
            if "unit" in campaign.progress.columns else pd.Series(dtype=str)
        section = Section("Best-effort throughput", "Work units per second (each job's "
                          "unit: GFLOP for compute, GB for membw).", [("be throughput", thr)])
        if "load" in thr.columns:
            # Fig. 9 over the campaign's load axis (the mix at a fraction of each app's
            # max load), for campaigns without single-app runs to derive max loads from.
            for job, part in thr.groupby("app", observed=True):
                part = part.assign(x_pct=100 * part["load"].astype(float))
                if "manager" not in part.columns:
                    part = part.assign(manager="all")
                figure = figures.be_throughput(part)
                figure.axes[0].set_xlabel("load of the LC mix (% of each app's max load)")
                figure.axes[0].set_ylabel(f"{job} throughput ({units.get(job, 'units')}/s)")
                section.figures.append((f"{job}: best-effort throughput against the LC load "
                                        "(Fig. 9 form)", _save(figure, out, f"be_{job}")))
        yield section

    if not campaign.hot_frames.empty:
        yield _page_type_section(campaign, axes, out)

    if not campaign.stats.empty:
        yield _stats_section(campaign)

    if campaign.problems:
        text = "<ul>" + "".join(f"<li>{html.escape(p)}</li>" for p in campaign.problems) + \
            "</ul>"
        yield Section("Problems found while reading", text)


def _reference_section(table: pd.DataFrame, campaign: Campaign) -> Iterator[Section]:
    """Runs of one service alone on a preset the bundle's reference covers, beside it."""
    from .reference import REFERENCE_DIR, beside_reference

    if "topology" not in table.columns and "topology" in campaign.runs.columns:
        table = table.merge(campaign.runs[["run_id", "topology"]], on="run_id", how="left")
    single = table[table.groupby("run_id")["app"].transform("count") == 1]
    beside = beside_reference(single)
    if beside.empty:
        return
    yield Section(
        "Beside the reference results",
        "Each run of one service alone on a preset that the bundle's reference study "
        f"covers ({REFERENCE_DIR}, analysis/reference/README.md), with the reference's p99 "
        "at the same load (its M/G/k curve over the service times it measured, one worker "
        "per core) and its max load. A ratio far from 1 means another setup (workers, "
        "placement, data) or another gem5, kernel or image.",
        [("beside the reference", beside)])


def _load_sections(campaign: Campaign, table: pd.DataFrame, axes: list[str],
                   qos: dict[str, float], out: Path) -> Iterator[Section]:
    single = table.groupby("run_id")["app"].transform("count") == 1
    curves = table[single & table["rps"].notna()].copy()
    if curves.empty or curves.groupby("app")["rps"].nunique().max() < 2:
        return
    system = next((a for a in SYSTEM_AXES if a in axes and curves[a].nunique() > 1), None)
    curves["system"] = curves[system].astype(str) if system else "all"
    # Repeats of one load point (seeds) count by their worst tail: max load must hold
    # in every repeat.
    keys = ["app", "system", "rps", *(["arch"] if "arch" in curves.columns else [])]
    curves = curves.groupby(keys, as_index=False, dropna=False, observed=True).agg(
        p99_ns=("p99_ns", "max"), qos_ns=("qos_ns", "first"))
    section = Section("Latency against load",
                      f"One curve per {system or 'app'}; QoS lines from the run records.")
    with_qos = curves[curves["qos_ns"].notna()]
    max_loads = None
    if len(with_qos):
        max_loads = metrics.max_load_under_qos(with_qos, "qos_ns", by=["app", "system"])
        section.tables.append(("max load under QoS", max_loads))
    section.figures.append(("Tail latency against load (Fig. 2 form)",
                            _save(figures.latency_vs_load(curves, max_loads), out, "latency")))
    if max_loads is not None and system in ("placement", "system"):
        best = max_loads.groupby("app")["max_load"].transform("max").replace(0, np.nan)
        bars = max_loads.assign(policy=max_loads["system"],
                                normalized_max_load=max_loads["max_load"] / best)
        section.figures.append(("Max load per policy, normalised to the best (Fig. 3 form)",
                                _save(figures.max_load_bars(bars), out, "max_load")))
    if "arch" in axes and len(with_qos) and with_qos["arch"].nunique() > 1:
        baseline = sorted(with_qos["arch"].unique(), key=str)[0]
        iii = metrics.table_iii(with_qos, "qos_ns", baseline_arch=baseline)
        flat = iii.copy()
        flat.columns = [f"{m} {a}" for m, a in flat.columns]
        section.tables.append((f"Table III (max load normalised to {baseline})",
                               flat.reset_index()))
        section.figures.append(("Table III", _save(figures.table_iii_figure(iii), out,
                                                   "table_iii")))
    yield section


def _mix_sections(campaign: Campaign, table: pd.DataFrame, axes: list[str],
                  qos: dict[str, float], out: Path) -> Iterator[Section]:
    counts = table.groupby("run_id")["app"].transform("count")
    mixes = table[counts > 1]
    alone = table[counts == 1]
    if mixes.empty or alone.empty or not qos:
        return
    max_alone = metrics.max_load_under_qos(alone[alone["qos_ns"].notna()], "qos_ns",
                                           by=["app"])
    known = set(max_alone.loc[max_alone["max_load"] > 0, "app"])
    mixes = mixes[mixes.groupby("run_id")["app"].transform(lambda a: set(a) <= known)]
    if mixes.empty:
        return
    emu = metrics.effective_machine_utilization(mixes.fillna({"meets_qos": False}),
                                                max_alone)
    emu = emu.merge(campaign.runs[["run_id", *axes]], on="run_id", how="left")
    section = Section("Colocation", "Effective machine utilisation: the sum over a mix's LC "
                      "apps of load as a fraction of each app's max load alone (the best "
                      "max load of its single-app runs); it counts only when every app "
                      "meets QoS.", [("EMU per run", emu)])
    group = [a for a in ("mix", "manager") if a in axes]
    if group:
        section.tables.append(("best EMU under QoS", metrics.best_emu(emu, by=group)))
    limits = dict(zip(max_alone["app"], max_alone["max_load"], strict=True))
    frontiers: list[tuple[tuple[str, ...], str]] = []
    for run in campaign.runs.itertuples(index=False):
        apps = _apps_of(run._asdict())
        if len(apps) in (2, 3) and run.run_id in set(mixes["run_id"]):
            frontiers.append((tuple(apps), str(run.run_id)))
    by = ["manager"] if "manager" in axes else []
    for order in sorted({o for o, _ in frontiers}):
        ids = {r for o, r in frontiers if o == order}
        part = mixes[mixes["run_id"].isin(ids)]
        if "manager" not in part.columns:
            part = part.assign(manager="all")
        frontier = metrics.colocation_frontier(part, limits, order, by=["manager"])
        name = "+".join(order)
        section.tables.append((f"colocation {name}", frontier))
        if len(order) == 2:
            figure = figures.colocation_curves(frontier.assign(mix=name))
            caption = f"{name}: max load of {order[1]} under QoS against load of {order[0]} " \
                "(Fig. 7 form)"
        else:
            figure = figures.colocation_heatmap(frontier)
            caption = f"{name}: max load of {order[2]} under QoS (Fig. 8 form)"
        section.figures.append((caption, _save(figure, out, f"colocation_{name}")))
    if not campaign.progress.empty and frontiers:
        first = {r: o[0] for o, r in frontiers}
        lc1 = mixes[mixes["app"] == mixes["run_id"].map(first)]
        lc1 = lc1.assign(x_pct=(100 * lc1["rps"] / lc1["app"].map(limits)).round())
        thr = _be_throughput(campaign).merge(
            lc1[["run_id", "x_pct", "meets_qos"]], on="run_id")
        thr = thr.merge(campaign.runs[["run_id", *by]], on="run_id", how="left") if by else \
            thr.assign(manager="all")
        section.figures.append(("Best-effort throughput against the first LC app's load "
                                "(Fig. 9 form)",
                                _save(figures.be_throughput(thr), out, "be_throughput")))
    yield section


def _interval_by_run(campaign: Campaign) -> dict[str, int]:
    """Each run's monitoring interval in ns: interval_s from its record, or from the
    scenario.json the guest returned, else the paper's 100 ms."""
    out = {}
    for _, run in campaign.runs.iterrows():
        value = run.get("interval_s")
        scenario = Path(str(run["run_dir"])) / "results" / "scenario.json"
        if (value is None or pd.isna(value)) and scenario.is_file():
            value = json.loads(scenario.read_text()).get("interval_s")
        out[str(run["run_id"])] = (round(float(value) * 1e9) if pd.notna(value)
                                   else metrics.MONITORING_INTERVAL_NS)
    return out


# Axes that compare a policy with its baselines: a policy option (options.<manager>.<key>),
# seed 004's allocation policies (placement), the tiering beside them, and named variants
# (a policy and baselines that differ in several keys, e.g. HeteroOS's).
POLICY_AXES = ("placement", "tiering", "variant")


def _policy_sections(campaign: Campaign, table: pd.DataFrame, axes: list[str],
                     qos: dict[str, float], out: Path) -> Iterator[Section]:
    """A policy against its baselines: LC p99 and best-effort throughput per variant."""
    compared = [a for a in axes if a.startswith("options.") or a in POLICY_AXES]
    # Best-effort jobs beside managers at one load: Fig. 9's question at that point (the
    # BE section draws Fig. 9 itself over a load axis).
    fig9 = not campaign.progress.empty and "load" not in axes and "manager" in axes
    compared += ["manager"] if fig9 else []
    compared = [a for a in compared if campaign.runs[a].nunique() > 1]
    if "variant" in compared:  # its name says what its keys (placement, tiering...) do
        compared = [a for a in compared if a not in ("placement", "tiering")]
    if not compared:
        return
    labels = campaign.runs.set_index("run_id")[compared].astype(str).apply(
        lambda row: " ".join(f"{a.split('.')[-1]}={v}" for a, v in row.items()), axis=1)
    lc = table[["run_id", "app", "p99_ns", "qos_ns"]].copy()
    lc["label"] = lc["run_id"].map(labels)
    lc["over_qos"] = lc["qos_ns"].notna()
    lc["tail"] = np.where(lc["over_qos"], lc["p99_ns"] / lc["qos_ns"], lc["p99_ns"] / 1e6)
    be = None
    tables = [("policy comparison: lc", lc)]
    if not campaign.progress.empty:
        be = _be_throughput(campaign)
        be["label"] = be["run_id"].map(labels)
        if "unit" in campaign.progress.columns:
            be["unit"] = be["app"].map(
                campaign.progress.groupby("app", observed=True)["unit"].first())
        # Every LC app of the run within its QoS (unknown QoS counts as within).
        met = lc.assign(ok=~lc["over_qos"] | (lc["tail"] <= 1.0)).groupby("run_id")["ok"].all()
        be["qos_met"] = be["run_id"].map(met).fillna(True).astype(bool)
        tables.append(("policy comparison: be", be))
    section = Section("A policy against its baselines",
                      "Each variant of " + ", ".join(compared) + ": every LC app's p99 "
                      "(over its QoS) and every best-effort job's throughput" +
                      (" (Fig. 9 at one load: the batch work each manager leaves room for "
                       "while the LC apps keep their QoS)." if "manager" in compared else "."),
                      tables)
    section.figures.append(("LC p99 and best-effort throughput per variant",
                            _save(figures.policy_comparison(lc, be), out,
                                  "policy_comparison")))
    over_time = _tails_over_time(campaign, labels, qos)
    if over_time is not None:
        windows, interval_of = over_time
        spans = metrics.violation_spans(windows, qos, interval_of)
        spans["label"] = spans["run_id"].map(labels)
        section.tables.append(("violations per variant", spans))
        section.figures.append(("LC p99 per monitoring window, each variant (how long a "
                                "violation lasts)",
                                _save(figures.tails_over_time(windows, qos), out,
                                      "policy_tails_over_time")))
    yield section


def _tails_over_time(campaign: Campaign, labels: pd.Series, qos: dict[str, float]
                     ) -> tuple[pd.DataFrame, dict[str, int]] | None:
    """Every compared run's LC p99 per its own monitoring window, labelled by variant,
    with each run's window; None without timed requests or QoS."""
    if "end_ns" not in campaign.requests.columns:
        return None
    timed = campaign.requests.dropna(subset=["end_ns"])
    timed = timed[timed["run_id"].isin(labels.index)]
    if timed.empty or not qos:
        return None
    interval_of = _interval_by_run(campaign)
    windows = pd.concat([metrics.windowed_percentiles(group, window_ns=interval_of[str(run)])
                         for run, group in timed.groupby("run_id", observed=True)])
    windows["label"] = windows["run_id"].astype(str).map(labels)
    return windows, interval_of


def _timeline_sections(campaign: Campaign, qos: dict[str, float], out: Path
                       ) -> Iterator[Section]:
    if "end_ns" not in campaign.requests.columns:
        return
    timed = campaign.requests.dropna(subset=["end_ns"])
    run_ids = [r for r in campaign.runs["run_id"] if r in set(timed["run_id"])]
    with_log = set(campaign.decisions["run_id"]) if not campaign.decisions.empty else set()
    chosen = [r for r in run_ids if r in with_log][:TIMELINE_RUNS] or run_ids[:1]
    if not chosen:
        return
    section = Section("Timelines", "p99 per monitoring window (each run's interval; "
                      "100 ms unless its record says interval_s; a run without a manager's "
                      "log and shorter than 10 intervals: a tenth of it) and cores held "
                      "(Fig. 11 form); dotted lines: the scenario's events.")
    interval_of = _interval_by_run(campaign)
    for run_id in chosen:
        requests = timed[timed["run_id"] == run_id]
        window_ns = interval_of[run_id]
        if run_id not in with_log:  # no control interval to show: ten windows at least
            span_ns = float(requests["end_ns"].max() - requests["end_ns"].min())
            window_ns = int(min(window_ns, max(span_ns / 10, 1.0)))
        windows = metrics.windowed_percentiles(requests, window_ns=window_ns)
        origin_ns = metrics.first_arrival_ns(requests)
        cores = None
        if run_id in with_log:
            cores = metrics.core_timeline(campaign.decisions[campaign.decisions["run_id"]
                                                              == run_id], origin_ns=origin_ns)
        events = metrics.event_times(campaign.events[campaign.events["run_id"] == run_id],
                                     origin_ns.get(run_id))
        figure = figures.timeline(windows, cores, qos_ns=qos or None,
                                  events=events if len(events) else None)
        section.figures.append((f"run {run_id}", _save(figure, out, f"timeline_{run_id}")))
    yield section


def _be_throughput(campaign: Campaign) -> pd.DataFrame:
    """Each best-effort job's throughput beside its run's LC requests (their span)."""
    return metrics.be_throughput(campaign.progress,
                                 spans=metrics.measured_spans(campaign.requests))


def _topologies(campaign: Campaign) -> dict[str, Topology]:
    """The topology each run simulated, from its run record (runs without one are left
    out of what needs the board's statistic names)."""
    out: dict[str, Topology] = {}
    if "topology" not in campaign.runs.columns:
        return out
    for _, run in campaign.runs.iterrows():
        name = run["topology"]
        if isinstance(name, str) and name:
            try:
                out[str(run["run_id"])] = simulated_topology(run.to_dict())
            except (TopologyError, ValueError):
                continue
    return out


def _page_type_section(campaign: Campaign, axes: list[str], out: Path) -> Section:
    """Fig. 4: each run's memory accesses by page type, from the counters' hottest frames."""
    table = metrics.page_access_breakdown(campaign.hot_frames)
    varying = [a for a in axes if campaign.runs[a].astype(str).nunique() > 1]
    labels = campaign.runs.set_index("run_id")[varying].astype(str).agg(" ".join, axis=1) \
        if varying else pd.Series(campaign.runs["run_id"].to_numpy(),
                                  index=campaign.runs["run_id"])
    table.insert(1, "label", table["run_id"].map(labels))
    section = Section(
        "Page accesses by page type (Fig. 4 form)",
        "The board's page-access counters at the end of each run: the hottest frames of "
        "every counted memory (as many as one hot-page query returns) and the accesses "
        "that reached memory on them, by type. Private: one CPU touched the frame; "
        "read-write: a write reached memory. The paper counts every access in the page "
        "table entry, before the caches; these counts are after them.",
        [("accesses by page type", table)])
    section.figures.append(("Memory accesses by page type (Fig. 4 form)",
                            _save(figures.page_type_breakdown(table), out, "page_types")))
    return section


def _stats_section(campaign: Campaign) -> Section:
    stats = campaign.stats
    # Sums over dumps take each window's closing dump: a run made in several processes
    # or with dumps that do not reset holds windows of several cumulative dumps.
    windows = memlat.window_dumps(stats)
    per_dump = stats.drop_duplicates(["run_id", "dump"])
    dumps = per_dump.groupby("run_id", observed=True).agg(dumps=("dump", "size")).join(
        windows.drop_duplicates(["run_id", "dump"]).groupby("run_id", observed=True).agg(
            windows=("dump", "size"), simulated_s=("sim_seconds", "sum")))
    section = Section("gem5 statistics", "", [("stats per run", dumps.reset_index())])
    target = memlat.memory_latency_by_target(windows)
    if len(target):
        mean = target.groupby(["run_id", "target", "requester"], observed=True).agg(
            accesses=("accesses", "sum"), latency_ns=("latency_ns", "mean")).reset_index()
        section.tables.append(("memory read latency by requester and target", mean))
    estimates, device, bandwidth, queues = [], [], [], []
    for run_id, topology in _topologies(campaign).items():
        names = stat_names(topology)
        own = windows[windows["run_id"] == run_id]
        estimates.append(memlat.estimate_by_cache(own, names))
        device.append(memlat.device_memory_latency(own, names.counters))
        bandwidth.append(memlat.memory_bandwidth(own, names.controllers))
        detailed = memlat.detailed_dumps(own, names, stat_names(topology, "boot"))
        if len(detailed):
            queues.append(memlat.controller_queues(
                detailed, controller_memories(topology),
                seconds=memlat.detailed_seconds(detailed, names)).assign(run_id=run_id))
    bandwidth = [b for b in bandwidth if len(b)]
    if bandwidth:
        total = pd.concat(bandwidth).groupby("run_id", observed=True).agg(
            read_bytes=("read_bytes", "sum"), written_bytes=("written_bytes", "sum"),
            simulated_s=("sim_seconds", "sum")).reset_index()
        total["gbps"] = (total["read_bytes"] + total["written_bytes"]) / total["simulated_s"] / 1e9
        section.tables.append(("memory traffic per run (every controller, GB/s over the "
                               "simulated time of the dumps)", total))
    queues = [q for q in queues if len(q)]
    if queues:
        table = pd.concat(queues, ignore_index=True)
        section.tables.append(("memory controllers over the detailed part (read_queue: "
                               "its mean length as reads found it; queue_ns: a read's mean "
                               "wait in it; access_ns: its mean time to data)",
                               table[["run_id", *memlat.QUEUE_COLUMNS]]))
    estimates = [e for e in estimates if len(e)]
    device = [d for d in device if len(d)]
    if estimates and device:
        section.tables.append(("memory latency per core: the hardware counters (c_cache + "
                               "their mean outstanding time past the caches) beside gem5's "
                               "own estimate at the core's last-level cache",
                               _counters_beside_gem5(pd.concat(estimates), pd.concat(device))))
    if estimates:
        est = pd.concat(estimates).groupby(["run_id", "cache", "cluster", "cpu"],
                                           observed=True).agg(
            c_cache_cycles=("c_cache_cycles", "first"), frequency_ghz=("frequency_hz", "first"),
            misses=("misses", "sum"), latency_ns=("latency_ns", "mean")).reset_index()
        est["frequency_ghz"] = est["frequency_ghz"] / 1e9
        section.tables.append(("estimated memory latency per last-level cache and core "
                               "(runtime estimate from outstanding-miss cycles, Shen and "
                               "Li, MEMSYS 2020; each cache on its cluster's clock)", est))
    return section


def _counters_beside_gem5(estimates: pd.DataFrame, device: pd.DataFrame) -> pd.DataFrame:
    """Per run and CPU over the whole run: the counters' estimate (the cache lookups of
    gem5's estimate plus the counters' mean time past the caches) and gem5's estimate."""
    keys = ["run_id", "cpu"]
    gem5 = _per_miss(estimates.dropna(subset=["cpu"]), "latency_ns", "gem5_misses",
                     "gem5_estimate_ns")
    clocks = estimates.dropna(subset=["cpu"]).groupby(keys, observed=True).agg(
        c_cache_cycles=("c_cache_cycles", "first"), frequency_hz=("frequency_hz", "first"))
    gem5 = gem5.merge(clocks.reset_index(), on=keys)
    gem5["c_cache_ns"] = gem5["c_cache_cycles"] / gem5["frequency_hz"] * 1e9
    hw = _per_miss(device, "memory_ns", "counter_misses", "past_caches_ns")
    table = gem5.merge(hw, on=keys, how="inner")
    table = table[(table["counter_misses"] > 0) & (table["gem5_misses"] > 0)]
    table["counters_estimate_ns"] = table["c_cache_ns"] + table["past_caches_ns"]
    table["difference"] = table["counters_estimate_ns"] / table["gem5_estimate_ns"] - 1
    return table[["run_id", "cpu", "counter_misses", "gem5_misses", "c_cache_ns",
                  "past_caches_ns", "counters_estimate_ns", "gem5_estimate_ns", "difference"]]


def _per_miss(frame: pd.DataFrame, latency: str, misses: str, mean: str) -> pd.DataFrame:
    """Per run and CPU: the misses (as ``misses``) and their ``latency`` averaged over
    them (as ``mean``)."""
    weighted = frame.assign(w=frame[latency].fillna(0) * frame["misses"]).groupby(
        ["run_id", "cpu"], observed=True).agg(n=("misses", "sum"), w=("w", "sum"))
    return pd.DataFrame({misses: weighted["n"], mean: weighted["w"] / weighted["n"]}
                        ).reset_index()


def _display(table: pd.DataFrame) -> pd.DataFrame:
    """A table as a person reads it: times in ms, no empty columns, loads in order.
    (The CSV beside it keeps nanoseconds and every column.)"""
    shown = table.dropna(axis=1, how="all").copy()
    for column in [c for c in shown.columns if shown[c].map(_is_nested).any()]:
        divisor = 1e6 if str(column).endswith("_ns") else 1.0
        shown[column] = [_compact(value, divisor) for value in shown[column]]
        if str(column).endswith("_ns"):
            shown = shown.rename(columns={column: str(column).removesuffix("_ns") + "_ms"})
    if "apps" in shown.columns and "mix" in shown.columns:
        shown = shown.drop(columns="apps")  # the mix names them already
    for column in [c for c in shown.columns if str(c).endswith("_ns")]:
        # Request latencies read best in ms, memory latencies in ns.
        if pd.api.types.is_numeric_dtype(shown[column]) and shown[column].abs().median() > 1e5:
            shown[str(column).removesuffix("_ns") + "_ms"] = shown.pop(column) / 1e6
    keys = [c for c in ("app", "mix", "system", "arch", "placement", "manager", "rps")
            if c in shown.columns and shown[c].map(lambda v: not isinstance(v, dict | list)).all()]
    if keys:
        shown = shown.sort_values(keys, kind="stable", na_position="first")
    return shown


def _is_nested(value: Any) -> bool:
    return isinstance(value, dict | list | tuple)


def _compact(value: Any, divisor: float) -> Any:
    """A per-app dict or a list as one short cell: "kvstore 4000, imgdnn 600"."""
    if isinstance(value, dict):
        return ", ".join(f"{key} {_number(item, divisor)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    return _number(value, divisor)


def _number(value: Any, divisor: float) -> Any:
    return _format_number(value / divisor) if isinstance(value, int | float) else value


def _format_number(value: float) -> str:
    """Four significant digits, but whole numbers in full (10000, not 1e+04)."""
    if float(value).is_integer() and abs(value) < 1e12:
        return f"{int(value)}"
    return f"{value:.4g}"


def _save(figure: Any, out: Path, name: str) -> str:
    stem = out / "figures" / _slug(name)
    figures.save_figure(figure, stem)
    return f"figures/{stem.name}"


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_").lower()


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.8em; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { background: #f3f3f3; } figure { margin: 1em 0; } img { max-width: 100%; }
figcaption { font-size: 0.85em; color: #555; } .caption { font-weight: 600; margin-top: 1em; }
.wide { overflow-x: auto; }
"""


def _html(campaign: Campaign, sections: list[Section]) -> str:
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>pimcloud report: {html.escape(campaign.root.name)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>pimcloud report: {html.escape(str(campaign.root))}</h1>",
        "<ul>" + "".join(f"<li><a href='#{_slug(s.title)}'>{html.escape(s.title)}</a></li>"
                         for s in sections) + "</ul>",
    ]
    for section in sections:
        parts.append(f"<h2 id='{_slug(section.title)}'>{html.escape(section.title)}</h2>")
        if section.text:
            parts.append(section.text if section.text.startswith("<") else
                         f"<p>{html.escape(section.text)}</p>")
        for caption, stem in section.figures:
            parts.append(
                f"<figure><img src='{stem}.png' alt='{html.escape(caption)}'>"
                f"<figcaption>{html.escape(caption)} (<a href='{stem}.svg'>SVG</a>)"
                "</figcaption></figure>"
            )
        for name, table in section.tables:
            parts.append(f"<div class='caption'>{html.escape(name)} "
                         f"(<a href='tables/{_slug(name)}.csv'>CSV</a>)</div>")
            shown = _display(table).to_html(index=False, float_format=_format_number,
                                            na_rep="", border=0)
            parts.append(f"<div class='wide'>{shown}</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
