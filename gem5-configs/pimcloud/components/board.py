"""PimBoard: gem5's x86 PC, with every memory range, CPU and NUMA table of a topology.

It extends the stdlib X86Board (south bridge, IDE disk, serial console, MP table) and
replaces what that board fixes: one memory range up to 3 GiB, its E820 map, and an
XSDT without MADT or NUMA tables.  The SRAT/SLIT/HMAT bytes come from the topology
model and are installed by the scons-extra PimAcpiTable object.  It adds an HPET
(scons-extra PimHpet) because gem5's TSC runs at each CPU's own clock, which differs
between host and PIM clusters; the guest keeps time on the HPET instead.  With
``counters`` it adds the hardware counters (scons-extra PimCounters: page-access
counters per memory, per-CPU miss counters, a bandwidth throttle), fed by the memory's
link router and described to the guest by a "PIMC" ACPI table.
"""

from __future__ import annotations

from gem5.components.boards.x86_board import X86Board
from gem5.utils.override import overrides
from m5.objects import (
    AddrRange,
    X86ACPIMadt,
    X86ACPIMadtIntSourceOverride,
    X86ACPIMadtIOAPIC,
    X86ACPIMadtLAPIC,
    X86E820Entry,
)

from ..counters_abi import block_size
from ..topology import Topology, build_hpet, build_numa_tables, e820_entries, memory_ranges
from ..topology.acpi import COUNTERS_BASE_ADDRESS, HPET_BASE_ADDRESS, build_counters_table
from .cache_hierarchy import PimCacheHierarchy
from .memory import PimStackMemory
from .plan import counters_plan
from .processor import PimProcessor
from .scons_extra import scons_extra_object

IO_APIC_ADDRESS = 0xFEC00000
# ISA IRQs routed to I/O APIC pins, as gem5's x86 PC wires them (IRQ 0 -> pin 2).
ISA_IRQ_TO_PIN = {0: 2, 1: 1, **{irq: irq for irq in range(3, 15)}}
PCI_DEV4_INTA = (0, 4 << 2, 16)  # bus, source IRQ, I/O APIC pin of the IDE controller


def acpi_table_objects(topology: Topology,
                       counters_size: int = 0) -> list:  # type: ignore[type-arg]
    """PimAcpiTable objects holding the SRAT, SLIT, HMAT and HPET bytes (and the PIMC
    table when the board has counters of ``counters_size`` bytes)."""
    table_class = scons_extra_object("PimAcpiTable")
    tables = [*build_numa_tables(topology), build_hpet(HPET_BASE_ADDRESS)]
    if counters_size:
        tables.append(build_counters_table(COUNTERS_BASE_ADDRESS, counters_size))
    return [table_class(table_signature=table.signature, table_bytes=list(table.data))
            for table in tables]


class PimBoard(X86Board):
    """A PIM server as one x86 full-system board.

    :param topology: the server; ranges, CPUs and tables all come from it.
    :param processor: its PimProcessor.
    :param memory: its PimStackMemory.
    :param cache_hierarchy: its PimCacheHierarchy.
    :param clk_freq: the board (uncore, devices) clock.
    :param counters: add the hardware counters (a checkpoint made with them restores
        only with them).
    :param counting: False keeps the counters device (its registers, the guest's view)
        but does not feed it the memory's requests: nothing counted, nothing throttled.
    """

    def __init__(self, topology: Topology, processor: PimProcessor, memory: PimStackMemory,
                 cache_hierarchy: PimCacheHierarchy, clk_freq: str = "2.4GHz",
                 counters: bool = False, counting: bool = True) -> None:
        self._topology = topology
        self._with_counters = counters
        self._counting = counting
        super().__init__(clk_freq=clk_freq, processor=processor, memory=memory,
                         cache_hierarchy=cache_hierarchy)

    @overrides(X86Board)
    def _setup_memory_ranges(self) -> None:
        ranges = [AddrRange(r.start, size=r.size) for r in memory_ranges(self._topology)]
        self.get_memory().set_memory_range(ranges)
        # As X86Board: the first MiB of the hole is decoded for legacy I/O.
        self.mem_ranges = [*ranges, AddrRange(0xC0000000, size=0x100000)]

    @overrides(X86Board)
    def _setup_io_devices(self) -> None:
        super()._setup_io_devices()
        # Behind the bridge like the I/O APIC: [0xC0000000, 0xFFFF0000) goes to the iobus.
        self.hpet = scons_extra_object("PimHpet")(pio_addr=HPET_BASE_ADDRESS)
        self.hpet.pio = self.iobus.mem_side_ports
        counters_size = self._setup_counters() if self._with_counters else 0
        self.workload.e820_table.entries = [
            X86E820Entry(addr=e.start, size=f"{e.size}B", range_type=e.kind)
            for e in e820_entries(self._topology)
        ]
        cpu_count = self.get_processor().get_num_cores()
        records = [X86ACPIMadtLAPIC(acpi_processor_id=i, apic_id=i, flags=1)
                   for i in range(cpu_count)]
        io_apic_id = self.pc.south_bridge.io_apic.apic_id
        records.append(X86ACPIMadtIOAPIC(id=io_apic_id, address=IO_APIC_ADDRESS, int_base=0))
        bus, irq, pin = PCI_DEV4_INTA
        records.append(X86ACPIMadtIntSourceOverride(bus_source=bus, irq_source=irq,
                                                    sys_int=pin, flags=0))
        records += [X86ACPIMadtIntSourceOverride(bus_source=1, irq_source=isa_irq,
                                                 sys_int=isa_pin, flags=0)
                    for isa_irq, isa_pin in ISA_IRQ_TO_PIN.items()]
        madt = X86ACPIMadt(local_apic_address=0, records=records, oem_id="madt")
        tables = [madt, *acpi_table_objects(self._topology, counters_size)]
        pointer = self.workload.acpi_description_table_pointer
        pointer.oem_id = "gem5"
        pointer.xsdt.oem_id = "gem5"
        pointer.xsdt.entries = tables
        pointer.rsdt.oem_id = "gem5"
        pointer.rsdt.entries = tables

    def _setup_counters(self) -> int:
        """The PimCounters device on the I/O bus, fed by the router; returns its size."""
        plan = counters_plan(self._topology)
        self.counters = scons_extra_object("PimCounters")(
            pio_addr=COUNTERS_BASE_ADDRESS,
            stack_ranges=[AddrRange(start, size=size) for start, size in plan.stack_ranges],
            range_stacks=list(plan.range_stacks),
            stack_nodes=list(plan.stack_nodes),
            cpu_prefixes=list(plan.cpu_prefixes),
            cpu_ids=list(plan.cpu_ids),
            cpu_clocks=list(plan.cpu_clocks),
            throttle_step=plan.throttle_step,
        )
        self.counters.pio = self.iobus.mem_side_ports
        if self._counting:  # else the device answers the guest but sees no request
            self.get_memory().router.counters = self.counters
        return block_size(int(self.counters.max_query))
