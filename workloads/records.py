"""The harness's per-request records, read and written: ``lats.bin`` (Tailbench's format)
and the request table (``requests.csv`` / ``requests.parquet``). The harness writes them
(workloads/harness); analysis, runs (the max-load search) and workloads read them here.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..atomic import atomic_write_bytes

LATS_RECORD = np.dtype([("queue_ns", "<u8"), ("service_ns", "<u8"), ("sojourn_ns", "<u8")])
REQUEST_COLUMNS = (
    "request_id",
    "thread",
    "scheduled_ns",
    "start_ns",
    "end_ns",
    "queue_ns",
    "service_ns",
    "sojourn_ns",
)
LATS_FIELDS = ("queue_ns", "service_ns", "sojourn_ns")
# Optional in a request table (harness records.h): of service_ns, the time the request held
# its service's serial section (oltp's one writer), and the time it waited to enter it;
# tables made before them have neither.
SERIAL_COLUMN = "serial_ns"
SERIAL_WAIT_COLUMN = "serial_wait_ns"
# Optional too: when the load generator put the request in the work queue, between
# scheduled_ns and start_ns (0 where not known: TCP client mode); tables made before it lack
# the column.
RELEASED_COLUMN = "released_ns"


class ResultsWarning(UserWarning):
    """A results file was damaged; the warning names it and what was kept."""


class ResultsFormatError(ValueError):
    """A results file cannot be read; the message names the file, the problem, the fix."""


def read_lats_bin(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A Tailbench ``lats.bin`` as a frame: ``request`` (completion order), queue_ns,
    service_ns, sojourn_ns (int64).  A partial last record is dropped with a warning."""
    path = Path(path)
    raw = path.read_bytes()
    whole = len(raw) // LATS_RECORD.itemsize * LATS_RECORD.itemsize
    if whole != len(raw):
        warnings.warn(
            f"{path}: {len(raw)} bytes is not a whole number of {LATS_RECORD.itemsize}-byte "
            f"records; dropped the last {len(raw) - whole} bytes (a truncated write?)",
            ResultsWarning,
            stacklevel=2,
        )
    records = np.frombuffer(raw[:whole], dtype=LATS_RECORD)
    frame = pd.DataFrame({name: records[name].astype(np.int64) for name in LATS_FIELDS})
    frame.insert(0, "request", np.arange(len(frame), dtype=np.int64))
    return frame


def write_lats_bin(path: str | os.PathLike[str], frame: pd.DataFrame) -> None:
    """Write queue_ns, service_ns, sojourn_ns of ``frame`` in the ``lats.bin`` format."""
    records = np.empty(len(frame), dtype=LATS_RECORD)
    for name in LATS_FIELDS:
        records[name] = frame[name].to_numpy(dtype=np.uint64)
    atomic_write_bytes(Path(path), records.tobytes())


def read_request_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A request table (CSV or Parquet, by suffix) with :data:`REQUEST_COLUMNS` as int64."""
    path = Path(path)
    if path.suffix == ".parquet":
        frame = pd.read_parquet(path)
    elif path.suffix == ".csv":
        frame = pd.read_csv(path)
    else:
        raise ResultsFormatError(
            f"{path}: a request table must end in .csv or .parquet, not {path.suffix!r}"
        )
    missing = [column for column in REQUEST_COLUMNS if column not in frame.columns]
    if missing:
        raise ResultsFormatError(
            f"{path}: request table lacks columns {missing}; it needs "
            f"{list(REQUEST_COLUMNS)} (integers, nanoseconds)"
        )
    for column in REQUEST_COLUMNS:
        if frame[column].isna().any():
            row = int(np.flatnonzero(frame[column].isna().to_numpy())[0])
            raise ResultsFormatError(
                f"{path}: column {column!r} is empty in data row {row + 1}; every request "
                "needs all of its times"
            )
        frame[column] = frame[column].astype(np.int64)
    return frame
