"""Boot checkpoints, shared by every run and campaign that needs them.

The checkpoint of a topology is built once per (topology, kernel, image, boot options,
gem5) by booting on the atomic cores to the guest's ``pimcloud-ready``; app checkpoints
(runs/app_checkpoints.py) are made under it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.file_digest import input_digests
from pimcloud.gem5_session import (
    Gem5Inputs,
    boot_mode,
    console_text,
    crng_problem,
    last_tick,
    read_boot,
)
from pimcloud.guest.scenario import parse_console
from pimcloud.kernel_args import booted_kernel_args, expected_kernel_args
from pimcloud.supervise import supervise
from pimcloud.topology import load_topology

from .spec import CampaignSpec

LAST_USED = "last-used"  # touched by every run that restores a checkpoint (pruning)

def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def why_stopped(done: Any) -> str:
    """How a supervised gem5 ended, for an error: the limit it hit, its exit or signal."""
    if done.stopped_for:
        return str(done.stopped_for)
    code = done.returncode
    return f"exit {code}" if code is not None and code >= 0 else signal_name(code or 0)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass(frozen=True)
class CheckpointKey:
    topology: str
    key: str

    @property
    def folder_name(self) -> str:
        return f"{Path(self.topology).stem}-{self.key}"


class Checkpoints:
    """Boot-once checkpoints: ``root/<topology>-<key>/`` holds ckpt/, m5out/, boot.log and
    meta.json (the checkpoint's tick, host time, inputs)."""

    def __init__(self, root: Path, gem5: Path, gem5_version: str, spec: CampaignSpec,
                 kernel: Path, image: Path) -> None:
        self.root, self.gem5, self.gem5_version = root, gem5, gem5_version
        self.spec, self.kernel, self.image = spec, kernel, image

    def inputs(self, topology: str) -> Gem5Inputs:
        return Gem5Inputs(self.gem5, topology, self.kernel, self.image,
                          self.spec.gem5.mem_divisor, tuple(self.spec.gem5.extra_args),
                          self.spec.gem5.counters)

    def key(self, topology: str) -> CheckpointKey:
        parts = self._boot_inputs(topology, self._input_digests(),
                                  self.spec.gem5.mem_divisor, self.spec.gem5.boot_cpu,
                                  self._kernel_args(), self.spec.gem5.counters)
        text = json.dumps({**parts, "gem5": self.gem5_version}, sort_keys=True)
        return CheckpointKey(topology, hashlib.sha256(text.encode()).hexdigest()[:16])

    def _kernel_args(self) -> str:
        return expected_kernel_args(self.spec.gem5.extra_args)

    def _input_digests(self) -> dict[str, str]:
        self.root.mkdir(parents=True, exist_ok=True)
        return input_digests(self.kernel, self.image, self.root / ".digests.json")

    @staticmethod
    def _boot_inputs(topology: str, digests: dict[str, str], mem_divisor: int,
                     boot_cpu: str, kernel_args: str | None,
                     counters: bool = False) -> dict[str, Any]:
        """What a boot's checkpoint depends on, besides the gem5 binary."""
        # Boards with the hardware counters hold one more SimObject; without them the
        # key is what it was before the counters existed, so older checkpoints still fit.
        extra: dict[str, Any] = {"counters": True} if counters else {}
        return {**extra, "topology": load_topology(topology).key_text(),
                "kernel": digests["kernel"], "image": digests["image"],
                "mem_divisor": mem_divisor, "boot_cpu": boot_cpu,
                "kernel_args": kernel_args}

    def folder(self, key: CheckpointKey) -> Path:
        return self.root / key.folder_name

    def meta(self, key: CheckpointKey) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads((self.folder(key) / "meta.json").read_text())
            return data
        except (OSError, ValueError):
            return None

    def adopt(self, topology: str, booted: Path, log: Any = print) -> CheckpointKey:
        """Take a checkpoint made by ``pimcloud gem5 boot`` into the store, so the runs
        restore it instead of booting again; only if it was made from the same inputs.

        The files are hard-linked where the file system allows (copied otherwise), so the
        booted folder stays as it was.
        """
        key = self.key(topology)
        if self.meta(key) is not None:
            log(f"checkpoint: the store already holds {self.folder(key)}")
            return key
        record = read_boot(booted)
        if not isinstance(record.get("input_sha256"), dict):
            # Its kernel and image files may have been rebuilt in place since.
            raise ValueError(
                f"{booted}/boot.json does not record the digests of the kernel and image it "
                "booted (a boot made before they were recorded); boot again with "
                "`pimcloud gem5 boot`, or leave out the checkpoint so the campaign boots its own")
        wanted = self._boot_inputs(topology, self._input_digests(),
                                   self.spec.gem5.mem_divisor, self.spec.gem5.boot_cpu,
                                   self._kernel_args(), self.spec.gem5.counters)
        found = self._boot_inputs(record["topology"], record["input_sha256"],
                                  record["mem_divisor"],
                                  record.get("boot_cpu", "atomic"),
                                  booted_kernel_args(booted / "m5out"),
                                  record.get("counters", False))
        differ = [name for name in {**wanted, **found}
                  if wanted.get(name, False) != found.get(name, False)]
        if differ:
            # The others are model text and digests.
            shown = {"mem_divisor", "boot_cpu", "kernel_args", "counters"}
            detail = "; ".join(f"{name}: {found.get(name, False)} there, "
                               f"{wanted.get(name, False)} here"
                               if name in shown else f"{name} differs" for name in differ)
            raise ValueError(
                f"{booted} was booted from other inputs than this campaign's ({detail}); "
                "boot with the campaign's inputs or leave out the checkpoint so the "
                "campaign boots its own")
        building = Path(tempfile.mkdtemp(dir=self.root, prefix=f".adopting-{key.key}-"))
        shutil.copytree(booted / "ckpt", building / "ckpt", copy_function=_link_or_copy)
        shutil.copy2(booted / "boot.log", building / "boot.log")
        meta = {"topology": topology, "key": key.key, "tick": record["tick"],
                "simulated_seconds": record["simulated_seconds"],
                "host_seconds": record["host_seconds"], "gem5": record["gem5"],
                "gem5_version": self.gem5_version, "kernel": str(self.kernel),
                "image": str(self.image), "command": record["command"],
                "adopted_from": str(booted.resolve()), "created": record["created"]}
        atomic_write_text(building / "meta.json", json.dumps(meta, indent=1) + "\n")
        building.rename(self.folder(key))
        log(f"checkpoint: adopted {booted} as {self.folder(key)}")
        return key

    def ensure(self, topology: str, log: Any = print) -> tuple[CheckpointKey, dict[str, Any]]:
        """The checkpoint of ``topology``: found, or booted now (one process at a time)."""
        key = self.key(topology)
        meta = self.meta(key)
        if meta is not None:
            (self.folder(key) / LAST_USED).touch()
            return key, meta
        with (self.root / f".{key.folder_name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            meta = self.meta(key)  # another process may have built it meanwhile
            if meta is not None:
                return key, meta
            log(f"checkpoint: booting {Path(topology).stem} in gem5 to make "
                f"{self.folder(key)} (once for every run of this topology)")
            building = Path(tempfile.mkdtemp(dir=self.root, prefix=f".building-{key.key}-"))
            command = self.inputs(topology).command(
                building / "m5out", *boot_mode(building / "ckpt", self.spec.gem5.boot_cpu))
            limits = self.spec.limits
            done = supervise(command, log=building / "boot.log",
                             host_time_s=limits.host_time_s, memory_bytes=limits.memory_bytes)
            text = (building / "boot.log").read_text(errors="replace")
            crng_ready = parse_console(console_text(building / "m5out")).crng_ready
            if done.returncode != 0 or not (building / "ckpt").is_dir() or not crng_ready:
                failed = self.root / f"failed-{key.folder_name}-{int(time.time())}"
                building.rename(failed)
                crng = crng_problem(crng_ready, failed / "m5out") if done.returncode == 0 else None
                why = crng or why_stopped(done)
                raise RuntimeError(
                    f"checkpoint boot of {topology} failed ({why}); log: {failed}/boot.log:\n"
                    + "\n".join(text.splitlines()[-15:]))
            tick = last_tick(text)
            meta = {"topology": topology, "key": key.key, "tick": tick,
                    "simulated_seconds": (tick or 0) / 1e12,
                    "host_seconds": round(done.host_seconds, 1),
                    "cpu_seconds": round(done.cpu_seconds, 1), "gem5": str(self.gem5),
                    "gem5_version": self.gem5_version, "kernel": str(self.kernel),
                    "image": str(self.image), "command": command,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            atomic_write_text(building / "meta.json", json.dumps(meta, indent=1) + "\n")
            building.rename(self.folder(key))
            from .speeds import record_speed

            record_speed("gem5", "boot", topology, meta["simulated_seconds"],
                         done.cpu_seconds or done.host_seconds)
            log(f"checkpoint: {self.folder(key)} in {done.host_seconds:.0f} s host time")
            return key, meta


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


