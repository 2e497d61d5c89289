"""Run inside gem5: report its version and which of the bundle's SimObjects it holds.

    $GEM5 gem5-configs/check_gem5.py    -> one JSON line on stdout
"""

import json

import m5.objects

REQUIRED = ("PimAcpiTable", "PimHaltGuard", "PimHpet", "PimLinkRouter", "X86O3CPU",
            "X86MinorCPU", "X86AtomicSimpleCPU", "MemCtrl", "HBM_1000_4H_1x128")
# Needed only by boards that ask for them (campaign `[gem5] counters = true`).
OPTIONAL = ("PimCounters",)

if __name__ == "__m5_main__":
    from gem5.runtime import get_supported_isas

    isas = sorted(isa.name for isa in get_supported_isas())
    from _m5 import core

    version = core.gem5Version
    print("PIMCLOUD-GEM5-CHECK " + json.dumps({
        "version": str(version),
        "isas": isas,
        "present": [name for name in REQUIRED + OPTIONAL if hasattr(m5.objects, name)],
        "missing": [name for name in REQUIRED if not hasattr(m5.objects, name)],
        # 0 in a gem5.fast (NDEBUG too: its assertions are compiled out).
        "tracing": bool(core.TRACING_ON),
    }), flush=True)
