"""PimCacheHierarchy: per-cluster classic caches above one point of coherence.

Deep clusters: private L1I/L1D -> private L2 -> the cluster's shared L3 -> membus.
Shallow clusters (PIM cores): private L1I/L1D straight on the membus.  (Not on a
per-stack crossbar: in timing mode a coherent crossbar below another one with no cache
between them fails gem5's "pkt->isExpressSnoop()" assertion on the first snoop.)
Page-table walks go where a real walker's go: into the core's L2 bus (deep), or
through a small per-walker page-walk cache (shallow), so a TLB miss does not pay four
uncached DRAM accesses.  The membus snoop filter takes at most 256 caching ports; a
system whose PIM L1s and walk caches would exceed that (scale-16x64) walks uncached.
The membus (a SystemXBar) is the point of coherence; below it the memory system's
link router adds requester-aware SerDes latency.  With ``caches=False`` (the boot to
the checkpoint) every core talks to the membus directly, and device DMA crosses a
bridge instead of the I/O cache: a CPU port without a cache in front of it snoops the
membus but its requests are not "from a cache", so the snoop filter never records them,
and gem5 panics ("missing the original request") the first time the I/O cache answers
one with a line a disk DMA left in it.
Cache objects are named ``<cluster>_<level>`` so the router can tell who wrote back.
"""

from __future__ import annotations

from gem5.components.boards.abstract_board import AbstractBoard
from gem5.components.cachehierarchies.abstract_cache_hierarchy import AbstractCacheHierarchy
from gem5.components.cachehierarchies.classic.abstract_classic_cache_hierarchy import (
    AbstractClassicCacheHierarchy,
)
from gem5.components.cachehierarchies.classic.caches.mmu_cache import MMUCache
from gem5.utils.override import overrides
from m5.objects import (
    BadAddr,
    Bridge,
    Cache,
    L2XBar,
    SrcClockDomain,
    SystemXBar,
    VoltageDomain,
)

from ..topology import Topology
from ..topology.model import CacheLevel
from .plan import ClusterPlan, cluster_plans

MSHRS = {"l1": 16, "l2": 32, "l3": 64}
SNOOP_FILTER_PORTS = 256  # gem5's SnoopFilter::SnoopMask width
WALK_CACHE_SIZE = "8KiB"  # per walker, shallow clusters: the upper page-table levels


def make_cache(level: CacheLevel, kind: str) -> Cache:
    """A classic cache whose hit latency is the topology's, in its cluster's cycles."""
    return Cache(size=f"{level.size}B", assoc=level.assoc, tag_latency=level.latency_cycles,
                 data_latency=level.latency_cycles, response_latency=1,
                 mshrs=MSHRS[kind], tgts_per_mshr=20, writeback_clean=kind == "l2")


