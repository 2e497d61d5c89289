"""Campaign specs: one TOML file -> a validated ``CampaignSpec`` -> the list of runs.

A spec names the system (topology, kernel, image, backend), a scenario template (the LC
services, their load, the resource manager, the placement policy, seeds, best-effort
jobs), the axes to sweep, the run length, gem5 options, per-run limits and the executor.
Every mistake is a ``SpecError`` naming the file, the field, the value and the fix, the
same way the topology model reports its own (pimcloud.topology.parse).

Runs are the cartesian product of the axes, in the order the axes are written; each run
is the template with the axis values put in, and its id is made from those values.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pimcloud.topology import TopologyError, load_topology
from pimcloud.units import UnitError, parse_size, parse_time_ps
from pimcloud.workloads.besteffort import JOBS as BE_JOBS
from pimcloud.workloads.services import SERVICES

from ..checked import MISSING, CheckedTable, InputError

CAMPAIGN_DIR = Path(__file__).resolve().parent / "campaigns"
# The resource managers the agent registers (guest/pimcloud-agent/policy; the agent's
# `policies --json` is the source, runs/tests/test_spec.py compares the two), and "none":
# no agent at all (plain Linux, as "default" but without the agent's log).
MANAGERS = ("pimcloud", "pimcloud-cores", "pimcloud-preference", "default", "ams",
            "octopus-man", "interference", "balm", "none")
# Managers that read the board's counters (seed 003's latency estimate, BALM's throttle).
COUNTER_MANAGERS = ("interference", "balm")
PLACEMENTS = ("ft", "cc", "il")  # first touch, concentrated, interleaved (agent config)
# Seed 004's allocation policies on a server with a slow capacity tier, node 0's DDR
# (`tiered`) or a CPU-less far-memory node (`tiered-far-mini`): the stacks first / only,
# the slow tier first / only.
TIERED_PLACEMENTS = ("fast-preferred", "fast-always", "slow-preferred", "slow-always")
# Dynamic tiering beside them: none; the agent's promotion of hot slow pages and
# (fast-always) demotion of cold ones; or seed 002's HeteroOS: its LRU eviction of
# inactive heap and page-cache pages from a stack below its watermark, alone or
# coordinated with that promotion. TIERING_PAGES pages an interval each way at most.
TIERING = ("none", "agent", "heteroos-lru", "heteroos-coordinated")
# The agent config's placement.tiering for each (guest/pimcloud-agent, TieringMode).
TIERING_MODES = {"agent": "promote", "heteroos-lru": "heteroos-lru",
                 "heteroos-coordinated": "heteroos-coordinated"}
TIERING_PAGES = 2048  # 8 MiB an interval: 80 MB/s at the paper's 100 ms
# Dynamic data placement beside a static one (the paper's III-D2, Fig. 3's bars): the
# agent's page migration based on locality (hot private pages to the node of the one CPU
# that touches them, from the board's page-access counters; Verghese et al., ASPLOS 1996)
# and replication of shared read-only data on every node of the app's cores (services
# that keep such data: imgdnn). Needs a manager that runs the agent ("default" for OS
# scheduling with only memory managed).
DYNAMIC = ("none", "migration", "replication", "migration+replication")
BACKENDS = ("auto", "gem5", "qemu")
EXECUTORS = ("local", "slurm")
# What the scenario template holds; each of these may also be an axis.
SCENARIO_KEYS = ("apps", "load", "rps", "manager", "placement", "seed", "be", "threads",
                 "hotness", "hotness_shadow", "tiering", "counting", "dynamic", "wait_placed")
# Where the agent reads page hotness: idle page tracking, or the gem5 board's page-access
# counters (guest/driver; needs [gem5] counters = true, else it falls back to idle).
HOTNESS_SOURCES = ("idle", "hw")
# What can happen to a run once its services have started (scenario.events): an app
# arrives (starts its requests) or exits (ends its measured region) at a time, is
# killed (SIGKILL), or a memory hog fills a stack until little is free.
EVENT_KINDS = ("arrive", "exit", "kill", "fill")
DEFAULT_INTERVAL_S = 0.1  # the paper's monitoring interval (section IV-E)
DEFAULT_PROFILE_S = 0.5  # the paper's profiling time per core type (section IV-D1)


@dataclass(frozen=True)
class ControlLoops:
    """The manager's control loops, with the paper's values by default. Windows and
    waits are counted in monitoring intervals, so a shorter interval shortens them in
    time too; a shorter interval also means fewer requests behind each interval's p99
    (the agent's slack is a median over ``slack_intervals`` of them)."""

    scale: float = 1.0  # what interval and profile were scaled by (1: the paper's)
    profile_s: float = DEFAULT_PROFILE_S  # saturation per core type, per unprofiled app
    slack_intervals: int = 5  # the slack window: median p99 over this many intervals
    min_intervals: int = 3  # intervals in the window before a new decision
    wait_cores: tuple[int, int] = (2, 3)  # intervals to settle after a core change
    wait_pages: tuple[int, int] = (3, 8)  # ... after page moves

    def agent_config(self) -> dict[str, Any]:
        """The agent config's keys for these (guest/pimcloud-agent/config)."""
        return {"profile_ms": self.profile_s * 1e3,
                "slack": {"intervals": self.slack_intervals,
                          "min_intervals": self.min_intervals},
                "stability": {"cores_intervals": list(self.wait_cores),
                              "pages_intervals": list(self.wait_pages)}}
# control_scale: the paper's monitoring interval and profiling time times the value.
AXIS_KEYS = (*SCENARIO_KEYS, "topology", "control_scale")
# variant: named sets of axis values taken together (a policy and its baselines, each a
# placement with its own tiering): variant = [{ name = "lru", placement = "...", ... }].
VARIANT_AXIS = "variant"
# options.<manager>.<key>: one of a policy's options as an axis (manager_options per run).
OPTION_AXIS = "options."
APP_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
HOST_TIME_UNITS = {"s": 1, "min": 60, "h": 3600, "d": 86400}


class SpecError(InputError):
    """An invalid campaign spec: names the file, the dotted field, the value and the fix."""


def _binary(table: CheckedTable, base_dir: Path | None) -> str | None:
    """``gem5.binary``: a path, relative to the spec's folder."""
    raw = table.raw("binary")
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise table.error("binary", raw, "give the path of a gem5 binary, e.g. "
                          '"/opt/gem5/build/X86/gem5.fast"')
    path = Path(raw).expanduser()
    return str(path if path.is_absolute() or base_dir is None else base_dir / path)


def _host_seconds(table: CheckedTable, key: str) -> float | None:
    """An optional host-time length ("30min", "2h") of ``table``."""
    raw = table.raw(key)
    if raw is None:
        return None
    try:
        return parse_host_seconds(raw)
    except UnitError as error:
        raise table.error(key, raw, str(error)) from None


def parse_host_seconds(text: object) -> float:
    """Host (wall-clock) seconds from "90s", "30min", "6h", "2d"."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]+)\s*", text) if isinstance(
        text, str) else None
    if not match or match.group(2) not in HOST_TIME_UNITS:
        raise UnitError('write a host time as a number and one of s, min, h, d, e.g. "6h"')
    return float(match.group(1)) * HOST_TIME_UNITS[match.group(2)]


# ----------------------------------------------------------------------------- the model

@dataclass(frozen=True)
class AppSpec:
    """What the campaign knows of one latency-critical service."""

    name: str
    max_rps: float | None = None  # max load under QoS, needed when loads are fractions
    qos_ns: float | None = None  # p99 target
    threads: int | None = None  # harness workers (default: the scenario's threads)
    options: dict[str, str] = field(default_factory=dict)  # harness --opt KEY=VALUE
    data: str | None = None  # the service's data set in the guest (harness --data)
    # Max RPS on one host core and on one PIM core (the manager's R = host / pim): given,
    # the manager skips profiling the app (which costs simulated time in gem5).
    max_rps_host_core: float | None = None
    max_rps_pim_core: float | None = None
    # The stack the app's memory prefers when it starts under CC (set_mempolicy before
    # exec); default: the run's apps in turn over the stacks, 1, 2, ..., M, 1, ...
    resident: int | None = None
    # Requests the service serves before it reports ready (harness --prewarm): in gem5 on
    # the atomic cores before the app checkpoint, so a restored run starts warm.
    prewarm: int = 0


@dataclass(frozen=True)
class ScenarioEvent:
    """Something done to a run at ``at_s`` simulated seconds after its services start."""

    at_s: float
    kind: str  # one of EVENT_KINDS
    app: str | None = None  # arrive, exit, kill
    stack: int | None = None  # fill: the stack (NUMA node) to fill
    free_bytes: int | None = None  # fill: what the hog leaves free on it


@dataclass(frozen=True)
class Scenario:
    """One run's guest-side content: which services, how loaded, managed how."""

    apps: tuple[str, ...]
    load: float | None  # fraction of each app's max load ...
    rps: float | dict[str, float] | None  # ... or offered requests per second
    manager: str
    placement: str
    seed: int
    be: tuple[str, ...]
    threads: int
    events: tuple[ScenarioEvent, ...] = ()
    interval_s: float = DEFAULT_INTERVAL_S  # the manager's and the harness's interval
    control: ControlLoops = ControlLoops()  # the manager's windows, waits, profiling
    # Per manager, the options its policy reads (agent config "options"; the agent
    # validates them and `pimcloud-agent policies --json` lists them).
    manager_options: tuple[tuple[str, str], ...] = ()  # (manager, options as JSON)
    hotness: str = "idle"  # the agent's page-hotness source (HOTNESS_SOURCES)
    # The other source kept beside it: each migration's decision also says which pages it
    # would have chosen (idle scans beside the counters; the counters beside idle).
    hotness_shadow: bool = False
    # The requests start once the manager has made its initial allocation (the agent's
    # placed file: cgroups, CPUs, the CC gather done), not beside it: in gem5 that work
    # then runs on the fast-forward cores, outside the measured part. False (runs made
    # before it): the start signal goes with the manager's start, and its first interval
    # (tens of ms of cgroup moves in gem5) falls inside the measured requests.
    wait_placed: bool = False
    tiering: str = "none"  # dynamic tiering under a tiered placement (TIERING)
    tiering_pages: int = TIERING_PAGES  # at most this many pages an interval each way
    dynamic: str = "none"  # dynamic placement beside a static one (DYNAMIC)
    reserve_bytes: int | None = None  # free memory the agent never fills (None: its 64 MiB)
    # With [gem5] counters: false keeps the device (the same checkpoints and guest) but
    # feeds it nothing, no counting and no throttle: what counting costs, same run otherwise.
    counting: bool = True

    def options_of(self, manager: str) -> dict[str, Any]:
        """The options the scenario gives ``manager``'s policy ({} when none)."""
        for name, text in self.manager_options:
            if name == manager:
                return dict(json.loads(text))
        return {}

    def event_of(self, app: str, kind: str) -> ScenarioEvent | None:
        """The run's ``kind`` event for ``app`` (arrive, exit, kill), if any."""
        return next((e for e in self.events if e.app == app and e.kind == kind), None)

    def rps_of(self, app: AppSpec) -> float:
        """The offered load of ``app`` in requests per second."""
        if self.rps is not None:
            return float(self.rps[app.name] if isinstance(self.rps, dict) else self.rps)
        assert self.load is not None and app.max_rps is not None
        return self.load * app.max_rps


@dataclass(frozen=True)
class Length:
    warmup_s: float  # simulated seconds before the measured region
    measured_s: float  # simulated seconds measured


@dataclass(frozen=True)
class Gem5Options:
    stats_period: str | None = None  # pim_fs.py --stats-period (e.g. "100ms")
    mem_divisor: int = 1
    boot_cpu: str = "atomic"
    harness_hooks: bool = True  # harness --gem5: work items and a stats dump per interval
    # Restore on the atomic cores; switch to the detailed ones when every service has
    # loaded its data (harness --ready-file/--start-file), so set-up costs atomic speed.
    fast_forward: bool = True
    # Launch and load the services once per app set (apps, their options and threads,
    # static placement) on the atomic cores and checkpoint there; every run of the set
    # restores that app checkpoint and brings only its own part (runs/guest_scenario.py).
    app_checkpoint: bool = True
    # Preemptible runs: a progress checkpoint every so many host seconds (None: none); a
    # run that is killed, preempted or timed out resumes from its latest (runs/progress.py).
    progress_every_s: float | None = None
    # The campaign's own gem5 (e.g. a gem5.fast of the same version); default $GEM5.
    binary: str | None = None
    limit_margin: float = 1.0  # simulated-time limit = (boot slack + length) x (1 + margin)
    extra_args: tuple[str, ...] = ()  # gem5's own options, before the script
    # The board's hardware counters (scons-extra PimCounters): page-access counters, miss
    # counters, bandwidth throttle. Part of the boot checkpoint's key: a checkpoint made
    # with them restores only with them.
    counters: bool = False


@dataclass(frozen=True)
class EarlyStopSpec:
    """End a load point's measured region once its p99 certainly misses QoS (and, with
    ``meet``, once it certainly meets it): the harness's rule, early_stop.h. A stopped
    point counts as a miss (or a meet) wherever loads are compared (max-load search)."""

    miss: bool = False
    meet: bool = False
    confidence: float = 0.99  # one-sided, of the Wilson bound on the late fraction
    min_requests: int = 100  # decided requests before any verdict

    def harness_args(self, qos_ns: float | None) -> tuple[str, ...]:
        if not (self.miss or self.meet) or qos_ns is None:
            return ()
        args = ["--early-stop-qos-ms", f"{qos_ns / 1e6:g}", "--early-stop-confidence",
                f"{self.confidence:g}", "--early-stop-min-requests", str(self.min_requests)]
        if self.meet:
            args.append("--early-stop-meet")
        return tuple(args)


@dataclass(frozen=True)
class QemuOptions:
    mem_divisor: int | None = None  # default: each node <= 1 GiB (pimcloud.guest.qemu)
    append: str = ""


@dataclass(frozen=True)
class Limits:
    host_time_s: float
    memory_bytes: int
    retries: int


@dataclass(frozen=True)
class ExecutorSpec:
    kind: str = "local"
    jobs: int = 0  # 0: from the machine's cores and memory
    partition: str | None = None
    account: str | None = None
    sbatch_args: tuple[str, ...] = ()
    max_parallel: int = 0  # Slurm array throttle (%N); 0: none


@dataclass(frozen=True)
class CampaignSpec:
    source: str
    name: str
    description: str
    topology: str
    kernel: str  # "project" or a path
    image: str  # "project" or a path
    backend: str
    scenario: Scenario
    apps: dict[str, AppSpec]
    axes: dict[str, tuple[Any, ...]]
    length: Length
    gem5: Gem5Options
    qemu: QemuOptions
    limits: Limits
    executor: ExecutorSpec
    early_stop: EarlyStopSpec = EarlyStopSpec()
    # The named variants of the variant axis (each a table of axis values, with its name).
    variants: tuple[dict[str, Any], ...] = ()

    def science(self) -> dict[str, Any]:
        """What decides a run's results apart from its axes: the spec hash covers this.
        Limits, retries and the executor change how runs are made, not what they give."""
        data = asdict(self)
        # Variants are an axis: each run's scenario (its run hash) holds their values.
        for key in ("source", "name", "description", "axes", "limits", "executor", "variants"):
            data.pop(key)
        data["scenario"] = _scenario_science(self.scenario)
        return data

    @property
    def spec_hash(self) -> str:
        return _digest(self.science())

    def runs(self) -> list[Run]:
        """Every run: the cartesian product of the axes, in the order they are written."""
        names = list(self.axes)
        runs = []
        for values in itertools.product(*(self.axes[name] for name in names)):
            point = dict(zip(names, values, strict=True))
            runs.append(self.run_at(point))
        ids = [run.run_id for run in runs]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise SpecError(self.source, "axes", duplicates[0],
                            "two runs get the same id; remove repeated axis values")
        return runs

    def run_at(self, point: Mapping[str, Any]) -> Run:
        """The run at one point of the axes (also points outside them: max-load search)."""
        scenario = self.scenario
        topology = self.topology
        changes: dict[str, Any] = {}
        values: list[tuple[str, Any]] = []
        for name, value in point.items():
            if name == VARIANT_AXIS:
                values += list(self.variant_values(str(value)).items())
            else:
                values.append((name, value))
        for name, value in values:
            if name == "topology":
                topology = str(value)
            elif name == "apps":
                changes["apps"] = _mix(value)
            elif name == "be":
                changes["be"] = tuple(value)
            elif name == "rps":
                changes["rps"], changes["load"] = value, None
            elif name == "load":
                changes["load"], changes["rps"] = value, None
            elif name == "control_scale":
                changes["interval_s"] = DEFAULT_INTERVAL_S * value
                changes["control"] = replace(scenario.control, scale=value,
                                             profile_s=DEFAULT_PROFILE_S * value)
            elif name.startswith(OPTION_AXIS):
                _, manager, key = name.split(".", 2)
                given = {m: json.loads(text) for m, text in
                         changes.get("manager_options", scenario.manager_options)}
                given.setdefault(manager, {})[key] = value
                changes["manager_options"] = tuple(
                    (m, json.dumps(o, sort_keys=True)) for m, o in sorted(given.items()))
            else:
                changes[name] = value
        scenario = replace(scenario, **changes)
        return Run(run_id=run_id_of(point), point=dict(point), topology=topology,
                   scenario=scenario, spec=self)

    def variant_values(self, name: str) -> dict[str, Any]:
        """The axis values of one named variant (``[axes] variant``)."""
        for variant in self.variants:
            if variant["name"] == name:
                return {k: v for k, v in variant.items() if k != "name"}
        raise SpecError(self.source, f"axes.{VARIANT_AXIS}", name, "no variant has this "
                        "name; use one of " + ", ".join(v["name"] for v in self.variants))


@dataclass(frozen=True)
class Run:
    """One point of a campaign: a scenario on a topology."""

    run_id: str
    point: dict[str, Any]  # the axis values that make this run
    topology: str
    scenario: Scenario
    spec: CampaignSpec

    @property
    def apps(self) -> list[AppSpec]:
        return [self.spec.apps.get(name, AppSpec(name)) for name in self.scenario.apps]

    @property
    def run_hash(self) -> str:
        return _digest({"spec": self.spec.science(), "topology": self.topology,
                        "scenario": _scenario_science(self.scenario)})

    def axes_record(self) -> dict[str, Any]:
        """run.json's axes in the analysis format (analysis/README.md): ``app`` or
        ``apps`` + ``mix``, ``rps`` (number or {app: rps}), ``qos_ns``, ``manager``..."""
        s = self.scenario
        apps = self.apps
        record: dict[str, Any] = {}
        if len(apps) == 1:
            record["app"] = apps[0].name
            record["rps"] = round(s.rps_of(apps[0]), 6)
        else:
            record["apps"] = [a.name for a in apps]
            record["mix"] = "+".join(a.name for a in apps)
            record["rps"] = {a.name: round(s.rps_of(a), 6) for a in apps}
        if s.load is not None:
            record["load"] = s.load
        record["manager"] = s.manager
        record["placement"] = s.placement
        record["seed"] = s.seed
        if s.hotness != "idle":  # runs recorded before the choice existed used idle
            record["hotness"] = s.hotness
        if s.hotness_shadow:
            record["hotness_shadow"] = True
        if s.wait_placed:
            record["wait_placed"] = True
        if s.tiering != "none":
            record["tiering"] = s.tiering
        if s.dynamic != "none":
            record["dynamic"] = s.dynamic
        if self.spec.gem5.counters:
            record["counting"] = s.counting  # a board with counters: counting or not
        if s.be:
            record["be"] = list(s.be)
        if s.interval_s != DEFAULT_INTERVAL_S:
            record["interval_s"] = s.interval_s  # the manager's and the statistics' period
        if s.manager not in ("none", "default"):
            # The control loops it ran with (analysis keeps them out of the axes).
            record["control"] = {"interval_s": s.interval_s, **asdict(s.control)}
        if "control_scale" in self.point:
            record["control_scale"] = self.point["control_scale"]
        for name, value in self.point.items():
            # A policy against its own baselines: an option, or a named variant.
            if name.startswith(OPTION_AXIS) or name == VARIANT_AXIS:
                record[name] = value
        if "topology" in self.point:
            record["arch"] = self.topology  # analysis draws Table III per "arch"
        record["topology"] = self.topology
        qos = {a.name: a.qos_ns for a in apps if a.qos_ns is not None}
        if qos:
            record["qos_ns"] = qos
        return record


# Scenario keys added after campaigns were made, with the value those campaigns ran with:
# at that value they stay out of the hashes, so those campaign folders still resume.
LATER_SCENARIO_KEYS = {"counting": True, "dynamic": "none", "hotness_shadow": False,
                       "wait_placed": False}


def _scenario_science(scenario: Scenario) -> dict[str, Any]:
    data = asdict(scenario)
    for key, default in LATER_SCENARIO_KEYS.items():
        if data.get(key) == default:
            data.pop(key)
    return data


def _digest(data: object) -> str:
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _mix(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part for part in value.split("+") if part)
    return tuple(str(v) for v in value)  # type: ignore[attr-defined]


def _id_part(value: object) -> str:
    if isinstance(value, list | tuple):
        return "+".join(_id_part(v) for v in value)
    if isinstance(value, dict):
        return "+".join(f"{k}{_id_part(v)}" for k, v in sorted(value.items()))
    if isinstance(value, bool):
        return "true" if value else "false"  # as TOML writes them
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return re.sub(r"[^A-Za-z0-9.+-]", "_", text)


def run_id_of(point: Mapping[str, Any]) -> str:
    """``apps-kvstore+oltp_load-0.3_manager-pimcloud``: readable, one folder name."""
    if not point:
        return "single"
    return "_".join(f"{name.removeprefix(OPTION_AXIS)}-{_id_part(value)}"
                    for name, value in point.items())


# ----------------------------------------------------------------------------- parsing

class _Table(CheckedTable):
    """Checked access to one table of a spec; sub-tables default to empty."""

    error_type = SpecError

    def table(self, key: str, default: dict[str, Any] | None = None) -> _Table:
        sub = super().table(key, {} if default is None else default)
        assert isinstance(sub, _Table)
        return sub

    def seconds(self, key: str, default: str | None) -> float:
        """Simulated seconds from a time with a unit ("200ms"); only warmup may be zero."""
        picoseconds = self.quantity(key, parse_time_ps, default, positive=key != "warmup")
        return picoseconds / 1e12


def resolve_named_toml(name_or_path: str | Path, shipped_dir: Path,
                       error_type: type[InputError] = SpecError) -> Path:
    """A TOML file, or the name of one shipped in ``shipped_dir`` ("quickstart")."""
    candidate = Path(name_or_path)
    if candidate.is_file():
        return candidate
    shipped = shipped_dir / f"{name_or_path}.toml"
    if shipped.is_file():
        return shipped
    names = ", ".join(sorted(p.stem for p in shipped_dir.glob("*.toml")))
    raise error_type(str(name_or_path), "(file)", str(name_or_path),
                     f"no such file; give a path or one of: {names}")


def read_named_toml(name_or_path: str | Path, shipped_dir: Path,
                    error_type: type[InputError] = SpecError) -> tuple[Path, dict[str, Any]]:
    """The file ``resolve_named_toml`` finds and its TOML document."""
    path = resolve_named_toml(name_or_path, shipped_dir, error_type)
    try:
        return path, tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise error_type(str(path), "(file)", str(error), "fix the TOML syntax") from None


def resolve_spec_path(name_or_path: str | Path) -> Path:
    """A spec file, or the name of one in runs/campaigns/ ("quickstart")."""
    return resolve_named_toml(name_or_path, CAMPAIGN_DIR)


def load_spec(name_or_path: str | Path) -> CampaignSpec:
    path, raw = read_named_toml(name_or_path, CAMPAIGN_DIR)
    return parse_spec(raw, source=str(path), default_name=path.stem)


def parse_spec(raw: dict[str, Any], source: str = "<memory>",
               default_name: str = "campaign", base_dir: Path | None = None,
               inputs_must_exist: bool = True) -> CampaignSpec:
    """Validate a TOML document into a ``CampaignSpec``; every run is checked too.
    Relative paths (kernel, image, topology files) are relative to ``base_dir``, by
    default the folder of ``source``. ``inputs_must_exist=False`` reads a finished
    campaign whose kernel or image has since been removed (its status, its results)."""
    base = base_dir or (Path(source).resolve().parent if source != "<memory>" else Path.cwd())
    top = _Table(source, "", raw)
    name = top.string("name", default_name)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise top.error("name", name, "use letters, digits, '.', '_' and '-' (a folder name)")
    description = top.string("description", "")

    system = top.table("system")
    topology = _topology_name(system.string("topology", "paper"), base)
    _check_topology(system, "topology", topology)
    kernel = system.string("kernel", "project")
    image = system.string("image", "project")
    for key, value in (("kernel", kernel), ("image", image)):
        if value == "project":
            continue
        path = base / Path(value).expanduser()
        if not path.is_file() and inputs_must_exist:
            raise system.error(key, value, 'no such file; give a path or "project" (the '
                               "project's own build, made when missing)")
        if key == "kernel":
            kernel = str(path.resolve())
        else:
            image = str(path.resolve())
    backend = system.choice("backend", BACKENDS, "auto")
    system.finish()

    apps = _parse_apps(top.table("apps"))
    scenario_table = top.table("scenario")
    scenario = _parse_scenario(scenario_table)
    scenario_table.finish()
    axes_table = top.table("axes")
    variants = _parse_variants(axes_table, base)
    axes = _parse_axes(axes_table, base)
    if variants:
        axes[VARIANT_AXIS] = tuple(v["name"] for v in variants)

    length_table = top.table("length")
    length = Length(length_table.seconds("warmup", "0ms"),
                    length_table.seconds("measured", None))
    length_table.finish()

    g = top.table("gem5")
    stats_period = g.raw("stats_period")
    if stats_period is not None:
        g.seconds("stats_period", None)
    gem5 = Gem5Options(
        stats_period=stats_period,
        mem_divisor=g.integer("mem_divisor", 1, minimum=1),
        boot_cpu=g.choice("boot_cpu", ("atomic", "kvm"), "atomic"),
        harness_hooks=_boolean(g, "harness_hooks", True),
        fast_forward=_boolean(g, "fast_forward", True),
        app_checkpoint=_boolean(g, "app_checkpoint", True),
        progress_every_s=_host_seconds(g, "progress_every"),
        binary=_binary(g, base),
        limit_margin=g.number("limit_margin", 1.0) or 0.0,
        extra_args=g.strings("extra_args"),
        counters=_boolean(g, "counters", False))
    g.finish()

    q = top.table("qemu")
    divisor = q.raw("mem_divisor")
    if divisor is not None:
        q.integer("mem_divisor", 1, minimum=1)
    qemu = QemuOptions(mem_divisor=divisor, append=q.string("append", ""))
    q.finish()

    lt = top.table("limits")
    try:
        host_time = parse_host_seconds(lt.raw("host_time", "6h"))
    except UnitError as error:
        raise lt.error("host_time", lt.data.get("host_time"), str(error)) from None
    try:
        memory = parse_size(lt.raw("memory", "8GiB"))
    except UnitError as error:
        raise lt.error("memory", lt.data.get("memory"), str(error)) from None
    limits = Limits(host_time, memory, lt.integer("retries", 1))
    lt.finish()

    ex = top.table("executor")
    executor = ExecutorSpec(
        kind=ex.choice("kind", EXECUTORS, "local"), jobs=ex.integer("jobs", 0),
        partition=ex.raw("partition"), account=ex.raw("account"),
        sbatch_args=ex.strings("sbatch_args"), max_parallel=ex.integer("max_parallel", 0))
    for key in ("partition", "account"):
        if ex.data.get(key) is not None and not isinstance(ex.data[key], str):
            raise ex.error(key, ex.data[key], "must be a string")
    ex.finish()
    es = top.table("early_stop")
    confidence = es.number("confidence", 0.99) or 0.0
    if not 0.5 < confidence < 1:
        raise es.error("confidence", confidence, "must be between 0.5 and 1 (e.g. 0.99)")
    early_stop = EarlyStopSpec(miss=_boolean(es, "miss", False),
                               meet=_boolean(es, "meet", False), confidence=confidence,
                               min_requests=es.integer("min_requests", 100, minimum=1))
    es.finish()
    top.finish()

    spec = CampaignSpec(source, name, description, topology, kernel, image, backend,
                        scenario, apps, axes, length, gem5, qemu, limits, executor,
                        early_stop, variants)
    for run in spec.runs():
        _check_run(spec, run)
    return spec


def _boolean(table: _Table, key: str, default: bool) -> bool:
    value = table.raw(key, default)
    if not isinstance(value, bool):
        raise table.error(key, value, "must be true or false")
    return value


def _check_topology(table: _Table, key: str, name: str) -> None:
    try:
        load_topology(name)
    except TopologyError as error:
        raise table.error(key, name, str(error)) from None


def _parse_apps(table: _Table) -> dict[str, AppSpec]:
    apps = {}
    for name in list(table.data):
        if not APP_NAME.match(name):
            raise table.error(name, name, "an app name is lower case letters, digits, '_', '-' "
                              "(the service binary is pimcloud-<name>)")
        t = table.table(name)
        qos = t.raw("qos")
        qos_ns = None
        if qos is not None:
            qos_ns = t.seconds("qos", None) * 1e9
        options = t.raw("options", {})
        if not isinstance(options, dict):
            raise t.error("options", options, 'must be a table like { keys = "200000" }')
        data = t.raw("data")
        if data is not None and not isinstance(data, str):
            raise t.error("data", data, "must be a path in the guest")
        threads = t.raw("threads")
        if threads is not None:
            t.integer("threads", 1, minimum=1)
        rates = {}
        for key in ("max_rps", "max_rps_host_core", "max_rps_pim_core"):
            rates[key] = t.number(key, None)
            if rates[key] is not None and rates[key] <= 0:
                raise t.error(key, rates[key], "must be greater than zero")
        if (rates["max_rps_host_core"] is None) != (rates["max_rps_pim_core"] is None):
            raise t.error("max_rps_host_core", rates["max_rps_host_core"],
                          "give max_rps_host_core and max_rps_pim_core together (their "
                          "ratio is the manager's R), or neither to let it profile")
        resident = t.raw("resident")
        if resident is not None:
            t.integer("resident", 1, minimum=1)
        prewarm = t.integer("prewarm", 0, minimum=0)
        apps[name] = AppSpec(name, rates["max_rps"], qos_ns, threads,
                             {str(k): str(v) for k, v in options.items()}, data,
                             rates["max_rps_host_core"], rates["max_rps_pim_core"], resident,
                             prewarm)
        t.finish()
    return apps


def _parse_scenario(t: _Table) -> Scenario:
    apps = t.raw("apps")  # may come from an axis instead; each run is checked later
    if apps is not None and not (isinstance(apps, str) or (
            isinstance(apps, list) and all(isinstance(a, str) for a in apps))):
        raise t.error("apps", apps, 'give a list of service names, e.g. ["kvstore", "oltp"]')
    load = t.number("load", None)
    rps = t.raw("rps")
    if rps is not None and not isinstance(rps, int | float | dict):
        raise t.error("rps", rps, "must be a number or a table { app = rps }")
    interval_s, control = _parse_control(t)
    return Scenario(
        apps=_mix(apps) if apps is not None else (),
        load=load,
        rps=rps,
        manager=t.choice("manager", MANAGERS, "pimcloud"),
        placement=t.choice("placement", PLACEMENTS + TIERED_PLACEMENTS, "cc"),
        seed=t.integer("seed", 1),
        be=t.strings("be"),
        threads=t.integer("threads", 4, minimum=1),
        events=_parse_events(t),
        interval_s=interval_s,
        control=control,
        manager_options=_parse_manager_options(t),
        hotness=t.choice("hotness", HOTNESS_SOURCES, "idle"),
        hotness_shadow=_boolean(t, "hotness_shadow", False),
        wait_placed=_boolean(t, "wait_placed", False),
        tiering=t.choice("tiering", TIERING, "none"),
        tiering_pages=t.integer("tiering_pages", TIERING_PAGES, minimum=1),
        dynamic=t.choice("dynamic", DYNAMIC, "none"),
        reserve_bytes=(t.quantity("reserve", parse_size, None, positive=False)
                       if t.has("reserve") else None),
        counting=_boolean(t, "counting", True),
    )


def _parse_control(t: _Table) -> tuple[float, ControlLoops]:
    """``control_scale`` (the paper's interval and profiling time times it) and each
    value on its own: ``interval``, ``profile``, ``slack_intervals``, ``min_intervals``,
    ``wait_cores`` and ``wait_pages`` ([min, max] intervals)."""
    scale = t.number("control_scale", 1.0) or 0.0
    if scale <= 0:
        raise t.error("control_scale", scale, "must be greater than zero (1: the paper's)")
    interval = t.seconds("interval", f"{DEFAULT_INTERVAL_S * scale * 1e3:g}ms")
    profile = t.seconds("profile", f"{DEFAULT_PROFILE_S * scale * 1e3:g}ms")
    slack = t.integer("slack_intervals", 5, minimum=1)
    least = t.integer("min_intervals", min(3, slack), minimum=1)
    if least > slack:
        raise t.error("min_intervals", least, f"must be at most slack_intervals ({slack})")

    def span(key: str, default: tuple[int, int]) -> tuple[int, int]:
        raw = t.raw(key, list(default))
        if not (isinstance(raw, list) and len(raw) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) for v in raw)
                and 1 <= raw[0] <= raw[1]):
            raise t.error(key, raw, "give [min, max] intervals with 1 <= min <= max")
        return raw[0], raw[1]

    return interval, ControlLoops(scale, profile, slack, least,
                                  span("wait_cores", (2, 3)), span("wait_pages", (3, 8)))


