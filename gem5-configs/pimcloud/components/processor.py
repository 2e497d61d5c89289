"""PimProcessor: every core of the server, boot cores and detailed cores side by side.

Both sets hold all CPUs in CPU id order (gem5 hands out context ids, and so APIC ids,
in the sorted order of SimObject names, and keeps list order inside a list).  The boot
set runs from power-on to the checkpoint; after a restore the detailed set is switched
in, each core with its cluster's clock and model.
"""

from __future__ import annotations

import m5
from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.boards.mem_mode import MemMode
from gem5.components.processors.abstract_core import AbstractCore
from gem5.components.processors.abstract_processor import AbstractProcessor
from gem5.isas import ISA
from gem5.utils.override import overrides
from m5.objects import DerivedClockDomain, SrcClockDomain, VoltageDomain

from ..topology import Topology
from .cores import boot_cpu, detailed_cpu, wrap
from .plan import cluster_plans, cores_attribute
from .scons_extra import scons_extra_object


class PimProcessor(AbstractProcessor):
    """Host and PIM cores of a topology.

    :param topology: the server.
    :param boot_model: "atomic" (default) or "kvm", for the boot to the checkpoint.
    :param start_detailed: start on the detailed cores (a run without a checkpoint).
    """

    def __init__(self, topology: Topology, boot_model: str = "atomic",
                 start_detailed: bool = False) -> None:
        super().__init__(isa=ISA.X86)
        self._boot_model = boot_model
        plans = cluster_plans(topology)
        self.cluster_clocks = [
            SrcClockDomain(clock=plan.clock, voltage_domain=VoltageDomain()) for plan in plans
        ]
        boot: list[AbstractCore] = []
        detailed: list[AbstractCore] = []
        order = sorted((cpu_id, index) for index, plan in enumerate(plans)
                       for cpu_id in plan.cpu_ids)
        for cpu_id, index in order:
            clock = self.cluster_clocks[index]
            for cores, cpu in ((boot, boot_cpu(boot_model, cpu_id)),
                               (detailed, detailed_cpu(plans[index].core_type, cpu_id))):
                cpu.clk_domain = clock
                cores.append(wrap(cpu))
        self._sets = {"boot": boot, "detailed": detailed}
        self._current = "detailed" if start_detailed else "boot"
        for role, cores in self._sets.items():
            setattr(self, cores_attribute(role), cores)
            for core in cores:
                core.set_switched_out(role != self._current)

    @overrides(AbstractProcessor)
    def get_num_cores(self) -> int:
        return len(self._sets[self._current])

    @overrides(AbstractProcessor)
    def get_cores(self) -> list[AbstractCore]:
        return self._sets[self._current]

    def is_detailed(self) -> bool:
        return self._current == "detailed"

    @overrides(AbstractProcessor)
    def incorporate_processor(self, board: AbstractBoard) -> None:
        self._board = board
        # gem5 clocks each local APIC at 1/16 of its CPU's clock, so PIM cores' timers
        # would run slower than the host's after Linux calibrated them on CPU 0. Real
        # APIC timers share the bus clock: give every one the board's. (The interrupt
        # controllers exist now: the cache hierarchy connected them.)
        self.apic_bus_clock = DerivedClockDomain(clk_domain=board.get_clock_domain(),
                                                 clk_divider=16)
        for core in self.get_cores():
            for controller in core.get_simobject().interrupts:
                controller.clk_domain = self.apic_bus_clock
        # gem5's x86 HLT can put a pipelined core to sleep with an interrupt already
        # pending, and a one-shot APIC timer then never fires again on it: Linux's tick
        # and timers on that CPU stop until another interrupt comes (scons-extra
        # PimHaltGuard.py). The guard wakes such a CPU, as real x86 would never sleep.
        self.halt_guard = scons_extra_object("PimHaltGuard")(
            cpus=[core.get_simobject() for cores in self._sets.values() for core in cores])
        if self._current == "detailed":
            board.set_mem_mode(MemMode.TIMING)
        elif self._boot_model == "kvm":
            from m5.objects import KvmVM

            board.kvm_vm = KvmVM()
            board.set_mem_mode(MemMode.ATOMIC_NONCACHING)
        else:
            board.set_mem_mode(MemMode.ATOMIC)

    def switch_to_detailed(self) -> None:
        """Hand every CPU's state from its boot core to its detailed core."""
        self._switch_to("detailed")

    def switch_to_boot(self) -> None:
        """Hand every CPU's state back to its boot core (atomic): for the wrap-up of a run
        once its measured part is over."""
        self._switch_to("boot")

    def _switch_to(self, role: str) -> None:
        if self._current == role:
            return
        pairs = [(old.get_simobject(), new.get_simobject())
                 for old, new in zip(self._sets[self._current], self._sets[role], strict=True)]
        m5.switchCpus(self._board, pairs)  # drains, and sets the memory mode of the new set
        self._current = role
