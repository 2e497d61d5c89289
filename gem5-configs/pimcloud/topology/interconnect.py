"""The link model: who reaches which memory over which SerDes links, and at what cost.

Locations are the host socket ("host", where a DDR tier also sits), the stacks, and far
memory ("far") when the server has it. The host has one link to every stack and one to
far memory; stacks are joined by a full mesh, a ring or a chain of stack-to-stack links
(a per-pair latency override replaces one link's latency); far memory is reached through
the host socket only.
Routes are lowest-latency paths over these directed links; the gem5 router gets the
same links and routes, so the tables and the simulation never disagree.
A memory access pays the target DRAM's nominal latency plus the link latency both ways.
These numbers feed the SLIT/HMAT tables and the gem5 memory-side router.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cache

from .errors import TopologyError
from .layout import memory_owners, numa_nodes
from .model import FAR_OWNER, HOST_CLUSTER, DramTiming, Topology, stack_cluster

LOCAL_DISTANCE = 10
MAX_DISTANCE = 254  # 255 means unreachable in the SLIT


@dataclass(frozen=True)
class DirectedLink:
    """One direction of a SerDes link between two locations."""

    link_id: int
    src: str
    dst: str
    latency_ps: int
    bandwidth: int  # bytes per second in this direction


@dataclass(frozen=True)
class Path:
    """The links a request crosses between two locations, in order."""

    links: tuple[DirectedLink, ...]

    @property
    def hops(self) -> int:
        return len(self.links)

    @property
    def one_way_latency_ps(self) -> int:
        return sum(link.latency_ps for link in self.links)

    @property
    def bandwidth_per_direction(self) -> int | None:
        """The bottleneck link's bandwidth; None when no link is crossed."""
        return min((link.bandwidth for link in self.links), default=None)


def location_of(owner_or_cluster: str) -> str:
    """The place a cluster or memory owner sits: "ddr" sits at the host socket."""
    return HOST_CLUSTER if owner_or_cluster in ("ddr", HOST_CLUSTER) else owner_or_cluster


def locations(topology: Topology) -> list[str]:
    """Location 0 is the host socket (even without cores), then one per stack, then far
    memory."""
    far = [FAR_OWNER] if topology.far else []
    return [HOST_CLUSTER] + [stack_cluster(s.index) for s in topology.stacks] + far


def stack_neighbours(topology: Topology, a: int, b: int) -> bool:
    """Whether two stacks have a direct link in the configured network."""
    count = len(topology.stacks)
    if a == b:
        return False
    if topology.stack_network == "full":
        return True
    if topology.stack_network == "ring" and {a, b} == {0, count - 1}:
        return True
    return abs(a - b) == 1


def check_links(topology: Topology) -> None:
    """A latency override must name a pair the network actually links."""
    for a, b, _ in topology.stack_pair_latency:
        if not stack_neighbours(topology, a, b):
            raise TopologyError(
                topology.source, "links.stack_stack.latency_overrides", f"{a}->{b}",
                f"stacks {a} and {b} have no direct link in a {topology.stack_network} network; "
                "override only linked pairs or use network = \"full\"")


@cache
def directed_links(topology: Topology) -> tuple[DirectedLink, ...]:
    """Host<->stack links for every stack, then stack<->stack links of the network, then
    host<->far memory."""
    result: list[DirectedLink] = []

    def add(src: str, dst: str, latency: int, bidirectional_bandwidth: int) -> None:
        result.append(DirectedLink(len(result), src, dst, latency, bidirectional_bandwidth // 2))

    cpu = topology.cpu_stack_link
    for stack in topology.stacks:
        name = stack_cluster(stack.index)
        add(HOST_CLUSTER, name, cpu.latency, cpu.bidirectional_bandwidth)
        add(name, HOST_CLUSTER, cpu.latency, cpu.bidirectional_bandwidth)
    overrides = {(a, b): ps for a, b, ps in topology.stack_pair_latency}
    ss = topology.stack_stack_link
    for a in range(len(topology.stacks)):
        for b in range(len(topology.stacks)):
            if stack_neighbours(topology, a, b):
                add(stack_cluster(a), stack_cluster(b), overrides.get((a, b), ss.latency),
                    ss.bidirectional_bandwidth)
    if topology.far:
        far = topology.far.link
        add(HOST_CLUSTER, FAR_OWNER, far.latency, far.bidirectional_bandwidth)
        add(FAR_OWNER, HOST_CLUSTER, far.latency, far.bidirectional_bandwidth)
    return tuple(result)


@cache
def path_between(topology: Topology, a: str, b: str) -> Path:
    """Lowest-latency path between two locations ("host", "stack0", ...; "ddr" is at host).
    Stack-to-stack traffic stays on stack links; it never detours through the host. Far
    memory is one link beyond the host socket."""
    a, b = location_of(a), location_of(b)
    if a == b:
        return Path(())
    if FAR_OWNER in (a, b) and HOST_CLUSTER not in (a, b):
        return Path(path_between(topology, a, HOST_CLUSTER).links
                    + path_between(topology, HOST_CLUSTER, b).links)
    if HOST_CLUSTER in (a, b):
        (link,) = [x for x in directed_links(topology) if (x.src, x.dst) == (a, b)]
        return Path((link,))
    stack_links = [x for x in directed_links(topology)
                   if HOST_CLUSTER not in (x.src, x.dst)]
    best: dict[str, tuple[int, int, tuple[DirectedLink, ...]]] = {a: (0, 0, ())}
    frontier = [(0, 0, a)]
    while frontier:  # Dijkstra over a handful of stacks; ties go to fewer hops
        cost, hops, here = heapq.heappop(frontier)
        if best[here][:2] != (cost, hops):
            continue
        for link in (x for x in stack_links if x.src == here):
            candidate = (cost + link.latency_ps, hops + 1)
            if link.dst not in best or candidate < best[link.dst][:2]:
                best[link.dst] = (*candidate, best[here][2] + (link,))
                heapq.heappush(frontier, (*candidate, link.dst))
    return Path(best[b][2])


def dram_of(topology: Topology, owner: str) -> DramTiming:
    """The DRAM timing behind a memory owner."""
    if owner == "ddr":
        assert topology.ddr is not None
        return topology.ddr.dram
    if owner == FAR_OWNER:
        assert topology.far is not None
        return topology.far.dram
    return topology.stacks[int(owner.removeprefix("stack"))].dram


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
    return min(dram_of(topology, owner).nominal_access_ps
               for owner, _ in memory_owners(topology))


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
