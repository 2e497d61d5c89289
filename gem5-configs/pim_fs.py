"""Boot a PIM server in gem5 full system, or restore its checkpoint and run a scenario.

    gem5.opt gem5-configs/pim_fs.py --topology paper --kernel vmlinux --disk rootfs.ext4 check

    gem5.opt [-d OUTDIR] gem5-configs/pim_fs.py --topology paper --kernel vmlinux \\
        --disk rootfs.ext4 boot --checkpoint-dir CKPT
    gem5.opt [-d OUTDIR] gem5-configs/pim_fs.py --topology paper --kernel vmlinux \\
        --disk rootfs.ext4 restore --checkpoint-dir CKPT --scenario scenario.tar
    gem5.opt [-d OUTDIR] gem5-configs/pim_fs.py --topology paper --kernel vmlinux \\
        --disk rootfs.ext4 setup --checkpoint-dir CKPT --scenario setup.tar --save-dir APP

``boot`` runs the boot cores (atomic by default, no caches) until the guest's init
asks for a checkpoint (m5 checkpoint), saves it and exits.  ``restore`` rebuilds the
same board with caches, restores the checkpoint, switches every CPU to its detailed
model (O3 host, in-order PIM) and runs until the guest exits; the guest reads the
scenario with m5 readfile and returns results with m5 writefile into OUTDIR.  With
``--fast-forward`` the restored run stays on the boot cores (atomic, now with caches,
which it warms) until the guest runs ``m5 switchcpu``, so a scenario's set-up costs
atomic speed and only its measured part runs on the detailed cores; a second
``m5 switchcpu`` (the guest's wrap-up, once the services' requests are done) dumps the
statistics and goes back to the boot cores for the rest.  ``setup`` restores
a checkpoint on the boot cores (as ``boot``, no caches), runs a set-up scenario (services
launched and loaded) until the guest asks for a checkpoint again, and saves that one, the
app checkpoint, into ``--save-dir``; every run of that app set restores it instead of
loading its services again, and reads its own scenario with m5 readfile.
"""

import argparse
import json
import os
import shutil
import sys
import time
import uuid

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
    parser.add_argument("--counters", action="store_true",
                        help="add the hardware counters (scons-extra PimCounters); a "
                             "checkpoint made with them restores only with them")
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
    restore.add_argument("--resume", action="store_true",
                         help="the checkpoint was taken on the detailed cores (a progress "
                              "checkpoint): start on them")
    restore.add_argument("--counters-detached", action="store_true",
                         help="with --counters: keep the device (the checkpoint's board, "
                              "the guest's driver) but feed it nothing: no counting, no "
                              "throttle (what counting costs, same run otherwise)")
    setup = modes.add_parser("setup", help="restore on the boot cores, run a set-up "
                                           "scenario to its checkpoint request, save it")
    setup.add_argument("--checkpoint-dir", required=True, help="the checkpoint to restore")
    setup.add_argument("--scenario", required=True, help="file the guest reads (readfile)")
    setup.add_argument("--save-dir", required=True, help="where the app checkpoint goes")
    setup.add_argument("--max-seconds", type=float, default=None,
                       help="stop after this much simulated time")
    # A set-up can outlast a session (translate's 4 x 11 Apertium processes on arch1's
    # atomic cores: over an hour of host CPU): it saves progress as a run does, and a
    # killed one restarts from its latest progress checkpoint (``--checkpoint-dir``).
    for mode in (restore, setup):
        mode.add_argument("--progress-dir", default=None,
                          help="save a progress checkpoint here every --progress-every "
                               "host seconds (preemptible runs and set-ups)")
        mode.add_argument("--progress-every", type=float, default=1800.0,
                          help="host seconds between progress checkpoints")
        mode.add_argument("--progress-slice", type=float, default=0.001,
                          help="simulated seconds between checks of the host clock")
    modes.add_parser("check", help="build and instantiate the restore board (boot and "
                                   "detailed cores), exit: a topology makes a valid system")
    return parser.parse_args()


