"""QEMU command-line pieces that give a guest the topology's CPUs and NUMA layout.

QEMU places RAM node by node in node order, below 4 GiB up to ``max-ram-below-4g`` and
above 4 GiB after that; with that set to 3 GiB its map equals ``layout.memory_ranges``,
so the same SRAT fits both QEMU and gem5.  HMAT (``-machine hmat=on``) is left out:
QEMU requires every node to name an initiator, which memory-only stacks do not have.
"""

from __future__ import annotations

from .interconnect import slit_distances
from .layout import X86_HOLE_START, cpus, numa_nodes
from .model import Topology


def _cpu_ranges(cpu_ids: tuple[int, ...]) -> list[str]:
    spans: list[str] = []
    for cpu_id in cpu_ids:
        if spans and spans[-1].split("-")[-1] == str(cpu_id - 1):
            spans[-1] = f"{spans[-1].split('-')[0]}-{cpu_id}"
        else:
            spans.append(str(cpu_id))
    return spans


def machine_args(topology: Topology) -> list[str]:
    """-machine/-m/-smp: the CPU count and a memory map equal to the model's."""
    total_mib = topology.total_memory >> 20
    count = len(cpus(topology))
    return [
        "-machine", f"pc,max-ram-below-4g={X86_HOLE_START >> 20}M",
        "-m", f"{total_mib}M",
        "-smp", f"{count},sockets=1,cores={count},threads=1",
    ]


def numa_args(topology: Topology) -> list[str]:
    """-object/-numa options: one node per NUMA node, its CPUs and memory, and the SLIT."""
    args: list[str] = []
    for node in numa_nodes(topology):
        spec = f"node,nodeid={node.node_id}"
        if node.capacity:
            args += ["-object", f"memory-backend-ram,id=mem{node.node_id},"
                                f"size={node.capacity >> 20}M"]
            spec += f",memdev=mem{node.node_id}"
        for span in _cpu_ranges(node.cpus):
            spec += f",cpus={span}"
        args += ["-numa", spec]
    matrix = slit_distances(topology)
    for a, row in enumerate(matrix):
        for b, value in enumerate(row):
            if a != b:
                args += ["-numa", f"dist,src={a},dst={b},val={value}"]
    return args
