"""The reference results at a glance: Markdown tables made from the reference's CSVs,
kept in its README between two markers so that the README's numbers are the CSVs' own.

``pimcloud study report DIR --reference`` rewrites the block after it writes the CSVs; a
test checks that the shipped README's block is the rendering of the shipped CSVs. The
README's prose around the block (how each part was made, what it says) is written by hand.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..atomic import atomic_write_text
from .paper_values import ARCHITECTURES, SERVICES, paper_table_iii
from .reference import read_reference

BEGIN = ("<!-- begin summary: written by `pimcloud study report DIR --reference` from the "
         "CSVs here; edit a study, not this block -->")
END = "<!-- end summary -->"

# Fig. 3's bars in the paper's order: static, then each with migration, then replication.
POLICIES = ("ft", "cc", "il", "ft+mig", "cc+mig", "il+mig", "ft+rep", "cc+rep", "il+rep")
NOT_MADE = "·"


def _value(row: pd.Series, column: str) -> float:
    """A row's number, NaN where it is blank or its table was written before the column."""
    try:
        return float(row.get(column, math.nan))
    except (TypeError, ValueError):
        return math.nan


def _text(row: pd.Series, column: str) -> str:
    value = row.get(column)
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _time(ns: float) -> str:
    """A latency as its reader would say it, to 3 figures (47.7 us, 1.10 ms, 12.0 ms)."""
    if math.isnan(ns):
        return "-"
    value, unit = (ns / 1e6, "ms") if abs(ns) >= 999_500 else (ns / 1e3, "us")
    decimals = max(0, 2 - math.floor(math.log10(abs(value)))) if value else 0
    return f"{value:.{decimals}f} {unit}".replace("-0 ", "0 ")


