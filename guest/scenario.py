"""Scenarios in, results out: the byte formats shared by the guest init and the hosts.

A scenario is what ``m5 readfile`` hands the guest init: either a shell script, or a tar
archive holding ``run.sh`` and the files it needs (a scenario folder is packed into one).
The init runs ``sh run.sh`` in the unpacked folder with ``PIMCLOUD_RESULTS=/results`` and
sends ``/results`` back as ``results.tar`` through ``m5 writefile``.

The init also prints ``pimcloud-*`` lines on the console (guest/init/README.md); this
module parses them, including files sent over the console as base64 between markers.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from pimcloud.topology import Topology, numa_nodes, slit_distances

ScenarioKind = Literal["script", "archive"]
ENTRY_SCRIPT = "run.sh"
RESULTS_ARCHIVE = "results.tar"
PANIC_MARK = "Kernel panic - not syncing"


class ScenarioError(ValueError):
    """A scenario or a guest report that cannot be used; the message says how to fix it."""


@dataclass(frozen=True)
class ScenarioPayload:
    """The bytes the guest reads with ``m5 readfile``, and where they came from."""

    source: Path
    kind: ScenarioKind
    payload: bytes


def is_tar(data: bytes) -> bool:
    """POSIX tar ("ustar" at offset 257): the test the guest init makes too."""
    return data[257:262] == b"ustar"


def _pack_folder(folder: Path) -> bytes:
    """A deterministic tar of the folder: sorted names, root-owned, mtime 0."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder).as_posix()
            info = archive.gettarinfo(str(path), arcname=relative)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = 0
            if path.is_file() and not path.is_symlink():
                with path.open("rb") as stream:
                    archive.addfile(info, stream)
            else:
                archive.addfile(info)
    return buffer.getvalue()


def load_scenario(path: Path) -> ScenarioPayload:
    """Read a scenario script, a scenario folder (with run.sh) or a tar archive."""
    path = Path(path)
    if not path.exists():
        raise ScenarioError(f"scenario {path}: no such file or folder; give a shell script, "
                            f"a folder with {ENTRY_SCRIPT}, or a tar archive holding one")
    if path.is_dir():
        if not (path / ENTRY_SCRIPT).is_file():
            raise ScenarioError(f"scenario folder {path} has no {ENTRY_SCRIPT}: add the script "
                                "the guest should run")
        return ScenarioPayload(path, "archive", _pack_folder(path))
    data = path.read_bytes()
    if not data.strip():
        raise ScenarioError(f"scenario {path} is empty: write the commands the guest should run")
    if is_tar(data):
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            names = {PurePosixPath(name).as_posix().removeprefix("./")
                     for name in archive.getnames()}
        if ENTRY_SCRIPT not in names:
            raise ScenarioError(f"scenario archive {path} has no {ENTRY_SCRIPT} at its top "
                                "level: add it (tar -C FOLDER -cf FILE .)")
        return ScenarioPayload(path, "archive", data)
    if b"\0" in data:
        raise ScenarioError(f"scenario {path} is neither a shell script nor a tar archive")
    return ScenarioPayload(path, "script", data)


def unpack_results(archive_bytes: bytes, destination: Path) -> list[str]:
    """Unpack results.tar into ``destination`` (nothing may land outside it); the file list."""
    destination.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive_bytes)) as archive:
        members = [m for m in archive.getmembers() if m.isfile() or m.isdir()]
        for member in members:
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts:
                raise ScenarioError(f"results archive member {member.name!r} points outside "
                                    "the results folder")
        archive.extractall(destination, members=members, filter="data")
    return sorted(m.name.removeprefix("./") for m in members if m.isfile())


# ---- the console protocol ----

def parse_cpu_list(text: str) -> tuple[int, ...]:
    """Linux cpulist syntax ("0-3,8") to CPU ids; "" is no CPUs."""
    ids: list[int] = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        ids.extend(range(int(low), int(high or low) + 1))
    return tuple(ids)


@dataclass(frozen=True)
class GuestNode:
    """One NUMA node as the guest reports it (``pimcloud-node`` line)."""

    node_id: int
    cpus: tuple[int, ...]
    present_kib: int
    memtotal_kib: int
    distances: tuple[int, ...]


