"""``campaign plan``: the runs a spec makes and the host time they should take.

Estimates come from the speed tables (pimcloud.runs.speeds): per run
``overhead + host_per_sim(busy cores) x (warm-up + measured)``, plus, in gem5, one
checkpoint boot per topology and one app checkpoint per app set that the store does not
hold yet, spread over the parallel jobs (boots, then set-ups, then runs).  A run that
stops early (``[early_stop]``) costs less than planned: the plan assumes none does.
Speeds are measured in the simulator's CPU time (pimcloud.supervise), the host time a run
takes on a core of its own; jobs beyond the host's cores share them (local executor).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pimcloud.workloads.services import SERVICES

from .layout import default_checkpoint_root
from .spec import AppSpec, CampaignSpec, Run
from .speeds import ServiceOps, Speed, op_weight, service_ops, setup_instruction_rate, speed_of
from .status import format_seconds

BOOT_SIMULATED_S = 1.0  # a Linux boot to the checkpoint, simulated seconds (measured 0.97)
# An app set's set-up on the atomic cores, simulated seconds (measured 0.342 for the
# quickstart's kvstore with 20000 keys + imgdnn).
SETUP_SIMULATED_S = 0.35


def busy_cores(run: Run) -> int:
    """Cores a run keeps busy at most: its services' workers, plus every other core when
    best-effort jobs run (they take what the services leave)."""
    from pimcloud.topology import load_topology

    workers = sum(app.threads or run.scenario.threads for app in run.apps)
    if run.scenario.be:
        return sum(cluster.cores for cluster in load_topology(run.topology).clusters)
    return workers


def detailed_phase(run: Run, backend: str, restored: bool) -> str:
    """The speed table's phase of a run's detailed part: ``restore`` (from its app
    checkpoint) or ``run`` (set-up included); in gem5 ``restore-be``/``run-be`` when
    best-effort jobs stream on every free core, a regime of its own: on mini such a run
    cost 17,000 s of CPU per simulated s, the services alone on the same six cores
    3,000-5,700 (one line through both would fit neither)."""
    phase = "restore" if restored else "run"
    return f"{phase}-be" if backend == "gem5" and run.scenario.be else phase


def guest_work_estimate(run: Run, length_s: float,
                        per_request_s: Mapping[str, float] | None = None) -> float | None:
    """The services' CPU seconds in the guest a run should take: each app's requests times
    its CPU a request where ``per_request_s`` says it (measured, `study plan`), else its
    workers busy for its share of its max load (``rps / max_rps``; a study cell's
    ``max_rps`` is its estimated capacity, which a serial section may hold below its
    workers' and so price them busier than they are). None when an app has neither (the
    plan then prices the run by its simulated time)."""
    work = 0.0
    for app in run.apps:
        if per_request_s and app.name in per_request_s:
            work += run.scenario.rps_of(app) * length_s * per_request_s[app.name]
            continue
        if not app.max_rps:
            return None
        workers = app.threads or run.scenario.threads
        work += min(1.0, run.scenario.rps_of(app) / app.max_rps) * workers * length_s
    return work


def workers_starting(run: Run, app: AppSpec, requests: float) -> int:
    """The workers of ``app`` that serve their first request in the run: all of them, less
    one for each prewarm request served before the app checkpoint (the harness hands
    prewarm requests to whichever worker is free, so this is the fewest), and no more than
    its ``requests``."""
    return max(0, min((app.threads or run.scenario.threads) - app.prewarm,
                      math.floor(requests)))


def ops_terms(run: Run, app: AppSpec, length_s: float) -> tuple[float, int]:
    """(requests, workers starting) of ``app`` over ``length_s`` of a run: what its guest
    ops are reckoned from (speeds.ServiceOps.of)."""
    requests = run.scenario.rps_of(app) * length_s
    return requests, workers_starting(run, app, requests)


def describe_ops(model: ServiceOps, origin: str | None = None,
                 requests: float | None = None, workers: int = 0) -> str:
    """A service's guest ops for a plan's line: for a run, ``6.77 M x 400 requests + 56.6 M
    x 16 workers' starts = 3.61 G [origin]``; for the service, ``6.77 M a request + 56.6 M
    a worker's start [origin]`` (the start where it has one)."""
    origin = f"[{origin or model.source}]"
    if requests is None:
        start = f" + {model.per_worker / 1e6:.3g} M a worker's start" if model.per_worker else ""
        return f"{model.per_request / 1e6:.3g} M a request{start} {origin}"
    if not (model.per_worker and workers):
        return f"{model.per_request / 1e6:.3g} M a request {origin}"
    return (f"{model.per_request / 1e6:.3g} M x {requests:.0f} requests + "
            f"{model.per_worker / 1e6:.3g} M x {workers} workers' starts = "
            f"{model.of(requests, workers) / 1e9:.3g} G {origin}")


