"""The characterisation study (the paper's section III): each service alone on each
Table III architecture, as one small campaign per cell.

A study spec (``studies/*.toml``) names the presets, the services and how each cell is
sampled; ``cell_specs`` turns it into one ordinary campaign spec per (preset, service),
written into the study folder (``<study>/specs/<preset>-<service>.toml``) and run in
``<study>/cells/<preset>-<service>/``, so every campaign tool works on a cell: ``plan``,
``status``, ``resume``, and ``maxload`` (the direct max-load measurements that validate the
model, analysis/README.md).  A cell's campaign is:

- the service alone on every core of the preset, one worker per core (the paper's III-B2:
  "the same number of application threads as the number of available cores"), no
  manager (plain Linux scheduling), first-touch placement;
- one sampled point: open-loop Poisson arrivals at ``utilisation`` of the preset's
  estimated capacity (its cores over the service's estimated service time on their core
  type), ``requests`` measured requests after ``warmup_requests``, its service having
  served ``prewarm_requests`` before its app checkpoint;
- the study's ``[cell]`` tables (gem5, limits, early_stop, executor) as they are.

With ``placements`` (the paper's Fig. 3), a preset whose cores sit on two or more memory
nodes (arch9) also gets a cell per further static placement (``<preset>-<service>-cc``):
the same service and load under CC or IL instead of first touch. On a one-node preset
every placement is the same, so it gets first touch alone. With ``dynamic`` (Fig. 3's
yellow and green bars), each of those placements also gets a cell with page migration
based on locality (``-mig``: the agent moves hot private pages to the node of the one CPU
that touches them, from the board's page-access counters) and, for services that keep
shared read-only data, one with replication (``-rep``). Those cells run the agent with the
``default`` manager (OS scheduling; only memory managed) and a warm-up of 20 agent
intervals (``dynamic_warmup`` times the study's warm-up over 20, at least 5 ms each) so
that the pages have moved when the measured requests start, and turn the board's
counters on (a separate boot).

The sampled point gives the service's per-request service times on that architecture;
the analysis (pimcloud.analysis.characterisation) predicts its whole p99-vs-RPS curve
from them and checks the prediction against the measured cells.

A cell's direct max-load search (``study validate``) is a campaign of its own in
``<study>/searches/<cell>/``: the cell's spec with a longer measured window, at least
``SEARCH_WINDOW_QOS`` QoS targets, so that a load past capacity shows (a load 10 % past
it queues a whole QoS target of backlog in ten), and the verdict is taken on each probe's
steady state (workloads/steady.py).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.topology import TopologyError, load_topology, numa_nodes
from pimcloud.units import UnitError, parse_size, parse_time_ps
from pimcloud.workloads.services import SERVICES

from ..checked import CheckedTable, InputError
from .maxload import SEARCH_WINDOW_QOS
from .spec import PLACEMENTS, parse_host_seconds, read_named_toml, resolve_named_toml

STUDY_DIR = Path(__file__).resolve().parent / "studies"
CELL_TABLES = ("gem5", "limits", "early_stop", "executor", "qemu")
CORE_TYPES = ("brawny", "wimpy")
# Dynamic placement beside the static ones (Fig. 3) and each cell's name suffix.
DYNAMIC_SUFFIX = {"migration": "mig", "replication": "rep"}
SEARCH_SUFFIX = "-maxload"  # a search's campaign and spec: <cell>-maxload


class StudyError(InputError):
    """A mistake in a study spec."""


class _Table(CheckedTable):
    error_type = StudyError


@dataclass(frozen=True)
class StudyService:
    """What the study knows of one service before measuring it."""

    name: str
    service_s: dict[str, float]  # core type -> estimated service time of one request
    qos_ns: float  # the target used for early stop and as Table II's QoS
    options: dict[str, str] = field(default_factory=dict)  # harness --opt KEY=VALUE
    host_time: str = ""  # its cells' [limits] host_time in place of [cell.limits]'
    memory: str = ""  # its cells' [limits] memory in place of [cell.limits]'
    requests: int | None = None  # its measured requests, when not the study's
    prewarm_requests: int | None = None  # its prewarm before the app checkpoint, ditto
    # core type -> estimated time a request holds the service's one serial section (oltp's
    # SQLite writer): that section, not the cores, may bound the capacity. Empty: none.
    serial_s: dict[str, float] = field(default_factory=dict)

    def capacity_rps(self, clusters: Any) -> float:
        """The estimated capacity on a preset's core clusters: every core serving, or the
        serial section held back to back on the cores of the biggest cluster's type."""
        workers = sum(c.cores / self.service_s[_kind(c)] for c in clusters)
        if not self.serial_s:
            return workers
        biggest = max(clusters, key=lambda c: c.cores)
        return min(workers, 1 / self.serial_s[_kind(biggest)])


