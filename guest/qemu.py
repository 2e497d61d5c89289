"""The QEMU functional backend: boot a guest with a topology's NUMA layout, run a scenario.

``run_scenario`` boots a kernel under TCG with the topology's CPUs and nodes (memory scaled
down so each node stays small), hands the guest init a scenario, collects what comes back
into a run folder and says how the run ended: ``exit``, ``fail``, ``panic``, ``timeout``
or ``crash``.  Run folder::

    console.log     the serial console
    qemu.stderr     QEMU's own messages
    run.json        exit cause, times, the guest's NUMA layout, the command line
    results/        the guest's /results, unpacked from results.tar
    written/        every file the guest wrote with m5 writefile (results.tar included)

How the scenario gets in and the results get out depends on the kernel (the *share*):

- ``9p``: a virtio-9p shared folder, when the kernel's config has virtio and 9p built in
  (the project's kernel);
- ``initramfs``: the scenario rides in the initramfs and the init prints each written file
  as base64 between markers on the console (Debian's stock kernel, whose 9p is modules).

Without ``--image`` the guest runs from an initramfs we build: busybox-static, our init and
our m5.  With ``--image`` it runs from that ext4 root image, which needs the 9p share.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pimcloud.atomic import atomic_write_bytes, atomic_write_text
from pimcloud.kernel_args import QEMU_KERNEL_ARGS
from pimcloud.paths import REPO_ROOT, build_dir, cache_dir
from pimcloud.topology import Topology, cpus, load_topology, numa_nodes
from pimcloud.topology.qemu import machine_args, numa_args

from . import cpio
from .scenario import (
    RESULTS_ARCHIVE,
    ConsoleReport,
    GuestNode,
    ScenarioPayload,
    load_scenario,
    parse_console,
    unpack_results,
)
from .scenario import node_mismatches as compare_nodes

Share = Literal["9p", "initramfs"]
ExitCause = Literal["exit", "fail", "panic", "timeout", "crash"]
TcgThreads = Literal["single", "multi"]
Log = Callable[[str], None]

GUEST_DIR = Path(__file__).resolve().parent
INIT_SCRIPT = GUEST_DIR / "init" / "pimcloud-init"
M5_SOURCES = (GUEST_DIR / "m5" / "m5.c", GUEST_DIR / "m5" / "m5ops.c")
RNG_SEED_SOURCES = (GUEST_DIR / "m5" / "pimcloud-rng-seed.c", GUEST_DIR / "m5" / "m5ops.c")
M5_HEADER = GUEST_DIR / "m5" / "m5ops.h"
BUSYBOX = Path("/bin/busybox")
QEMU = "qemu-system-x86_64"
GIB = 1 << 30
MIB = 1 << 20
DEFAULT_NODE_LIMIT = GIB
# Paths inside the guest (the root image installs the same ones).
GUEST_INIT = "/sbin/pimcloud-init"
GUEST_M5 = "/sbin/m5"
GUEST_RNG_SEED = "/sbin/pimcloud-rng-seed"
SHARE_TAG = "pimcloud"
SHARE_MOUNT = "pimcloud/host"
# Options a kernel needs built in for the 9p share and for a virtio root disk.
NEEDS_9P = ("CONFIG_VIRTIO_PCI", "CONFIG_NET_9P", "CONFIG_NET_9P_VIRTIO", "CONFIG_9P_FS")
NEEDS_DISK = ("CONFIG_VIRTIO_PCI", "CONFIG_VIRTIO_BLK", "CONFIG_EXT4_FS")
# After a panic the kernel reboots at once (panic=-1) and -no-reboot ends QEMU; this is
# how long we wait for that before killing it ourselves.
PANIC_GRACE_S = 10.0


class QemuRunError(RuntimeError):
    """A run could not start (missing kernel, image, QEMU): the message says what to do."""


# ---- inputs ----

def default_memory_divisor(topology: Topology, node_limit: int = DEFAULT_NODE_LIMIT) -> int:
    """The smallest power of two that brings every node's memory to ``node_limit`` or less."""
    largest = max((node.capacity for node in numa_nodes(topology)), default=0)
    divisor = 1
    while largest // divisor > node_limit:
        divisor *= 2
    return divisor


def scaled_topology(topology: Topology, divisor: int) -> Topology:
    """The topology with memory divided; each node must keep 64 MiB in 2 MiB steps."""
    scaled = topology.with_memory_divided(divisor)
    for node in numa_nodes(scaled):
        if node.capacity and (node.capacity < 64 * MIB or node.capacity % (2 * MIB)):
            raise QemuRunError(
                f"--mem-divisor {divisor} leaves node {node.node_id} of {topology.name} with "
                f"{node.capacity / MIB:g} MiB; Linux needs at least 64 MiB per node in 2 MiB "
                "steps: use a smaller divisor")
    return scaled


