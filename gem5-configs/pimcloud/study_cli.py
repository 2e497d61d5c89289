"""``pimcloud study``: the characterisation study (runs/study.py) from plan to report.

    pimcloud study plan SPEC [--only arch1,arch8] [--jobs N]
    pimcloud study run SPEC [--out DIR] [--only ...] [--services ...] [--jobs N]
                            [--executor local|slurm]
    pimcloud study status DIR
    pimcloud study validate DIR --cell arch1/kvstore [--qos knee|study] [--tolerance 0.05]
                            [--seeds 3] [--jobs 3]
    pimcloud study report DIR [--reference [DIR]] [--qos knee|table2] [--screenshot]

The top of the layers: it composes campaigns (runs) and their analysis.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .runs.layout import DEFAULT_OUT
from .runs.study import Cell, StudySpec, each_cell, load_study, resolve_study_path

STUDY_RECORD = "study.json"


def _selected(study: StudySpec, only: str | None, services: str | None,
              cells: str | None = None) -> set[str]:
    """The chosen cells' names: presets x services, narrowed to ``cells`` when given."""
    presets = set(only.split(",")) if only else set(study.presets)
    names = set(services.split(",")) if services else set(study.services)
    for preset in presets - set(study.presets):
        raise ValueError(f"--only {preset}: not a preset of study {study.name} "
                         f"({', '.join(study.presets)})")
    for name in names - set(study.services):
        raise ValueError(f"--services {name}: not a service of study {study.name} "
                         f"({', '.join(study.services)})")
    chosen = {c.name for c in study.cells() if c.preset in presets and c.service in names}
    if cells is None:
        return chosen
    wanted = {name.strip() for name in cells.split(",") if name.strip()}
    for name in wanted - chosen:
        raise ValueError(f"--cells {name}: not a cell of study {study.name} among the "
                         f"chosen presets and services (`pimcloud study plan` lists them)")
    return wanted


def run_order(cells: list[Cell], jobs: int,
              seconds: dict[str, float] | None = None) -> list[Cell]:
    """Cells of ``jobs`` boots at a time, their cells in turn (p1-s1, p2-s1, p1-s2,
    ...): parallel jobs then boot and load different presets instead of waiting on one.
    A board with the page-access counters boots apart from its preset's other cells.
    With each cell's priced host ``seconds``, a boot's cells go longest first, as `study
    plan` packs them: a long cell left for last would run alone at the end."""
    def boot(cell: Cell) -> tuple[str, bool]:
        return cell.preset, cell.counters

    boots = list(dict.fromkeys(boot(c) for c in cells))
    ordered: list[Cell] = []
    for start in range(0, len(boots), max(1, jobs)):
        group = boots[start:start + max(1, jobs)]
        by_boot = [sorted((c for c in cells if boot(c) == b),
                          key=lambda c: -(seconds or {}).get(c.name, 0.0)) for b in group]
        for index in range(max(len(b) for b in by_boot)):
            ordered.extend(b[index] for b in by_boot if index < len(b))
    return ordered


def _study_root(study: StudySpec, out: Path | None) -> Path:
    root = (out or DEFAULT_OUT / study.name).resolve()
    root.mkdir(parents=True, exist_ok=True)
    record_path = root / STUDY_RECORD
    source = resolve_study_path(study.source)
    record = {"name": study.name, "spec_source": str(source.resolve()),
              "spec_text": source.read_text(encoding="utf-8")}
    from .atomic import atomic_write_text

    atomic_write_text(record_path, json.dumps(record, indent=1) + "\n")
    return root


def open_study(root: Path, *, to_run: bool = True) -> tuple[StudySpec, Path]:
    """The study a folder holds (its spec as it was when last run); ``to_run=False`` to
    read it (status, report): its kernel and image need not exist any more."""
    import tomllib

    from .runs.study import parse_study

    path = Path(root).resolve() / STUDY_RECORD
    if not path.is_file():
        raise ValueError(f"{root}: not a study folder (no {STUDY_RECORD}); run "
                         "`pimcloud study run SPEC --out DIR` first")
    record = json.loads(path.read_text())
    study = parse_study(tomllib.loads(record["spec_text"]), source=record["spec_source"],
                        inputs_must_exist=to_run)
    return study, path.parent


