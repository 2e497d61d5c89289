"""``pimcloud topology list|show|validate|tables``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .acpi import build_numa_tables
from .parse import load_topology, preset_names
from .summary import describe, to_dict


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("topology", help="list, show, validate topologies; write "
                                   "their ACPI NUMA tables")
    commands = parser.add_subparsers(dest="topology_command", metavar="ACTION", required=True)

    listing = commands.add_parser("list", help="the shipped presets")
    listing.set_defaults(handler=_list)

    show = commands.add_parser("show", help="nodes, CPUs, memory map, distances, latencies")
    show.add_argument("topology", help="preset name or path to a .toml file")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument("--mem-divisor", type=int, default=1,
                      help="divide every capacity (as the QEMU backend does)")
    show.set_defaults(handler=_show)

    validate = commands.add_parser("validate", help="check topologies; exit 2 on the first error")
    validate.add_argument("topologies", nargs="+", help="preset names or .toml paths")
    validate.set_defaults(handler=_validate)

    tables = commands.add_parser("tables", help="write srat.aml, slit.aml, hmat.aml")
    tables.add_argument("topology")
    tables.add_argument("--out", required=True, type=Path, help="folder to write into")
    tables.add_argument("--mem-divisor", type=int, default=1)
    tables.set_defaults(handler=_tables)


def _list(args: argparse.Namespace) -> int:
    for name in preset_names():
        topology = load_topology(name)
        print(f"{name:<12} {topology.description}")
    return 0


def _show(args: argparse.Namespace) -> int:
    topology = load_topology(args.topology).with_memory_divided(args.mem_divisor)
    if args.json:
        json.dump(to_dict(topology), sys.stdout, indent=1)
        print()
    else:
        print(describe(topology))
    return 0


def _validate(args: argparse.Namespace) -> int:
    for name in args.topologies:
        topology = load_topology(name)
        print(f"{name}: ok ({topology.name})")
    return 0


def _tables(args: argparse.Namespace) -> int:
    from ..atomic import atomic_write_bytes

    topology = load_topology(args.topology).with_memory_divided(args.mem_divisor)
    args.out.mkdir(parents=True, exist_ok=True)
    for table in build_numa_tables(topology):
        target = args.out / table.filename
        atomic_write_bytes(target, table.data)
        print(f"{target} ({len(table.data)} bytes)")
    return 0
