"""The link model: who reaches which memory over which SerDes links, and at what cost.

Locations are the host socket ("host", where a DDR tier also sits) and the stacks.
The host has one link to every stack; stacks are joined by a full mesh, a ring or a
chain of stack-to-stack links (per-pair latency overrides replace hops x latency).
A memory access pays the target DRAM's nominal latency plus the link latency both ways.
These numbers feed the SLIT/HMAT tables and the gem5 memory-side router.
"""

from __future__ import annotations

from dataclasses import dataclass

from .layout import numa_nodes
from .model import HOST_CLUSTER, DramTiming, Topology, stack_cluster

LOCAL_DISTANCE = 10
MAX_DISTANCE = 254  # 255 means unreachable in the SLIT


@dataclass(frozen=True)
class Path:
    """The link path between two locations: one-way latency, hops and bottleneck."""

    hops: int
    one_way_latency_ps: int
    bandwidth_per_direction: int | None  # None when no link is crossed


def location_of(owner_or_cluster: str) -> str:
    """The place a cluster or memory owner sits: "ddr" sits at the host socket."""
    return HOST_CLUSTER if owner_or_cluster in ("ddr", HOST_CLUSTER) else owner_or_cluster


def _stack_index(location: str) -> int:
    return int(location.removeprefix("stack"))


def stack_hops(topology: Topology, a: int, b: int) -> int:
    """Stack-to-stack hop count in the configured network."""
    if a == b:
        return 0
    distance = abs(a - b)
    if topology.stack_network == "chain":
        return distance
    if topology.stack_network == "ring":
        return min(distance, len(topology.stacks) - distance)
    return 1


def path_between(topology: Topology, a: str, b: str) -> Path:
    """Path between two locations ("host", "stack0", ...)."""
    a, b = location_of(a), location_of(b)
    if a == b:
        return Path(0, 0, None)
    if HOST_CLUSTER in (a, b):
        link = topology.cpu_stack_link
        return Path(1, link.latency, link.bandwidth_per_direction)
    i, j = _stack_index(a), _stack_index(b)
    link = topology.stack_stack_link
    for x, y, latency in topology.stack_pair_latency:
        if (x, y) == (i, j):
            return Path(1, latency, link.bandwidth_per_direction)
    hops = stack_hops(topology, i, j)
    return Path(hops, hops * link.latency, link.bandwidth_per_direction)


def dram_of(topology: Topology, owner: str) -> DramTiming:
    """The DRAM timing behind a memory owner."""
    if owner == "ddr":
        assert topology.ddr is not None
        return topology.ddr.dram
    return topology.stacks[_stack_index(owner)].dram


def access_latency_ps(topology: Topology, initiator: str, owner: str) -> int:
    """Nominal load latency from a cluster's cores to a memory owner (no caches)."""
    path = path_between(topology, initiator, owner)
    return dram_of(topology, owner).nominal_access_ps + 2 * path.one_way_latency_ps


def access_bandwidth(topology: Topology, initiator: str, owner: str) -> int:
    """Bytes/s one cluster can draw from one memory owner: DRAM peak or the link."""
    path = path_between(topology, initiator, owner)
    dram_peak = dram_of(topology, owner).peak_bandwidth
    if path.bandwidth_per_direction is None:
        return dram_peak
    return min(dram_peak, path.bandwidth_per_direction)


def _reference_latency_ps(topology: Topology) -> int:
    owners = (["ddr"] if topology.ddr else []) + [stack_cluster(s.index) for s in topology.stacks]
    return min(dram_of(topology, o).nominal_access_ps for o in owners)


def slit_distances(topology: Topology) -> list[list[int]]:
    """SLIT matrix: 10 on the diagonal, 10 x (1 + round-trip link time / local DRAM
    latency) elsewhere, at least 11 so Linux accepts the table. Symmetric by design."""
    nodes = numa_nodes(topology)
    reference = _reference_latency_ps(topology)
    matrix = []
    for a in nodes:
        row = []
        for b in nodes:
            if a.node_id == b.node_id:
                row.append(LOCAL_DISTANCE)
                continue
            round_trip = 2 * path_between(topology, a.name, b.name).one_way_latency_ps
            value = round(LOCAL_DISTANCE * (1 + round_trip / reference))
            row.append(max(LOCAL_DISTANCE + 1, min(MAX_DISTANCE, value)))
        matrix.append(row)
    return matrix


@dataclass(frozen=True)
class AccessCost:
    """One cell of the initiator x target matrix."""

    initiator_node: int
    target_node: int
    latency_ps: int
    bandwidth: int


def access_matrix(topology: Topology) -> list[AccessCost]:
    """Latency and bandwidth from every node with CPUs to every node with memory."""
    nodes = numa_nodes(topology)
    cells = []
    for initiator in (n for n in nodes if n.cpus):
        assert initiator.cluster is not None
        for target in (n for n in nodes if n.memory_owner):
            assert target.memory_owner is not None
            cells.append(AccessCost(
                initiator.node_id, target.node_id,
                access_latency_ps(topology, initiator.cluster, target.memory_owner),
                access_bandwidth(topology, initiator.cluster, target.memory_owner),
            ))
    return cells


def local_initiator(topology: Topology, target_node: int) -> int | None:
    """The node whose CPUs are nearest a memory node (itself if it has CPUs)."""
    cells = [c for c in access_matrix(topology) if c.target_node == target_node]
    if not cells:
        return None
    return min(cells, key=lambda c: (c.latency_ps, c.initiator_node != target_node,
                                     c.initiator_node)).initiator_node