def node_mismatches(topology: Topology, nodes: Iterable[GuestNode],
                   tolerance_kib: int = 4096) -> list[str]:
    """Every way the guest's nodes differ from the model's: node ids, CPUs and distances
    exactly, memory present within ``tolerance_kib``; empty when they agree."""
    expected = numa_nodes(topology)
    seen = {node.node_id: node for node in nodes}
    if sorted(seen) != [node.node_id for node in expected]:
        return [f"guest nodes {sorted(seen)} != model nodes {[n.node_id for n in expected]}"]
    slit = slit_distances(topology)
    problems = []
    for node in expected:
        guest = seen[node.node_id]
        if guest.cpus != node.cpus:
            problems.append(f"node {node.node_id}: cpus {list(guest.cpus)} != {list(node.cpus)}")
        if abs(guest.present_kib - node.capacity // 1024) > tolerance_kib:
            problems.append(f"node {node.node_id}: {guest.present_kib} KiB present, the model "
                            f"has {node.capacity // 1024} KiB")
        if list(guest.distances) != slit[node.node_id]:
            problems.append(f"node {node.node_id}: distances {list(guest.distances)} != "
                            f"{slit[node.node_id]}")
    return problems


@dataclass
class ConsoleReport:
    """Everything the init (and the kernel, on a panic) said on the console."""

    backend: str | None = None
    share: str | None = None
    uptime_at_init_s: float | None = None
    uptime_at_ready_s: float | None = None
    uptime_at_scenario_begin_s: float | None = None
    uptime_at_scenario_end_s: float | None = None
    uptime_at_exit_s: float | None = None
    nodes: list[GuestNode] = field(default_factory=list)
    clocksource: str | None = None
    available_clocksources: tuple[str, ...] = ()
    numa_balancing: str | None = None
    cgroup_controllers: tuple[str, ...] = ()
    crng_ready: bool | None = None  # the kernel's CRNG after the init's seeding
    scenario_exit: int | None = None
    fail_code: int | None = None
    m5_exit: bool = False
    panic: str | None = None
    init_errors: list[str] = field(default_factory=list)
    init_warnings: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    file_errors: list[str] = field(default_factory=list)

    @property
    def reached_init(self) -> bool:
        return self.uptime_at_init_s is not None


_KEY_VALUE = re.compile(r"(\w+)=(\S*)")
_NODE = re.compile(r"pimcloud-node (\d+) cpus=(\S*) present_kib=(\d+) memtotal_kib=(\d+) "
                   r"distance=(\S*)")


def _uptime(line: str) -> float | None:
    found = re.search(r"uptime_s=([\d.]+)", line)
    return float(found.group(1)) if found else None


def _safe_name(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return bool(parts) and not PurePosixPath(name).is_absolute() and ".." not in parts


def parse_console(text: str) -> ConsoleReport:
    """Parse a serial console log; tolerant of kernel messages between the lines."""
    report = ConsoleReport()
    current: tuple[str, int] | None = None  # file being received: name, size
    chunks: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        marker = line.find("pimcloud-")
        if current is not None:
            if line.startswith("pimcloud-file-end "):
                _finish_file(report, current, chunks, line)
                current, chunks = None, []
            elif re.fullmatch(r"[A-Za-z0-9+/=]+", line):
                chunks.append(line)
            continue
        if PANIC_MARK in line and report.panic is None:
            report.panic = line[line.find(PANIC_MARK):]
        if marker < 0:
            continue
        line = line[marker:]
        word = line.split(" ", 1)[0]
        values = dict(_KEY_VALUE.findall(line))
        if word == "pimcloud-init":
            report.backend, report.share = values.get("backend"), values.get("share")
            report.uptime_at_init_s = _uptime(line)
        elif word == "pimcloud-node" and (node := _NODE.match(line)):
            report.nodes.append(GuestNode(
                int(node.group(1)), parse_cpu_list(node.group(2)), int(node.group(3)),
                int(node.group(4)), tuple(int(v) for v in node.group(5).split(",") if v)))
        elif word == "pimcloud-clocksource":
            fields = line.split()
            report.clocksource = fields[1] if len(fields) > 1 else None
            report.available_clocksources = tuple(
                filter(None, values.get("available", "").split(",")))
        elif word == "pimcloud-sysctl":
            report.numa_balancing = values.get("numa_balancing")
        elif word == "pimcloud-cgroup":
            report.cgroup_controllers = tuple(
                filter(None, values.get("controllers", "").split(",")))
        elif word == "pimcloud-rng":
            report.crng_ready = values.get("crng") == "ready"
        elif word == "pimcloud-ready":
            report.uptime_at_ready_s = _uptime(line)
        elif word == "pimcloud-scenario-begin":
            report.uptime_at_scenario_begin_s = _uptime(line)
        elif word == "pimcloud-scenario-exit":
            report.scenario_exit = int(line.split()[1])
            report.uptime_at_scenario_end_s = _uptime(line)
        elif word == "pimcloud-exit":
            report.uptime_at_exit_s = _uptime(line)
        elif word == "pimcloud-m5-exit":
            report.m5_exit = True
        elif word == "pimcloud-fail":
            report.fail_code = int(values.get("code", "1"))
        elif word == "pimcloud-init-error":
            report.init_errors.append(line.removeprefix("pimcloud-init-error").strip())
        elif word == "pimcloud-init-warning":
            report.init_warnings.append(line.removeprefix("pimcloud-init-warning").strip())
        elif word == "pimcloud-file-begin":
            fields = line.split()
            if len(fields) == 3 and fields[2].isdigit():
                current, chunks = (fields[1], int(fields[2])), []
    if current is not None:
        report.file_errors.append(f"{current[0]}: the console ends before its end marker")
    return report


def _finish_file(report: ConsoleReport, current: tuple[str, int], chunks: list[str],
                 end_line: str) -> None:
    name, size = current
    fields = end_line.split()
    digest = fields[2] if len(fields) > 2 else ""
    try:
        data = base64.b64decode("".join(chunks), validate=True)
    except ValueError as error:
        report.file_errors.append(f"{name}: bad base64 on the console ({error})")
        return
    if not _safe_name(name):
        report.file_errors.append(f"{name}: a file name outside the output folder")
    elif len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        report.file_errors.append(f"{name}: {len(data)} bytes arrived of {size}, or the "
                                  "checksum differs (console corruption)")
    else:
        report.files[name] = data
