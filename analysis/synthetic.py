"""Writers of gem5-format stats.txt text, for tests, benchmarks and demo campaigns.

The layout follows gem5's text output (src/base/stats/text.cc): the name padded
to 40 columns, the value right-aligned in 12, pdf and cdf in 10 each, then
``# description (Unit)``; integral values print without decimals, others with
six, NaN as ``nan``.  Nothing here is a measurement: these are shapes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np
from pimcloud.components.stat_names import stat_names
from pimcloud.stats_file import BEGIN_MARKER, END_MARKER
from pimcloud.topology import Topology


def format_value(value: float) -> str:
    """A value as gem5's ValueToString prints it."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == round(value):
        return f"{value:.0f}"
    return f"{value:.6f}"


def stat_line(
    name: str,
    value: float,
    description: str = "",
    unit: str = "",
    pdf: float | None = None,
    cdf: float | None = None,
) -> str:
    """One line of stats.txt, without its newline."""
    pdf_text = "" if pdf is None else f"{pdf * 100:.2f}%"
    cdf_text = "" if cdf is None else f"{cdf * 100:.2f}%"
    text = f"{name:<40} {format_value(value):>12} {pdf_text:>10} {cdf_text:>10}"
    if description:
        text += f" # {description}"
    if unit:
        text += f" ({unit})"
    return text


def dump_text(lines: Iterable[str]) -> str:
    """One dump, framed as gem5 frames it (a blank line before each marker)."""
    body = "".join(line + "\n" for line in lines)
    return f"\n{BEGIN_MARKER}\n{body}\n{END_MARKER}\n"


def vector_lines(
    name: str, values: Iterable[float], subnames: Iterable[str] | None, description: str,
    unit: str, with_total: bool = True,
) -> Iterator[str]:
    """A vector's elements with pdf/cdf columns, then ``::total``."""
    vals = list(values)
    subs = [str(i) for i in range(len(vals))] if subnames is None else list(subnames)
    total = sum(vals)
    running = 0.0
    for sub, value in zip(subs, vals, strict=True):
        running += value
        pdf = value / total if total else None
        cdf = running / total if total else None
        yield stat_line(f"{name}::{sub}", value, description, unit, pdf, cdf)
    if with_total:
        yield stat_line(f"{name}::total", total, description, unit)


def histogram_lines(
    name: str, samples: np.ndarray, bucket_size: int, buckets: int, description: str,
    unit: str, distribution: bool = False,
) -> Iterator[str]:
    """A histogram (or, with ``distribution``, a Dist with under/overflows) of samples."""
    count = len(samples)
    mean = float(samples.mean()) if count else math.nan
    stdev = float(samples.std(ddof=1)) if count > 1 else math.nan
    yield stat_line(f"{name}::samples", count, description, unit)
    yield stat_line(f"{name}::mean", mean, description, unit)
    if not distribution:
        positive = samples[samples > 0]
        gmean = float(np.exp(np.log(positive).mean())) if len(positive) else math.nan
        yield stat_line(f"{name}::gmean", gmean, description, unit)
    yield stat_line(f"{name}::stdev", stdev, description, unit)
    edges = np.arange(buckets + 1) * bucket_size
    counts = np.histogram(np.clip(samples, 0, edges[-1] - 1), bins=edges)[0]
    under = int((samples < 0).sum()) if distribution else 0
    over = int((samples >= edges[-1]).sum()) if distribution else 0
    if distribution:
        counts = np.histogram(samples, bins=edges)[0]
    total = int(counts.sum()) + under + over
    running = 0
    if distribution:
        running += under
        yield stat_line(f"{name}::underflows", under, description, unit,
                        under / total if total else None, running / total if total else None)
    for i, bucket_count in enumerate(counts.tolist()):
        low, high = int(edges[i]), int(edges[i + 1] - 1)
        label = f"{low}-{high}" if high > low else f"{low}"
        running += bucket_count
        yield stat_line(f"{name}::{label}", bucket_count, description, unit,
                        bucket_count / total if total else None,
                        running / total if total else None)
    if distribution:
        running += over
        yield stat_line(f"{name}::overflows", over, description, unit,
                        over / total if total else None, running / total if total else None)
        yield stat_line(f"{name}::min_value", float(samples.min()) if count else math.nan,
                        description, unit)
        yield stat_line(f"{name}::max_value", float(samples.max()) if count else math.nan,
                        description, unit)
    yield stat_line(f"{name}::total", total, description, unit)


