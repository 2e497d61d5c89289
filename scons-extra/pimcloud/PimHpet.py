# A counter-only HPET: one clock that every CPU reads at the same rate (gem5's x86 TSC
# runs at each CPU's own clock). Attach pio to the board's I/O bus and describe it to
# the guest with an ACPI HPET table (pimcloud.topology.acpi.build_hpet) at pio_addr.

from m5.objects.Device import BasicPioDevice
from m5.params import Param


class PimHpet(BasicPioDevice):
    type = "PimHpet"
    cxx_class = "gem5::PimHpet"
    cxx_header = "pimcloud/pim_hpet.hh"

    pio_addr = 0xFED00000
    counter_period_fs = Param.UInt64(
        10_000_000, "main counter period in femtoseconds (Linux: 100000..100000000)"
    )
    num_timers = Param.Unsigned(3, "comparators advertised (3..32); they never fire")
