"""Reading the harness's outputs: lats.bin, requests.csv, summary.json, live.jsonl.

lats.bin holds, per measured request in request-id order, three little-endian uint64:
queue ns, service ns, sojourn ns (Tailbench's layout; no header).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

LATS_DTYPE = np.dtype([("queue_ns", "<u8"), ("service_ns", "<u8"), ("sojourn_ns", "<u8")])
CSV_COLUMNS = (
    "request_id",
    "thread",
    "scheduled_ns",
    "start_ns",
    "end_ns",
    "queue_ns",
    "service_ns",
    "sojourn_ns",
)


def read_lats(path: Path) -> np.ndarray:
    data = path.read_bytes()
    if len(data) % LATS_DTYPE.itemsize:
        raise ValueError(f"{path}: {len(data)} bytes is not a whole number of 24-byte records")
    return np.frombuffer(data, dtype=LATS_DTYPE)


def read_requests(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path)
    if tuple(frame.columns) != CSV_COLUMNS:
        raise ValueError(f"{path}: columns {list(frame.columns)}, expected {list(CSV_COLUMNS)}")
    return frame


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
        return cls(folder, summary, read_requests(folder / "requests.csv"))

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
