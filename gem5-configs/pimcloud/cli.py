"""The ``pimcloud`` command: one entry point, one subcommand family per folder.

Each family lives beside its code as a module with ``register(subparsers)``; a family
whose module is absent (a partial install) is simply not offered.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from . import __version__

FAMILIES = (
    "pimcloud.topology.cli",
    "pimcloud.guest.cli",
    "pimcloud.gem5_cli",
    "pimcloud.workloads.cli",
    "pimcloud.runs.cli",
    "pimcloud.runs.checkpoint_store",
    "pimcloud.analysis.cli",
    "pimcloud.quickstart",
    "pimcloud.study_cli",
)


class UserError(Exception):
    """A problem with the user's input or environment: printed without a traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pimcloud",
        description="gem5 full-system PIM cloud servers: topologies, guest, runs, analysis",
    )
    parser.add_argument("--version", action="version", version=f"pimcloud {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in FAMILIES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.handler(args)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Unix tools do, and keep the
        # interpreter's last flush of stdout from failing again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports it
    except (UserError, ValueError, OSError) as error:
        # ValueError covers TopologyError and the other input errors, which name the fix.
        print(f"pimcloud {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"pimcloud {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
