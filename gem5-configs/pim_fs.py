"""Boot a PIM server in gem5 full system, or restore its checkpoint and run a scenario.

    gem5.opt gem5-configs/pim_fs.py --topology paper --kernel vmlinux --disk rootfs.ext4 check

    gem5.opt [-d OUTDIR] gem5-configs/pim_fs.py --topology paper --kernel vmlinux \\
        --disk rootfs.ext4 boot --checkpoint-dir CKPT
    gem5.opt [-d OUTDIR] gem5-configs/pim_fs.py --topology paper --kernel vmlinux \\
        --disk rootfs.ext4 restore --checkpoint-dir CKPT --scenario scenario.tar

``boot`` runs the boot cores (atomic by default, no caches) until the guest's init
asks for a checkpoint (m5 checkpoint), saves it and exits.  ``restore`` rebuilds the
same board with caches, restores the checkpoint, switches every CPU to its detailed
model (O3 host, in-order PIM) and runs until the guest exits; the guest reads the
scenario with m5 readfile and returns results with m5 writefile into OUTDIR.  With
``--fast-forward`` the restored run stays on the boot cores (atomic, now with caches,
which it warms) until the guest runs ``m5 switchcpu``, so a scenario's set-up costs
atomic speed and only its measured part runs on the detailed cores.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import m5
from gem5.resources.resource import DiskImageResource, KernelResource
from m5.objects import Root
from pimcloud.components.board import PimBoard
from pimcloud.components.cache_hierarchy import PimCacheHierarchy
from pimcloud.components.memory import PimStackMemory
from pimcloud.components.processor import PimProcessor
from pimcloud.kernel_args import DEFAULT_KERNEL_ARGS, DEFAULT_ROOT_DEVICE
from pimcloud.topology import TopologyError, load_topology


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topology", required=True, help="preset name or .toml path")
    parser.add_argument("--kernel", required=True, help="uncompressed vmlinux")
    parser.add_argument("--disk", required=True, help="root filesystem image")
    parser.add_argument("--root-device", default=DEFAULT_ROOT_DEVICE,
                        help="the guest's name for the disk (/dev/hda with legacy IDE)")
    parser.add_argument("--kernel-args", default=None,
                        help="the whole kernel command line (default: console, TSC clock, "
                             "root device, our init)")
    parser.add_argument("--mem-divisor", type=int, default=1,
                        help="divide every capacity (quick experiments; changes the layout)")
    modes = parser.add_subparsers(dest="mode", required=True)
    boot = modes.add_parser("boot", help="boot to the guest's checkpoint request and save it")
    boot.add_argument("--checkpoint-dir", required=True)
    boot.add_argument("--boot-cpu", default="atomic", choices=("atomic", "kvm"))
    restore = modes.add_parser("restore", help="restore with detailed CPUs, run a scenario")
    restore.add_argument("--checkpoint-dir", required=True)
    restore.add_argument("--scenario", required=True, help="file the guest reads (readfile)")
    restore.add_argument("--stats-period", default=None,
                         help="also dump stats at this simulated period, e.g. 100ms")
    restore.add_argument("--max-seconds", type=float, default=None,
                         help="stop after this much simulated time")
    restore.add_argument("--fast-forward", action="store_true",
                         help="stay on the atomic boot cores until the guest runs "
                              "`m5 switchcpu`")
    modes.add_parser("check", help="build and instantiate the restore board (boot and "
                                   "detailed cores), exit: a topology makes a valid system")
    return parser.parse_args()


def build_board(args: argparse.Namespace) -> PimBoard:
    topology = load_topology(args.topology).with_memory_divided(args.mem_divisor)
    restoring = args.mode in ("restore", "check")
    processor = PimProcessor(topology, boot_model=getattr(args, "boot_cpu", "atomic"))
    board = PimBoard(topology=topology, processor=processor,
                     memory=PimStackMemory(topology),
                     cache_hierarchy=PimCacheHierarchy(topology, caches=restoring))
    kernel_args = args.kernel_args or DEFAULT_KERNEL_ARGS.format(root=args.root_device)
    board.set_kernel_disk_workload(
        kernel=KernelResource(local_path=args.kernel),
        disk_image=DiskImageResource(local_path=args.disk, root_partition=None),
        disk_device=args.root_device,
        readfile=getattr(args, "scenario", None),
        kernel_args=kernel_args.split(),
        # Record work items (one per request) instead of exiting on them.
        exit_on_work_items=False,
    )
    return board


def start_event_queue() -> None:
    """Simulate one tick: gem5 starts its objects (CPU tick events and all) on the first
    simulate(), and switching CPUs before that drains an empty queue to the end of time."""
    m5.simulate(1)


def run(args: argparse.Namespace) -> int:
    board = build_board(args)
    root = Root(full_system=True, board=board)
    board._pre_instantiate()
    started = time.time()
    if args.mode == "check":
        # Boot and detailed cores are both instantiated; switching needs a booted guest
        # (a CPU that never ran does not drain), so the restore exercises that.
        m5.instantiate()
        board._post_instantiate()
        objects = sum(1 for _ in root.descendants())
        print(f"pimcloud: check ok: {objects} SimObjects, "
              f"{board.get_processor().get_num_cores()} CPUs, "
              f"{len(board.get_memory().get_memory_controllers())} memory controllers",
              flush=True)
        return 0
    if args.mode == "restore":
        m5.instantiate(args.checkpoint_dir)
        board._post_instantiate()
        if not args.fast_forward:
            start_event_queue()
            board.get_processor().switch_to_detailed()
        if args.stats_period:
            m5.stats.periodicStatDump(m5.ticks.fromSeconds(
                m5.util.convert.toLatency(args.stats_period)))
    else:
        m5.instantiate()
        board._post_instantiate()
    del root
    limit = (m5.ticks.fromSeconds(args.max_seconds)
             if getattr(args, "max_seconds", None) else m5.MaxTick)
    while True:
        event = m5.simulate(limit - m5.curTick() if limit != m5.MaxTick else m5.MaxTick)
        cause = event.getCause()
        print(f"pimcloud: exit at tick {m5.curTick()} ({time.time() - started:.0f} s host): "
              f"{cause}", flush=True)
        if cause == "checkpoint":
            if args.mode == "boot":
                m5.checkpoint(args.checkpoint_dir)
                print(f"pimcloud: checkpoint saved in {args.checkpoint_dir}", flush=True)
                return 0
            continue  # a restored scenario asking again: ignore
        if cause == "switchcpu":
            processor = board.get_processor()
            if not processor.is_detailed():
                processor.switch_to_detailed()
                print(f"pimcloud: switched to the detailed cores at tick {m5.curTick()}",
                      flush=True)
            continue
        if cause == "m5_exit instruction encountered":
            return event.getCode()
        if cause == "simulate() limit reached":
            return 3
        print(f"pimcloud: unexpected exit: {cause}", file=sys.stderr)
        return 4


if __name__ == "__m5_main__":
    arguments = parse_args()
    try:
        status = run(arguments)
    except (TopologyError, RuntimeError) as error:
        print(f"pim_fs.py: error: {error}", file=sys.stderr)
        status = 2
    sys.exit(status)
