"""The bundle's reference results (analysis/reference/): the characterisation study as it
ran for the bundle, for a user's runs to be shown beside.

``pimcloud study report DIR --reference`` writes them; ``pimcloud analyze CAMPAIGN
--report`` puts every run of one service alone on a preset the reference covers beside the
reference's curve at the same load (:func:`beside_reference`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..runs.layout import REFERENCE_DIR  # its one home, a layer below the analysis

# What the study report copies into the reference (small tidy CSVs).
REFERENCE_TABLES = ("curves", "table_iii", "table_iii_table2", "points", "qos", "validation",
                    "claims", "spearman", "placement", "placement_table2", "page_types",
                    "memory", "samples")


def read_reference(name: str, folder: Path = REFERENCE_DIR) -> pd.DataFrame:
    """One reference table (empty when the bundle ships none yet)."""
    path = folder / f"{name}.csv"
    try:
        return pd.read_csv(path) if path.is_file() else pd.DataFrame()
    except pd.errors.EmptyDataError:  # a table written with no rows (no cell had any)
        return pd.DataFrame()


def beside_reference(table: pd.DataFrame, folder: Path = REFERENCE_DIR) -> pd.DataFrame:
    """Rows of ``table`` (run_id, app, topology, rps, p99_ns) whose (topology, app) the
    reference has, with the reference's p99 at that load (its model curve, interpolated;
    NaN outside the curve) and its max load under its QoS."""
    curves = read_reference("curves", folder)
    if curves.empty or not {"topology", "app", "rps", "p99_ns"} <= set(table.columns):
        return pd.DataFrame()
    limits = read_reference("table_iii", folder)
    rows = []
    for row in table.dropna(subset=["rps"]).itertuples():
        curve = curves[(curves["arch"] == row.topology) & (curves["app"] == row.app)]
        if curve.empty:
            continue
        curve = curve.sort_values("rps")
        rps = float(row.rps)
        inside = curve["rps"].iloc[0] <= rps <= curve["rps"].iloc[-1]
        reference = (float(np.interp(rps, curve["rps"], curve["p99_ns"])) if inside
                     else np.nan)
        limit = limits[(limits["arch"] == row.topology) & (limits["app"] == row.app)]
        rows.append({"run_id": row.run_id, "app": row.app, "topology": row.topology,
                     "rps": rps, "p99_ns": float(row.p99_ns),
                     "reference_p99_ns": reference,
                     "p99_over_reference": float(row.p99_ns) / reference if inside else np.nan,
                     "reference_max_load_rps": (float(limit["max_load_rps"].iloc[0])
                                                if len(limit) else np.nan)})
    return pd.DataFrame(rows)