def _parse_manager_options(t: _Table) -> tuple[tuple[str, str], ...]:
    """``[scenario.manager_options.<manager>]`` tables: each manager's policy options."""
    table = t.table("manager_options")
    out = []
    for manager in list(table.data):
        if manager not in MANAGERS or manager == "none":
            raise table.error(manager, table.data[manager], "not a manager with options; use "
                              + ", ".join(m for m in MANAGERS if m != "none"))
        options = table.table(manager)
        for key in options.data:
            options.read.add(key)
        out.append((manager, json.dumps(options.data, sort_keys=True)))
    table.finish()
    return tuple(out)


def _parse_events(t: _Table) -> tuple[ScenarioEvent, ...]:
    """``[[scenario.events]]``: at, kind and what the kind needs; checked per run later."""
    raw = t.raw("events", [])
    if not isinstance(raw, list):
        raise t.error("events", raw, 'write events as [[scenario.events]] tables with at = '
                      '"200ms" and kind = one of ' + ", ".join(EVENT_KINDS))
    events = []
    for index, entry in enumerate(raw):
        e = _Table(t.source, f"{t.name('events')}[{index}]", entry)
        kind = e.choice("kind", EVENT_KINDS)
        at_s = e.quantity("at", parse_time_ps, None, positive=False) / 1e12  # 0: at the start
        app = stack = free = None
        if kind == "fill":
            stack = e.integer("stack", None, minimum=1)
            free = e.quantity("free", parse_size, None, positive=False)
        else:
            app = e.string("app", None)
        e.finish()
        events.append(ScenarioEvent(at_s, kind, app, stack, free))
    return tuple(sorted(events, key=lambda ev: ev.at_s))


