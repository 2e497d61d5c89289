"""Simulation speed per backend, phase and topology: what ``campaign plan`` estimates from.

A run costs ``overhead_s + host_per_sim * simulated seconds`` of host time.  Two tables:

- ``runs/speeds.toml`` (in git): starting figures, each saying where it comes from;
- ``runs/out/speeds.json`` (``$PIMCLOUD_SPEEDS``): measured, updated by the runner from
  every finished run (the last ``KEEP`` samples per key; a line fitted through them).

Measured figures win.  Keys are ``backend/phase/topology`` with phase ``boot`` (to the
checkpoint), ``setup`` (gem5: an app set's services loaded, to its app checkpoint),
``restore`` (gem5: an app checkpoint restored, the run's own part on the detailed cores)
or ``run`` (a whole run: restore, set-up, scenario), in gem5 ``restore-be``/``run-be`` for
runs with best-effort jobs (plan.detailed_phase); ``backend/phase/*`` is the fallback.

A detailed run's speed depends on how many cores are busy (an idle gem5 core costs little),
so samples carry the run's busy cores when known, and with three or more samples over
different counts the fit is ``overhead + simulated x (a + b x busy)``. A gem5 run restored
from its app checkpoint records its services' CPU time in the guest too (its *work*,
:func:`guest_work_seconds`): gem5's cost follows the instructions its detailed cores run,
and where such samples (or speeds.toml's ``per_work``) exist a run costs ``overhead +
per_work x work``. It records the micro-ops its cores ran as well (gem5's ``simOps``,
summed over the gem5 processes of a resumed run: runs/progress.py), and where those
exist a run costs ``op_overhead + per_op x ops``: a CPU second of the guest holds 0.6 G
ops of oltp (its workers wait on SQLite's writer) and 2.4 G of imgdnn, while gem5.opt's
host seconds a guest op were 2.4-3.9 us a thousand over all 14 runs of oltp, imgdnn and
search on arch2, 3, 5, 6 and 7. A request's ops are the same on every preset (the same
x86 code; oltp 1.24-1.31 M, imgdnn 1.71-1.72 M, search 0.83-0.84 M), so the runner keeps
them per service (``gem5/ops/SERVICE``, :func:`service_ops`) and a plan prices a run
its service has never run on. A worker's first requests can cost more than the rest (a
translate worker's forked Apertium pipeline: about 57 M ops, eight requests' worth, so
translate ran 7.4 M ops a request with 4 workers and 9.0 M with 16 over 402 requests):
a service's ops in a run are ``requests x per_request + workers x per_worker``, fitted
where its runs had different numbers of workers.
"""

from __future__ import annotations

import fcntl
import json
import os
import statistics
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from pimcloud.atomic import atomic_write_text

from .layout import DEFAULT_OUT

# The phase whose runs are priced by the guest's work: the services alone, restored from
# their app checkpoint (best-effort jobs' work is not in the services' figure; QEMU's time
# is the guest's, whatever its work).
WORK_PHASE = ("gem5", "restore")

DEFAULTS = Path(__file__).resolve().parent / "speeds.toml"
KEEP = 20


def measured_path() -> Path:
    configured = os.environ.get("PIMCLOUD_SPEEDS")
    return Path(configured) if configured else DEFAULT_OUT / "speeds.json"


@dataclass(frozen=True)
class Speed:
    overhead_s: float
    host_per_sim: float
    source: str  # "measured (N runs)" or the defaults file's note
    per_busy_core: float = 0.0  # host_per_sim grows by this per busy core (fitted)
    busy_reference: float = 0.0  # the busy cores host_per_sim is given at
    extra_sim_s: float = 0.0  # simulated seconds a run adds to its length (measured)
    # Host seconds per second of the services' CPU time in the guest (fitted): gem5's
    # cost follows the instructions the detailed cores run, not the simulated time.
    per_work: float = 0.0
    # Host seconds per micro-op the detailed cores run, over a line of its own from
    # op_overhead_s (fitted, or speeds.toml's); preferred to per_work where a run's ops
    # are known, and op_source says where it comes from.
    per_op: float = 0.0
    op_overhead_s: float = 0.0
    op_source: str = ""

    def host_seconds(self, simulated_s: float, busy: float | None = None,
                     work_s: float | None = None, ops: float | None = None) -> float:
        """Host seconds of ``simulated_s`` (a run's length: its measured extra is added),
        or, where the speed was fitted by guest work, of ``work_s`` CPU seconds of the
        services in the guest, or, where fitted by guest ops, of ``ops`` micro-ops."""
        if self.per_op and ops is not None:
            return self.op_overhead_s + self.per_op * ops
        if self.per_work and work_s is not None:
            return self.overhead_s + self.per_work * work_s
        simulated_s += self.extra_sim_s
        factor = self.host_per_sim
        if busy is not None and self.per_busy_core:
            factor = max(factor + self.per_busy_core * (busy - self.busy_reference),
                         0.1 * self.host_per_sim)
        return self.overhead_s + factor * simulated_s