def guest_ops_estimate(run: Run, backend: str, length_s: float) -> float | None:
    """The micro-ops a run's services should take the guest's cores, each counted at its
    service's weight (speeds.op_weight: how dear its ops are against the line by ops):
    each app's requests times its ops a request and its starting workers times their
    start's (speeds.service_ops: the same on every preset) at its weight on the run's
    preset. None when an app has no figure (the plan then prices the run by its work)."""
    ops = 0.0
    for app in run.apps:
        model = service_ops(backend, app.name)
        if model is None:
            return None
        ops += (model.of(*ops_terms(run, app, length_s))
                * op_weight(backend, app.name, run.topology)[0])
    return ops


def run_estimate(run: Run, backend: str, length_s: float,
                 per_request_s: Mapping[str, float] | None = None
                 ) -> tuple[str, Speed, float]:
    """(speed key, its speed, host seconds) of one run's detailed part of ``length_s``."""
    from .guest_scenario import app_checkpointed

    phase = detailed_phase(run, backend, app_checkpointed(run, backend))
    speed = speed_of(backend, phase, run.topology)
    work = guest_work_estimate(run, length_s, per_request_s)
    ops = guest_ops_estimate(run, backend, length_s) if speed.per_op else None
    return (f"{backend}/{phase}/{Path(run.topology).stem}", speed,
            speed.host_seconds(length_s, busy_cores(run), work, ops))


def app_set_of(run: Run) -> str:
    """What an app checkpoint is made for (the same grouping as the store's key)."""
    from .guest_scenario import setup_script

    return f"{Path(run.topology).stem}:{setup_script(run)}"


def packed_s(durations: list[float], lanes: int) -> float:
    """Wall time of jobs run ``lanes`` at a time, longest first onto the least loaded
    lane (a job is never split)."""
    loads = [0.0] * max(1, lanes)
    for seconds in sorted(durations, reverse=True):
        loads[loads.index(min(loads))] += seconds
    return max(loads)


@dataclass(frozen=True)
class Plan:
    spec: CampaignSpec
    backend: str
    runs: list[Run]
    per_run: dict[str, float]  # run id -> estimated host seconds
    boots: dict[str, float]  # topology -> estimated host seconds (gem5, to be made)
    speeds: dict[str, Speed]  # what the estimates come from
    jobs: int
    setups: dict[str, tuple[str, int, float]] = field(default_factory=dict)
    # app set -> (its apps, runs using it, estimated host seconds) (gem5, to be made)
    # Host cores the jobs share (the local executor), 0 when each job has its own (Slurm):
    # the speeds are CPU time, so more jobs than cores stretch the wall time.
    cores: int = 0
    # app set -> the part of its seconds that is its workers' start-up (startup_seconds)
    startups: dict[str, float] = field(default_factory=dict)
    # guest instructions a host CPU second that prices those, and where it comes from
    startup_rate: tuple[float, str] | None = None
    # (app, topology) of the runs whose speed has a line by guest ops (the plan says their
    # figures)
    ops_priced: frozenset[tuple[str, str]] = frozenset()

    @property
    def ops_priced_apps(self) -> frozenset[str]:
        return frozenset(app for app, _ in self.ops_priced)

    @property
    def runs_s(self) -> float:
        """Its runs' host seconds, one after the other."""
        return sum(self.per_run.values())

    @property
    def setups_s(self) -> float:
        """Its app checkpoints' host seconds (those to be made)."""
        return sum(seconds for _, _, seconds in self.setups.values())

    @property
    def total_s(self) -> float:
        return self.runs_s + sum(self.boots.values()) + self.setups_s

    def _lanes(self, durations: list[float]) -> float:
        return packed_s(durations, min(self.jobs, self.cores) if self.cores else self.jobs)

    @property
    def wall_s(self) -> float:
        """Boots first (in parallel), then the app sets' set-ups, then the runs, ``jobs``
        at a time."""
        return (max(self.boots.values(), default=0.0)
                + self._lanes([seconds for _, _, seconds in self.setups.values()])
                + self._lanes(list(self.per_run.values())))