def kernel_config(kernel: Path) -> dict[str, str]:
    """The .config beside a kernel (``config``, ``config-<version>`` or ``.config``), or {}."""
    version = kernel.name.split("-", 1)[1] if "-" in kernel.name else ""
    for candidate in (kernel.parent / "config", kernel.parent / f"config-{version}",
                      kernel.parent / ".config"):
        if candidate.is_file():
            options = {}
            for line in candidate.read_text(errors="replace").splitlines():
                name, equals, value = line.partition("=")
                if equals and name.startswith("CONFIG_"):
                    options[name] = value
            return options
    return {}


def choose_share(config: dict[str, str]) -> Share:
    """9p when virtio and 9p are built in (=y), else the initramfs + console fallback."""
    return "9p" if all(config.get(option) == "y" for option in NEEDS_9P) else "initramfs"


def project_kernel() -> Path:
    """Where ``pimcloud.guest.kernel`` publishes the project's bzImage (with its config)."""
    from .kernel import kernel_dir

    return kernel_dir() / "bzImage"


def project_image() -> Path:
    """Where ``pimcloud.guest.image`` publishes the root image."""
    from .image import IMAGE_NAME, image_dir

    return image_dir() / IMAGE_NAME


def find_kernel(explicit: Path | None, log: Log) -> Path:
    """The kernel to boot: the given one, else the project's build, else Debian's stock."""
    if explicit is not None:
        if not explicit.is_file():
            raise QemuRunError(f"kernel {explicit} does not exist: build it with "
                               "'pimcloud kernel build' or pass --kernel PATH")
        return explicit
    project = project_kernel()
    if project.is_file():
        return project
    from .stock_kernel import stock_kernel

    log("qemu: no project kernel in the cache; using Debian's stock kernel")
    try:
        return stock_kernel()
    except (OSError, subprocess.CalledProcessError, RuntimeError) as error:
        raise QemuRunError(f"no kernel: the project kernel is not built ({project}) and "
                           f"Debian's stock kernel could not be fetched ({error}); pass "
                           "--kernel PATH") from error


def m5_binary(log: Log) -> Path:
    """The static m5 command: $PIMCLOUD_M5, the CMake build, or compiled into the cache."""
    return static_guest_tool("m5", M5_SOURCES, "PIMCLOUD_M5", log)


def rng_seed_binary(log: Log) -> Path:
    """The static pimcloud-rng-seed (the init makes the kernel's CRNG ready with it):
    $PIMCLOUD_RNG_SEED, the CMake build, or compiled into the cache."""
    return static_guest_tool("pimcloud-rng-seed", RNG_SEED_SOURCES, "PIMCLOUD_RNG_SEED", log)


def static_guest_tool(name: str, sources: tuple[Path, ...], override: str, log: Log) -> Path:
    """A static program of guest/m5: $``override``, the CMake build, or compiled into the
    cache."""
    configured = os.environ.get(override)
    if configured:
        return Path(configured)
    built = build_dir() / "guest" / "m5" / name
    newest_source = max(source.stat().st_mtime for source in (*sources, M5_HEADER))
    if built.is_file() and built.stat().st_mtime >= newest_source:
        return built
    cached = cache_dir() / "m5" / name
    if cached.is_file() and cached.stat().st_mtime >= newest_source:
        return cached
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise QemuRunError(f"no C compiler for the guest's {name}: install Debian's gcc, or "
                           "build it with 'make cxx'")
    log(f"qemu: compiling {name} into {cached}")
    cached.parent.mkdir(parents=True, exist_ok=True)
    scratch = cached.with_suffix(".tmp")
    subprocess.run([compiler, "-std=c11", "-O2", "-static", "-o", str(scratch),
                    *map(str, sources)], check=True)
    scratch.replace(cached)
    return cached


