"""``campaign collect``: one table of every run (state, axes, host time, exit cause) and of
every failed attempt, beside the run folders, and the analysis report on request."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
from pimcloud.atomic import atomic_write_text

from .campaign import Campaign
from .layout import FAILURE_RECORD, RUN_RECORD
from .status import campaign_status


def clear_abandoned_staging(campaign: Campaign) -> int:
    """Remove attempts whose process is gone (their run is not locked); their count."""
    removed = 0
    staging = campaign.dir.staging
    if not staging.is_dir():
        return 0
    for path in staging.iterdir():
        run_id = path.name.split(".attempt-")[0]
        if campaign.dir.running(run_id) is None:
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def collect(campaign: Campaign) -> tuple[Path, Path]:
    """Write CAMPAIGN/runs.csv and CAMPAIGN/failures.csv; returns their paths."""
    clear_abandoned_staging(campaign)
    status = {s.run_id: s for s in campaign_status(campaign).runs}
    rows: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    for run in campaign.runs():
        state = status[run.run_id]
        row: dict[str, Any] = {"run_id": run.run_id, "state": state.state,
                               "failed_attempts": state.attempts}
        axes = run.axes_record()
        row.update({k: v if not isinstance(v, dict | list) else json.dumps(v)
                    for k, v in axes.items()})
        record_path = campaign.dir.run_dir(run.run_id) / RUN_RECORD
        if record_path.is_file():
            execution = json.loads(record_path.read_text()).get("execution", {})
            for key in ("backend", "exit_cause", "host_seconds", "cpu_seconds",
                        "simulated_seconds", "gem5_version", "gem5_build", "spec_hash"):
                row[key] = execution.get(key)
        rows.append(row)
        for attempt in campaign.dir.failed_attempts(run.run_id):
            try:
                record = json.loads((attempt / FAILURE_RECORD).read_text())
            except (OSError, ValueError):
                record = {}
            failures.append({"run_id": run.run_id, "attempt": attempt.name,
                             "exit_cause": record.get("exit_cause"),
                             "host_seconds": record.get("host_seconds"),
                             "folder": str(attempt)})
    runs_csv = campaign.dir.root / "runs.csv"
    failures_csv = campaign.dir.root / "failures.csv"
    atomic_write_text(runs_csv, pd.DataFrame(rows).to_csv(index=False))
    atomic_write_text(failures_csv, pd.DataFrame(
        failures, columns=["run_id", "attempt", "exit_cause", "host_seconds", "folder"]
    ).to_csv(index=False))
    return runs_csv, failures_csv