def _topology_name(value: str, base: Path) -> str:
    """A preset name as is; a relative .toml path made absolute against the spec's folder."""
    if value.endswith(".toml") and not Path(value).is_absolute():
        return str((base / value).resolve())
    return value


def _option_axes(t: _Table) -> dict[str, Any]:
    """``options.<manager>.<key> = [...]`` (a policy option as an axis, e.g. a policy
    against its own baselines) as flat axis names; the agent checks keys and values."""
    flat: dict[str, Any] = {}
    for name, value in t.data.items():
        if name != "options":
            flat[name] = value
            continue
        t.read.add(name)
        if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
            raise t.error(name, value, "write a policy option axis as options.<manager>.<key> "
                          '= [...], e.g. options.interference.signal = ["latency", "none"]')
        for manager, keys in value.items():
            if manager not in MANAGERS or manager == "none":
                raise t.error(f"options.{manager}", keys, "not a manager with options; use "
                              + ", ".join(m for m in MANAGERS if m != "none"))
            for key, values in keys.items():
                flat[f"{OPTION_AXIS}{manager}.{key}"] = values
    return flat


def _check_axis_value(t: _Table, name: str, value: Any, base: Path,
                      where: str | None = None) -> None:
    """One value of an axis (or of a variant, at ``where``), with the fix when it is wrong."""
    field = where or name
    if name in ("manager", "placement", "hotness", "tiering", "dynamic"):
        options = {"manager": MANAGERS, "placement": PLACEMENTS + TIERED_PLACEMENTS,
                   "hotness": HOTNESS_SOURCES, "tiering": TIERING, "dynamic": DYNAMIC}[name]
        if value not in options:
            raise t.error(field, value, "choose among " + ", ".join(map(repr, options)))
    elif name in ("counting", "hotness_shadow", "wait_placed"):
        if not isinstance(value, bool):
            raise t.error(field, value, f"{name} is true or false")
    elif name == "topology":
        if not isinstance(value, str):
            raise t.error(field, value, "a topology is a preset name or a .toml path")
        _check_topology(t, field, _topology_name(value, base))
    elif name in ("seed", "threads") and (isinstance(value, bool)
                                          or not isinstance(value, int)):
        raise t.error(field, value, "each value must be a whole number")
    elif name == "control_scale" and (isinstance(value, bool) or not isinstance(
            value, int | float) or value <= 0):
        raise t.error(field, value, "a scale is a number > 0 (1: the paper's loops)")
    elif name == "load" and (not isinstance(value, int | float) or value <= 0):
        raise t.error(field, value, "a load is a fraction of max load, > 0 (e.g. 0.5)")
    elif name == "rps" and not isinstance(value, int | float | dict):
        raise t.error(field, value, "an rps value is a number or a table {app = rps}")
    elif name in ("apps", "be") and not (isinstance(value, str) or (
            isinstance(value, list) and all(isinstance(v, str) for v in value))):
        raise t.error(field, value, 'a value is "a+b" or a list of names ["a", "b"]')


