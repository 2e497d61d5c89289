"""What a study cell's requests cost the guest's CPU, for `study plan` to price the cell.

gem5's cost follows the guest's work (runs/README.md, "Priced by the guest's work"), and a
cell's work is its requests times the services' CPU a request. Before a cell runs, the
study knows only its estimates of service time, which set the sampled load; they can be
far off (oltp's PIM cells: a capacity held down by SQLite's one writer priced 16 workers
half busy, about five times the work they did). Once some cell of the same service has
run, its measured CPU a request (speeds.measured_cpu_ns over its measured requests) is
the better figure, taken in this order:

1. a run of this study on the same preset (any placement: FT's figure prices CC and IL);
2. the bundle's reference results on the same preset (analysis/reference/table_iii.csv:
   the time on a worker, the harness's overhead and the generator's CPU a request);
3. either of those on the other presets of the same core type (their mean), each scaled
   by what the services measured on both cost on this preset against that one (a shallow
   preset's request costs about twice its deep twin's).

A cell with none keeps the estimate's pricing.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .layout import REFERENCE_DIR
from .maxload import summary_path_of
from .speeds import measured_cpu_ns
from .study import Cell, StudyDir, StudySpec

REFERENCE_TABLE = REFERENCE_DIR / "table_iii.csv"
# table_iii.csv's columns that add up to a request's CPU in the guest (us).
REFERENCE_PARTS = ("mean_occupied_us", "overhead_us", "generator_us")


@dataclass(frozen=True)
class RequestCost:
    seconds: float  # the services' CPU in the guest a request
    source: str  # where the figure comes from, for the plan's line

    def describe(self) -> str:
        return f"{self.seconds * 1e3:.3g} ms a request, {self.source}"


def measured_in_study(study: StudySpec, root: Path) -> dict[tuple[str, str], list[float]]:
    """(preset, service) -> CPU a measured request of each of its cells' runs so far."""
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    folder = StudyDir(root)
    for cell in study.cells():
        runs = folder.cell_dir(cell) / "runs"
        if not runs.is_dir():
            continue
        for run_dir in sorted(path for path in runs.iterdir() if path.is_dir()):
            path = summary_path_of(run_dir, cell.service)
            if path is None:
                continue
            try:
                summary = json.loads(path.read_text())
                cpu, requests = measured_cpu_ns(path, summary), int(summary["requests"])
            except (OSError, KeyError, TypeError, ValueError):
                continue
            if requests > 0 and cpu > 0:
                found[(cell.preset, cell.service)].append(cpu / requests / 1e9)
    return found


def measured_in_reference(path: Path = REFERENCE_TABLE) -> dict[tuple[str, str], float]:
    """(preset, service) -> CPU a request in the reference's Table III (empty when the
    bundle ships none)."""
    if not path.is_file():
        return {}
    found = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            parts = [_number(row.get(name)) for name in REFERENCE_PARTS]
            if math.isnan(parts[0]) or parts[0] <= 0:
                continue
            found[(row["arch"], row["app"])] = sum(p for p in parts if not math.isnan(p)) / 1e6
    return found


def _number(text: str | None) -> float:
    try:
        return float(text) if text else math.nan
    except ValueError:
        return math.nan


def request_costs(study: StudySpec, root: Path, reference: Path = REFERENCE_TABLE
                  ) -> dict[str, RequestCost]:
    """Cell name -> its measured CPU a request, for every cell that has one (the order in
    the module's docstring)."""
    own = {key: sum(values) / len(values)
           for key, values in measured_in_study(study, root).items()}
    theirs = measured_in_reference(reference)
    core_type = {cell.preset: cell.core_type for cell in study.cells()}
    costs = {}
    for cell in study.cells():
        cost = _cost_of(cell, own, theirs, core_type)
        if cost is not None:
            costs[cell.name] = cost
    return costs


def _cost_of(cell: Cell, own: dict[tuple[str, str], float],
             theirs: dict[tuple[str, str], float], core_type: dict[str, str]
             ) -> RequestCost | None:
    key = (cell.preset, cell.service)
    if key in own:
        return RequestCost(own[key], f"measured on {cell.preset} (this study)")
    if key in theirs:
        return RequestCost(theirs[key], f"measured on {cell.preset} (reference)")
    measured = {**theirs, **own}
    alike = sorted(preset for (preset, service) in measured
                   if service == cell.service and core_type.get(preset) == cell.core_type)
    if not alike:
        return None
    ratios = {preset: _preset_ratio(cell.preset, preset, measured) for preset in alike}
    # A figure scaled to this preset beats a raw one: where any is, the raw ones are left out.
    used = [preset for preset in alike if ratios[preset] is not None] or alike
    figures = [measured[(preset, cell.service)] * (ratios[preset] or 1.0) for preset in used]
    source = f"measured on {', '.join(used)} ({cell.core_type} cores)"
    if ratios[used[0]] is not None:
        source += f", x what the other services cost on {cell.preset} against them"
    return RequestCost(sum(figures) / len(figures), source)


def _preset_ratio(preset: str, other: str, measured: dict[tuple[str, str], float]
                  ) -> float | None:
    """What a request costs on ``preset`` against ``other`` (same core type), over the
    services measured on both: their summed costs here over their summed costs there, so
    that a service of microsecond requests (kvstore, mostly the harness's wake-ups) weighs
    little beside millisecond ones; None when no service is measured on both. Cores of one
    type differ by their hierarchy and memory: a request on a shallow preset (L1s only)
    cost 1.7-2.5x its deep twin's for imgdnn, oltp and search (the reference's Table III:
    time on a worker, harness and generator)."""
    shared = [service for (where, service) in measured
              if where == preset and measured.get((other, service), 0) > 0
              and measured[(preset, service)] > 0]
    if not shared:
        return None
    return (sum(measured[(preset, service)] for service in shared)
            / sum(measured[(other, service)] for service in shared))