def _cell_states(folder: Path) -> list[Any]:
    """The runs' states (runs/status.py RunState) of a cell's campaign; none before it
    is prepared."""
    from .runs.campaign import open_campaign
    from .runs.status import campaign_status

    if not (folder / "campaign.json").is_file():
        return []
    return campaign_status(open_campaign(folder, to_run=False)).runs


def _runs_left(plan: Any, states: list[Any]) -> tuple[float, float]:
    """(host seconds its runs have left, the part of its runs made, by their prices) of a
    cell under way: a run done has nothing left; one resumed from progress checkpoints
    only the rest (RunState.left_s, as `campaign status` has it); one that used up its
    attempts, or not yet prepared, all of it (`study run --retry-failed` makes it again)."""
    now = time.time()
    by_id = {state.run_id: state for state in states}
    left = made = 0.0
    for run_id, seconds in plan.per_run.items():
        state = by_id.get(run_id)
        if state is None or state.state == "failed":
            left += seconds
            continue
        left += state.left_s(seconds, now)
        made += seconds * (1.0 if state.state == "done" else state.saved_fraction)
    return left, made / max(plan.runs_s, 1e-9)


def _priced_by(plan: Any, service: str, preset: str, cost: Any) -> str:
    """What a cell's run is priced by, for its plan line: the service's guest ops in the
    run (its requests' and its starting workers') at their weight on its preset where it
    has a line by ops, else its CPU a request."""
    from .runs.plan import describe_ops, ops_terms
    from .runs.speeds import op_weight, service_ops

    model = service_ops(plan.backend, service) if service in plan.ops_priced_apps else None
    if model is not None and plan.runs:
        run = plan.runs[0]
        app = next(app for app in run.apps if app.name == service)
        requests, workers = ops_terms(run, app, plan.spec.length.warmup_s
                                      + plan.spec.length.measured_s)
        weight = op_weight(plan.backend, service, preset)
        # speeds.toml's notes are long: its name will do
        origin = (model.source if model.source.startswith(("measured", "fitted"))
                  else "speeds.toml")
        described = describe_ops(model, origin, requests, workers)
        return (f"guest ops {described}"
                + (f", each {weight[0]:.3g}x the line's cost [{weight[1]}]"
                   if weight[0] != 1.0 else ""))
    return cost.describe() if cost else "the study estimate of service time"

def _plan(args: argparse.Namespace) -> int:
    from .runs.plan import boot_name, over_limit, plan_jobs
    from .runs.spec import load_spec
    from .runs.status import format_seconds
    from .runs.study_work import request_costs

    study = load_study(args.spec)
    chosen = _selected(study, args.only, args.services, args.cells)
    root = (args.out or DEFAULT_OUT / study.name).resolve()
    costs = request_costs(study, root)
    rate: tuple[float, str] | None = None
    # A board with the page-access counters (the migration cells) boots on its own.
    boots: dict[tuple[str, bool], float] = {}
    setups: list[float] = []
    runs: list[float] = []
    cells: list[float] = []  # each cell's app checkpoint and runs, one after the other
    lines = []
    jobs = 0
    done = 0
    for cell, spec_path, folder in each_cell(study, root):
        if cell.name not in chosen:
            continue
        states = _cell_states(folder)
        if states and all(state.state == "done" for state in states):
            done += 1
            lines.append(f"  {cell.name:<22} done")
            continue
        spec = load_spec(spec_path)
        jobs = plan_jobs(spec, args.jobs)
        cost = costs.get(cell.name)
        plan = cell_plan(spec, cell, jobs, cost)
        for topology, seconds in plan.boots.items():
            boots[(topology, spec.gem5.counters)] = seconds
        cell_setup = plan.setups_s
        startup = sum(plan.startups.values())
        rate = plan.startup_rate or rate
        left, made = _runs_left(plan, states)
        setups.append(cell_setup)
        runs.append(left)
        cells.append(cell_setup + left)
        lines.append(f"  {cell.name:<22} {cell.cores:>3} {cell.core_type:<6} workers, "
                     f"{cell.sample_rps:>9g} rps for {spec.length.measured_s:.3g} s simulated: "
                     f"app checkpoint {format_seconds(cell_setup)}"
                     + (f" ({format_seconds(startup)} of it the start-up)"
                        if startup else "") + ", run "
                     f"{format_seconds(plan.runs_s)} ("
                     f"{_priced_by(plan, cell.service, cell.preset, cost)})"
                     + (f"; {made:.0%} of it made (runs done, progress checkpoints), "
                        f"{format_seconds(left)} left"
                        if abs(left - plan.runs_s) >= 1 else ""))
        lines.extend(f"    warning: {note}" for note in over_limit(plan))
    total = sum(boots.values()) + sum(setups) + sum(runs)
    print(f"study {study.name} ({study.source}): {done + len(cells)} cells, {done} done "
          "(not counted below)")
    print("\n".join(lines))
    for (topology, counters), seconds in boots.items():
        print(f"  {boot_name(topology, counters)}: {format_seconds(seconds)}")
    if rate:
        print(f"  start-up at {rate[0]:,.0f} guest instructions a host CPU second "
              f"({rate[1]})")
    lanes = args.jobs or len(os.sched_getaffinity(0))  # as `study run` makes them
    print(f"total host time {format_seconds(total)}; with {lanes} cell(s) at a time at least "
          f"{format_seconds(study_wall_s(list(boots.values()), cells, lanes))} of wall time "
          "(boots first, then the cells, longest first: no cell is split)")
    return 0