def _parse_variants(t: _Table, base: Path) -> tuple[dict[str, Any], ...]:
    """``variant = [{ name = "...", <axis> = <value>, ... }, ...]``: named points whose
    values go together, e.g. a policy beside baselines that differ in several keys."""
    raw = t.data.get(VARIANT_AXIS)
    if raw is None:
        return ()
    t.read.add(VARIANT_AXIS)
    example = ('variant = [{ name = "lru", placement = "fast-preferred", tiering = '
               '"heteroos-lru" }, ...]')
    if not isinstance(raw, list) or not raw or not all(isinstance(v, dict) for v in raw):
        raise t.error(VARIANT_AXIS, raw, "a non-empty list of tables, e.g. " + example)
    variants = []
    for index, variant in enumerate(raw):
        where = f"{VARIANT_AXIS}[{index}]"
        name = variant.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", name):
            raise t.error(f"{where}.name", MISSING if name is None else name,
                          "give each variant a name of letters, "
                          "digits, '.', '_', '+' and '-' (it names the run)")
        if any(v["name"] == name for v in variants):
            raise t.error(f"{where}.name", name, "two variants have this name; rename one")
        flat = _option_axes(_Table(t.source, f"{t.path}.{where}" if t.path else where,
                                   variant))
        values = dict(flat)
        for key, value in flat.items():
            if key == "name":
                continue
            if key == VARIANT_AXIS or (key not in AXIS_KEYS and not key.startswith(OPTION_AXIS)):
                raise t.error(f"{where}.{key}", value, "a variant sets axis keys: "
                              + ", ".join(AXIS_KEYS) + f", or {OPTION_AXIS}<manager>.<key>")
            if key in t.data:
                raise t.error(f"{where}.{key}", value, f"{key} is also an axis; set it in "
                              "the variants or as an axis, not both")
            if not key.startswith(OPTION_AXIS):
                _check_axis_value(t, key, value, base, f"{where}.{key}")
            if key == "topology":
                values[key] = _topology_name(value, base)
        variants.append(values)
    return tuple(variants)


