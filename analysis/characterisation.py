"""The characterisation study's results: Fig. 2, Table III, the validation and the claims.

Input: a study folder (``pimcloud study run``): one campaign per (preset, service) cell,
each with its sampled run and, for validated cells, the probes of a direct max-load
search.  Method (analysis/README.md, "The characterisation"):

1. Each cell's sampled run gives the service's per-request service times on that
   architecture (``lats.bin``: service = completion - start of ``serve``).
2. An M/G/k queue over those times (pimcloud.analysis.queueing), k = the preset's cores,
   predicts the p99 sojourn at every load: the cell's curve.
3. QoS per service is the knee of its ``arch1`` curve (or Table II's target).
4. Max load = the highest load of the curve within QoS; tail at low load = the curve's p99
   at 10 % per-core utilisation, over QoS.
5. Cells measured directly (``pimcloud study validate``) show predicted beside measured.
"""

from __future__ import annotations

import json
import numbers
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import EngFormatter
from pimcloud.stats_file import parse_stats

from ..atomic import atomic_write_text
from ..components.stat_names import controller_memories, stat_names
from ..runs.maxload import early_stop_of, meets_qos, steady_run, summary_of
from ..runs.study import DYNAMIC_SUFFIX, Cell, StudyDir, StudySpec
from ..units import parse_time_ps
from ..workloads.records import (
    RELEASED_COLUMN,
    SERIAL_COLUMN,
    SERIAL_WAIT_COLUMN,
    read_lats_bin,
    read_request_table,
)
from ..workloads.services import SERVICES
from ..workloads.steady import steady_state
from . import figures
from .campaign import simulated_topology
from .memlat import controller_queues, detailed_dumps, detailed_seconds
from .paper_values import ARCHITECTURES, paper_table_iii
from .queueing import MGk, knee, p99_interval
from .reference import read_reference

LOW_LOAD = 0.10  # the paper's "less than 10 % of per-core utilisation"
CURVE_UTILISATIONS = np.round(np.arange(0.10, 0.96, 0.01), 2)  # where curves are drawn
BASELINE = "arch1"
# How far a cell's measured p99 at its sampled load may lie from the model's there.
MODEL_AGREES = (0.5, 2.0)


@dataclass
class CellResult:
    cell: Cell
    service_ns: np.ndarray  # of the sampled run: time on a worker (occupied_ns)
    points: pd.DataFrame  # every finished run: rps, requests, p99_ns, p99_low, p99_high...
    host_seconds: float  # of the sampled run (gem5 host time, app checkpoint excluded)
    folder: Path  # the cell's campaign
    setup_host_seconds: float = float("nan")  # of its app checkpoint (shared by its runs)
    carried: bool = False  # made by an earlier study part: from the reference's samples
    # Of each sampled request's time, the part in the service's serial section (oltp's
    # one writer); None when the service has none or its runs did not say.
    serial_ns: np.ndarray | None = None
    # The harness's CPU a request beyond its time on a worker; None: its run did not
    # measure it (a harness before measured_cpu_ns), and the model goes without.
    overhead_ns: float | None = None
    # The load generator's CPU a request (one thread, in turn); None: not measured.
    generator_ns: float | None = None
    # Each sampled request's own lateness (lateness_ns), which the model draws; None: the
    # harness did not record releases (the hand-overs then hold the lateness, counted from
    # the scheduled arrival).
    late_ns: np.ndarray | None = None
    # The cell's direct max-load search (`pimcloud study validate`), if one was begun.
    search: Path | None = None
    # Per sampled request, its hand-over to an idle worker (NaN: it found none idle);
    # None: the sample's times on a worker already hold a hand-over each (samples.csv
    # made before the column), and the model adds none.
    handover_ns: np.ndarray | None = None
    study: str = ""  # the name of the study that made it ("": a table made before the column)
    # The sampled run's folder (None: carried from the reference's samples).
    sample_dir: Path | None = None

    @property
    def handovers(self) -> np.ndarray | None:
        """The sample's hand-overs (where a request found an idle worker), for the model."""
        if self.handover_ns is None:
            return None
        seen = self.handover_ns[np.isfinite(self.handover_ns)]
        return seen if len(seen) else None

    @property
    def queue(self) -> MGk:
        return MGk(self.service_ns, self.cell.cores, serial_ns=self.serial_ns,
                   overhead_ns=self.overhead_ns or 0.0, generator_ns=self.generator_ns or 0.0,
                   handover_ns=self.handovers, lateness_ns=self.late_ns)


def _lats(run_dir: Path, app: str) -> pd.DataFrame | None:
    """The app's request table (requests.csv, with times) if the run wrote one, else its
    lats.bin (queue, service, sojourn only)."""
    for path in sorted(run_dir.rglob("requests.csv")):
        if path.parent.name == app:
            return read_request_table(path)
    for path in sorted(run_dir.rglob("lats.bin")):
        if path.parent.name == app:
            return read_lats_bin(path)
    return None


def occupied_ns(requests: pd.DataFrame) -> np.ndarray:
    """Each request's time on a worker, for the model: its service time, less a wait to
    enter the service's serial section (the model queues on that section itself)."""
    service = requests["service_ns"].to_numpy(dtype=float)
    if SERIAL_WAIT_COLUMN in requests.columns:
        service = service - requests[SERIAL_WAIT_COLUMN].to_numpy(dtype=float)
    return service


def released_of(requests: pd.DataFrame) -> np.ndarray | None:
    """When each request entered the work queue (requests.csv ``released_ns``), or None
    when the table has no such column or a request lacks it (0: TCP client mode)."""
    if RELEASED_COLUMN not in requests.columns:
        return None
    released = requests[RELEASED_COLUMN].to_numpy(dtype=float)
    return released if len(released) and (released > 0).all() else None


def handover_ns(requests: pd.DataFrame, servers: int) -> np.ndarray:
    """Per request, the harness's hand-over to an idle worker where it found one (a futex
    wake of a sleeping thread on a halted core: 8.7 us on average on arch1's O3 cores,
    several kvstore requests' service), NaN where it found every worker busy (the one that
    frees next takes it from the queue unwoken). The hand-over is the queue time of a
    request that arrived while fewer than ``servers`` were in the system, so no queueing
    is in it. Counted from the request's release into the queue where the table records
    it, so that the load generator's lateness (a generator sharing the cores with the
    workers) is not taken for a wake; from its scheduled arrival in tables made before.
    All NaN without timestamps (lats.bin)."""
    missing = np.full(len(requests), np.nan)
    if "scheduled_ns" not in requests.columns:
        return missing
    released = released_of(requests)
    arrival = requests["scheduled_ns"].to_numpy(dtype=float) if released is None else released
    ordered_end = np.sort(requests["end_ns"].to_numpy(dtype=float))
    ordered_arrival = np.sort(arrival)
    # In the system at each arrival: arrived before it, not yet done.
    before = np.searchsorted(ordered_arrival, arrival, side="left")
    done = np.searchsorted(ordered_end, arrival, side="right")
    idle_worker = (before - done) < servers
    waited = requests["start_ns"].to_numpy(dtype=float) - arrival
    return np.where(idle_worker, waited, missing)


def lateness_ns(requests: pd.DataFrame) -> np.ndarray | None:
    """Each request's own lateness, in the table's order: its release into the queue less
    the later of its scheduled arrival and the release before it (the generator sleeps
    until an arrival and shares the cores, so it wakes late by a timer's wake-up or a busy
    core). Not the whole delay from its arrival: a generator behind its schedule releases
    the next request late by the backlog too, which the model makes from the generator's
    CPU a request, and would count twice. None where the table does not record releases;
    give the whole table (the release before the first kept request counts)."""
    released = released_of(requests)
    if released is None:
        return None
    scheduled = requests["scheduled_ns"].to_numpy(dtype=float)
    order = np.argsort(scheduled, kind="stable")
    before = np.empty(len(released))
    before[order] = np.concatenate(([-np.inf], released[order][:-1]))
    return np.maximum(released - np.maximum(scheduled, before), 0.0)


def generator_of(run_dir: Path, app: str) -> float | None:
    """The load generator's CPU time a measured request (summary.json
    ``generator_cpu_ns`` over the requests it made in the measured region); None when the
    run did not measure it."""
    summary = summary_of(run_dir, app)
    try:
        cpu = float(summary["generator_cpu_ns"])
        made = int(summary["generated"]) - int(summary["warmup"])
    except (KeyError, ValueError, TypeError):
        return None
    return cpu / made if cpu > 0 and made > 0 else None


def overhead_of(run_dir: Path, app: str, occupied: np.ndarray) -> float | None:
    """The harness's CPU a request beyond its time on a worker: the process's CPU time over
    the measured region (summary.json ``measured_cpu_ns``) a measured request, less the
    mean time on a worker (0 when that covers it: the hand-over on an idle core is partly
    wait, not CPU); None when the run did not measure it."""
    summary = summary_of(run_dir, app)
    try:
        cpu, requests = float(summary["measured_cpu_ns"]), int(summary["requests"])
    except (KeyError, ValueError, TypeError):
        return None
    if cpu <= 0 or requests <= 0 or not len(occupied):
        return None
    return max(0.0, cpu / requests - float(np.mean(occupied)))


