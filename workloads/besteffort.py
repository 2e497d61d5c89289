"""Best-effort jobs: the one home of what ``pimcloud-be`` runs and what it writes.

``pimcloud-be JOB`` (workloads/services/besteffort) runs until SIGTERM and appends one
JSON line per interval to its ``--stats-file``::

    {"job":"membw","t_ns":..,"interval_ns":..,"work":<units this interval>,"unit":"GB",
     "rate":<units/s>,"final":false,"tids":[..]}

and a last line with ``"final":true`` whose ``work`` is the whole run's. Campaigns start
jobs with :func:`be_command` (runs/guest_scenario.py) and analysis reads their progress
with :func:`read_progress` (analysis/campaign.py): both go through this module.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

PROGRAM = "pimcloud-be"
PROGRESS_FILE = "progress.jsonl"  # in the job's own results folder, <results>/<job>/
# job -> (what it does, its work unit)
JOBS: dict[str, tuple[str, str]] = {
    "compute": ("dependent FMA chains, no memory traffic", "GFLOP"),
    "membw": ("STREAM triad over a buffer per thread", "GB"),
}
# 2 MiB a thread: with $(nproc) threads (20 on paper) 40 MiB in all, 5x the host's 8 MiB L3
# and 60x a PIM core's 32 KiB L1, so the triad streams from memory; small enough that the
# first touch of every buffer (the job's set-up, not counted as work) ends within a few
# simulated ms in gem5. 16 MiB a thread took longer than a whole 0.2 s gem5 run.
MEMBW_MIB_PER_THREAD = 2


class BestEffortError(ValueError):
    """An unknown job or a malformed progress file; the message says what to do."""


def check_job(job: str) -> None:
    if job not in JOBS:
        raise BestEffortError(f"unknown best-effort job {job!r}; use one of "
                              + ", ".join(sorted(JOBS)))


def be_command(job: str, out_dir: str, threads: str, interval_ms: float) -> list[str]:
    """The command that runs ``job`` with ``threads`` workers (a number, or a shell word
    such as ``$(nproc)``) until it is stopped, its progress in ``out_dir``."""
    check_job(job)
    command = [PROGRAM, job, "--threads", threads, "--seconds", "0",
               "--interval-ms", f"{interval_ms:g}", "--stats-file", f"{out_dir}/{PROGRESS_FILE}"]
    if job == "membw":
        command += ["--mib", str(MEMBW_MIB_PER_THREAD)]
    return command


def read_progress(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A job's progress as ``t_ns`` and cumulative ``work`` (its unit in ``unit``), one row
    per interval line; the final summary line is left out."""
    path = Path(path)
    rows = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError as error:
            raise BestEffortError(f"{path}: line {number} is not JSON ({error.msg})") from None
        if not isinstance(line, dict) or "t_ns" not in line or "work" not in line:
            raise BestEffortError(f"{path}: line {number} lacks t_ns or work; is this a "
                                  f"{PROGRAM} --stats-file?")
        if line.get("final"):
            continue
        rows.append((int(line["t_ns"]) - int(line.get("interval_ns", 0)), int(line["t_ns"]),
                     float(line["work"]), str(line.get("unit", ""))))
    if not rows:
        return pd.DataFrame({"t_ns": pd.Series(dtype="int64"),
                             "work": pd.Series(dtype="float64"), "unit": pd.Series(dtype=str)})
    # The first interval's start is where the work began (work 0 there).
    start = rows[0][0]
    frame = pd.DataFrame([(t, w, u) for _, t, w, u in rows], columns=["t_ns", "work", "unit"])
    frame["work"] = frame["work"].cumsum()
    first = pd.DataFrame({"t_ns": [start], "work": [0.0], "unit": [rows[0][3]]})
    return pd.concat([first, frame], ignore_index=True).sort_values("t_ns", kind="stable")
