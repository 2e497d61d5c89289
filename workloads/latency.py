"""Reading the harness's outputs for a quick look: summary.json, requests.csv, live.jsonl.

The file formats themselves (lats.bin, the request table) are read by
pimcloud.workloads.records, the one reader every part uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .records import read_request_table


def read_live(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass(frozen=True)
class RunOutput:
    folder: Path
    summary: dict[str, object]
    requests: pd.DataFrame

    @classmethod
    def load(cls, folder: Path) -> RunOutput:
        summary = json.loads((folder / "summary.json").read_text())
        return cls(folder, summary, read_request_table(folder / "requests.csv"))

    def percentiles_ns(self, column: str = "sojourn_ns") -> dict[str, float]:
        values = self.requests[column].to_numpy()
        if not len(values):
            return {"p50": 0.0, "p95": 0.0, "p99": 0.0}
        p50, p95, p99 = np.percentile(values, [50, 95, 99])
        return {"p50": float(p50), "p95": float(p95), "p99": float(p99)}

    def service_histogram(self, bins: int = 12) -> list[tuple[float, float, int]]:
        """(low ns, high ns, count) over log-spaced bins of service time."""
        values = self.requests["service_ns"].to_numpy().astype(float)
        if not len(values):
            return []
        low, high = max(values.min(), 1.0), max(values.max(), 2.0)
        edges = np.geomspace(low, high * 1.0001, bins + 1)
        counts, _ = np.histogram(values, bins=edges)
        return [
            (float(a), float(b), int(c))
            for a, b, c in zip(edges[:-1], edges[1:], counts, strict=True)
        ]
