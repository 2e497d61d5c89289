"""Boot a topology in gem5 to its checkpoint, and restore it for one scenario.

The command lines of ``pim_fs.py`` are built here once, for ``pimcloud gem5 boot|probe``
and for the campaign runner (runs/backends.py). A boot also checks what the guest saw:
the ``pimcloud-node`` lines its init prints must match the topology model.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.file_digest import input_digests
from pimcloud.gem5_runner import GEM5_CONFIGS

RUN_SCRIPT = GEM5_CONFIGS / "pim_fs.py"
CONSOLE_FILES = ("board.pc.com_1.device", "system.pc.com_1.device")
EXIT_TICK = re.compile(r"pimcloud: exit at tick (\d+)")
TICKS_PER_SECOND = 10**12


@dataclass(frozen=True)
class Gem5Inputs:
    """What every pim_fs.py run of one checkpoint shares."""

    gem5: Path
    topology: str
    kernel: Path
    image: Path
    mem_divisor: int = 1
    extra_args: tuple[str, ...] = ()
    counters: bool = False  # the board's hardware counters (scons-extra PimCounters)

    def command(self, outdir: Path, *mode: str) -> list[str]:
        board = ["--counters"] if self.counters else []
        return [str(self.gem5), *self.extra_args, "-d", str(outdir), str(RUN_SCRIPT),
                "--topology", self.topology, "--kernel", str(self.kernel),
                "--disk", str(self.image), "--mem-divisor", str(self.mem_divisor), *board,
                *mode]


def boot_mode(checkpoint_dir: Path, boot_cpu: str = "atomic") -> list[str]:
    return ["boot", "--checkpoint-dir", str(checkpoint_dir), "--boot-cpu", boot_cpu]


def restore_mode(checkpoint_dir: Path, scenario: Path, *, max_seconds: float | None = None,
                 stats_period: str | None = None, fast_forward: bool = False,
                 resume: bool = False, progress_dir: Path | None = None,
                 progress_every_s: float | None = None, counting: bool = True) -> list[str]:
    """pim_fs.py ``restore``; ``resume``: the checkpoint is a progress checkpoint (taken on
    the detailed cores); ``progress_dir``: save one there every ``progress_every_s``;
    ``counting`` False: a board with counters keeps the device but feeds it nothing."""
    mode = ["restore", "--checkpoint-dir", str(checkpoint_dir), "--scenario", str(scenario)]
    if max_seconds is not None:
        mode += ["--max-seconds", f"{max_seconds:.6f}"]
    if stats_period:
        mode += ["--stats-period", stats_period]
    if fast_forward and not resume:
        mode.append("--fast-forward")
    if resume:
        mode.append("--resume")
    if not counting:
        mode.append("--counters-detached")
    if progress_dir is not None:
        mode += ["--progress-dir", str(progress_dir)]
        if progress_every_s is not None:
            mode += ["--progress-every", f"{progress_every_s:g}"]
    return mode


def last_tick(log_text: str) -> int | None:
    """The last tick pim_fs.py reported an exit at."""
    ticks = EXIT_TICK.findall(log_text)
    return int(ticks[-1]) if ticks else None


UNIMPLEMENTED = re.compile(r"warn: instruction '(\w+)' unimplemented")
# gem5 runs an instruction it leaves unimplemented as a no-op and warns once. The kernel's
# fwait is harmless (it waits for pending x87 exceptions, and there are none); x87
# arithmetic is not (gem5-configs/README.md: dd's fdivrp, SQLite's long double).
HARMLESS_UNIMPLEMENTED = frozenset({"fwait"})


def unimplemented_instructions(log_text: str) -> list[str]:
    """The instructions gem5 warned it ran as no-ops, harmless ones left out."""
    found = dict.fromkeys(UNIMPLEMENTED.findall(log_text))
    return [name for name in found if name not in HARMLESS_UNIMPLEMENTED]


def crng_problem(crng_ready: bool | None, m5out: Path) -> str | None:
    """Why a boot's checkpoint must not be used, if the guest kernel's CRNG was not ready
    at it: every run restored from it would spin for a simulated second in the kernel's
    jitter-entropy loop at its first read of /dev/urandom (guest/init/README.md)."""
    if crng_ready:
        return None
    said = ("said crng=not-ready" if crng_ready is False else
            "printed no pimcloud-rng line (an image made before pimcloud-rng-seed?)")
    return (f"the guest kernel's CRNG is not ready at the checkpoint: its init {said}; "
            "rebuild the image (`pimcloud image build`) and boot again; the console: "
            f"{m5out}")


def console_text(m5out: Path) -> str:
    """The guest's serial console as gem5 recorded it ('' when there is none)."""
    for name in CONSOLE_FILES:
        path = m5out / name
        if path.is_file():
            return path.read_text(errors="replace")
    return ""


