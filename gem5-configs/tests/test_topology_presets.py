"""Every preset parses, and its derived layout is what the paper describes."""

import itertools
from pathlib import Path

import pytest
from pimcloud.topology import cpus, e820_entries, load_topology, memory_ranges, numa_nodes
from pimcloud.topology.interconnect import access_matrix, path_between, slit_distances
from pimcloud.topology.layout import X86_HOLE_END, X86_HOLE_START
from pimcloud.topology.parse import preset_names
from pimcloud.topology.qemu import numa_args

GiB = 1 << 30
EXPECTED_PRESETS = {f"arch{i}" for i in range(1, 10)} | {
    "paper", "mini", "scale-8x32", "scale-16x64", "tiered", "tiered-mini", "tiered-far-mini"}


def test_all_presets_are_shipped() -> None:
    assert set(preset_names()) == EXPECTED_PRESETS


@pytest.mark.parametrize("name", sorted(EXPECTED_PRESETS))
def test_preset_layout_is_consistent(name: str) -> None:
    topology = load_topology(name)
    nodes = numa_nodes(topology)
    all_cpus = cpus(topology)
    # Every CPU in exactly one node, APIC id = CPU id, ids dense from 0.
    assert sorted(c for n in nodes for c in n.cpus) == [c.cpu_id for c in all_cpus]
    assert all(c.apic_id == c.cpu_id for c in all_cpus)
    # Memory: ranges cover each node's capacity, never touch the x86 hole, never overlap.
    ranges = memory_ranges(topology)
    for a, b in itertools.pairwise(ranges):
        assert a.end <= b.start
    for r in ranges:
        assert r.end <= X86_HOLE_START or r.start >= X86_HOLE_END
    for node in nodes:
        assert sum(r.size for r in node.ranges) == node.capacity
    ram = sum(e.size for e in e820_entries(topology) if e.kind == 1)
    assert topology.total_memory - ram == 0x100000 - 0x9FC00
    # Distances: 10 on the diagonal, symmetric, > 10 elsewhere.
    slit = slit_distances(topology)
    for i, row in enumerate(slit):
        for j, value in enumerate(row):
            assert value == (10 if i == j else slit[j][i])
            assert i == j or value > 10


def test_paper_matches_table_one() -> None:
    t = load_topology("paper")
    nodes = numa_nodes(t)
    assert [(n.name, n.cpus, n.capacity) for n in nodes] == [
        ("host", (0, 1, 2, 3), 0),
        ("stack0", tuple(range(4, 12)), 8 * GiB),
        ("stack1", tuple(range(12, 20)), 8 * GiB),
    ]
    assert [c.model for c in cpus(t)] == ["o3"] * 20
    # The PIM core: x86 Minor fails in gem5 FS, so a narrow O3 stands in (paper.toml).
    wimpy = t.stacks[0].cluster.core_type
    assert wimpy is not None
    assert (wimpy.frequency_hz, wimpy.issue_width, wimpy.rob_entries) == (2_000_000_000, 2, 32)
    host = t.host.core_type
    assert host is not None
    assert (host.frequency_hz, host.issue_width, host.iq_entries, host.rob_entries,
            host.lq_entries, host.sq_entries) == (2_400_000_000, 4, 60, 192, 72, 42)
    assert t.stacks[0].dram.trcd == 13750 and t.stacks[0].dram.tck == 800
    # Stack 0 spans the hole: [0, 3G) and [4G, 9G); stack 1 follows.
    assert [(r.start, r.size) for r in nodes[1].ranges] == [(0, 3 * GiB), (4 * GiB, 5 * GiB)]
    assert [(r.start, r.size) for r in nodes[2].ranges] == [(9 * GiB, 8 * GiB)]


