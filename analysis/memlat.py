"""Memory latency per requester, from gem5 statistics.

Two views:

- :func:`estimated_memory_latency` is the runtime estimate of Shen and Li
  (MEMSYS 2020): ``latency = (c_cache + sum of outstanding miss cycles / misses) / f``.
  gem5 caches record, per requester, the summed latency of their misses
  (``demandMissLatency::<requester>``, in ticks) and the number of misses
  (``demandMisses::<requester>``): at the last-level cache those are exactly the
  outstanding LLC-miss cycles and the miss count of the formula, once ticks become
  core cycles through the core's clock period.  :func:`miss_latency_by_requester`
  applies it to one cache; :func:`estimate_by_cache` to every last-level cache of the
  board, each timed with its own cluster's clock (names from
  ``pimcloud.components.stat_names``, never guessed).
- :func:`memory_latency_by_target` reads the memory controllers' own per-requester
  totals (``requestorReadTotalLat`` / ``requestorReadAccesses``): the time from the
  controller's point of view, one row per requester and controller (target).
- :func:`device_memory_latency` reads the board's hardware counters (scons-extra
  PimCounters, ``cpuMisses`` / ``cpuOutstandingTicks``): what the guest's driver
  answers for a CPU over one dump, timed where requests reach memory (past the caches
  and the cluster's crossbar), so without the cache lookups that ``c_cache`` adds.
- :func:`memory_bandwidth` sums what every memory controller read and wrote per dump.
- :func:`controller_queues` says, per memory controller, how long a read waited in its
  queue and how long the queue was: where a placement's memory time goes.

gem5's statistics accumulate from a process's start, or its last reset, to each dump: a
run made in several processes (progress checkpoints) or with dumps that do not reset
writes windows of several dumps each. :func:`window_dumps` keeps the one that closes each
window, so that sums over dumps count every access once; :func:`detailed_dumps` keeps of
those the windows of the detailed cores (the measured part with its warm-up, not the
atomic set-up or wrap-up, whose accesses bypass the controllers' queues).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..components.stat_names import StatNames

DEFAULT_SIM_FREQ = 1e12  # gem5's tick rate when a dump does not say


def estimated_memory_latency(
    c_cache_cycles: float | np.ndarray,
    outstanding_cycles: float | np.ndarray,
    misses: float | np.ndarray,
    frequency_hz: float | np.ndarray,
) -> np.ndarray:
    """Average memory latency in ns: ``(c_cache + outstanding / misses) / f``.

    No misses gives NaN: there is no latency to estimate.
    """
    misses = np.asarray(misses, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        memory_cycles = np.where(misses > 0, np.asarray(outstanding_cycles) / misses, np.nan)
        latency: np.ndarray = (np.asarray(c_cache_cycles) + memory_cycles) / np.asarray(
            frequency_hz) * 1e9
    return latency


def _per_dump(stats: pd.DataFrame, stat: str, keys: list[str]) -> pd.Series:
    rows = stats[(stats["stat"] == stat) & (stats["subname"] == "")]
    return rows.set_index(keys)["value"]


def _keys(stats: pd.DataFrame) -> list[str]:
    return ["run_id", "dump"] if "run_id" in stats.columns else ["dump"]


def window_dumps(stats: pd.DataFrame) -> pd.DataFrame:
    """``stats`` with only the dumps that close a window of accumulation: each window
    runs from its start (``finalTick - simTicks``: a process's start or a reset) to its
    last dump, which holds the window's totals. A dump without ``finalTick`` and
    ``simTicks`` is taken to be a window of its own."""
    keys = _keys(stats)
    dumps = stats[keys].drop_duplicates()
    final, ticks = _per_dump(stats, "finalTick", keys), _per_dump(stats, "simTicks", keys)
    if final.empty or ticks.empty:
        return stats
    starts = (final - ticks).rename("start").reset_index()
    dumps = dumps.merge(starts, on=keys, how="left").merge(
        final.rename("final").reset_index(), on=keys, how="left")
    alone = dumps["start"].isna() | dumps["final"].isna()
    dumps.loc[alone, "start"] = -(dumps.loc[alone, "dump"].astype(float) + 1)
    dumps["final"] = dumps["final"].fillna(dumps["start"])
    closing = dumps.loc[dumps.groupby([*keys[:-1], "start"])["final"].idxmax(), keys]
    return stats.merge(closing, on=keys, how="inner")


def detailed_dumps(stats: pd.DataFrame, detailed: StatNames, boot: StatNames) -> pd.DataFrame:
    """The windows (:func:`window_dumps`) in which the detailed cores committed more
    instructions than the boot cores: the measured part, wherever it was cut. A window
    may begin on the boot cores (a restore that runs to the guest's start signal there):
    :func:`detailed_seconds` says how much of it the detailed cores ran."""
    windows = window_dumps(stats)
    keys = _keys(windows)

    def committed(names: StatNames) -> pd.Series:
        wanted = [f"{cpu}.core.commitStats0.numInsts" for cpu in names.cpus.values()]
        rows = windows[windows["stat"].isin(wanted) & (windows["subname"] == "")]
        return rows.groupby(keys, observed=True)["value"].sum()

    ran = pd.concat({"detailed": committed(detailed), "boot": committed(boot)},
                    axis=1).fillna(0.0)
    kept = ran.index[ran["detailed"] > ran["boot"]].to_frame(index=False)
    return windows.merge(kept, on=keys, how="inner")


def window_seconds(stats: pd.DataFrame) -> pd.Series:
    """Each dump's simulated seconds, exact (``simTicks / simFreq``; ``simSeconds`` is
    printed to 6 decimals), indexed by the dump's keys."""
    keys = _keys(stats)
    ticks = _per_dump(stats, "simTicks", keys)
    freq = _per_dump(stats, "simFreq", keys).reindex(ticks.index).fillna(DEFAULT_SIM_FREQ)
    seconds = stats.groupby(keys, observed=True)["sim_seconds"].first()
    return (ticks / freq).reindex(seconds.index).fillna(seconds).rename("seconds")


def detailed_seconds(stats: pd.DataFrame, detailed: StatNames) -> pd.Series:
    """Per dump, the simulated seconds the detailed cores were switched in: the longest
    any of them counted, busy or quiesced (``numCycles + quiesceCycles`` on its cluster's
    clock), at most the dump's own time. Without those statistics, the dump's time."""
    keys = _keys(stats)
    whole = window_seconds(stats)
    clocks = {c.cpu_id: c.clock for c in detailed.caches if c.cpu_id is not None}
    spans = []
    for cpu, prefix in detailed.cpus.items():
        if cpu not in clocks:
            continue
        cycles = (_per_dump(stats, f"{prefix}.core.numCycles", keys)
                  .add(_per_dump(stats, f"{prefix}.core.quiesceCycles", keys), fill_value=0))
        period = _per_dump(stats, clocks[cpu], keys)
        if len(cycles) and len(period):
            spans.append((cycles * period).rename(cpu))
    if not spans:
        return whole
    freq = _per_dump(stats, "simFreq", keys).reindex(whole.index).fillna(DEFAULT_SIM_FREQ)
    switched_in = (pd.concat(spans, axis=1).max(axis=1).reindex(whole.index) / freq)
    return switched_in.clip(upper=whole).fillna(whole).rename("seconds")


def miss_latency_by_requester(
    stats: pd.DataFrame,
    cache: str,
    c_cache_cycles: float,
    clock_period_stat: str = "system.cpu_clk_domain.clock",
    access: str = "demand",
) -> pd.DataFrame:
    """The LLC-miss latency estimate (outstanding-miss cycles over misses) per dump and
    requester at ``cache`` (e.g. ``system.l3``).

    ``c_cache_cycles`` is the processor's constant cache-lookup time in core cycles
    (for the paper's host core: L1 3 + L2 7 + L3 30 = 40).  The core frequency is
    ``simFreq`` over the clock period in ticks read from ``clock_period_stat``.
    Returns one row per dump (and run) and requester: misses, outstanding_cycles,
    frequency_hz, latency_ns.
    """
    keys = _keys(stats)
    misses_stat, latency_stat = f"{cache}.{access}Misses", f"{cache}.{access}MissLatency"
    wanted = stats[stats["stat"].isin([misses_stat, latency_stat])
                   & (stats["subname"] != "total")]
    if wanted.empty:
        raise ValueError(
            f"no {misses_stat} / {latency_stat} statistics; name the cache as its stats "
            "prefix, e.g. 'system.l3' or 'system.cpu0.dcache'"
        )
    table = wanted.pivot_table(index=[*keys, "subname"], columns="stat", values="value",
                               observed=True, aggfunc="first")
    table = table.rename(columns={misses_stat: "misses", latency_stat: "miss_ticks"})
    table = table.reset_index().rename(columns={"subname": "requester"})
    period = _per_dump(stats, clock_period_stat, keys).rename("period_ticks")
    if period.empty:
        raise ValueError(
            f"no {clock_period_stat} statistic to give the core frequency; pass the "
            "clock domain of the requesting cores"
        )
    freq = _per_dump(stats, "simFreq", keys).rename("sim_freq")
    table = table.merge(period.reset_index(), on=keys, how="left")
    table = table.merge(freq.reset_index(), on=keys, how="left") if len(freq) else \
        table.assign(sim_freq=DEFAULT_SIM_FREQ)
    table["sim_freq"] = table["sim_freq"].fillna(DEFAULT_SIM_FREQ)
    table["frequency_hz"] = table["sim_freq"] / table["period_ticks"]
    table["outstanding_cycles"] = table["miss_ticks"] / table["period_ticks"]
    table["latency_ns"] = estimated_memory_latency(
        c_cache_cycles, table["outstanding_cycles"], table["misses"], table["frequency_hz"]
    )
    table.insert(len(keys), "cache", cache)
    return table[[*keys, "cache", "requester", "misses", "outstanding_cycles",
                  "frequency_hz", "latency_ns"]]


def estimate_by_cache(stats: pd.DataFrame, names: StatNames,
                      last_level_only: bool = True) -> pd.DataFrame:
    """The LLC-miss latency estimate at each cache of the board ``names`` describes (its
    last-level caches by default: a deep cluster's L3, a shallow cluster's L1s), each with its own
    cluster's clock and, as ``c_cache``, the hit latencies down to that cache. One row per
    dump (and run), cache and requesting CPU; caches absent from ``stats`` are skipped."""
    present = set(stats["stat"].astype(str).unique())
    frames = []
    for cache in names.caches:
        if last_level_only and not cache.last_level:
            continue
        if f"{cache.path}.demandMisses" not in present or cache.clock not in present:
            continue
        table = miss_latency_by_requester(stats, cache.path, cache.lookup_cycles,
                                          clock_period_stat=cache.clock)
        table.insert(table.columns.get_loc("cache") + 1, "cluster", cache.cluster)
        table.insert(table.columns.get_loc("requester") + 1, "cpu",
                     table["requester"].map(names.cpu_of_requestor))
        table["c_cache_cycles"] = cache.lookup_cycles
        frames.append(table)
    if not frames:
        return pd.DataFrame(columns=["cache", "cluster", "requester", "cpu", "misses",
                                     "outstanding_cycles", "frequency_hz", "latency_ns",
                                     "c_cache_cycles"])
    return pd.concat(frames, ignore_index=True)


def device_memory_latency(stats: pd.DataFrame, counters: str) -> pd.DataFrame:
    """Per dump (and run) and CPU: the hardware counters' reads that reached memory
    (``misses``), the ticks they were outstanding, and their mean in ns. ``counters`` is
    the device's statistics prefix (``StatNames.counters``); no rows without it."""
    keys = _keys(stats)
    names = {f"{counters}.cpuMisses": "misses",
             f"{counters}.cpuOutstandingTicks": "outstanding_ticks"}
    wanted = stats[stats["stat"].isin(list(names)) & (stats["subname"] != "total")]
    if wanted.empty:
        return pd.DataFrame(columns=[*keys, "cpu", "misses", "outstanding_ticks", "memory_ns"])
    table = wanted.pivot_table(index=[*keys, "subname"], columns="stat", values="value",
                               observed=True, aggfunc="first").rename(columns=names)
    table = table.reset_index().rename(columns={"subname": "cpu"})
    table["cpu"] = table["cpu"].astype(str).astype(int)
    freq = _per_dump(stats, "simFreq", keys).rename("sim_freq").reset_index()
    table = table.merge(freq, on=keys, how="left") if len(freq) else \
        table.assign(sim_freq=DEFAULT_SIM_FREQ)
    table["sim_freq"] = table["sim_freq"].fillna(DEFAULT_SIM_FREQ)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["memory_ns"] = np.where(table["misses"] > 0, table["outstanding_ticks"]
                                      / table["misses"] / table["sim_freq"] * 1e9, np.nan)
    table.columns.name = None
    return table[[*keys, "cpu", "misses", "outstanding_ticks", "memory_ns"]]


def memory_bandwidth(stats: pd.DataFrame, controllers: tuple[str, ...]) -> pd.DataFrame:
    """Per dump (and run): bytes every controller in ``controllers`` (``StatNames.
    controllers``) read and wrote for the system, the dump's simulated seconds, and GB/s."""
    keys = _keys(stats)
    read = stats["stat"].isin([f"{c}.bytesReadSys" for c in controllers])
    written = stats["stat"].isin([f"{c}.bytesWrittenSys" for c in controllers])
    rows = stats[(read | written) & (stats["subname"] == "")].assign(
        field=np.where(read[read | written], "read_bytes", "written_bytes"))
    table = rows.pivot_table(index=keys, columns="field", values="value", aggfunc="sum",
                             observed=True)
    table = table.reindex(columns=["read_bytes", "written_bytes"], fill_value=0.0)
    seconds = stats.groupby(keys, observed=True)["sim_seconds"].first()
    table = table.join(seconds, how="left").reset_index()
    with np.errstate(divide="ignore", invalid="ignore"):
        table["gbps"] = np.where(table["sim_seconds"] > 0, (table["read_bytes"]
                                 + table["written_bytes"]) / table["sim_seconds"] / 1e9, np.nan)
    table.columns.name = None
    return table[[*keys, "read_bytes", "written_bytes", "sim_seconds", "gbps"]]


def memory_latency_by_target(stats: pd.DataFrame) -> pd.DataFrame:
    """Average read latency per dump, memory controller (target) and requester, in ns,
    from ``<ctrl>.requestorReadTotalLat`` over ``<ctrl>.requestorReadAccesses``."""
    keys = _keys(stats)
    stat_names = stats["stat"].astype(str)
    total = stat_names.str.endswith(".requestorReadTotalLat")
    count = stat_names.str.endswith(".requestorReadAccesses")
    wanted = stats[(total | count) & (stats["subname"] != "total")].copy()
    if wanted.empty:
        return pd.DataFrame(columns=[*keys, "target", "requester", "accesses", "latency_ns"])
    names = wanted["stat"].astype(str)
    wanted["target"] = names.str.rsplit(".", n=1).str[0]
    wanted["field"] = np.where(names.str.endswith("TotalLat"), "total_ticks", "accesses")
    table = wanted.pivot_table(index=[*keys, "target", "subname"], columns="field",
                               values="value", aggfunc="first", observed=True).reset_index()
    table = table.rename(columns={"subname": "requester"})
    freq = _per_dump(stats, "simFreq", keys).rename("sim_freq").reset_index()
    table = table.merge(freq, on=keys, how="left") if len(freq) else \
        table.assign(sim_freq=DEFAULT_SIM_FREQ)
    table["sim_freq"] = table["sim_freq"].fillna(DEFAULT_SIM_FREQ)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["latency_ns"] = np.where(
            table["accesses"] > 0,
            table["total_ticks"] / table["accesses"] / table["sim_freq"] * 1e9,
            np.nan,
        )
    table.columns.name = None
    return table[[*keys, "target", "requester", "accesses", "latency_ns"]]


# A controller's statistics that add up over windows. gem5's avgRdQLen is the queue
# length a read found on arrival, held until the next one and averaged over time.
_QUEUE_STATS = {"readBursts": "reads", "servicedByWrQ": "from_write_queue",
                "bytesReadSys": "read_bytes", "avgRdQLen": "read_queue",
                "dram.readBursts": "dram_reads",
                "dram.totQLat": "queue_ticks", "dram.totMemAccLat": "access_ticks"}
QUEUE_COLUMNS = ["controller", "memory", "reads", "read_gbps", "read_queue", "queue_ns",
                 "access_ns", "simulated_s"]
# What the campaign report keeps of a stats.txt for these tables.
QUEUE_STAT_PATTERN = (r"finalTick|simTicks|.*\.core\.(commitStats0\.numInsts|numCycles"
                      r"|quiesceCycles)|.*\.(readBursts|servicedByWrQ|bytesReadSys"
                      r"|bytesWrittenSys|avgRdQLen)|.*\.dram\.(totQLat|totMemAccLat)")


def controller_queues(stats: pd.DataFrame, controllers: Mapping[str, str],
                      per: str = "controller", seconds: pd.Series | None = None
                      ) -> pd.DataFrame:
    """Per memory controller (``controllers``: its statistics prefix -> the memory it
    serves, e.g. a stack), or per memory with ``per="memory"`` (a stack the x86 hole
    splits has two controllers), over every dump of one run's ``stats``, whose dumps
    must be windows (:func:`detailed_dumps`): the read bursts served, the read bandwidth,
    the read queue's mean length as reads found it (``read_queue``; a memory's
    controllers' added), and the mean time a read waited in the queue (``queue_ns``) and
    spent in all before its data (``access_ns``), both per read the DRAM served (the
    write queue's wait for nothing). Rates are over ``seconds`` per dump
    (:func:`detailed_seconds`; the dumps' own time by default). A statistic the dumps
    lack gives NaN, not 0."""
    if per not in ("controller", "memory"):
        raise ValueError(f"per={per!r}: give 'controller' or 'memory'")
    keys = _keys(stats)
    names = {f"{prefix}.{stat}": (prefix, column) for prefix in controllers
             for stat, column in _QUEUE_STATS.items()}
    rows = stats[stats["stat"].isin(list(names)) & (stats["subname"] == "")]
    if rows.empty:
        return pd.DataFrame(columns=QUEUE_COLUMNS)
    pairs = rows["stat"].astype(str).map(names)
    table = rows.assign(controller=pairs.str[0], field=pairs.str[1]).pivot_table(
        index=[*keys, "controller"], columns="field", values="value", aggfunc="first",
        observed=True).reset_index()
    table = table.reindex(columns=[*keys, "controller", *_QUEUE_STATS.values()])
    whole = window_seconds(stats)
    ran = (seconds if seconds is not None else whole).rename("ran_s")
    table = table.merge(whole.reset_index(), on=keys, how="left").merge(
        ran.reset_index(), on=keys, how="left")
    # The held queue length averaged over the whole dump, over the time reads could come.
    table["queue_length_s"] = table["read_queue"] * table["seconds"]
    # The reads behind totQLat: the DRAM's own count, else those the write queue did not serve.
    table["dram_reads"] = table["dram_reads"].fillna(
        table["reads"] - table["from_write_queue"].fillna(0.0))
    table["memory"] = table["controller"].map(controllers)
    total = table.groupby(per, sort=False).sum(numeric_only=True, min_count=1)
    # Each dump's time once per group, however many of its controllers wrote rows.
    times = table.drop_duplicates([per, *keys]).groupby(per, sort=False)["ran_s"].sum()
    time = times.reindex(total.index).where(lambda t: t > 0)
    freq = _per_dump(stats, "simFreq", keys)
    tick_ns = 1e9 / (float(freq.max()) if len(freq) else DEFAULT_SIM_FREQ)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = pd.DataFrame({
            "controller": (total.index if per == "controller" else
                           [", ".join(sorted(c for c, m in controllers.items() if m == memory))
                            for memory in total.index]),
            "memory": total.index if per == "memory" else total.index.map(controllers),
            "reads": total["reads"].to_numpy(),
            "read_gbps": (total["read_bytes"] / time / 1e9).to_numpy(),
            "read_queue": (total["queue_length_s"] / time).to_numpy(),
            "queue_ns": (total["queue_ticks"] / total["dram_reads"] * tick_ns).to_numpy(),
            "access_ns": (total["access_ticks"] / total["dram_reads"] * tick_ns).to_numpy(),
            "simulated_s": time.to_numpy()})
    return out[QUEUE_COLUMNS].reset_index(drop=True)
