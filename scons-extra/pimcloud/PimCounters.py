# Hardware the guest can read and drive (pim_counters_abi.h has the register map):
# page-access counters per stack, per-CPU miss counters and an MBA-like per-CPU
# bandwidth throttle. Attach pio to the board's I/O bus, describe the block to the guest
# with an ACPI "PIMC" table, and give the PimLinkRouter `counters = this`: the router
# feeds it every timing request that reaches memory (atomic accesses, which may use
# backdoors, are not counted).

from m5.objects.Device import BasicPioDevice
from m5.params import Param, VectorParam
from m5.proxy import Parent


class PimCounters(BasicPioDevice):
    type = "PimCounters"
    cxx_class = "gem5::PimCounters"
    cxx_header = "pimcloud/pim_counters.hh"

    pio_addr = 0xFEB00000
    system = Param.System(Parent.any, "system whose requestor names are read")

    stack_ranges = VectorParam.AddrRange("memory ranges with page counters")
    range_stacks = VectorParam.Unsigned("the stack of each range (0..stacks-1)")
    stack_nodes = VectorParam.Unsigned("each stack's NUMA node in the guest")

    cpu_prefixes = VectorParam.String(
        [], "requestor name prefixes of CPUs; the longest matching prefix wins"
    )
    cpu_ids = VectorParam.Unsigned([], "the CPU of each prefix")
    cpu_clocks = VectorParam.Clock("each CPU's clock, by CPU id")

    decay_period = Param.Latency("100ms", "counts halve once per period (0 = never)")
    scan_time_per_frame = Param.Latency(
        "1ns", "time a query takes per frame of the stack it scans"
    )
    max_query = Param.Unsigned(4096, "most frames one query returns (1..65536)")
    throttle_levels = Param.Unsigned(10, "throttle levels, 0 = off")
    throttle_step = Param.Latency("2ns", "request spacing added per throttle level")