def make_plan(spec: CampaignSpec, backend: str, jobs: int,
              have_checkpoint: set[str] | None = None,
              have_app_sets: set[str] | None = None,
              per_request_s: Mapping[str, float] | None = None) -> Plan:
    """``have_checkpoint``: topologies whose boot checkpoint the store holds;
    ``have_app_sets``: app sets (``app_set_of``) whose app checkpoint it holds;
    ``per_request_s``: app -> its CPU a request in the guest, where measured."""
    from .guest_scenario import app_checkpointed

    runs = spec.runs()
    length = spec.length.warmup_s + spec.length.measured_s
    per_run: dict[str, float] = {}
    speeds: dict[str, Speed] = {}
    setups: dict[str, tuple[str, int, float]] = {}
    startups: dict[str, float] = {}
    rate: tuple[float, str] | None = None
    ops_priced: set[tuple[str, str]] = set()
    for run in runs:
        speed_key, speed, per_run[run.run_id] = run_estimate(run, backend, length,
                                                              per_request_s)
        speeds[speed_key] = speed
        if speed.per_op:
            ops_priced.update((app.name, run.topology) for app in run.apps)
        if app_checkpointed(run, backend):
            key = app_set_of(run)
            if have_app_sets and key in have_app_sets:
                continue
            apps, count, seconds = setups.get(key, ("+".join(run.scenario.apps), 0, 0.0))
            if not seconds:
                setup = speed_of("gem5", "setup", run.topology)
                speeds[f"gem5/setup/{Path(run.topology).stem}"] = setup
                seconds = setup.host_seconds(SETUP_SIMULATED_S)
                if any(SERVICES[app.name].startup_instructions for app in run.apps):
                    rate = rate or setup_instruction_rate(
                        default_checkpoint_root(), spec.gem5.binary or os.environ.get("GEM5"))
                    startups[key] = startup_seconds(run, rate[0])
                    seconds += startups[key]
            setups[key] = (apps, count + 1, seconds)
    boots: dict[str, float] = {}
    if backend == "gem5":
        for topology in sorted({run.topology for run in runs}):
            if have_checkpoint and topology in have_checkpoint:
                continue
            speed = speed_of("gem5", "boot", topology)
            speeds[f"gem5/boot/{Path(topology).stem}"] = speed
            boots[topology] = speed.host_seconds(BOOT_SIMULATED_S)
    cores = 0 if spec.executor.kind == "slurm" else len(os.sched_getaffinity(0))
    return Plan(spec, backend, runs, per_run, boots, speeds, jobs, setups, cores=cores,
                startups=startups, startup_rate=rate, ops_priced=frozenset(ops_priced))


def boot_name(topology: str, counters: bool) -> str:
    """How a plan names a topology's checkpoint boot; a board with the page-access
    counters is a boot of its own (runs/checkpoints.py keys it apart)."""
    return f"checkpoint boot of {Path(topology).stem}" + (
        " with the page-access counters" if counters else "")


def _setup_name(apps: str, key: str) -> str:
    """How a plan names the set-up of an app set (``app_set_of``'s key)."""
    return f"app checkpoint of {apps} on {key.split(':')[0]}"


