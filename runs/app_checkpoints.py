"""App checkpoints: under each boot checkpoint, one per app set, with its services loaded.

A run's services (their programs, data, engine options, workers and static placement)
are its *app set*.  The first run of a set restores the boot checkpoint on the atomic
cores (pim_fs.py ``setup``), launches the services and waits until each has loaded, and
the guest asks for a checkpoint there; every run of the set then restores that app
checkpoint with the detailed cores and sends only its own part (load, manager, seed,
lengths: runs/guest_scenario.py ``run_part_script``).

``root/apps/<topology>-<apps>-<key>/`` holds ckpt/, m5out/, setup/ (the set-up scenario),
setup.log and meta.json.  The key is a digest of the boot checkpoint's key and the bytes
of the set-up scenario folder (its script and the programs shipped with it), so any
change to what loads the services makes a new one; meta.json repeats both and a run
checks them before it restores (``verify``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.gem5_session import console_text, last_tick, unimplemented_instructions
from pimcloud.supervise import supervise

from .checkpoints import LAST_USED, CheckpointKey, Checkpoints, log_tail, why_stopped
from .guest_scenario import write_setup
from .progress import RunProgress
from .spec import Run

# Simulated seconds a set-up may take before it counts as hung (kvstore's fill of a
# large table is the slowest: about a simulated second per 10^5 keys on the atomic cores).
SETUP_LIMIT_S = 60.0

# A set-up works in ``root/apps/.setup-*/`` and holds a lock on its ``.owner`` file (which
# names its host and pid) while it does; a process killed outright (SIGKILL, a session's
# end) leaves the folder behind with a partial checkpoint in it, which the next set-up on
# the same host sweeps away. The folder is made as ``.claim-*`` and renamed once locked,
# so a sweep never sees an owner file before its lock. A folder of another host is left
# (its lock may not be visible here: NFS), as is one made before owner files were kept
# until nothing in it has changed for UNOWNED_STAGING_S.
STAGING_PREFIX = ".setup-"
CLAIM_PREFIX = ".claim-"
STAGING_OWNER = ".owner"
UNOWNED_STAGING_S = 3600.0


@contextmanager
def held_staging(root: Path) -> Iterator[Path]:
    """A new staging folder under ``root``, locked as this process's until it is removed."""
    claim = Path(tempfile.mkdtemp(dir=root, prefix=CLAIM_PREFIX))
    with (claim / STAGING_OWNER).open("w") as owner:
        fcntl.flock(owner, fcntl.LOCK_EX)
        owner.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
        owner.flush()
        staging = root / (STAGING_PREFIX + claim.name.removeprefix(CLAIM_PREFIX))
        claim.rename(staging)
        try:
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _unchanged_for(folder: Path) -> float:
    """Seconds since anything in ``folder`` last changed."""
    return time.time() - max(path.stat().st_mtime for path in [folder, *folder.rglob("*")])


def staging_abandoned(folder: Path) -> bool:
    """Whether no live set-up holds the staging (or claim) folder ``folder``."""
    try:
        owner = (folder / STAGING_OWNER).open("r")
    except FileNotFoundError:
        return _unchanged_for(folder) > UNOWNED_STAGING_S
    with owner:
        try:
            holder = json.loads(owner.read() or "{}")
        except ValueError:
            holder = {}
        if holder.get("host") != socket.gethostname():
            return False
        try:
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a set-up at work
    return True


def sweep_stale_staging(root: Path, log: Any = print) -> list[Path]:
    """Remove the staging folders under ``root`` that no live set-up holds; the removed.
    A folder that cannot be told or removed (another user's, a lock error) is left."""
    removed = []
    for folder in sorted([*root.glob(f"{STAGING_PREFIX}*"), *root.glob(f"{CLAIM_PREFIX}*")]):
        try:
            if not staging_abandoned(folder):
                continue
            shutil.rmtree(folder)
        except OSError:
            continue
        removed.append(folder)
        log(f"app checkpoint: removed {folder}, left by a set-up that was killed")
    return removed


