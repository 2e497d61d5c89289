"""Configurations the scons-extra SimObjects must refuse (and one table they must take).

    gem5.opt scons-extra/tests/bad_config.py CASE

bad-route, bad-targets: a PimLinkRouter with a broken route or too few target
locations; gem5 must stop at instantiation naming the problem. bad-checksum,
bad-length: the paper preset's SRAT from the topology model, corrupted. good-table:
every NUMA table of the paper preset, unchanged; prints "PASS good-table".
"""

import argparse
import sys
from pathlib import Path

import m5
from m5.objects import PimAcpiTable, Root
from router_two_stacks import build, link_id

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "gem5-configs"))

from pimcloud.topology import AcpiTable, build_numa_tables, load_topology  # noqa: E402


def paper_tables():
    return build_numa_tables(load_topology("paper"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "case", choices=["bad-route", "bad-targets", "bad-checksum", "bad-length", "good-table"]
    )
    case = parser.parse_args().case

    system, _ = build("latency")
    if case == "bad-route":
        # Route 1 -> 2 is cell 1*3+2; give it the host's link to stack 2 instead.
        links = [int(x) for x in system.router.route_links]
        offsets = [int(x) for x in system.router.route_offsets]
        links[offsets[5]] = link_id(0, 2)
        system.router.route_links = links
    elif case == "bad-targets":
        system.router.target_locations = [1]
    else:
        tables = paper_tables()
        srat = next(t for t in tables if t.signature == "SRAT")
        data = bytearray(srat.data)
        if case == "bad-checksum":
            data[-1] ^= 0x01
            tables = [AcpiTable(srat.signature, bytes(data))]
        elif case == "bad-length":
            tables = [AcpiTable(srat.signature, bytes(data) + b"\0")]
        system.acpi_tables = [
            PimAcpiTable(table_signature=t.signature, table_bytes=list(t.data)) for t in tables
        ]

    _root = Root(full_system=False, system=system)
    m5.instantiate()
    print("PASS " + case)


if __name__ in ("__main__", "__m5_main__"):
    main()