def _number(value: float, digits: int = 2) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def _count(value: float) -> str:
    """A count or a load: 196,917."""
    return "-" if math.isnan(value) else f"{value:,.0f}"


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; a cell's own `|` or line break would split its row."""
    def cell(text: str) -> str:
        return " ".join(text.split("\n")).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _by_cell(table: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    if table.empty:
        return {}
    return {(str(row["arch"]), str(row["app"])): row for _, row in table.iterrows()}


def _services(*tables: pd.DataFrame) -> list[str]:
    """The paper's six, in its order, and any other service a table has."""
    seen = {str(app) for table in tables if "app" in table for app in table["app"]}
    return [*SERVICES, *sorted(seen - set(SERVICES))]


def table_iii_matrix(table: pd.DataFrame, services: list[str]) -> str:
    """Table III's layout: per architecture and service, tail / QoS at 10 % load and the
    max load normalised to arch1, the paper's beside them."""
    ours, paper = _by_cell(table), _by_cell(paper_table_iii())
    rows = []
    for arch in ARCHITECTURES:
        cells = []
        for app in services:
            theirs = paper.get((arch, app))
            said = (f" ({_number(_value(theirs, 'tail_over_qos'))} · "
                    f"{_number(_value(theirs, 'normalized_max_load'))})"
                    if theirs is not None else "")
            row = ours.get((arch, app))
            cells.append(NOT_MADE + said if row is None else
                         f"**{_number(_value(row, 'tail_over_qos'))} · "
                         f"{_number(_value(row, 'normalized_max_load'))}**{said}")
        rows.append([arch, *cells])
    return _markdown(["arch", *services], rows)


def cells_table(table: pd.DataFrame) -> str:
    """Per cell: the study that made it, its max load at the knee, a request's mean time on a
    worker, the sampled run (load, requests in its steady state, p99 and the model's p99
    there) and the host time of that run and of its app checkpoint."""
    if table.empty:
        return "none yet"
    rows = []
    for _, row in table.sort_values(["app", "arch"]).iterrows():
        host = "/".join(_count(_value(row, k))
                        for k in ("sample_host_seconds", "setup_host_seconds"))
        rows.append([f"{row['arch']} {row['app']}", _text(row, "study"),
                     _count(_value(row, "max_load_rps")),
                     _time(_value(row, "mean_occupied_us") * 1e3),
                     f"{_count(_value(row, 'sample_rps'))}, "
                     f"{_count(_value(row, 'sample_requests'))}, "
                     f"{_time(_value(row, 'sample_p99_ns'))} "
                     f"({_time(_value(row, 'model_p99_at_sample_ns'))})",
                     host])
    return _markdown(["cell", "study", "max load (rps)", "mean on a worker",
                      "sample: rps, requests, p99 (model)", "run / app ckpt host s"], rows)


def placement_matrix(placement: pd.DataFrame) -> str:
    """Fig. 3's bars: arch9's max load per service and policy, normalised as the CSV says
    (arch8, every access local; or the service's best placement where arch8 has none)."""
    if placement.empty or "policy" not in placement:
        return "none yet"
    policies = [p for p in POLICIES if p in set(placement["policy"])]
    policies += sorted(set(placement["policy"]) - set(policies))
    rows = []
    for app, bars in placement.groupby("app", sort=True):
        by_policy = {str(row["policy"]): row for _, row in bars.iterrows()}
        cells = [_number(_value(by_policy[p], "normalized_max_load")) if p in by_policy
                 else NOT_MADE for p in policies]
        rows.append([str(app), _text(bars.iloc[0], "normalized_to"), *cells])
    return _markdown(["service", "normalised to", *policies], rows)


def claims_table(claims: pd.DataFrame) -> str:
    if claims.empty:
        return "none yet"
    rows = [[_text(row, "claim"), _text(row, "qos"), f"**{_text(row, 'verdict')}**",
             _text(row, "numbers")]
            for _, row in claims.iterrows()]
    return _markdown(["the paper's claim", "QoS", "verdict", "numbers"], rows)


def spearman_table(spearman: pd.DataFrame) -> str:
    if spearman.empty:
        return "none yet"
    rows = []
    for metric, group in spearman.groupby("metric", sort=False):
        cells = {str(row["app"]): (f"{_number(_value(row, 'spearman'))} "
                                   f"({_count(_value(row, 'architectures'))})")
                 for _, row in group.iterrows()}
        rows.append([str(metric), *(cells.get(app, NOT_MADE)
                                    for app in _services(spearman))])
    return _markdown(["Table III column", *_services(spearman)], rows)


def validation_table(validation: pd.DataFrame) -> str:
    if validation.empty:
        return "none yet"
    rows = [[f"{row['arch']} {row['app']}", _text(row, "study"), _time(_value(row, "qos_ns")),
             _count(_value(row, "predicted_rps")),
             f"{_count(_value(row, 'measured_rps'))} ({_count(_value(row, 'first_miss_rps'))})",
             "-" if math.isnan(error := _value(row, "error")) else f"{error:+.0%}",
             _count(_value(row, "probes")), _time(_value(row, "window_ms") * 1e6)]
            for _, row in validation.iterrows()]
    return _markdown(["cell", "study", "QoS", "model (rps)", "measured (first miss)",
                      "error", "probes", "window"], rows)


def qos_table(qos: pd.DataFrame) -> str:
    if qos.empty:
        return "none yet"
    rows = [[str(row["app"]), _time(_value(row, "knee_qos_ns")),
             _time(_value(row, "table2_qos_ns"))] for _, row in qos.iterrows()]
    return _markdown(["service", "knee of arch1's curve", "Table II"], rows)


def _coverage(table: pd.DataFrame) -> str:
    made = set(_by_cell(table))
    cells = [(arch, app) for arch in ARCHITECTURES for app in SERVICES]
    first = [(arch, app) for arch in ("arch1", "arch4", "arch8", "arch9") for app in SERVICES]
    missing = [f"{arch} {app}" for arch, app in first if (arch, app) not in made]
    return (f"{sum(c in made for c in cells)} of Table III's {len(cells)} cells are made; "
            f"of the {len(first)} of arch1, arch4, arch8 and arch9 (the presets made first), "
            + ("all." if not missing else f"not yet: {', '.join(missing)}."))


def render(folder: Path) -> str:
    """The summary block (markers included) from the reference CSVs in ``folder``."""
    table = read_reference("table_iii", folder)
    table2 = read_reference("table_iii_table2", folder)
    services = _services(table, table2)
    sections = [
        ("Table III at the knee QoS (`table_iii.csv`)", table_iii_matrix(table, services)),
        ("Table III at Table II's QoS (`table_iii_table2.csv`)",
         table_iii_matrix(table2, services)),
        ("Each cell at the knee QoS, and its host time (`table_iii.csv`)", cells_table(table)),
        ("Fig. 3: arch9's placements at Table II's QoS (`placement_table2.csv`)",
         placement_matrix(read_reference("placement_table2", folder))),
        ("Fig. 3 at the knee QoS (`placement.csv`)",
         placement_matrix(read_reference("placement", folder))),
        ("The paper's claims (`claims.csv`)", claims_table(read_reference("claims", folder))),
        ("Spearman's rank correlation with the paper's Table III, per column "
         "(`spearman.csv`; architectures compared in brackets)",
         spearman_table(read_reference("spearman", folder))),
        ("The model's max load beside a direct search in gem5 (`validation.csv`)",
         validation_table(read_reference("validation", folder))),
    ]
    parts = [BEGIN, "## The results at a glance", "",
             _coverage(table) + " A cell is **tail / QoS at 10 % load · max load "
             "normalised to arch1**, the paper's Table III beside it in brackets; "
             f"{NOT_MADE}: not made. The sections below say how each part was made.", "",
             "QoS per service (`qos.csv`):", "", qos_table(read_reference("qos", folder))]
    for heading, body in sections:
        parts += ["", f"### {heading}", "", body]
    return "\n".join([*parts, END]) + "\n"


def with_summary(readme: str, block: str) -> str:
    """``readme`` with its summary block replaced by ``block`` (appended where it has
    none)."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 and end < 0:
        return readme.rstrip("\n") + "\n\n" + block
    if start < 0 or end < start:
        raise ValueError("the reference README has one summary marker without the other, "
                         f"or in the wrong order: keep both ({BEGIN!r} then {END!r}) or "
                         "delete both, and run `pimcloud study report DIR --reference` again")
    return readme[:start] + block + readme[end + len(END):].removeprefix("\n")


def write_summary(folder: Path) -> Path:
    """Rewrite the summary block of ``folder``/README.md from the CSVs there."""
    path = folder / "README.md"
    readme = (path.read_text() if path.is_file()
              else "# Reference results\n\nMade by `pimcloud study report DIR --reference`.\n")
    atomic_write_text(path, with_summary(readme, render(folder)))
    return path


__all__ = ["BEGIN", "END", "render", "with_summary", "write_summary"]
