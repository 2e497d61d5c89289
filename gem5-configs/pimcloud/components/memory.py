"""PimStackMemory: HBM-like controllers per stack (and DDR) behind the link router.

One controller per memory range (a stack that spans the x86 hole gets two), with the
topology's DRAM timing.  The membus sees one port, the router's, which adds the
requester-aware SerDes latency and bandwidth of the link model.
"""

from __future__ import annotations

import math

from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.memory.abstract_memory_system import AbstractMemorySystem
from gem5.utils.override import overrides
from m5.objects import AddrRange, HBM_1000_4H_1x128, MemCtrl, Port

from ..topology import Topology
from .plan import MemoryControllerPlan, memory_controller_plans, router_plan

HBM_BURST_LENGTH = 4  # HBM_1000_4H_1x128's burst_length


def dram_interface(plan: MemoryControllerPlan) -> HBM_1000_4H_1x128:
    """gem5's HBM channel with the topology's timings (Table I for the stacks)."""
    dram = HBM_1000_4H_1x128()
    timing = plan.dram
    dram.range = AddrRange(plan.start, size=plan.size)
    # One device per rank whose size covers the range (gem5 only warns otherwise).
    dram.device_size = f"{1 << math.ceil(math.log2(plan.size))}B"
    dram.tCK = f"{timing.tck}ps"
    dram.tBURST = f"{timing.tck * HBM_BURST_LENGTH // 2}ps"  # DDR: two beats a clock
    dram.tRCD = f"{timing.trcd}ps"
    dram.tCL = f"{timing.tcl}ps"
    dram.tRP = f"{timing.trp}ps"
    dram.tRAS = f"{timing.tras}ps"
    dram.tWR = f"{timing.twr}ps"
    dram.tREFI = f"{timing.trefi}ps"
    return dram


def link_router(topology: Topology):  # type: ignore[no-untyped-def]
    """The scons-extra PimLinkRouter, configured from the link model."""
    try:
        from m5.objects import PimLinkRouter
    except ImportError:
        raise RuntimeError(
            "this gem5 lacks PimLinkRouter: build gem5.opt with "
            "EXTRAS=<pimcloud>/scons-extra (see scons-extra/README.md)") from None
    plan = router_plan(topology)
    return PimLinkRouter(
        num_locations=plan.num_locations,
        target_locations=list(plan.target_locations),
        requestor_prefixes=list(plan.requestor_prefixes),
        requestor_locations=list(plan.requestor_locations),
        link_src=list(plan.link_src),
        link_dst=list(plan.link_dst),
        link_latency=list(plan.link_latency),
        link_bandwidth=list(plan.link_bandwidth),
        route_offsets=list(plan.route_offsets),
        route_links=list(plan.route_links),
    )


class PimStackMemory(AbstractMemorySystem):
    """Every memory range of a topology, each behind its own controller.

    :param topology: the server; ranges, timings and links all come from it.
    """

    def __init__(self, topology: Topology) -> None:
        super().__init__()
        self._plans = memory_controller_plans(topology)
        self.mem_ctrls = [
            MemCtrl(dram=dram_interface(plan),
                    static_frontend_latency=f"{plan.dram.frontend_latency}ps",
                    static_backend_latency=f"{plan.dram.backend_latency}ps")
            for plan in self._plans
        ]
        self.router = link_router(topology)

    @overrides(AbstractMemorySystem)
    def incorporate_memory(self, board: AbstractBoard) -> None:
        for ctrl in self.mem_ctrls:
            self.router.mem_side = ctrl.port

    @overrides(AbstractMemorySystem)
    def get_mem_ports(self) -> list[tuple[AddrRange | None, Port]]:
        # One port for all ranges: the router advertises the union of its targets'.
        return [(None, self.router.cpu_side)]

    @overrides(AbstractMemorySystem)
    def get_memory_controllers(self) -> list[MemCtrl]:
        return list(self.mem_ctrls)

    @overrides(AbstractMemorySystem)
    def get_size(self) -> int:
        return sum(plan.size for plan in self._plans)

    @overrides(AbstractMemorySystem)
    def set_memory_range(self, ranges: list[AddrRange]) -> None:
        expected = [(plan.start, plan.size) for plan in self._plans]
        if sorted((r.start.value, r.size()) for r in ranges) != expected:
            raise ValueError("PimStackMemory's ranges come from its topology; the board "
                             "must pass exactly those")