def _kind(cluster: Any) -> str:
    """A core cluster's type for the estimates (a cluster without one: host cores)."""
    return cluster.core_type.name if cluster.core_type else "brawny"


@dataclass(frozen=True)
class Cell:
    """One (preset, service) of the study and the campaign that measures it."""

    preset: str
    service: str
    cores: int
    core_type: str  # of the most cores, for the capacity estimate
    sample_rps: float
    placement: str = "ft"  # the static placement (Fig. 3); first touch for Table III
    dynamic: str = "none"  # migration or replication beside it (Fig. 3), or none

    @property
    def name(self) -> str:
        suffix = "" if self.placement == "ft" else f"-{self.placement}"
        if self.dynamic != "none":
            suffix += f"-{self.placement}" * (self.placement == "ft")
            suffix += f"-{DYNAMIC_SUFFIX[self.dynamic]}"
        return f"{self.preset}-{self.service}{suffix}"

    @property
    def counters(self) -> bool:
        """Its board has the page-access counters (migration reads them): a boot of its
        own, apart from the preset's other cells."""
        return self.dynamic == "migration"


@dataclass(frozen=True)
class StudySpec:
    source: str
    name: str
    description: str
    backend: str
    kernel: str  # "project" or an absolute path, as in a campaign spec's [system]
    image: str
    presets: tuple[str, ...]
    services: dict[str, StudyService]
    utilisation: float  # of the estimated capacity, at the sampled point
    requests: int  # measured requests at the sampled point
    warmup_requests: int
    validate: tuple[tuple[str, str], ...]  # (preset, service) cells measured directly
    cell_tables: dict[str, Any]  # [cell.*] copied into each cell's campaign spec
    placements: tuple[str, ...] = ("ft",)  # on presets with cores on several nodes
    dynamic: tuple[str, ...] = ()  # beside each of those placements (DYNAMIC_SUFFIX)
    dynamic_warmup: float = 3.0  # a dynamic cell's warm-up, times the study's
    # Requests each cell's service serves before its app checkpoint (harness --prewarm),
    # so that a restored run's start is cache-cold only (its pages, heap arenas and engine
    # handles were made on the atomic cores).
    prewarm_requests: int = 0
    # Cell name -> the seed of its arrivals and requests, where not 1: a cell whose run
    # with seed 1 gem5 cannot finish (a simulator fault, documented beside the entry).
    seeds: dict[str, int] = field(default_factory=dict)
    # Cell name -> its sampled load (rps), where the estimate's overloads it (a cell whose
    # sample never settled: the harness's one generator thread, say).
    sample_rps: dict[str, float] = field(default_factory=dict)

    def cells(self) -> list[Cell]:
        """Every cell, presets in the spec's order (the first ones are done first)."""
        cells = []
        for preset in self.presets:
            topology = load_topology(preset)
            clusters = topology.clusters
            for service in self.services.values():
                kind = _kind(max(clusters, key=lambda c: c.cores))
                cores = sum(c.cores for c in clusters)
                rps = float(f"{self.utilisation * service.capacity_rps(clusters):.3g}")
                placements = self.placements_on(preset)
                for placement in placements:
                    cells.append(Cell(preset, service.name, cores, kind, rps, placement))
                for placement in placements if _nodes_with_cores(preset) > 1 else ():
                    for dynamic in self.dynamic:
                        if dynamic == "replication" and not SERVICES[service.name].replicates:
                            continue
                        cells.append(Cell(preset, service.name, cores, kind, rps, placement,
                                          dynamic))
        return [dataclasses.replace(cell, sample_rps=self.sample_rps[cell.name])
                if cell.name in self.sample_rps else cell for cell in cells]

    def placements_on(self, preset: str) -> tuple[str, ...]:
        """First touch, and the other placements where cores sit on several nodes."""
        return ("ft", *(p for p in self.placements if p != "ft")) \
            if _nodes_with_cores(preset) > 1 else ("ft",)

    def cell(self, preset: str, service: str) -> Cell:
        for cell in self.cells():
            if (cell.preset, cell.service, cell.placement, cell.dynamic) == (
                    preset, service, "ft", "none"):
                return cell
        raise StudyError(self.source, "validate", f"{preset}/{service}",
                         "not a cell of this study: name a listed preset and service")

    def requests_of(self, service: str) -> int:
        """Measured requests at a cell's sampled point: the service's, else the study's."""
        return self.services[service].requests or self.requests

    def prewarm_of(self, service: str) -> int:
        """Requests served before a cell's app checkpoint: the service's, else the
        study's."""
        own = self.services[service].prewarm_requests
        return self.prewarm_requests if own is None else own

    def cell_spec(self, cell: Cell) -> dict[str, Any]:
        """The campaign spec (as a TOML document) that measures ``cell``."""
        service = self.services[cell.service]
        warmup_s = self.warmup_requests / cell.sample_rps
        interval_s = 0.0
        if cell.dynamic != "none":
            interval_s = max(warmup_s * self.dynamic_warmup / DYNAMIC_WARMUP_INTERVALS,
                             DYNAMIC_MIN_INTERVAL_S)
            warmup_s = interval_s * DYNAMIC_WARMUP_INTERVALS
        measured_s = self.requests_of(cell.service) / cell.sample_rps
        app: dict[str, Any] = {
            "qos": f"{service.qos_ns / 1e6:g}ms",
            # 100 % of the estimated capacity: where a max-load search starts.
            "max_rps": float(f"{cell.sample_rps / self.utilisation:.3g}"),
            "threads": cell.cores,
        }
        if self.prewarm_of(cell.service):
            app["prewarm"] = self.prewarm_of(cell.service)
        if service.options:
            app["options"] = dict(service.options)
        spec: dict[str, Any] = {
            "name": f"{self.name}-{cell.name}",
            "description": f"{cell.service} alone on {cell.preset}, {cell.cores} workers "
                           f"(study {self.name})",
            "system": {"topology": cell.preset, "kernel": self.kernel, "image": self.image,
                       "backend": self.backend},
            "apps": {cell.service: app},
            "scenario": {"apps": [cell.service], "manager": "none",
                         "placement": cell.placement, "seed": self.seeds.get(cell.name, 1),
                         "threads": cell.cores},
            "axes": {"apps": [[cell.service]], "rps": [cell.sample_rps]},
            "length": {"warmup": _time_text(warmup_s), "measured": _time_text(measured_s)},
        }
        spec.update(self.cell_tables)
        own_limits = {key: value for key, value in (("host_time", service.host_time),
                                                    ("memory", service.memory)) if value}
        if own_limits:
            spec["limits"] = {**spec.get("limits", {}), **own_limits}
        if cell.dynamic != "none":
            # The agent runs (the default manager: every core, OS scheduling) with its
            # starting figures, so that it profiles nothing, and twenty intervals in the
            # warm-up: the pages move before the measured requests. Its own work (on a
            # core that also serves) is part of what the bar shows.
            per_core = {kind: 1 / service.service_s[kind] for kind in CORE_TYPES}
            app["max_rps_host_core"] = float(f"{per_core['brawny']:.3g}")
            app["max_rps_pim_core"] = float(f"{per_core['wimpy']:.3g}")
            spec["scenario"].update(manager="default", dynamic=cell.dynamic,
                                    interval=_time_text(interval_s))
            if cell.counters:
                spec["gem5"] = {**spec.get("gem5", {}), "counters": True}
        return spec

    def search_spec(self, cell: Cell, start_rps: float,
                    qos_ns: float | None = None) -> dict[str, Any]:
        """The campaign spec of a direct max-load search of ``cell`` from ``start_rps``
        under ``qos_ns`` (default: the service's QoS in the study): the cell's, with a
        measured window of at least ``SEARCH_WINDOW_QOS`` QoS targets (and at least the
        study's ``requests`` at the start load)."""
        spec = self.cell_spec(cell)
        if qos_ns is None:
            qos_ns = self.services[cell.service].qos_ns
        spec["apps"][cell.service]["qos"] = f"{round(qos_ns)}ns"  # a knee, not rounded
        measured_s = max(SEARCH_WINDOW_QOS * qos_ns * 1e-9,
                         self.requests_of(cell.service) / start_rps)
        spec["name"] += SEARCH_SUFFIX
        spec["description"] += f"; its max-load search from {start_rps:g} rps"
        # Whole microseconds, up: a window rounded below 10 QoS targets would be warned of.
        spec["length"]["measured"] = f"{math.ceil(measured_s * 1e6)}us"
        spec["axes"]["rps"] = [start_rps]
        return spec


