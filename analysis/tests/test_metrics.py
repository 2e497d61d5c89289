"""Metrics, memory latency and stats views on frames whose answers are known by design."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pimcloud.analysis import memlat, metrics, views
from pimcloud.stats_file import parse_stats

THREE = Path(__file__).parent / "fixtures" / "three_dumps.txt"


def test_percentiles_of_one_to_hundred() -> None:
    requests = pd.DataFrame({"run_id": "r", "app": "a", "sojourn_ns": np.arange(1, 101)})
    out = metrics.latency_percentiles(requests).iloc[0]
    # linear interpolation between order statistics: p = 1 + q * 99 / 100
    assert out["p50_ns"] == pytest.approx(50.5)
    assert out["p99_ns"] == pytest.approx(99.01)
    assert out["requests"] == 100


def test_windowed_percentiles_split_by_completion_time() -> None:
    end = np.array([10, 20, 150, 160, 170, 290])
    requests = pd.DataFrame({"run_id": "r", "app": "a", "scheduled_ns": end - 10,
                             "end_ns": end, "sojourn_ns": end})
    out = metrics.windowed_percentiles(requests, window_ns=100)
    assert out["window"].tolist() == [0, 1, 2]
    assert out["requests"].tolist() == [2, 3, 1]
    assert out["p50_ns"].tolist() == [15.0, 160.0, 290.0]


def curves() -> pd.DataFrame:
    return pd.DataFrame({
        "arch": ["a1"] * 4 + ["a2"] * 4,
        "app": "xapian",
        "rps": [100, 200, 300, 400] * 2,
        "p99_ns": [0.5e6, 0.8e6, 1.5e6, 0.9e6, 0.4e6, 0.6e6, 0.9e6, 3e6],
    })


def test_max_load_is_the_largest_load_within_qos() -> None:
    loads = metrics.max_load_under_qos(curves(), {"xapian": 1e6}, by=["arch", "app"])
    assert loads["max_load"].tolist() == [400, 300]
    strict = metrics.max_load_under_qos(curves(), 1e6, by=["arch", "app"], contiguous=True)
    assert strict["max_load"].tolist() == [200, 300]  # a1's 400 came after a violation
    none = metrics.max_load_under_qos(curves(), 1e3, by=["arch", "app"])
    assert none["max_load"].tolist() == [0, 0]
    with pytest.raises(ValueError, match=r"no QoS target for \['xapian'\]"):
        metrics.max_load_under_qos(curves(), {"moses": 1e6})


def test_table_iii_form() -> None:
    table = metrics.table_iii(curves(), {"xapian": 1e6}, baseline_arch="a1")
    assert table.loc["a2", ("normalized_max_load", "xapian")] == pytest.approx(300 / 400)
    assert table.loc["a1", ("normalized_max_load", "xapian")] == 1.0
    assert table.loc["a2", ("tail_over_qos", "xapian")] == pytest.approx(0.4)


def test_effective_machine_utilization() -> None:
    loads = pd.DataFrame({
        "run_id": ["m1", "m1", "m2", "m2"],
        "app": ["xapian", "moses", "xapian", "moses"],
        "rps": [50, 30, 100, 90],
        "meets_qos": [True, True, True, False],
    })
    emu = metrics.effective_machine_utilization(loads, {"xapian": 100, "moses": 100})
    assert emu["emu"].tolist() == pytest.approx([0.8, 1.9])
    assert emu["all_meet_qos"].tolist() == [True, False]
    best = metrics.best_emu(emu.assign(manager="pimcloud"), by=["manager"])
    assert best["best_emu"].tolist() == pytest.approx([0.8])


def test_be_throughput_convergence_and_migrations() -> None:
    progress = pd.DataFrame({"run_id": "r", "app": "be", "t_ns": [0, 1e9, 2e9],
                             "work": [0, 10, 30]})
    assert metrics.be_throughput(progress)["throughput"].tolist() == [15.0]
    decisions = pd.DataFrame({
        "run_id": ["r"] * 4 + ["s"] * 2,
        "t_ns": [1e9, 1.5e9, 3e9, 4e9, 0, 2e9],
        "event": ["init", "upsize", "converged", "downsize", "init", "migrate"],
        "app": "a",
        "to_cores": [1, 2, None, 1, 1, None],
        "pages_moved": [0, 0, 0, 0, 0, 100],
    })
    conv = metrics.convergence_time(decisions)
    assert conv["convergence_s"].tolist() == [2.0, 2.0]
    assert conv["converged"].tolist() == ["converged", "last change"]
    mig = metrics.migrations_per_second(decisions)
    assert mig["pages_per_s"].tolist() == [0.0, 50.0]
    assert mig["migrations_per_s"].tolist() == [0.0, 0.5]
    timeline = metrics.core_timeline(decisions.assign(cores_after=decisions["to_cores"]))
    assert timeline.loc[timeline["run_id"] == "r", "t_s"].tolist() == [0.0, 0.5, 3.0]
    # On the requests' clock: the first arrival at 1.2 s is t = 0, so the initial
    # placement made before the load sits at t < 0, as in a real run.
    aligned = metrics.core_timeline(decisions.assign(cores_after=decisions["to_cores"]),
                                    origin_ns={"r": 1.2e9, "s": 0.0})
    assert aligned.loc[aligned["run_id"] == "r", "t_s"].tolist() == pytest.approx(
        [-0.2, 0.3, 2.8])
    # The agent's start line has no time (t_ns 0): it is not the origin of its run.
    started = pd.concat([decisions, pd.DataFrame({"run_id": ["r"], "t_ns": [0], "app": [""],
                                                  "event": ["start"]})])
    timeline = metrics.core_timeline(started.assign(cores_after=started["to_cores"]))
    assert timeline.loc[timeline["run_id"] == "r", "t_s"].tolist() == [0.0, 0.5, 3.0]
    # The best-effort jobs' CPU quota is a line of its own: its cores, or its CPUs when
    # the quota is lifted (0).
    quota = pd.DataFrame({"run_id": "q", "t_ns": [1e9, 2e9, 3e9], "event": "be-quota",
                          "app": "be", "cores_after": 4, "value_cores": [0.01, 1.5, 0.0]})
    timeline = metrics.core_timeline(quota)
    line = timeline[timeline["app"] == metrics.BE_QUOTA_LINE]
    assert line["cores"].tolist() == [0.01, 1.5, 4]
    assert timeline.loc[timeline["app"] == "be", "cores"].tolist() == [4, 4, 4]
    # Lifted, the line follows the jobs' cores when the manager later takes some away.
    shrunk = pd.concat([quota, pd.DataFrame({"run_id": ["q"], "t_ns": [4e9],
                                             "event": ["be-cpus"], "app": ["be"],
                                             "cores_after": [2]})])
    line = metrics.core_timeline(shrunk)
    line = line[line["app"] == metrics.BE_QUOTA_LINE]
    assert line["cores"].tolist() == [0.01, 1.5, 4, 2]
    assert line["t_s"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_seed_003_estimate_on_gem5_miss_latency() -> None:
    stats = parse_stats(THREE).stats
    out = memlat.miss_latency_by_requester(stats, "system.l3", c_cache_cycles=40)
    cpu = out[out["requester"] == "system.cpu3.data"].iloc[0]
    # 41.7e6 ticks over 1000 misses at 417 ticks/cycle: 100 cycles, plus 40 cache cycles,
    # at 417 ps per cycle
    assert cpu["outstanding_cycles"] == pytest.approx(100_000)
    assert cpu["latency_ns"] == pytest.approx(140 * 0.417)
    assert np.isnan(out.loc[out["requester"] == "system.pim_cpus12.data", "latency_ns"]).all()
    with pytest.raises(ValueError, match=r"no system\.l9\.demandMisses"):
        memlat.miss_latency_by_requester(stats, "system.l9", c_cache_cycles=40)


def test_memory_latency_by_target() -> None:
    out = memlat.memory_latency_by_target(parse_stats(THREE).stats)
    assert out["target"].tolist() == ["system.mem_ctrl"]
    assert out["latency_ns"].tolist() == pytest.approx([6e6 / 200 / 1000])


def test_views() -> None:
    stats = parse_stats(THREE).stats
    buckets = views.histogram(stats, "system.work_item_type0")
    assert buckets[["low", "high", "count"]].to_numpy().tolist() == [
        [0, 999, 1], [1000, 1999, 2], [2000, 2999, 1]]
    dist = views.histogram(stats, "system.mem_ctrl.readLatencyDist")
    assert dist["count"].sum() == 2  # under/overflows are not buckets
    assert views.distribution_summary(stats, "system.mem_ctrl.readLatencyDist").loc[
        0, "overflows"] == 1
    cycles = views.scalar(stats, "system.cpu3.numCycles")
    assert cycles.to_dict() == {0: 240000000, 2: 120000000}
    vec = views.vector(stats, "system.cpu3.commit.committedInstType_0")
    assert vec.loc[0, "IntAlu"] == 300
    cpus = views.with_cpu(stats)
    pim = cpus[cpus["stat"] == "system.pim_cpus12.cpi"].iloc[0]
    assert (pim["cpu_group"], pim["cpu_index"]) == ("pim_cpus", 12)
    assert pd.isna(cpus[cpus["stat"] == "simSeconds"]["cpu_group"]).all()


def test_colocation_frontier_two_and_three_apps() -> None:
    runs = []
    for run, (a, b, ok) in enumerate([(20, 70, True), (20, 90, False), (50, 40, True),
                                      (50, 60, True)]):
        runs += [{"run_id": run, "manager": "m", "app": "a", "rps": a, "meets_qos": True},
                 {"run_id": run, "manager": "m", "app": "b", "rps": b, "meets_qos": ok}]
    two = metrics.colocation_frontier(pd.DataFrame(runs), {"a": 100, "b": 200}, ["a", "b"])
    assert two[["x_pct", "y_pct"]].to_numpy().tolist() == [[20, 35], [50, 30]]
    three = pd.DataFrame(runs + [{"run_id": r, "manager": "m", "app": "c", "rps": 10,
                                  "meets_qos": r != 3} for r in range(4)])
    out = metrics.colocation_frontier(three, {"a": 100, "b": 100, "c": 10}, ["a", "b", "c"])
    assert out.set_index(["x_pct", "y_pct"])["z_pct"].to_dict() == pytest.approx(
        {(20, 70): 100, (20, 90): np.nan, (50, 40): 100, (50, 60): np.nan}, nan_ok=True)


def test_select_by_name_pattern() -> None:
    stats = parse_stats(THREE).stats
    picked = views.select(stats, r"system\.l3\.demand")
    assert set(picked["stat"].astype(str)) == {"system.l3.demandMisses",
                                               "system.l3.demandMissLatency"}
    assert len(picked) == 6


def test_latency_estimates_weigh_intervals_by_their_misses(tmp_path: Path) -> None:
    from pimcloud.analysis.results import read_decision_log

    log = tmp_path / "decisions.jsonl"
    log.write_text(
        '{"t_ns": 1, "event": "start", "app": "", "to_cores": []}\n'
        '{"t_ns": 2, "event": "latency-estimate", "app": "kv", "to_cores": [4],'
        ' "values": {"estimate_ns": 100, "misses": 3000}}\n'
        '{"t_ns": 3, "event": "latency-estimate", "app": "kv", "to_cores": [4],'
        ' "values": {"estimate_ns": 200, "misses": 1000}}\n'
        '{"t_ns": 3, "event": "be-throttle", "app": "be", "to_cores": [12],'
        ' "values": {"level": 7}}\n')
    decisions = read_decision_log(log).assign(run_id="r")
    assert decisions["value_level"].dropna().tolist() == [7.0]
    out = metrics.latency_estimates(decisions)
    assert out.to_dict("records") == [{"run_id": "r", "app": "kv", "estimate_ns": 125.0,
                                       "intervals": 2.0, "misses": 4000.0}]
    # A run without counters has no estimates, not an error.
    plain = read_decision_log(log).assign(run_id="r")
    plain = plain.drop(columns=[c for c in plain.columns if c.startswith("value_")])
    assert metrics.latency_estimates(plain).empty


AGENT_FIXTURES = Path(__file__).parents[2] / "guest" / "pimcloud-agent" / "fixtures"


def test_hotness_choices_read_the_agents_shadow_decision(tmp_path: Path) -> None:
    """The agent's own line (fixtures/decisions/migrate-shadow.json, compared with what the
    agent writes by its EngineTest): 1000 of 4000 pages planned by the counters, 100 of
    them idle tracking's choice too."""
    from pimcloud.analysis.results import read_decision_log

    log = tmp_path / "decisions.jsonl"
    log.write_text((AGENT_FIXTURES / "decisions" / "migrate-shadow.json").read_text()
                   + '{"t_ns": 1, "event": "upsize", "app": "kv", "to_cores": [4],'
                     ' "values": {"planned_pages": 20, "planned_hot_pages": 20,'
                     ' "planned_hotness_sum": 900}}\n'
                   + '{"t_ns": 2, "event": "downsize", "app": "kv", "to_cores": []}\n')
    out = metrics.hotness_choices(read_decision_log(log).assign(run_id="r"))
    assert out["app"].tolist() == ["kv", "friendly"]  # in time order
    plain, shadow = out.to_dict("records")
    assert shadow["planned_pages"] == 1000 and shadow["shadow_common_pages"] == 100
    assert shadow["overlap"] == 0.1 and shadow["chance"] == 0.25
    assert shadow["shadow_tied_at_cut"] == 2000 and shadow["shadow_hot_among_planned"] == 600
    assert plain["planned_pages"] == 20 and np.isnan(plain["overlap"])  # no shadow: no overlap
    # A log with no migration has no choices, not an error.
    log.write_text('{"t_ns": 2, "event": "downsize", "app": "kv", "to_cores": []}\n')
    assert metrics.hotness_choices(read_decision_log(log).assign(run_id="r")).empty


