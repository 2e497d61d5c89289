"""``pimcloud campaign plan|run|status|resume|collect|maxload``.

    pimcloud campaign plan SPEC                  the runs and their estimated host time
    pimcloud campaign run SPEC [--out DIR] [--executor local|slurm] [--jobs N]
    pimcloud campaign status DIR [--watch]       done / running / failed / ETA
    pimcloud campaign resume DIR [--retry-failed]   go on after a stop, redoing nothing
    pimcloud campaign collect DIR                runs.csv, failures.csv
    pimcloud campaign maxload SPEC --app APP [--start RPS] [--seeds N]   knee under QoS by bisection
    pimcloud quickstart                          kernel, image, checkpoint, a small campaign
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .campaign import Campaign, open_campaign, prepare_campaign


def _add_execution(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--executor", choices=("local", "slurm"),
                        help="default: the spec's [executor] kind (local)")
    parser.add_argument("--jobs", type=int, default=0,
                        help="runs at once (local; default: from cores and memory)")
    parser.add_argument("--no-wait", action="store_true",
                        help="Slurm: submit and return (follow with 'campaign status')")
    parser.add_argument("--plain", action="store_true",
                        help="plain progress lines even in a terminal")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("campaign", help="checkpoint-and-sweep campaigns",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="campaign_command", metavar="ACTION", required=True)

    plan = commands.add_parser("plan", help="list the runs and estimate their host time")
    plan.add_argument("spec", help="spec file, or a name in runs/campaigns/")
    plan.add_argument("--backend", choices=("auto", "gem5", "qemu"),
                      help="default: the spec's (auto: gem5 when $GEM5 is set)")
    plan.add_argument("--jobs", type=int, default=0, help="parallel jobs to assume")
    plan.set_defaults(handler=_plan)

    run = commands.add_parser("run", help="make every run of a spec (resumable)")
    run.add_argument("spec", help="spec file, or a name in runs/campaigns/")
    run.add_argument("--out", type=Path, help="campaign folder (default runs/out/<name>)")
    run.add_argument("--backend", choices=("auto", "gem5", "qemu"))
    run.add_argument("--checkpoints", type=Path,
                     help="checkpoint store (default $PIMCLOUD_CHECKPOINTS or "
                          "runs/out/checkpoints)")
    run.add_argument("--checkpoint-from", type=Path, metavar="BOOT_DIR",
                     help="a `pimcloud gem5 boot` folder made from the same inputs: the "
                          "runs restore it instead of booting again")
    _add_execution(run)
    run.set_defaults(handler=_run)

    status = commands.add_parser("status", help="done, running, failed, ETA")
    status.add_argument("campaign", type=Path)
    status.add_argument("--watch", action="store_true",
                        help="keep the display up until nothing is pending or running")
    status.add_argument("--plain", action="store_true")
    status.set_defaults(handler=_status)

    resume = commands.add_parser("resume", help="go on with a stopped campaign")
    resume.add_argument("campaign", type=Path)
    resume.add_argument("--retry-failed", action="store_true",
                        help="give runs that used up their retries a new set of attempts")
    _add_execution(resume)
    resume.set_defaults(handler=_resume)

    collect = commands.add_parser("collect", help="runs.csv, failures.csv, and the report")
    collect.add_argument("campaign", type=Path)
    collect.set_defaults(handler=_collect)

    maxload = commands.add_parser("maxload", help="an app's max load under QoS, by bisection")
    maxload.add_argument("spec", help="spec file (the scenario template gives manager, "
                         "placement, seed; [apps.APP] gives qos)")
    maxload.add_argument("--app", required=True)
    maxload.add_argument("--start", type=float, help="first RPS to try (default max_rps)")
    maxload.add_argument("--tolerance", type=float, default=0.05,
                         help="stop when the knee is known within this fraction")
    maxload.add_argument("--seeds", type=int, default=1,
                         help="run the two loads that end the search at this many seeds "
                         "each; a load meets QoS when most of its runs do (default 1)")
    maxload.add_argument("--first-step", type=float,
                         help="when --start is a good guess: step from it by this fraction, "
                         "tripling with each further step (default: double or halve)")
    maxload.add_argument("--out", type=Path)
    maxload.add_argument("--backend", choices=("auto", "gem5", "qemu"))
    _add_execution(maxload)
    maxload.set_defaults(handler=_maxload)



def _live(args: argparse.Namespace) -> bool | None:
    return False if getattr(args, "plain", False) else None


def execute(campaign: Campaign, executor: str | None = None, jobs: int = 0, wait: bool = True,
            live: bool | None = None) -> int:
    """Make the campaign's pending runs with the chosen executor; 0 when all are done."""
    from .executors import run_local, run_slurm
    from .status import campaign_status, summary_line

    kind = executor or campaign.spec.executor.kind
    campaign.check_inputs()  # before any worker starts: the same guest for every run
    print(f"campaign {campaign.spec.name}: {campaign.dir.root} (backend "
          f"{campaign.backend_name}, executor {kind})", flush=True)
    if kind == "slurm":
        run_slurm(campaign, wait=wait, live=live)
        if not wait:
            return 0
    else:
        run_local(campaign, jobs=jobs, live=live)
    status = campaign_status(campaign)
    print(summary_line(status))
    for run in status.runs:
        if run.state == "failed":
            print(f"  failed: {run.run_id} ({run.cause}); logs in "
                  f"{campaign.dir.failed_dir(run.run_id)}")
    return 0 if status.counts["done"] == len(status.runs) else 1


