"""The paper's figures as functions of metric frames (no file parsing here).

Each function takes the small frames of :mod:`.metrics` and returns a matplotlib
``Figure``; :func:`save_figure` writes it as PNG and SVG.  Figures are built on
``matplotlib.figure.Figure`` directly, so nothing depends on pyplot's global state
or a display.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import LinearSegmentedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..atomic import atomic_write_bytes
from .metrics import BE_QUOTA_LINE

FORMATS = ("png", "svg")
GREEN_RED = LinearSegmentedColormap.from_list("green_red", ["#1a9850", "#ffffbf", "#d73027"])


def save_figure(figure: Figure, stem: str | Path, dpi: int = 130) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg`` atomically; returns the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in FORMATS:
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, dpi=dpi, bbox_inches="tight")
        path = stem.with_suffix("." + fmt)
        atomic_write_bytes(path, buffer.getvalue())
        paths.append(path)
    return paths


def _grid(count: int, width: float = 3.6, height: float = 2.8, columns: int = 3
          ) -> tuple[Figure, np.ndarray]:
    cols = max(1, min(columns, count))
    rows = max(1, -(-count // cols))
    figure = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = figure.subplots(rows, cols, squeeze=False).ravel()
    for extra in axes[count:]:
        extra.set_visible(False)
    return figure, axes


def latency_vs_load(
    curves: pd.DataFrame,
    max_loads: pd.DataFrame | None = None,
    system: str = "system",
    colors: Mapping[str, str] | None = None,
    tail: str = "p99_ns",
) -> Figure:
    """Fig. 2: tail latency against load per app, one line per system (host, PIM...).

    ``curves``: app, ``system``, rps, ``tail``, qos_ns.  ``max_loads`` (app,
    ``system``, max_load) adds the vertical max-load lines.  QoS is the dashed line.
    """
    apps = sorted(curves["app"].unique())
    figure, axes = _grid(len(apps))
    for ax, app in zip(axes, apps, strict=False):
        data = curves[curves["app"] == app]
        for index, (name, line) in enumerate(data.groupby(system, sort=True)):
            line = line.sort_values("rps")
            color = (colors or {}).get(str(name), f"C{index}")
            ax.plot(line["rps"], line[tail] / 1e6, marker="o", ms=3, color=color,
                    label=str(name))
            if max_loads is not None:
                hit = max_loads[(max_loads["app"] == app) & (max_loads[system] == name)]
                for load in hit["max_load"]:
                    if load > 0:
                        ax.axvline(load, color=color, lw=0.8, ls=":")
        if "qos_ns" in data.columns and data["qos_ns"].notna().any():
            qos_ms = data["qos_ns"].dropna().iloc[0] / 1e6
            ax.axhline(qos_ms, color="k", ls="--", lw=0.8, label="QoS")
            # Past the knee latency explodes; keep the knee readable, as the paper does.
            ax.set_ylim(0, 4 * qos_ms)
        ax.set_title(app)
        ax.set_xlabel("load (RPS)")
        ax.set_ylabel(f"{tail.removesuffix('_ns')} latency (ms)")
        ax.legend(fontsize=7)
    return figure


def policy_order(policy: object) -> tuple[int, int, str]:
    """Fig. 3's order of bars: FT, CC, IL, each alone and then with migration or
    replication."""
    placement, _, dynamic = str(policy).partition("+")
    places, extras = ("ft", "cc", "il"), ("", "mig", "rep")
    return (places.index(placement) if placement in places else len(places),
            extras.index(dynamic) if dynamic in extras else len(extras), str(policy))


# A placement keeps its colour with and without a dynamic policy, which hatches its bar.
PLACEMENT_COLOURS = {"ft": "tab:blue", "cc": "tab:green", "il": "tab:purple"}
DYNAMIC_HATCHES = {"mig": "///", "rep": "xxx"}


def max_load_bars(frame: pd.DataFrame, group: str = "policy",
                  value: str = "normalized_max_load", ylabel: str | None = None,
                  title: str | None = None) -> Figure:
    """Fig. 3: max load per app under each placement policy (grouped bars), in the
    paper's order: FT, CC, IL, each alone and then with migration or replication (the
    same colour, hatched)."""
    table = frame.pivot_table(index="app", columns=group, values=value, observed=True)
    table = table[sorted(table.columns, key=policy_order)]
    figure = Figure(figsize=(max(5.0, 1.2 * len(table)), 3.0), layout="constrained")
    ax = figure.subplots()
    width = 0.8 / max(1, len(table.columns))
    x = np.arange(len(table))
    for i, column in enumerate(table.columns):
        placement, _, dynamic = str(column).partition("+")
        style: dict[str, Any] = {}
        if placement in PLACEMENT_COLOURS:
            style = {"color": PLACEMENT_COLOURS[placement], "edgecolor": "white",
                     "hatch": DYNAMIC_HATCHES.get(dynamic),
                     "alpha": 0.7 if dynamic else 1.0}
        ax.bar(x + i * width, table[column].to_numpy(), width, label=str(column), **style)
    ax.set_xticks(x + width * (len(table.columns) - 1) / 2, table.index.astype(str))
    ax.set_ylabel(ylabel or value.replace("_", " "))
    if title:
        figure.suptitle(title, fontsize=9)
    ax.axhline(1.0, color="k", lw=0.6)
    ax.legend(fontsize=7, ncols=min(4, len(table.columns)), loc="lower center",
              bbox_to_anchor=(0.5, 1.0), frameon=False)
    return figure


def memory_queue_bars(frame: pd.DataFrame, label: str = "policy") -> Figure:
    """Why Fig. 3's placements differ: per app (a column of panels) and placement
    (``label``), each memory's read bandwidth and a read's mean wait in its controller's
    queue (columns ``app``, ``label``, ``memory``, ``read_gbps``, ``queue_ns``; one row
    per app, label and memory)."""
    apps = sorted(frame["app"].astype(str).unique())
    figure = Figure(figsize=(max(4.0, 3.2 * len(apps)), 4.6), layout="constrained")
    axes = figure.subplots(2, len(apps), squeeze=False)
    memories = sorted(frame["memory"].astype(str).unique())
    width = 0.8 / max(1, len(memories))
    for column, app in enumerate(apps):
        mine = frame[frame["app"].astype(str) == app]
        labels = sorted(mine[label].astype(str).unique(), key=policy_order)
        x = np.arange(len(labels))
        for row, (value, title) in enumerate((("queue_ns", "read's wait in queue (ns)"),
                                              ("read_gbps", "reads (GB/s)"))):
            ax = axes[row][column]
            table = mine.pivot_table(index=label, columns="memory", values=value,
                                     observed=True, aggfunc="first").reindex(
                                         index=labels, columns=memories)
            for i, memory in enumerate(memories):
                ax.bar(x + i * width, table[memory].to_numpy(), width, label=memory,
                       color=f"C{i}")
            ax.set_xticks(x + width * (len(memories) - 1) / 2, labels, fontsize=8)
            ax.set_ylabel(title, fontsize=8)
            if row == 0:
                ax.set_title(app, fontsize=9)
    handles, names = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, names, fontsize=7, ncols=len(memories), loc="outside upper center",
                  frameon=False)
    return figure


def page_type_breakdown(frame: pd.DataFrame, label: str = "label") -> Figure:
    """Fig. 4: each run's memory accesses by page type, as stacked shares (columns
    ``label``, ``page_type``, ``share``), one bar per label in the frame's order."""
    table = frame.pivot_table(index=label, columns="page_type", values="share",
                              observed=True, aggfunc="sum").fillna(0)
    table = table.reindex(pd.unique(frame[label]))
    figure = Figure(figsize=(max(4.0, 0.9 * len(table) + 2), 3.0), layout="constrained")
    ax = figure.subplots()
    bottom = np.zeros(len(table))
    for i, column in enumerate(table.columns):
        values = table[column].to_numpy() * 100
        ax.bar(np.arange(len(table)), values, 0.7, bottom=bottom, label=str(column),
               color=f"C{i}")
        bottom += values
    ax.set_xticks(np.arange(len(table)), table.index.astype(str), rotation=20, ha="right",
                  fontsize=7)
    ax.set_ylabel("memory accesses (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7, ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.0),
              frameon=False)
    return figure