def base_initramfs(m5: Path, rng_seed: Path) -> bytes:
    """busybox-static with every applet linked, our init, m5 and pimcloud-rng-seed, the
    folders init uses."""
    if not BUSYBOX.is_file():
        raise QemuRunError(f"{BUSYBOX} is missing: install Debian's busybox-static")
    applets = subprocess.run([str(BUSYBOX), "--list-full"], check=True, capture_output=True,
                             text=True).stdout.split()
    entries = [cpio.regular("bin/busybox", BUSYBOX.read_bytes(), executable=True)]
    for applet in applets:
        if applet not in ("bin/busybox", "sbin/init", "init"):
            entries.append(cpio.symlink(applet, "/bin/busybox"))
    entries += [
        cpio.regular(GUEST_INIT, INIT_SCRIPT.read_bytes(), executable=True),
        cpio.regular(GUEST_M5, m5.read_bytes(), executable=True),
        cpio.regular(GUEST_RNG_SEED, rng_seed.read_bytes(), executable=True),
        *(cpio.directory(d) for d in ("dev", "proc", "sys", "tmp", "run", "results", "etc",
                                      f"{SHARE_MOUNT}/out")),
    ]
    return cpio.archive(cpio.with_parents(entries))


def scenario_initramfs(scenario: ScenarioPayload) -> bytes:
    """The second archive of the initrd: the scenario where m5 readfile looks for it."""
    return cpio.archive(cpio.with_parents([
        cpio.regular(f"{SHARE_MOUNT}/readfile", scenario.payload)]))


def kernel_cmdline(share: Share, with_image: bool, append: str = "") -> str:
    parts = [*QEMU_KERNEL_ARGS, f"pimcloud.share={share}", "panic=-1"]
    if with_image:
        parts += ["root=/dev/vda", "rootfstype=ext4", "rw", f"init={GUEST_INIT}"]
    else:
        parts.append(f"rdinit={GUEST_INIT}")
    return " ".join([*parts, append] if append else parts)


def tcg_threads(vcpus: int, host_cpus: int | None = None) -> TcgThreads:
    """One host thread per vCPU only when the host has a core for each: with fewer, the
    vCPU threads fight over the cores and SMP bring-up alone takes minutes (measured:
    20 vCPUs on 2 busy cores boot in 22 s single-threaded, 42 s multi-threaded)."""
    host_cpus = host_cpus or len(os.sched_getaffinity(0))
    return "multi" if host_cpus >= vcpus else "single"


def qemu_command(topology: Topology, kernel: Path, initrd: Path | None, image: Path | None,
                 share_dir: Path | None, cmdline: str, console: Path,
                 threads: TcgThreads | None = None) -> list[str]:
    threads = threads or tcg_threads(len(cpus(topology)))
    command = [QEMU, "-accel", f"tcg,thread={threads}", "-cpu", "max", *machine_args(topology),
               *numa_args(topology), "-kernel", str(kernel), "-append", cmdline,
               "-nographic", "-no-reboot", "-nodefaults", "-monitor", "none",
               "-serial", f"file:{console}"]
    if initrd is not None:
        command += ["-initrd", str(initrd)]
    if image is not None:
        # snapshot=on: a run never changes the image other runs boot.
        command += ["-drive", f"file={image},if=virtio,format=raw,snapshot=on"]
    if share_dir is not None:
        command += ["-virtfs", f"local,path={share_dir},mount_tag={SHARE_TAG},"
                               "security_model=none,id=pimcloud"]
    return command


# ---- running ----

@dataclass
class RunResult:
    """How a run ended and where its outputs are (the content of run.json)."""

    run_dir: str
    cause: ExitCause
    topology: str
    memory_divisor: int
    scaled_topology: str
    kernel: str
    share: Share
    image: str | None
    cmdline: str
    command: list[str]
    qemu_exit_code: int | None
    scenario_exit: int | None
    fail_code: int | None
    started: str
    times: dict[str, float | None] = field(default_factory=dict)
    nodes: list[dict[str, object]] = field(default_factory=list)
    clocksource: str | None = None
    numa_balancing: str | None = None
    crng_ready: bool | None = None
    cgroup_controllers: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    console_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.cause == "exit" and self.scenario_exit == 0 and not self.problems