def _defaults() -> dict[str, dict[str, object]]:
    with DEFAULTS.open("rb") as stream:
        raw = tomllib.load(stream)
    table: dict[str, dict[str, object]] = {}
    for backend, phases in raw.items():
        for phase, topologies in phases.items():
            for topology, entry in topologies.items():
                table[f"{backend}/{phase}/{topology}"] = entry
    return table


def _measured() -> dict[str, list[list[float]]]:
    try:
        data: dict[str, list[list[float]]] = json.loads(measured_path().read_text())
        return data
    except (OSError, ValueError):
        return {}


def fit(samples: list[list[float]], default_overhead: float) -> tuple[float, float]:
    """(overhead, host per simulated second) through samples of (simulated, host) seconds:
    least squares when the runs differ in length, else the defaults' overhead kept."""
    xs = [s for s, _ in samples]
    ys = [h for _, h in samples]
    n = len(samples)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    if n >= 2 and spread > 1e-12 * max(1.0, mean_x**2):
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
        overhead = mean_y - slope * mean_x
        if slope > 0 and overhead >= 0:
            return overhead, slope
    overhead = min(default_overhead, mean_y)
    return overhead, (mean_y - overhead) / mean_x if mean_x > 0 else 0.0


def fit_busy(samples: list[list[float]], overhead: float
             ) -> tuple[float, float, float, float] | None:
    """(overhead, host per simulated s at the mean busy count, per busy core, that mean)
    from samples (simulated, host, busy[, length]) over at least two busy counts: the
    cost per simulated second, ``(host - overhead) / simulated``, fitted as a line in the
    busy cores (weighted by simulated time) with the given fixed overhead (a restore and
    gem5's start; runs of one length cannot tell it from the per-second cost). None when
    the data cannot say."""
    import numpy as np

    rows = [s for s in samples if len(s) >= 3 and s[0] > 0]
    if len(rows) < 2 or len({s[2] for s in rows}) < 2:
        return None
    sim = np.array([s[0] for s in rows])
    rate = (np.array([s[1] for s in rows]) - overhead) / sim
    busy = np.array([s[2] for s in rows])
    design = np.column_stack([np.ones_like(busy), busy]) * np.sqrt(sim)[:, None]
    (base, per_core), *_ = np.linalg.lstsq(design, rate * np.sqrt(sim), rcond=None)
    mean_busy = float(np.average(busy, weights=sim))
    at_mean = base + per_core * mean_busy
    if at_mean <= 0:
        return None
    return overhead, float(at_mean), float(per_core), mean_busy


# Runs' guest work must span this factor before a line's intercept is fitted to them.
WORK_SPREAD = 2.0


def fit_work(samples: list[list[float]], default_overhead: float, field: int = 4
             ) -> tuple[float, float, int] | None:
    """(overhead, host seconds per guest CPU second, runs fitted) through samples
    (simulated, host, busy, length, work[, ops]) that record the services' CPU time in the
    guest (or, with ``field`` 5, host seconds per guest op through those that record their
    ops): least squares over runs of different work; where those cannot say (work too
    alike, or a negative overhead), the line through them with the defaults' overhead (or
    the cheapest run's, if less) kept. None without three such samples. Too alike is
    under a factor ``WORK_SPREAD`` between the least and the most: arch9's three imgdnn
    samples (0.34-0.45 guest s, their host time as noisy as that) put the intercept at
    3,190 s, and so priced a kvstore cell of 0.02 guest s at 54 minutes (it took 394 s)."""
    import numpy as np

    rows = [s for s in samples if len(s) > field and s[field] > 0]
    if len(rows) < 3:
        return None
    work = np.array([s[field] for s in rows])
    host = np.array([s[1] for s in rows])
    if work.max() >= WORK_SPREAD * work.min():
        slope, overhead = np.polyfit(work, host, 1)
        if slope > 0 and overhead >= 0:
            return float(overhead), float(slope), len(rows)
    overhead = min(default_overhead, float(host.min()))
    slope = float(np.sum((host - overhead) * work) / np.sum(work**2))
    return (overhead, slope, len(rows)) if slope > 0 else None


