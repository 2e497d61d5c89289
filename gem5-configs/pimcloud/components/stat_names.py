"""The names gem5 gives the board's statistics, derived from a topology without gem5.

The one home of that contract: the board (board.py, cache_hierarchy.py, processor.py)
builds SimObjects from the plans in plan.py, gem5 names them after their attributes, and
analysis reads stats.txt through these names instead of guessing. gem5 names a list's
members ``attr0``, ``attr1``, ... and a one-member list ``attr`` in statistic paths, but
pads the index to the list's width in requestor names (the ``::`` subnames of per-
requestor statistics): ``board.processor.detailed_cores4`` makes its requests as
``processor.detailed_cores04.core.data``. The cache hierarchy's cluster clocks are
``cluster_clocks<i>`` in the topology's cluster order.
"""

from __future__ import annotations

from dataclasses import dataclass

from pimcloud.topology import Topology

from .plan import (
    BOARD_NAME,
    ClusterPlan,
    cluster_plans,
    cores_attribute,
    memory_controller_plans,
    vector_element_name,
)

HIERARCHY = f"{BOARD_NAME}.cache_hierarchy"
PROCESSOR = f"{BOARD_NAME}.processor"
MEMORY = f"{BOARD_NAME}.memory"


def member(attribute: str, index: int, count: int) -> str:
    """gem5's name of the ``index``-th SimObject of a list attribute of ``count``."""
    return attribute if count == 1 else f"{attribute}{index}"


@dataclass(frozen=True)
class CacheStats:
    """One cache of the board: its statistics prefix and what times it."""

    path: str  # "board.cache_hierarchy.stack0_l1d3"
    cluster: str
    level: str  # l1i, l1d, l2, l3
    cpu_id: int | None  # the core of a private cache; None for a cluster's shared L3
    clock: str  # the clock-period statistic of the cluster's clock domain (ticks)
    lookup_cycles: int  # hit latencies from L1D down to this level, in the cluster's cycles
    last_level: bool  # misses here go to memory (seed 003's LLC)


@dataclass(frozen=True)
class StatNames:
    cpus: dict[int, str]  # CPU id -> "board.processor.detailed_cores12"
    requestors: dict[int, str]  # CPU id -> "processor.detailed_cores04.core" (+ .data, .inst)
    clocks: dict[str, str]  # cluster -> its clock-period statistic
    caches: tuple[CacheStats, ...]
    # "board.memory.mem_ctrls0", in the plans' order: pass the topology as gem5 ran it
    # (divided memory changes how many ranges, and so controllers, there are).
    controllers: tuple[str, ...]
    router: str = f"{MEMORY}.router"  # the scons-extra PimLinkRouter
    counters: str = f"{BOARD_NAME}.counters"  # the scons-extra PimCounters, when present

    def last_level_cache(self, cpu_id: int) -> CacheStats:
        """The cache a CPU's data misses leave the cluster through: its cluster's shared
        L3 (deep), or its own L1D (shallow)."""
        return next(c for c in self.caches if c.last_level and c.level != "l1i"
                    and c.cpu_id in (None, cpu_id)
                    and (c.cpu_id is not None or cpu_id in self._cluster_cpus(c.cluster)))

    def _cluster_cpus(self, cluster: str) -> set[int]:
        return {c.cpu_id for c in self.caches if c.cluster == cluster and c.cpu_id is not None}

    def cpu_of_requestor(self, subname: str) -> int | None:
        """The CPU whose core made requests named ``subname`` ("...cores04.core.data")."""
        return next((cpu for cpu, name in self.requestors.items()
                     if subname == name or subname.startswith(name + ".")), None)


def _cluster_caches(plan: ClusterPlan, clock: str) -> list[CacheStats]:
    caches = plan.caches
    count = len(plan.cpu_ids)
    prefix = f"{HIERARCHY}.{plan.cache_prefix}"
    deep = caches.hierarchy != "shallow"
    out = []
    for index, cpu in enumerate(plan.cpu_ids):
        l1 = caches.l1d.latency_cycles
        out.append(CacheStats(member(f"{prefix}l1i", index, count), plan.name, "l1i", cpu,
                              clock, caches.l1i.latency_cycles, not deep))
        out.append(CacheStats(member(f"{prefix}l1d", index, count), plan.name, "l1d", cpu,
                              clock, l1, not deep))
        if deep:
            assert caches.l2 is not None
            out.append(CacheStats(member(f"{prefix}l2", index, count), plan.name, "l2", cpu,
                                  clock, l1 + caches.l2.latency_cycles, False))
    if deep:
        assert caches.l2 is not None and caches.l3 is not None
        out.append(CacheStats(f"{prefix}l3", plan.name, "l3", None, clock,
                              caches.l1d.latency_cycles + caches.l2.latency_cycles
                              + caches.l3.latency_cycles, True))
    return out


def stat_names(topology: Topology, role: str = "detailed") -> StatNames:
    """Every statistic prefix the board writes for ``topology`` (``role``: the cores that
    run the measured part, ``detailed``, or the ``boot`` cores)."""
    plans = cluster_plans(topology)
    total = sum(len(p.cpu_ids) for p in plans)
    cpus = {cpu: f"{PROCESSOR}.{member(cores_attribute(role), cpu, total)}"
            for p in plans for cpu in p.cpu_ids}
    requestors = {cpu: f"processor.{vector_element_name(cores_attribute(role), cpu, total)}.core"
                  for cpu in cpus}
    clocks = {p.name: f"{HIERARCHY}.{member('cluster_clocks', i, len(plans))}.clock"
              for i, p in enumerate(plans)}
    caches = tuple(c for p in plans for c in _cluster_caches(p, clocks[p.name]))
    return StatNames(cpus, requestors, clocks, caches, tuple(controller_memories(topology)))


def controller_memories(topology: Topology) -> dict[str, str]:
    """Each memory controller's statistics prefix -> the memory it serves (a stack's or
    the host's name), for ``topology`` as gem5 ran it (memory divided as it was)."""
    plans = memory_controller_plans(topology)
    return {f"{MEMORY}.{member('mem_ctrls', i, len(plans))}": plan.owner
            for i, plan in enumerate(plans)}
