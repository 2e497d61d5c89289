"""The board's statistic names (pimcloud.components.stat_names) against a real stats.txt
of the bundle's own board, and the latency estimate that reads them.

fixtures/paper_detailed_dump.txt.gz is one 10 ms dump of a real gem5 run of `paper` with
memory / 8 (runs/campaigns/churn-gem5.toml, detailed cores), cut to the statistics these
tests read (fixtures/README.md says how)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pimcloud.analysis import memlat
from pimcloud.components.stat_names import stat_names
from pimcloud.stats_file import parse_stats
from pimcloud.topology import load_topology

FIXTURE = Path(__file__).parent / "fixtures" / "paper_detailed_dump.txt.gz"


@pytest.fixture(scope="module")
def stats():  # type: ignore[no-untyped-def]
    return parse_stats(FIXTURE).stats


def test_every_name_the_model_gives_is_in_the_real_file(stats) -> None:  # type: ignore[no-untyped-def]
    names = stat_names(load_topology("paper").with_memory_divided(8))
    present = set(stats["stat"].astype(str))
    for cache in names.caches:
        assert f"{cache.path}.demandMisses" in present, cache.path
    assert set(names.clocks.values()) <= present
    for controller in names.controllers:
        assert f"{controller}.requestorReadAccesses" in present, controller
    for cpu, path in names.cpus.items():
        assert f"{path}.core.numCycles" in present, (cpu, path)
    # Requests carry the padded name: every requester of the caches maps to a CPU.
    requesters = set(stats.loc[stats["stat"].astype(str).str.endswith(".demandMisses"),
                               "subname"].astype(str)) - {"total", ""}
    cores = {r for r in requesters if r.startswith("processor.")}
    assert cores and all(names.cpu_of_requestor(r) is not None for r in cores)
    assert names.cpu_of_requestor("processor.detailed_cores04.core.data") == 4
    assert names.cpu_of_requestor("processor.detailed_cores14.core.data") == 14


def test_each_last_level_cache_is_timed_with_its_own_clusters_clock(stats) -> None:  # type: ignore[no-untyped-def]
    names = stat_names(load_topology("paper"))
    estimate = memlat.estimate_by_cache(stats, names)
    ghz = estimate.groupby("cluster")["frequency_hz"].unique()
    assert {c: [round(f / 1e9, 2) for f in v] for c, v in ghz.items()} == {
        "host": [2.4], "stack0": [2.0], "stack1": [2.0]}
    # The host's L3 is its last level (L1 3 + L2 7 + L3 30 cycles); a PIM core's L1D is.
    lookup = estimate.groupby("cache")["c_cache_cycles"].first()
    assert lookup["board.cache_hierarchy.host_l3"] == 40
    assert set(estimate["cache"]) >= {"board.cache_hierarchy.host_l3",
                                      "board.cache_hierarchy.stack0_l1d0"}
    # Requests of a PIM cache come from that stack's cores only.
    stack0 = estimate[(estimate["cluster"] == "stack0") & estimate["cpu"].notna()]
    assert set(stack0["cpu"].astype(int)) <= set(range(4, 12))
    assert (estimate["latency_ns"].dropna() > 0).all()


def test_per_cpu_columns_name_the_boards_cores(stats) -> None:  # type: ignore[no-untyped-def]
    from pimcloud.analysis.views import with_cpu

    cycles = with_cpu(stats[stats["stat"].astype(str).str.endswith(".core.numCycles")])
    assert set(cycles["cpu_group"]) == {"detailed_cores"}
    assert sorted(cycles["cpu_index"].astype(int)) == list(range(20))
