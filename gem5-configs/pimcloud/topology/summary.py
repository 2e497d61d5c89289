"""A topology as a person reads it (``describe``) and as a program reads it (``to_dict``)."""

from __future__ import annotations

from typing import Any

from ..units import format_bandwidth, format_size, format_time_ps
from .interconnect import access_matrix, slit_distances
from .layout import cpus, e820_entries, memory_ranges, numa_nodes
from .model import Cluster, Topology


def _cluster_line(cluster: Cluster) -> str:
    assert cluster.core_type is not None and cluster.caches is not None
    core = cluster.core_type
    caches = cluster.caches
    levels = [f"L1I {format_size(caches.l1i.size)}", f"L1D {format_size(caches.l1d.size)}"]
    if caches.l2:
        levels.append(f"L2 {format_size(caches.l2.size)}")
    if caches.l3:
        levels.append(f"L3 {format_size(caches.l3.size)} shared")
    return (f"{cluster.cores} x {core.name} ({core.model}, {core.frequency_hz / 1e9:g} GHz), "
            f"{caches.hierarchy}: {', '.join(levels)}")


def _cpu_list(cpu_ids: tuple[int, ...]) -> str:
    if not cpu_ids:
        return "-"
    if list(cpu_ids) == list(range(cpu_ids[0], cpu_ids[-1] + 1)):
        return f"{cpu_ids[0]}-{cpu_ids[-1]}" if len(cpu_ids) > 1 else str(cpu_ids[0])
    return ",".join(map(str, cpu_ids))


def _matrix(title: str, labels: list[str], rows: list[list[str]],
            col_labels: list[str]) -> list[str]:
    width = max([len(x) for x in labels + col_labels] + [len(v) for r in rows for v in r]) + 2
    out = [title, " " * 10 + "".join(c.rjust(width) for c in col_labels)]
    for label, row in zip(labels, rows, strict=True):
        out.append(label.ljust(10) + "".join(v.rjust(width) for v in row))
    return out


def describe(topology: Topology) -> str:
    """A few screens of text: clusters, NUMA nodes, memory map, distances, latencies."""
    nodes = numa_nodes(topology)
    lines = [f"topology {topology.name}: {topology.description}", f"  from {topology.source}", ""]
    lines.append("clusters")
    for cluster in topology.clusters:
        lines.append(f"  {cluster.name:<8} {_cluster_line(cluster)}")
    if topology.stacks:
        link = topology.cpu_stack_link
        ss = topology.stack_stack_link
        lines.append(f"  links    cpu-stack {format_time_ps(link.latency)}, "
                     f"{format_bandwidth(link.bidirectional_bandwidth)} both ways; stack-stack "
                     f"{format_time_ps(ss.latency)}, {format_bandwidth(ss.bidirectional_bandwidth)}"
                     f" ({topology.stack_network})")
    if topology.far:
        far = topology.far.link
        lines.append(f"  links    host-far {format_time_ps(far.latency)}, "
                     f"{format_bandwidth(far.bidirectional_bandwidth)} both ways "
                     "(far memory: a CPU-less node)")
    lines += ["", f"NUMA nodes ({len(nodes)}; {len(cpus(topology))} CPUs, "
                  f"{format_size(topology.total_memory)} memory)"]
    lines.append(f"  {'node':<5}{'name':<8}{'cpus':<10}{'memory':<8}ranges")
    for node in nodes:
        ranges = " ".join(f"[{r.start:#x}, {r.end:#x})" for r in node.ranges) or "(memoryless)"
        memory = format_size(node.capacity) if node.capacity else "0"
        lines.append(f"  {node.node_id:<5}{node.name:<8}{_cpu_list(node.cpus):<10}{memory:<8}"
                     f"{ranges}")
    lines += ["", "E820 map"]
    for entry in e820_entries(topology):
        kind = "RAM" if entry.kind == 1 else "reserved"
        lines.append(f"  [{entry.start:#014x}, {entry.start + entry.size:#014x}) {kind}")
    labels = [f"{n.node_id} {n.name}" for n in nodes]
    lines.append("")
    lines += _matrix("SLIT distances (row = from node)", labels,
                     [[str(v) for v in row] for row in slit_distances(topology)], labels)
    cells = access_matrix(topology)
    initiators = sorted({c.initiator_node for c in cells})
    targets = sorted({c.target_node for c in cells})
    by_pair = {(c.initiator_node, c.target_node): c for c in cells}
    lines.append("")
    lines += _matrix("access latency, no caches (row = CPUs of node, column = memory of node)",
                     [labels[i] for i in initiators],
                     [[format_time_ps(by_pair[(i, t)].latency_ps) for t in targets]
                      for i in initiators], [labels[t] for t in targets])
    lines.append("")
    lines += _matrix("access bandwidth", [labels[i] for i in initiators],
                     [[format_bandwidth(by_pair[(i, t)].bandwidth) for t in targets]
                      for i in initiators], [labels[t] for t in targets])
    return "\n".join(lines)


def to_dict(topology: Topology) -> dict[str, Any]:
    """Everything derived, in plain JSON types."""
    return {
        "name": topology.name,
        "description": topology.description,
        "source": topology.source,
        "cpus": [
            {"cpu": c.cpu_id, "apic_id": c.apic_id, "cluster": c.cluster, "node": c.node,
             "core_type": c.core_type, "model": c.model, "frequency_hz": c.frequency_hz}
            for c in cpus(topology)
        ],
        "nodes": [
            {"node": n.node_id, "name": n.name, "cluster": n.cluster, "memory": n.memory_owner,
             "capacity": n.capacity, "cpus": list(n.cpus),
             "ranges": [[r.start, r.size] for r in n.ranges]}
            for n in numa_nodes(topology)
        ],
        "memory_ranges": [
            {"owner": r.owner, "start": r.start, "size": r.size} for r in memory_ranges(topology)
        ],
        "e820": [{"start": e.start, "size": e.size, "type": e.kind}
                 for e in e820_entries(topology)],
        "slit": slit_distances(topology),
        "access": [
            {"initiator": c.initiator_node, "target": c.target_node,
             "latency_ps": c.latency_ps, "bandwidth": c.bandwidth}
            for c in access_matrix(topology)
        ],
    }
