"""A campaign folder on disk: where each run's outputs, failures and locks live.

    CAMPAIGN/
      campaign.json        name, spec hash, backend, gem5 version, run ids, spec text
      runs/<run_id>/       one finished run (appears whole: staged, then renamed)
        run.json           run_id + sweep axes (analysis format) + "execution" record
        m5out/ | guest/    the simulator's (or QEMU's) own output
        results/           the guest's /results: <app>/lats.bin, decisions.jsonl, ...
        scenario/          what the guest ran
      failed/<run_id>/attempt-<n>/   a failed attempt as it was left, failure.json + logs
      .staging/            attempts in progress (removed or renamed when they end)
      .state/<run_id>.lock held by the process making that run (flock): "running"
      report/              the analysis report (pimcloud analyze CAMPAIGN --report)

Only finished runs hold a ``run.json``, so analysis (which reads every folder with one)
never sees a partial or failed run.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.paths import REPO_ROOT

RUN_RECORD = "run.json"
FAILURE_RECORD = "failure.json"
CAMPAIGN_RECORD = "campaign.json"
DEFAULT_OUT = REPO_ROOT / "runs" / "out"
# The bundle's reference results (`study report --reference` writes them; the analysis
# reads them, and `study plan` prices cells by their measured CPU a request).
REFERENCE_DIR = REPO_ROOT / "analysis" / "reference"


def default_checkpoint_root() -> Path:
    """Shared by every campaign: ``$PIMCLOUD_CHECKPOINTS`` or runs/out/checkpoints."""
    configured = os.environ.get("PIMCLOUD_CHECKPOINTS")
    return Path(configured) if configured else DEFAULT_OUT / "checkpoints"


@dataclass(frozen=True)
class CampaignDir:
    root: Path

    @property
    def record_path(self) -> Path:
        return self.root / CAMPAIGN_RECORD

    @property
    def staging(self) -> Path:
        return self.root / ".staging"

    @property
    def state(self) -> Path:
        return self.root / ".state"

    @property
    def progress(self) -> Path:
        """Preemptible runs' progress checkpoints, a folder per run id (progress.py)."""
        return self.root / ".progress"

    def run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / run_id

    def failed_dir(self, run_id: str) -> Path:
        return self.root / "failed" / run_id

    def is_done(self, run_id: str) -> bool:
        return (self.run_dir(run_id) / RUN_RECORD).is_file()

    def failed_attempts(self, run_id: str) -> list[Path]:
        folder = self.failed_dir(run_id)
        if not folder.is_dir():
            return []
        return sorted((p for p in folder.iterdir() if p.name.startswith("attempt-")),
                      key=lambda p: int(p.name.split("-")[1]))

    def read_record(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.record_path.read_text())
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{self.root}: not a campaign folder (no {CAMPAIGN_RECORD}); start one with "
                "'pimcloud campaign run SPEC'") from None
        return data

    def write_record(self, record: dict[str, Any]) -> None:
        atomic_write_text(self.record_path, json.dumps(record, indent=1) + "\n")

    def lock_path(self, run_id: str) -> Path:
        return self.state / f"{run_id}.lock"

    def memory_waiter(self, run_id: str) -> str:
        """The name a run's simulators wait for memory under (memory_budget's
        in_turn_from_now): its worker's and its status's, whatever path each came by."""
        return str(self.lock_path(run_id).resolve())

    @contextmanager
    def claim(self, run_id: str) -> Iterator[bool]:
        """Hold the run's lock while making it; yields False when another process has it."""
        self.state.mkdir(parents=True, exist_ok=True)
        path = self.lock_path(run_id)
        with path.open("a+") as handle:
            # A status reader takes the lock shared for an instant: try a few times
            # before concluding that another process is making this run.
            for tries_left in range(10, -1, -1):
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if tries_left == 0:
                        yield False
                        return
                    time.sleep(0.05)
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                     "since": time.time()}))
            handle.flush()
            try:
                yield True
            finally:
                handle.seek(0)
                handle.truncate()
                fcntl.flock(handle, fcntl.LOCK_UN)

    def running(self, run_id: str) -> dict[str, Any] | None:
        """Who holds the run's lock (host, pid, since), or None when nobody does."""
        path = self.lock_path(run_id)
        if not path.exists():
            return None
        with path.open("a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                try:
                    holder: dict[str, Any] = json.loads(handle.read() or "{}")
                except ValueError:
                    holder = {}
                return holder
            fcntl.flock(handle, fcntl.LOCK_UN)
        return None

    def clear_stale_staging(self, run_id: str) -> None:
        """Remove attempts of ``run_id`` left by a killed process (call with the lock held)."""
        if self.staging.is_dir():
            for path in self.staging.glob(f"{run_id}.attempt-*"):
                shutil.rmtree(path, ignore_errors=True)

    def publish(self, staged: Path, run_id: str) -> Path:
        """Make a finished attempt the run's folder in one rename."""
        target = self.run_dir(run_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(staged, target)
        return target

    def keep_failure(self, staged: Path, run_id: str, attempt: int) -> Path:
        target = self.failed_dir(run_id) / f"attempt-{attempt}"
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        os.rename(staged, target)
        return target
