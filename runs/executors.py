"""Executors: who starts the workers.  Local process pool (default) and Slurm job arrays.

Both start ``python -m pimcloud.runs.worker`` for pending runs and leave everything else to
the folder (locks, staging, failures), so either can be stopped at any point and the
campaign resumed by the other.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from pimcloud.memory_budget import BudgetError, budget_bytes
from pimcloud.paths import REPO_ROOT
from pimcloud.supervise import die_with_parent

from .campaign import Campaign, CampaignError
from .status import Display

WORKER = [sys.executable, "-m", "pimcloud.runs.worker"]
SLURM_MARGIN_S = 300  # beyond the runs' own limits, for start-up and clean-up


def memory_available() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def local_jobs(campaign: Campaign, requested: int = 0) -> int:
    """How many runs at once: the request, else the cores and the memory (each run may
    use its memory limit) of this machine allow."""
    if requested > 0:
        return requested
    cores = len(os.sched_getaffinity(0))
    memory = memory_available()
    by_memory = memory // campaign.spec.limits.memory_bytes if memory else cores
    return max(1, min(cores, int(by_memory)))


def pending_runs(campaign: Campaign) -> list[str]:
    folder = campaign.dir
    return [run.run_id for run in campaign.runs()
            if not folder.is_done(run.run_id)
            and len(folder.failed_attempts(run.run_id)) < campaign.max_attempts]


def _start_worker(campaign: Campaign, run_id: str) -> subprocess.Popen[bytes]:
    log = campaign.dir.state / f"{run_id}.worker.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as output:
        return subprocess.Popen([*WORKER, str(campaign.dir.root), "--run", run_id],
                                stdin=subprocess.DEVNULL, stdout=output,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent)


def _stop_workers(workers: dict[str, subprocess.Popen[bytes]]) -> None:
    for process in workers.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for process in workers.values():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def run_local(campaign: Campaign, jobs: int = 0, live: bool | None = None,
              log: object = print) -> dict[str, int]:
    """Make every pending run, ``jobs`` at a time; returns the workers' exit codes."""
    try:
        budget_bytes()  # a bad $PIMCLOUD_MEMORY_BUDGET: said once here, not by every run
    except BudgetError as error:
        raise CampaignError(str(error)) from None
    jobs = local_jobs(campaign, jobs or campaign.spec.executor.jobs)
    campaign.record["jobs"] = jobs
    campaign.dir.write_record(campaign.record)
    queue = deque(pending_runs(campaign))
    workers: dict[str, subprocess.Popen[bytes]] = {}
    codes: dict[str, int] = {}
    if campaign.backend_name == "gem5" and queue:
        # Boot each needed topology once, before the runs that restore it.
        for topology in sorted({campaign.run(run_id).topology for run_id in queue}):
            campaign.checkpoints().ensure(topology, log=log)
    try:
        with Display(campaign, live) as display:
            while queue or workers:
                while queue and len(workers) < jobs:
                    run_id = queue.popleft()
                    workers[run_id] = _start_worker(campaign, run_id)
                for run_id, process in list(workers.items()):
                    if process.poll() is not None:
                        codes[run_id] = process.returncode
                        del workers[run_id]
                display.update()
                time.sleep(0.3)
    except BaseException:
        _stop_workers(workers)
        raise
    return codes


# ----------------------------------------------------------------------------- Slurm