def extra_simulated(samples: list[list[float]]) -> float:
    """Simulated seconds a run takes beyond its warm-up and measured length (restore to
    start, the services' finishing, sending the results): the median over samples that
    record their length (the 4th field), else 0."""
    extra = sorted(s[0] - s[3] for s in samples if len(s) >= 4)
    return max(0.0, extra[len(extra) // 2]) if extra else 0.0


def speed_of(backend: str, phase: str, topology: str) -> Speed:
    """A (backend, phase, topology)'s speed: by simulated time or guest work (its
    measured runs, else speeds.toml), with, in the phase priced by work, a line by guest
    ops of its own (three measured runs with ops, else speeds.toml's ``per_op`` from
    ``op_overhead_s``)."""
    name = Path(topology).stem
    defaults = _defaults()
    default = (defaults.get(f"{backend}/{phase}/{name}")
               or defaults.get(f"{backend}/{phase}/*")
               or {"overhead_s": 0.0, "host_per_sim": 1.0, "note": "no figure: guessed 1:1"})
    samples = _measured().get(f"{backend}/{phase}/{name}")
    speed = _speed_by_time_or_work(backend, phase, default, samples)
    if (backend, phase) != WORK_PHASE:
        return speed
    op_overhead = float(default.get("op_overhead_s", 0.0))  # type: ignore[arg-type]
    by_ops = fit_work(samples, op_overhead, field=5) if samples else None
    if by_ops is not None:
        return replace(speed, op_overhead_s=by_ops[0], per_op=by_ops[1],
                       op_source=f"measured ({by_ops[2]} runs, by guest ops)")
    default_per_op = float(default.get("per_op", 0.0))  # type: ignore[arg-type]
    if default_per_op:
        return replace(speed, op_overhead_s=op_overhead, per_op=default_per_op,
                       op_source=str(default.get("op_note", "default")))
    return speed


def _speed_by_time_or_work(backend: str, phase: str, default: dict[str, object],
                           samples: list[list[float]] | None) -> Speed:
    """speed_of's line by simulated time or, in the phase priced so, by guest work."""
    base_overhead = float(default.get("overhead_s", 0.0))  # type: ignore[arg-type]
    default_per_work = float(default.get("per_work", 0.0))  # type: ignore[arg-type]
    if samples:
        extra = extra_simulated(samples)
        by_work = fit_work(samples, base_overhead) if (backend, phase) == WORK_PHASE \
            else None
        if by_work is not None:
            _, slope = fit([s[:2] for s in samples], base_overhead)
            return Speed(by_work[0], slope, f"measured ({by_work[2]} runs, by guest work)",
                         extra_sim_s=extra, per_work=by_work[1])
        if default_per_work:  # runs recorded before the guest's work: the defaults' line
            return Speed(base_overhead, float(default["host_per_sim"]),  # type: ignore[arg-type]
                         str(default.get("note", "default")), per_work=default_per_work)
        busy = fit_busy(samples, base_overhead)
        if busy is not None:
            return Speed(busy[0], busy[1], f"measured ({len(samples)} runs, by busy cores)",
                         busy[2], busy[3], extra)
        overhead, slope = fit([s[:2] for s in samples], base_overhead)
        return Speed(overhead, slope, f"measured ({len(samples)} runs)", extra_sim_s=extra)
    return Speed(base_overhead, float(default["host_per_sim"]),  # type: ignore[arg-type]
                 str(default.get("note", "default")),
                 extra_sim_s=float(default.get("extra_sim_s", 0.0)),  # type: ignore[arg-type]
                 per_work=default_per_work)


def record_speed(backend: str, phase: str, topology: str, simulated_s: float,
                 host_s: float, busy: float | None = None, length_s: float | None = None,
                 work_s: float | None = None, ops: float | None = None) -> None:
    """Add one finished run's figures (under a lock: many workers finish at once);
    ``work_s``: the services' CPU seconds in the guest (guest_work_seconds); ``ops``: the
    micro-ops its cores ran (the backend's ``guest_ops``: gem5's simOps, atomic cores'
    included), stored after the work (0 if unknown)."""
    if simulated_s <= 0 or host_s <= 0:
        return
    sample = [round(simulated_s, 6), round(host_s, 3)]
    if busy is not None:
        sample.append(round(busy, 2))
        if length_s is not None:
            sample.append(round(length_s, 6))
            if work_s is not None or ops is not None:
                sample.append(round(work_s or 0.0, 6))
            if ops is not None:
                sample.append(float(ops))
    _append_sample(f"{backend}/{phase}/{Path(topology).stem}", sample)


def record_run_speed(backend: str, phase: str, topology: str, simulated_s: float,
                     host_s: float, busy: float, length_s: float, run_dir: Path,
                     alone: str | None, ops: float | None, processes: int = 1) -> None:
    """Record a finished run: its speed sample, with, in the phase priced by guest work,
    its services' work read from ``run_dir`` and the micro-ops its cores ran (``ops``: the
    backend's ``guest_ops``, over every gem5 process of a resumed run; None: unknown),
    counted at its services' weights (the line by ops is one of ops at weight 1, so a
    dear service's runs do not tilt it for the others); and where ``alone`` names the one
    service it ran (no manager beside it), its ops a request (they price its runs on
    presets where it has not run) and its weight against the line before it. A resumed
    run's every gem5 ``process`` paid gem5's start and restore (the line's intercept):
    its weight is of what is left after them all, and its sample is of one process."""
    work = None
    if (backend, phase) == WORK_PHASE:
        work = guest_work_seconds(run_dir)
    else:
        ops = None
    # Its weight against the line by ops as it stood before it (a run that cost little
    # beyond the line's intercept says little of its ops' cost); then its sample, at the
    # weights that include its own.
    line = speed_of(backend, phase, topology)
    start = line.op_overhead_s if line.per_op else line.overhead_s  # gem5's, a process
    if (ops and alone and line.per_op > 0 and host_s >= 2 * start * processes):
        record_op_weight(backend, alone, (host_s - start * processes) / (line.per_op * ops),
                         topology)
    requests = requests_generated(run_dir) if ops else {}
    workers = workers_started(run_dir, requests) if ops else {}
    if ops and alone and requests.get(alone):
        record_service_ops(backend, alone, ops, requests[alone], workers.get(alone, 0))
    # The lines are of runs made in one gem5 process: a resumed run's later starts are
    # taken off its sample.
    record_speed(backend, phase, topology, simulated_s,
                 max(0.0, host_s - start * (processes - 1)), busy, length_s, work,
                 weighted_ops(backend, ops, requests, topology, workers) if ops else None)


def weighted_ops(backend: str, ops: float, requests: dict[str, int],
                 topology: str | None = None, workers: dict[str, int] | None = None
                 ) -> float:
    """A run's ``ops`` counted at its services' weights on ``topology`` (op_weight): one
    service's at its weight; several services' split by their ops in the run (requests and
    ``workers`` started: service_ops), or left as they are where one has no figure."""
    if len(requests) == 1:
        return ops * op_weight(backend, next(iter(requests)), topology)[0]
    shares: dict[str, float] = {}
    for service, count in requests.items():
        model = service_ops(backend, service)
        if model is None or count <= 0:
            return ops
        shares[service] = model.of(count, (workers or {}).get(service, 0))
    total = sum(shares.values())
    if total <= 0:
        return ops
    return ops * sum(share * op_weight(backend, service, topology)[0]
                     for service, share in shares.items()) / total


def _append_sample(key: str, sample: list[float]) -> None:
    """Keep ``sample`` (the last ``KEEP`` of its key) in the measured table, under a lock:
    many workers finish at once."""
    path = measured_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f".{path.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _measured()
        samples = data.setdefault(key, [])
        samples.append(sample)
        data[key] = samples[-KEEP:]
        atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


@dataclass(frozen=True)
class ServiceOps:
    """The micro-ops a service takes the guest's cores in a run: ``per_request`` for each
    request it serves and ``per_worker`` once for each worker that starts serving in the
    run (its first requests' extra work), with where the figures come from."""

    per_request: float
    per_worker: float
    source: str

    def of(self, requests: float, workers: int) -> float:
        return requests * self.per_request + workers * self.per_worker


def record_service_ops(backend: str, service: str, ops: float, requests: int,
                       workers: int = 0) -> None:
    """Add one run's micro-ops of ``service`` (a run of that service alone): ``ops`` over
    ``requests``, with ``workers`` started in the run (:func:`workers_started`). A sample
    is ``[ops a request, requests, workers]``; older samples hold the first alone."""
    if ops > 0 and requests > 0:
        _append_sample(f"{backend}/ops/{service}",
                       [float(ops) / requests, int(requests), int(workers)])


def fit_service_ops(samples: list[list[float]]) -> tuple[float, float, int] | None:
    """(per_request, per_worker, samples fitted) by least squares through ``ops = requests
    x per_request + workers x per_worker`` over the samples ``[ops a request, requests,
    workers]`` (older ones, a request's figure alone, are left out); None without three
    over two worker counts, where workers go with requests (no telling the two apart), or
    where the fit is not positive."""
    full = [s for s in samples if len(s) >= 3 and s[1] > 0]
    if len(full) < 3 or len({s[2] for s in full}) < 2:
        return None
    rr = sum(s[1] * s[1] for s in full)
    rw = sum(s[1] * s[2] for s in full)
    ww = sum(s[2] * s[2] for s in full)
    ro = sum(s[1] * s[0] * s[1] for s in full)
    wo = sum(s[2] * s[0] * s[1] for s in full)
    det = rr * ww - rw * rw
    if det <= 1e-9 * rr * ww:
        return None
    per_request, per_worker = (ww * ro - rw * wo) / det, (rr * wo - rw * ro) / det
    if per_request <= 0 or per_worker < 0:
        return None
    return per_request, per_worker, len(full)


def service_ops(backend: str, service: str) -> ServiceOps | None:
    """A service's micro-ops in a run: fitted over its runs measured here where they had
    different numbers of workers (:func:`fit_service_ops`); else the median over those runs
    of their ops a request, less speeds.toml's ``per_worker`` for each worker they
    started; else speeds.toml's ``[BACKEND.ops.SERVICE]`` (``per_request``, ``per_worker``,
    0 where not given); None when neither has a figure."""
    default = _defaults().get(f"{backend}/ops/{service}") or {}
    per_worker = float(default.get("per_worker", 0.0))  # type: ignore[arg-type]
    samples = [s for s in _measured().get(f"{backend}/ops/{service}", []) if s]
    if samples:
        fitted = fit_service_ops(samples)
        if fitted:
            return ServiceOps(fitted[0], fitted[1], f"fitted over {fitted[2]} runs")
        source = f"measured ({len(samples)} runs)"
        # A start taken off each run's figure, where every run says its workers and
        # leaves a positive figure; else the figures as they are (their starts inside).
        values = [s[0] - per_worker * s[2] / s[1] for s in samples if len(s) >= 3 and s[1] > 0]
        if per_worker and len(values) == len(samples) and min(values) > 0:
            return ServiceOps(statistics.median(values), per_worker, source)
        return ServiceOps(statistics.median(s[0] for s in samples), 0.0, source)
    if float(default.get("per_request", 0.0)) > 0:  # type: ignore[arg-type]
        return ServiceOps(float(default["per_request"]), per_worker,  # type: ignore[arg-type]
                          str(default.get("note", "default")))
    return None


def ops_per_request(backend: str, service: str) -> tuple[float, str] | None:
    """Micro-ops a request of ``service`` takes the guest's cores beyond its workers'
    start (:func:`service_ops`), and where the figure comes from."""
    model = service_ops(backend, service)
    return (model.per_request, model.source) if model else None


def record_op_weight(backend: str, service: str, value: float,
                     topology: str | None = None) -> None:
    """Add one run's weight of the ops of ``service`` (a run of that service alone) on
    ``topology`` (its preset's name keys the sample; None: unknown)."""
    if value > 0:
        key = f"{backend}/opweight/{service}"
        _append_sample(f"{key}/{Path(topology).stem}" if topology else key,
                       [round(value, 4)])


def _weights_by_preset(backend: str, service: str
                       ) -> dict[str | None, tuple[list[float], str]]:
    """A service's weights by the preset they were measured on (None: not said; samples
    of a topology file are keyed by its file's stem, as speeds are), each with its
    origin: ``measured`` here, else ``speeds.toml``'s ``weights`` (by preset) and
    ``weight`` (the service's). A preset's measured runs replace speeds.toml's figure."""
    found: dict[str | None, tuple[list[float], str]] = {}
    default = _defaults().get(f"{backend}/ops/{service}") or {}
    for preset, value in dict(default.get("weights", {})).items():  # type: ignore[call-overload]
        found[str(preset)] = ([float(value)], "speeds.toml")
    if float(default.get("weight", 0.0)) > 0:  # type: ignore[arg-type]
        found[None] = ([float(default["weight"])], "speeds.toml")  # type: ignore[arg-type]
    key = f"{backend}/opweight/{service}"
    for name, samples in _measured().items():
        if name != key and not name.startswith(f"{key}/"):
            continue
        values = [s[0] for s in samples if s]
        if values:
            found[name.removeprefix(key).removeprefix("/") or None] = (values, "measured")
    return found


def op_weight(backend: str, service: str, topology: str | None = None
              ) -> tuple[float, str]:
    """How dear a micro-op of ``service`` is to simulate against the line by ops (1: as the
    line says), and where the figure comes from (``measured (2 runs) on arch2``,
    ``speeds.toml on arch1, arch2, ...``). Each figure is ``(host - op_overhead x
    processes) / (per_op x ops)`` of a run of the service alone against the line before
    it. The median over the figures of ``topology``'s preset, else over every preset's,
    else 1. gem5's host time an op differs by preset: translate's cost 0.58x the line of
    oltp, imgdnn and search on arch1, 0.81-1.04x on arch3, 5, 6, 7, 8 and 9 and 1.29-1.57x
    on arch2 and 4, and neither the cache hierarchy nor the memory sorts them (deep arch5
    and arch1 are 0.97 and 0.58), so a preset without a figure of its own takes the median
    of them all."""
    found = _weights_by_preset(backend, service)
    if not found:
        return 1.0, "the line's"
    preset = Path(topology).stem if topology else None
    chosen = {preset: found[preset]} if preset and preset in found else found
    values = [value for entry, _ in chosen.values() for value in entry]
    runs = sum(len(entry) for entry, origin in chosen.values() if origin == "measured")
    origins = ([f"measured ({runs} runs)"] if runs else []) + sorted(
        {origin for _, origin in chosen.values() if origin != "measured"})
    named = sorted(name for name in chosen if name)
    return (statistics.median(values),
            " and ".join(origins) + (f" on {', '.join(named)}" if named else ""))


def requests_generated(run_dir: Path) -> dict[str, int]:
    """Each service's requests served in a run (warm-up and measured: the harness
    summaries' ``generated``, less those an early stop discarded unserved), by the folder
    its summary sits in."""
    found: dict[str, int] = {}
    for path in sorted(run_dir.rglob("summary.json")):
        try:
            summary = json.loads(path.read_text())
            discarded = int((summary.get("early_stop") or {}).get("discarded", 0))
            found[path.parent.name] = int(summary.get("generated", summary["requests"])) \
                - discarded
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return found


def workers_started(run_dir: Path, requests: dict[str, int] | None = None
                    ) -> dict[str, int]:
    """Each service's workers that served their first request in a run, by the folder its
    summary sits in: the harness summary's ``threads``, less one for each of its
    ``prewarm`` requests served before the app checkpoint (the fewest: a free worker takes
    each), and no more than its ``requests`` in the run where given; 0 where the summary
    does not say."""
    found: dict[str, int] = {}
    for path in sorted(run_dir.rglob("summary.json")):
        try:
            summary = json.loads(path.read_text())
            started = int(summary.get("threads", 0)) - int(summary.get("prewarm", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            continue
        name = path.parent.name
        if requests is not None and name in requests:
            started = min(started, requests[name])
        found[name] = max(0, started)
    return found


def guest_work_seconds(run_dir: Path) -> float | None:
    """The services' CPU time in the guest over a run's warm-up and measured requests:
    each harness summary's measured CPU (:func:`measured_cpu_ns`), scaled from its
    measured requests to all it generated. None when no summary says (QEMU runs,
    harnesses before the figure)."""
    total, seen = 0.0, False
    for path in sorted(run_dir.rglob("summary.json")):
        try:
            summary = json.loads(path.read_text())
            requests = int(summary["requests"])
            generated = int(summary.get("generated", requests))
            cpu = measured_cpu_ns(path, summary)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if requests > 0:
            total += cpu * generated / requests / 1e9
            seen = True
    return total if seen else None


def measured_cpu_ns(summary_path: Path, summary: dict[str, object]) -> float:
    """One service's CPU over its measured region: the harness process's (summary.json
    ``measured_cpu_ns``), or its measured requests' time on a worker (requests.csv beside
    it) where that is more. translate's engine runs in Apertium pipelines, processes of
    their own whose CPU the harness's process clock does not see (natively 0.28 ms a
    request of the 2-3 ms its workers wait on them); a worker is held for the whole of
    each request, so its time on the worker counts the pipeline's work. KeyError when the
    summary has no figure."""
    cpu = float(summary["measured_cpu_ns"])  # type: ignore[arg-type]
    return max(cpu, _time_on_workers_ns(summary_path.parent / "requests.csv"))


def _time_on_workers_ns(table: Path) -> float:
    """The sum of requests.csv's ``service_ns`` (0 without the table or the column)."""
    import csv

    try:
        with table.open(newline="", encoding="utf-8") as handle:
            return float(sum(int(row["service_ns"]) for row in csv.DictReader(handle)))
    except (OSError, KeyError, ValueError, TypeError):
        return 0.0


# Guest instructions gem5.opt's atomic cores run a host CPU second in a set-up, where the
# store has none made with the plan's gem5: translate's own on arch1 ran 389,000 in its
# first two segments; eight others here (kvstore, oltp, imgdnn on arch1, 4, 5, 8 and 9)
# 380,000-478,000, median 418,000. gem5.fast: 583,000 (one, on mini).
SETUP_INSTRUCTIONS_PER_CPU_S = 390e3


def setup_instruction_rate(checkpoint_root: Path, gem5: str | None = None
                           ) -> tuple[float, str]:
    """Guest instructions a host CPU second on a set-up's atomic cores and where the figure
    comes from: the median over the store's app checkpoints made by a gem5 of the same
    name as ``gem5`` (gem5.opt, gem5.fast; any when None), each its gem5's ``simInsts``
    over the CPU seconds of the process that counted them; else the default."""
    wanted = Path(gem5).name if gem5 else None
    rates = []
    for meta_path in sorted((checkpoint_root / "apps").glob("*/meta.json")):
        try:
            meta = json.loads(meta_path.read_text())
            if wanted and Path(meta["command"][0]).name != wanted:
                continue
            # A resumed set-up's CPU seconds include its earlier attempts; its stats only
            # the last one's instructions.
            cpu_s = float(meta["cpu_seconds"]) - float(meta.get("resumed_cpu_seconds", 0.0))
            instructions = first_stat(meta_path.parent / "m5out" / "stats.txt", "simInsts")
        except (OSError, ValueError, TypeError, KeyError, IndexError):
            continue  # a set-up from before its CPU time was recorded, or without stats
        if cpu_s > 0 and instructions > 0:
            rates.append(instructions / cpu_s)
    if not rates:
        return SETUP_INSTRUCTIONS_PER_CPU_S, "gem5.opt on the reference host"
    return statistics.median(rates), f"measured over {len(rates)} set-up(s) here"


def first_stat(stats: Path, name: str) -> float:
    """Stat ``name``'s value in the first dump of a gem5 stats.txt."""
    from pimcloud.stats_file import read_stats

    frame = read_stats(stats)
    values = frame.loc[frame["stat"] == name, "value"]
    if values.empty:
        raise ValueError(f"{stats}: no {name}")
    return float(values.iloc[0])
