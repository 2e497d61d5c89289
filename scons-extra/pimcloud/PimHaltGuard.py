# Wakes a CPU that halted while an interrupt it can take was already pending.
#
# gem5 v24's x86 HLT suspends the thread unconditionally. On a pipelined CPU (O3, Minor)
# an interrupt can arrive while HLT is in flight: the local APIC then calls wakeup() on a
# CPU that is still active (a no-op), and HLT suspends it right after. A one-shot APIC
# timer is not re-armed until its interrupt is taken, so the CPU sleeps until some other
# interrupt reaches it: Linux's tick on that CPU stops and its timers fire late by up to
# seconds. Real x86 never halts with a deliverable interrupt pending.

from m5.params import Param, VectorParam
from m5.SimObject import SimObject


class PimHaltGuard(SimObject):
    type = "PimHaltGuard"
    cxx_class = "gem5::PimHaltGuard"
    cxx_header = "pimcloud/pim_halt_guard.hh"

    cpus = VectorParam.BaseCPU("CPUs to watch (boot and detailed alike)")
    recheck_cycles = Param.Cycles(
        1, "CPU cycles after going to sleep at which pending interrupts are checked"
    )