def colocation_curves(
    frame: pd.DataFrame, stacked: Sequence[str] = ("PIMCloud-preference", "PIMCloud-core",
                                                   "PIMCloud-memory"),
) -> Figure:
    """Fig. 7: max load of the second app (% of its max load) against the first's load.

    ``frame``: mix, manager, x_pct, y_pct.  Managers in ``stacked`` are drawn as bars,
    each stacked on the one before (their increments); the others as lines.
    """
    mixes = sorted(frame["mix"].unique())
    figure, axes = _grid(len(mixes))
    for ax, mix in zip(axes, mixes, strict=False):
        data = frame[frame["mix"] == mix]
        bottom: pd.Series | None = None
        width = 0.8 * float(np.min(np.diff(np.unique(data["x_pct"])), initial=10.0))
        for index, manager in enumerate(stacked):
            part = data[data["manager"] == manager].set_index("x_pct")["y_pct"].sort_index()
            if part.empty:
                continue
            base = bottom.reindex(part.index).fillna(0) if bottom is not None else part * 0
            height = (part - base).clip(lower=0)
            ax.bar(part.index, height, width, bottom=base, color=f"C{index + 4}",
                   label=manager, alpha=0.8)
            bottom = part if bottom is None else np.maximum(bottom.reindex(part.index).fillna(0),
                                                            part)
        for index, (manager, line) in enumerate(
            data[~data["manager"].isin(stacked)].groupby("manager", sort=True)
        ):
            line = line.sort_values("x_pct")
            ax.plot(line["x_pct"], line["y_pct"], marker="o", ms=3, color=f"C{index}",
                    label=str(manager))
        ax.set_title(str(mix))
        ax.set_xlabel("load of app 1 (% of max load)")
        ax.set_ylabel("max load of app 2 (%)")
        ax.legend(fontsize=6)
    return figure


