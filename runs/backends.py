"""The two ways a run is made: gem5 (restoring a shared checkpoint) and QEMU (functional).

Each backend makes one attempt of one run inside a staging folder and says how it ended
(``Outcome``); the worker decides what to keep.  gem5 is found through $GEM5
(pimcloud.gem5_runner); the checkpoint is built once per (topology, kernel, image, boot
options) and shared by every run and campaign that needs it (``Checkpoints``).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.file_digest import input_digests
from pimcloud.gem5_runner import gem5_binary
from pimcloud.gem5_session import (
    CONSOLE_FILES,
    Gem5Inputs,
    boot_mode,
    last_tick,
    read_boot,
    restore_mode,
)
from pimcloud.kernel_args import booted_kernel_args, expected_kernel_args
from pimcloud.supervise import supervise
from pimcloud.topology import load_topology

from .guest_scenario import (
    HANG_EXIT,
    HANG_MARK,
    HANG_NOTICE,
    STARTUP_ALLOWANCE_S,
    write_scenario,
)
from .spec import CampaignSpec, Run

FUNCTIONAL_NOTE = ("QEMU functional mode: no timing model, latencies and loads are not "
                   "architectural")


def hang_detail(console_text: str) -> str:
    """The watchdog's report of hung services: its lines from the guest console."""
    lines = []
    for line in console_text.splitlines():
        for mark in (f"pimcloud-run {HANG_NOTICE}", f"{HANG_MARK} "):
            if mark in line:
                lines.append(line[line.find(mark):])
    return ("the services did not finish; each thread's state, CPU, kernel wait channel "
            "and system call (nr, args):\n" + "\n".join(lines))


