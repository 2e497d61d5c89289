"""The guest kernel's command line, in gem5 (what pim_fs.py gives it, and what a boot
used) and in QEMU: the one home of both.

A checkpoint holds a kernel booted with one command line; a campaign may only reuse it
when that line is the one its own boot would give (runs/backends.py puts it in the key).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# gem5's TSC counts each CPU's own cycles (host and PIM clocks differ), so the guest
# keeps time on the board's HPET and treats the TSC as unstable.  gem5's CPUs need no
# INIT-to-SIPI settling time: without cpu_init_udelay=0 Linux busy-waits 10 ms of
# simulated time per secondary CPU (CPU family 0xf), which the atomic boot pays in full.
# idle=halt: with MWAIT idle Linux wakes a polling idle CPU by writing its flags instead
# of sending an IPI, and in this cache hierarchy that write does not always wake gem5's
# monitor; the woken task then waits for the idle CPU's next timer (tens of ms to a
# second of simulated time per fork or wake-up). HLT idle is woken by the IPI.
DEFAULT_KERNEL_ARGS = (
    "console=ttyS0 earlyprintk=ttyS0 tsc=unstable clocksource=hpet lpj=7999923 "
    "cpu_init_udelay=0 idle=halt "
    "root={root} rw init=/sbin/pimcloud-init pimcloud.backend=gem5"
)
DEFAULT_ROOT_DEVICE = "/dev/sda"
# QEMU's TSC is one clock for every vCPU: the guest keeps time on it (each test of the
# guest checks the clocksource is tsc).
QEMU_KERNEL_ARGS = ("console=ttyS0", "tsc=reliable", "clocksource=tsc", "pimcloud.backend=qemu")
CONSOLE_LOG = "board.pc.com_1.device"


def _option(args: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def expected_kernel_args(extra_args: Sequence[str] = ()) -> str:
    """The command line pim_fs.py gives the kernel with these extra arguments."""
    given = _option(extra_args, "--kernel-args")
    if given is not None:
        return " ".join(given.split())
    root = _option(extra_args, "--root-device") or DEFAULT_ROOT_DEVICE
    return DEFAULT_KERNEL_ARGS.format(root=root)


def booted_kernel_args(m5out: Path) -> str | None:
    """The command line the guest printed while booting (its console log in m5out)."""
    try:
        with (m5out / CONSOLE_LOG).open(errors="replace") as console:
            for line in console:
                _, found, args = line.partition("Command line: ")
                if found:
                    return " ".join(args.split())
    except OSError:
        return None
    return None
