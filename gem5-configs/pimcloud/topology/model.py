"""The validated description of a PIM server, as parsed from TOML.

These are plain frozen dataclasses with every quantity in base units (bytes, Hz,
picoseconds, bytes per second).  Everything the rest of the project needs (CPU list,
NUMA nodes, memory map, ACPI tables, QEMU arguments) is derived from a ``Topology``
by the functions in ``layout``, ``interconnect``, ``acpi`` and ``qemu``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

CoreModel = Literal["o3", "minor", "timing", "atomic"]
Hierarchy = Literal["deep", "shallow"]
StackNetwork = Literal["full", "ring", "chain"]

HOST_CLUSTER = "host"
# The memory owner, location and NUMA node name of a far-memory tier.
FAR_OWNER = "far"


def stack_cluster(index: int) -> str:
    """The cluster name of stack ``index`` ("stack0", "stack1", ...)."""
    return f"stack{index}"


@dataclass(frozen=True)
class BranchPredictor:
    """Two-level local predictor: ``bhsr_entries`` history registers of ``bhsr_bits``
    bits index ``pht_entries`` saturating counters of ``pht_bits`` bits (Table I)."""

    bhsr_entries: int = 1024
    bhsr_bits: int = 18
    pht_entries: int = 4096
    pht_bits: int = 2


@dataclass(frozen=True)
class CoreType:
    """A kind of core: gem5 CPU model, clock, and the out-of-order sizes O3 uses."""

    name: str
    model: CoreModel
    frequency_hz: int
    issue_width: int = 4
    iq_entries: int = 60
    rob_entries: int = 192
    lq_entries: int = 72
    sq_entries: int = 42
    branch_predictor: BranchPredictor = field(default_factory=BranchPredictor)
    description: str = ""

    @property
    def cycle_ps(self) -> float:
        return 1e12 / self.frequency_hz


@dataclass(frozen=True)
class CacheLevel:
    """One cache level: size in bytes, associativity, hit latency in core cycles."""

    size: int
    assoc: int
    latency_cycles: int


@dataclass(frozen=True)
class CacheHierarchy:
    """Deep = private L1I/L1D + private L2 + shared L3; shallow = private L1s only."""

    hierarchy: Hierarchy
    l1i: CacheLevel
    l1d: CacheLevel
    l2: CacheLevel | None = None
    l3: CacheLevel | None = None


@dataclass(frozen=True)
class DramTiming:
    """DRAM device timing in picoseconds plus the controller's fixed pipeline latency."""

    tck: int
    trcd: int
    tcl: int
    trp: int
    tras: int
    twr: int
    trefi: int
    frontend_latency: int
    backend_latency: int
    peak_bandwidth: int

    @property
    def nominal_access_ps(self) -> int:
        """A closed-row read: activate + CAS + controller front and back end."""
        return self.trcd + self.tcl + self.frontend_latency + self.backend_latency


@dataclass(frozen=True)
class Link:
    """A SerDes link: one-way latency and total bandwidth of both directions."""

    latency: int
    bidirectional_bandwidth: int

    @property
    def bandwidth_per_direction(self) -> int:
        return self.bidirectional_bandwidth // 2


@dataclass(frozen=True)
class Cluster:
    """A group of identical cores sharing a cache hierarchy: the host socket or one stack."""

    name: str
    cores: int
    core_type: CoreType | None
    caches: CacheHierarchy | None


@dataclass(frozen=True)
class Stack:
    """A 3D memory stack: its DRAM and the PIM cores on its logic die."""

    index: int
    capacity: int
    dram: DramTiming
    cluster: Cluster


@dataclass(frozen=True)
class DdrTier:
    """A conventional DDR capacity tier attached to the host socket (NUMA node 0)."""

    capacity: int
    dram: DramTiming


@dataclass(frozen=True)
class FarTier:
    """Far memory: a CPU-less NUMA node behind the host socket over its own link
    (persistent memory or CXL-attached DRAM), the slow tier of seed 004's servers. It is
    the last NUMA node; cores reach it through the host socket."""

    capacity: int
    dram: DramTiming
    link: Link


@dataclass(frozen=True)
class MemoryRange:
    """An explicit physical range for one NUMA memory owner ("ddr", "stack0", ...)."""

    owner: str
    start: int
    size: int

    @property
    def end(self) -> int:
        return self.start + self.size


@dataclass(frozen=True)
class Topology:
    """A whole PIM server; ``host`` may have zero cores (PIM-only systems)."""

    name: str
    description: str
    host: Cluster
    stacks: tuple[Stack, ...]
    ddr: DdrTier | None
    cpu_stack_link: Link
    stack_stack_link: Link
    stack_network: StackNetwork
    # Directed per-pair one-way latencies replacing hops x link latency: (i, j, ps).
    stack_pair_latency: tuple[tuple[int, int, int], ...] = ()
    explicit_ranges: tuple[MemoryRange, ...] = ()
    source: str = "<memory>"
    far: FarTier | None = None

    @property
    def clusters(self) -> tuple[Cluster, ...]:
        """Clusters with at least one core, host first then stacks in order."""
        all_clusters = (self.host, *(stack.cluster for stack in self.stacks))
        return tuple(c for c in all_clusters if c.cores > 0)

    @property
    def total_memory(self) -> int:
        ddr = self.ddr.capacity if self.ddr else 0
        far = self.far.capacity if self.far else 0
        return ddr + far + sum(stack.capacity for stack in self.stacks)

    def key_text(self) -> str:
        """The model's content as text, for checkpoint keys: not where its file is (a
        checkout elsewhere shares keys), and without fields added later at their default
        (``far``), so checkpoints made before those existed keep their keys."""
        text = repr(replace(self, source=""))
        later = ", far=None)"
        return text[:-len(later)] + ")" if text.endswith(later) else text

    def with_memory_divided(self, divisor: int) -> Topology:
        """The same server with every capacity divided by ``divisor`` (for quick QEMU
        boots); explicit memory ranges are dropped because they no longer fit."""
        if divisor < 1:
            raise ValueError("memory divisor must be at least 1")
        stacks = tuple(replace(s, capacity=s.capacity // divisor) for s in self.stacks)
        ddr = replace(self.ddr, capacity=self.ddr.capacity // divisor) if self.ddr else None
        far = replace(self.far, capacity=self.far.capacity // divisor) if self.far else None
        name = self.name if divisor == 1 else f"{self.name}-mem-div{divisor}"
        return replace(self, stacks=stacks, ddr=ddr, far=far, explicit_ranges=(), name=name)
