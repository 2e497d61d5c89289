"""Adaptive max-load search: an app's max load under QoS (the knee) by bisection on RPS.

A probe is an ordinary run of the campaign (the app alone at some RPS, the rest of the
scenario as the spec's template says), so it is made, retried and resumed like any run,
and every finished run of the app alone with the same manager and placement at the
search's seeds - probes of earlier searches and sweep runs alike - counts as a known point
before anything new is run.  Probe loads are rounded to ``SIGNIFICANT`` digits so that
searches meet on the same points.  The search ends when the highest load meeting QoS and
the lowest missing it are within ``tolerance`` of each other.

Until a load has met QoS and one has missed it, the search steps away from its start: by
doubling (halving) by default, or, when the start is a good guess (a model's prediction,
``first_step``), by a step that starts at ``first_step`` of the load and triples with each
further move (1.1x, 1.3x, 1.9x, then 2x for 0.1), so that a prediction within 10 % is
bracketed by its second probe.

One run's verdict near the knee is noisy: a burst of a few dozen late requests (a guest
timer, a page move) decides a p99 over a few thousand.  With ``seeds`` > 1 (the template's
seed and the next ones) a load meets QoS when more than half of its runs meet it (a tie is
a miss).  New loads are run at the template's seed alone until the search ends; then the
highest load meeting QoS and every load above it up to the first miss that all seeds
agree on are run at every seed, in one batch (in parallel when the executor has the
jobs).  If that moves either end the bisection goes on, and once one seed has been
outvoted every new load is run at every seed.  ``confirmed`` in the result says whether
both ends have all their runs (an exhausted probe budget can leave them short).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pimcloud.atomic import atomic_write_text
from pimcloud.workloads.steady import SteadyState, steady_sojourn

from .campaign import Campaign, CampaignError
from .layout import RUN_RECORD

SIGNIFICANT = 3
MAX_PROBES = 30
MIN_FIRST_STEP = 10.0 ** (1 - SIGNIFICANT)  # a smaller step rounds back onto its load
# A probe should measure at least this many QoS targets: a load 10 % past capacity (a
# search's usual tolerance) then ends its window a whole QoS target behind; in a shorter
# window an overload can pass unseen.
SEARCH_WINDOW_QOS = 10


@dataclass
class MaxLoad:
    app: str
    qos_ns: float
    max_load_rps: float  # highest load seen meeting QoS (0: none did)
    first_miss_rps: float | None  # lowest load seen missing it
    # One per run: rps, seed, p99_ns (of its steady state), meets_qos (that run's
    # verdict), run_id, early_stop, requests, transient (requests cut), settled
    probes: list[dict[str, Any]] = field(default_factory=list)
    reused: int = 0  # known runs taken from finished runs
    seeds: int = 1  # runs per load at the ends of the final bracket
    confirmed: bool = True  # both ends have a run at every seed
    # One per load: rps, runs, runs_meeting, meets_qos (the majority verdict)
    loads: list[dict[str, Any]] = field(default_factory=list)


def round_rps(value: float) -> float:
    if value <= 0:
        return 0.0
    return float(f"{value:.{SIGNIFICANT}g}")


@lru_cache(maxsize=4096)
def steady_run(run_dir: Path, app: str) -> tuple[np.ndarray, SteadyState] | None:
    """The sojourn times of ``app``'s steady state in a finished run folder (lats.bin,
    its start-up transient cut: workloads/steady.py), and where that state starts. A
    finished run does not change: read once, though a search asks for every verdict again
    as its bracket moves."""
    from pimcloud.workloads.records import read_lats_bin

    for path in sorted(run_dir.rglob("lats.bin")):
        if path.parent.name == app:
            frame = read_lats_bin(path)
            if len(frame):
                return steady_sojourn(frame["sojourn_ns"].to_numpy())
    return None


def p99_ns(run_dir: Path, app: str) -> float | None:
    """The p99 sojourn time of ``app``'s steady state in a finished run folder."""
    found = steady_run(run_dir, app)
    return None if found is None else float(np.percentile(found[0], 99))


