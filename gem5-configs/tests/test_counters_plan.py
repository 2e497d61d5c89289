"""The hardware counters' board side without gem5: the register interface read from its
one home (the C header), the plan of counted ranges and CPU requestors, the PIMC table."""

import struct
from pathlib import Path

import pytest
from pimcloud.components.plan import counters_plan, requestor_prefixes
from pimcloud.counters_abi import abi, block_size, value
from pimcloud.topology import cpus, load_topology, memory_ranges, numa_nodes
from pimcloud.topology.acpi import COUNTERS_BASE_ADDRESS, build_counters_table, checksum_ok
from pimcloud.topology.parse import preset_names


def test_abi_is_read_from_the_header() -> None:
    assert value("PIMCLOUD_COUNTERS_MAGIC").to_bytes(8, "little") == b"PIMCNTR1"
    assert abi()["PIMCLOUD_COUNTERS_ACPI_SIGNATURE"] == "PIMC"
    assert value("PIMC_RESULT_STRIDE") == 16
    assert block_size(4096) == 0x10000 + 4096 * 16
    # Every register of the global block is 8-byte aligned and below the stack block.
    globals_ = [v for k, v in abi().items() if isinstance(v, int) and k.startswith("PIMC_")
                and k.endswith(("_PS", "_N", "_STACK", "_CMD", "_STATUS", "_RESULTS"))]
    assert globals_ and all(v % 8 == 0 and v < value("PIMC_STACK_BASE") for v in globals_)


def test_a_missing_header_is_named(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="register interface is missing"):
        abi(tmp_path / "absent.h")


@pytest.mark.parametrize("name", preset_names())
def test_plan_counts_every_range_and_names_every_cpu(name: str) -> None:
    topology = load_topology(name)
    plan = counters_plan(topology)
    ranges = memory_ranges(topology)
    assert list(plan.stack_ranges) == [(r.start, r.size) for r in ranges]
    assert len(plan.range_stacks) == len(ranges)
    assert max(plan.range_stacks) == len(plan.stack_nodes) - 1
    # Each counted memory is a NUMA node holding its ranges.
    nodes = {node.node_id: node for node in numa_nodes(topology)}
    for r, stack in zip(ranges, plan.range_stacks, strict=True):
        assert r in nodes[plan.stack_nodes[stack]].ranges
    all_cpus = cpus(topology)
    assert len(plan.cpu_clocks) == len(all_cpus)
    assert sorted(set(plan.cpu_ids)) == [c.cpu_id for c in all_cpus]
    # The CPU prefixes are exactly the router's core prefixes, one CPU each.
    router = {p for p, _ in requestor_prefixes(topology)}
    assert set(plan.cpu_prefixes) <= router
    assert len(set(plan.cpu_prefixes)) == len(plan.cpu_prefixes)


def test_the_throttles_first_level_caps_below_a_host_cores_stream() -> None:
    """Level 1 must bite: 64-byte reads l x step apart, under the ~0.76 GB/s one O3 host
    core's membw triad reads (1.14 GB/s at the controllers with its writebacks)."""
    from pimcloud.units import parse_time_ps

    step_s = parse_time_ps(counters_plan(load_topology("paper")).throttle_step) / 1e12
    ceilings = [64 / (level * step_s) / 1e9 for level in range(1, 10)]
    assert ceilings[0] < 0.76 and ceilings[-1] < 0.1, ceilings


def test_cpu_prefixes_do_not_match_longer_ids() -> None:
    plan = counters_plan(load_topology("paper"))
    assert all(p.endswith(".") for p in plan.cpu_prefixes)


def test_counters_table_points_at_the_block() -> None:
    table = build_counters_table(COUNTERS_BASE_ADDRESS, block_size(4096))
    assert table.signature == "PIMC" and checksum_ok(table.data)
    assert len(table.data) == 36 + 16
    assert struct.unpack_from("<QQ", table.data, 36) == (COUNTERS_BASE_ADDRESS, 0x20000)
    with pytest.raises(ValueError, match="aligned"):
        build_counters_table(COUNTERS_BASE_ADDRESS + 1, 16)