def serial_of(requests: pd.DataFrame) -> np.ndarray | None:
    """Each request's time in the service's serial section (requests.csv's ``serial_ns``),
    or None when the table has no such column or no request entered one."""
    if SERIAL_COLUMN not in requests.columns:
        return None
    serial = requests[SERIAL_COLUMN].to_numpy(dtype=float)
    return serial if (serial > 0).any() else None


def read_cell(folder: Path, cell: Cell, search: Path | None = None) -> CellResult | None:
    """The finished runs of one cell's campaign and of its max-load search's campaign
    ``search`` (rows marked ``probe``; None when its sampled run is not done)."""
    rows = []
    sample: tuple[np.ndarray, np.ndarray, np.ndarray, float, pd.DataFrame, Path] | None = None
    setup, late = float("nan"), None
    records = [(path, False) for path in sorted((folder / "runs").glob("*/run.json"))]
    if search is not None:
        records += [(path, True) for path in sorted((search / "runs").glob("*/run.json"))]
    for record_path, probe in records:
        record = json.loads(record_path.read_text())
        lats = _lats(record_path.parent, cell.service)
        if lats is None or not len(lats) or not isinstance(record.get("rps"), int | float):
            continue
        rps = float(record["rps"])
        # The p99 of the steady state, as the max-load search judges it (runs/maxload.py)
        steady = steady_run(record_path.parent, cell.service)
        if steady is None:
            continue
        sojourn, state = steady
        # The times the model draws from: those of the steady state too, cut in the
        # table's own order (a restored run's first requests meet cold caches and the
        # backlog of its start; the hand-overs are classed over every request first, so
        # that those still in the system when the steady state begins count).
        cut = steady_state(lats["sojourn_ns"].to_numpy(dtype=float)).start
        # What the workers' cores spent on each request, over the whole window: the
        # harness's CPU beyond it (overhead_of) is measured over the whole window too.
        every_service, every_handover = occupied_ns(lats), handover_ns(lats, cell.cores)
        every_late = lateness_ns(lats)
        window = every_service + np.nan_to_num(every_handover)
        service, handover = every_service[cut:], every_handover[cut:]
        lats = lats.iloc[cut:]
        on_worker = service + np.nan_to_num(handover)
        low, high = p99_interval(sojourn)
        stop = early_stop_of(record_path.parent, cell.service) or {}
        qos = (record.get("qos_ns") or {}).get(cell.service)
        p99 = float(np.percentile(sojourn, 99))
        rows.append({"preset": cell.preset, "app": cell.service, "placement": cell.placement,
                     "dynamic": cell.dynamic, "rps": rps,
                     "requests": state.requests, "transient": state.start,
                     "settled": state.settled, "p99_ns": p99, "p99_low_ns": low,
                     "p99_high_ns": high,
                     "mean_service_ns": float(lats["service_ns"].mean()),
                     "mean_occupied_ns": float(on_worker.mean()),
                     "utilisation": rps * on_worker.mean() * 1e-9 / cell.cores,
                     "early_stop": stop.get("verdict", ""), "probe": probe,
                     "meets_table_qos": (meets_qos(record_path.parent, cell.service, p99,
                                                   float(qos)) if qos else None),
                     "run_id": record["run_id"]})
        if not probe and abs(rps - cell.sample_rps) <= 1e-6 * cell.sample_rps:
            execution = record.get("execution") or {}
            sample = (service, handover, window,
                      float(execution.get("host_seconds") or np.nan), lats, record_path.parent)
            late = None if every_late is None else every_late[cut:]
            setup = _setup_host_seconds(folder, execution.get("app_checkpoint"))
    if sample is None:
        return None
    service, handover, window, host_seconds, lats, run_dir = sample
    return CellResult(cell, service, pd.DataFrame(rows).sort_values("rps"), host_seconds,
                      folder, setup, serial_ns=serial_of(lats),
                      overhead_ns=overhead_of(run_dir, cell.service, window),
                      generator_ns=generator_of(run_dir, cell.service), late_ns=late,
                      search=search, handover_ns=handover, sample_dir=run_dir)


def _setup_host_seconds(folder: Path, app_checkpoint: object) -> float:
    """Host time of the app checkpoint a run restored (its meta.json in the store)."""
    try:
        store = Path(json.loads((folder / "campaign.json").read_text())["checkpoint_root"])
        meta = json.loads((store / "apps" / str(app_checkpoint) / "meta.json").read_text())
        return float(meta["host_seconds"])
    except (OSError, KeyError, ValueError, TypeError):
        return float("nan")


def read_study(study: StudySpec, root: Path) -> list[CellResult]:
    found = []
    folder = StudyDir(root)
    for cell in study.cells():
        result = read_cell(folder.cell_dir(cell), cell, folder.search_dir(cell))
        if result is not None:
            result.study = study.name
            found.append(result)
    return found


# The reference keeps each cell's sampled times on a worker (one row a request), so that a
# later part re-models its cells like its own: under another QoS (a new arch1 knee, or
# ``--qos table2``) instead of carrying max loads judged at the old one.
SAMPLE_KEY = ["preset", "app", "placement", "dynamic"]
# A sampled request's hand-over to an idle worker (NaN: none idle, or a table made before
# the column, whose occupied_ns then holds a hand-over drawn for every request).
HANDOVER_COLUMN = "handover_ns"


def samples_table(results: list[CellResult]) -> pd.DataFrame:
    """The cells' sampled times on a worker, a row a request, with what the model and the
    report need of each cell besides (cores, sampled load, host times)."""
    frames = [pd.DataFrame({
        "preset": r.cell.preset, "app": r.cell.service, "placement": r.cell.placement,
        "dynamic": r.cell.dynamic, "study": r.study, "cores": r.cell.cores,
        "core_type": r.cell.core_type,
        "sample_rps": r.cell.sample_rps, "host_seconds": r.host_seconds,
        "setup_host_seconds": r.setup_host_seconds,
        "occupied_ns": np.round(r.service_ns).astype(np.int64),
        SERIAL_COLUMN: (np.zeros(len(r.service_ns), dtype=np.int64) if r.serial_ns is None
                        else np.round(r.serial_ns).astype(np.int64)),
        "overhead_ns": np.nan if r.overhead_ns is None else r.overhead_ns,
        "generator_ns": np.nan if r.generator_ns is None else r.generator_ns,
        "late_ns": (np.full(len(r.service_ns), np.nan) if r.late_ns is None
                    else np.round(r.late_ns)),
        HANDOVER_COLUMN: (np.full(len(r.service_ns), np.nan) if r.handover_ns is None
                          else np.round(r.handover_ns))})
        for r in results]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def results_from_samples(samples: pd.DataFrame, points: pd.DataFrame, folder: Path,
                         made: set[str]) -> list[CellResult]:
    """The reference's cells that have samples, as results of this report (marked
    ``carried``), except those named in ``made`` (this study made them again)."""
    if samples.empty:
        return []
    samples, points = (_with_cell_defaults(frame) for frame in (samples, points))
    points = points.drop(columns=["carried"], errors="ignore")
    found = []
    for key, group in samples.groupby(SAMPLE_KEY, sort=True):
        first = group.iloc[0]
        cell = Cell(str(first["preset"]), str(first["app"]), int(first["cores"]),
                    str(first["core_type"]), float(first["sample_rps"]),
                    str(first["placement"]), str(first["dynamic"]))
        if cell.name in made:
            continue
        mine = points[(points[SAMPLE_KEY].astype(str) == list(key)).all(axis=1)] \
            if set(SAMPLE_KEY) <= set(points.columns) else points.iloc[0:0]
        if not np.isclose(mine.get("rps", pd.Series(dtype=float)), cell.sample_rps).any():
            raise ValueError(f"{folder}/samples.csv has cell {cell.name}, but points.csv has no "
                             f"run of it at its sampled {cell.sample_rps:g} rps: restore "
                             "points.csv with the samples (both come from one report)")
        found.append(CellResult(cell, group["occupied_ns"].to_numpy(dtype=float),
                                mine.sort_values("rps"), float(first["host_seconds"]), folder,
                                float(first["setup_host_seconds"]), carried=True,
                                serial_ns=serial_of(group.fillna({SERIAL_COLUMN: 0})),
                                overhead_ns=_number(first.get("overhead_ns")),
                                generator_ns=_number(first.get("generator_ns")),
                                late_ns=_lateness(group),
                                handover_ns=(group[HANDOVER_COLUMN].to_numpy(dtype=float)
                                             if HANDOVER_COLUMN in group else None),
                                study=_text(first.get("study"))))
    return found


def _lateness(group: pd.DataFrame) -> np.ndarray | None:
    """A reference cell's lateness a request, None where its sample did not record it."""
    if "late_ns" not in group:
        return None
    late = group["late_ns"].to_numpy(dtype=float)
    return late if len(late) and np.isfinite(late).all() else None


def _text(value: object) -> str:
    """A reference cell's text, "" where a table made before the column left it out."""
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) \
        else str(value)


def _number(value: object) -> float | None:
    """A reference cell's number, None where a table made before the column left it out."""
    return float(value) if isinstance(value, numbers.Real) and pd.notna(value) else None


