"""The PIMCloud paper's own Table III (section III, shared/seeds/000_*), for comparison.

Keyed by our preset names (arch1..arch9) and our service names, which stand for the
paper's Tailbench applications (pimcloud.workloads.services: oltp = Silo, kvstore =
Masstree, imgdnn = ImgDNN, search = Xapian, translate = Moses, speech = Sphinx).
"""

from __future__ import annotations

import pandas as pd

SERVICES = ("oltp", "kvstore", "imgdnn", "search", "translate", "speech")

# Tail latency over QoS at low load (> 1 violates QoS), per architecture.
TAIL_OVER_QOS = {
    "arch1": (0.22, 0.21, 0.33, 0.37, 0.26, 0.26),
    "arch2": (0.36, 0.24, 0.28, 0.40, 0.35, 0.29),
    "arch3": (0.71, 0.40, 1.29, 0.62, 0.84, 0.56),
    "arch4": (0.74, 0.53, 1.09, 0.63, 0.89, 0.55),
    "arch5": (0.21, 0.18, 0.25, 0.36, 0.22, 0.23),
    "arch6": (0.28, 0.20, 0.20, 0.37, 0.27, 0.27),
    "arch7": (0.59, 0.34, 0.97, 0.59, 0.67, 0.54),
    "arch8": (0.58, 0.40, 0.75, 0.60, 0.66, 0.47),
    "arch9": (0.61, 0.47, 0.95, 0.61, 0.77, 0.49),
}

# Max load under QoS normalised to Arch 1.
NORMALIZED_MAX_LOAD = {
    "arch1": (1.00, 1.00, 1.00, 1.00, 1.00, 1.00),
    "arch2": (0.89, 0.85, 1.17, 1.33, 1.41, 1.25),
    "arch3": (0.68, 0.72, 0.00, 0.87, 0.55, 1.50),
    "arch4": (0.53, 0.93, 0.00, 1.12, 1.09, 2.25),
    "arch5": (1.08, 1.09, 1.20, 1.05, 1.23, 1.20),
    "arch6": (1.05, 1.00, 1.66, 1.50, 1.82, 1.50),
    "arch7": (0.89, 0.85, 0.71, 1.13, 0.91, 1.75),
    "arch8": (0.79, 1.15, 0.93, 1.65, 1.82, 2.65),
    "arch9": (0.68, 1.09, 0.63, 1.58, 1.50, 2.50),
}

# What varies between the architectures (Table III's first columns).
ARCHITECTURES = {
    "arch1": ("high", "brawny", "deep", "4"),
    "arch2": ("high", "brawny", "shallow", "6"),
    "arch3": ("high", "wimpy", "deep", "10"),
    "arch4": ("high", "wimpy", "shallow", "16"),
    "arch5": ("low", "brawny", "deep", "4"),
    "arch6": ("low", "brawny", "shallow", "6"),
    "arch7": ("low", "wimpy", "deep", "10"),
    "arch8": ("low", "wimpy", "shallow", "16"),
    "arch9": ("low*", "wimpy", "shallow", "8+8"),
}


def paper_table_iii() -> pd.DataFrame:
    """Tidy: arch, app, tail_over_qos, normalized_max_load (the paper's numbers)."""
    rows = []
    for arch, tails in TAIL_OVER_QOS.items():
        loads = NORMALIZED_MAX_LOAD[arch]
        for app, tail, load in zip(SERVICES, tails, loads, strict=True):
            rows.append({"arch": arch, "app": app, "tail_over_qos": tail,
                         "normalized_max_load": load})
    return pd.DataFrame(rows)
