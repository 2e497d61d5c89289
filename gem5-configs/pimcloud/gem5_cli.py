"""``pimcloud gem5 check``: is $GEM5 usable with this bundle, and if not, why."""

from __future__ import annotations

import argparse

from .gem5_runner import Gem5Missing, require_usable_gem5


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("gem5", help="check and drive the gem5 given by $GEM5")
    commands = parser.add_subparsers(dest="gem5_command", metavar="ACTION", required=True)
    check = commands.add_parser("check", help="version, ISA and the scons-extra SimObjects")
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    try:
        info = require_usable_gem5()
    except Gem5Missing as problem:
        print(f"gem5 is not usable: {problem}")
        return 2
    print(f"{info.path}: gem5 {info.version}, ISAs {', '.join(info.isas)}, "
          f"holds {', '.join(info.present)}")
    return 0
