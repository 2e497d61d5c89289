"""The memory-latency probe as a scenario: which CPU reads which node, and what it measured.

``probe_points`` picks, for a topology, the paper's three kinds of access: a host core to
each stack, a PIM core to its own stack, and a PIM core to another stack, each with two
chains: ``random`` (every load opens a new DRAM row: the worst case) and ``row-local``
(a row's lines in a burst: the row-buffer hits real programs get). The scenario
runs ``pimcloud-memprobe`` (workloads/memprobe) once for all points: set-up first (on the
atomic cores when the gem5 run fast-forwards), then ``m5 switchcpu``, then one measured
region per point, each bracketed by a gem5 stats reset and dump.

``probe_results`` joins what the guest printed (ns per load on the guest's clock, pages
found on the node) with gem5's stats: dump k is point k, so its simulated seconds over the
number of loads is the load-to-use latency as gem5 timed it (gem5 adds a last dump at
exit), and the outer cache's hit
ratio in that dump says how much of the buffer the caches still held.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.components.plan import cluster_plans, memory_controller_plans
from pimcloud.components.stat_names import stat_names
from pimcloud.topology import Topology, cpus, numa_nodes
from pimcloud.topology.interconnect import location_of, locations
from pimcloud.topology.model import HOST_CLUSTER

PROBE_PROGRAM = "pimcloud-memprobe"
RESULTS_FILE = "memprobe.jsonl"
# Buffers this many times the largest cache the CPU reaches, within these bounds: big
# enough that few loads hit, small enough that set-up stays cheap in simulation.
BUFFER_OVER_CACHE = 16
MIN_BUFFER_BYTES = 4 << 20
MAX_BUFFER_BYTES = 128 << 20


class ProbeError(ValueError):
    """The probe cannot be set up or its results cannot be read; the message says why."""


@dataclass(frozen=True)
class ProbePoint:
    """One measurement: ``cpu`` chases pointers through ``bytes`` bound to ``node``."""

    kind: str  # "host", "pim-local" or "pim-remote"
    cpu: int
    node: int
    bytes: int
    cluster: str
    outer_cache: str  # stats name prefix of the last cache level this CPU reaches
    pattern: str = "random"  # or "row-local"

    @property
    def argument(self) -> str:
        return f"{self.cpu}:{self.node}:{self.bytes}:{self.pattern}"


def _buffer_bytes(largest_cache: int) -> int:
    wanted = BUFFER_OVER_CACHE * largest_cache
    rounded = 1 << math.ceil(math.log2(max(wanted, 1)))
    return min(max(rounded, MIN_BUFFER_BYTES), MAX_BUFFER_BYTES)


PATTERNS = ("random", "row-local")


def probe_points(topology: Topology, patterns: tuple[str, ...] = PATTERNS) -> list[ProbePoint]:
    """Host core to every memory node; each stack's first PIM core to its own node and
    to the next stack's node (the paper's host, PIM-local and PIM-remote accesses); the
    whole list once per pattern."""
    unknown = [p for p in patterns if p not in PATTERNS]
    if unknown or not patterns:
        raise ProbeError(f"patterns {list(patterns)}: choose from {', '.join(PATTERNS)}")
    nodes = numa_nodes(topology)
    memory_nodes = [n for n in nodes if n.capacity > 0]
    if not memory_nodes:
        raise ProbeError(f"topology {topology.name} has no node with memory to probe")
    cpu_table = {c.cpu_id: c for c in cpus(topology)}
    plans = {plan.name: plan for plan in cluster_plans(topology)}
    names = stat_names(topology)

    def point(kind: str, cpu_id: int, node: int) -> ProbePoint:
        plan = plans[cpu_table[cpu_id].cluster]
        caches = plan.caches
        largest = max(level.size for level in (caches.l1d, caches.l2, caches.l3) if level)
        outer = names.last_level_cache(cpu_id).path
        return ProbePoint(kind, cpu_id, node, _buffer_bytes(largest), plan.name, outer)

    points: list[ProbePoint] = []
    stack_nodes = [n for n in memory_nodes if n.cpus and n.cluster != HOST_CLUSTER]
    host_nodes = [n for n in nodes if n.cpus and n.cluster == HOST_CLUSTER]
    for host in host_nodes:
        points += [point("host", host.cpus[0], target.node_id) for target in memory_nodes]
    for i, stack in enumerate(stack_nodes):
        points.append(point("pim-local", stack.cpus[0], stack.node_id))
        if len(stack_nodes) > 1:
            other = stack_nodes[(i + 1) % len(stack_nodes)]
            points.append(point("pim-remote", stack.cpus[0], other.node_id))
    return [replace(p, pattern=pattern) for pattern in patterns for p in points]


def scenario_script(points: list[ProbePoint], loads: int, switch_cpu: bool) -> str:
    """run.sh: one probe process for every point, output into the results folder."""
    args = [f"--point {p.argument}" for p in points]
    flags = ["--m5-stats", f"--loads {loads}"] + (["--switch-cpu"] if switch_cpu else [])
    return "\n".join([
        "#!/bin/sh",
        "# The memory-latency probe (workloads/memprobe.py): set-up, switch, measure.",
        "set -e",
        'here=$(cd "$(dirname "$0")" && pwd)',
        f'probe=/opt/pimcloud/bin/{PROBE_PROGRAM}',
        f'[ -x "$probe" ] || probe="$here/bin/{PROBE_PROGRAM}"',
        'out="${PIMCLOUD_RESULTS:-/results}"',
        'mkdir -p "$out"',
        "cat /sys/devices/system/clocksource/clocksource0/current_clocksource "
        '> "$out/clocksource.txt" 2>/dev/null || true',
        f'"$probe" {" ".join(args + flags)} > "$out/{RESULTS_FILE}"',
        "",
    ])


def write_scenario(folder: Path, topology: Topology, loads: int = 100_000,
                   switch_cpu: bool = True, program: Path | None = None,
                   patterns: tuple[str, ...] = PATTERNS) -> list[ProbePoint]:
    """A scenario folder (run.sh, points.json, bin/pimcloud-memprobe) for ``topology``."""
    if loads < 1:
        raise ProbeError(f"loads must be at least 1, got {loads}")
    program = program or find_program()
    points = probe_points(topology, patterns)
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(program, folder / "bin" / PROBE_PROGRAM)
    atomic_write_text(folder / "run.sh", scenario_script(points, loads, switch_cpu))
    atomic_write_text(folder / "points.json",
                      json.dumps([asdict(p) for p in points], indent=1) + "\n")
    return points


def find_program() -> Path:
    """The static probe from the host's CMake build (``make cxx`` builds it)."""
    from pimcloud.paths import program_candidates

    found = program_candidates(PROBE_PROGRAM)
    if not found:
        raise ProbeError(f"{PROBE_PROGRAM} is not built: run `make cxx` (CMake target "
                         f"{PROBE_PROGRAM}) first")
    return found[0]


