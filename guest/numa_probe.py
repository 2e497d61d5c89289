"""Boot a kernel under QEMU with a topology and read back the NUMA layout Linux built.

Two ways to hand the topology to the guest:
- ``qemu``: QEMU's own ``-numa`` options (QEMU writes SRAT/SLIT itself);
- ``tables``: no NUMA options at all; our SRAT/SLIT/HMAT bytes ride in an uncompressed
  cpio at the front of the initrd, and Linux installs them (ACPI table upgrade), as the
  gem5 board does through its own XSDT.
A busybox init prints one ``pimcloud-node`` line per node and powers off.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pimcloud.topology import Topology, build_numa_tables, cpus, numa_nodes
from pimcloud.topology.interconnect import access_matrix, local_initiator
from pimcloud.topology.qemu import machine_args, numa_args

from . import cpio
from .qemu import tcg_threads
from .scenario import GuestNode, node_mismatches, parse_console, parse_cpu_list

ProbeMode = Literal["qemu", "tables"]
BUSYBOX = Path("/bin/busybox")
DONE_MARK = "pimcloud-probe-done"

INIT_SCRIPT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev
mount -t proc proc /proc
mount -t sysfs sysfs /sys
for dir in /sys/devices/system/node/node*; do
  id=${dir##*node}
  present=$(awk -v n="$id" '$1 == "Node" { gsub(",", "", $2); node = $2 }
                           $1 == "present" && node == n { sum += $2 } END { print sum * 4 }' \
            /proc/zoneinfo)
  memtotal=$(awk '/MemTotal/ { print $4 }' "$dir/meminfo")
  echo "pimcloud-node $id cpus=$(cat "$dir/cpulist") present_kib=$present" \
       "memtotal_kib=$memtotal distance=$(cat "$dir/distance" | tr ' ' ',')"
  hmat="$dir/access0/initiators"
  if [ -r "$hmat/read_latency" ]; then
    initiators=$(ls "$hmat" | sed -n 's/^node//p' | tr '\n' ',' | sed 's/,$//')
    echo "pimcloud-hmat $id initiators=$initiators read_latency_ns=$(cat "$hmat/read_latency")" \
         "read_bandwidth_mbps=$(cat "$hmat/read_bandwidth")"
  fi
done
dmesg | sed -n 's/.*ACPI: \(SRAT\|SLIT\|HMAT\) .*(v[0-9]* \([A-Z]*\) .*/pimcloud-table \1 \2/p'
clocks=/sys/devices/system/clocksource/clocksource0
# tsc-early gives way to tsc once the kernel has refined the TSC calibration, a second
# after the clocksource initcall; a slow TCG host can reach this line before that.
tries=0
while [ "$(cat $clocks/current_clocksource)" = tsc-early ] && [ $tries -lt 20 ]; do
  sleep 1; tries=$((tries + 1))
done
echo "pimcloud-clocksource $(cat $clocks/current_clocksource)"
echo PROBE_DONE
poweroff -f
""".replace("PROBE_DONE", DONE_MARK)


@dataclass(frozen=True)
class HmatView:
    """What Linux made of a memory node's HMAT entries (access class 0)."""

    initiators: tuple[int, ...]
    read_latency_ns: int
    read_bandwidth_mbps: int


@dataclass
class ProbeResult:
    """What the guest printed, parsed, plus the console and the boot time."""

    nodes: list[GuestNode]
    hmat: dict[int, HmatView]
    tables: dict[str, str]
    clocksource: str
    console: str
    seconds: float


def build_initrd(topology: Topology, mode: ProbeMode) -> bytes:
    """The probe initrd: [ACPI tables cpio if mode == tables] + busybox and the init."""
    early = b""
    if mode == "tables":
        tables = [cpio.regular(f"kernel/firmware/acpi/{t.filename}", t.data)
                  for t in build_numa_tables(topology)]
        early = cpio.archive(cpio.with_parents(tables))
    main = cpio.archive(cpio.with_parents([
        cpio.regular("bin/busybox", BUSYBOX.read_bytes(), executable=True),
        cpio.symlink("bin/sh", "busybox"),
        cpio.regular("init", INIT_SCRIPT.encode(), executable=True),
        cpio.directory("proc"), cpio.directory("sys"), cpio.directory("dev"),
    ]))
    return early + main