def _execute(campaign: Campaign, args: argparse.Namespace) -> int:
    return execute(campaign, args.executor, args.jobs, not args.no_wait, _live(args))


def _plan(args: argparse.Namespace) -> int:
    import os

    from .plan import format_plan, make_plan, plan_jobs
    from .spec import load_spec

    spec = load_spec(args.spec)
    backend = args.backend or spec.backend
    if backend == "auto":
        backend = "gem5" if os.environ.get("GEM5") else "qemu"
    have: tuple[set[str], set[str]] = (set(), set())
    if backend == "gem5":
        from .plan import stored_checkpoints

        have = stored_checkpoints(spec)
    print(format_plan(make_plan(spec, backend, plan_jobs(spec, args.jobs), *have)))
    return 0


def _run(args: argparse.Namespace) -> int:
    campaign = prepare_campaign(args.spec, args.out, args.backend, args.checkpoints)
    if args.checkpoint_from is not None:
        problem = adopt_checkpoint(campaign, args.checkpoint_from)
        if problem:
            print(f"pimcloud campaign run: {problem}")
            return 2
    return _execute(campaign, args)


def adopt_checkpoint(campaign: Campaign, booted: Path) -> str | None:
    """Seed the campaign's checkpoint store from a `pimcloud gem5 boot` folder; the
    problem in words if that cannot be done."""
    from pimcloud.gem5_session import read_boot
    from pimcloud.topology import load_topology

    if campaign.backend_name != "gem5":
        return "--checkpoint-from needs the gem5 backend (set GEM5)"
    try:
        booted_model = repr(load_topology(read_boot(booted)["topology"]))
        topologies = sorted({run.topology for run in campaign.runs()})
        same = [t for t in topologies if repr(load_topology(t)) == booted_model]
        if not same:
            return (f"{booted} holds another system than this campaign's "
                    f"({', '.join(topologies)})")
        campaign.checkpoints().adopt(same[0], booted)
    except ValueError as error:
        return str(error)
    return None


def _resume(args: argparse.Namespace) -> int:
    from .collect import clear_abandoned_staging

    campaign = open_campaign(args.campaign)
    if args.retry_failed:
        campaign.grant_retries()
    clear_abandoned_staging(campaign)
    return _execute(campaign, args)


def _status(args: argparse.Namespace) -> int:
    from .status import campaign_status, plain_lines, rich_table, watch

    campaign = open_campaign(args.campaign, to_run=False)
    if args.watch:
        watch(campaign, lambda: campaign_status(campaign).finished, live=_live(args))
        return 0
    status = campaign_status(campaign)
    import sys

    if sys.stdout.isatty() and not args.plain:
        from rich.console import Console

        Console().print(rich_table(status, campaign.spec.name))
    else:
        print("\n".join(plain_lines(status)))
    return 0


def _collect(args: argparse.Namespace) -> int:
    from .collect import collect

    campaign = open_campaign(args.campaign, to_run=False)
    runs_csv, failures_csv = collect(campaign)
    print(f"runs: {runs_csv}\nfailures: {failures_csv}\n"
          f"the report: pimcloud analyze {campaign.dir.root} --report")
    return 0


def _maxload(args: argparse.Namespace) -> int:
    from .maxload import find_max_load

    campaign = prepare_campaign(args.spec, args.out, args.backend)

    def make_runs() -> None:
        _execute(campaign, args)

    result = find_max_load(campaign, args.app, make_runs, args.start, args.tolerance,
                           seeds=args.seeds, first_step=args.first_step)
    hi = f"{result.first_miss_rps:g}" if result.first_miss_rps is not None else "not reached"
    print(f"max load of {args.app} under p99 <= {result.qos_ns / 1e6:g} ms: "
          f"{result.max_load_rps:g} rps (first miss at {hi}; {len(result.probes)} runs at "
          f"{len(result.loads)} loads, "
          f"{result.reused} reused)")
    return 0


