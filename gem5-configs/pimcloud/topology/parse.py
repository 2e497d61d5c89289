"""TOML -> ``Topology``, with every mistake reported as a ``TopologyError``.

A topology file may say ``extends = "paper"`` (a preset name or a path relative to the
file) and then override any table or value; tables merge key by key, everything else
replaces.  Unknown keys are errors, so that a misspelt option never silently does nothing.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..checked import CheckedTable
from ..units import parse_bandwidth, parse_frequency, parse_size, parse_time_ps
from .errors import TopologyError
from .model import (
    FAR_OWNER,
    HOST_CLUSTER,
    BranchPredictor,
    CacheHierarchy,
    CacheLevel,
    Cluster,
    CoreType,
    DdrTier,
    DramTiming,
    FarTier,
    Link,
    MemoryRange,
    Stack,
    Topology,
    stack_cluster,
)

PRESET_DIR = Path(__file__).resolve().parent / "presets"  # package data: ships in wheels
MAX_EXTENDS_DEPTH = 8
T = TypeVar("T")


def preset_names() -> list[str]:
    """Names of the shipped presets (files in pimcloud/topology/presets/)."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml") if not p.stem.startswith("_"))


def resolve_topology_path(name_or_path: str) -> Path:
    """A preset name ("paper") or a path to a TOML file."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.exists():
        if not candidate.is_file():
            raise TopologyError(name_or_path, "file", name_or_path, "no such topology file")
        return candidate
    preset = PRESET_DIR / f"{name_or_path}.toml"
    if preset.is_file():
        return preset
    names = ", ".join(preset_names())
    close = difflib.get_close_matches(name_or_path, preset_names(), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise TopologyError(
        name_or_path, "topology", name_or_path,
        f"not a preset{hint}; use one of: {names}, or a path to a .toml file",
    )


def load_topology(name_or_path: str) -> Topology:
    """Parse and validate a preset or TOML file."""
    path = resolve_topology_path(name_or_path)
    raw = _load_with_extends(path, depth=0)
    return parse_topology(raw, source=str(path), default_name=path.stem)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise TopologyError(str(path), "(file)", str(error), "fix the TOML syntax") from None
    except OSError as error:
        raise TopologyError(str(path), "(file)", str(path), f"cannot read it: {error}") from None


def _load_with_extends(path: Path, depth: int) -> dict[str, Any]:
    raw = _read_toml(path)
    base_name = raw.pop("extends", None)
    unset = raw.pop("unset", [])
    if base_name is None:
        if unset:
            raise TopologyError(str(path), "unset", unset, "unset only applies with extends")
        return raw
    if not isinstance(base_name, str):
        raise TopologyError(str(path), "extends", base_name, "give a preset name or a file path")
    if depth >= MAX_EXTENDS_DEPTH:
        raise TopologyError(str(path), "extends", base_name, "break the cycle of extends")
    local = path.parent / base_name
    base_path = local if local.suffix == ".toml" and local.is_file() else None
    base_path = base_path or resolve_topology_path(base_name)
    base = _load_with_extends(base_path, depth + 1)
    base.pop("name", None)
    base.pop("description", None)
    return _merge(_unset(base, unset, str(path)), raw)


def _unset(document: dict[str, Any], dotted_paths: object, source: str) -> dict[str, Any]:
    """Remove inherited keys (``unset = ["host.caches.l3"]``) before overriding."""
    if not isinstance(dotted_paths, list) or not all(isinstance(p, str) for p in dotted_paths):
        raise TopologyError(source, "unset", dotted_paths, "give a list of dotted key paths")
    for dotted in dotted_paths:
        *parents, leaf = dotted.split(".")
        table: Any = document
        for part in parents:
            table = table.get(part) if isinstance(table, dict) else None
        if not isinstance(table, dict) or leaf not in table:
            raise TopologyError(source, "unset", dotted, "the base topology has no such key")
        del table[leaf]
    return document


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class _Table(CheckedTable):
    error_type = TopologyError


def parse_topology(raw: dict[str, Any], source: str = "<memory>",
                   default_name: str = "custom") -> Topology:
    """Validate a TOML document (already merged with its ``extends`` chain)."""
    top = _Table(source, "", raw)
    name = top.string("name", default_name)
    description = top.string("description", "")
    core_types = _parse_core_types(top.table("core_types"))

    host_table = top.table("host")
    assert host_table is not None
    host = _parse_cluster(host_table, HOST_CLUSTER, core_types, cores_key="cores")
    host_table.finish()

    stacks = _parse_stacks(top.table("stacks"), core_types)
    ddr_table = top.optional_table("ddr")
    ddr = None
    if ddr_table is not None:
        ddr = DdrTier(ddr_table.quantity("capacity", parse_size),
                      _parse_dram(ddr_table.table("dram")))
        ddr_table.finish()
    far = _parse_far(top.optional_table("far"))

    links = top.table("links") if stacks else top.optional_table("links")
    cpu_stack, stack_stack, network, pairs = _parse_links(links, len(stacks))
    ranges = _parse_ranges(top, stacks, ddr, far)
    top.finish()

    if host.cores == 0 and not any(s.cluster.cores for s in stacks):
        raise TopologyError(source, "host.cores", 0,
                            "the server needs at least one core: set host.cores or "
                            "stacks.pim_cores above 0")
    if not stacks and ddr is None:
        raise TopologyError(source, "stacks.count", 0,
                            "the server needs memory: add stacks or a [ddr] tier")
    topology = Topology(
        name=name, description=description, host=host, stacks=stacks, ddr=ddr,
        cpu_stack_link=cpu_stack, stack_stack_link=stack_stack, stack_network=network,
        stack_pair_latency=tuple((a, b, ps) for (a, b), ps in sorted(pairs.items())),
        explicit_ranges=ranges, source=source, far=far,
    )
    # Derived-layout checks (APIC ids, the address map) raise TopologyError too.
    from .interconnect import check_links
    from .layout import check_layout

    check_layout(topology)
    check_links(topology)
    return topology


def _parse_core_types(table: _Table | None) -> dict[str, CoreType]:
    assert table is not None
    types: dict[str, CoreType] = {}
    for type_name in table.data:
        sub = table.table(type_name)
        assert sub is not None
        model = sub.choice("model", ("o3", "minor", "timing", "atomic"))
        bp = BranchPredictor()
        bp_table = sub.optional_table("branch_predictor")
        if bp_table is not None:
            bp = BranchPredictor(
                bhsr_entries=bp_table.integer("bhsr_entries", bp.bhsr_entries, 1),
                bhsr_bits=bp_table.integer("bhsr_bits", bp.bhsr_bits, 1, 64),
                pht_entries=bp_table.integer("pht_entries", bp.pht_entries, 1),
                pht_bits=bp_table.integer("pht_bits", bp.pht_bits, 1, 8),
            )
            bp_table.finish()
        defaults = CoreType(name=type_name, model="o3", frequency_hz=1)
        types[type_name] = CoreType(
            name=type_name,
            model=model,  # type: ignore[arg-type]
            frequency_hz=sub.quantity("frequency", parse_frequency),
            issue_width=sub.integer("issue_width", defaults.issue_width, 1, 16),
            iq_entries=sub.integer("iq_entries", defaults.iq_entries, 1),
            rob_entries=sub.integer("rob_entries", defaults.rob_entries, 1),
            lq_entries=sub.integer("lq_entries", defaults.lq_entries, 1),
            sq_entries=sub.integer("sq_entries", defaults.sq_entries, 1),
            branch_predictor=bp,
            description=sub.string("description", ""),
        )
        sub.finish()
    if not types:
        raise table.error("(any)", "(empty)", "define at least one core type, e.g. "
                          "[core_types.brawny] with model and frequency")
    return types


def _parse_cache_level(table: _Table, key: str) -> CacheLevel | None:
    sub = table.optional_table(key)
    if sub is None:
        return None
    size = sub.quantity("size", parse_size)
    assoc = sub.integer("assoc", None, 1, 64)
    level = CacheLevel(size=size, assoc=assoc, latency_cycles=sub.integer("latency", None, 1))
    sub.finish()
    if size % (64 * assoc) != 0 or (size // (64 * assoc)) & (size // (64 * assoc) - 1):
        raise sub.error("size", sub.data["size"],
                        f"size / (64-byte lines x {assoc} ways) must be a power of two")
    return level


def _parse_cluster(table: _Table, name: str, core_types: dict[str, CoreType],
                   cores_key: str, max_cores: int = 255) -> Cluster:
    cores = table.integer(cores_key, None, 0, max_cores, why=" (x86 APIC ids are 8 bits)")
    if cores == 0:
        for key in ("core_type", "caches"):
            table.read.add(key)
        return Cluster(name=name, cores=0, core_type=None, caches=None)
    type_name = table.string("core_type")
    if type_name not in core_types:
        known = ", ".join(sorted(core_types))
        raise table.error("core_type", type_name,
                          f"not defined in [core_types]; use one of {known}")
    caches_table = table.table("caches")
    assert caches_table is not None
    hierarchy = caches_table.choice("hierarchy", ("deep", "shallow"))
    l1i = _parse_cache_level(caches_table, "l1i")
    l1d = _parse_cache_level(caches_table, "l1d")
    l2 = _parse_cache_level(caches_table, "l2")
    l3 = _parse_cache_level(caches_table, "l3")
    caches_table.finish()
    if l1i is None or l1d is None:
        raise caches_table.error("l1i" if l1i is None else "l1d", "(missing)",
                                 "every core needs private L1I and L1D caches")
    if hierarchy == "deep" and (l2 is None or l3 is None):
        raise caches_table.error("l2" if l2 is None else "l3", "(missing)",
                                 "a deep hierarchy needs l2 (private) and l3 (shared)")
    if hierarchy == "shallow" and (l2 is not None or l3 is not None):
        raise caches_table.error("l2" if l2 is not None else "l3", "(present)",
                                 "a shallow hierarchy has L1s only: remove it or set "
                                 "hierarchy = \"deep\"")
    return Cluster(name=name, cores=cores, core_type=core_types[type_name],
                   caches=CacheHierarchy(hierarchy, l1i, l1d, l2, l3))  # type: ignore[arg-type]


def _parse_dram(table: _Table | None) -> DramTiming:
    assert table is not None
    q = table.quantity
    dram = DramTiming(
        tck=q("tCK", parse_time_ps), trcd=q("tRCD", parse_time_ps), tcl=q("tCL", parse_time_ps),
        trp=q("tRP", parse_time_ps), tras=q("tRAS", parse_time_ps), twr=q("tWR", parse_time_ps),
        trefi=q("tREFI", parse_time_ps, "3.9us"),
        frontend_latency=q("frontend_latency", parse_time_ps, "10ns", positive=False),
        backend_latency=q("backend_latency", parse_time_ps, "10ns", positive=False),
        peak_bandwidth=q("peak_bandwidth", parse_bandwidth),
    )
    table.finish()
    if dram.tras < dram.trcd:
        raise table.error("tRAS", table.data["tRAS"], "tRAS must be at least tRCD")
    return dram


def _parse_far(table: _Table | None) -> FarTier | None:
    """``[far]``: capacity, its DRAM and the link from the host socket."""
    if table is None:
        return None
    capacity = table.quantity("capacity", parse_size)
    dram = _parse_dram(table.table("dram"))
    link, link_table = _parse_link(table, "link")
    link_table.finish()
    table.finish()
    return FarTier(capacity, dram, link)


def _parse_stacks(table: _Table | None, core_types: dict[str, CoreType]) -> tuple[Stack, ...]:
    assert table is not None
    count = table.integer("count", None, 0, 64)
    if count == 0:
        table.finish()
        return ()
    capacity = table.quantity("capacity", parse_size)
    cluster_template = _parse_cluster(table, "stack", core_types, cores_key="pim_cores")
    dram = _parse_dram(table.table("dram"))
    table.finish()
    return tuple(
        Stack(index=i, capacity=capacity, dram=dram,
              cluster=Cluster(stack_cluster(i), cluster_template.cores,
                              cluster_template.core_type, cluster_template.caches))
        for i in range(count)
    )


def _parse_link(table: _Table, key: str) -> tuple[Link, _Table]:
    sub = table.table(key)
    assert sub is not None
    link = Link(latency=sub.quantity("latency", parse_time_ps, positive=False),
                bidirectional_bandwidth=sub.quantity("bidirectional_bandwidth", parse_bandwidth))
    return link, sub


def _parse_links(
    table: _Table | None, stack_count: int
) -> tuple[Link, Link, Any, dict[tuple[int, int], int]]:
    if table is None:
        unused = Link(latency=0, bidirectional_bandwidth=1)
        return unused, unused, "full", {}
    cpu_stack, cpu_table = _parse_link(table, "cpu_stack")
    cpu_table.finish()
    stack_stack, ss_table = _parse_link(table, "stack_stack")
    network = ss_table.choice("network", ("full", "ring", "chain"), "full")
    pairs: dict[tuple[int, int], int] = {}
    overrides = ss_table.array("latency_overrides", [])
    for position, entry in enumerate(overrides):
        item = _Table(table.source, f"links.stack_stack.latency_overrides[{position}]", entry)
        a = item.integer("from", None, 0, max(stack_count - 1, 0),
                       why=f" (stacks are numbered 0..{stack_count - 1})")
        b = item.integer("to", None, 0, max(stack_count - 1, 0),
                       why=f" (stacks are numbered 0..{stack_count - 1})")
        if a == b:
            raise item.error("to", b, "a stack's latency to itself is its DRAM's, not a link's")
        if (a, b) in pairs:
            raise item.error("to", b, f"the pair {a}->{b} is given twice; keep one entry")
        pairs[(a, b)] = item.quantity("latency", parse_time_ps, positive=False)
        item.finish()
    for (a, b), latency in pairs.items():
        if pairs.get((b, a)) != latency:
            raise ss_table.error(
                "latency_overrides", f"{a}->{b}",
                f"asymmetric: give the pair {b}->{a} the same latency (links carry both ways)")
    ss_table.finish()
    table.finish()
    if network == "ring" and stack_count < 3:
        raise table.error("stack_stack.network", network,
                          "a ring needs at least 3 stacks; use \"full\" or \"chain\"")
    return cpu_stack, stack_stack, network, pairs


def _parse_ranges(top: _Table, stacks: tuple[Stack, ...], ddr: DdrTier | None,
                  far: FarTier | None) -> tuple[MemoryRange, ...]:
    table = top.optional_table("memory")
    if table is None:
        return ()
    owners = ((["ddr"] if ddr else []) + [stack_cluster(s.index) for s in stacks]
              + ([FAR_OWNER] if far else []))
    ranges = []
    for position, entry in enumerate(table.array("ranges")):
        item = _Table(top.source, f"memory.ranges[{position}]", entry)
        owner = item.string("node")
        if owner not in owners:
            raise item.error("node", owner, "must name a memory owner: " + ", ".join(owners))
        start = item.quantity("start", parse_size, positive=False)
        ranges.append(MemoryRange(owner, start, item.quantity("size", parse_size)))
        item.finish()
    table.finish()
    return tuple(ranges)
