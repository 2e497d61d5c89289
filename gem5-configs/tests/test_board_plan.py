"""The gem5 board's plan (router links and routes, controllers, requestor mapping) is
derived from the topology without gem5, so it is checked here."""

import py_compile
from pathlib import Path

import pytest
from pimcloud.components.plan import (
    cluster_plans,
    memory_controller_plans,
    requestor_prefixes,
    router_plan,
    writeback_slots,
)
from pimcloud.topology import cpus, load_topology, memory_ranges
from pimcloud.topology.interconnect import locations, path_between
from pimcloud.topology.parse import preset_names

GEM5_SIDE = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", preset_names())
def test_router_plan_matches_link_model(name: str) -> None:
    topology = load_topology(name)
    plan = router_plan(topology)
    names = locations(topology)
    n = plan.num_locations
    assert n == len(names)
    assert len(plan.route_offsets) == n * n + 1
    assert plan.route_offsets[-1] == len(plan.route_links)
    assert len(plan.link_src) == len(plan.link_dst) == len(plan.link_latency)
    for a, src in enumerate(names):
        for b, dst in enumerate(names):
            first, last = plan.route_offsets[a * n + b], plan.route_offsets[a * n + b + 1]
            route = plan.route_links[first:last]
            expected = path_between(topology, src, dst)
            assert list(route) == [link.link_id for link in expected.links]
            # A route is a chain from a to b.
            at = a
            for link in route:
                assert plan.link_src[link] == at
                at = plan.link_dst[link]
            assert at == b


@pytest.mark.parametrize("name", preset_names())
def test_controllers_cover_memory_and_sit_at_their_stack(name: str) -> None:
    topology = load_topology(name)
    controllers = memory_controller_plans(topology)
    assert [(c.start, c.size) for c in controllers] == [
        (r.start, r.size) for r in memory_ranges(topology)]
    names = locations(topology)
    for controller in controllers:
        expected = "host" if controller.owner == "ddr" else controller.owner
        assert names[controller.location] == expected
    assert len({c.name for c in controllers}) == len(controllers)


@pytest.mark.parametrize("name", ["paper", "scale-16x64", "arch9"])
def test_every_cpu_and_cache_maps_to_its_cluster_unambiguously(name: str) -> None:
    topology = load_topology(name)
    prefixes = requestor_prefixes(topology)
    names = locations(topology)

    def location_of(requestor: str) -> int:
        matches = [(len(p), loc) for p, loc in prefixes if requestor.startswith(p)]
        return max(matches)[1]

    width = len(str(len(cpus(topology)) - 1))  # gem5 pads: cores00..cores19
    for cpu in cpus(topology):
        for role in ("boot", "detailed"):
            seen = location_of(f"processor.{role}_cores{cpu.cpu_id:0{width}d}.core.data")
            assert names[seen] == cpu.cluster
    for plan in cluster_plans(topology):
        seen = location_of(f"cache_hierarchy.{plan.cache_prefix}l1d3")
        assert names[seen] == plan.name
    # No prefix of one cluster is a prefix of another cluster's prefix.
    for p, loc in prefixes:
        for q, other in prefixes:
            if p != q and q.startswith(p):
                assert loc == other


def test_gem5_side_modules_compile() -> None:
    """The modules gem5 imports are valid Python even where gem5 is absent."""
    for path in [*GEM5_SIDE.glob("pimcloud/components/*.py"), GEM5_SIDE / "pim_fs.py"]:
        py_compile.compile(str(path), doraise=True)


@pytest.mark.parametrize(("rob_entries", "width"), [(192, 4), (32, 2), (8, 8), (7, 1)])
def test_writeback_burst_fits_the_forward_time_buffer(rob_entries: int, width: int) -> None:
    # IEW spills finished instructions beyond the width into later cycles; a burst of
    # a whole ROB must land inside the buffer's future cycles, and gem5's default
    # depth is never reduced.
    slots = writeback_slots(rob_entries, width)
    assert slots >= 5
    last_cycle_used = (rob_entries - 1) // width
    assert last_cycle_used < slots