def colocation_heatmap(frame: pd.DataFrame) -> Figure:
    """Fig. 8: the third app's max load (%) for each load of the first two, per manager.

    ``frame``: manager, x_pct, y_pct, z_pct (NaN where QoS cannot be met: a cross).
    """
    managers = sorted(frame["manager"].unique())
    figure, axes = _grid(len(managers), width=3.4, height=3.0)
    norm = Normalize(0, max(100.0, float(np.nanmax(frame["z_pct"].to_numpy(), initial=0))))
    image = None
    for ax, manager in zip(axes, managers, strict=False):
        table = frame[frame["manager"] == manager].pivot_table(
            index="y_pct", columns="x_pct", values="z_pct", dropna=False)
        values = table.to_numpy(dtype=float)
        image = ax.imshow(values, origin="lower", cmap="viridis", norm=norm, aspect="auto")
        for (row, col), z in np.ndenumerate(values):
            if np.isnan(z):
                ax.text(col, row, "x", ha="center", va="center", color="k", fontsize=8)
        ax.set_xticks(range(len(table.columns)), [f"{c:g}" for c in table.columns], fontsize=6)
        ax.set_yticks(range(len(table.index)), [f"{r:g}" for r in table.index], fontsize=6)
        ax.set_title(str(manager))
        ax.set_xlabel("app 1 load (%)")
        ax.set_ylabel("app 2 load (%)")
    if image is not None:
        figure.colorbar(image, ax=list(axes[: len(managers)]), label="app 3 max load (%)")
    return figure


def be_throughput(frame: pd.DataFrame, x: str = "x_pct", value: str = "throughput") -> Figure:
    """Fig. 9: best-effort throughput against the first LC app's load, per manager."""
    figure = Figure(figsize=(5.0, 3.0), layout="constrained")
    ax = figure.subplots()
    for index, (manager, line) in enumerate(frame.groupby("manager", sort=True)):
        line = line.sort_values(x)
        ax.plot(line[x], line[value], marker="o", ms=3, color=f"C{index}", label=str(manager))
    ax.set_xlabel("load of LC app 1 (% of max load)")
    ax.set_ylabel("BE throughput")
    ax.legend(fontsize=7)
    return figure