def cell_plan(spec: Any, cell: Cell, jobs: int, cost: Any) -> Any:
    """One cell's plan as `study plan` prices it: its runs at the measured CPU a request
    (``cost``, runs/study_work.py) where there is one, its app checkpoint unless stored."""
    from .runs.plan import make_plan, stored_checkpoints

    have = stored_checkpoints(spec, log=lambda _: None) if os.environ.get("GEM5") else (
        set(), set())
    return make_plan(spec, spec.backend if spec.backend != "auto" else "gem5", jobs,
                     *have, {cell.service: cost.seconds} if cost else None)


def plan_seconds(plan: Any) -> float:
    """A cell plan's host seconds: its app checkpoint (unless stored) and its runs."""
    return plan.setups_s + plan.runs_s


def cell_price_per_run(spec: Any, cell: Cell, jobs: int, cost: Any) -> float:
    """A cell's host seconds a run as `study plan` prices it, over its runs."""
    plan = cell_plan(spec, cell, jobs, cost)
    return plan_seconds(plan) / max(len(plan.per_run), 1)


def study_wall_s(boots: list[float], cells: list[float], jobs: int) -> float:
    """Wall time of a study made ``jobs`` cells at a time: its boots side by side, then
    the cells, longest first onto the least loaded job (a cell is one job: its longest
    bounds the wall time however many jobs there are). A lower bound: `study run` also
    takes a boot's cells longest first, but a cell waits for its boot, and two cells
    of one app set for one app checkpoint."""
    from .runs.plan import packed_s

    return max(boots, default=0.0) + packed_s(cells, jobs)