def _parse_axes(t: _Table, base: Path) -> dict[str, tuple[Any, ...]]:
    axes: dict[str, tuple[Any, ...]] = {}
    data = _option_axes(t)
    data.pop(VARIANT_AXIS, None)  # _parse_variants
    for name in list(data):
        t.read.add(name)
        if name.startswith(OPTION_AXIS):
            values = data[name]
            if not isinstance(values, list) or not values or not all(
                    isinstance(v, str | int | float | bool) for v in values):
                raise t.error(name, values, "a policy option axis is a non-empty list of "
                              "strings, numbers or booleans")
            if len({json.dumps(v) for v in values}) != len(values):
                raise t.error(name, values, "a value is listed twice; list each once")
            axes[name] = tuple(values)
            continue
        if name not in AXIS_KEYS:
            close = difflib.get_close_matches(name, AXIS_KEYS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise t.error(name, data[name], f"{hint}an axis is one of " + ", ".join(AXIS_KEYS))
        values = data[name]
        if not isinstance(values, list) or not values:
            raise t.error(name, values, f"an axis is a non-empty list, e.g. {name} = [...]")
        if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
            raise t.error(name, values, "a value is listed twice; list each once")
        for value in values:
            _check_axis_value(t, name, value, base)
        if name == "topology":
            values = [_topology_name(v, base) for v in values]
        axes[name] = tuple(values)
    if "load" in axes and "rps" in axes:
        raise t.error("rps", axes["rps"], "sweep either load (fractions of max load) or rps, "
                      "not both")
    return axes


def _check_run(spec: CampaignSpec, run: Run) -> None:
    """What only a whole run can show: apps known, loads computable."""
    s = run.scenario
    where = f"run {run.run_id}"
    if not s.apps:
        raise SpecError(spec.source, "scenario.apps", "(missing)",
                        'add scenario.apps = ["kvstore"] or an apps axis')
    for name in s.apps:
        if not APP_NAME.match(name):
            raise SpecError(spec.source, "scenario.apps", name,
                            f"{where}: not an app name (lower case, the binary pimcloud-<name>)")
    if len(set(s.apps)) != len(s.apps):
        raise SpecError(spec.source, "scenario.apps", list(s.apps),
                        f"{where}: an app appears twice in a mix")
    if not s.counting and not spec.gem5.counters:
        raise SpecError(spec.source, "scenario.counting", False,
                        f"{where}: counting = false turns off the board's counters; add "
                        "[gem5] counters = true (or leave counting out)")
    if s.hotness_shadow and spec.backend == "qemu":
        raise SpecError(spec.source, "scenario.hotness_shadow", True,
                        f"{where}: a shadow ranking needs the page-access counters, which "
                        "only the gem5 board has; use backend = \"gem5\" (or leave "
                        "hotness_shadow out)")
    if s.hotness_shadow and not spec.gem5.counters:
        raise SpecError(spec.source, "scenario.hotness_shadow", True,
                        f"{where}: a shadow ranking compares idle tracking with the board's "
                        "page-access counters; add [gem5] counters = true (or leave "
                        "hotness_shadow out)")
    if not s.counting and (s.hotness == "hw" or s.hotness_shadow
                           or s.manager in COUNTER_MANAGERS or "migration" in s.dynamic):
        reader = (s.manager if s.manager in COUNTER_MANAGERS else
                  "hotness hw" if s.hotness == "hw" else
                  "hotness_shadow" if s.hotness_shadow else "dynamic migration")
        raise SpecError(spec.source, "scenario.counting", False,
                        f"{where}: {reader}"
                        " reads the counters, which count nothing with counting = false; "
                        "keep counting on for it")
    if s.placement in TIERED_PLACEMENTS:
        topology = load_topology(run.topology)
        if topology.ddr is None and topology.far is None:
            raise SpecError(spec.source, "scenario.placement", s.placement,
                            f"{where}: a tiered placement needs a slow tier, node 0's "
                            f"DDR or far memory; {run.topology} has neither (use topology = "
                            '"tiered" or "tiered-far-mini")')
    elif s.tiering != "none":
        raise SpecError(spec.source, "scenario.tiering", s.tiering,
                        f"{where}: tiering moves pages between the tiers of a tiered "
                        "placement; set placement to one of " + ", ".join(TIERED_PLACEMENTS))
    if s.dynamic != "none" and s.manager == "none":
        raise SpecError(spec.source, "scenario.dynamic", s.dynamic,
                        f"{where}: dynamic placement is the agent's work; set manager = "
                        '"default" (OS scheduling, only memory managed) or another manager')
    if "migration" in s.dynamic and spec.backend == "gem5" and not spec.gem5.counters:
        raise SpecError(spec.source, "scenario.dynamic", s.dynamic,
                        f"{where}: migration based on locality reads the board's page-access "
                        "counters; add [gem5] counters = true (in QEMU it moves nothing)")
    if "replication" in s.dynamic and not any(
            SERVICES[a].replicates for a in s.apps if a in SERVICES):
        raise SpecError(spec.source, "scenario.dynamic", s.dynamic,
                        f"{where}: none of {', '.join(s.apps)} keeps shared read-only data "
                        "it can replicate (imgdnn does); drop replication")
    if s.load is None and s.rps is None:
        raise SpecError(spec.source, "scenario.load", "(missing)",
                        "give scenario.load (fraction of max load) or scenario.rps, or an axis")
    if s.load is not None and s.rps is not None:
        raise SpecError(spec.source, "scenario.rps", s.rps,
                        "give load or rps, not both (an axis of one replaces the other)")
    if s.load is not None:
        missing = [a.name for a in run.apps if a.max_rps is None]
        if missing:
            raise SpecError(spec.source, f"apps.{missing[0]}.max_rps", "(missing)",
                            f"{where} gives load as a fraction of max load; add "
                            f"[apps.{missing[0]}] max_rps = N (or sweep rps instead)")
    if isinstance(s.rps, dict):
        absent = [a for a in s.apps if a not in s.rps]
        if absent:
            raise SpecError(spec.source, "scenario.rps", s.rps,
                            f"{where}: no rps for {absent[0]}; give every app of the mix one")
        for app, value in s.rps.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise SpecError(spec.source, f"scenario.rps.{app}", value, "must be > 0")
    elif s.rps is not None and (isinstance(s.rps, bool) or s.rps <= 0):
        raise SpecError(spec.source, "scenario.rps", s.rps, "must be greater than zero")
    _check_events(spec, run)
    stacks = len(load_topology(run.topology).stacks)
    for app in run.apps:
        if app.resident is not None and app.resident > stacks:
            raise SpecError(spec.source, f"apps.{app.name}.resident", app.resident,
                            f"{where}: {run.topology} has stacks 1..{stacks}")
    for be in s.be:
        if be not in BE_JOBS:
            raise SpecError(spec.source, "scenario.be", be, "not a best-effort job; use "
                            + ", ".join(sorted(BE_JOBS)) + " (pimcloud.workloads.besteffort)")


def _check_events(spec: CampaignSpec, run: Run) -> None:
    """Events name apps of the run and times its length allows."""
    s = run.scenario
    where = f"run {run.run_id}"
    length = spec.length
    stacks = len(load_topology(run.topology).stacks)
    seen: set[tuple[str, str]] = set()
    for index, event in enumerate(s.events):
        field_name = f"scenario.events[{index}]"
        if event.kind == "fill":
            if event.stack is not None and event.stack > stacks:
                raise SpecError(spec.source, f"{field_name}.stack", event.stack,
                                f"{where}: {run.topology} has stacks 1..{stacks}")
            continue
        if event.app not in s.apps:
            raise SpecError(spec.source, f"{field_name}.app", event.app,
                            f"{where}: not in the run's apps {list(s.apps)}")
        if (event.app, event.kind) in seen:
            raise SpecError(spec.source, f"{field_name}.kind", event.kind,
                            f"{where}: {event.app} has two {event.kind} events; keep one")
        seen.add((event.app, event.kind))
        if event.kind == "arrive" and event.at_s >= length.measured_s:
            raise SpecError(spec.source, f"{field_name}.at", f"{event.at_s:g}s",
                            "an app that arrives runs its warm-up, then measures until the "
                            "others end: arrive before length.measured")
        if event.kind == "exit" and event.at_s <= length.warmup_s:
            raise SpecError(spec.source, f"{field_name}.at", f"{event.at_s:g}s",
                            "an app exits at the end of its measured region: give a time "
                            "after length.warmup")
        if event.kind in ("exit", "kill") and event.at_s > length.warmup_s + length.measured_s:
            raise SpecError(spec.source, f"{field_name}.at", f"{event.at_s:g}s",
                            "after the run's end (length.warmup + length.measured): the app "
                            "would have ended already")
    arrive, leave = ({e.app for e in s.events if e.kind == k} for k in ("arrive", "exit"))
    for app in arrive & leave:
        if s.event_of(app, "exit").at_s <= s.event_of(app, "arrive").at_s:  # type: ignore[union-attr]
            raise SpecError(spec.source, "scenario.events", app,
                            f"{where}: {app} exits before it arrives; swap the times")
