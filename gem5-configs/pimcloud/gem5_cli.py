"""``pimcloud gem5 check|boot|probe``: the gem5 given by $GEM5, driven from the host.

    pimcloud gem5 check                                  is $GEM5 usable, and if not, why
    pimcloud gem5 boot paper --out runs/out/ckpt/paper   boot to the checkpoint, check NUMA
    pimcloud gem5 probe --checkpoint runs/out/ckpt/paper --out runs/out/probe/paper
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .gem5_runner import FAST_BUILD_NOTE, Gem5Missing, require_usable_gem5


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("gem5", help="check and drive the gem5 given by $GEM5")
    commands = parser.add_subparsers(dest="gem5_command", metavar="ACTION", required=True)
    check = commands.add_parser("check", help="version, ISA and the scons-extra SimObjects")
    check.set_defaults(handler=_check)

    boot = commands.add_parser("boot", help="boot a topology to its checkpoint (atomic CPUs)")
    boot.add_argument("topology", help="preset name or .toml path")
    boot.add_argument("--out", type=Path, required=True, help="folder for ckpt/, m5out/, logs")
    boot.add_argument("--boot-cpu", default="atomic", choices=("atomic", "kvm"))
    _common(boot)
    boot.set_defaults(handler=_boot)

    probe = commands.add_parser(
        "probe", help="memory load-to-use latency per CPU kind and node, from a checkpoint")
    probe.add_argument("--checkpoint", type=Path, required=True,
                       help="a folder made by `pimcloud gem5 boot`")
    probe.add_argument("--out", type=Path, required=True)
    probe.add_argument("--loads", type=int, default=100_000,
                       help="dependent loads timed per point (default 100000)")
    probe.add_argument("--patterns", nargs="+", default=["random", "row-local"],
                       choices=["random", "row-local"],
                       help="chains to measure (each one sets up its own buffers)")
    probe.add_argument("--no-fast-forward", action="store_true",
                       help="run the probe's set-up on the detailed cores too (slow)")
    probe.add_argument("--max-seconds", type=float, default=5.0,
                       help="simulated-time limit after the checkpoint (default 5)")
    probe.set_defaults(handler=_probe)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kernel", type=Path, default=None,
                        help="vmlinux (default: the project kernel, built when missing)")
    parser.add_argument("--image", type=Path, default=None,
                        help="root image (default: the project image, built when missing)")
    parser.add_argument("--mem-divisor", type=int, default=1,
                        help="divide every capacity (smaller checkpoints)")
    parser.add_argument("--counters", action="store_true",
                        help="boot a board with the hardware counters (scons-extra "
                             "PimCounters; needs a gem5 built with them)")


def _check(args: argparse.Namespace) -> int:
    try:
        info = require_usable_gem5()
    except Gem5Missing as problem:
        print(f"gem5 is not usable: {problem}")
        return 2
    print(f"{info.path}: gem5 {info.version} ({info.build} build), ISAs "
          f"{', '.join(info.isas)}, holds {', '.join(info.present)}")
    if not info.assertions:
        print(FAST_BUILD_NOTE)
    return 0


def gem5_inputs(topology: str, kernel: Path | None, image: Path | None,
                mem_divisor: int, counters: bool = False):  # type: ignore[no-untyped-def]
    """gem5 (checked), the kernel and the image for a topology; builds ours when absent."""
    from .gem5_session import Gem5Inputs
    from .topology import load_topology

    load_topology(topology)  # a bad name or file fails here, before anything is built
    info = require_usable_gem5()
    if counters and "PimCounters" not in info.present:
        raise Gem5Missing(f"{info.path} lacks PimCounters: build gem5 with this checkout's "
                          "scons-extra (README, 'What you need')")
    if kernel is None:
        from pimcloud.guest.kernel import build_kernel

        kernel = build_kernel().vmlinux
    if image is None:
        from pimcloud.guest.image import build_image

        image = build_image().path
    return Gem5Inputs(info.path, topology, kernel.resolve(), image.resolve(), mem_divisor,
                      counters=counters)


def _boot(args: argparse.Namespace) -> int:
    from .gem5_session import boot

    try:
        inputs = gem5_inputs(args.topology, args.kernel, args.image, args.mem_divisor,
                             args.counters)
    except Gem5Missing as problem:
        print(f"gem5 is not usable: {problem}")
        return 2
    print(f"booting {args.topology} in gem5 ({args.boot_cpu} CPUs) into {args.out} ...",
          flush=True)
    report = boot(inputs, args.out.resolve(), boot_cpu=args.boot_cpu)
    print(f"host time {report.host_seconds:.0f} s, simulated "
          f"{report.simulated_seconds or 0:.3f} s, peak RSS "
          f"{report.peak_rss_bytes / 2**30:.1f} GiB, guest clocksource {report.clocksource}")
    for problem in report.problems:
        print(f"problem: {problem}")
    print("checkpoint ready; the guest's NUMA nodes match the model" if report.ok
          else "boot FAILED")
    return 0 if report.ok else 1


def _probe(args: argparse.Namespace) -> int:
    from pimcloud.topology import load_topology
    from pimcloud.workloads.memprobe import (
        ProbeError,
        format_table,
        probe_results,
        write_scenario,
    )

    from .gem5_session import read_boot, restore

    try:
        record = read_boot(args.checkpoint.resolve())
        inputs = gem5_inputs(record["topology"], Path(record["kernel"]), Path(record["image"]),
                             record["mem_divisor"], record.get("counters", False))
        topology = load_topology(record["topology"]).with_memory_divided(record["mem_divisor"])
        out = args.out.resolve()
        points = write_scenario(out / "scenario", topology, loads=args.loads,
                                switch_cpu=not args.no_fast_forward,
                                patterns=tuple(args.patterns))
    except (Gem5Missing, ValueError) as problem:
        print(f"pimcloud gem5 probe: {problem}")
        return 2
    print(f"probing {len(points)} CPU -> node pairs of {record['topology']} ...", flush=True)
    try:
        report = restore(inputs, args.checkpoint.resolve(), out / "scenario", out,
                         fast_forward=not args.no_fast_forward, max_seconds=args.max_seconds)
    except ValueError as problem:
        print(f"pimcloud gem5 probe: {problem}")
        return 2
    for problem in report.problems:
        print(f"problem: {problem}")
    if not report.ok:
        return 1
    try:
        rows = probe_results(points, out / "results" / "memprobe.jsonl",
                             out / "m5out" / "stats.txt", topology)
    except ProbeError as problem:
        print(f"pimcloud gem5 probe: {problem}")
        return 1
    from pimcloud.atomic import atomic_write_text

    atomic_write_text(out / "probe.json", json.dumps({
        "topology": record["topology"], "host_seconds": report.host_seconds,
        "simulated_seconds": report.simulated_seconds, "rows": rows}, indent=1) + "\n")
    print(format_table(rows))
    print(f"host time {report.host_seconds:.0f} s for {report.simulated_seconds or 0:.4f} "
          f"simulated s; rows in {out / 'probe.json'}")
    return 0