def run_study(study: StudySpec, root: Path, chosen: set[str], jobs: int,
              executor: str, log: Any = print, retry_failed: bool = False) -> int:
    """Make every chosen cell's campaign, ``jobs`` cells at a time (local) or all at once
    (Slurm, not waiting); 0 when every cell finished. ``retry_failed`` gives runs that
    used up their attempts a fresh set (`campaign resume --retry-failed`)."""
    from .runs.campaign import prepare_campaign
    from .runs.cli import execute
    from .runs.spec import load_spec
    from .runs.study_work import request_costs
    from .workloads.services import gem5_caveat

    cells = []
    for cell, spec_path, folder in each_cell(study, root):
        if cell.name not in chosen:
            continue
        caveat = gem5_caveat(cell.service) if study.backend == "gem5" else ""
        if caveat:
            log(f"study: skipping {cell.name}: {caveat}")
            continue
        cells.append((cell, spec_path, folder))
    lock = threading.Lock()
    failed: list[str] = []
    costs = request_costs(study, root)

    plans: dict[str, Any] = {}
    for cell, spec_path, _ in cells:
        try:  # for the order and the ETA only: a cell that cannot be priced fails in one()
            plans[cell.name] = cell_plan(load_spec(spec_path), cell, 1, costs.get(cell.name))
        except Exception as error:  # said, and left to fail in its own run
            log(f"study: {cell.name}: not priced ({error})")

    def one(item: tuple[Cell, Path, Path]) -> None:
        cell, spec_path, folder = item
        campaign = prepare_campaign(spec_path, folder, study.backend, log=log)
        plan = plans.get(cell.name)
        if plan is not None:  # its progress lines' ETA as `study plan` prices it
            campaign.price_runs(plan_seconds(plan) / max(len(plan.per_run), 1))
        if retry_failed and campaign.grant_retries():
            log(f"study: {cell.name}: its failed runs get {campaign.spec.limits.retries + 1} "
                "more attempts")
        if executor == "slurm":
            execute(campaign, "slurm", wait=False, live=False)
            return
        status = execute(campaign, "local", jobs=1, live=False)
        if status:
            with lock:
                failed.append(cell.name)

    seconds = {name: plan_seconds(plan) for name, plan in plans.items()}
    order = {c.name: i for i, c in enumerate(run_order([c for c, _, _ in cells], jobs,
                                                       seconds))}
    cells.sort(key=lambda item: order[item[0].name])
    with ThreadPoolExecutor(max_workers=1 if executor == "slurm" else max(1, jobs)) as pool:
        list(pool.map(one, cells))
    if failed:
        log(f"study: cells not finished: {', '.join(failed)} (`pimcloud study run` again "
            "resumes them; add --retry-failed for runs that used up their attempts)")
    return 1 if failed else 0


def _run(args: argparse.Namespace) -> int:
    study = load_study(args.spec)
    chosen = _selected(study, args.only, args.services, args.cells)
    root = _study_root(study, args.out)
    jobs = args.jobs or len(os.sched_getaffinity(0))
    return run_study(study, root, chosen, jobs, args.executor,
                     retry_failed=args.retry_failed)


STATUS_NAMED = 8  # cells not started that `study status` names