def _nodes_with_cores(preset: str) -> int:
    """Memory nodes with cores of their own: where placement and migration can differ."""
    return len({n.node_id for n in numa_nodes(load_topology(preset)) if n.cpus and n.capacity})


# A dynamic cell's agent interval: at least this long (the agent and the harness take
# 1 ms at the least), and its warm-up this many intervals: the agent resets the counters
# in the first and asks them every tenth (its hotness scan), so its moves are made once
# or twice before the measured requests.
DYNAMIC_MIN_INTERVAL_S = 5e-3
DYNAMIC_WARMUP_INTERVALS = 20


def _time_text(seconds: float) -> str:
    """Seconds as a spec time with 3 significant digits, in microseconds."""
    return f"{round(float(f'{seconds * 1e6:.3g}'))}us"


def resolve_study_path(name_or_path: str | Path) -> Path:
    """A study spec, or the name of one in runs/studies/."""
    return resolve_named_toml(name_or_path, STUDY_DIR, StudyError)


def load_study(name_or_path: str | Path) -> StudySpec:
    path, raw = read_named_toml(name_or_path, STUDY_DIR, StudyError)
    return parse_study(raw, source=str(path), default_name=path.stem)


def parse_study(raw: dict[str, Any], source: str = "<memory>",
                default_name: str = "study", inputs_must_exist: bool = True) -> StudySpec:
    """``inputs_must_exist=False`` reads a study made on a kernel or image since removed
    (its status, its report)."""
    top = _Table(source, "", raw)
    name = top.string("name", default_name)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise top.error("name", name, "use letters, digits, '.', '_' and '-' (a folder name)")
    description = top.string("description", "")
    backend = top.choice("backend", ("auto", "gem5", "qemu"), "gem5")
    base = Path(source).resolve().parent if source != "<memory>" else Path.cwd()
    inputs = {}
    for key in ("kernel", "image"):
        value = top.string(key, "project")
        if value != "project":
            path = (base / Path(value).expanduser()).resolve()
            if not path.is_file() and inputs_must_exist:
                raise top.error(key, value, 'no such file; give a path or "project" (the '
                                "project's own build)")
            value = str(path)
        inputs[key] = value
    presets = top.strings("presets")
    if not presets:
        raise top.error("presets", [], 'list at least one preset, e.g. ["arch1"]')
    for preset in presets:
        try:
            load_topology(preset)
        except TopologyError as error:
            raise top.error("presets", preset, str(error)) from None
    utilisation = top.number("utilisation", 0.5) or 0.0
    if not 0 < utilisation < 1:
        raise top.error("utilisation", utilisation, "must be between 0 and 1 (e.g. 0.5)")
    requests = top.integer("requests", 300, minimum=100,
                           why=" (a p99 needs a few hundred requests)")
    warmup_requests = top.integer("warmup_requests", 30)
    prewarm_requests = top.integer("prewarm_requests", 0)
    services = _parse_services(top.table("service"))
    listed = top.strings("services", tuple(services))
    unknown = [s for s in listed if s not in services]
    if unknown:
        raise top.error("services", unknown[0], f"add a [service.{unknown[0]}] table with "
                        "its service_us estimates")
    services = {s: services[s] for s in listed}
    cell = top.table("cell")
    cell_tables: dict[str, Any] = {}
    for key in CELL_TABLES:
        value = cell.raw(key)
        if value is not None:
            cell_tables[key] = value
    cell.finish()
    placements = top.strings("placements", ("ft",))
    for key, values in (("placements", placements), ("dynamic", top.strings("dynamic", ()))):
        if len(set(values)) != len(values):
            raise top.error(key, list(values), "each value once (two cells would share a "
                            "name and a folder)")
    for placement in placements:
        if placement not in PLACEMENTS:
            raise top.error("placements", placement, "choose among " + ", ".join(PLACEMENTS))
    dynamic = top.strings("dynamic", ())
    for kind in dynamic:
        if kind not in DYNAMIC_SUFFIX:
            raise top.error("dynamic", kind, "choose among " + ", ".join(DYNAMIC_SUFFIX))
    dynamic_warmup = top.number("dynamic_warmup", 3.0) or 0.0
    if dynamic_warmup < 1:
        raise top.error("dynamic_warmup", dynamic_warmup, "a factor >= 1 on the warm-up")
    validate = []
    for text in top.strings("validate"):
        preset, _, service = text.partition("/")
        if preset not in presets or service not in services:
            raise top.error("validate", text, 'name cells as "<preset>/<service>" from '
                            "presets and services")
        validate.append((preset, service))
    seeds = top.table("seeds", {})
    seed_of = {name: seeds.integer(name, 1, minimum=1) for name in seeds.data}
    seeds.finish()
    loads = top.table("sample_rps", {})
    rps_of = {name: float(loads.number(name, 1.0) or 0.0) for name in loads.data}
    for cell_name, rps in rps_of.items():
        if rps <= 0:
            raise loads.error(cell_name, rps, "a sampled load in requests a second, > 0")
    loads.finish()
    top.finish()
    study = StudySpec(source, name, description, backend, inputs["kernel"], inputs["image"],
                      presets, services, utilisation,
                      requests, warmup_requests, tuple(validate), cell_tables,
                      tuple(placements), tuple(dynamic), dynamic_warmup, prewarm_requests,
                      seed_of, rps_of)
    cell_names = {cell.name for cell in study.cells()} if seed_of or rps_of else set()
    for table, named in ((seeds, seed_of), (loads, rps_of)):
        for cell_name in named:
            if cell_name not in cell_names:
                raise table.error(cell_name, named[cell_name], "not a cell of this study; "
                                  "name one as <preset>-<service>[-<placement>], e.g. "
                                  "arch8-oltp")
    return study


