"""Make one run of a campaign, with its retries: what every executor starts.

    python -m pimcloud.runs.worker CAMPAIGN_DIR --run RUN_ID [--run ...]
    python -m pimcloud.runs.worker CAMPAIGN_DIR --list FILE --index N    (Slurm arrays)
    python -m pimcloud.runs.worker CAMPAIGN_DIR --checkpoint TOPOLOGY

An attempt happens in ``.staging/<run_id>.attempt-<n>.<token>/``.  When it succeeds its
run.json is written there and the folder is renamed to ``runs/<run_id>``: the run appears
whole or not at all.  When it fails, the folder is renamed to
``failed/<run_id>/attempt-<n>`` with a failure.json and its logs, and the next attempt
starts, up to the campaign's limit.  A run being made holds ``.state/<run_id>.lock``, so
two workers never make the same run, and a killed worker's staging is cleared by the next.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.file_digest import file_digest
from pimcloud.memory_budget import in_turn_from_now

from .backends import Outcome
from .campaign import Campaign, open_campaign
from .layout import FAILURE_RECORD, RUN_RECORD
from .plan import busy_cores, detailed_phase
from .spec import Run
from .speeds import record_run_speed

Log = Any


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def gem5_binary_sha256(campaign: Campaign) -> str | None:
    """sha256 of the gem5 binary an attempt starts with: a gem5 rebuilt in place between
    two runs of one campaign (a fix to a SimObject) shows in their records."""
    gem5 = campaign.record.get("gem5")
    if campaign.backend_name != "gem5" or not gem5 or not Path(gem5).is_file():
        return None
    return file_digest(Path(gem5), campaign.dir.root / ".digests.json")


def execution_record(campaign: Campaign, run: Run, outcome: Outcome, attempt: int,
                     started: str, failures: list[str],
                     gem5_sha256: str | None = None) -> dict[str, Any]:
    backend = campaign.backend_name
    extra = {k: v for k, v in outcome.extra.items() if k not in ("results",)}
    return {
        "campaign": campaign.spec.name,
        "spec_hash": campaign.spec.spec_hash,
        "run_hash": run.run_hash,
        "backend": backend,
        "timing": campaign.record.get("timing"),
        "gem5_version": campaign.record.get("gem5_version"),
        "gem5_build": campaign.record.get("gem5_build"),
        "gem5_sha256": gem5_sha256,
        "exit_cause": outcome.cause,
        "host_seconds": round(outcome.host_seconds, 3),
        **({"cpu_seconds": round(outcome.cpu_seconds, 3)} if outcome.cpu_seconds else {}),
        "simulated_seconds": outcome.simulated_seconds,
        "attempt": attempt,
        "failed_attempts": failures,
        "started": started,
        "finished": _now(),
        "host": socket.gethostname(),
        "inputs": campaign.record.get("inputs"),
        **extra,
    }


def execute_run(campaign: Campaign, run: Run, log: Log = print) -> str:
    """Make ``run`` (retrying up to the campaign's limit): "done", "failed" or "busy"."""
    folder = campaign.dir
    with folder.claim(run.run_id) as mine:
        if not mine:
            return "busy"
        if folder.is_done(run.run_id):
            return "done"
        folder.clear_stale_staging(run.run_id)
        backend = campaign.backend()
        while True:
            previous = folder.failed_attempts(run.run_id)
            attempt = len(previous) + 1
            if attempt > campaign.max_attempts:
                return "failed"
            staging = folder.staging / f"{run.run_id}.attempt-{attempt}.{secrets.token_hex(3)}"
            staging.mkdir(parents=True)
            started = _now()
            gem5_sha256 = gem5_binary_sha256(campaign)
            log(f"{run.run_id}: attempt {attempt} of {campaign.max_attempts} ({backend.name})")
            try:
                # its gem5s keep the attempt's place for memory; status sees them wait
                with in_turn_from_now(folder.memory_waiter(run.run_id)):
                    outcome = backend.attempt(run, staging)
            except Exception as error:  # a bug or a broken input must not stop other runs
                outcome = Outcome(False, "runner-error", f"{error}\n{traceback.format_exc()}",
                                  0.0)
            failures = [_failure_cause(p) for p in previous]
            record = execution_record(campaign, run, outcome, attempt, started, failures,
                                      gem5_sha256)
            if outcome.ok:
                run_record = {"run_id": run.run_id, **run.axes_record(), "execution": record}
                atomic_write_text(staging / RUN_RECORD, json.dumps(run_record, indent=1) + "\n")
                folder.publish(staging, run.run_id)
                if outcome.simulated_seconds:
                    phase = detailed_phase(run, backend.name,
                                           bool(outcome.extra.get("app_checkpoint")))
                    length = run.spec.length.warmup_s + run.spec.length.measured_s
                    # CPU time where known: a run beside others on a shared machine takes
                    # longer in wall time, not in CPU time.
                    record_run_speed(backend.name, phase, run.topology,
                                     outcome.simulated_seconds,
                                     outcome.cpu_seconds or outcome.host_seconds,
                                     busy_cores(run), length, folder.run_dir(run.run_id),
                                     run.apps[0].name if len(run.apps) == 1
                                     and run.scenario.manager == "none" else None,
                                     outcome.extra.get("guest_ops"),
                                     outcome.extra.get("gem5_processes", 1))
                log(f"{run.run_id}: done in {outcome.host_seconds:.1f} s ({outcome.cause})")
                return "done"
            record["detail"] = outcome.detail
            atomic_write_text(staging / FAILURE_RECORD, json.dumps(
                {"run_id": run.run_id, **record}, indent=1, default=str) + "\n")
            kept = folder.keep_failure(staging, run.run_id, attempt)
            log(f"{run.run_id}: attempt {attempt} failed ({outcome.cause}); kept in {kept}")


def _failure_cause(path: Path) -> str:
    try:
        return str(json.loads((path / FAILURE_RECORD).read_text())["exit_cause"])
    except (OSError, ValueError, KeyError):
        return "unknown"


def _terminate(signum: int, frame: object) -> None:
    # Raise in the main thread so that the simulator's process group is stopped on the way out.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pimcloud.runs.worker",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("campaign", type=Path)
    parser.add_argument("--run", action="append", default=[], help="run id (repeatable)")
    parser.add_argument("--list", type=Path, help="file of run ids, one a line")
    parser.add_argument("--index", type=int, help="line of --list to make (0-based)")
    parser.add_argument("--checkpoint", help="only make the checkpoint of this topology")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)

    def log(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')} {os.getpid()}] {line}", flush=True)

    campaign = open_campaign(args.campaign)
    if args.checkpoint:
        if campaign.backend_name != "gem5":
            return 0
        campaign.checkpoints().ensure(args.checkpoint, log=log)
        return 0
    run_ids = list(args.run)
    if args.list is not None:
        lines = [line.strip() for line in args.list.read_text().splitlines() if line.strip()]
        run_ids += lines if args.index is None else [lines[args.index]]
    status = 0
    for run_id in run_ids:
        result = execute_run(campaign, campaign.run(run_id), log)
        log(f"{run_id}: {result}")
        status |= result == "failed"
    return status


if __name__ == "__main__":
    sys.exit(main())