def early_stop_of(run_dir: Path, app: str) -> dict[str, Any] | None:
    """The harness's early-stop verdict of ``app`` in a run folder (summary.json), if
    the run asked for one."""
    found = summary_of(run_dir, app).get("early_stop")
    return found if isinstance(found, dict) else None


def summary_path_of(run_dir: Path, app: str) -> Path | None:
    """Where the harness's summary.json of ``app`` is in a run folder (None if nowhere)."""
    return next((path for path in sorted(run_dir.rglob("summary.json"))
                 if path.parent.name == app), None)


def summary_of(run_dir: Path, app: str) -> dict[str, Any]:
    """The harness's summary.json of ``app`` in a run folder ({} if none or unreadable)."""
    path = summary_path_of(run_dir, app)
    if path is None:
        return {}
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def meets_qos(run_dir: Path, app: str, p99: float, qos_ns: float) -> bool:
    """Whether the point meets QoS: its early-stop verdict when it stopped early (a
    certain miss is a miss whatever the p99 of the requests answered before), else its
    steady state's p99 against the target; a run that never settled (its transient
    outlasted half its window, or its backlog grew) has shown no load it meets."""
    verdict = (early_stop_of(run_dir, app) or {}).get("verdict")
    if verdict in ("miss", "meet"):
        return verdict == "meet"
    found = steady_run(run_dir, app)
    return p99 <= qos_ns and (found is None or found[1].settled)


def describe(run_dir: Path, app: str) -> str:
    stop = early_stop_of(run_dir, app) or {}
    if stop.get("verdict") == "miss":
        return f"missed QoS, stopped early after {stop.get('decided')} requests"
    if stop.get("verdict") == "meet":
        return f"met QoS, stopped early after {stop.get('decided')} requests"
    found = steady_run(run_dir, app)
    if found is None:
        return ""
    state = found[1]
    if not state.settled:
        return (f"never settled: its transient ran past the first half of its "
                f"{state.start + state.requests} requests (a backlog draining or growing)")
    return f"steady after {state.start} requests" if state.start else ""


def _steady_fields(run_dir: Path, app: str) -> dict[str, Any]:
    found = steady_run(run_dir, app)
    if found is None:
        return {}
    state = found[1]
    return {"requests": state.start + state.requests, "transient": state.start,
            "settled": state.settled}


# rps -> seed -> (p99, run id)
Known = dict[float, dict[int, tuple[float, str]]]


def known_points(campaign: Campaign, app: str, seeds: int = 1) -> Known:
    """Every finished run of ``app`` alone with the template's manager and placement, at
    the template's seed or one of the ``seeds - 1`` after it."""
    template = campaign.spec.scenario
    wanted = range(template.seed, template.seed + seeds)
    points: Known = {}
    for run_dir in sorted((campaign.dir.root / "runs").glob(f"*/{RUN_RECORD}")):
        record = json.loads(run_dir.read_text())
        if record.get("app") != app or any(record.get(k) != getattr(template, k)
                                           for k in ("manager", "placement")):
            continue
        if record.get("be") or record.get("seed") not in wanted:
            continue
        p99 = p99_ns(run_dir.parent, app)
        if p99 is not None and isinstance(record.get("rps"), int | float):
            points.setdefault(float(record["rps"]), {})[int(record["seed"])] = (
                p99, record["run_id"])
    return points