def _parse_services(table: _Table) -> dict[str, StudyService]:
    services = {}
    for name in table.data:
        if name not in SERVICES:
            raise table.error(name, name, f"unknown service; choose from "
                              f"{', '.join(sorted(SERVICES))}")
        t = table.table(name)
        assert isinstance(t, _Table)
        service_s = _per_core_type(t, "service_us", "one request's estimated service time")
        serial_s = (_per_core_type(t, "serial_us", "the estimated time one request holds the "
                                   "service's serial section") if t.raw("serial_us") is not None
                    else {})
        qos_text = t.raw("qos")
        qos_ns = float(SERVICES[name].qos_ns)
        if qos_text is not None:
            try:
                qos_ns = parse_time_ps(qos_text) / 1e3
            except (UnitError, ValueError) as error:
                raise t.error("qos", qos_text, str(error)) from None
        options = t.raw("options", {})
        if not isinstance(options, dict) or not all(isinstance(v, str)
                                                    for v in options.values()):
            raise t.error("options", options, 'must be a table of strings, e.g. '
                          '{ keys = "20000" }')
        # Its cells' own limits ("": [cell.limits]'), checked here, parsed by the cells.
        limits = {key: t.raw(key, "") for key in ("host_time", "memory")}
        for key, parse in (("host_time", parse_host_seconds), ("memory", parse_size)):
            try:
                if limits[key]:
                    parse(limits[key])
            except ValueError as error:  # UnitError is one
                raise t.error(key, limits[key], str(error)) from None
        requests = t.raw("requests")
        if requests is not None:
            requests = t.integer("requests", 300, minimum=100,
                                 why=" (a p99 needs a few hundred requests)")
        prewarm = t.raw("prewarm_requests")
        if prewarm is not None:
            prewarm = t.integer("prewarm_requests", 0)
        t.finish()
        services[name] = StudyService(name, service_s, qos_ns, dict(options),
                                      str(limits["host_time"]), str(limits["memory"]),
                                      requests, prewarm, serial_s)
    return services