class PimCacheHierarchy(AbstractClassicCacheHierarchy):
    """Caches of every cluster of a topology.

    :param topology: the server.
    :param caches: build the caches; False connects cores straight to the membus.
    """

    def __init__(self, topology: Topology, caches: bool = True) -> None:
        AbstractClassicCacheHierarchy.__init__(self)
        self._plans = cluster_plans(topology)
        self._with_caches = caches
        # Cache latencies are in the cluster's cycles: each cluster's caches get its clock.
        self.cluster_clocks = [
            SrcClockDomain(clock=plan.clock, voltage_domain=VoltageDomain())
            for plan in self._plans
        ]
        self.membus = SystemXBar(width=64)
        self.membus.badaddr_responder = BadAddr()
        self.membus.default = self.membus.badaddr_responder.pio

    @overrides(AbstractClassicCacheHierarchy)
    def get_mem_side_port(self):  # type: ignore[no-untyped-def]
        return self.membus.mem_side_ports

    @overrides(AbstractClassicCacheHierarchy)
    def get_cpu_side_port(self):  # type: ignore[no-untyped-def]
        return self.membus.cpu_side_ports

    @overrides(AbstractCacheHierarchy)
    def incorporate_cache(self, board: AbstractBoard) -> None:
        board.connect_system_port(self.membus.cpu_side_ports)
        for _, port in board.get_memory().get_mem_ports():
            self.membus.mem_side_ports = port
        cores = board.get_processor().get_cores()
        self._walk_caches = self._caching_ports(walk_caches=True) <= SNOOP_FILTER_PORTS
        for plan in self._plans:
            cluster_cores = [cores[cpu_id] for cpu_id in plan.cpu_ids]
            if self._with_caches:
                self._build_cluster(plan, cluster_cores)
            else:
                for core in cluster_cores:
                    core.connect_icache(self.membus.cpu_side_ports)
                    core.connect_dcache(self.membus.cpu_side_ports)
                    core.connect_walker_ports(self.membus.cpu_side_ports,
                                              self.membus.cpu_side_ports)
        for core in cores:
            core.connect_interrupt(self.membus.mem_side_ports, self.membus.cpu_side_ports)
        if board.has_coherent_io() and not self._with_caches:
            self.iobridge = Bridge(delay="50ns", ranges=board.mem_ranges)
            self.iobridge.mem_side_port = self.membus.cpu_side_ports
            self.iobridge.cpu_side_port = board.get_mem_side_coherent_io_port()
        elif board.has_coherent_io():
            self.iocache = Cache(assoc=8, tag_latency=50, data_latency=50,
                                 response_latency=50, mshrs=20, size="1KiB",
                                 tgts_per_mshr=12, addr_ranges=board.mem_ranges)
            self.iocache.mem_side = self.membus.cpu_side_ports
            self.iocache.cpu_side = board.get_mem_side_coherent_io_port()

    def _caching_ports(self, walk_caches: bool) -> int:
        """Membus ports with a cache behind them: what its snoop filter must track."""
        ports = 1  # the I/O cache
        for plan in self._plans:
            if plan.caches.hierarchy == "shallow":
                ports += len(plan.cpu_ids) * (4 if walk_caches else 2)
            else:
                ports += 1  # the cluster's L3
        return ports

    def _build_cluster(self, plan: ClusterPlan, cores: list) -> None:  # type: ignore[type-arg]
        caches = plan.caches
        clock = self.cluster_clocks[self._plans.index(plan)]
        l1i = [make_cache(caches.l1i, "l1") for _ in cores]
        l1d = [make_cache(caches.l1d, "l1") for _ in cores]
        prefix = plan.cache_prefix
        setattr(self, f"{prefix}l1i", l1i)
        setattr(self, f"{prefix}l1d", l1d)
        if caches.hierarchy == "shallow":
            below = [self.membus] * len(cores)
            if not self._walk_caches:
                for core in cores:
                    core.connect_walker_ports(self.membus.cpu_side_ports,
                                              self.membus.cpu_side_ports)
            else:
                # One per walker (instruction, data): a cache has a single CPU-side port.
                walk_i = [MMUCache(size=WALK_CACHE_SIZE, writeback_clean=False)
                          for _ in cores]
                walk_d = [MMUCache(size=WALK_CACHE_SIZE, writeback_clean=False)
                          for _ in cores]
                for cache in (*walk_i, *walk_d):
                    cache.clk_domain = clock
                    cache.mem_side = self.membus.cpu_side_ports
                setattr(self, f"{prefix}walk_i", walk_i)
                setattr(self, f"{prefix}walk_d", walk_d)
                for core, icache_walk, dcache_walk in zip(cores, walk_i, walk_d, strict=True):
                    core.connect_walker_ports(icache_walk.cpu_side, dcache_walk.cpu_side)
        else:
            assert caches.l2 is not None and caches.l3 is not None
            l3 = make_cache(caches.l3, "l3")
            l3bus = L2XBar(clk_domain=clock)
            l3.cpu_side = l3bus.mem_side_ports
            l3.mem_side = self.membus.cpu_side_ports
            l3.clk_domain = clock
            setattr(self, f"{prefix}l3", l3)
            setattr(self, f"{prefix}l3bus", l3bus)
            l2 = [make_cache(caches.l2, "l2") for _ in cores]
            l2bus = [L2XBar(clk_domain=clock) for _ in cores]
            for cache, bus in zip(l2, l2bus, strict=True):
                cache.cpu_side = bus.mem_side_ports
                cache.mem_side = l3bus.cpu_side_ports
                cache.clk_domain = clock
            setattr(self, f"{prefix}l2", l2)
            setattr(self, f"{prefix}l2bus", l2bus)
            below = l2bus
            for core, bus in zip(cores, l2bus, strict=True):
                core.connect_walker_ports(bus.cpu_side_ports, bus.cpu_side_ports)
        for core, icache, dcache, bus in zip(cores, l1i, l1d, below, strict=True):
            icache.clk_domain = dcache.clk_domain = clock
            icache.mem_side = bus.cpu_side_ports
            dcache.mem_side = bus.cpu_side_ports
            core.connect_icache(icache.cpu_side)
            core.connect_dcache(dcache.cpu_side)