def over_limit(plan: Plan) -> list[str]:
    """What the plan expects to outlast the spec's host-time limit (an app checkpoint's
    set-up or a run), and what then happens. Each attempt stops at the limit and counts as
    failed; with progress checkpoints (``[gem5] progress_every``, host time) the next
    attempt resumes from the last one it saved, so an attempt keeps the multiples of
    ``progress_every`` before the limit; without any, such a job can never finish. A
    set-up's attempts are those of the first run that needs it."""
    limit = plan.spec.limits.host_time_s
    every = plan.spec.gem5.progress_every_s if plan.backend == "gem5" else None
    allowed = plan.spec.limits.retries + 1
    jobs = [(_setup_name(apps, key), seconds) for key, (apps, _, seconds) in plan.setups.items()]
    jobs += list(plan.per_run.items())
    # what an attempt keeps: its progress checkpoints before the limit (one at the limit
    # races it)
    kept = every * (math.ceil(limit / every) - 1) if every else 0.0
    notes = []
    for what, seconds in jobs:
        if seconds <= limit:
            continue
        over = (f"{what}: {format_seconds(seconds)} is over the {format_seconds(limit)} "
                "host-time limit ([limits] host_time): ")
        if not kept:
            notes.append(over + "each attempt is stopped there and keeps nothing, so it "
                         "cannot finish: raise the limit, or set [gem5] progress_every "
                         "below it so that each attempt resumes")
            continue
        attempts = math.ceil(seconds / kept)
        note = over + (f"each attempt stops there and the next resumes from its last "
                       f"progress checkpoint: about {attempts} attempts")
        if attempts > allowed:
            note += (f", more than the {allowed} a run gets ([limits] retries + 1): raise "
                     f"retries to {attempts - 1} or the limit, or give it more with "
                     "`campaign resume DIR --retry-failed` (`study run --retry-failed`)")
        notes.append(note)
    return notes


def startup_seconds(run: Run, instructions_per_s: float) -> float:
    """Host CPU seconds a run's services' start-up adds to its set-up: the start-up
    instructions of each service and of its further workers (the service registry's,
    measured natively) at the atomic cores' rate."""
    return float(sum(
        SERVICES[app.name].startup_instructions_of(int(app.threads or run.scenario.threads),
                                                   app.options)
        for app in run.apps)) / instructions_per_s


def stored_checkpoints(spec: CampaignSpec, log: Callable[[str], None] = print
                       ) -> tuple[set[str], set[str]]:
    """(topologies, app sets) whose checkpoints the store already holds for this spec's
    gem5, kernel and image as they are now; empty sets when that cannot be told (no gem5,
    no built kernel or image: the plan then counts every checkpoint)."""
    from pimcloud.gem5_runner import Gem5Missing, inspect_gem5
    from pimcloud.guest.image import image_dir
    from pimcloud.guest.kernel import kernel_dir

    from .app_checkpoints import AppCheckpoints
    from .checkpoints import Checkpoints
    from .guest_scenario import app_checkpointed
    from .layout import default_checkpoint_root

    kernel = kernel_dir() / "vmlinux" if spec.kernel == "project" else Path(spec.kernel)
    image = (image_dir() / "pimcloud-root.ext4" if spec.image == "project"
             else Path(spec.image))
    if not (kernel.is_file() and image.is_file()):
        return set(), set()
    try:
        info = inspect_gem5(named=spec.gem5.binary)
    except Gem5Missing as error:
        log(f"(cannot tell which checkpoints exist: {error})")
        return set(), set()
    boots = Checkpoints(default_checkpoint_root(), info.path, info.version, spec, kernel,
                        image)
    apps = AppCheckpoints(boots)
    runs = spec.runs()
    topologies = {run.topology for run in runs
                  if boots.meta(boots.key(run.topology)) is not None}
    sets = {app_set_of(run) for run in runs if app_checkpointed(run, "gem5") and apps.has(run)}
    return topologies, sets


def _loads(run: Run) -> str:
    return ", ".join(f"{app.name} {run.scenario.rps_of(app):g}" for app in run.apps)