def _status(args: argparse.Namespace) -> int:
    from .runs.campaign import open_campaign
    from .runs.status import campaign_status, summary_line
    from .runs.study_work import request_costs

    study, root = open_study(args.study, to_run=False)
    costs: dict[str, Any] | None = None
    waiting = []
    for cell, _, folder in each_cell(study, root):
        if not (folder / "campaign.json").is_file():
            waiting.append(cell.name)
            continue
        campaign = open_campaign(folder, to_run=False)
        status = campaign_status(campaign)
        if not status.finished:
            # The ETA as `study plan` prices the cell now (its measured CPU a request), not
            # the campaign's generic speed table, which knows nothing of the service.
            costs = request_costs(study, root) if costs is None else costs
            status = dataclasses.replace(status, estimate_per_run_s=cell_price_per_run(
                campaign.spec, cell, status.jobs, costs.get(cell.name)))
        print(f"{cell.name:<24} {summary_line(status)}")
    # A runner asked for a few cells leaves the spec's others unstarted: one line for them.
    if waiting:
        named = (", ".join(waiting) if len(waiting) <= STATUS_NAMED
                 else f"{', '.join(waiting[:STATUS_NAMED])}, ... (`pimcloud study plan` "
                 "lists them with their cost)")
        print(f"not started: {len(waiting)} cell(s): {named}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    """Direct max-load searches of the named cells (or the spec's ``validate`` list),
    each a campaign of its own (runs/study.py) starting from the model's prediction and
    stepping from it by ``--first-step``."""
    from .analysis.characterisation import predicted_max_load
    from .atomic import atomic_write_text
    from .runs.campaign import open_campaign, prepare_campaign
    from .runs.cli import execute
    from .runs.maxload import find_max_load
    from .runs.study import StudyDir, to_toml

    study, root = open_study(args.study)
    folder = StudyDir(root)
    names = args.cell or [f"{p}/{s}" for p, s in study.validate]
    for name in names:
        preset, _, service = name.partition("/")
        cell = study.cell(preset, service)
        search = folder.search_dir(cell)
        if (search / "campaign.json").is_file():
            # Resumed: the search keeps the QoS and window it began with, whatever the
            # model predicts now.
            campaign = open_campaign(search)
            start = float(campaign.spec.axes["rps"][0])
        else:
            qos_ns = _validation_qos_ns(study, folder, service, args.qos)
            start = predicted_max_load(folder.cell_dir(cell), cell, qos_ns)
            if start <= 0:
                print(f"study validate {cell.name}: the model predicts no load meets QoS "
                      f"{qos_ns / 1e6:g} ms (its tail at low load is over it); nothing to "
                      "search (`--qos study` searches the study's target)")
                continue
            spec_path = folder.search_spec_path(cell)
            spec_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(spec_path, f"# Written by `pimcloud study validate` from "
                              f"{study.source}.\n"
                              + to_toml(study.search_spec(cell, start, qos_ns)))
            campaign = prepare_campaign(spec_path, search, study.backend)
        qos_ns = campaign.spec.apps[service].qos_ns
        print(f"study validate {cell.name}: the model predicts {start:g} rps at QoS "
              f"{qos_ns / 1e6:g} ms; searching in {search} (measured "
              f"{campaign.spec.length.measured_s * 1e3:g} ms a run)")

        def make_runs(campaign: Any = campaign) -> None:
            execute(campaign, "local", jobs=args.jobs, live=False)

        result = find_max_load(campaign, service, make_runs, start, args.tolerance,
                               seeds=args.seeds,
                               first_step=args.first_step or args.tolerance)
        print(f"{cell.name}: measured max load {result.max_load_rps:g} rps "
              f"({len(result.probes)} runs at {len(result.loads)} loads)")
    return 0


def _validation_qos_ns(study: Any, folder: Any, service: str, how: str,
                       reference: Path | None = None, log: Any = print) -> float:
    """A new search's QoS: the knee of the service's arch1 curve (the report's default
    QoS), or the study's ``qos`` of the service. A study made in parts (one without a
    finished arch1 cell of the service) takes the knee its report will use: the
    reference's (``qos.csv``, analysis/README.md, "A study made in parts")."""
    from .analysis.characterisation import BASELINE, knee_qos_ns, read_cell
    from .analysis.reference import REFERENCE_DIR, read_reference

    if how == "study":
        return float(study.services[service].qos_ns)
    if BASELINE in study.presets:
        base = study.cell(BASELINE, service)
        if read_cell(folder.cell_dir(base), base) is not None:
            return knee_qos_ns(folder.cell_dir(base), base)
    reference = REFERENCE_DIR if reference is None else reference
    qos = read_reference("qos", reference)
    known = (qos[qos["app"] == service] if {"app", "knee_qos_ns"} <= set(qos.columns)
             else qos.iloc[0:0])
    if known.empty or not math.isfinite(float(known["knee_qos_ns"].iloc[0])):
        raise ValueError(f"--qos knee takes the knee of {service}'s {BASELINE} curve, and "
                         f"neither this study nor the reference ({reference}) has a finished "
                         f"{BASELINE} {service} cell: run `pimcloud study run --only "
                         f"{BASELINE} --services {service}` first, or give --qos study")
    knee_ns = float(known["knee_qos_ns"].iloc[0])
    log(f"study validate: this study has no finished {BASELINE} {service} cell; QoS is the "
        f"knee of the reference's ({reference / 'qos.csv'}): {knee_ns / 1e3:g} us")
    return knee_ns


BUNDLE_REFERENCE = object()  # `--reference` alone: the bundle's analysis/reference/


def _report(args: argparse.Namespace) -> int:
    from .analysis.characterisation import write_study_report

    study, root = open_study(args.study, to_run=False)
    from .analysis.reference import REFERENCE_DIR

    reference = None if args.reference is None else (
        REFERENCE_DIR if args.reference is BUNDLE_REFERENCE else Path(args.reference))
    if reference is not None and not reference.is_dir():
        print(f"pimcloud study report: --reference {reference}: no such folder; give an "
              "existing reference folder (an empty one starts a new reference)",
              file=sys.stderr)
        return 2
    services = None
    if args.services:
        services = {s.strip() for s in args.services.split(",") if s.strip()}
        unknown = sorted(services - set(study.services))
        if unknown:
            print(f"pimcloud study report: --services {unknown[0]}: not a service of study "
                  f"{study.name}; choose among {', '.join(study.services)}", file=sys.stderr)
            return 2
    notes: list[str] = []
    out = write_study_report(study, root, args.out, qos_how=args.qos,
                             screenshot=args.screenshot, reference=reference, notes=notes,
                             services=services)
    for note in notes:
        print(f"reference: {note}", file=sys.stderr)
    print(f"report: {out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    study = subparsers.add_parser(
        "study", help="the characterisation study: each service alone on each architecture",
        description="Section III of the paper as one campaign per (preset, service) cell; "
        "runs/studies/ holds the shipped specs.")
    actions = study.add_subparsers(dest="action", metavar="ACTION", required=True)

    def selection(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("spec", help="a study spec file, or a name in runs/studies/")
        parser.add_argument("--only", help="presets, comma-separated (default: all)")
        parser.add_argument("--services", help="services, comma-separated (default: all)")
        parser.add_argument("--cells", help="cells by name, comma-separated (e.g. "
                            "arch9-kvstore: first touch alone; default: every placement)")
        parser.add_argument("--out", type=Path, help="study folder (default runs/out/<name>)")
        parser.add_argument("--jobs", type=int, default=0,
                            help="cells made at once (default: the machine's cores)")

    plan = actions.add_parser("plan", help="cells, checkpoints and host time")
    selection(plan)
    plan.set_defaults(handler=_plan)
    run = actions.add_parser("run", help="make (or resume) the cells' campaigns")
    selection(run)
    run.add_argument("--executor", choices=("local", "slurm"), default="local")
    run.add_argument("--retry-failed", action="store_true",
                     help="give runs that used up their attempts a new set (a cell whose "
                          "set-up or run outlasts [limits] host_time resumes over attempts)")
    run.set_defaults(handler=_run)
    status = actions.add_parser("status", help="each cell's campaign: done / failed / left")
    status.add_argument("study", type=Path)
    status.set_defaults(handler=_status)
    validate = actions.add_parser("validate", help="measure cells' max load directly")
    validate.add_argument("study", type=Path)
    validate.add_argument("--cell", action="append", help="preset/service (repeatable)")
    validate.add_argument("--tolerance", type=float, default=0.1)
    validate.add_argument("--qos", choices=("knee", "study"), default="knee",
                          help="a new search's QoS: the knee of the service's arch1 curve "
                               "(the report's default) or the study's `qos` of the service "
                               "(Table II's target unless the study sets one); a resumed "
                               "search keeps its own")
    validate.add_argument("--first-step", type=float,
                          help="the first step from the prediction, a fraction of it; it "
                          "triples with each further step (default: the tolerance)")
    validate.add_argument("--seeds", type=int, default=1,
                          help="confirm the final bracket's loads at this many seeds each")
    validate.add_argument("--jobs", type=int, default=1,
                          help="runs at once: a confirmation's seeds side by side")
    validate.set_defaults(handler=_validate)
    report = actions.add_parser("report", help="Fig. 2, Table III and the claims")
    report.add_argument("study", type=Path)
    report.add_argument("--out", type=Path, help="default <study>/report")
    report.add_argument("--screenshot", action="store_true")
    report.add_argument("--qos", choices=("knee", "table2"), default="knee",
                        help="QoS per service: the knee of its arch1 curve, or Table II's")
    report.add_argument("--reference", nargs="?", const=BUNDLE_REFERENCE, metavar="DIR",
                        help="also write the tables and figures into the reference results "
                             "(analysis/reference/, or DIR), keeping its cells this study "
                             "did not make")
    report.add_argument("--services", help="only these services' cells, comma-separated "
                        "(into a reference: its cells of the others stay as they are)")
    report.set_defaults(handler=_report)
