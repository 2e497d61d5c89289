"""The two ways a run is made: gem5 (restoring a shared checkpoint) and QEMU (functional).

Each backend makes one attempt of one run inside a staging folder and says how it ended
(``Outcome``); the worker decides what to keep.  gem5 is found through $GEM5
(pimcloud.gem5_runner); the checkpoint is built once per (topology, kernel, image, boot
options) and shared by every run and campaign that needs it (``Checkpoints``).
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pimcloud.gem5_session import (
    console_text,
    last_tick,
    restore_mode,
    unimplemented_instructions,
)
from pimcloud.supervise import Supervised, supervise

from .app_checkpoints import AppCheckpoints
from .checkpoints import Checkpoints, log_tail, signal_name
from .guest_scenario import (
    HANG_EXIT,
    HANG_MARK,
    HANG_NOTICE,
    STARTUP_ALLOWANCE_S,
    app_checkpointed,
    part_switches_at_start,
    wrapup_allowance_s,
    write_scenario,
)
from .progress import STITCHED, RunProgress, last_sim_ops, ops_of_processes
from .spec import Run

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
    # gem5: the simulator's CPU time (its segments' too), the host time it would have
    # taken on a machine of its own; what the plan's speeds are fitted on. None: not known.
    cpu_seconds: float | None = None


# ----------------------------------------------------------------------------- gem5

RESTART_WHY = ("its resident memory passed the limit, and gem5 v24.0.0.1's O3 CPU keeps "
               "memory it no longer uses (gem5 issues 2213, 2219): a new process starts "
               "without it")


def memory_restart(progress: RunProgress | None, resumed: tuple[Path, int] | None,
                   done: Supervised) -> dict[str, Any] | None:
    """What to record of a gem5 process stopped at the memory limit after it saved a
    progress checkpoint (the run then goes on from there in a new process, within the same
    attempt), or None: it ended otherwise, or saved nothing, and a restart would do the
    same work again."""
    if done.stopped_for != "memory-limit" or progress is None:
        return None
    latest = progress.latest()
    since = resumed[1] if resumed is not None else -1
    if latest is None or latest[1] <= since:
        return None
    # Its segments hold the time up to its last checkpoint; the rest was spent in vain.
    saved = [info for info in progress.segments(latest[1]) if info["to_tick"] > since]
    saved_host = sum(info["host_seconds"] for info in saved)
    saved_cpu = sum(info.get("cpu_seconds", info["host_seconds"]) for info in saved)
    return {"from_tick": since if since >= 0 else None, "stopped_at_checkpoint": latest[1],
            "peak_rss_bytes": done.peak_rss_bytes, "host_seconds": done.host_seconds,
            "host_seconds_lost": round(max(0.0, done.host_seconds - saved_host), 1),
            "cpu_seconds_lost": round(max(0.0, done.cpu_seconds - saved_cpu), 1)}


class Gem5Backend:
    name = "gem5"
    timing = "gem5 detailed CPUs restored from an atomic-CPU checkpoint"

    def __init__(self, checkpoints: Checkpoints, progress_root: Path | None = None) -> None:
        self.checkpoints = checkpoints
        self.app_checkpoints = AppCheckpoints(checkpoints)
        self.progress_root = progress_root

    def attempt(self, run: Run, staging: Path) -> Outcome:
        from pimcloud.guest.scenario import load_scenario, parse_console, unpack_results

        spec = run.spec
        if app_checkpointed(run, self.name):
            app = self.app_checkpoints.ensure(run)
            restored, start_s = app.ckpt, app.simulated_seconds
            # The run's own part on the atomic cores, then the switch (run_part_script).
            fast_forward = part_switches_at_start(run, self.name)
            used = {"checkpoint": app.meta["boot_key"], "app_checkpoint": app.folder.name}
        else:
            key, meta = self.checkpoints.ensure(run.topology)
            restored = self.checkpoints.folder(key) / "ckpt"
            start_s = meta.get("simulated_seconds") or 0.0
            fast_forward = spec.gem5.fast_forward
            used = {"checkpoint": key.folder_name}
        # A run part is read (m5 readfile) and unpacked on the detailed cores: it ships no
        # programs (the agent alone is 20 MB), the image's /opt/pimcloud/bin has them.
        write_scenario(run, staging / "scenario", "gem5",
                       ship_programs=not app_checkpointed(run, self.name))
        (staging / "scenario.tar").write_bytes(load_scenario(staging / "scenario").payload)
        # The wrap-up's allowance too, so that the watchdog, not the limit, ends a hang there.
        budget = (STARTUP_ALLOWANCE_S + spec.length.warmup_s + spec.length.measured_s) * (
            1 + spec.gem5.limit_margin) + wrapup_allowance_s(run, self.name)
        progress = resumed = None
        if spec.gem5.progress_every_s and self.progress_root is not None:
            progress = RunProgress(self.progress_root / run.run_id)
            progress.drop_orphans()
            resumed = progress.latest()
            if resumed is not None:
                restored = resumed[0]
                used["resumed_from_tick"] = resumed[1]
        log = staging / "gem5.log"
        m5out = staging / "m5out"
        restarts: list[dict[str, Any]] = []
        while True:
            command = self.checkpoints.inputs(run.topology).command(
                m5out, *restore_mode(
                    restored, staging / "scenario.tar",
                    max_seconds=start_s + budget, stats_period=spec.gem5.stats_period or None,
                    fast_forward=fast_forward, resume=resumed is not None,
                    progress_dir=progress.folder if progress else None,
                    progress_every_s=spec.gem5.progress_every_s,
                    counting=run.scenario.counting))
            spent = sum(r["host_seconds"] for r in restarts)
            done = supervise(command, log=log, host_time_s=spec.limits.host_time_s - spent,
                             memory_bytes=spec.limits.memory_bytes)
            restart = memory_restart(progress, resumed, done)
            if restart is None:
                break
            left_s = spec.limits.host_time_s - spent - done.host_seconds
            if left_s < (spec.gem5.progress_every_s or 0.0):
                # Too little host time left to save anything more: the limit ends it.
                done = dataclasses.replace(done, stopped_for="host-time-limit")
                break
            restarts.append(restart)
            assert progress is not None
            progress.drop_orphans()  # a segment or checkpoint it was writing when stopped
            resumed = progress.latest()
            assert resumed is not None
            restored = resumed[0]
            used["resumed_from_tick"] = resumed[1]
            with log.open("a") as output:
                output.write(f"pimcloud-runs: a new gem5 goes on from the progress checkpoint "
                             f"at tick {resumed[1]} (restart {len(restarts)}: {RESTART_WHY})\n")
            for name in STITCHED:  # the segments hold them up to that tick
                (m5out / name).unlink(missing_ok=True)
        text = log.read_text(errors="replace")
        tick = last_tick(text)
        if resumed is not None:  # the log is every process's; the last may have said none
            tick = max(tick or 0, resumed[1])
        simulated = (tick / 1e12 - start_s) if tick is not None else None
        extra: dict[str, Any] = {**used, "command": command,
                                 "peak_rss_bytes": max([done.peak_rss_bytes] + [
                                     r["peak_rss_bytes"] for r in restarts]),
                                 "returncode": done.returncode,
                                 # gem5 ran these as no-ops: the run's numbers may be wrong
                                 "unimplemented": unimplemented_instructions(text)}
        if restarts:
            extra["memory_restarts"] = restarts
        # A restarted process's time past its last checkpoint was spent, and is counted.
        host_seconds = done.host_seconds + sum(r["host_seconds_lost"] for r in restarts)
        cpu_seconds = done.cpu_seconds + sum(r["cpu_seconds_lost"] for r in restarts)
        # The micro-ops the guest's cores ran (runs/speeds.py prices runs by them): the
        # last gem5 process's, and a resumed run's earlier processes' from its segments.
        ops = last_sim_ops(m5out / "stats.txt")
        processes = 1
        if progress is not None and resumed is not None:
            # The run's files and host time are its segments' and this attempt's.
            extra["segments"] = progress.stitch(m5out, resumed[1])
            ops = ops_of_processes(extra["segments"], ops)
            processes += len({info["process"] for info in extra["segments"]
                              if info.get("process")})
            # (the last gem5 process's, after a memory restart)
            extra["host_seconds_last_attempt"] = round(done.host_seconds, 1)
            host_seconds += sum(info["host_seconds"] for info in extra["segments"])
            # Segments written before CPU time was kept count their host time.
            cpu_seconds += sum(info.get("cpu_seconds", info["host_seconds"])
                               for info in extra["segments"])
        if ops is not None:
            extra["guest_ops"] = ops
            extra["gem5_processes"] = processes  # each paid gem5's start and restore
        console = console_text(m5out)
        report = parse_console(console)
        extra["scenario_exit"] = report.scenario_exit
        results = m5out / "results.tar"
        if results.is_file():
            extra["results"] = unpack_results(results.read_bytes(), staging / "results")

        def outcome(ok: bool, cause: str, detail: str = "") -> Outcome:
            return Outcome(ok, cause, detail or log_tail(log), host_seconds, simulated, extra,
                           cpu_seconds or None)

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
            return outcome(False, "guest-hang", hang_detail(console))
        if report.scenario_exit not in (None, 0):
            return outcome(False, f"scenario-exit {report.scenario_exit}")
        if progress is not None:
            progress.clear()  # the run is whole: its progress checkpoints are spent
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
