"""The topology model: one TOML description of a PIM server, many emitters.

Pure Python (standard library only) so gem5's embedded interpreter can import it.
"""

from .acpi import AcpiTable, build_hmat, build_hpet, build_numa_tables, build_slit, build_srat
from .errors import TopologyError
from .interconnect import access_matrix, path_between, slit_distances
from .layout import Cpu, E820Entry, NumaNode, cpus, e820_entries, memory_ranges, numa_nodes
from .model import Topology
from .parse import load_topology, parse_topology, preset_names

__all__ = [
    "AcpiTable",
    "Cpu",
    "E820Entry",
    "NumaNode",
    "Topology",
    "TopologyError",
    "access_matrix",
    "build_hmat",
    "build_hpet",
    "build_numa_tables",
    "build_slit",
    "build_srat",
    "cpus",
    "e820_entries",
    "load_topology",
    "memory_ranges",
    "numa_nodes",
    "parse_topology",
    "path_between",
    "preset_names",
    "slit_distances",
]