def format_plan(plan: Plan) -> str:
    spec = plan.spec
    rows = [("run", "topology", "rps", "manager", "placement", "seed", "host time")]
    for run in plan.runs:
        s = run.scenario
        rows.append((run.run_id, Path(run.topology).stem, _loads(run), s.manager,
                     s.placement, str(s.seed), format_seconds(plan.per_run[run.run_id])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"campaign {spec.name} ({spec.source}), spec hash {spec.spec_hash}",
             f"backend {plan.backend}; {len(plan.runs)} runs of "
             f"{spec.length.warmup_s:g} s warm-up + {spec.length.measured_s:g} s measured "
             "(simulated)" if plan.backend == "gem5" else
             f"backend {plan.backend} (functional: no timing); {len(plan.runs)} runs of "
             f"{spec.length.warmup_s:g} s warm-up + {spec.length.measured_s:g} s measured",
             ""]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths,
                                                                       strict=True)).rstrip())
    lines.append("")
    for topology, seconds in plan.boots.items():
        lines.append(f"{boot_name(topology, spec.gem5.counters)}: "
                     f"{format_seconds(seconds)} (once, shared by every run)")
    for key, (apps, count, seconds) in plan.setups.items():
        startup = (f", {format_seconds(plan.startups[key])} of it its workers' start-up"
                   if key in plan.startups else "")
        lines.append(f"{_setup_name(apps, key)}: "
                     f"{format_seconds(seconds)} (once, shared by its {count} "
                     f"run(s){startup})")
    if plan.startup_rate:
        lines.append(f"start-up at {plan.startup_rate[0]:,.0f} guest instructions a host CPU "
                     f"second ({plan.startup_rate[1]})")
    shared = (f" on {plan.cores} host core(s)" if plan.cores and plan.jobs > plan.cores
              else "")
    lines.append(f"total host time {format_seconds(plan.total_s)}; with {plan.jobs} "
                 f"parallel job(s){shared} about {format_seconds(plan.wall_s)} of wall time")
    lines.append(f"limits per run: {format_seconds(spec.limits.host_time_s)} host time, "
                 f"{spec.limits.memory_bytes / 2**30:g} GiB, {spec.limits.retries} "
                 "retries")
    lines.extend(f"warning: {note}" for note in over_limit(plan))
    lines.append("speeds used (host s = overhead + factor x simulated s, or + factor x "
                 "the services' CPU s or micro-ops in the guest):")
    for key, speed in plan.speeds.items():
        label = f"  {key}: "
        if speed.per_op:
            lines.append(f"{label}{speed.op_overhead_s:g} s + {speed.per_op * 1e6:.3g} x guest "
                         f"M ops [{speed.op_source}]; a run without ops a request:")
            label = " " * len(label)
        if speed.per_work:
            lines.append(f"{label}{speed.overhead_s:g} s + {speed.per_work:g} x guest CPU s "
                         f"[{speed.source}]")
            continue
        busy = (f" ({speed.per_busy_core:+.4g} x per busy core from "
                f"{speed.busy_reference:g})" if speed.per_busy_core else "")
        if speed.extra_sim_s:
            busy += f", each run {speed.extra_sim_s * 1e3:.0f} ms beyond its length"
        lines.append(f"{label}{speed.overhead_s:g} s + {speed.host_per_sim:g} x{busy}  "
                     f"[{speed.source}]")
    for name in sorted(plan.ops_priced_apps):
        model = service_ops(plan.backend, name)
        weights = {Path(topology).stem: op_weight(plan.backend, name, topology)
                   for app, topology in plan.ops_priced if app == name}
        dearer = "".join(f", each {weight[0]:.3g}x the line's cost"
                         + (f" on {preset}" if len(weights) > 1 else "") + f" [{weight[1]}]"
                         for preset, weight in sorted(weights.items())
                         if model and weight[0] != 1.0)
        lines.append(f"  guest ops of {name} (its runs on the lines by guest ops): "
                     + (f"{describe_ops(model)}{dearer}" if model
                        else "none measured, so those runs are priced by the other line"))
    return "\n".join(lines)


def plan_jobs(spec: CampaignSpec, jobs: int) -> int:
    """Parallel jobs the plan assumes: the given number, the spec's, else this machine's."""
    if jobs > 0:
        return jobs
    if spec.executor.jobs > 0:
        return spec.executor.jobs
    if spec.executor.kind == "slurm":
        return spec.executor.max_parallel or len(spec.runs())
    from .executors import memory_available

    cores = len(os.sched_getaffinity(0))
    memory = memory_available()
    return max(1, min(cores, math.floor(memory / spec.limits.memory_bytes) if memory else cores))
