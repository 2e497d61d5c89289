"""What the gem5 board builds, derived from a topology without importing gem5.

The components (board, processor, cache hierarchy, memory) only turn these plans into
SimObjects; everything that can be computed is computed here, where it is tested in CI.
The router tells clusters apart by requestor name.  CPUs sit in one list per role in CPU
id order (``board.processor.detailed_cores12``), because gem5 hands out context ids, and
so x86 APIC ids, in the sorted order of SimObject names; caches of a cluster are named
after it (``board.cache_hierarchy.stack1_l1d3``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pimcloud.topology import Topology, cpus, memory_ranges
from pimcloud.topology.interconnect import (
    directed_links,
    dram_of,
    location_of,
    locations,
    path_between,
)
from pimcloud.topology.layout import node_of_cluster
from pimcloud.topology.model import CacheHierarchy, CoreType, DramTiming

BOARD_NAME = "board"
# Boot cores (atomic, or KVM where available) run to the checkpoint; detailed cores
# (O3, Minor, TimingSimple per core type) are switched in after a restore.
CORE_ROLES = ("boot", "detailed")


# gem5's own default forward time-buffer depth, in cycles.
GEM5_FORWARD_COM_SIZE = 5


def writeback_slots(rob_entries: int, width: int) -> int:
    """Cycles of the O3 pipeline's forward time buffers.

    When more instructions finish in one cycle than the writeback width, IEW queues the
    surplus into later cycles of the IEW-to-commit buffer; with gem5's default depth of
    five cycles a burst of load completions overflows it and gem5 aborts ("TimeBuffer
    ... Assertion `idx >= -past && idx <= future' failed", gem5 issue #3096; seen here
    on Arch 2 under the busy-loop benchmark).  No more instructions than the ROB holds
    can finish at once, so this depth never overflows; delays are unchanged.
    """
    return max(GEM5_FORWARD_COM_SIZE, -(-rob_entries // width) + 1)


def cores_attribute(role: str) -> str:
    """Processor attribute holding all cores of one role, in CPU id order."""
    return f"{role}_cores"


@dataclass(frozen=True)
class ClusterPlan:
    """The cores of one cluster: CPU ids (= APIC ids), core type, caches, clock."""

    name: str
    cpu_ids: tuple[int, ...]
    core_type: CoreType
    caches: CacheHierarchy

    @property
    def clock(self) -> str:
        return f"{self.core_type.frequency_hz}Hz"

    @property
    def cache_prefix(self) -> str:
        """Prefix of this cluster's cache attributes in the hierarchy: 'stack0_'."""
        return f"{self.name}_"


@dataclass(frozen=True)
class MemoryControllerPlan:
    """One memory controller: a contiguous range of one owner at one location."""

    owner: str
    location: int
    start: int
    size: int
    dram: DramTiming

    @property
    def name(self) -> str:
        return f"{self.owner}_ctrl_{self.start:x}"


@dataclass(frozen=True)
class RouterPlan:
    """Parameters of the scons-extra PimLinkRouter, in its own parameter names."""

    num_locations: int
    target_locations: tuple[int, ...]
    requestor_prefixes: tuple[str, ...]
    requestor_locations: tuple[int, ...]
    link_src: tuple[int, ...]
    link_dst: tuple[int, ...]
    link_latency: tuple[str, ...]
    link_bandwidth: tuple[str, ...]
    route_offsets: tuple[int, ...]
    route_links: tuple[int, ...]


def cluster_plans(topology: Topology) -> list[ClusterPlan]:
    """One plan per cluster with cores, CPU ids in order."""
    by_cluster: dict[str, list[int]] = {}
    for cpu in cpus(topology):
        by_cluster.setdefault(cpu.cluster, []).append(cpu.cpu_id)
    plans = []
    for cluster in topology.clusters:
        assert cluster.core_type is not None and cluster.caches is not None
        plans.append(ClusterPlan(cluster.name, tuple(by_cluster[cluster.name]),
                                 cluster.core_type, cluster.caches))
    return plans


def memory_controller_plans(topology: Topology) -> list[MemoryControllerPlan]:
    """A controller per memory range (a stack split by the x86 hole gets two)."""
    index = {name: i for i, name in enumerate(locations(topology))}
    return [MemoryControllerPlan(r.owner, index[location_of(r.owner)], r.start, r.size,
                                 dram_of(topology, r.owner))
            for r in memory_ranges(topology)]


def vector_element_name(attribute: str, index: int, length: int) -> str:
    """gem5's name for element ``index`` of a SimObject vector of ``length``: a single
    element takes the bare name; otherwise indices are zero-padded to ceil(log10(length))
    digits (20 cores: cores00..cores19)."""
    if length == 1:
        return attribute
    width = math.ceil(math.log10(length))
    return f"{attribute}{index:0{width}d}"


def requestor_prefixes(topology: Topology) -> list[tuple[str, int]]:
    """(name prefix, location) pairs: cores, caches and walkers of each cluster.

    Names are as gem5's System keeps requestor names: without the system's own name
    (``processor.detailed_cores04.core.data``, not ``board.processor...``).
    """
    index = {name: i for i, name in enumerate(locations(topology))}
    pairs = []
    all_cpus = cpus(topology)
    for cpu in all_cpus:
        for role in CORE_ROLES:
            # The trailing dot keeps cores1 from matching cores12.
            element = vector_element_name(cores_attribute(role), cpu.cpu_id, len(all_cpus))
            pairs.append((f"processor.{element}.", index[cpu.cluster]))
    for plan in cluster_plans(topology):
        pairs.append((f"cache_hierarchy.{plan.cache_prefix}", index[plan.name]))
    return pairs


def router_plan(topology: Topology) -> RouterPlan:
    """Links, routes and requestor mapping for the PimLinkRouter."""
    names = locations(topology)
    index = {name: i for i, name in enumerate(names)}
    links = directed_links(topology)
    offsets = [0]
    route_links: list[int] = []
    for a in names:
        for b in names:
            route_links += [link.link_id for link in path_between(topology, a, b).links]
            offsets.append(len(route_links))
    prefixes = requestor_prefixes(topology)
    return RouterPlan(
        num_locations=len(names),
        target_locations=tuple(c.location for c in memory_controller_plans(topology)),
        requestor_prefixes=tuple(p for p, _ in prefixes),
        requestor_locations=tuple(loc for _, loc in prefixes),
        link_src=tuple(index[link.src] for link in links),
        link_dst=tuple(index[link.dst] for link in links),
        link_latency=tuple(f"{link.latency_ps}ps" for link in links),
        link_bandwidth=tuple(f"{link.bandwidth}B/s" for link in links),
        route_offsets=tuple(offsets),
        route_links=tuple(route_links),
    )


THROTTLE_STEP = "100ns"


@dataclass(frozen=True)
class CountersPlan:
    """Parameters of the scons-extra PimCounters, in its own parameter names.

    Counted memories are every memory owner (the DDR tier first when there is one, then
    the stacks, then far memory); each owner's NUMA node tells the guest which is which.
    """

    stack_ranges: tuple[tuple[int, int], ...]  # (start, size) of every range
    range_stacks: tuple[int, ...]
    stack_nodes: tuple[int, ...]
    cpu_prefixes: tuple[str, ...]
    cpu_ids: tuple[int, ...]
    cpu_clocks: tuple[str, ...]
    # Level l keeps a CPU's requests l x this apart below the caches (its reads: the
    # caches' writebacks carry no CPU). Level 1 caps a CPU's reads at 0.64 GB/s of 64-byte
    # lines, under the ~0.76 GB/s one O3 host core's membw triad reads (1.14 GB/s at the
    # controllers with its writebacks, mini/2 and paper/8); level 9 at 0.07 GB/s. With
    # PimCounters' own 2 ns (level 9 at 3.6 GB/s) no level bit on any core here, with 64 ns
    # level 1 did not.
    throttle_step: str = THROTTLE_STEP


def counters_plan(topology: Topology) -> CountersPlan:
    """Counted ranges per memory owner, and the requestor names of every CPU."""
    owners: list[str] = []
    ranges, range_stacks = [], []
    for r in memory_ranges(topology):
        if r.owner not in owners:
            owners.append(r.owner)
        ranges.append((r.start, r.size))
        range_stacks.append(owners.index(r.owner))
    all_cpus = cpus(topology)
    prefixes, ids = [], []
    for cpu in all_cpus:
        for role in CORE_ROLES:
            element = vector_element_name(cores_attribute(role), cpu.cpu_id, len(all_cpus))
            prefixes.append(f"processor.{element}.")
            ids.append(cpu.cpu_id)
    return CountersPlan(
        stack_ranges=tuple(ranges),
        range_stacks=tuple(range_stacks),
        stack_nodes=tuple(node_of_cluster(topology, owner) for owner in owners),
        cpu_prefixes=tuple(prefixes),
        cpu_ids=tuple(ids),
        cpu_clocks=tuple(f"{cpu.frequency_hz}Hz" for cpu in all_cpus),
    )