def find_max_load(campaign: Campaign, app: str, make_runs: Callable[[], object],
                  start_rps: float | None = None, tolerance: float = 0.05,
                  log: Callable[[str], None] = print, seeds: int = 1,
                  first_step: float | None = None) -> MaxLoad:
    """Bisect on RPS until the knee is within ``tolerance``; ``make_runs`` makes every
    pending run of the campaign (an executor).  ``seeds`` > 1 confirms the final
    bracket with that many seeds a load; ``first_step`` steps from a good start by
    a widening fraction instead of a factor of 2 (module docstring)."""
    spec = campaign.spec
    app_spec = spec.apps.get(app)
    if app_spec is None or app_spec.qos_ns is None:
        raise CampaignError(f"{spec.source}: max-load search of {app} needs its QoS: add "
                            f'[apps.{app}] qos = "10ms"')
    if seeds < 1:
        raise CampaignError(f"max-load search of {app}: seeds is {seeds}; give 1 (each load "
                            "once) or more (the final bracket's loads at that many seeds)")
    if first_step is not None and not MIN_FIRST_STEP <= first_step < 1:
        raise CampaignError(f"max-load search of {app}: first step {first_step:g}; give a "
                            f"fraction of the start load from {MIN_FIRST_STEP:g} (loads are "
                            f"rounded to {SIGNIFICANT} digits) to below 1 (0.1: 10 %)")
    qos = app_spec.qos_ns
    window_s = spec.length.measured_s
    if window_s < SEARCH_WINDOW_QOS * qos * 1e-9:
        log(f"maxload {app}: warning: a probe measures {window_s * 1e3:g} ms, under "
            f"{SEARCH_WINDOW_QOS} QoS targets ({SEARCH_WINDOW_QOS * qos / 1e6:g} ms): a load "
            "just past capacity may pass unseen; lengthen [length] measured")
    start = round_rps(start_rps or (app_spec.max_rps or 0.0))
    if start <= 0:
        raise CampaignError(f"max-load search of {app}: give --start RPS (or [apps.{app}] "
                            "max_rps) as a first guess")
    first_seed = spec.scenario.seed
    result = MaxLoad(app, qos, 0.0, None, seeds=seeds)
    if any(not campaign.dir.is_done(run.run_id) for run in campaign.runs()):
        # The campaign's pending runs go first (every probe would make them anyway): a
        # template of the app alone at the start load is then the first probe, not made
        # twice, on a fresh search or a resumed one.
        make_runs()
    known = known_points(campaign, app, seeds)
    result.reused = sum(len(runs) for runs in known.values())
    if known:
        log(f"maxload {app}: {result.reused} finished run(s) reused")

    def run_meets(rps: float, seed: int) -> bool:
        p99, run_id = known[rps][seed]
        return meets_qos(campaign.dir.run_dir(run_id), app, p99, qos)

    def meets(rps: float) -> bool:
        verdicts = [run_meets(rps, seed) for seed in known[rps]]
        return 2 * sum(verdicts) > len(verdicts)

    def bounds() -> tuple[float, float | None]:
        lo = max((rps for rps in known if meets(rps)), default=0.0)
        misses = [rps for rps in known if not meets(rps) and rps > lo]
        return lo, min(misses, default=None)

    def run_all(wanted: list[tuple[float, int]]) -> None:
        """Make the runs of ``wanted`` (rps, seed) together, then read their p99s."""
        points = [{"apps": [app], "rps": rps} | ({} if seed == first_seed else
                                                  {"seed": seed}) for rps, seed in wanted]
        campaign.add_points(points)
        make_runs()
        known.update(known_points(campaign, app, seeds))  # whatever else was finished
        for (rps, seed), point in zip(wanted, points, strict=True):
            run = campaign.spec.run_at(point)
            if not campaign.dir.is_done(run.run_id):
                raise CampaignError(f"max-load probe {run.run_id} failed; see "
                                    f"{campaign.dir.failed_dir(run.run_id)}")
            p99 = p99_ns(campaign.dir.run_dir(run.run_id), app)
            if p99 is None:
                raise CampaignError(f"max-load probe {run.run_id} left no lats.bin for {app}")
            known.setdefault(rps, {})[seed] = (p99, run.run_id)
            how = describe(campaign.dir.run_dir(run.run_id), app)
            log(f"maxload {app}: {rps:g} rps" + (f" (seed {seed})" if seeds > 1 else "")
                + f" -> p99 {p99 / 1e6:.3f} ms "
                f"({'meets' if run_meets(rps, seed) else 'misses'} {qos / 1e6:g} ms)"
                + (f": {how}" if how else ""))

    all_seeds = range(first_seed, first_seed + seeds)
    outvoted = False  # a seed was outvoted: new loads are run at every seed

    last: tuple[float, bool] | None = None  # the last probe's load and verdict

    def probe(rps: float) -> None:
        nonlocal last
        rps = round_rps(rps)
        if rps not in known:
            run_all([(rps, seed) for seed in (all_seeds if outvoted else [first_seed])])
        last = (rps, meets(rps))

    def complete(rps: float) -> bool:
        return all(seed in known.get(rps, {}) for seed in all_seeds)

    def to_confirm(lo: float) -> list[float]:
        """``lo`` and every load above it up to the first miss all seeds agree on."""
        loads = [lo] if lo else []
        for rps in sorted(r for r in known if r > lo):
            loads.append(rps)
            if not meets(rps) and complete(rps):
                break
        return [rps for rps in loads if not complete(rps)]

    moves = 0  # steps made from the start: each widens the next (first_step)
    stepping = first_step is not None  # until a probe falls back to the bracket's middle

    def step() -> float:
        return 2.0 if first_step is None else min(2.0, 1 + first_step * 3 ** moves)

    def stepped(lo: float, hi: float) -> float | None:
        """While the search steps from its start: the next step from the last probe (an
        end of the bracket [lo, hi]) into the bracket, when it is nearer that probe than
        the middle is."""
        if not stepping or last is None:
            return None
        rps, met = last
        if met and rps == lo and lo * step() < (lo + hi) / 2:
            return lo * step()
        if not met and rps == hi and hi / step() > (lo + hi) / 2:
            return hi / step()
        return None

    probes_made = 0
    for _ in range(3 * MAX_PROBES):
        if probes_made >= MAX_PROBES:
            break
        lo, hi = bounds()
        moved = True  # the probe is a step away from the start
        if first_step is not None and start not in known and lo < start and (
                hi is None or start < hi):
            target, moved = start, False  # a good start is run wherever the bracket is
        elif hi is None:  # nothing missed QoS yet: go up
            target = round_rps(max(lo * step(), start))
            moved = target > start
        elif lo == 0.0 and min(known) >= hi:  # everything missed QoS: go down
            if hi / step() < 1e-3:
                break
            target = round_rps(hi / step())
        else:
            nearer = stepped(lo, hi)
            target = round_rps(nearer if nearer is not None else (lo + hi) / 2)
            if hi - lo <= tolerance * hi or target in known or target in (lo, hi):
                target = 0.0  # the bracket is narrow enough: confirm its ends
            elif nearer is None:
                moved = stepping = False
        if target in known:  # a step rounded onto a known load: widen it instead
            moves += 1
            continue
        if target:
            probe(target)
            probes_made += 1
            moves += 1 if moved else 0
            continue
        loads = to_confirm(lo)
        if not loads:
            break
        log(f"maxload {app}: confirming {', '.join(f'{r:g}' for r in loads)} rps with "
            f"{seeds} seeds each")
        single = {rps: meets(rps) for rps in loads}
        run_all([(rps, seed) for rps in loads for seed in all_seeds
                 if seed not in known.get(rps, {})])
        outvoted = outvoted or any(meets(rps) != verdict for rps, verdict in single.items())
    lo, hi = bounds()
    result.max_load_rps, result.first_miss_rps = lo, hi
    result.confirmed = all(complete(rps) for rps in (lo, hi) if rps)
    if not result.confirmed:
        log(f"maxload {app}: warning: the search ended (probe budget or no load left) "
            f"before its ends ({lo:g} and {hi if hi is None else f'{hi:g}'} rps) had runs at "
            f"all {seeds} seeds: not confirmed")
    result.probes = [{"rps": rps, "seed": seed, "p99_ns": p99,
                      "meets_qos": run_meets(rps, seed), "run_id": run_id,
                      "early_stop": early_stop_of(campaign.dir.run_dir(run_id), app),
                      **_steady_fields(campaign.dir.run_dir(run_id), app)}
                     for rps, runs in sorted(known.items())
                     for seed, (p99, run_id) in sorted(runs.items())]
    result.loads = [{"rps": rps, "runs": len(runs),
                     "runs_meeting": sum(run_meets(rps, seed) for seed in runs),
                     "meets_qos": meets(rps)} for rps, runs in sorted(known.items())]
    atomic_write_text(campaign.dir.root / f"maxload-{app}.json",
                      json.dumps(asdict(result), indent=1) + "\n")
    return result