def policy_comparison(lc: pd.DataFrame, be: pd.DataFrame | None = None) -> Figure:
    """A policy against its baselines (the seed papers' figures): each LC app's p99 over
    its QoS per variant, and beside it each best-effort job's throughput per variant.

    ``lc``: label, app, tail (p99 / QoS, or p99 in ms where no QoS is known);
    ``be``: label, app (the job), throughput, optionally unit (the job's work unit) and
    qos_met (every LC app of that variant within its QoS: the throughput counts in the
    seed papers' figures only then; the others are drawn hatched)."""
    panels = 2 if be is not None and len(be) else 1
    figure = Figure(figsize=(3.6 * panels + 1.0, 3.2), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, panels))
    labels = list(dict.fromkeys(lc["label"].astype(str)))
    if be is not None:
        labels += [x for x in dict.fromkeys(be["label"].astype(str)) if x not in labels]
    where = {label: index for index, label in enumerate(labels)}

    def bars(ax: object, frame: pd.DataFrame, value: str) -> None:
        groups = sorted(frame["app"].astype(str).unique())
        width = 0.8 / max(len(groups), 1)
        handles = []
        any_missed = False
        for index, app in enumerate(groups):
            part = frame[frame["app"].astype(str) == app]
            xs = [where[str(x)] + (index - (len(groups) - 1) / 2) * width for x in part["label"]]
            missed = (~part["qos_met"].astype(bool)).tolist() if "qos_met" in part.columns \
                else [False] * len(part)
            any_missed = any_missed or any(missed)
            ax.bar(xs, part[value], width=width, color=f"C{index}",  # type: ignore[attr-defined]
                   hatch=["//" if m else "" for m in missed],
                   edgecolor=["k" if m else f"C{index}" for m in missed])
            handles.append(Patch(color=f"C{index}", label=app))
        if any_missed:
            handles.append(Patch(facecolor="white", edgecolor="k", hatch="//",
                                 label="LC QoS missed"))
        ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=7)  # type: ignore[attr-defined]
        ax.legend(handles=handles, fontsize=7)  # type: ignore[attr-defined]

    bars(axes[0], lc, "tail")
    qos = bool(lc.get("over_qos", pd.Series([False])).all())
    axes[0].set_ylabel("p99 / QoS" if qos else "p99 (ms)")
    if qos:
        axes[0].axhline(1.0, color="k", ls="--", lw=0.8)
    if panels == 2 and be is not None:
        bars(axes[1], be, "throughput")
        units = set(be["unit"].dropna().astype(str)) if "unit" in be.columns else set()
        axes[1].set_ylabel("best-effort throughput (" + (
            f"{units.pop()}/s" if len(units) == 1 else "units/s") + ")")
    return figure


def convergence_cdf(frame: pd.DataFrame, group: str = "group") -> Figure:
    """Fig. 10: CDF of convergence time, one curve per group (2-app, 3-app...)."""
    figure = Figure(figsize=(5.0, 3.0), layout="constrained")
    ax = figure.subplots()
    for index, (name, data) in enumerate(frame.groupby(group, sort=True)):
        times = np.sort(data["convergence_s"].to_numpy(dtype=float))
        ax.step(np.concatenate([[0.0], times]), np.linspace(0, 1, len(times) + 1),
                where="post", color=f"C{index}", label=str(name))
    ax.set_xlabel("convergence time (s)")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    return figure