def _with_cell_defaults(frame: pd.DataFrame) -> pd.DataFrame:
    """A reference table's cell key as text, first touch and no dynamic placement where a
    table made before those existed (or a CSV reader) left them out."""
    if frame.empty:
        return frame
    frame = frame.copy()
    for column, default in (("placement", "ft"), ("dynamic", "none")):
        frame[column] = frame[column].astype(object).fillna(default) if column in frame \
            else default
    for column in SAMPLE_KEY:
        frame[column] = frame[column].astype(str)
    return frame


def predicted_max_load(folder: Path, cell: Cell, qos_ns: float) -> float:
    """The model's max load of a cell at ``qos_ns`` (where a direct max-load search of the
    cell starts)."""
    result = read_cell(folder, cell)
    if result is None:
        raise ValueError(f"{folder}: its sampled run ({cell.sample_rps:g} rps) is not done; "
                         "`pimcloud study run` first")
    return float(f"{result.queue.max_load(qos_ns):.3g}")


def knee_qos_ns(folder: Path, cell: Cell) -> float:
    """The knee of the model's curve of ``cell`` (an arch1 cell: its service's QoS in the
    study's default reading, ``qos_targets``)."""
    result = read_cell(folder, cell)
    if result is None:
        raise ValueError(f"{folder}: its sampled run ({cell.sample_rps:g} rps) is not done; "
                         f"`pimcloud study run --only {cell.preset} --services "
                         f"{cell.service}` first")
    frame = curves([result]).assign(arch=BASELINE)
    return float(qos_targets(frame, "knee")["knee_qos_ns"].iloc[0])


# ----------------------------------------------------------------------------- tables

# Fewer cells are drawn in this process: a new one's start (its imports) costs about what a
# curve does.
PARALLEL_FROM = 4


def _curve(queue: MGk) -> list[tuple[float, float]]:
    return queue.curve(CURVE_UTILISATIONS)


def curves(results: list[CellResult], jobs: int | None = None) -> pd.DataFrame:
    """The model's p99 at each utilisation of ``CURVE_UTILISATIONS``, per cell; the
    cells' curves in ``jobs`` processes (default: one a core), most of a report's time."""
    rows = []
    jobs = min(jobs or len(os.sched_getaffinity(0)), len(results))
    queues = [result.queue for result in results]
    if jobs > 1 and len(results) >= PARALLEL_FROM:
        # spawn, not fork: the caller may hold threads (a live display, a test's runner)
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            points = list(pool.map(_curve, queues))
    else:
        points = [_curve(queue) for queue in queues]
    for result, curve in zip(results, points, strict=True):
        for utilisation, (rps, p99) in zip(CURVE_UTILISATIONS, curve, strict=True):
            rows.append({"arch": result.cell.preset, "app": result.cell.service,
                         "utilisation": float(utilisation), "rps": rps, "p99_ns": p99,
                         "carried": result.carried})
    return pd.DataFrame(rows)


def qos_targets(curve_frame: pd.DataFrame, how: str = "knee") -> pd.DataFrame:
    """Per service: its QoS (``knee`` of its arch1 curve, or ``table2``) and both values."""
    rows = []
    for app in sorted(curve_frame["app"].unique()):
        base = curve_frame[(curve_frame["app"] == app) & (curve_frame["arch"] == BASELINE)]
        knee_ns = np.nan
        knee_u = np.nan
        if len(base) >= 3:
            base = base.sort_values("rps")
            index = knee(base["rps"].to_numpy(), base["p99_ns"].to_numpy())
            knee_ns = float(base["p99_ns"].iloc[index])
            knee_u = float(base["utilisation"].iloc[index])
        table2 = float(SERVICES[app].paper_qos_ns) if app in SERVICES else np.nan
        ours = float(SERVICES[app].qos_ns) if app in SERVICES else np.nan
        chosen = knee_ns if how == "knee" else table2
        rows.append({"app": app, "qos_ns": chosen, "knee_qos_ns": knee_ns,
                     "knee_utilisation": knee_u, "table2_qos_ns": table2,
                     "default_qos_ns": ours})
    return pd.DataFrame(rows)


def table_iii(results: list[CellResult], qos: pd.DataFrame) -> pd.DataFrame:
    """Tidy Table III: arch, app, tail_over_qos (model, 10 % load), normalized_max_load,
    max_load_rps, and the measured sample beside them (first-touch cells)."""
    frame = _model_rows([r for r in results if _static_ft(r)], qos)
    if frame.empty:
        return frame
    return normalised(frame.drop(columns=["placement", "dynamic"]))


def _static_ft(result: CellResult) -> bool:
    """A Table III cell: first touch, nothing moved at run time."""
    return result.cell.placement == "ft" and result.cell.dynamic == "none"


def normalised(frame: pd.DataFrame) -> pd.DataFrame:
    """Table III's max loads over each service's arch1 max load."""
    if frame.empty:
        return frame
    base = frame[frame["arch"] == BASELINE].set_index("app")["max_load_rps"]
    frame = frame.copy()
    frame["normalized_max_load"] = [
        row.max_load_rps / base[row.app] if row.app in base and base[row.app] > 0 else np.nan
        for row in frame.itertuples()]
    return frame


PLACEMENT_BASELINE = "arch8"  # Fig. 3: every access local (one stack)


def placement_table(results: list[CellResult], qos: pd.DataFrame,
                    local: pd.DataFrame | None = None) -> pd.DataFrame:
    """Fig. 3: on each preset with placement cells (arch9), every service's max load
    under each static placement, alone and with migration or replication beside it
    (``dynamic``; ``policy`` names the bar: "cc", "cc+mig", "cc+rep"), normalised to its
    max load on arch8 (all accesses local), or, without an arch8 cell, to its best
    static placement (``normalized_to``). ``local``: a Table III to take arch8 from
    (default: the results' own)."""
    presets = {r.cell.preset for r in results if not _static_ft(r)}
    frame = _model_rows([r for r in results if r.cell.preset in presets], qos)
    if frame.empty:
        return frame
    if local is None:
        local = table_iii([r for r in results if r.cell.preset == PLACEMENT_BASELINE], qos)
    frame["policy"] = [policy_name(placement, dynamic) for placement, dynamic in
                       zip(frame["placement"], frame["dynamic"], strict=True)]
    return placement_normalised(frame, local)


def policy_name(placement: str, dynamic: str) -> str:
    """A Fig. 3 bar's name: "cc", "cc+mig", "cc+rep"."""
    return placement if dynamic == "none" else f"{placement}+{DYNAMIC_SUFFIX[dynamic]}"