def test_far_memory_is_a_cpu_less_node_beyond_the_host() -> None:
    from pimcloud.components.plan import router_plan
    from pimcloud.topology.acpi import build_hmat
    from pimcloud.topology.interconnect import local_initiator
    from pimcloud.topology.layout import slow_tier_node

    t = load_topology("tiered-far-mini")
    nodes = numa_nodes(t)
    assert [(n.name, n.cpus, n.capacity) for n in nodes] == [
        ("host", (0, 1), 1 * GiB), ("stack0", (2, 3), 1 * GiB), ("stack1", (4, 5), 1 * GiB),
        ("far", (), 8 * GiB)]
    assert slow_tier_node(t) == 3 and slow_tier_node(load_topology("tiered-mini")) == 0
    # Every CPU reaches far memory through the host socket, and it is the farthest node.
    assert [link.dst for link in path_between(t, "stack1", "far").links] == ["host", "far"]
    cost = {(c.initiator_node, c.target_node): c.latency_ps for c in access_matrix(t)}
    for cpu_node in (0, 1, 2):
        assert cost[(cpu_node, 3)] == max(cost[(cpu_node, m)] for m in range(4))
    assert cost[(0, 3)] - cost[(0, 0)] == 2 * t.far.link.latency
    assert local_initiator(t, 3) == 0  # HMAT names the host as far memory's initiator
    # The HMAT's proximity-domain structures (40 bytes each after the header): far memory's
    # says its initiator (valid flag 1) is node 0.
    import struct
    hmat = build_hmat(t).data
    domains = {}
    for offset in range(40, 40 + 4 * 40, 40):
        kind, _, length, flags, _, initiator, target = struct.unpack_from("<HHIHHII", hmat,
                                                                          offset)
        assert (kind, length) == (0, 40)
        domains[target] = (flags, initiator)
    assert domains[3] == (1, 0)
    # The gem5 router gets a fourth location for far memory's controller.
    plan = router_plan(t)
    assert plan.num_locations == 4 and 3 in plan.target_locations
    # QEMU: a node with memory and no CPUs.
    args = numa_args(t)
    assert "node,nodeid=3,memdev=mem3" in args
    # A quick QEMU boot divides far memory too.
    assert t.with_memory_divided(16).far.capacity == 512 << 20


def test_remote_costs_more_than_local() -> None:
    t = load_topology("paper")
    cost = {(c.initiator_node, c.target_node): c for c in access_matrix(t)}
    assert cost[(1, 1)].latency_ps < cost[(1, 2)].latency_ps
    assert cost[(0, 1)].latency_ps > cost[(1, 1)].latency_ps
    assert cost[(1, 1)].bandwidth > cost[(0, 1)].bandwidth


def test_table_three_architectures() -> None:
    expected = {  # arch: (cores, core type, hierarchy, cores sit on a stack)
        "arch1": (4, "brawny", "deep", False), "arch2": (6, "brawny", "shallow", False),
        "arch3": (10, "wimpy", "deep", False), "arch4": (16, "wimpy", "shallow", False),
        "arch5": (4, "brawny", "deep", True), "arch6": (6, "brawny", "shallow", True),
        "arch7": (10, "wimpy", "deep", True), "arch8": (16, "wimpy", "shallow", True),
    }
    for name, (count, core, hierarchy, on_stack) in expected.items():
        t = load_topology(name)
        (cluster,) = t.clusters
        assert cluster.cores == count, name
        assert cluster.core_type is not None and cluster.core_type.name == core, name
        assert cluster.caches is not None and cluster.caches.hierarchy == hierarchy, name
        assert (cluster.name != "host") == on_stack, name
    arch9 = load_topology("arch9")
    assert [n.cpus for n in numa_nodes(arch9)] == [tuple(range(8)), tuple(range(8, 16))]


def test_scaled_and_tiered_systems() -> None:
    assert [len(n.cpus) for n in numa_nodes(load_topology("scale-8x32"))] == [8, 8, 8, 8, 8]
    assert [len(n.cpus) for n in numa_nodes(load_topology("scale-16x64"))] == [16] * 5
    tiered = numa_nodes(load_topology("tiered"))
    assert tiered[0].memory_owner == "ddr" and tiered[0].capacity == 32 * GiB
    assert tiered[0].cpus == (0, 1, 2, 3)


def test_memory_division_keeps_the_shape() -> None:
    t = load_topology("paper").with_memory_divided(16)
    assert [n.capacity for n in numa_nodes(t)] == [0, GiB // 2, GiB // 2]
    args = numa_args(t)
    assert "node,nodeid=0,cpus=0-3" in args
    assert "node,nodeid=1,memdev=mem1,cpus=4-11" in args
    assert "dist,src=0,dst=1,val=15" in args


def test_chain_routes_add_up_hop_by_hop(tmp_path: Path) -> None:
    path = tmp_path / "chain.toml"
    path.write_text('extends = "scale-8x32"\n[links.stack_stack]\nnetwork = "chain"\n'
                    'latency_overrides = [{from = 1, to = 2, latency = "10ns"},'
                    ' {from = 2, to = 1, latency = "10ns"}]\n')
    t = load_topology(str(path))
    route = path_between(t, "stack0", "stack3")
    assert [(link.src, link.dst) for link in route.links] == [
        ("stack0", "stack1"), ("stack1", "stack2"), ("stack2", "stack3")]
    assert route.one_way_latency_ps == 4000 + 10000 + 4000
    assert path_between(t, "stack3", "ddr").hops == 1  # straight to the host socket
    slit = slit_distances(t)
    assert slit[1][4] > slit[1][3] > slit[1][2]