def _per_core_type(service: _Table, key: str, what: str) -> dict[str, float]:
    """A service's ``key = { brawny = US, wimpy = US }`` in seconds, each positive."""
    estimates = service.table(key)
    seconds = {}
    for kind in CORE_TYPES:
        value = estimates.number(kind, None)
        if not value or value < 0:
            raise estimates.error(kind, value if value is not None else "(missing)",
                                  f"give {what} in us on a {kind} core (it sets the sampled "
                                  "load)")
        seconds[kind] = value * 1e-6
    estimates.finish()
    return seconds


# ----------------------------------------------------------------------------- TOML out

def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, int) or math.isfinite(value) else "nan"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")


def to_toml(document: dict[str, Any]) -> str:
    """A spec document as TOML: scalars first, then one [table] per sub-table (tables of
    tables one level down, as campaign specs have them: [apps.kvstore])."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in document.items() if not isinstance(v, dict)]

    def table(prefix: str, body: dict[str, Any]) -> Iterator[str]:
        yield f"\n[{prefix}]"
        for key, value in body.items():  # a table inside one is written inline
            yield f"{key} = {_toml_value(value)}"

    for key, value in document.items():
        if not isinstance(value, dict):
            continue
        if key == "apps":  # [apps.NAME] tables
            for app, body in value.items():
                lines.extend(table(f"apps.{app}", body))
        else:
            lines.extend(table(key, value))
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the folder

@dataclass(frozen=True)
class StudyDir:
    root: Path

    def spec_path(self, cell: Cell) -> Path:
        return self.root / "specs" / f"{cell.name}.toml"

    def cell_dir(self, cell: Cell) -> Path:
        return self.root / "cells" / cell.name

    def search_dir(self, cell: Cell) -> Path:
        """The campaign of the cell's direct max-load search (``study validate``)."""
        return self.root / "searches" / cell.name

    def search_spec_path(self, cell: Cell) -> Path:
        return self.root / "specs" / f"{cell.name}{SEARCH_SUFFIX}.toml"

    def write_specs(self, study: StudySpec) -> list[tuple[Cell, Path]]:
        """Every cell's campaign spec, written when new or changed (atomically)."""
        written = []
        for cell in study.cells():
            path = self.spec_path(cell)
            text = (f"# Written by `pimcloud study` from {study.source}; edit the study, "
                    "not this file.\n" + to_toml(study.cell_spec(cell)))
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(path, text)
            written.append((cell, path))
        return written


def each_cell(study: StudySpec, root: Path, log: Callable[[str], None] = print
              ) -> Iterator[tuple[Cell, Path, Path]]:
    """(cell, its spec file, its campaign folder), writing the specs first."""
    folder = StudyDir(root)
    for cell, path in folder.write_specs(study):
        yield cell, path, folder.cell_dir(cell)
