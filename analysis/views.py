"""Views of a tidy stats frame: scalars, vectors, histograms, per-CPU columns."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

# board.processor.detailed_cores12.x (this bundle's board: the index is the CPU id, see
# pimcloud.components.stat_names), system.cpu3.x, system.switch_cpus0.x ...
_CPU = re.compile(r"(?:^|\.)(?P<group>[A-Za-z_]*(?:cpus?|cores))(?P<index>\d+)(?:\.|$)")
_BUCKET = re.compile(r"^(?P<low>-?[0-9.]+(?:e[-+]?\d+)?)(?:-(?P<high>-?[0-9.]+(?:e[-+]?\d+)?))?$")
DIST_FIELDS = ("samples", "mean", "gmean", "stdev", "underflows", "overflows", "min_value",
               "max_value", "total", "bucket_size", "min_bucket", "max_bucket")


def _index(stats: pd.DataFrame) -> list[str]:
    return ["run_id", "dump"] if "run_id" in stats.columns else ["dump"]


def scalar(stats: pd.DataFrame, stat: str) -> pd.Series:
    """One statistic without subname, indexed by dump (and run)."""
    rows = stats[(stats["stat"] == stat) & (stats["subname"] == "")]
    return rows.set_index(_index(stats))["value"].rename(stat)


def vector(stats: pd.DataFrame, stat: str) -> pd.DataFrame:
    """A vector (or per-requestor) statistic: dumps as rows, subnames as columns."""
    rows = stats[stats["stat"] == stat]
    table = rows.pivot_table(index=_index(stats), columns="subname", values="value",
                             aggfunc="first", observed=True)
    table.columns = table.columns.astype(str)
    table.columns.name = stat
    return table


def histogram(stats: pd.DataFrame, stat: str) -> pd.DataFrame:
    """Bucket rows of a histogram or distribution: low, high (inclusive), count."""
    rows = stats[stats["stat"] == stat]
    subs = rows["subname"].astype(str)
    parsed = subs.str.extract(_BUCKET)
    buckets = rows[parsed["low"].notna().to_numpy()].copy()
    parsed = parsed[parsed["low"].notna()]
    buckets["low"] = parsed["low"].astype(float).to_numpy()
    buckets["high"] = parsed["high"].fillna(parsed["low"]).astype(float).to_numpy()
    buckets = buckets.rename(columns={"value": "count"})
    return buckets[[*_index(stats), "low", "high", "count"]].reset_index(drop=True)


def distribution_summary(stats: pd.DataFrame, stat: str) -> pd.DataFrame:
    """samples, mean, stdev... of a distribution: dumps as rows, fields as columns."""
    table = vector(stats, stat)
    return table[[c for c in DIST_FIELDS if c in table.columns]]


def select(stats: pd.DataFrame, pattern: str) -> pd.DataFrame:
    """The rows whose statistic name matches ``pattern`` (a regular expression, matched
    from the start); the match runs once per distinct name, not once per row."""
    names = stats["stat"].astype("category")
    keep = pd.Series(names.cat.categories).astype(str).str.match(pattern).to_numpy()
    codes = names.cat.codes.to_numpy()
    return stats[keep[codes] & (codes >= 0)].reset_index(drop=True)


def with_cpu(stats: pd.DataFrame) -> pd.DataFrame:
    """``stats`` plus ``cpu_group`` (``cpu``, ``pim_cpus``...) and ``cpu_index`` columns
    naming the CPU a statistic belongs to (NaN when it belongs to none)."""
    categories = pd.Series(stats["stat"].cat.categories if isinstance(
        stats["stat"].dtype, pd.CategoricalDtype) else pd.unique(stats["stat"]))
    found = categories.astype(str).str.extract(_CPU)
    group = dict(zip(categories, found["group"], strict=True))
    index = dict(zip(categories, found["index"].astype(float), strict=True))
    out = stats.copy()
    out["cpu_group"] = stats["stat"].map(group).astype(object)
    out["cpu_index"] = stats["stat"].map(index).astype(np.float64)
    return out