def folder_digest(folder: Path) -> str:
    """sha256 over the relative names and bytes of every file under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def app_set_name(run: Run) -> str:
    return "+".join(app.name for app in run.apps)


@dataclass(frozen=True)
class AppCheckpoint:
    folder: Path
    meta: dict[str, Any]

    @property
    def ckpt(self) -> Path:
        return self.folder / "ckpt"

    @property
    def simulated_seconds(self) -> float:
        return float(self.meta["simulated_seconds"])


class AppCheckpoints:
    """The app checkpoints of one boot-checkpoint store (``Checkpoints``)."""

    def __init__(self, boots: Checkpoints) -> None:
        self.boots = boots
        self.root = boots.root / "apps"

    def folder_of(self, run: Run, boot_key: CheckpointKey, setup: Path) -> tuple[Path, str]:
        """Where ``run``'s app checkpoint lives, and its set-up folder's digest; writes the
        set-up scenario into ``setup``."""
        # The image's programs (/opt/pimcloud/bin, in the boot checkpoint's key):
        # shipping them through m5 readfile costs simulated time for nothing.
        write_setup(run, setup, ship_programs=False)
        setup_sha = folder_digest(setup)
        key = hashlib.sha256(f"{boot_key.key}:{setup_sha}".encode()).hexdigest()[:16]
        return self.root / f"{boot_key.folder_name}-{app_set_name(run)}-{key}", setup_sha

    def progress_folder(self, folder: Path) -> Path:
        """Where a set-up of ``folder`` keeps its progress checkpoints across attempts."""
        return self.root / f".progress-{folder.name}"

    def has(self, run: Run) -> bool:
        """Whether the store holds ``run``'s app checkpoint (and its boot checkpoint)."""
        boot_key = self.boots.key(run.topology)
        if self.boots.meta(boot_key) is None:
            return False
        with tempfile.TemporaryDirectory() as scratch:
            folder, _ = self.folder_of(run, boot_key, Path(scratch) / "setup")
        return (folder / "ckpt" / "m5.cpt").is_file()

    def ensure(self, run: Run, log: Any = print) -> AppCheckpoint:
        """The app checkpoint of ``run``'s app set: found and verified, or made now (one
        process at a time per set)."""
        boot_key, boot_meta = self.boots.ensure(run.topology, log)
        self.root.mkdir(parents=True, exist_ok=True)
        sweep_stale_staging(self.root, log)
        with held_staging(self.root) as staging:
            folder, setup_sha = self.folder_of(run, boot_key, staging / "setup")
            found = self._found(folder, boot_key, setup_sha)
            if found:
                return found
            with (self.root / f".{folder.name}.lock").open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                found = self._found(folder, boot_key, setup_sha)
                if found:
                    return found
                log(f"app checkpoint: loading {app_set_name(run)} on the atomic cores to make "
                    f"{folder} (once for every run of this app set)")
                return self._make(run, staging, folder, boot_key, boot_meta, setup_sha, log)

    def _found(self, folder: Path, boot_key: CheckpointKey, setup_sha: str
               ) -> AppCheckpoint | None:
        try:
            meta: dict[str, Any] = json.loads((folder / "meta.json").read_text())
        except (OSError, ValueError):
            return None
        verify(folder, meta, boot_key.key, setup_sha)
        (folder / LAST_USED).touch()
        return AppCheckpoint(folder, meta)

    def _make(self, run: Run, staging: Path, folder: Path, boot_key: CheckpointKey,
              boot_meta: dict[str, Any], setup_sha: str, log: Any) -> AppCheckpoint:
        from pimcloud.guest.scenario import load_scenario

        from .speeds import record_speed

        building = staging / "building"
        building.mkdir()
        shutil.move(str(staging / "setup"), building / "setup")
        (building / "setup.tar").write_bytes(load_scenario(building / "setup").payload)
        boot_s = float(boot_meta.get("simulated_seconds") or 0.0)
        start, progress_args = self.boots.folder(boot_key) / "ckpt", []
        earlier_cpu = earlier_host = 0.0
        every = run.spec.gem5.progress_every_s
        progress = RunProgress(self.progress_folder(folder)) if every else None
        if progress is not None:
            progress.drop_orphans()
            resumed = progress.latest()
            if resumed is not None:
                start = resumed[0]
                kept = progress.segments(resumed[1])
                earlier_cpu = sum(info.get("cpu_seconds", info["host_seconds"]) for info in kept)
                earlier_host = sum(info["host_seconds"] for info in kept)
                log(f"app checkpoint: resuming the set-up from its progress checkpoint at "
                    f"tick {resumed[1]} ({earlier_cpu:.0f} CPU s kept)")
            progress_args = ["--progress-dir", str(progress.folder),
                             "--progress-every", f"{every:g}"]
        command = self.boots.inputs(run.topology).command(
            building / "m5out", "setup",
            "--checkpoint-dir", str(start),
            "--scenario", str(building / "setup.tar"), "--save-dir", str(building / "ckpt"),
            "--max-seconds", f"{boot_s + SETUP_LIMIT_S:.6f}", *progress_args)
        limits = run.spec.limits
        done = supervise(command, log=building / "setup.log", host_time_s=limits.host_time_s,
                         memory_bytes=limits.memory_bytes)
        text = (building / "setup.log").read_text(errors="replace")
        if done.returncode != 0 or not (building / "ckpt" / "m5.cpt").is_file():
            why = why_stopped(done)
            # Killed, preempted or out of host time: the next attempt resumes; a set-up that
            # failed on its own would fail again from there.
            if progress is not None and not (done.stopped_for or (done.returncode or 0) < 0):
                progress.clear()
            failed = self.root / f"failed-{folder.name}-{int(time.time())}"
            building.rename(failed)
            said = [line for line in console_text(failed / "m5out").splitlines()
                    if "pimcloud-run" in line]
            raise RuntimeError(
                f"app checkpoint of {app_set_name(run)} failed ({why}); log: "
                f"{failed}/setup.log:\n{log_tail(failed / 'setup.log', 15)}"
                + ("\nthe guest said:\n" + "\n".join(said[-10:]) if said else ""))
        if progress is not None:
            progress.clear()
        tick = last_tick(text) or 0
        meta = {"topology": run.topology, "apps": [app.name for app in run.apps],
                "threads": [app.threads or run.scenario.threads for app in run.apps],
                "placement": run.scenario.placement, "key": folder.name.rsplit("-", 1)[-1],
                "boot_key": boot_key.key, "setup_sha256": setup_sha, "tick": tick,
                "simulated_seconds": tick / 1e12,
                "setup_simulated_seconds": tick / 1e12 - boot_s,
                # with the set-up's earlier attempts' work up to their last progress
                "host_seconds": round(done.host_seconds + earlier_host, 1),
                "cpu_seconds": round(done.cpu_seconds + earlier_cpu, 1),
                "resumed_cpu_seconds": round(earlier_cpu, 1),  # of the earlier attempts
                "peak_rss_bytes": done.peak_rss_bytes, "command": command,
                "unimplemented": unimplemented_instructions(text),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        atomic_write_text(building / "meta.json", json.dumps(meta, indent=1) + "\n")
        (building / LAST_USED).touch()
        building.rename(folder)
        record_speed("gem5", "setup", run.topology, meta["setup_simulated_seconds"],
                     meta["cpu_seconds"] or done.host_seconds)
        log(f"app checkpoint: {folder} in {done.host_seconds:.0f} s host time "
            f"({meta['setup_simulated_seconds']:.3f} s simulated set-up)")
        if meta["unimplemented"]:
            log(f"app checkpoint: warning: the guest ran {', '.join(meta['unimplemented'])}, "
                "which gem5 leaves unimplemented (no-ops): a service computing with them "
                "may misbehave (gem5-configs/README.md)")
        return AppCheckpoint(folder, meta)


def verify(folder: Path, meta: dict[str, Any], boot_key: str, setup_sha: str) -> None:
    """An app checkpoint is only restored for the boot and set-up it was made from."""
    problems = []
    if meta.get("boot_key") != boot_key:
        problems.append(f"made from boot checkpoint {meta.get('boot_key')}, not {boot_key}")
    if meta.get("setup_sha256") != setup_sha:
        problems.append("made from another set-up scenario")
    if not (folder / "ckpt" / "m5.cpt").is_file():
        problems.append("its ckpt/m5.cpt is missing")
    if problems:
        raise ValueError(f"app checkpoint {folder}: {'; '.join(problems)}; remove it "
                         "(`pimcloud checkpoints prune --stale`) and run again")