def test_violation_spans_say_how_long_a_tail_stayed_above_qos() -> None:
    windows = pd.DataFrame({
        "run_id": ["a"] * 5 + ["b"] * 2 + ["c"],
        "app": ["kv"] * 7 + ["batch"],
        "t_s": [0.0, 0.01, 0.02, 0.03, 0.04, 0.0, 0.01, 0.0],
        "p99_ns": [50.0, 300.0, 80.0, 250.0, 90.0, 10.0, 20.0, 1e9],
    })
    out = metrics.violation_spans(windows, {"kv": 100.0}, {"a": 10_000_000, "b": 10_000_000,
                                                           "c": 10_000_000})
    a, b = out.to_dict("records")  # batch has no QoS: left out
    assert (a["windows"], a["violated"]) == (5, 2)
    assert a["violated_s"] == pytest.approx(0.02)
    assert (a["first_s"], a["last_s"]) == (0.01, 0.03)
    assert a["lasted_s"] == pytest.approx(0.03)  # gap inside the span included
    assert b["violated"] == 0 and np.isnan(b["lasted_s"])
    assert a["empty"] == 0
    # A stall: nothing completed in the windows at 0.02 and 0.03 s, then late answers;
    # an idle gap: nothing completed at 0.06 s, then punctual answers.
    gaps = pd.DataFrame({"run_id": "a", "app": "kv", "t_s": [0.0, 0.01, 0.04, 0.05, 0.07],
                         "p99_ns": [50.0, 50.0, 900.0, 60.0, 60.0]})
    (g,) = metrics.violation_spans(gaps, {"kv": 100.0}, {"a": 10_000_000}).to_dict("records")
    assert (g["windows"], g["empty"], g["violated"]) == (8, 3, 3)
    assert (g["first_s"], g["last_s"]) == (0.02, 0.04)
    assert g["lasted_s"] == pytest.approx(0.03)


def test_be_throughput_counts_only_the_measured_requests_span() -> None:
    # 2 units a ms for 100 ms beside the LC requests, then 100 ms stopped (the wrap-up)
    progress = pd.DataFrame({"run_id": "r", "app": "membw",
                             "t_ns": [0, 50e6, 100e6, 150e6, 200e6],
                             "work": [0, 100, 200, 200, 200]})
    requests = pd.DataFrame({"run_id": "r", "scheduled_ns": [10e6, 40e6],
                             "end_ns": [30e6, 90e6]})
    spans = metrics.measured_spans(requests)
    assert spans.iloc[0][["start_ns", "end_ns"]].tolist() == [10e6, 90e6]
    measured = metrics.be_throughput(progress, spans=spans)["throughput"].iloc[0]
    assert measured == pytest.approx(2000.0)  # interpolated at 10 and 90 ms
    assert metrics.be_throughput(progress)["throughput"].iloc[0] == pytest.approx(1000.0)
    # A run without timed requests keeps its whole record.
    assert metrics.be_throughput(progress, spans=metrics.measured_spans(
        requests.iloc[0:0]))["throughput"].iloc[0] == pytest.approx(1000.0)