def parse_probe_console(console: str) -> ProbeResult:
    """Node lines as the init's (one parser for both), plus the probe's HMAT and table lines."""
    report = parse_console(console)
    hmat = {int(m.group(1)): HmatView(parse_cpu_list(m.group(2)), int(m.group(3)),
                                      int(m.group(4)))
            for m in re.finditer(r"pimcloud-hmat (\d+) initiators=(\S*) read_latency_ns=(\d+) "
                                 r"read_bandwidth_mbps=(\d+)", console)}
    tables = dict(re.findall(r"pimcloud-table (\w+) (\w+)", console))
    return ProbeResult(report.nodes, hmat, tables, report.clocksource or "", console, 0.0)


def qemu_command(kernel: Path, initrd: Path, topology: Topology, mode: ProbeMode) -> list[str]:
    threads = tcg_threads(len(cpus(topology)))
    command = ["qemu-system-x86_64", "-accel", f"tcg,thread={threads}", "-nographic",
               "-no-reboot", "-monitor", "none", "-serial", "stdio", "-kernel", str(kernel),
               "-initrd", str(initrd), *machine_args(topology),
               "-append", "console=ttyS0 panic=-1 loglevel=5 tsc=reliable clocksource=tsc"]
    if mode == "qemu":
        command += numa_args(topology)
    return command


def probe(kernel: Path, topology: Topology, mode: ProbeMode, timeout: float = 600) -> ProbeResult:
    """Boot once and return the guest's view; raises RuntimeError with the console tail."""
    if shutil.which("qemu-system-x86_64") is None:
        raise RuntimeError("qemu-system-x86_64 is missing: install Debian's qemu-system-x86")
    with tempfile.TemporaryDirectory(prefix="pimcloud-probe-") as scratch:
        initrd = Path(scratch) / "initrd.cpio"
        initrd.write_bytes(build_initrd(topology, mode))
        started = time.monotonic()
        try:
            done = subprocess.run(qemu_command(kernel, initrd, topology, mode),
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, check=False)
            console = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired as expired:
            partial = (expired.stdout or b"").decode(errors="replace")
            raise RuntimeError(f"the guest did not finish within {timeout:.0f} s; console "
                               f"tail:\n{partial[-3000:]}") from None
        seconds = time.monotonic() - started
    if DONE_MARK not in console:
        raise RuntimeError(f"the probe did not complete; console tail:\n{console[-3000:]}")
    result = parse_probe_console(console)
    result.seconds = seconds
    return result


def mismatches(topology: Topology, result: ProbeResult, mode: ProbeMode,
               tolerance_kib: int = 4096) -> list[str]:
    """Every way the guest's view differs from the model; empty when they agree."""
    problems = node_mismatches(topology, result.nodes, tolerance_kib)
    cells = {(c.initiator_node, c.target_node): c for c in access_matrix(topology)}
    for node in numa_nodes(topology) if mode == "tables" else ():
        initiator = local_initiator(topology, node.node_id) if node.capacity else None
        if initiator is None:
            continue
        cell = cells[(initiator, node.node_id)]
        want = HmatView((initiator,), -(-cell.latency_ps // 1000), cell.bandwidth // 10**6)
        if result.hmat.get(node.node_id) != want:
            problems.append(f"node {node.node_id}: HMAT {result.hmat.get(node.node_id)} != {want}")
    wanted_oem = "PIMCLD" if mode == "tables" else "BOCHS"
    for signature in ("SRAT", "SLIT") + (("HMAT",) if mode == "tables" else ()):
        if result.tables.get(signature) != wanted_oem:
            problems.append(f"{signature} came from {result.tables.get(signature)!r}, "
                            f"expected {wanted_oem}")
    return problems