@dataclass
class Outcome:
    ok: bool
    cause: str  # "m5-exit", "host-time-limit", "memory-limit", "crash: SIGSEGV", ...
    detail: str
    host_seconds: float
    simulated_seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# ----------------------------------------------------------------------------- checkpoints


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
                          self.spec.gem5.mem_divisor, tuple(self.spec.gem5.extra_args))

    def key(self, topology: str) -> CheckpointKey:
        parts = self._boot_inputs(topology, self._input_digests(),
                                  self.spec.gem5.mem_divisor, self.spec.gem5.boot_cpu,
                                  self._kernel_args())
        text = json.dumps({**parts, "gem5": self.gem5_version}, sort_keys=True)
        return CheckpointKey(topology, hashlib.sha256(text.encode()).hexdigest()[:16])

    def _kernel_args(self) -> str:
        return expected_kernel_args(self.spec.gem5.extra_args)

    def _input_digests(self) -> dict[str, str]:
        self.root.mkdir(parents=True, exist_ok=True)
        return input_digests(self.kernel, self.image, self.root / ".digests.json")

    @staticmethod
    def _boot_inputs(topology: str, digests: dict[str, str], mem_divisor: int,
                     boot_cpu: str, kernel_args: str | None) -> dict[str, Any]:
        """What a boot's checkpoint depends on, besides the gem5 binary."""
        return {"topology": repr(load_topology(topology)),
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
                                   self._kernel_args())
        found = self._boot_inputs(record["topology"], record["input_sha256"],
                                  record["mem_divisor"],
                                  record.get("boot_cpu", "atomic"),
                                  booted_kernel_args(booted / "m5out"))
        differ = [name for name in wanted if wanted[name] != found[name]]
        if differ:
            # The others are model text and digests.
            shown = {"mem_divisor", "boot_cpu", "kernel_args"}
            detail = "; ".join(f"{name}: {found[name]} there, {wanted[name]} here"
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
            if done.returncode != 0 or not (building / "ckpt").is_dir():
                why = done.stopped_for or (f"exit {done.returncode}" if done.returncode is not
                                           None and done.returncode >= 0 else
                                           signal_name(done.returncode or 0))
                failed = self.root / f"failed-{key.folder_name}-{int(time.time())}"
                building.rename(failed)
                raise RuntimeError(
                    f"checkpoint boot of {topology} failed ({why}); log: {failed}/boot.log:\n"
                    + "\n".join(text.splitlines()[-15:]))
            tick = last_tick(text)
            meta = {"topology": topology, "key": key.key, "tick": tick,
                    "simulated_seconds": (tick or 0) / 1e12,
                    "host_seconds": round(done.host_seconds, 1), "gem5": str(self.gem5),
                    "gem5_version": self.gem5_version, "kernel": str(self.kernel),
                    "image": str(self.image), "command": command,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            atomic_write_text(building / "meta.json", json.dumps(meta, indent=1) + "\n")
            building.rename(self.folder(key))
            from .speeds import record_speed

            record_speed("gem5", "boot", topology, meta["simulated_seconds"],
                         done.host_seconds)
            log(f"checkpoint: {self.folder(key)} in {done.host_seconds:.0f} s host time")
            return key, meta


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


# ----------------------------------------------------------------------------- gem5

class Gem5Backend:
    name = "gem5"
    timing = "gem5 detailed CPUs restored from an atomic-CPU checkpoint"

    def __init__(self, checkpoints: Checkpoints) -> None:
        self.checkpoints = checkpoints

    def attempt(self, run: Run, staging: Path) -> Outcome:
        from pimcloud.guest.scenario import load_scenario, parse_console, unpack_results

        spec = run.spec
        key, meta = self.checkpoints.ensure(run.topology)
        write_scenario(run, staging / "scenario", "gem5")
        (staging / "scenario.tar").write_bytes(load_scenario(staging / "scenario").payload)
        start_s = meta.get("simulated_seconds") or 0.0
        budget = (STARTUP_ALLOWANCE_S + spec.length.warmup_s + spec.length.measured_s) * (
            1 + spec.gem5.limit_margin)
        command = self.checkpoints.inputs(run.topology).command(
            staging / "m5out", *restore_mode(
                self.checkpoints.folder(key) / "ckpt", staging / "scenario.tar",
                max_seconds=start_s + budget, stats_period=spec.gem5.stats_period or None,
                fast_forward=spec.gem5.fast_forward))
        log = staging / "gem5.log"
        done = supervise(command, log=log, host_time_s=spec.limits.host_time_s,
                         memory_bytes=spec.limits.memory_bytes)
        text = log.read_text(errors="replace")
        tick = last_tick(text)
        simulated = (tick / 1e12 - start_s) if tick is not None else None
        extra: dict[str, Any] = {"checkpoint": key.folder_name, "command": command,
                                 "peak_rss_bytes": done.peak_rss_bytes,
                                 "returncode": done.returncode}
        m5out = staging / "m5out"
        console_text = next((p.read_text(errors="replace") for p in
                             (m5out / n for n in CONSOLE_FILES) if p.is_file()), "")
        report = parse_console(console_text)
        extra["scenario_exit"] = report.scenario_exit
        results = m5out / "results.tar"
        if results.is_file():
            extra["results"] = unpack_results(results.read_bytes(), staging / "results")

        def outcome(ok: bool, cause: str, detail: str = "") -> Outcome:
            return Outcome(ok, cause, detail or log_tail(log), done.host_seconds, simulated,
                           extra)

        if done.stopped_for:
            return outcome(False, done.stopped_for)
        code = done.returncode
        assert code is not None
        if code < 0:
            return outcome(False, f"crash: {signal_name(code)}")
        if code == 3:
            return outcome(False, "simulated-time-limit",
                           f"the guest did not exit within {budget:g} simulated seconds")
        if code != 0:
            return outcome(False, f"gem5 exit {code}")
        if not results.is_file():
            return outcome(False, "no-results", "gem5 ended but the guest sent no results.tar")
        if report.scenario_exit == HANG_EXIT:
            return outcome(False, "guest-hang", hang_detail(console_text))
        if report.scenario_exit not in (None, 0):
            return outcome(False, f"scenario-exit {report.scenario_exit}")
        return outcome(True, "m5-exit")


# ----------------------------------------------------------------------------- QEMU

class QemuBackend:
    name = "qemu"
    timing = FUNCTIONAL_NOTE

    def __init__(self, kernel: Path | None, image: Path | None) -> None:
        self.kernel, self.image = kernel, image

    def attempt(self, run: Run, staging: Path) -> Outcome:
        from pimcloud.guest.qemu import run_scenario

        spec = run.spec
        write_scenario(run, staging / "scenario", "qemu")
        guest = staging / "guest"
        log_path = staging / "qemu.log"
        with log_path.open("a") as log_stream:
            def log(line: str) -> None:
                log_stream.write(line + "\n")
                log_stream.flush()

            started = time.monotonic()
            try:
                result = run_scenario(run.topology, staging / "scenario", kernel=self.kernel,
                                      image=self.image, out=guest,
                                      timeout=spec.limits.host_time_s,
                                      memory_divisor=spec.qemu.mem_divisor,
                                      append=spec.qemu.append, log=log)
            except (RuntimeError, ValueError, OSError) as error:
                log(f"error: {error}")
                return Outcome(False, "could-not-start", str(error),
                               time.monotonic() - started)
        host = time.monotonic() - started
        # QEMU's own record would look like a run to analysis: keep it under another name.
        if (guest / "run.json").is_file():
            (guest / "run.json").rename(guest / "qemu.json")
        if (guest / "results").is_dir():
            shutil.move(str(guest / "results"), staging / "results")
        scenario_s = result.times.get("scenario_s")
        extra = {"qemu_cause": result.cause, "scenario_exit": result.scenario_exit,
                 "problems": result.problems, "times": result.times,
                 "clocksource": result.clocksource, "results": result.results,
                 "memory_divisor": result.memory_divisor}
        detail = "\n".join(result.problems) or result.console_tail[-2000:]
        if result.cause == "timeout":
            return Outcome(False, "host-time-limit", detail, host, scenario_s, extra)
        if result.cause != "exit":
            return Outcome(False, f"crash: {result.cause}", detail, host, scenario_s, extra)
        if result.scenario_exit != 0:
            return Outcome(False, f"scenario-exit {result.scenario_exit}", detail, host,
                           scenario_s, extra)
        if not result.ok:
            return Outcome(False, "guest-problem", detail, host, scenario_s, extra)
        return Outcome(True, "exit", "", host, scenario_s, extra)


def gem5_path() -> Path:
    return gem5_binary()