def tails_over_time(windows: pd.DataFrame, qos_ns: Mapping[str, float],
                    tail: str = "p99_ns") -> Figure:
    """Each variant's LC tail over its QoS per monitoring window, overlaid (BALM's figure:
    how long a violation lasts under each policy). ``windows``: label, app, t_s, ``tail``;
    one panel per LC app."""
    apps = sorted(str(a) for a in windows["app"].unique() if qos_ns.get(str(a)))
    figure = Figure(figsize=(6.5, 2.6 * max(1, len(apps))), layout="constrained")
    axes = np.atleast_1d(figure.subplots(max(1, len(apps)), 1, sharex=True))
    for ax, app in zip(axes, apps, strict=False):
        mine = windows[windows["app"].astype(str) == app]
        for index, (label, runs) in enumerate(mine.groupby("label", sort=True)):
            # Runs of one variant (loads, seeds) share its colour, a line each.
            by_run = runs.groupby("run_id", sort=True) if "run_id" in runs else [("", runs)]
            for count, (_, data) in enumerate(by_run):
                data = data.sort_values("t_s")
                ax.plot(data["t_s"], data[tail] / qos_ns[app], marker="o", ms=3,
                        color=f"C{index}", label=str(label) if count == 0 else "_")
        ax.axhline(1.0, color="k", ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylabel(f"{app} p99 / QoS")
        ax.legend(fontsize=7)
    if not apps:
        axes[0].text(0.5, 0.5, "no LC app with a QoS", transform=axes[0].transAxes,
                     ha="center", va="center", fontsize=8, color="0.4")
    axes[-1].set_xlabel("time from the first arrival (s)")
    return figure


def timeline(windows: pd.DataFrame, cores: pd.DataFrame | None = None,
             qos_ns: Mapping[str, float] | None = None, tail: str = "p99_ns",
             events: pd.DataFrame | None = None) -> Figure:
    """Fig. 11: tail latency over QoS per monitoring window, and cores held, over time.

    ``windows``: app, t_s, ``tail`` (from :func:`metrics.windowed_percentiles`);
    ``cores``: app, t_s, cores (from :func:`metrics.core_timeline`);
    ``events``: t_s (or at_s), kind, target (the scenario's events, labelled lines).
    """
    figure = Figure(figsize=(7.0, 4.5), layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True)
    # One colour per app in both panels; events without an app (agent start) draw nothing.
    named = set(windows["app"].astype(str))
    if cores is not None:
        named |= set(cores["app"].astype(str))
    colour = {app: f"C{index}" for index, app in enumerate(sorted(named - {""}))}
    for app, data in windows.groupby("app", sort=True):
        if str(app) not in colour:
            continue
        scale = qos_ns.get(str(app)) if qos_ns else None
        y = data[tail] / scale if scale else data[tail] / 1e6
        # Markers too: a short run has one or two windows, which a bare line hides.
        top.plot(data["t_s"], y, color=colour[str(app)], label=str(app), marker="o", ms=3)
    top.set_ylabel("p99 / QoS" if qos_ns else "p99 (ms)")
    if qos_ns:
        top.axhline(1.0, color="k", ls="--", lw=0.8)
    top.legend(fontsize=7)
    drawn = False
    if cores is not None and len(cores):
        end = float(windows["t_s"].max()) if len(windows) else float(cores["t_s"].max())
        for app, data in cores.groupby("app", sort=True):
            if str(app) not in colour:
                continue
            data = data.sort_values("t_s")
            xs = np.concatenate([data["t_s"].to_numpy(), [max(end, data["t_s"].max())]])
            ys = np.concatenate([data["cores"].to_numpy(), [data["cores"].iloc[-1]]])
            bottom.step(xs, ys, where="post", color=colour[str(app)], label=str(app),
                        ls="--" if str(app) == BE_QUOTA_LINE else "-")
            drawn = True
    if drawn:
        bottom.legend(fontsize=7)
    else:
        bottom.text(0.5, 0.5, "no core allocations logged (the kernel's own scheduling)",
                    transform=bottom.transAxes, ha="center", va="center", fontsize=8,
                    color="0.4")
    bottom.set_ylabel("cores")
    bottom.yaxis.get_major_locator().set_params(integer=True)
    bottom.set_xlabel("time (s)")
    if events is not None:
        when = "t_s" if "t_s" in events.columns else "at_s"
        for _, event in events.iterrows():
            for ax in (top, bottom):
                ax.axvline(float(event[when]), color="0.3", ls=":", lw=1)
            top.annotate(f"{event['kind']} {event['target']}", (float(event[when]), 1.0),
                         xycoords=("data", "axes fraction"), rotation=90, va="top",
                         ha="right", fontsize=7, color="0.3")
    return figure


def table_iii_figure(table: pd.DataFrame) -> Figure:
    """Table III as a colour table: tail latency / QoS (green below 1, red above) and
    normalised max load (green above 1, red below), architectures as rows."""
    metrics_ = list(dict.fromkeys(table.columns.get_level_values(0)))
    figure = Figure(figsize=(2.0 + 1.1 * table.shape[1], 0.9 + 0.35 * len(table)),
                    layout="constrained")
    axes = figure.subplots(1, len(metrics_), squeeze=False).ravel()
    for ax, metric in zip(axes, metrics_, strict=True):
        part = table[metric]
        values = part.to_numpy(dtype=float)
        # Both metrics are good on one side of 1; colour by distance from 1 on a log scale.
        with np.errstate(divide="ignore", invalid="ignore"):
            badness = np.log2(values) if metric == "tail_over_qos" else -np.log2(values)
        ax.imshow(np.clip(badness, -1, 1), cmap=GREEN_RED, vmin=-1, vmax=1, aspect="auto")
        for (row, col), v in np.ndenumerate(values):
            ax.text(col, row, "-" if np.isnan(v) else f"{v:.2f}", ha="center", va="center",
                    fontsize=7)
        ax.set_xticks(range(part.shape[1]), [str(c) for c in part.columns], rotation=45,
                      fontsize=7, ha="right")
        ax.set_yticks(range(len(part)), [str(i) for i in part.index], fontsize=7)
        ax.set_title(metric.replace("_", " "), fontsize=8)
    return figure
