"""gem5 CPU objects for a topology's core types (Table I parameters)."""

from __future__ import annotations

from gem5.components.processors.abstract_core import AbstractCore
from gem5.components.processors.base_cpu_core import BaseCPUCore
from gem5.isas import ISA
from gem5.runtime import get_supported_isas
from m5.objects import (
    X86O3CPU,
    BaseCPU,
    TournamentBP,
    X86AtomicSimpleCPU,
    X86MinorCPU,
    X86TimingSimpleCPU,
)

from ..topology.model import CoreType
from .plan import writeback_slots

BOOT_CPU_MODELS = ("atomic", "kvm")


def detailed_cpu(core_type: CoreType, cpu_id: int) -> BaseCPU:
    """The CPU a core type names: O3 with its widths, queues and predictor; Minor with
    its issue width; or a simple CPU."""
    width = core_type.issue_width
    if core_type.model == "o3":
        cpu = X86O3CPU(cpu_id=cpu_id)
        cpu.fetchWidth = cpu.decodeWidth = cpu.renameWidth = width
        cpu.dispatchWidth = cpu.issueWidth = cpu.wbWidth = cpu.commitWidth = width
        cpu.numIQEntries = core_type.iq_entries
        cpu.numROBEntries = core_type.rob_entries
        cpu.LQEntries = core_type.lq_entries
        cpu.SQEntries = core_type.sq_entries
        cpu.forwardComSize = writeback_slots(core_type.rob_entries, width)
        predictor = core_type.branch_predictor
        # Table I's two-level local predictor: BHSRs index a PHT of 2-bit counters.
        # gem5's tournament predictor carries exactly that local component.
        cpu.branchPred = TournamentBP(
            localHistoryTableSize=predictor.bhsr_entries,
            localPredictorSize=predictor.pht_entries,
            localCtrBits=predictor.pht_bits,
        )
        return cpu
    if core_type.model == "minor":
        cpu = X86MinorCPU(cpu_id=cpu_id)
        cpu.decodeInputWidth = cpu.executeInputWidth = width
        cpu.executeIssueLimit = cpu.executeCommitLimit = width
        return cpu
    if core_type.model == "timing":
        return X86TimingSimpleCPU(cpu_id=cpu_id)
    return X86AtomicSimpleCPU(cpu_id=cpu_id)


def boot_cpu(model: str, cpu_id: int) -> BaseCPU:
    """The CPU that boots to the checkpoint: atomic here, KVM where /dev/kvm works."""
    if model == "kvm":
        from m5.objects import X86KvmCPU  # only in gem5 builds with USE_KVM

        return X86KvmCPU(cpu_id=cpu_id)
    if model != "atomic":
        raise ValueError(f"boot CPU {model!r}: choose one of {', '.join(BOOT_CPU_MODELS)}")
    return X86AtomicSimpleCPU(cpu_id=cpu_id)


class PimCore(BaseCPUCore):
    """The stdlib core wrapper without its ``requires()`` check.

    In gem5 v24.0.0.1 ``requires()`` reads the Ruby coherence protocol even when only the
    ISA is asked for, and raises "Protocol '' not recognized" on every build without Ruby:
    the classic build this bundle uses.  The ISA is checked here instead.
    """

    def __init__(self, core: BaseCPU, isa: ISA) -> None:
        AbstractCore.__init__(self)
        if isa not in get_supported_isas():
            raise RuntimeError(f"this gem5 is not built for {isa.name}: build "
                               f"build/{isa.name}/gem5.opt")
        self._isa = isa
        self.core = core
        self.core.createThreads()


def wrap(cpu: BaseCPU) -> BaseCPUCore:
    """A stdlib core wrapper, so caches and boards treat our CPUs like any other."""
    return PimCore(core=cpu, isa=ISA.X86)