@dataclass
class BootReport:
    """A finished boot: where the checkpoint is and what the guest said about itself."""

    folder: Path
    ok: bool
    host_seconds: float
    tick: int | None
    peak_rss_bytes: int
    clocksource: str | None
    problems: list[str] = field(default_factory=list)
    uptime_at_ready_s: float | None = None
    cpu_seconds: float = 0.0  # gem5's own CPU time: host seconds beside other processes

    @property
    def simulated_seconds(self) -> float | None:
        return None if self.tick is None else self.tick / TICKS_PER_SECOND


def boot(inputs: Gem5Inputs, folder: Path, *, boot_cpu: str = "atomic",
         host_time_s: float | None = None) -> BootReport:
    """Boot to the guest's checkpoint request into ``folder`` (ckpt/, m5out/, boot.log,
    boot.json) and compare the NUMA layout the guest printed with the model."""
    from pimcloud.guest.scenario import GuestNode, node_mismatches, parse_console
    from pimcloud.supervise import supervise
    from pimcloud.topology import load_topology

    folder.mkdir(parents=True, exist_ok=True)
    # Taken before the boot: the checkpoint holds the guest's page cache of this very
    # image, so a restore with a rebuilt image (even at the same path) reads garbage.
    digests = input_digests(inputs.kernel, inputs.image)
    command = inputs.command(folder / "m5out", *boot_mode(folder / "ckpt", boot_cpu))
    done = supervise(command, log=folder / "boot.log", host_time_s=host_time_s)
    log_text = (folder / "boot.log").read_text(errors="replace")
    report = parse_console(console_text(folder / "m5out"))
    problems = [f"guest init: {error}" for error in report.init_errors]
    if report.panic:
        problems.append(f"kernel panic: {report.panic}")
    if done.returncode != 0 or not (folder / "ckpt").is_dir():
        why = done.stopped_for or f"exit {done.returncode}"
        problems.append(f"gem5 did not save a checkpoint ({why}); see {folder}/boot.log:\n"
                        + "\n".join(log_text.splitlines()[-15:]))
    topology = load_topology(inputs.topology).with_memory_divided(inputs.mem_divisor)
    nodes: list[GuestNode] = list(report.nodes)
    if (problem := crng_problem(report.crng_ready, folder / "m5out")) is not None:
        problems.append(problem)
    if not nodes:
        problems.append("the guest printed no pimcloud-node lines before its checkpoint")
    else:
        problems += node_mismatches(topology, nodes)
    result = BootReport(folder, not problems, round(done.host_seconds, 1),
                        last_tick(log_text), done.peak_rss_bytes, report.clocksource, problems,
                        report.uptime_at_ready_s, round(done.cpu_seconds, 1))
    record: dict[str, Any] = {
        "topology": inputs.topology, "mem_divisor": inputs.mem_divisor, "boot_cpu": boot_cpu,
        "counters": inputs.counters, "ok": result.ok,
        "tick": result.tick, "simulated_seconds": result.simulated_seconds,
        "host_seconds": result.host_seconds, "cpu_seconds": result.cpu_seconds,
        "peak_rss_bytes": result.peak_rss_bytes,
        "clocksource": result.clocksource, "guest_uptime_at_ready_s": report.uptime_at_ready_s,
        "crng_ready": report.crng_ready,
        "nodes": [asdict(node) for node in nodes], "problems": problems, "command": command,
        "gem5": str(inputs.gem5), "kernel": str(inputs.kernel), "image": str(inputs.image),
        "input_sha256": digests,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    atomic_write_text(folder / "boot.json", json.dumps(record, indent=1) + "\n")
    return result


def read_boot(folder: Path) -> dict[str, Any]:
    """boot.json of a checkpoint folder (or what a campaign's checkpoint store keeps of
    its boot, meta.json), or a ValueError saying what to run."""
    try:
        record: dict[str, Any] = json.loads((folder / "boot.json").read_text())
    except (OSError, ValueError):
        stored = _stored_boot(folder)
        if stored is None:
            raise ValueError(f"{folder} holds no finished boot (boot.json): run "
                             "`pimcloud gem5 boot TOPOLOGY --out FOLDER` first, or name a "
                             "campaign's checkpoint (runs/out/checkpoints/<topology>-<key>)"
                             ) from None
        record = stored
    if not record.get("ok") or not (folder / "ckpt").is_dir():
        raise ValueError(f"{folder}: its boot failed ({'; '.join(record.get('problems', []))})")
    return record


def _stored_boot(folder: Path) -> dict[str, Any] | None:
    """A boot record from a campaign's checkpoint store (runs/checkpoint_store.py), which
    publishes a folder only once its boot succeeded: its meta.json names the topology,
    the inputs and the pim_fs.py command, whose options give the rest."""
    try:
        meta: dict[str, Any] = json.loads((folder / "meta.json").read_text())
        command = [str(word) for word in meta["command"]]
        divisor = int(command[command.index("--mem-divisor") + 1])
        record = {"topology": str(meta["topology"]), "mem_divisor": divisor,
                  "counters": "--counters" in command, "ok": (folder / "ckpt").is_dir(),
                  "tick": meta.get("tick"), "simulated_seconds": meta.get("simulated_seconds"),
                  "gem5": meta.get("gem5"), "kernel": str(meta["kernel"]),
                  "image": str(meta["image"]), "command": command, "problems": []}
        made = (folder / "meta.json").stat().st_mtime
        # The store keeps no digests: a kernel or image newer than the boot was rebuilt
        # after it (in place), and its page cache no longer matches the disk.
        rebuilt = [name for name in ("kernel", "image")
                   if not Path(record[name]).is_file() or Path(record[name]).stat().st_mtime > made]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    if not record["ok"]:
        record["problems"] = ["its ckpt folder is missing"]
    elif rebuilt:
        record["ok"] = False
        record["problems"] = [f"its {' and '.join(rebuilt)} changed since the boot (rebuilt in "
                              "place?); boot again, or let a campaign make a new one"]
    return record


@dataclass
class RestoreReport:
    """A finished restore: how it ended, how long it took, what the guest sent back."""

    folder: Path
    returncode: int | None
    stopped_for: str | None
    host_seconds: float
    simulated_seconds: float | None
    scenario_exit: int | None
    results: list[str]
    problems: list[str] = field(default_factory=list)
    cpu_seconds: float = 0.0
    unimplemented: list[str] = field(default_factory=list)  # run as no-ops (harmful ones)

    @property
    def ok(self) -> bool:
        return not self.problems


def restore(inputs: Gem5Inputs, checkpoint: Path, scenario_folder: Path, folder: Path, *,
            fast_forward: bool = False, max_seconds: float | None = None,
            stats_period: str | None = None, host_time_s: float | None = None,
            expects_results: bool = True) -> RestoreReport:
    """Restore ``checkpoint`` (a boot folder) with the detailed cores, run the scenario in
    ``scenario_folder``, and unpack what the guest returned into ``folder``/results.

    ``expects_results=False``: the scenario ends the run itself (m5 exit) before the guest
    would send results, so a missing results.tar is not a problem."""
    from pimcloud.guest.scenario import load_scenario, parse_console, unpack_results
    from pimcloud.supervise import supervise

    boot_record = read_boot(checkpoint)
    booted = boot_record.get("input_sha256")
    if isinstance(booted, dict):
        # The checkpoint holds the guest's page cache of the image it booted: a kernel or
        # image rebuilt since (even at the same path) would be read as garbage.
        now = input_digests(inputs.kernel, inputs.image)
        changed = [name for name in ("kernel", "image") if booted.get(name) != now[name]]
        if changed:
            raise ValueError(f"{checkpoint}: the {' and '.join(changed)} changed since this "
                             "boot (rebuilt in place?); boot again with `pimcloud gem5 boot`")
    folder.mkdir(parents=True, exist_ok=True)
    scenario = folder / "scenario.tar"
    scenario.write_bytes(load_scenario(scenario_folder).payload)
    start_s = boot_record.get("simulated_seconds") or 0.0
    limit = None if max_seconds is None else start_s + max_seconds
    command = inputs.command(folder / "m5out", *restore_mode(
        checkpoint / "ckpt", scenario, max_seconds=limit, stats_period=stats_period,
        fast_forward=fast_forward))
    done = supervise(command, log=folder / "gem5.log", host_time_s=host_time_s)
    log_text = (folder / "gem5.log").read_text(errors="replace")
    tick = last_tick(log_text)
    report = parse_console(console_text(folder / "m5out"))
    results: list[str] = []
    archive = folder / "m5out" / "results.tar"
    if archive.is_file():
        results = unpack_results(archive.read_bytes(), folder / "results")
    problems = []
    if done.stopped_for or done.returncode != 0:
        why = done.stopped_for or f"exit {done.returncode}"
        problems.append(f"gem5 stopped ({why}); see {folder}/gem5.log:\n"
                        + "\n".join(log_text.splitlines()[-15:]))
    if report.scenario_exit not in (None, 0):
        problems.append(f"the scenario exited with {report.scenario_exit}")
    if expects_results and not archive.is_file():
        problems.append("the guest sent no results.tar")
    return RestoreReport(folder, done.returncode, done.stopped_for, round(done.host_seconds, 1),
                         None if tick is None else tick / TICKS_PER_SECOND - start_s,
                         report.scenario_exit, results, problems, round(done.cpu_seconds, 1),
                         unimplemented_instructions(log_text))