def server_dump_lines(
    rng: np.random.Generator,
    dump: int,
    host_cpus: int = 4,
    pim_cpus: int = 16,
    interval_s: float = 0.1,
    cpu_vector: int = 0,
) -> Iterator[str]:
    """A plausible dump of the paper's server: host cores, PIM cores, caches, stacks.

    ``cpu_vector`` adds a vector of that many elements per host core, to make huge
    vectors.
    """
    freq = 1e12
    ticks = interval_s * freq
    yield stat_line("simSeconds", interval_s, "Number of seconds simulated", "Second")
    yield stat_line("simTicks", ticks, "Number of ticks simulated", "Tick")
    yield stat_line("finalTick", ticks * (dump + 1), "Number of ticks from beginning of "
                    "simulation (restored from checkpoints and never reset)", "Tick")
    yield stat_line("simFreq", freq, "The number of ticks per simulated second",
                    "(Tick/Second)")
    yield stat_line("hostSeconds", round(rng.uniform(10, 100), 2),
                    "Real time elapsed on the host", "Second")
    yield stat_line("hostMemory", 4915616, "Number of bytes of host memory used", "Byte")
    yield stat_line("system.cpu_clk_domain.clock", 417, "Clock period in ticks", "Tick")
    yield stat_line("system.pim_clk_domain.clock", 500, "Clock period in ticks", "Tick")
    requestors = [f"system.cpu{i}.data" for i in range(host_cpus)] + [
        f"system.pim_cpus{i}.data" for i in range(pim_cpus)
    ]
    groups = [("cpu", host_cpus, 2.4e9), ("pim_cpus", pim_cpus, 2e9)]
    for group, count, hz in groups:
        for i in range(count):
            base = f"system.{group}{i}"
            cycles = interval_s * hz
            insts = float(rng.integers(1, int(cycles)))
            yield stat_line(f"{base}.numCycles", cycles, "Number of cpu cycles simulated",
                            "Cycle")
            yield stat_line(f"{base}.committedInsts", insts,
                            "Number of instructions committed", "Count")
            yield stat_line(f"{base}.ipc", insts / cycles, "IPC: instructions per cycle",
                            "(Count/Cycle)")
            yield from vector_lines(
                f"{base}.commit.committedInstType_0",
                rng.integers(0, 10000, 4).astype(float),
                ["No_OpClass", "IntAlu", "MemRead", "MemWrite"],
                "Class of committed instruction", "Count",
            )
            misses = float(rng.integers(0, 100000))
            latency = misses * rng.uniform(20_000, 80_000)
            yield stat_line(f"{base}.dcache.demandMisses::{base}.data", misses,
                            "number of overall misses", "Count")
            yield stat_line(f"{base}.dcache.demandMisses::total", misses,
                            "number of overall misses", "Count")
            yield stat_line(f"{base}.dcache.demandMissLatency::{base}.data", latency,
                            "number of overall miss ticks", "Tick")
            yield stat_line(f"{base}.dcache.demandMissLatency::total", latency,
                            "number of overall miss ticks", "Tick")
            yield stat_line(f"{base}.dcache.demandAvgMissLatency::{base}.data",
                            latency / misses if misses else math.nan,
                            "average overall miss latency in ticks", "(Tick/Count)")
            if group == "cpu" and cpu_vector:
                yield from vector_lines(f"{base}.big", rng.integers(0, 9, cpu_vector),
                                        None, "A large per-core vector", "Count")
    yield from histogram_lines(
        "system.work_item_type0", rng.exponential(4000, 50), 500, 20,
        "Run time stat forwork_item_type0", "Tick",
    )
    for stack in range(2):
        ctrl = f"system.stacks{stack}.mem_ctrl"
        for requestor in requestors:
            accesses = float(rng.integers(0, 50000))
            yield stat_line(f"{ctrl}.requestorReadAccesses::{requestor}", accesses,
                            "Per-requestor read accesses", "Count")
            yield stat_line(f"{ctrl}.requestorReadTotalLat::{requestor}",
                            accesses * rng.uniform(15_000, 40_000),
                            "Per-requestor read total memory access latency", "Tick")
        yield from histogram_lines(
            f"{ctrl}.rdQLenPdf", rng.poisson(3, 400).astype(float), 1, 32,
            "What read queue length does an incoming req see", "Count",
        )
        yield from histogram_lines(
            f"{ctrl}.readLatencyDist", rng.normal(30_000, 8_000, 300), 10_000, 10,
            "Read latency distribution", "Tick", distribution=True,
        )


def server_stats_text(dumps: int, seed: int = 0, **kwargs: int | float) -> str:
    """A whole stats.txt of ``dumps`` dumps of :func:`server_dump_lines`."""
    rng = np.random.default_rng(seed)
    return "".join(
        dump_text(server_dump_lines(rng, dump, **kwargs))  # type: ignore[arg-type]
        for dump in range(dumps)
    )


def controller_window_dump(topology: Topology, final: float, ticks: float, detailed: float,
                           boot: float, reads: float, queue_ticks: float,
                           queue_length: float, switched_in: float | None = None) -> str:
    """One dump of ``topology``'s board as its statistics name it: a window from
    ``final - ticks`` to ``final``, the instructions the first detailed and the first boot
    core committed, and the same reads at every memory controller (each waiting
    ``queue_ticks / reads`` in the queue, 15 ns more to data); with ``switched_in``, the
    ticks the first detailed core counted (busy and quiesced, on a 500-tick clock)."""
    names, boot_names = stat_names(topology), stat_names(topology, "boot")
    lines = [stat_line("simSeconds", ticks / 1e12), stat_line("simTicks", ticks),
             stat_line("finalTick", final), stat_line("simFreq", 1e12)]
    if switched_in is not None:
        first = next(iter(names.cpus))
        clock = next(c.clock for c in names.caches if c.cpu_id == first)
        lines += [stat_line(clock, 500),
                  stat_line(f"{names.cpus[first]}.core.numCycles", switched_in / 500 / 4),
                  stat_line(f"{names.cpus[first]}.core.quiesceCycles",
                            switched_in / 500 * 3 / 4)]
    for cpus, value in ((names.cpus, detailed), (boot_names.cpus, boot)):
        lines += [stat_line(f"{cpu}.core.commitStats0.numInsts", value if i == 0 else 0)
                  for i, cpu in enumerate(cpus.values())]
    for controller in names.controllers:
        lines += [stat_line(f"{controller}.readBursts", reads),
                  stat_line(f"{controller}.servicedByWrQ", 0),
                  stat_line(f"{controller}.bytesReadSys", reads * 64),
                  stat_line(f"{controller}.avgRdQLen", queue_length),
                  stat_line(f"{controller}.dram.totQLat", queue_ticks),
                  stat_line(f"{controller}.dram.totMemAccLat", queue_ticks + reads * 15e3)]
    return dump_text(lines)
