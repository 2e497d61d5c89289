"""Guest results into frames: latency records, request tables, decision logs, run records.

File formats (the writers live in workloads/, guest/pimcloud-agent/ and runs/):

``lats.bin``
    Tailbench's format: one record per request in completion order, three unsigned
    64-bit little-endian integers each: queue time, service time, sojourn time, all in
    nanoseconds (sojourn is measured from the request's scheduled arrival).
``requests.csv`` / ``requests.parquet``
    One row per request, columns :data:`REQUEST_COLUMNS` (integers, nanoseconds;
    ``thread`` is the server thread that served it; times are guest ``CLOCK_MONOTONIC``).
``decisions.jsonl``
    The agent's decision log, one JSON object per line with at least ``t_ns`` (guest
    monotonic ns), ``event`` and ``app``; optionally ``from_cores`` / ``to_cores`` (a
    list of CPU ids, or a count), ``pages_moved`` and ``slack``; other keys are kept.
``<job>/progress.jsonl``
    A best-effort job's progress, as ``pimcloud-be`` writes it and
    :mod:`pimcloud.workloads.besteffort` reads it (``t_ns`` and cumulative ``work``).
``events.jsonl``
    What a scenario did to the run (runs/guest_scenario.py): one JSON object per line
    with ``at_s`` (seconds after the services' start signal, as scheduled), ``kind``
    (arrive, exit, kill, fill), ``target`` (an app, or ``stack<k>``) and ``uptime_s``.
``run.json``
    The run record: ``run_id`` plus one key per sweep axis (``app``, ``rps``,
    ``manager``...); optional ``qos_ns`` (``{app: ns}``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# The harness's record formats live with the harness's side (workloads); analysis reads
# them through there, as runs and workloads do.
from ..workloads.records import (  # noqa: F401 (this module's readers, re-exported)
    LATS_FIELDS,
    LATS_RECORD,
    REQUEST_COLUMNS,
    ResultsFormatError,
    ResultsWarning,
    read_lats_bin,
    read_request_table,
    write_lats_bin,
)

DECISION_REQUIRED = ("t_ns", "event", "app")


def read_decision_log(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The agent's JSON-lines decision log, one row per record, ordered by ``t_ns``.

    Adds ``cores_before`` / ``cores_after`` (counts) from ``from_cores`` / ``to_cores``
    whether those hold lists of CPU ids or counts.
    """
    path = Path(path)
    records: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as stream:
        for number, text in enumerate(stream, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as error:
                raise ResultsFormatError(
                    f"{path}: line {number} is not JSON ({error.msg}); each line must be "
                    'one object like {"t_ns": 1, "event": "upsize", "app": "xapian"}'
                ) from None
            if not isinstance(record, dict):
                raise ResultsFormatError(f"{path}: line {number} is not a JSON object")
            missing = [key for key in DECISION_REQUIRED if key not in record]
            if missing:
                raise ResultsFormatError(
                    f"{path}: line {number} lacks {missing}; every decision needs "
                    f"{list(DECISION_REQUIRED)}"
                )
            records.append(record)
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        frame = pd.DataFrame({key: pd.Series(dtype=object) for key in DECISION_REQUIRED})
        frame["t_ns"] = frame["t_ns"].astype(np.int64)
    frame["t_ns"] = frame["t_ns"].astype(np.int64)
    for source, target in (("from_cores", "cores_before"), ("to_cores", "cores_after")):
        if source in frame.columns:
            frame[target] = frame[source].map(_core_count).astype(float)
            # The agent writes [] on events that move no cores (concentrate, profile):
            # no information, not "0 cores"; only an exit gives an app's cores back, and
            # a best-effort pool may be emptied (be-cpus).
            empty = frame[source].map(lambda v: isinstance(v, list | tuple) and not v)
            if "event" in frame.columns:
                empty &= ~frame["event"].isin(["exit", "be-cpus"])
            frame.loc[empty, target] = np.nan
    if "pages_moved" in frame.columns:
        frame["pages_moved"] = frame["pages_moved"].fillna(0).astype(np.int64)
    if "values" in frame.columns:
        # Measurements an event carries ({"estimate_ns": .., "misses": ..}): one column
        # each, value_<name>, NaN on the events without it.
        values = frame.pop("values").map(lambda v: v if isinstance(v, dict) else {})
        for name in sorted({key for record in values for key in record}):
            frame[f"value_{name}"] = values.map(lambda v, n=name: v.get(n, np.nan)).astype(float)
    return frame.sort_values("t_ns", kind="stable").reset_index(drop=True)


def _core_count(value: object) -> float:
    if isinstance(value, list | tuple):
        return float(len(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return math.nan


EVENT_COLUMNS = ("at_s", "kind", "target")


def read_events(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A scenario's ``events.jsonl``, one row per event, ordered by ``at_s``."""
    path = Path(path)
    records = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise ResultsFormatError(f"{path}: line {number} is not JSON ({error.msg})") from None
        missing = [key for key in EVENT_COLUMNS if key not in record]
        if missing:
            raise ResultsFormatError(f"{path}: line {number} lacks {missing}; every event "
                                     f"needs {list(EVENT_COLUMNS)}")
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=[*EVENT_COLUMNS, "uptime_s"])
    return frame.sort_values("at_s", kind="stable").reset_index(drop=True)


def read_run_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A ``run.json``: must be an object with a string ``run_id``."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ResultsFormatError(f"{path}: not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(record, dict) or not isinstance(record.get("run_id"), str):
        raise ResultsFormatError(
            f'{path}: a run record is an object with a string "run_id" and one key per '
            'sweep axis, e.g. {"run_id": "xapian-200", "app": "xapian", "rps": 200}'
        )
    return record