def placement_normalised(frame: pd.DataFrame, local: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3's normalisation of placement rows: over arch8's max load in ``local`` (a
    Table III), or, without one, over the best static placement's."""
    if frame.empty:
        return frame
    frame = frame.copy()
    local = local[local["arch"] == PLACEMENT_BASELINE] if len(local) else local
    local_load = local.set_index("app")["max_load_rps"] if len(local) else pd.Series(
        dtype=float)
    static = frame["max_load_rps"].where(frame["dynamic"] == "none")
    best = static.groupby([frame["arch"], frame["app"]]).transform("max")
    baseline = frame["app"].map(local_load)
    use_local = baseline.notna() & (baseline > 0)
    frame["normalized_to"] = np.where(use_local, PLACEMENT_BASELINE, "best placement")
    frame["normalized_max_load"] = frame["max_load_rps"] / baseline.where(use_local, best)
    # One placement over itself says nothing (arch9 oltp's FT before arch8 oltp existed
    # drew a Fig. 3 of one bar at 1.0): left out until a second bar or arch8 comes.
    alone = frame.groupby(["arch", "app"])["placement"].transform("size") == 1
    frame.loc[alone & ~use_local, "normalized_max_load"] = np.nan
    # arch8 made but carrying nothing (translate at both QoS) is no baseline either.
    frame.loc[alone & ~use_local, "normalized_to"] = np.where(
        baseline[alone & ~use_local].notna(),
        f"nothing yet (one placement, {PLACEMENT_BASELINE} carries no load)",
        f"nothing yet (one placement, no {PLACEMENT_BASELINE})")
    return frame


def page_types(results: list[CellResult], notes: list[str] | None = None) -> pd.DataFrame:
    """Fig. 4: per cell whose board had the page-access counters (the migration cells),
    its sampled run's memory accesses by page type (private / shared x read-only /
    read-write) on the hottest frames the counters returned at the run's end. A cell with
    a file that does not read has no row (said in ``notes``): part of its nodes would
    give a breakdown of part of its memory."""
    from ..guest.hw_counters import HOTTEST_GLOB, HotPagesError, read_hottest
    from .metrics import page_access_breakdown

    rows = []
    for result in results:
        if result.sample_dir is None:
            continue
        try:
            frames = [read_hottest(path)
                      for path in sorted(result.sample_dir.rglob(HOTTEST_GLOB))]
        except HotPagesError as error:
            if notes is not None:
                notes.append(f"left out of Fig. 4 {result.cell.name}: {error}")
            continue
        if not frames:
            continue
        cell = result.cell
        hot = pd.concat(frames, ignore_index=True).assign(cell=cell.name)
        rows.append(page_access_breakdown(hot, by=("cell",)).drop(columns="cell").assign(
            arch=cell.preset, app=cell.service, placement=cell.placement,
            dynamic=cell.dynamic, study=result.study))
    columns = ["arch", "app", "placement", "dynamic", "page_type", "accesses", "share",
               "frames", "study"]
    return pd.concat(rows, ignore_index=True)[columns] if rows else pd.DataFrame(
        columns=columns)


def _fig3_ylabel(placement: pd.DataFrame) -> str:
    """What Fig. 3's bars are normalised to, as the table says (arch8, or the best
    placement of the service where there is no arch8 cell)."""
    drawn = placement.dropna(subset=["normalized_max_load"])
    against = set(drawn["normalized_to"].dropna()) if "normalized_to" in drawn else set()
    if against == {PLACEMENT_BASELINE}:
        return f"max load / {PLACEMENT_BASELINE}'s (all local)"
    return "max load, normalised (" + ", ".join(sorted(map(str, against))) + ")"


def _fig3_title(placement: pd.DataFrame, qos: str) -> str:
    """Fig. 3's title: the QoS its max loads are under, and the services it leaves out
    because no placement of theirs meets that QoS at any load (their bars would be 0)."""
    served = placement.groupby("app")["max_load_rps"].max()
    idle = sorted(str(app) for app, rps in served.items() if not rps > 0)
    return f"Fig. 3 at {qos}" + (f" ({', '.join(idle)}: no placement meets it)"
                                 if idle else "")


MEMORY_COLUMNS = ["arch", "app", "placement", "dynamic", "memory", "reads", "read_gbps",
                  "read_queue", "queue_ns", "access_ns", "simulated_s", "study"]


def memory_queues(results: list[CellResult], notes: list[str] | None = None) -> pd.DataFrame:
    """Per cell and memory (a stack, the host's DDR), from its sampled run's gem5
    statistics over the detailed part: reads served, read bandwidth, the read queue's
    mean length and a read's mean wait in it and time to data (``memlat.
    controller_queues``). Where a placement's memory time goes: one stack's queue, or
    the link. A cell whose run left no readable stats.txt has no row (said in ``notes``)."""
    rows = []
    for result in results:
        if result.sample_dir is None:
            continue
        cell = result.cell
        paths = sorted(result.sample_dir.rglob("stats.txt"))
        try:
            topology = simulated_topology(json.loads((result.sample_dir / "run.json")
                                                     .read_text()))
            if not paths:
                raise ValueError("no stats.txt")
            stats = parse_stats(paths[0]).stats
        except (OSError, ValueError, KeyError) as error:  # TopologyError is a ValueError
            if notes is not None:
                notes.append(f"no memory-controller rows for {cell.name}: {error}")
            continue
        names = stat_names(topology)
        detailed = detailed_dumps(stats, names, stat_names(topology, "boot"))
        if detailed.empty:
            if notes is not None:
                notes.append(f"no memory-controller rows for {cell.name}: its stats.txt has "
                             "no window of the detailed cores")
            continue
        table = controller_queues(detailed, controller_memories(topology), per="memory",
                                  seconds=detailed_seconds(detailed, names))
        rows.append(table.drop(columns="controller").assign(
            arch=cell.preset, app=cell.service, placement=cell.placement,
            dynamic=cell.dynamic, study=result.study))
    return pd.concat(rows, ignore_index=True)[MEMORY_COLUMNS] if rows else pd.DataFrame(
        columns=MEMORY_COLUMNS)


def _spanning(queues: pd.DataFrame) -> pd.DataFrame:
    """The memory rows of Fig. 3's cells (the presets with a placement other than first
    touch alone), each stack's, labelled with the placement policy (and the preset, when
    there are several)."""
    if queues.empty:
        return queues
    static_ft = (queues["placement"].astype(str) == "ft") & \
        (queues["dynamic"].astype(str) == "none")
    presets = set(queues.loc[~static_ft, "arch"].astype(str))
    cells = queues[queues["arch"].astype(str).isin(presets)
                   & queues["memory"].astype(str).str.startswith("stack")]
    policies = [policy_name(p, d) for p, d in
                cells[["placement", "dynamic"]].astype(str).to_numpy()]
    if len(presets) > 1:
        policies = [f"{arch} {policy}" for arch, policy in
                    zip(cells["arch"].astype(str), policies, strict=True)]
    return cells.assign(policy=policies)


def _page_type_figure(frame: pd.DataFrame) -> Any:
    """Fig. 4's bars per app and preset in Fig. 3's order (FT, CC, IL, each alone and
    then with migration or replication)."""
    apps, archs, placements, dynamics = frame[["app", "arch", "placement", "dynamic"]] \
        .astype(str).to_numpy().T
    policies = [policy_name(p, d) for p, d in zip(placements, dynamics, strict=True)]
    rows = sorted(range(len(frame)),
                  key=lambda i: (apps[i], archs[i], figures.policy_order(policies[i])))
    labels = [f"{apps[i]} {archs[i]} {policies[i]}" for i in rows]
    return figures.page_type_breakdown(frame.iloc[rows].assign(label=labels))


def _model_rows(results: list[CellResult], qos: pd.DataFrame) -> pd.DataFrame:
    """Per cell: the model's tail at 10 % load and max load at the service's QoS, and the
    measured sample beside them; both left out where the model misses its own sample."""
    targets = qos.set_index("app")["qos_ns"]
    rows = []
    for result in results:
        app = result.cell.service
        if app not in targets or not np.isfinite(targets[app]):
            continue
        queue = result.queue
        target = float(targets[app])
        low = queue.p99_ns(LOW_LOAD * queue.capacity_rps)
        sample = _sampled(result)
        measured = float(sample["p99_ns"].iloc[0]) if len(sample) else np.nan
        # The model must reproduce its own sample: a sample far above the curve was
        # overloaded (e.g. by a bottleneck the k-server queue lacks) and says nothing
        # of the service times; its cell is left out until it is sampled lower.
        at_sample = queue.p99_ns(result.cell.sample_rps) \
            if result.cell.sample_rps < queue.capacity_rps else np.inf
        ratio = measured / at_sample
        valid = bool(MODEL_AGREES[0] <= ratio <= MODEL_AGREES[1])
        rows.append({"arch": result.cell.preset, "app": app,
                     "placement": result.cell.placement, "dynamic": result.cell.dynamic,
                     "study": result.study, "cores": result.cell.cores,
                     "qos_ns": target, "tail_over_qos": low / target,
                     "max_load_rps": queue.max_load(target),
                     "mean_occupied_us": queue.mean_service_ns / 1e3,
                     # NaN: the cell's harness did not measure it (the model goes without)
                     "overhead_us": np.nan if result.overhead_ns is None
                     else result.overhead_ns / 1e3,
                     "generator_us": np.nan if result.generator_ns is None
                     else result.generator_ns / 1e3,
                     "mean_serial_us": queue.mean_serial_ns / 1e3,
                     "late_us": (np.nan if result.late_ns is None
                                 else float(np.mean(result.late_ns)) / 1e3),
                     "sample_rps": result.cell.sample_rps,
                     "sample_requests": int(sample["requests"].iloc[0]) if len(sample) else 0,
                     "sample_p99_ns": measured, "model_p99_at_sample_ns": at_sample,
                     "model_valid": valid,
                     "sample_host_seconds": result.host_seconds,
                     "setup_host_seconds": result.setup_host_seconds,
                     "carried": result.carried})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    for column in ("tail_over_qos", "max_load_rps"):
        frame[column] = frame[column].where(frame["model_valid"])
    return frame


def _sampled(result: CellResult) -> pd.DataFrame:
    """The cell's sampled run among its points (not a search's probe at the same load)."""
    points = result.points
    return points[~_flag(points, "probe", False)
                  & np.isclose(points["rps"], result.cell.sample_rps)]


def validation(results: list[CellResult], qos: pd.DataFrame) -> pd.DataFrame:
    """Cells with a direct max-load search (maxload-<app>.json): predicted at the search's
    QoS beside measured, and the error."""
    rows = []
    for result in results:
        if result.search is None:
            continue
        path = result.search / f"maxload-{result.cell.service}.json"
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        predicted = result.queue.max_load(float(data["qos_ns"]))
        measured = float(data["max_load_rps"])
        miss = data.get("first_miss_rps")
        rows.append({"arch": result.cell.preset, "app": result.cell.service,
                     "study": result.study, "qos_ns": float(data["qos_ns"]),
                     "predicted_rps": predicted,
                     "measured_rps": measured, "first_miss_rps": miss,
                     # loads probed (runs, with --seeds, can be more); older files: runs
                     "probes": len(data.get("loads") or data.get("probes", [])),
                     "runs": len(data.get("probes", [])),
                     "window_ms": _measured_window_s(result.search) * 1e3,
                     "error": (predicted - measured) / measured if measured else np.nan})
    return pd.DataFrame(rows, columns=VALIDATION_COLUMNS)


VALIDATION_COLUMNS = ["arch", "app", "study", "qos_ns", "predicted_rps", "measured_rps",
                      "first_miss_rps", "probes", "runs", "window_ms", "error"]


def _measured_window_s(search: Path) -> float:
    """A search campaign's measured window a probe (its spec's ``length.measured``)."""
    import tomllib

    try:
        spec = tomllib.loads(json.loads((search / "campaign.json").read_text())["spec_text"])
        return parse_time_ps(str(spec["length"]["measured"])) * 1e-12
    except (OSError, KeyError, ValueError, TypeError):
        return float("nan")


# ----------------------------------------------------------------------------- carried cells

# Each reference table's cell key: a study made over several sessions (or machines) adds
# its cells to the reference and keeps the ones it did not make this time.
CELL_KEYS = {"points": ("preset", "app", "placement", "dynamic"), "curves": ("arch", "app"),
             "table_iii": ("arch", "app"), "validation": ("arch", "app"),
             "placement": ("arch", "app", "placement", "dynamic"),
             "page_types": ("arch", "app", "placement", "dynamic"),
             "memory": ("arch", "app", "placement", "dynamic")}


def carried(name: str, ours: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """``reference``'s rows of table ``name`` whose cells ``ours`` lacks."""
    if reference.empty:
        return reference
    reference = reference.copy()
    keys = list(CELL_KEYS[name])
    if "placement" in keys and "placement" not in reference.columns:
        reference["placement"] = "ft"  # written before the study had placements
    if "dynamic" in keys and "dynamic" not in reference.columns:
        reference["dynamic"] = "none"  # ... or dynamic placement
        if name == "placement":
            reference["policy"] = reference["placement"]
    if ours.empty or not set(keys) <= set(ours.columns):
        return reference
    mine = set(map(tuple, ours[keys].astype(str).to_numpy()))
    keep = [tuple(row) not in mine for row in reference[keys].astype(str).to_numpy()]
    return reference[keep]


def rejudged(rows: pd.DataFrame, curve_frame: pd.DataFrame, qos: pd.DataFrame,
             notes: list[str] | None = None) -> pd.DataFrame:
    """Carried rows judged at a QoS that has since moved (this study made arch1 again and
    its knee came out elsewhere), judged again at the new one from the cell's model curve
    (``curve_frame``: p99 at 10-95 % utilisation of first-touch cells; a carried row is
    judged on a carried curve only). Rows without one (other placements, or a cell this
    study made again) would not compare and are left out; each change is said in
    ``notes``."""
    if rows.empty or qos.empty or "qos_ns" not in rows.columns:
        return rows
    now = qos.set_index("app")["qos_ns"]
    keep, rows = [], rows.reset_index(drop=True)
    for index, row in rows.iterrows():
        target = float(now.get(row["app"], np.nan))
        if not np.isfinite(target) or not np.isfinite(row["qos_ns"]) or \
                abs(target - row["qos_ns"]) <= 1e-3 * row["qos_ns"]:
            keep.append(index)
            continue
        where = f"{row['arch']} {row['app']}" + (
            f" {row['policy']}" if "policy" in rows.columns else "")
        dynamic = row.get("dynamic", "none")
        first_touch = row.get("placement", "ft") == "ft" and (
            dynamic in ("none", None) or pd.isna(dynamic))
        curve = curve_frame[(curve_frame["arch"] == row["arch"])
                            & (curve_frame["app"] == row["app"])] if len(curve_frame) \
            else curve_frame
        if "carried" in curve.columns:  # its own curve, not one this study made again
            curve = curve[curve["carried"].astype(bool)]
        if not first_touch or len(curve) < 2:
            if notes is not None:
                notes.append(f"left out {where}: judged at {row['qos_ns'] / 1e3:.1f} us, QoS "
                             f"is now {target / 1e3:.1f} us, and the reference has no samples "
                             "or curve of it to judge it again (make it in this study)")
            continue
        curve = curve.sort_values("utilisation")
        said = "its model missed its own sample: no max load"
        if pd.notna(row.get("max_load_rps")):  # a model that misses its sample stays out
            rps = curve["rps"].to_numpy(dtype=float)
            p99 = curve["p99_ns"].to_numpy(dtype=float)
            load = curve_max_load(rps, p99, target)
            low = curve.iloc[int(np.argmin(np.abs(curve["utilisation"] - LOW_LOAD)))]
            rows.loc[index, "max_load_rps"] = load
            rows.loc[index, "tail_over_qos"] = float(low["p99_ns"]) / target
            said = f"max load {load:.4g} rps from its model curve" + (
                " (a lower bound: the curve meets QoS to its end)"
                if p99[-1] <= target else "")
        if notes is not None:
            notes.append(f"judged {where} again at the new QoS {target / 1e3:.1f} us (was "
                         f"{row['qos_ns'] / 1e3:.1f} us; no samples in the reference): "
                         f"{said}")
        rows.loc[index, "qos_ns"] = target
        keep.append(index)
    return rows.loc[keep]


def curve_max_load(rps: np.ndarray, p99_ns: np.ndarray, qos_ns: float) -> float:
    """The load where a model curve (rising with the load) crosses QoS, interpolated
    between its points: 0 if its lowest load misses QoS, its highest if none does (a
    lower bound: the curve ends at 95 % utilisation)."""
    over = np.flatnonzero(p99_ns > qos_ns)
    if not len(over):
        return float(rps[-1])
    first = int(over[0])
    if first == 0:
        return 0.0
    low, high = first - 1, first
    share = (qos_ns - p99_ns[low]) / (p99_ns[high] - p99_ns[low])
    return float(rps[low] + share * (rps[high] - rps[low]))


def _with_reference(name: str, ours: pd.DataFrame, reference: pd.DataFrame,
                    curve_frame: pd.DataFrame, qos: pd.DataFrame,
                    notes: list[str] | None) -> pd.DataFrame:
    """``ours`` and the reference's other cells of table ``name``, those judged again at
    ``qos`` where it has moved (``rejudged``)."""
    return with_carried(name, ours, rejudged(carried(name, ours, reference), curve_frame,
                                             qos, notes))


def with_carried(name: str, ours: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """``ours`` and the reference's other cells, each row marked ``carried`` or not (rows
    of ours re-modelled from the reference's samples say so themselves)."""
    extra = carried(name, ours, reference).assign(carried=True)
    if len(ours) and "carried" not in ours.columns:
        ours = ours.assign(carried=False)
    if extra.empty:
        return ours
    return extra if ours.empty else pd.concat([ours, extra], ignore_index=True)


# ----------------------------------------------------------------------------- the claims

def _pairs(table: pd.DataFrame, pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """Max-load ratios (second over first) of each service over architecture pairs."""
    loads = table.set_index(["arch", "app"])["max_load_rps"]
    rows = []
    for first, second in pairs:
        for app in sorted(table["app"].unique()):
            if ((first, app) in loads and (second, app) in loads and loads[(first, app)] > 0
                    and pd.notna(loads[(second, app)])):
                rows.append({"from": first, "to": second, "app": app,
                             "ratio": loads[(second, app)] / loads[(first, app)]})
    return pd.DataFrame(rows, columns=["from", "to", "app", "ratio"])


def _pair_text(pairs: pd.DataFrame) -> str:
    """Each pair's max-load ratio, second over first: "kvstore arch4->arch8 +16%"."""
    return ", ".join(f"{r.app} {r.first}->{r.to} {r.ratio - 1:+.0%}"
                     for r in pairs.rename(columns={"from": "first"}).itertuples(index=False))


def _sample_met(row: Any) -> bool:
    """Whether a Table III row's measured sample met its QoS (a load it can serve, whatever
    the model says); False where the row has no sample."""
    p99 = getattr(row, "sample_p99_ns", np.nan)
    return bool(pd.notna(p99) and getattr(row, "sample_rps", 0) > 0 and p99 <= row.qos_ns)


def claims(table: pd.DataFrame, placement: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's section III claims, each: holds / does not hold / not measurable
    (``placement``: the Fig. 3 table, :func:`placement_table`)."""
    rows: list[dict[str, Any]] = []

    def add(claim: str, verdict: str, numbers: str) -> None:
        rows.append({"claim": claim, "verdict": verdict, "numbers": numbers})

    # Each CPU-centric arch against arch8 over the services both have a max load for: a
    # mean over different services would compare the services, not the architectures.
    loads = (table.pivot_table(index="app", columns="arch", values="normalized_max_load",
                               aggfunc="first") if len(table) else pd.DataFrame())
    pairs = []
    for arch in ("arch1", "arch2", "arch3", "arch4"):
        if {arch, "arch8"} <= set(loads.columns):
            both = loads[[arch, "arch8"]].dropna()
            if len(both):
                pairs.append((arch, both[arch].mean(), both["arch8"].mean(), list(both.index)))
    claim = "Arch 8 beats every CPU-centric architecture on average (normalised max load)"
    numbers = "; ".join(f"arch8 {ours:.2f} against {arch} {theirs:.2f} over {', '.join(apps)}"
                        for arch, theirs, ours, apps in pairs)
    # Both at 0 (neither meets this QoS at any load) decides nothing.
    decided = [(arch, theirs, ours) for arch, theirs, ours, _ in pairs if max(theirs, ours) > 0]
    if decided:
        holds = all(ours > theirs for _, theirs, ours in decided)
        verdict = ("holds" if holds else "does not hold") + (
            "" if len(decided) == 4 else f" (of {', '.join(p[0] for p in decided)} only)")
        add(claim, verdict, numbers)
    elif pairs:
        add(claim, "not measurable", numbers + " (neither meets QoS at any load)")
    else:
        add(claim, "not measurable", "needs arch8 and a CPU-centric preset with a service "
            "in common")
    claim = "ImgDNN cannot meet QoS on wimpy high-latency cores (Arch 3, 4)"
    img = table[(table["app"] == "imgdnn") & table["arch"].isin(["arch3", "arch4"])] \
        if len(table) else table
    if len(img):
        # A cell without a valid model still decides the claim when one request's
        # measured time on a worker alone is above QoS: no load can meet it.
        verdicts, numbers = [], []
        for r in img.itertuples():
            if pd.notna(r.tail_over_qos):
                verdicts.append(bool(r.tail_over_qos > 1 or r.max_load_rps <= 0))
                numbers.append(f"{r.arch}: tail/QoS {r.tail_over_qos:.2f}, max load "
                               f"{r.max_load_rps:.0f} rps")
            elif r.mean_occupied_us * 1e3 > r.qos_ns:
                verdicts.append(True)
                numbers.append(f"{r.arch}: mean time per request {r.mean_occupied_us / 1e3:.2f} "
                               f"ms above QoS {r.qos_ns / 1e6:.2f} ms (no valid model)")
            elif _sample_met(r):
                # Measured, not modelled: a run in gem5 met QoS at that load.
                verdicts.append(False)
                numbers.append(f"{r.arch}: its sample met QoS {r.qos_ns / 1e6:.2f} ms (p99 "
                               f"{r.sample_p99_ns / 1e6:.2f} ms at {r.sample_rps:,.0f} rps, "
                               f"{r.sample_requests} requests; no valid model)")
            else:
                numbers.append(f"{r.arch}: no valid model")
        if len(verdicts) < len(img):
            add(claim, "not measurable", "; ".join(numbers))
        else:
            add(claim, "holds" if all(verdicts) else "does not hold", "; ".join(numbers))
    else:
        add(claim, "not measurable", "needs imgdnn on arch3 or arch4")
    latency = _pairs(table, [("arch1", "arch5"), ("arch2", "arch6"), ("arch3", "arch7"),
                             ("arch4", "arch8")]) if len(table) else pd.DataFrame()
    claim = "Lower memory latency raises max load (paper: up to 67 %, 26 % on average)"
    if len(latency):
        gain = latency["ratio"] - 1
        # A trend, not one pair: the mean gain must be positive and more pairs gain than
        # lose, so a mean near zero from pairs that split evenly does not count as holding.
        raised, lowered = int((gain > 0).sum()), int((gain < 0).sum())
        add(claim, "holds" if gain.mean() > 0 and raised > lowered else "does not hold",
            f"up to {gain.max():+.0%}, {gain.mean():+.0%} on average over {len(gain)} pairs, "
            f"higher in {raised} ({_pair_text(latency)})")
    else:
        add(claim, "not measurable", "needs an architecture pair that differs only in "
            "memory latency (1-5, 2-6, 3-7, 4-8)")
    hierarchy = _pairs(table, [("arch1", "arch2"), ("arch3", "arch4"), ("arch5", "arch6"),
                               ("arch7", "arch8")]) if len(table) else pd.DataFrame()
    claim = "A shallow hierarchy beats a deep one more often than not"
    if len(hierarchy):
        wins = int((hierarchy["ratio"] > 1).sum())
        add(claim, "holds" if wins > len(hierarchy) / 2 else "does not hold",
            f"shallow ahead in {wins} of {len(hierarchy)} pairs ({_pair_text(hierarchy)})")
    else:
        add(claim, "not measurable", "needs a pair that differs only in hierarchy "
            "(1-2, 3-4, 5-6, 7-8)")
    claim = "FT beats IL and CC by up to 46 % when an app spans two stacks (Fig. 3)"
    if placement is not None and len(placement) and "dynamic" in placement.columns:
        dynamic = placement[placement["dynamic"] != "none"]
        placement = placement[placement["dynamic"] == "none"]
    else:
        dynamic = pd.DataFrame()
    loads = (placement.dropna(subset=["max_load_rps"]).pivot_table(
        index="app", columns="placement", values="max_load_rps", aggfunc="first")
        if placement is not None and len(placement) else pd.DataFrame())
    missing = {app: [p for p in ("ft", "cc", "il")
                     if p not in loads.columns or pd.isna(loads.at[app, p])]
               for app in loads.index}
    complete = loads.reindex(columns=["ft", "cc", "il"]).dropna()
    # Placements compare within one study only: another study's image or harness (prewarm,
    # the generator's figure) moves a cell's time on a worker as much as a placement does.
    mixed = _mixed_studies(placement, list(complete.index)) if len(complete) else {}
    complete = complete.drop(index=list(mixed))
    unjudged = [f"{app}: not compared, its placements come from different studies ({text})"
                for app, text in mixed.items()]
    unjudged += [f"{app}: not compared, no {' or '.join(p.upper() for p in places)} cell yet"
                 for app, places in missing.items() if places]
    both = complete[complete[["ft", "cc", "il"]].max(axis=1) > 0] if len(complete) \
        else complete
    if len(complete) and both.empty:
        idle = ", ".join(sorted(complete.index))
        add(claim, "not measurable", "; ".join(
            [f"no placement meets QoS at any load: {idle} (try `--qos table2`)", *unjudged]))
    elif len(both):
        # CC and IL both at 0 while FT serves some load: FT ahead by any margin.
        other = both[["cc", "il"]].max(axis=1)
        gain = (both["ft"] / other.where(other > 0) - 1).fillna(np.inf)
        add(claim, "holds" if (gain > 0).all() else "does not hold",
            "; ".join([f"{app}: FT {gain[app]:+.0%} over the better of CC and IL"
                       for app in both.index] + unjudged))
    else:
        add(claim, "not measurable", "; ".join(unjudged) or "needs arch9 under FT, CC and IL "
            "(study placements)")
    claim = "Migration and replication close the gap between static policies"
    gaps = _dynamic_gaps(pd.concat([placement, dynamic]) if len(dynamic) else dynamic)
    # A service with some dynamic cells but not yet every bar is named, not passed over,
    # and so are the bars left out for coming from another study than its static ones.
    def left_out(row: Any) -> str:
        return (f" (left out, not all made beside its static bars: {row.elsewhere})"
                if row.elsewhere else "")

    unjudged = ([f"{row.app} on {row.arch}: not compared, no {row.missing} cell yet"
                 + left_out(row) for row in gaps.itertuples() if row.missing]
                if len(gaps) else [])
    unjudged += ([f"{row.app} on {row.arch}: not compared, its bars come from different "
                  f"studies ({row.mixed})" for row in gaps.itertuples()
                  if row.mixed and not row.missing] if len(gaps) else [])
    gaps = gaps[(gaps["missing"] == "") & (gaps["mixed"] == "")] if len(gaps) else gaps
    if gaps.empty:
        add(claim, "not measurable", "; ".join(unjudged) or "needs arch9 cells under FT, CC "
            "and IL, each also with migration or replication (study `dynamic`)")
    elif (gaps["high"] <= 0).all():
        add(claim, "not measurable", "; ".join(
            ["no placement meets QoS at any load: " + ", ".join(sorted(gaps["app"]))
             + " (try `--qos table2`)", *unjudged]))
    else:
        judged = gaps[gaps["high"] > 0]
        idle = sorted(gaps.loc[gaps["high"] <= 0, "app"])
        unjudged += ([f"not compared, no placement meets QoS at any load: {', '.join(idle)}"]
                     if idle else [])
        add(claim, "holds" if (judged["dynamic"] < judged["static"]).all() else "does not hold",
            "; ".join([f"{row.app} on {row.arch}: FT/CC/IL spread {row.static:.0%} static, "
                       f"{row.dynamic:.0%} with the best of each and its {row.kinds}"
                       + left_out(row) for row in judged.itertuples()] + unjudged))
    return pd.DataFrame(rows)


def _mixed_studies(placement: pd.DataFrame, apps: list[str]) -> dict[str, str]:
    """The services among ``apps`` whose static FT, CC and IL rows come from more than one
    study, each with which placement came from which ("ft: an older part; cc, il: X")."""
    if "study" not in placement.columns:
        return {}
    static = placement[placement["placement"].isin(["ft", "cc", "il"])]
    mixed = {}
    for app in apps:
        rows = static[static["app"] == app]
        studies = rows["study"].fillna("").astype(str)
        if studies.nunique() > 1:
            by_study = rows.groupby(studies)["placement"].agg(lambda p: ", ".join(sorted(p)))
            mixed[app] = "; ".join(f"{places}: {study or 'an older part'}"
                                   for study, places in by_study.items())
    return mixed


def _spread(loads: list[float]) -> float:
    """How far apart max loads are: max/min - 1 (inf when only the smallest is 0)."""
    if min(loads) > 0:
        return max(loads) / min(loads) - 1
    return np.inf if max(loads) > 0 else 0.0


def _dynamic_gaps(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (arch, app) with at least one dynamic cell: the spread of the static max loads
    and of each placement's best of itself, +migration and +replication; the dynamic
    kinds used. Where FT, CC or IL alone, or every placement's dynamic cell, is not there
    yet, ``missing`` names them ("IL, CC with migration") and the spreads are NaN. Bars
    compare within one study only, like the static placements (_mixed_studies): a dynamic
    kind any of whose bars another study made is left out and named in ``elsewhere``
    ("cc+rep, ft+rep: X"); where the static bars span studies, or every kind is left out,
    ``mixed`` says which bars came from which study."""
    if frame.empty:
        return pd.DataFrame()
    rows = []
    for (arch, app), cells in frame.dropna(subset=["max_load_rps"]).groupby(["arch", "app"]):
        if (cells["dynamic"] == "none").all():
            continue
        extra, elsewhere = _dynamic_of_static_study(cells)
        static = cells[cells["dynamic"] == "none"].groupby("placement")["max_load_rps"].max()
        kinds = sorted(set(extra["dynamic"]))
        missing = [p.upper() for p in ("ft", "cc", "il") if p not in static.index]
        missing += [f"{p.upper()} with {' or '.join(kinds)}" for p in ("ft", "cc", "il")
                    if kinds and p not in set(extra["placement"])]
        mixed = _studies_of_bars(cells) if extra.empty else ""
        row = {"arch": arch, "app": app, "static": np.nan, "dynamic": np.nan, "high": np.nan,
               "kinds": " and ".join(kinds), "missing": ", ".join(missing), "mixed": mixed,
               "elsewhere": elsewhere}
        if not missing and not mixed:
            best = [max(static[p], extra[extra["placement"] == p]["max_load_rps"].max())
                    for p in ("ft", "cc", "il")]
            loads = [float(static[p]) for p in ("ft", "cc", "il")]
            row.update(static=_spread(loads), dynamic=_spread(best), high=max(loads))
        rows.append(row)
    return pd.DataFrame(rows)


def _dynamic_of_static_study(cells: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """(the dynamic cells of the kinds whose every bar comes from the study of the static
    ones, which bars of the other kinds came from which study: "" when none) of one
    service on one preset. Static bars from more than one study: no dynamic cell is
    usable."""
    extra = cells[cells["dynamic"] != "none"]
    if "study" not in cells.columns or extra.empty:
        return extra, ""
    static_studies = set(cells.loc[cells["dynamic"] == "none", "study"].fillna("").astype(str))
    same = (extra["study"].fillna("").astype(str).isin(static_studies).to_numpy()
            if len(static_studies) == 1 else np.zeros(len(extra), dtype=bool))
    usable = {kind for kind in set(extra["dynamic"]) if same[(extra["dynamic"] == kind)
                                                             .to_numpy()].all()}
    kept = extra["dynamic"].isin(usable)
    # With no kind kept the caller says which bars came from where (``mixed``).
    return extra[kept], (_bars_by_study(extra[~kept]) if usable and not kept.all() else "")


def _studies_of_bars(cells: pd.DataFrame) -> str:
    """"" when ``cells`` (one service on one preset, static and dynamic) come from one
    study, else which bars from which ("ft+rep: an older part; cc, il: X")."""
    if "study" not in cells.columns:
        return ""
    if cells["study"].fillna("").astype(str).nunique() < 2:
        return ""
    return _bars_by_study(cells)


def _bars_by_study(cells: pd.DataFrame) -> str:
    """Which of ``cells``' bars came from which study ("ft+rep: an older part; cc, il: X")."""
    studies = cells["study"].fillna("").astype(str)
    bars = pd.Series([policy_name(p, d) for p, d in zip(cells["placement"], cells["dynamic"],
                                                         strict=True)], index=cells.index)
    by_study = bars.groupby(studies).agg(lambda b: ", ".join(sorted(set(b))))
    return "; ".join(f"{names}: {study or 'an older part'}" for study, names in by_study.items())


def spearman(a: pd.Series, b: pd.Series) -> float:
    """Spearman's rho: Pearson's correlation of the ranks (ties share their mean rank).
    Written out because pandas' own method needs scipy, which the bundle does not use."""
    ranks_a = a.rank(method="average").astype(float)
    ranks_b = b.rank(method="average").astype(float)
    if ranks_a.nunique() < 2 or ranks_b.nunique() < 2:
        return np.nan  # a constant column ranks nothing
    return float(np.corrcoef(ranks_a.to_numpy(), ranks_b.to_numpy())[0, 1])


def rank_correlations(table: pd.DataFrame) -> pd.DataFrame:
    """Spearman's rank correlation with the paper per Table III column (app x metric),
    over the architectures both have."""
    paper = paper_table_iii()
    rows = []
    for metric in ("tail_over_qos", "normalized_max_load"):
        for app in sorted(table["app"].unique()) if len(table) else []:
            ours = table[table["app"] == app].set_index("arch")[metric]
            theirs = paper[paper["app"] == app].set_index("arch")[metric]
            common = ours.index.intersection(theirs.index)
            rho = spearman(ours[common], theirs[common]) if len(common) >= 3 else np.nan
            rows.append({"metric": metric, "app": app, "architectures": len(common),
                         "spearman": rho})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- report

def _table_figure(table: pd.DataFrame) -> Any:
    wide = table.pivot(index="arch", columns="app",
                       values=["tail_over_qos", "normalized_max_load"])
    order = [a for a in ARCHITECTURES if a in wide.index]
    return figures.table_iii_figure(wide.loc[order])


def _fig2(curve_frame: pd.DataFrame, points: pd.DataFrame, table: pd.DataFrame,
          qos: pd.DataFrame, span_curves: bool = True) -> Any:
    """Fig. 2: per service, the model's p99 against load per architecture, the measured
    points with their p99 intervals, QoS (dashed) and max loads (dotted); with
    ``span_curves`` each panel spans its curves only (not a search's far probes)."""
    frame = curve_frame.merge(qos[["app", "qos_ns"]], on="app")
    # One colour per architecture in every panel (Table III's order).
    colors = {arch: f"C{index}" for index, arch in enumerate(ARCHITECTURES)}
    figure = figures.latency_vs_load(
        frame, table.rename(columns={"max_load_rps": "max_load"}), system="arch",
        colors=colors)
    for ax in figure.axes:
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 50k, not 50000
        app = ax.get_title()
        # The panel spans its curves (and a little beyond): a search made at another QoS
        # (Table II's) probes far past them, and its runs stay in points.csv.
        right = 1.15 * float(frame[frame["app"] == app]["rps"].max())
        if span_curves and np.isfinite(right):
            ax.set_xlim(right=right)
        else:
            right = np.inf
        for arch in sorted(frame[frame["app"] == app]["arch"].unique()):
            pts = points[(points["app"] == app) & (points["preset"] == arch)] \
                if len(points) else points
            if len(pts):
                pts = pts[pts["rps"] <= right]
            if not len(pts):
                continue
            # A run far above the curve (an overloaded sample, a probe of a max-load
            # search) would be cut off by the axis: it is drawn as a triangle on the top
            # edge with its p99 written downwards beside it, so that neighbours' labels
            # do not run into each other.
            top = ax.get_ylim()[1]
            inside = pts[pts["p99_ns"] / 1e6 <= top]
            probe = _flag(inside, "probe", False)
            # Squares: sampled runs; diamonds: a max-load search's probes; a cross over
            # a run that never settled (workloads/steady.py).
            for group, marker in ((inside[~probe], "s"), (inside[probe], "D")):
                ax.errorbar(group["rps"], group["p99_ns"] / 1e6,
                            yerr=[(group["p99_ns"] - group["p99_low_ns"]) / 1e6,
                                  (group["p99_high_ns"] - group["p99_ns"]) / 1e6],
                            fmt=marker, ms=4, color=colors[arch], mfc="white", capsize=2)
            unsettled = inside[~_flag(inside, "settled", True)]
            ax.plot(unsettled["rps"], unsettled["p99_ns"] / 1e6, "x", ms=7,
                    color=colors[arch])
            # Only the lowest such load is written (a search's misses above it would
            # write over each other; points.csv has them all).
            for index, row in enumerate(pts[pts["p99_ns"] / 1e6 > top].sort_values(
                    "rps").itertuples()):
                ax.plot(row.rps, top, marker="^", ms=7, color=colors[arch], mfc="white",
                        clip_on=False)
                if index == 0:
                    ax.annotate(f"p99 {row.p99_ns / 1e6:.3g} ms", (row.rps, top),
                                textcoords="offset points", xytext=(3, -8), fontsize=7,
                                rotation=90, ha="left", va="top", color=colors[arch])
    return figure


def _flag(points: pd.DataFrame, column: str, default: bool) -> pd.Series:
    """A true/false column of the points (``default`` where a table made before it has
    none)."""
    if column not in points:
        return pd.Series(default, index=points.index, dtype=bool)
    return points[column].astype(object).fillna(default).astype(bool)


def write_study_report(study: StudySpec, root: Path, out: Path | None = None,
                       qos_how: str = "knee", screenshot: bool = False,
                       reference: Path | None = None,
                       notes: list[str] | None = None,
                       services: set[str] | None = None) -> Path:
    """Tables (CSV), figures (PNG + SVG) and index.html of a study folder; with
    ``reference``, its tables and figures are also copied there (analysis/reference/),
    and what became of the reference's other cells is said in ``notes``; ``services``:
    only those services' cells of the study (the reference's others are carried)."""
    out = (out or root / "report").resolve()
    (out / "figures").mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    results = [r for r in read_study(study, root)
               if services is None or r.cell.service in services]
    # Into the reference: its cells this study did not make stay, re-modelled from their
    # samples (or, made before the reference kept samples, as their own model rows), and
    # QoS comes from arch1's curve wherever it is.
    ref = {name: read_reference(name, reference) if reference is not None else pd.DataFrame()
           for name in (*CELL_KEYS, "samples")}
    results += results_from_samples(ref["samples"], ref["points"], reference or root,
                                    {r.cell.name for r in results})
    measured = [r.points.assign(carried=r.carried) for r in results if len(r.points)]
    points = pd.concat(measured, ignore_index=True) if measured else pd.DataFrame()
    first_touch = [r for r in results if _static_ft(r)]  # Fig. 2, Table III
    curve_frame = curves(first_touch)
    curve_frame = with_carried("curves", curve_frame, ref["curves"])
    qos = qos_targets(curve_frame, qos_how) if len(curve_frame) else pd.DataFrame(
        columns=["app", "qos_ns"])
    table = pd.DataFrame()
    if len(qos):
        table = normalised(_with_reference("table_iii", table_iii(first_touch, qos),
                                           ref["table_iii"], curve_frame, qos, notes))
    placement = placement_normalised(_with_reference(
        "placement", placement_table(results, qos, table), ref["placement"], curve_frame,
        qos, notes), table)
    # PIM cores rarely meet the knee of arch1's curve, where every placement's max load is
    # 0 and the claims compare 0 with 0: Fig. 3, Table III and the claims are made at
    # Table II's targets too.
    placement_table2, table2 = pd.DataFrame(), pd.DataFrame()
    checks = claims(table, placement).assign(qos=qos_how)
    if qos_how != "table2" and len(curve_frame):
        qos2 = qos_targets(curve_frame, "table2")
        said: list[str] = []
        table2 = normalised(_with_reference("table_iii", table_iii(first_touch, qos2),
                                            ref["table_iii"], curve_frame, qos2, said))
        # The reference's placement cells made before it kept samples (arch9 imgdnn) are
        # judged again at Table II's QoS from their curves, as Table III's are.
        placement_table2 = placement_normalised(_with_reference(
            "placement", placement_table(results, qos2, table2), ref["placement"],
            curve_frame, qos2, said), table2)
        if notes is not None:
            notes.extend(f"at Table II's QoS: {line}" for line in said)
        checks = pd.concat([checks, claims(table2, placement_table2).assign(qos="table2")],
                           ignore_index=True)
    points = with_carried("points", points, ref["points"])
    ranks = rank_correlations(table)
    valid = with_carried("validation", validation(first_touch, qos), ref["validation"])
    # A cell this study made again replaces the reference's rows of it, with rows or none.
    made = pd.DataFrame([{"arch": r.cell.preset, "app": r.cell.service,
                          "placement": r.cell.placement, "dynamic": r.cell.dynamic}
                         for r in results if not r.carried])
    types = with_carried("page_types", page_types(results, notes),
                         carried("page_types", made, ref["page_types"]))
    queues = with_carried("memory", memory_queues(results, notes),
                          carried("memory", made, ref["memory"]))
    tables = {"points": points, "curves": curve_frame, "qos": qos, "table_iii": table,
              "placement": placement, "placement_table2": placement_table2,
              "table_iii_table2": table2, "page_types": types, "memory": queues,
              "claims": checks, "spearman": ranks,
              "validation": valid, "samples": samples_table(results),
              "paper_table_iii": paper_table_iii()}
    for name, frame in tables.items():
        atomic_write_text(out / "tables" / f"{name}.csv", frame.to_csv(index=False))
    drawn = []
    if len(table):
        ft_points = points[points["placement"] == "ft"] if "placement" in points else points
        if "dynamic" in ft_points:
            ft_points = ft_points[ft_points["dynamic"].fillna("none") == "none"]
        figures.save_figure(_fig2(curve_frame, ft_points, table, qos,
                                  span_curves=qos_how != "table2"),
                            out / "figures" / "fig2")
        figures.save_figure(_table_figure(table), out / "figures" / "table_iii")
        drawn = ["fig2", "table_iii"]
    if len(table2):
        figures.save_figure(_table_figure(table2), out / "figures" / "table_iii-table2")
        drawn.append("table_iii-table2")
    if len(placement.dropna(subset=["normalized_max_load"]) if len(placement) else placement):
        figures.save_figure(figures.max_load_bars(
            placement, group="policy", ylabel=_fig3_ylabel(placement),
            title=_fig3_title(placement, "Table II's QoS" if qos_how == "table2"
                              else "the knee QoS")),
            out / "figures" / "fig3")
        drawn.append("fig3")
    if qos_how != "table2" and len(placement_table2.dropna(subset=["normalized_max_load"])
                                   if len(placement_table2) else placement_table2):
        figures.save_figure(figures.max_load_bars(
            placement_table2, group="policy", ylabel=_fig3_ylabel(placement_table2),
            title=_fig3_title(placement_table2, "Table II's QoS")),
            out / "figures" / "fig3-table2")
        drawn.append("fig3-table2")
    if len(types):
        figures.save_figure(_page_type_figure(types), out / "figures" / "fig4")
        drawn.append("fig4")
    spanning = _spanning(queues)
    if len(spanning):
        figures.save_figure(figures.memory_queue_bars(spanning), out / "figures" / "fig3-memory")
        drawn.append("fig3-memory")
    index = out / "index.html"
    atomic_write_text(index, _html(study, tables, drawn))
    if reference is not None:
        from .reference import REFERENCE_TABLES

        (reference / "figures").mkdir(parents=True, exist_ok=True)
        for name in REFERENCE_TABLES:
            atomic_write_text(reference / f"{name}.csv", tables[name].to_csv(index=False))
        for stem in drawn:
            shutil.copyfile(out / "figures" / f"{stem}.png",
                            reference / "figures" / f"{stem}.png")
        from .reference_summary import write_summary

        write_summary(reference)  # the README's tables, from the CSVs just written
    if screenshot:
        from .screenshot import screenshot as shoot

        shoot(index, out / "screenshot.png")
    return index


def _html(study: StudySpec, tables: dict[str, pd.DataFrame], drawn: list[str]) -> str:
    import html

    parts = [f"<html><head><meta charset='utf-8'><title>{html.escape(study.name)}</title>"
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
             "font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}</style></head><body>",
             f"<h1>Characterisation: {html.escape(study.name)}</h1>",
             f"<p>{html.escape(study.description)}. p99 curves predicted by an M/G/k queue "
             "over each cell's measured service times (analysis/README.md); QoS per service "
             "is the knee of its arch1 curve.</p>"]
    captions = {"fig2": "Fig. 2: p99 against load (lines: model; squares: measured runs, "
                        "diamonds: max-load search probes, a cross: never settled, "
                        "with 95 % p99 intervals; dashed: QoS; dotted: max load)",
                "table_iii": "Table III: tail latency / QoS at 10 % load, and max load "
                             "normalised to arch1",
                "table_iii-table2": "Table III at Table II's QoS targets (qos: "
                                    "table2_qos_ns), where the knee leaves PIM cells at 0",
                "fig3": "Fig. 3: max load under each static placement on arch9, alone "
                        "and with migration (+mig) or replication (+rep), normalised to "
                        "arch8 (every access local)",
                "fig3-table2": "Fig. 3 at Table II's QoS targets, where no placement "
                               "meets the knee QoS",
                "fig3-memory": "Why Fig. 3's placements differ: each stack's read "
                               "bandwidth and a read's mean wait in its memory controller's "
                               "queue, over the detailed part of each sampled run",
                "fig4": "Fig. 4: memory accesses by page type on the hottest frames the "
                        "page-access counters returned at the end of each sampled run "
                        "(cells whose board had the counters); counted past the caches"}
    for stem in drawn:
        parts.append(f"<h2>{captions[stem]}</h2><img src='figures/{stem}.png' "
                     "style='max-width:100%'>")
    for name in ("claims", "table_iii", "table_iii_table2", "placement", "placement_table2",
                 "page_types", "memory", "validation", "spearman", "qos", "points"):
        frame = tables[name]
        parts.append(f"<h2>{name.replace('_', ' ')}</h2>")
        parts.append(frame.to_html(index=False, float_format=lambda v: f"{v:.4g}",
                                   na_rep="-") if len(frame) else "<p>none yet</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


__all__ = ["claims", "curves", "memory_queues", "page_types", "placement_table", "policy_name",
           "predicted_max_load", "qos_targets", "rank_correlations", "read_study",
           "table_iii", "validation", "write_study_report"]