def _sbatch(arguments: list[str], script: Path) -> str:
    if shutil.which("sbatch") is None:
        raise CampaignError("sbatch is not on PATH: install Slurm's client (Debian's "
                            "slurm-client) or use --executor local")
    done = subprocess.run(["sbatch", "--parsable", *arguments, str(script)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CampaignError(f"sbatch refused {script}: {done.stderr.strip()}")
    return done.stdout.strip().split(";")[0]


REQUEUE_SIGNAL = "USR1"  # Slurm sends it REQUEUE_NOTICE_S before the time limit
REQUEUE_NOTICE_S = 300


def _batch_script(campaign: Campaign, worker_args: str, requeue: bool = False) -> str:
    env = f"cd {shlex.quote(str(REPO_ROOT))}\n"
    worker = f"{shlex.join(WORKER)} {shlex.quote(str(campaign.dir.root))} {worker_args}"
    head = ("#!/bin/sh\n"
            f"# pimcloud campaign {campaign.spec.name}: written by pimcloud.runs.executors\n"
            f"{env}")
    if not requeue:
        return f"{head}exec {worker}\n"
    # Preemptible runs: near the time limit, stop the worker (its run keeps its progress
    # checkpoints) and requeue this task; it resumes from the latest. Preemption requeues
    # by itself (--requeue).
    return (f"{head}{worker} &\n"
            "worker=$!\n"
            'job="${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}${SLURM_ARRAY_TASK_ID:+_$SLURM_ARRAY_TASK_ID}"\n'
            f"trap 'echo \"pimcloud: time limit near: requeue $job\"; kill -TERM $worker; "
            f"wait $worker; scontrol requeue \"$job\"; exit 0' {REQUEUE_SIGNAL}\n"
            "wait $worker\n"
            "status=$?\n"
            # wait returns early when the trap's signal arrives: wait for the trap's end.
            "wait $worker 2>/dev/null\n"
            "exit $status\n")


def submit_slurm(campaign: Campaign) -> list[str]:
    """Submit the checkpoint jobs (gem5, when missing) and one job array of the pending
    runs that depends on them; returns the job ids."""
    spec = campaign.spec
    pending = pending_runs(campaign)
    if not pending:
        return []
    folder = campaign.dir.root / "slurm"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    common = [f"--job-name=pimcloud-{spec.name}",
              f"--mem={max(1, spec.limits.memory_bytes >> 20)}M", "--cpus-per-task=1"]
    if spec.executor.partition:
        common.append(f"--partition={spec.executor.partition}")
    if spec.executor.account:
        common.append(f"--account={spec.executor.account}")
    common += list(spec.executor.sbatch_args)
    minutes = math.ceil((spec.limits.host_time_s + SLURM_MARGIN_S) / 60)
    jobs: list[str] = []
    dependencies: list[str] = []
    if campaign.backend_name == "gem5":
        checkpoints = campaign.checkpoints()
        for topology in sorted({campaign.run(r).topology for r in pending}):
            if checkpoints.meta(checkpoints.key(topology)) is not None:
                continue
            script = folder / f"checkpoint-{Path(topology).stem}-{stamp}.sh"
            script.write_text(_batch_script(campaign,
                                            f"--checkpoint {shlex.quote(topology)}"))
            job = _sbatch([*common, f"--time={minutes}",
                           f"--output={folder}/checkpoint-%j.out"], script)
            jobs.append(job)
            dependencies.append(job)
    listing = folder / f"array-{stamp}.txt"
    listing.write_text("\n".join(pending) + "\n")
    script = folder / f"array-{stamp}.sh"
    preemptible = campaign.backend_name == "gem5" and spec.gem5.progress_every_s is not None
    script.write_text(_batch_script(
        campaign, f"--list {shlex.quote(str(listing))} --index \"$SLURM_ARRAY_TASK_ID\"",
        requeue=preemptible))
    throttle = f"%{spec.executor.max_parallel}" if spec.executor.max_parallel else ""
    arguments = [*common, f"--array=0-{len(pending) - 1}{throttle}",
                 f"--time={minutes * campaign.max_attempts}",
                 f"--output={folder}/%A_%a.out"]
    if preemptible:
        arguments += ["--requeue", f"--signal=B:{REQUEUE_SIGNAL}@{REQUEUE_NOTICE_S}",
                      "--open-mode=append"]
    if dependencies:
        arguments.append("--dependency=afterok:" + ":".join(dependencies))
    jobs.append(_sbatch(arguments, script))
    campaign.record.setdefault("slurm_jobs", []).extend(jobs)
    campaign.record["jobs"] = spec.executor.max_parallel or len(pending)
    campaign.dir.write_record(campaign.record)
    return jobs


def slurm_active(job_ids: list[str]) -> bool:
    if not job_ids:
        return False
    done = subprocess.run(["squeue", "--noheader", "--jobs", ",".join(job_ids),
                           "--format=%i"], capture_output=True, text=True, check=False)
    return bool(done.stdout.strip())


def run_slurm(campaign: Campaign, wait: bool = True, live: bool | None = None,
              log: object = print) -> list[str]:
    jobs = submit_slurm(campaign)
    print(f"submitted Slurm jobs: {', '.join(jobs) or '(nothing pending)'}", flush=True)
    if wait and jobs:
        with Display(campaign, live) as display:
            while slurm_active(jobs):
                display.update()
                time.sleep(2)
            display.update()
    return jobs