def _die_with_parent() -> None:
    """In the QEMU child: get SIGKILL when the Python parent dies, so none is left behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _boot(command: list[str], console: Path, timeout: float,
          log: Log) -> tuple[int | None, bool, dict[str, float]]:
    """Run QEMU to its end or the timeout; (exit code, timed out, wall-clock marks)."""
    marks: dict[str, float] = {}
    started = time.monotonic()
    stderr_path = console.with_name("qemu.stderr")
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=stderr,
                                   preexec_fn=_die_with_parent)
        try:
            timed_out = False
            panic_seen: float | None = None
            while process.poll() is None:
                now = time.monotonic() - started
                text = console.read_text(errors="replace") if console.exists() else ""
                if "console" not in marks and text:
                    marks["console"] = now  # firmware and decompression are done
                # At a line start: the kernel's "Run /sbin/pimcloud-init as init" is not it.
                for mark, pattern in (("init", "pimcloud-init "), ("ready", "pimcloud-ready "),
                                      ("scenario_end", "pimcloud-scenario-exit ")):
                    if mark not in marks and f"\n{pattern}" in text:
                        marks[mark] = now
                        log(f"qemu: {mark} after {now:.1f} s")
                if panic_seen is None and "Kernel panic - not syncing" in text:
                    panic_seen = now
                if now > timeout or (panic_seen is not None and now - panic_seen > PANIC_GRACE_S):
                    timed_out = panic_seen is None
                    break
                time.sleep(0.2)
        finally:
            _stop(process)
    marks["wall"] = time.monotonic() - started
    code = process.returncode
    return (None if timed_out else code), timed_out, marks


def _cause(report: ConsoleReport, timed_out: bool, qemu_code: int | None) -> ExitCause:
    if report.panic is not None:
        return "panic"
    if timed_out:
        return "timeout"
    if report.fail_code is not None:
        return "fail"
    if qemu_code == 0 and (report.uptime_at_exit_s is not None or report.m5_exit):
        return "exit"
    return "crash"


def _collect_files(report: ConsoleReport, share_dir: Path | None, written: Path) -> None:
    """Move every file the guest wrote (9p folder, or decoded from the console) to written/."""
    if share_dir is not None and (share_dir / "out").is_dir():
        for path in sorted((share_dir / "out").rglob("*")):
            if path.is_file():
                target = written / path.relative_to(share_dir / "out")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, target)
    for name, data in report.files.items():
        atomic_write_bytes(written / name, data)


def run_scenario(topology_name: str, scenario_path: Path, *, kernel: Path | None = None,
                 image: Path | None = None, initrd: Path | None = None,
                 out: Path | None = None, timeout: float = 600.0,
                 memory_divisor: int | None = None, share: Share | None = None,
                 append: str = "", tcg: TcgThreads | None = None,
                 log: Log = print) -> RunResult:
    """Boot, run the scenario, collect the results; never leaves a QEMU process behind."""
    if shutil.which(QEMU) is None:
        raise QemuRunError(f"{QEMU} is missing: install Debian's qemu-system-x86")
    topology = load_topology(topology_name)
    scenario = load_scenario(scenario_path)
    divisor = memory_divisor or default_memory_divisor(topology)
    scaled = scaled_topology(topology, divisor)
    if image is not None and not image.is_file():
        raise QemuRunError(f"image {image} does not exist: build it with 'pimcloud image "
                           "build' or leave out --image to boot the initramfs")
    if initrd is not None and not initrd.is_file():
        raise QemuRunError(f"initrd {initrd} does not exist: leave out --initrd to use ours")
    kernel = find_kernel(kernel, log).resolve()
    config = kernel_config(kernel)
    share = share or choose_share(config)
    if image is not None:
        missing = [o for o in (*NEEDS_DISK, *NEEDS_9P) if config and config.get(o) != "y"]
        if missing or share != "9p":
            raise QemuRunError(f"kernel {kernel} cannot boot --image: it needs "
                               f"{', '.join(missing or NEEDS_9P)} built in (=y); use the "
                               "project kernel ('pimcloud kernel build')")
    run_dir = out or REPO_ROOT / "runs" / "out" / "qemu" / (
        f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{topology.name}")
    if run_dir.exists() and any(run_dir.iterdir()):
        raise QemuRunError(f"run folder {run_dir} is not empty: pick a new --out")
    run_dir.mkdir(parents=True, exist_ok=True)
    log(f"qemu: {topology.name} with memory / {divisor} "
        f"({scaled.total_memory // MIB} MiB in {len(numa_nodes(scaled))} nodes), kernel "
        f"{kernel}, share {share}, run folder {run_dir}")

    console = run_dir / "console.log"
    started = datetime.now(UTC).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory(prefix="pimcloud-qemu-") as scratch_name:
        scratch = Path(scratch_name)
        initrd_path: Path | None = None
        if image is None or initrd is not None:
            initrd_path = scratch / "initrd.cpio"
            if initrd:
                base = initrd.read_bytes()
            else:
                base = base_initramfs(m5_binary(log), rng_seed_binary(log))
            extra = scenario_initramfs(scenario) if share == "initramfs" else b""
            initrd_path.write_bytes(base + extra)
        share_dir: Path | None = None
        if share == "9p":
            share_dir = scratch / "share"
            (share_dir / "out").mkdir(parents=True)
            (share_dir / "readfile").write_bytes(scenario.payload)
        cmdline = kernel_cmdline(share, image is not None, append)
        command = qemu_command(scaled, kernel, initrd_path, image, share_dir, cmdline, console,
                               tcg)
        qemu_code, timed_out, marks = _boot(command, console, timeout, log)
        text = console.read_text(errors="replace") if console.exists() else ""
        stderr_file = run_dir / "qemu.stderr"
        qemu_errors = stderr_file.read_text(errors="replace").strip()
        report = parse_console(text)
        written = run_dir / "written"
        _collect_files(report, share_dir, written)

    problems = list(report.init_errors) + list(report.file_errors)
    if qemu_errors and qemu_code not in (0, None):
        problems.append(f"QEMU: {_tail(qemu_errors, 5)}")
    results: list[str] = []
    if (written / RESULTS_ARCHIVE).is_file():
        results = unpack_results((written / RESULTS_ARCHIVE).read_bytes(), run_dir / "results")
    elif report.scenario_exit is not None:
        problems.append(f"the guest ran the scenario but no {RESULTS_ARCHIVE} came back")
    if not report.reached_init and report.panic is None:
        problems.append("the guest never reached the pimcloud init")
    if report.nodes:
        # The same contract as `pimcloud gem5 boot`: the guest sees the model's NUMA layout.
        problems += [f"NUMA layout differs from the model: {problem}"
                     for problem in compare_nodes(scaled, report.nodes)]

    def gap(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else round(b - a, 3)

    times = {
        "wall_s": round(marks["wall"], 3),
        "wall_to_console_s": marks.get("console"),
        "wall_to_init_s": marks.get("init"),
        "wall_to_ready_s": marks.get("ready"),
        "guest_boot_to_init_s": report.uptime_at_init_s,
        "guest_boot_to_ready_s": report.uptime_at_ready_s,
        "scenario_s": gap(report.uptime_at_scenario_begin_s, report.uptime_at_scenario_end_s),
    }
    result = RunResult(
        run_dir=str(run_dir), cause=_cause(report, timed_out, qemu_code),
        topology=topology.name, memory_divisor=divisor, scaled_topology=scaled.name,
        kernel=str(kernel), share=share, image=str(image) if image else None, cmdline=cmdline,
        command=command, qemu_exit_code=qemu_code, scenario_exit=report.scenario_exit,
        fail_code=report.fail_code, started=started, times=times,
        nodes=[asdict(node) for node in report.nodes], clocksource=report.clocksource,
        numa_balancing=report.numa_balancing,
        crng_ready=report.crng_ready,
        cgroup_controllers=list(report.cgroup_controllers), results=results, problems=problems,
        warnings=list(report.init_warnings),
        console_tail=_tail(text))
    if report.panic:
        result.problems.insert(0, report.panic)
    if timed_out:
        result.problems.insert(0, f"no end within the {timeout:g} s timeout (hang)")
    atomic_write_text(run_dir / "run.json", json.dumps(asdict(result), indent=1) + "\n")
    return result


def node_mismatches(topology: Topology, result: RunResult, tolerance_kib: int = 4096) -> list[str]:
    """The run's guest nodes against the model (see scenario.node_mismatches)."""
    nodes = [GuestNode(int(str(n["node_id"])), tuple(n["cpus"]),  # type: ignore[arg-type]
                       int(str(n["present_kib"])), int(str(n["memtotal_kib"])),
                       tuple(n["distances"]))  # type: ignore[arg-type]
             for n in result.nodes]
    return compare_nodes(topology, nodes, tolerance_kib)


def summary(result: RunResult) -> str:
    """A few lines for the terminal."""
    times = ", ".join(f"{k} {v:.1f}" for k, v in result.times.items() if v is not None)
    lines = [f"run {result.run_dir}: {result.cause}"
             + (f", scenario exit {result.scenario_exit}" if result.scenario_exit is not None
                else "")
             + (f", fail code {result.fail_code}" if result.fail_code is not None else ""),
             f"  topology {result.topology}, memory / {result.memory_divisor}, share "
             f"{result.share}, clocksource {result.clocksource}",
             f"  times (s): {times}",
             f"  results: {', '.join(result.results) or '(none)'}"]
    lines += [f"  problem: {problem}" for problem in result.problems]
    if not result.ok:
        lines += ["  console tail:", *("    " + line for line in result.console_tail.splitlines())]
    return "\n".join(lines)

