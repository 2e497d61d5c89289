"""What the guest sees: CPUs with APIC ids, NUMA nodes, the physical memory map, E820.

NUMA numbering: node 0 is the host socket when it has cores or a DDR tier (memoryless
otherwise), then one node per stack in order, then far memory's CPU-less node.  A PIM-only
system (no host cores, no DDR) starts with stack 0 as node 0.  CPU ids, gem5 context ids
and APIC ids are equal: host cores first, then each stack's PIM cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..units import format_size
from .errors import TopologyError
from .model import FAR_OWNER, HOST_CLUSTER, Cluster, MemoryRange, Topology, stack_cluster

GiB = 1 << 30
MiB = 1 << 20
# x86 keeps [3 GiB, 4 GiB) for device memory (IO APIC, local APIC, PCI windows).
X86_HOLE_START = 3 * GiB
X86_HOLE_END = 4 * GiB
# gem5's x86 platform maps PCI I/O ports at 0x8000000000: RAM must end below it.
MAX_PHYSICAL_ADDRESS = 0x80_0000_0000
RANGE_ALIGNMENT = 2 * MiB
MAX_E820_ENTRIES = 128
MAX_APIC_ID = 254  # 0xFF is the broadcast id
# The legacy low-memory hole every x86 board keeps (EBDA, VGA, BIOS ROM).
LOW_RAM_END = 0x9FC00
LEGACY_END = 0x100000


@dataclass(frozen=True)
class Cpu:
    """One logical CPU: id (= gem5 context id = APIC id), cluster and NUMA node."""

    cpu_id: int
    apic_id: int
    cluster: str
    node: int
    core_type: str
    model: str
    frequency_hz: int


@dataclass(frozen=True)
class NumaNode:
    """A NUMA node: the cores of one cluster and/or the memory of one owner."""

    node_id: int
    name: str
    cluster: str | None
    memory_owner: str | None
    capacity: int
    cpus: tuple[int, ...]
    ranges: tuple[MemoryRange, ...]


@dataclass(frozen=True)
class E820Entry:
    """One BIOS memory-map entry; ``kind`` 1 is usable RAM, 2 is reserved."""

    start: int
    size: int
    kind: int


def _host_has_node(topology: Topology) -> bool:
    return topology.host.cores > 0 or topology.ddr is not None


def memory_owners(topology: Topology) -> list[tuple[str, int]]:
    """(owner, capacity) in address-map order: the DDR tier, the stacks, far memory."""
    owners = [("ddr", topology.ddr.capacity)] if topology.ddr else []
    owners += [(stack_cluster(s.index), s.capacity) for s in topology.stacks]
    if topology.far:
        owners.append((FAR_OWNER, topology.far.capacity))
    return owners


def auto_ranges(topology: Topology) -> tuple[MemoryRange, ...]:
    """Pack the owners from address 0 upward, stepping over the x86 hole."""
    ranges: list[MemoryRange] = []
    cursor = 0
    for owner, capacity in memory_owners(topology):
        remaining = capacity
        while remaining > 0:
            if X86_HOLE_START <= cursor < X86_HOLE_END:
                cursor = X86_HOLE_END
            limit = X86_HOLE_START if cursor < X86_HOLE_START else 1 << 62
            size = min(remaining, limit - cursor)
            ranges.append(MemoryRange(owner, cursor, size))
            cursor += size
            remaining -= size
    return tuple(ranges)


def memory_ranges(topology: Topology) -> tuple[MemoryRange, ...]:
    """The physical memory map, sorted by address."""
    chosen = topology.explicit_ranges or auto_ranges(topology)
    return tuple(sorted(chosen, key=lambda r: r.start))


@cache
def _layout(topology: Topology) -> tuple[tuple[Cpu, ...], tuple[NumaNode, ...]]:
    ranges = memory_ranges(topology)
    nodes: list[NumaNode] = []
    cpus: list[Cpu] = []

    def add_node(name: str, cluster: Cluster | None, owner: str | None, capacity: int) -> None:
        node_id = len(nodes)
        cpu_ids: list[int] = []
        if cluster is not None and cluster.core_type is not None:
            for _ in range(cluster.cores):
                cpu_id = len(cpus)
                cpu_ids.append(cpu_id)
                cpus.append(Cpu(cpu_id, cpu_id, cluster.name, node_id, cluster.core_type.name,
                                cluster.core_type.model, cluster.core_type.frequency_hz))
        node_ranges = tuple(r for r in ranges if r.owner == owner) if owner else ()
        nodes.append(NumaNode(node_id, name, cluster.name if cluster and cluster.cores else None,
                              owner, capacity, tuple(cpu_ids), node_ranges))

    if _host_has_node(topology):
        ddr = topology.ddr
        add_node(HOST_CLUSTER, topology.host, "ddr" if ddr else None, ddr.capacity if ddr else 0)
    for stack in topology.stacks:
        add_node(stack.cluster.name, stack.cluster, stack.cluster.name, stack.capacity)
    if topology.far:
        add_node(FAR_OWNER, None, FAR_OWNER, topology.far.capacity)
    return tuple(cpus), tuple(nodes)


def cpus(topology: Topology) -> tuple[Cpu, ...]:
    """Every CPU in id order."""
    return _layout(topology)[0]


def numa_nodes(topology: Topology) -> tuple[NumaNode, ...]:
    """Every NUMA node in id order."""
    return _layout(topology)[1]


def slow_tier_node(topology: Topology) -> int:
    """The node the tiered placements call slow: far memory's CPU-less node when the
    server has one, else node 0 (the host socket's DDR tier)."""
    return node_of_cluster(topology, FAR_OWNER) if topology.far else 0


def node_of_cluster(topology: Topology, cluster: str) -> int:
    """The NUMA node holding a cluster's cores or memory ("host", "stack1", "ddr")."""
    for node in numa_nodes(topology):
        if cluster in (node.name, node.cluster, node.memory_owner):
            return node.node_id
    raise KeyError(cluster)


def e820_entries(topology: Topology) -> tuple[E820Entry, ...]:
    """The BIOS memory map the board hands to Linux: RAM per range, legacy holes reserved."""
    entries: list[E820Entry] = []
    for mem in memory_ranges(topology):
        if mem.start == 0:
            entries.append(E820Entry(0, LOW_RAM_END, 1))
            entries.append(E820Entry(LOW_RAM_END, LEGACY_END - LOW_RAM_END, 2))
            if mem.size > LEGACY_END:
                entries.append(E820Entry(LEGACY_END, mem.size - LEGACY_END, 1))
        else:
            entries.append(E820Entry(mem.start, mem.size, 1))
    # The top 64 KiB below 4 GiB hold the reset vector / firmware ROM.
    entries.append(E820Entry(X86_HOLE_END - 0x10000, 0x10000, 2))
    return tuple(sorted(entries, key=lambda e: e.start))


def check_layout(topology: Topology) -> None:
    """Raise TopologyError for anything the x86 platform cannot realise."""
    src = topology.source
    total_cpus = topology.host.cores + sum(s.cluster.cores for s in topology.stacks)
    if total_cpus - 1 > MAX_APIC_ID:
        raise TopologyError(src, "host.cores + stacks.count x stacks.pim_cores", total_cpus,
                            f"x86 xAPIC ids are 8 bits: at most {MAX_APIC_ID + 1} CPUs "
                            "(0xFF is broadcast); use fewer cores")
    for owner, capacity in memory_owners(topology):
        field = {"ddr": "ddr.capacity", FAR_OWNER: "far.capacity"}.get(owner, "stacks.capacity")
        if capacity % RANGE_ALIGNMENT:
            raise TopologyError(src, field, format_size(capacity),
                                "capacities must be whole multiples of 2MiB")
        if capacity < 64 * MiB:
            raise TopologyError(src, field, format_size(capacity),
                                "each memory node needs at least 64MiB for Linux to use it")
    ranges = memory_ranges(topology)
    if topology.explicit_ranges:
        _check_explicit_ranges(topology, ranges)
    end = max(r.end for r in ranges)
    if end > MAX_PHYSICAL_ADDRESS:
        raise TopologyError(src, "stacks.capacity", format_size(topology.total_memory),
                            f"the memory map ends at {end:#x}, beyond {MAX_PHYSICAL_ADDRESS:#x} "
                            "where gem5's x86 I/O space starts; lower the capacities")
    if len(e820_entries(topology)) > MAX_E820_ENTRIES:
        raise TopologyError(src, "memory.ranges", len(ranges),
                            f"the E820 map holds at most {MAX_E820_ENTRIES} entries; "
                            "merge adjacent ranges")


def _check_explicit_ranges(topology: Topology, ranges: tuple[MemoryRange, ...]) -> None:
    src = topology.source
    for position, mem in enumerate(ranges):
        field = f"memory.ranges (node {mem.owner} at {mem.start:#x})"
        if mem.start % RANGE_ALIGNMENT or mem.size % RANGE_ALIGNMENT:
            raise TopologyError(src, field, f"{mem.start:#x}+{mem.size:#x}",
                                "start and size must be multiples of 2MiB")
        if mem.start < X86_HOLE_END and mem.end > X86_HOLE_START:
            raise TopologyError(src, field, f"[{mem.start:#x}, {mem.end:#x})",
                                "overlaps the x86 device hole [3GiB, 4GiB); split it around "
                                "the hole")
        if position and ranges[position - 1].end > mem.start:
            before = ranges[position - 1]
            raise TopologyError(src, field, f"[{mem.start:#x}, {mem.end:#x})",
                                f"overlaps node {before.owner}'s range "
                                f"[{before.start:#x}, {before.end:#x})")
    if ranges[0].start != 0:
        raise TopologyError(src, "memory.ranges", f"{ranges[0].start:#x}",
                            "some range must start at 0: Linux needs low memory to boot")
    for owner, capacity in memory_owners(topology):
        placed = sum(r.size for r in ranges if r.owner == owner)
        if placed != capacity:
            raise TopologyError(src, f"memory.ranges (node {owner})", format_size(placed),
                                f"the ranges must add up to the node's capacity "
                                f"{format_size(capacity)}")