def build_board(args: argparse.Namespace) -> PimBoard:
    if getattr(args, "counters_detached", False) and not args.counters:
        raise SystemExit("pim_fs.py: --counters-detached needs --counters (a board with "
                         "the device whose counting it turns off)")
    topology = load_topology(args.topology).with_memory_divided(args.mem_divisor)
    restoring = args.mode in ("restore", "check")
    # setup runs on the boot cores as a boot does: atomic, without caches.
    processor = PimProcessor(topology, boot_model=getattr(args, "boot_cpu", "atomic"),
                             start_detailed=getattr(args, "resume", False)
                             and switches_made(args.checkpoint_dir) == 1)
    board = PimBoard(topology=topology, processor=processor,
                     memory=PimStackMemory(topology),
                     cache_hierarchy=PimCacheHierarchy(topology, caches=restoring),
                     counters=args.counters,
                     counting=not getattr(args, "counters_detached", False))
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


SWITCHES_FILE = "pimcloud-switches"  # in a progress checkpoint: the guest's switches so far


def switches_made(checkpoint_dir: str) -> int:
    """How many ``m5 switchcpu`` a run had made when its progress checkpoint was taken:
    1 on the detailed cores (and in checkpoints older than the count), 2 in the wrap-up."""
    path = os.path.join(checkpoint_dir, SWITCHES_FILE)
    if not os.path.isfile(path):
        return 1
    with open(path) as count:
        return int(count.read().strip() or 1)


def start_event_queue() -> None:
    """Simulate one tick: gem5 starts its objects (CPU tick events and all) on the first
    simulate(), and switching CPUs before that drains an empty queue to the end of time."""
    m5.simulate(1)