def read_guest_lines(path: Path) -> list[dict[str, Any]]:
    """The probe's JSON lines; a missing or damaged file is a ProbeError naming it."""
    try:
        text = path.read_text()
    except OSError as error:
        raise ProbeError(f"{path}: the guest left no probe output ({error.strerror})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            raise ProbeError(f"{path}:{number}: not a JSON line: {line[:80]!r}") from None
    return rows


def _dump_sum(stats: Any, dump: int, stats_names: list[str], subname: str | None
              ) -> float | None:
    """Sum of the named statistics in one dump: of one subname, or (None) of every
    element of a vector but its total, which gem5 prints only for some vectors."""
    picked = stats[(stats["dump"] == dump) & stats["stat"].isin(stats_names)]
    picked = picked[picked["subname"] != "total"] if subname is None else \
        picked[picked["subname"] == subname]
    return None if picked.empty else float(picked["value"].sum())


def _outer_hit_ratio(stats: Any, dump: int, cache: str) -> float | None:
    hits = _dump_sum(stats, dump, [f"{cache}.overallHits"], "total")
    misses = _dump_sum(stats, dump, [f"{cache}.overallMisses"], "total")
    if hits is None or misses is None or hits + misses == 0:
        return None
    return hits / (hits + misses)


def latency_breakdown(stats: Any, dump: int, point: ProbePoint, topology: Topology,
                      ns_per_load: float) -> dict[str, float | None]:
    """Where one point's load time went, from its own stats dump.

    ``link_ns``: what the router's SerDes links added to a round trip of this CPU's
    location and the node's (its pairAvgLatency). ``controller_ns``: the target
    controllers' read latency (queue and DRAM access, requestorReadTotalLat over
    requestorReadAccesses) plus their fixed front and back end. ``on_chip_ns``: the rest
    (core, caches, crossbars, page walks). ``row_hit_rate``: the target's reads that
    found their row open. None where the dump lacks the statistic."""
    plans = memory_controller_plans(topology)
    owner = {n.node_id: n.memory_owner for n in numa_nodes(topology)}[point.node]
    targets = [(i, plan) for i, plan in enumerate(plans) if plan.owner == owner]
    board = stat_names(topology)
    controllers = [board.controllers[i] for i, _ in targets]
    names = locations(topology)
    source = names.index(location_of(point.cluster))
    pair = f"from{source}_to{targets[0][1].location}"
    link_ticks = _dump_sum(stats, dump, [f"{board.router}.pairAvgLatency"], pair)
    total = _dump_sum(stats, dump, [f"{c}.requestorReadTotalLat" for c in controllers],
                      None)
    reads = _dump_sum(stats, dump, [f"{c}.requestorReadAccesses" for c in controllers],
                      None)
    hits = _dump_sum(stats, dump, [f"{c}.dram.readRowHits" for c in controllers], "")
    bursts = _dump_sum(stats, dump, [f"{c}.dram.readBursts" for c in controllers], "")
    dram = targets[0][1].dram
    link_ns = None if link_ticks is None or math.isnan(link_ticks) else link_ticks / 1e3
    controller_ns = None
    if total is not None and reads:
        controller_ns = total / reads / 1e3 + (dram.frontend_latency
                                               + dram.backend_latency) / 1e3
    on_chip_ns = None
    if link_ns is not None and controller_ns is not None:
        on_chip_ns = ns_per_load - link_ns - controller_ns
    return {"link_ns": link_ns, "controller_ns": controller_ns, "on_chip_ns": on_chip_ns,
            "row_hit_rate": hits / bursts if hits is not None and bursts else None,
            **counters_estimate(stats, dump, point, topology)}


def counters_estimate(stats: Any, dump: int, point: ProbePoint, topology: Topology
                      ) -> dict[str, float | None]:
    """Seed 003's estimate from the board's hardware counters for one point's CPU:
    ``counters_ns``, the mean time its reads stayed outstanding past the caches (the
    counters' statistics, what the guest's driver reads over the dump), and
    ``counters_estimate_ns``, that plus the cache lookups down to its last level
    (``c_cache``), to set beside the measured load-to-use time. None without counters."""
    board = stat_names(topology)
    cpu = str(point.cpu)
    misses = _dump_sum(stats, dump, [f"{board.counters}.cpuMisses"], cpu)
    ticks = _dump_sum(stats, dump, [f"{board.counters}.cpuOutstandingTicks"], cpu)
    if not misses or ticks is None:
        return {"counters_ns": None, "counters_estimate_ns": None}
    frequency = next(c.frequency_hz for c in cpus(topology) if c.cpu_id == point.cpu)
    c_cache_ns = board.last_level_cache(point.cpu).lookup_cycles / frequency * 1e9
    counters_ns = ticks / misses / 1e3
    return {"counters_ns": counters_ns, "counters_estimate_ns": c_cache_ns + counters_ns}


def probe_results(points: list[ProbePoint], guest_output: Path,
                  stats_file: Path | None, topology: Topology | None = None
                  ) -> list[dict[str, Any]]:
    """One row per point: guest-clock and gem5 ns per load, placement, cache hit ratio,
    and with the ``topology`` the dump's breakdown of a load (latency_breakdown)."""
    guest = read_guest_lines(guest_output)
    if len(guest) != len(points):
        raise ProbeError(f"{guest_output}: {len(guest)} results for {len(points)} points; "
                         "the probe stopped early (see the guest console)")
    dumps = stats = None
    if stats_file is not None:
        from pimcloud.stats_file import parse_stats

        parsed = parse_stats(stats_file)
        dumps, stats = parsed.dumps, parsed.stats
        if len(dumps) < len(points):
            raise ProbeError(f"{stats_file}: {len(dumps)} stats dumps for {len(points)} "
                             "points; was the scenario restored with a gem5 backend?")
        # A restore without --stats-period dumps nothing before the scenario, so the
        # probe's dumps come first; gem5 adds one more when it exits.
        first = 0
    rows = []
    for k, (point, seen) in enumerate(zip(points, guest, strict=True)):
        got = (seen.get("cpu"), seen.get("node"), seen.get("pattern", "random"))
        if got != (point.cpu, point.node, point.pattern):
            raise ProbeError(f"{guest_output}: line {k + 1} is CPU {got[0]} -> node {got[1]} "
                             f"({got[2]}), expected {point.cpu} -> {point.node} "
                             f"({point.pattern})")
        row: dict[str, Any] = {**asdict(point), "loads": seen["loads"],
                               "guest_ns_per_load": seen["ns_per_load"],
                               "pages_on_node": seen["pages_on_node"],
                               "pages_checked": seen["pages_checked"],
                               "huge_pages": seen.get("anon_huge_kib", 0) > 0,
                               "stayed_on_cpu": seen.get("cpu_after") == point.cpu,
                               # glibc's answer against the kernel's (rseq; gem5 lacks `lsl`)
                               "sched_getcpu_right": seen.get("sched_getcpu")
                               == seen.get("cpu_after")}
        if dumps is not None and stats is not None:
            dump = int(dumps.iloc[first + k]["dump"])
            seconds = float(dumps.iloc[first + k]["sim_seconds"])
            row["gem5_ns_per_load"] = seconds * 1e9 / seen["loads"]
            row["outer_cache_hit_ratio"] = _outer_hit_ratio(stats, dump, point.outer_cache)
            if topology is not None:
                row.update(latency_breakdown(stats, dump, point, topology,
                                             row["gem5_ns_per_load"]))
        rows.append(row)
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of probe rows (breakdown columns show '-' where not measured)."""

    def ns(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    header = (f"{'kind':<11} {'pattern':<9} {'cpu':>4} {'node':>4} {'buffer':>8} {'gem5 ns':>8} "
              f"{'guest ns':>9} {'on-chip':>8} {'links':>6} {'ctrl':>6} {'row hit':>7} "
              f"{'outer hit':>9} {'on node':>8} {'huge':>4} {'hw est':>7}")
    lines = [header]
    for row in rows:
        hit, row_hit = row.get("outer_cache_hit_ratio"), row.get("row_hit_rate")
        lines.append(
            f"{row['kind']:<11} {row['pattern']:<9} {row['cpu']:>4} {row['node']:>4} "
            f"{row['bytes'] // (1 << 20):>6}Mi {ns(row.get('gem5_ns_per_load')):>8}"
            f" {row['guest_ns_per_load']:>9.1f} {ns(row.get('on_chip_ns')):>8}"
            f" {ns(row.get('link_ns')):>6} {ns(row.get('controller_ns')):>6}"
            f" {'-' if row_hit is None else f'{row_hit:.2f}':>7}"
            f" {'-' if hit is None else f'{hit:.3f}':>9} "
            f"{row['pages_on_node']:>3}/{row['pages_checked']:<4} "
            f"{'yes' if row.get('huge_pages') else 'no':>4}"
            f" {ns(row.get('counters_estimate_ns')):>7}")
    return "\n".join(lines)