class Progress:
    """Progress checkpoints of a preemptible run: every ``--progress-every`` host seconds,
    checked every ``--progress-slice`` simulated seconds, the run saves what it has done
    so that a killed, preempted or timed-out run resumes there (``--resume``).

    ``DIR/segments/<tick>/`` gets this segment's statistics (dumped at the checkpoint, not
    reset) and console, then ``DIR/ckpt-<tick>`` the checkpoint; each appears by rename,
    and the previous checkpoint is removed only after both. A resumed run's statistics
    start from zero, so the interval around a checkpoint is split between two dumps; each
    segment names the gem5 process that wrote it (``process``), for counters such as
    simOps that count from the start of a process (runs/progress.py, ops_of_processes).
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.folder = args.progress_dir
        self.every = args.progress_every
        self.slice_ticks = max(1, m5.ticks.fromSeconds(args.progress_slice))
        self.outdir = m5.options.outdir
        self.last = time.time()
        self.last_cpu = time.process_time()  # this process's CPU time: host time if alone
        self.started_tick = m5.curTick()
        self.process = uuid.uuid4().hex  # this gem5 process, in every segment it writes
        self.offsets: dict = {}
        self.due = False  # save at the next slice (save_soon)
        os.makedirs(os.path.join(self.folder, "segments"), exist_ok=True)

    def save_soon(self) -> None:
        """Save at the next slice whatever the time since the last: the run has just left
        its detailed cores, the costly part, and a run stopped in its wrap-up (gem5
        v24.0.0.1's O3 CPU keeps memory it no longer uses, so a long run can pass its
        memory limit there) then goes on from here instead of redoing detailed time."""
        self.due = True

    def maybe_save(self, board: PimBoard, switches: int) -> None:
        if not self.due and time.time() - self.last < self.every:
            return
        self.due = False
        tick = m5.curTick()
        m5.stats.dump()
        segment = os.path.join(self.folder, "segments", f".partial-{tick}")
        final = os.path.join(self.folder, "segments", str(tick))
        partial = os.path.join(self.folder, f".partial-ckpt-{tick}")
        # An attempt killed at this very tick (a resumed run reaches the same ticks) may
        # have left any of these half-written: this attempt writes them again.
        for stale in (segment, final, partial):
            shutil.rmtree(stale, ignore_errors=True)
        os.makedirs(segment, exist_ok=True)
        # Only what this attempt wrote since its previous progress checkpoint.
        for name in ("stats.txt", "board.pc.com_1.device"):
            source = os.path.join(self.outdir, name)
            if not os.path.isfile(source):
                continue
            with open(source, "rb") as whole, open(os.path.join(segment, name), "wb") as part:
                whole.seek(self.offsets.get(name, 0))
                shutil.copyfileobj(whole, part)
                self.offsets[name] = whole.tell()
        with open(os.path.join(segment, "segment.json"), "w") as info:
            json.dump({"from_tick": self.started_tick, "to_tick": tick,
                       "process": self.process,
                       "host_seconds": round(time.time() - self.last, 1),
                       "cpu_seconds": round(time.process_time() - self.last_cpu, 1)}, info)
        os.replace(segment, final)
        m5.checkpoint(partial)
        with open(os.path.join(partial, SWITCHES_FILE), "w") as count:
            count.write(f"{switches}\n")
        os.replace(partial, os.path.join(self.folder, f"ckpt-{tick}"))
        for name in os.listdir(self.folder):
            if name.startswith("ckpt-") and name != f"ckpt-{tick}":
                shutil.rmtree(os.path.join(self.folder, name), ignore_errors=True)
        print(f"pimcloud: progress checkpoint at tick {tick} in {self.folder}", flush=True)
        self.started_tick = tick
        self.last = time.time()
        self.last_cpu = time.process_time()


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
    # The guest's `m5 switchcpu` requests: the first (its start signal) goes to the
    # detailed cores, the second (its wrap-up, once the requests are done) back.
    switches = 0
    if args.mode == "restore":
        m5.instantiate(args.checkpoint_dir)
        board._post_instantiate()
        if args.resume:
            switches = switches_made(args.checkpoint_dir)
        elif not args.fast_forward:
            start_event_queue()
            board.get_processor().switch_to_detailed()
            switches = 1
        if args.stats_period:
            m5.stats.periodicStatDump(m5.ticks.fromSeconds(
                m5.util.convert.toLatency(args.stats_period)))
    elif args.mode == "setup":
        m5.instantiate(args.checkpoint_dir)
        board._post_instantiate()
    else:
        m5.instantiate()
        board._post_instantiate()
    del root
    limit = (m5.ticks.fromSeconds(args.max_seconds)
             if getattr(args, "max_seconds", None) else m5.MaxTick)
    progress = Progress(args) if getattr(args, "progress_dir", None) else None
    while True:
        stop = limit if progress is None else min(limit, m5.curTick() + progress.slice_ticks)
        event = m5.simulate(stop - m5.curTick() if stop != m5.MaxTick else m5.MaxTick)
        cause = event.getCause()
        if progress is not None and cause == "simulate() limit reached" and \
                m5.curTick() < limit:
            progress.maybe_save(board, switches)
            continue
        print(f"pimcloud: exit at tick {m5.curTick()} ({time.time() - started:.0f} s host): "
              f"{cause}", flush=True)
        if cause == "checkpoint":
            if args.mode in ("boot", "setup"):
                target = args.checkpoint_dir if args.mode == "boot" else args.save_dir
                m5.checkpoint(target)
                print(f"pimcloud: checkpoint saved in {target}", flush=True)
                return 0
            continue  # a restored scenario asking again: ignore
        if cause == "switchcpu":
            processor = board.get_processor()
            # A set-up stays on the boot cores: its board has no caches for the others.
            if args.mode != "restore":
                continue
            switches += 1
            if switches == 1:
                processor.switch_to_detailed()
                print(f"pimcloud: switched to the detailed cores at tick {m5.curTick()}",
                      flush=True)
            elif switches == 2 and processor.is_detailed():
                # The measured part is over: its statistics end here in a dump of their
                # own, and the wrap-up (outputs, checks, results) runs at atomic speed.
                m5.stats.dump()
                m5.stats.reset()
                processor.switch_to_boot()
                print(f"pimcloud: back on the atomic cores at tick {m5.curTick()}",
                      flush=True)
                if progress is not None:
                    progress.save_soon()
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
