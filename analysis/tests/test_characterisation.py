"""What the characterisation takes from a measured run: each request's time on a worker."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pimcloud.analysis.characterisation import (
    CellResult,
    claims,
    handover_ns,
    lateness_ns,
    occupied_ns,
    placement_table,
    table_iii,
)
from pimcloud.runs.study import load_study


def requests(rows: list[tuple[int, int, int]]) -> pd.DataFrame:
    """(scheduled, start, end) ns -> a request table."""
    frame = pd.DataFrame(rows, columns=["scheduled_ns", "start_ns", "end_ns"])
    frame["queue_ns"] = frame["start_ns"] - frame["scheduled_ns"]
    frame["service_ns"] = frame["end_ns"] - frame["start_ns"]
    frame["sojourn_ns"] = frame["end_ns"] - frame["scheduled_ns"]
    return frame


def test_the_hand_over_counts_only_where_a_worker_was_idle() -> None:
    # One worker: the first two arrive to an empty system (hand-over 5 ns, service 10 ns);
    # the third arrives while the second is in service and queues 8 ns more: not a hand-over.
    frame = requests([(0, 5, 15), (100, 105, 115), (106, 119, 129)])
    assert occupied_ns(frame).tolist() == [10.0, 10.0, 10.0]  # the service alone
    assert handover_ns(frame, servers=1).tolist()[:2] == [5.0, 5.0]
    assert np.isnan(handover_ns(frame, servers=1)[2])
    # With two workers the third found one idle: its 13 ns wait is a hand-over too.
    assert handover_ns(frame, servers=2).tolist() == [5.0, 5.0, 13.0]


def test_a_late_generator_is_not_taken_for_a_hand_over() -> None:
    # The generator released each request 40 ns after its scheduled arrival (it shared a
    # busy core); the worker then took 5 ns to wake. The hand-over is the 5 ns, and the 40
    # is the generator's lateness.
    frame = requests([(0, 45, 55), (100, 145, 155)]).assign(released_ns=[40, 140])
    assert handover_ns(frame, servers=1).tolist() == [5.0, 5.0]
    assert lateness_ns(frame).tolist() == [40.0, 40.0]
    # Behind its schedule, a request released 30 ns after its predecessor but 70 after its
    # own arrival was late by 30 of its own: the rest is the backlog, which the model
    # makes from the generator's CPU.
    behind = requests([(0, 45, 55), (10, 75, 85)]).assign(released_ns=[40, 70])
    assert lateness_ns(behind).tolist() == [40.0, 30.0]
    # A table made before the column, or a request without a release (TCP client mode):
    # counted from the scheduled arrival, and no lateness.
    older = frame.drop(columns=["released_ns"])
    assert handover_ns(older, servers=1).tolist() == [45.0, 45.0]
    assert lateness_ns(older) is None
    assert lateness_ns(frame.assign(released_ns=[40, 0])) is None


def test_an_arrival_due_while_a_worker_was_busy_but_released_after_found_it_idle() -> None:
    # One worker. The second request was due at 10, during the first one's service
    # (0-50), but the generator released it only at 60: it found the worker idle, and its
    # hand-over is the 3 ns wake after the release, not 53 ns of apparent queueing.
    frame = requests([(0, 2, 50), (10, 63, 80)]).assign(released_ns=[1, 60])
    assert handover_ns(frame, servers=1).tolist() == [1.0, 3.0]
    assert np.isnan(handover_ns(frame.drop(columns=["released_ns"]), servers=1)[1])


def test_without_times_the_service_time_alone() -> None:
    frame = requests([(0, 5, 15)]).drop(columns=["scheduled_ns", "start_ns", "end_ns"])
    assert occupied_ns(frame).tolist() == [10.0]
    assert np.isnan(handover_ns(frame, servers=4)).all()


def test_a_wait_for_the_serial_section_is_taken_out_of_the_time_on_a_worker() -> None:
    # The model queues on the section itself: a measured wait would count twice.
    frame = requests([(0, 0, 100), (1000, 1000, 1100)]).assign(serial_wait_ns=[0, 40])
    assert occupied_ns(frame).tolist() == [100.0, 60.0]


def test_a_light_load_hands_every_request_over() -> None:
    rng = np.random.default_rng(0)
    arrivals = np.cumsum(rng.exponential(1000, 500)).astype(int)
    rows = [(a, a + 50, a + 50 + int(s)) for a, s in zip(arrivals, rng.exponential(300, 500),
                                                         strict=True)]
    handover = handover_ns(requests(rows), servers=4)
    assert np.isfinite(handover).mean() > 0.95 and np.nanmean(handover) == pytest.approx(50)


def test_spearman_is_the_rank_correlation_without_scipy() -> None:
    from pimcloud.analysis.characterisation import rank_correlations, spearman

    a = pd.Series([1.0, 2.0, 3.0, 4.0])
    assert spearman(a, pd.Series([10.0, 20.0, 30.0, 40.0])) == pytest.approx(1.0)
    assert spearman(a, pd.Series([4.0, 3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    # Monotone but not linear: still 1; one swap of four: 1 - 6*2/(4*15) = 0.8.
    assert spearman(a, pd.Series([1.0, 8.0, 27.0, 64.0])) == pytest.approx(1.0)
    assert spearman(a, pd.Series([2.0, 1.0, 3.0, 4.0])) == pytest.approx(0.8)
    assert np.isnan(spearman(a, pd.Series([5.0, 5.0, 5.0, 5.0])))
    # Three architectures in a Table III column are enough for a coefficient.
    table = pd.DataFrame({"arch": ["arch1", "arch4", "arch8"], "app": "kvstore",
                          "tail_over_qos": [0.75, 1.2, 3.5],
                          "normalized_max_load": [1.0, 0.5, 0.0]})
    ranks = rank_correlations(table).set_index("metric")
    assert ranks.loc["tail_over_qos", "architectures"] == 3
    # The paper's kvstore tails: arch1 0.21 < arch8 0.40 < arch4 0.53: one swap of three.
    assert ranks.loc["tail_over_qos", "spearman"] == pytest.approx(0.5)


def test_imgdnn_claim_uses_the_service_time_when_the_model_is_invalid() -> None:
    from pimcloud.analysis.characterisation import claims

    def verdict(table: pd.DataFrame) -> str:
        found = claims(table)
        row = found[found["claim"].str.startswith("ImgDNN cannot meet QoS")]
        return str(row["verdict"].iloc[0])

    base = {"app": "imgdnn", "qos_ns": 1.36e6, "normalized_max_load": np.nan}
    # arch4 without a valid model, but a request alone takes longer than QoS: holds.
    slow = pd.DataFrame([{**base, "arch": "arch4", "tail_over_qos": np.nan,
                          "max_load_rps": np.nan, "mean_occupied_us": 1543.0}])
    assert verdict(slow) == "holds"
    # No model and a request fits in QoS: nothing can be said.
    fast = slow.assign(mean_occupied_us=400.0)
    assert verdict(fast) == "not measurable"
    # A valid model that meets QoS: the claim does not hold.
    met = slow.assign(tail_over_qos=0.5, max_load_rps=3000.0)
    assert verdict(met) == "does not hold"
    # No valid model, but the measured sample met QoS (Table II's 7 ms on arch4): a load
    # it serves, so the claim does not hold; a sample above QoS decides nothing.
    sampled = fast.assign(qos_ns=7e6, sample_rps=8000.0, sample_requests=302,
                          sample_p99_ns=6.82e6)
    assert verdict(sampled) == "does not hold"
    assert verdict(sampled.assign(sample_p99_ns=7.5e6)) == "not measurable"


def test_placement_cells_on_a_multi_stack_preset_and_their_fig3_table() -> None:
    study = dataclasses.replace(load_study("characterisation-gem5"),
                                placements=("ft", "cc", "il"))
    names = [c.name for c in study.cells() if c.service == "kvstore"]
    assert {"arch9-kvstore", "arch9-kvstore-cc", "arch9-kvstore-il"} <= set(names)
    assert "arch8-kvstore-cc" not in names  # one stack: every placement is first touch
    il = next(c for c in study.cells() if c.name == "arch9-kvstore-il")
    assert study.cell_spec(il)["scenario"]["placement"] == "il"

    def result(preset: str, placement: str, service_us: float) -> CellResult:
        cell = next(c for c in study.cells() if (c.preset, c.service, c.placement)
                    == (preset, "kvstore", placement))
        times = np.full(300, service_us * 1e3)
        made = CellResult(cell, times, pd.DataFrame(), 1.0, Path("."))
        made.points = pd.DataFrame({"rps": [cell.sample_rps], "requests": [300],
                                    "p99_ns": [made.queue.p99_ns(cell.sample_rps)]})
        return made

    results = [result("arch8", "ft", 10), result("arch9", "ft", 10),
               result("arch9", "cc", 20), result("arch9", "il", 40)]
    qos = pd.DataFrame({"app": ["kvstore"], "qos_ns": [1e6]})
    table = placement_table(results, qos).set_index("placement")
    assert set(table.index) == {"ft", "cc", "il"}
    assert (table["normalized_to"] == "arch8").all()
    # Same cores, twice and four times the service time: about a half and a quarter.
    assert table.loc["ft", "normalized_max_load"] == pytest.approx(1.0, rel=0.05)
    assert table.loc["cc", "normalized_max_load"] == pytest.approx(0.5, rel=0.1)
    assert table.loc["il", "normalized_max_load"] == pytest.approx(0.25, rel=0.1)
    assert set(table_iii(results, qos)["arch"]) == {"arch8", "arch9"}  # first touch only
    verdicts = claims(table_iii(results, qos), table.reset_index()).set_index("claim")
    fig3 = "FT beats IL and CC by up to 46 % when an app spans two stacks (Fig. 3)"
    assert verdicts.loc[fig3, "verdict"] == "holds"
    # FT from another study (an older image): the service's placements are not compared.
    older = table.reset_index().assign(study=lambda f: np.where(
        f["placement"] == "ft", "", "characterisation-opt"))
    found = claims(table_iii(results, qos), older).set_index("claim").loc[fig3]
    assert found["verdict"] == "not measurable"
    assert "kvstore: not compared" in found["numbers"]
    assert "cc, il: characterisation-opt" in found["numbers"]
    # A service without one of the three placements is named, not passed over.
    partial = table.reset_index()
    partial = pd.concat([partial, partial.assign(app="oltp")[partial["placement"] != "il"]])
    found = claims(table_iii(results, qos), partial).set_index("claim").loc[fig3]
    assert found["verdict"] == "holds"
    assert "oltp: not compared, no IL cell yet" in found["numbers"]
    # Two missing placements are named each in capitals, joined by a plain "or".
    alone = pd.concat([table.reset_index(),
                       table.reset_index().assign(app="oltp")[lambda f: f["placement"] == "ft"]])
    found = claims(table_iii(results, qos), alone).set_index("claim").loc[fig3]
    assert "oltp: not compared, no CC or IL cell yet" in found["numbers"]


def test_dynamic_placement_cells_their_bars_and_whether_they_close_the_gap() -> None:
    study = dataclasses.replace(load_study("characterisation-gem5"),
                                placements=("ft", "cc", "il"),
                                dynamic=("migration", "replication"))
    names = {c.name for c in study.cells()}
    assert {"arch9-kvstore-ft-mig", "arch9-kvstore-cc-mig", "arch9-imgdnn-il-rep"} <= names
    assert "arch9-kvstore-cc-rep" not in names  # kvstore keeps no data it can replicate
    assert "arch8-kvstore-ft-mig" not in names  # one stack: nothing to migrate to
    mig = next(c for c in study.cells() if c.name == "arch9-kvstore-cc-mig")
    spec = study.cell_spec(mig)
    assert spec["scenario"]["manager"] == "default"
    assert spec["scenario"]["dynamic"] == "migration"
    assert spec["gem5"]["counters"] is True  # locality reads the page-access counters
    static = study.cell_spec(next(c for c in study.cells() if c.name == "arch9-kvstore-cc"))
    assert "counters" not in static.get("gem5", {})
    assert spec["length"]["warmup"] != static["length"]["warmup"]  # longer: pages move first
    # The cell the `validate` option names is the static first-touch one.
    assert study.cell("arch9", "kvstore").name == "arch9-kvstore"

    def result(placement: str, dynamic: str, service_us: float) -> CellResult:
        cell = next(c for c in study.cells() if (c.preset, c.service, c.placement, c.dynamic)
                    == ("arch9" if placement else "arch8", "kvstore", placement or "ft",
                        dynamic))
        times = np.full(300, service_us * 1e3)
        made = CellResult(cell, times, pd.DataFrame(), 1.0, Path("."))
        made.points = pd.DataFrame({"rps": [cell.sample_rps], "requests": [300],
                                    "p99_ns": [made.queue.p99_ns(cell.sample_rps)]})
        return made

    qos = pd.DataFrame({"app": ["kvstore"], "qos_ns": [1e6]})
    statics = [result("", "none", 10), result("ft", "none", 10), result("cc", "none", 20),
               result("il", "none", 40)]

    def judged(extra: list[CellResult]) -> pd.Series:
        results = statics + extra
        table = placement_table(results, qos)
        found = claims(table_iii(results, qos), table).set_index("claim")
        return found.loc["Migration and replication close the gap between static policies"]

    def verdict(extra: list[CellResult]) -> str:
        return str(judged(extra)["verdict"])

    assert verdict([]) == "not measurable"
    # Migration brings CC and IL close to FT: the spread shrinks.
    closer = [result("ft", "migration", 10), result("cc", "migration", 11),
              result("il", "migration", 12)]
    assert verdict(closer[1:]) == "not measurable"  # FT without its dynamic cell
    # ... and the service is named with the bar it lacks, not passed over in silence.
    assert "kvstore on arch9: not compared, no FT with migration cell yet" in str(
        judged(closer[1:])["numbers"])
    assert verdict(closer) == "holds"
    assert "not compared" not in str(judged(closer)["numbers"])
    # Bars from two studies (another image, another harness) are named, not compared.
    elsewhere = [dataclasses.replace(closer[0], study="older"), *closer[1:]]
    assert verdict(elsewhere) == "not measurable"
    assert ("kvstore on arch9: not compared, its bars come from different studies "
            "(cc, cc+mig, ft, il, il+mig: an older part; ft+mig: older)") in str(
                judged(elsewhere)["numbers"])
    # A kind that another study made is left out and named, and the kind made beside the
    # static bars is judged alone: counted in, these replication bars (FT's far ahead)
    # would widen the spread and the claim would not hold.
    replicated = [dataclasses.replace(
        made, cell=dataclasses.replace(made.cell, dynamic="replication"), study="rep")
        for made in (result("ft", "migration", 1), result("cc", "migration", 30),
                     result("il", "migration", 30))]
    assert str(judged(replicated)["verdict"]) == "not measurable"
    assert "its bars come from different studies" in str(judged(replicated)["numbers"])
    beside = judged(closer + replicated)
    assert beside["verdict"] == "holds"
    assert ("kvstore on arch9: FT/CC/IL spread 300% static, 20% with the best of each and "
            "its migration (left out, not all made beside its static bars: "
            "cc+rep, ft+rep, il+rep: rep)") in str(beside["numbers"])
    worse = [result(p, "migration", 80) for p in ("ft", "cc", "il")]
    assert verdict(worse) == "does not hold"  # no help: the static spread stays
    table = placement_table(statics + closer, qos).set_index("policy")
    assert {"ft", "cc", "il", "ft+mig", "cc+mig", "il+mig"} == set(table.index)
    assert table.loc["cc+mig", "normalized_max_load"] > table.loc["cc", "normalized_max_load"]
    # Table III stays first touch alone.
    assert len(table_iii(statics + closer, qos)) == 2


def test_reference_samples_become_carried_cells_and_need_their_point(tmp_path: Path) -> None:
    from pimcloud.analysis.characterisation import results_from_samples

    samples = pd.DataFrame({"preset": "arch8", "app": "kvstore", "placement": "ft",
                            "dynamic": np.nan, "cores": 16, "core_type": "wimpy",
                            "sample_rps": 32000.0, "host_seconds": 590.0,
                            "setup_host_seconds": 201.0,
                            "occupied_ns": np.arange(300) * 100 + 30_000})
    points = pd.DataFrame([{"preset": "arch8", "app": "kvstore", "rps": 32000.0,
                            "requests": 300, "p99_ns": 160_000.0, "carried": True}])
    [cell] = results_from_samples(samples, points, tmp_path, made=set())
    assert cell.carried and cell.cell.name == "arch8-kvstore" and cell.cell.cores == 16
    assert len(cell.service_ns) == 300 and list(cell.points["p99_ns"]) == [160_000.0]
    assert results_from_samples(samples, points, tmp_path, made={"arch8-kvstore"}) == []
    with pytest.raises(ValueError, match=r"no run of it at its sampled 32000 rps"):
        results_from_samples(samples, points.assign(rps=8000.0), tmp_path, made=set())


def test_serial_times_reach_the_model_and_survive_the_reference(tmp_path: Path) -> None:
    """A cell whose requests say how long they held the service's serial section (oltp)
    is modelled with it, in the study and from the reference's samples alike; a sample
    without the column (older references) models without it."""
    from pimcloud.analysis.characterisation import (
        results_from_samples,
        samples_table,
        serial_of,
    )
    from pimcloud.runs.study import Cell

    frame = requests([(i * 10_000, i * 10_000 + 10, i * 10_000 + 1010) for i in range(300)])
    assert serial_of(frame) is None
    assert serial_of(frame.assign(serial_ns=0)) is None
    frame["serial_ns"] = 900
    serial = serial_of(frame)
    assert serial is not None and serial.tolist() == [900.0] * 300
    cell = Cell("arch1", "oltp", 4, "brawny", 667.0)
    points = pd.DataFrame([{"preset": "arch1", "app": "oltp", "rps": 667.0, "requests": 300,
                            "p99_ns": 2000.0}])
    result = CellResult(cell, frame["service_ns"].to_numpy(dtype=float), points, 1.0,
                        tmp_path, serial_ns=serial)
    # One section of 0.9 us a request bounds the 4 workers at 1.11 M rps, not 4 M.
    assert result.queue.capacity_rps == pytest.approx(1e9 / 900)
    table = samples_table([result])
    [again] = results_from_samples(table, points, tmp_path, made=set())
    assert again.serial_ns is not None and again.queue.capacity_rps == pytest.approx(1e9 / 900)
    [older] = results_from_samples(table.drop(columns=["serial_ns"]), points, tmp_path,
                                   made=set())
    assert older.serial_ns is None and older.queue.capacity_rps == pytest.approx(4e9 / 1000)


def test_the_harness_cpu_beyond_the_workers_time_is_the_overhead(tmp_path: Path) -> None:
    from pimcloud.analysis.characterisation import (
        generator_of,
        overhead_of,
        results_from_samples,
        samples_table,
    )
    from pimcloud.runs.study import Cell

    run = tmp_path / "run" / "results" / "kvstore"
    run.mkdir(parents=True)
    occupied = np.full(300, 10_000.0)
    assert overhead_of(tmp_path / "run", "kvstore", occupied) is None  # no summary
    (run / "summary.json").write_text('{"requests": 300, "measured_cpu_ns": 7500000}')
    assert overhead_of(tmp_path / "run", "kvstore", occupied) == pytest.approx(15_000.0)
    (run / "summary.json").write_text('{"requests": 300, "measured_cpu_ns": 1500000}')
    assert overhead_of(tmp_path / "run", "kvstore", occupied) == 0.0  # covered by the workers
    (run / "summary.json").write_text('{"requests": 300}')  # older harness
    assert overhead_of(tmp_path / "run", "kvstore", occupied) is None
    assert generator_of(tmp_path / "run", "kvstore") is None
    (run / "summary.json").write_text('{"requests": 300, "generated": 400, "warmup": 100, '
                                      '"generator_cpu_ns": 1500000}')
    assert generator_of(tmp_path / "run", "kvstore") == pytest.approx(5000.0)
    # The reference keeps it; older references without the column model without it.
    cell = Cell("arch1", "kvstore", 4, "brawny", 80000.0)
    points = pd.DataFrame([{"preset": "arch1", "app": "kvstore", "rps": 80000.0,
                            "requests": 300, "p99_ns": 30_000.0}])
    result = CellResult(cell, occupied, points, 1.0, tmp_path, overhead_ns=15_000.0)
    assert result.queue.capacity_rps == pytest.approx(4e9 / 25_000)
    slow_generator = dataclasses.replace(result, generator_ns=8000.0)
    assert slow_generator.queue.capacity_rps == pytest.approx(1e9 / 8000)
    table = samples_table([slow_generator])
    [again] = results_from_samples(table, points, tmp_path, made=set())
    assert again.overhead_ns == pytest.approx(15_000.0)
    assert again.generator_ns == pytest.approx(8000.0)
    assert again.late_ns is None  # its sample did not record releases
    late = dataclasses.replace(result, late_ns=np.full(len(occupied), 3000.0))
    [kept] = results_from_samples(samples_table([late]), points, tmp_path, made=set())
    assert kept.late_ns is not None and kept.late_ns.tolist() == [3000.0] * len(occupied)
    older_table = table.drop(columns=["overhead_ns", "generator_ns"])
    [older] = results_from_samples(older_table, points, tmp_path, made=set())
    assert older.overhead_ns is None
    assert older.queue.capacity_rps == pytest.approx(4e9 / 10_000)


def test_no_search_yet_is_an_empty_table_with_its_columns(tmp_path: Path) -> None:
    from pimcloud.analysis.characterisation import VALIDATION_COLUMNS, validation

    table = validation([], pd.DataFrame())
    table.to_csv(tmp_path / "validation.csv", index=False)
    assert list(pd.read_csv(tmp_path / "validation.csv").columns) == VALIDATION_COLUMNS


def test_a_curve_crosses_qos_between_its_points() -> None:
    from pimcloud.analysis.characterisation import curve_max_load

    rps = np.array([100.0, 200.0, 300.0])
    p99 = np.array([1.0, 2.0, 4.0])
    assert curve_max_load(rps, p99, 3.0) == pytest.approx(250.0)
    assert curve_max_load(rps, p99, 0.5) == 0.0  # misses QoS at its lowest load
    assert curve_max_load(rps, p99, 9.0) == 300.0  # meets it all the way: a lower bound


def test_a_carried_row_is_judged_again_at_a_moved_qos() -> None:
    from pimcloud.analysis.characterisation import rejudged

    curve = pd.DataFrame({"arch": "arch4", "app": "kvstore", "utilisation": [0.1, 0.2, 0.3],
                          "rps": [100.0, 200.0, 300.0], "p99_ns": [1.0, 2.0, 4.0]})
    rows = pd.DataFrame({"arch": ["arch4", "arch4", "arch8"],
                         "app": ["kvstore", "imgdnn", "kvstore"],
                         "qos_ns": [2.0, 2.0, 3.0], "tail_over_qos": [0.5, 0.1, 0.2],
                         "max_load_rps": [200.0, 50.0, 70.0]})
    qos = pd.DataFrame({"app": ["kvstore", "imgdnn"], "qos_ns": [3.0, 5.0]})
    notes: list[str] = []
    out = rejudged(rows, curve, qos, notes).set_index(["arch", "app"])
    assert list(out.index) == [("arch4", "kvstore"), ("arch8", "kvstore")]
    assert out.loc[("arch4", "kvstore"), "max_load_rps"] == pytest.approx(250.0)
    assert out.loc[("arch4", "kvstore"), "tail_over_qos"] == pytest.approx(1 / 3)
    assert out.loc[("arch8", "kvstore"), "max_load_rps"] == 70.0  # its QoS did not move
    assert len(notes) == 2 and notes[1].startswith("left out arch4 imgdnn")
    # This study made arch4 kvstore again: its curve is not the carried row's to judge by.
    again = rejudged(rows, curve.assign(carried=False), qos)
    assert ("arch4", "kvstore") not in set(zip(again["arch"], again["app"], strict=True))


PLACED_STUDY = dataclasses.replace(load_study("characterisation-gem5"), placements=("ft", "cc"))


def kvstore_result(root: Path, preset: str, placement: str, service_us: float) -> CellResult:
    """A kvstore cell of ``PLACED_STUDY`` whose sample meets its model."""
    cell = next(c for c in PLACED_STUDY.cells() if (c.preset, c.service, c.placement)
                == (preset, "kvstore", placement))
    times = np.random.default_rng(1).exponential(service_us * 1e3, 300)
    made = CellResult(cell, times, pd.DataFrame(), 1.0, root, study="s")
    made.points = pd.DataFrame({"rps": [cell.sample_rps], "requests": [300],
                                "p99_ns": [made.queue.p99_ns(cell.sample_rps)],
                                "p99_low_ns": np.nan, "p99_high_ns": np.nan,
                                "preset": preset, "app": "kvstore",
                                "placement": placement, "dynamic": "none"})
    return made


def test_fig3_is_drawn_at_table2_too_where_no_placement_meets_the_knee(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pimcloud.analysis import characterisation

    study = PLACED_STUDY

    def result(preset: str, placement: str, service_us: float) -> CellResult:
        return kvstore_result(tmp_path, preset, placement, service_us)

    # arch1's knee lies below what a wimpy request takes alone: no placement meets it.
    results = [result("arch1", "ft", 2), result("arch8", "ft", 100),
               result("arch9", "ft", 100), result("arch9", "cc", 200)]
    monkeypatch.setattr(characterisation, "read_study", lambda *_: results)
    out = characterisation.write_study_report(study, tmp_path, tmp_path / "report")
    # --services: only those services' cells are this report's.
    none = characterisation.write_study_report(study, tmp_path, tmp_path / "none",
                                               services={"imgdnn"})
    for table in ("table_iii", "samples", "points"):
        assert "kvstore" not in (none.parent / "tables" / f"{table}.csv").read_text()
    knee = pd.read_csv(out.parent / "tables" / "placement.csv")
    assert (knee["max_load_rps"] == 0).all()
    at_table2 = pd.read_csv(out.parent / "tables" / "placement_table2.csv").set_index(
        "placement")
    # Twice the service time: less than half the load under the same 1 ms (its tail
    # fills more of QoS), first touch about arch8's.
    assert at_table2.loc["ft", "normalized_max_load"] == pytest.approx(1.0, rel=0.05)
    assert 0.3 < at_table2.loc["cc", "normalized_max_load"] < 0.5
    assert (out.parent / "figures" / "fig3-table2.png").is_file()
    assert "Fig. 3 at Table II" in out.read_text()
    # Table III and the claims at Table II's targets beside the knee's.
    table2 = pd.read_csv(out.parent / "tables" / "table_iii_table2.csv").set_index("arch")
    assert table2.loc["arch8", "max_load_rps"] > 0 and (table2["qos_ns"] == 1e6).all()
    checks = pd.read_csv(out.parent / "tables" / "claims.csv")
    assert list(checks["qos"].drop_duplicates()) == ["knee", "table2"]
    arch8 = checks[checks["claim"].str.startswith("Arch 8 beats")].set_index("qos")
    assert arch8.loc["knee", "numbers"] == "arch8 0.00 against arch1 1.00 over kvstore"
    assert (out.parent / "figures" / "table_iii-table2.png").is_file()
    assert not arch8.loc["table2", "numbers"].startswith("arch8 0.00 ")


def test_a_reference_placement_cell_without_samples_is_in_fig3_at_table2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cells made before the reference kept samples (arch8 and arch9 imgdnn) are judged
    again at Table II's QoS from their curves, in Fig. 3 as in Table III."""
    from pimcloud.analysis import characterisation

    results = [kvstore_result(tmp_path, preset, placement, service_us)
               for preset, placement, service_us in (("arch1", "ft", 2), ("arch8", "ft", 100),
                                                     ("arch9", "ft", 90), ("arch9", "cc", 200))]
    monkeypatch.setattr(characterisation, "read_study", lambda *_: results)
    reference = tmp_path / "reference"
    characterisation.write_study_report(PLACED_STUDY, tmp_path, tmp_path / "r1",
                                        reference=reference)
    samples = pd.read_csv(reference / "samples.csv")
    (reference / "samples.csv").write_text(samples.iloc[:0].to_csv(index=False))
    monkeypatch.setattr(characterisation, "read_study", lambda *_: [])
    out = characterisation.write_study_report(PLACED_STUDY, tmp_path, tmp_path / "r2",
                                              reference=reference)
    table2 = pd.read_csv(out.parent / "tables" / "table_iii_table2.csv").set_index("arch")
    at_table2 = pd.read_csv(out.parent / "tables" / "placement_table2.csv")
    # CC has no curve of its own (Table III's are first touch): left out, and said.
    assert list(at_table2["policy"]) == ["ft"] and at_table2["carried"].all()
    row = at_table2.iloc[0]
    assert row["normalized_to"] == "arch8" and row["max_load_rps"] > 0
    assert row["normalized_max_load"] == pytest.approx(
        table2.loc["arch9", "max_load_rps"] / table2.loc["arch8", "max_load_rps"])


def test_a_carried_placement_row_is_judged_again_only_where_it_has_a_curve() -> None:
    from pimcloud.analysis.characterisation import rejudged

    curve = pd.DataFrame({"arch": "arch9", "app": "kvstore", "utilisation": [0.1, 0.2, 0.3],
                          "rps": [100.0, 200.0, 300.0], "p99_ns": [1.0, 2.0, 4.0]})
    rows = pd.DataFrame({"arch": "arch9", "app": "kvstore", "placement": ["ft", "cc", "ft"],
                         "dynamic": ["none", "none", "migration"],
                         "policy": ["ft", "cc", "ft+mig"], "qos_ns": 2.0,
                         "tail_over_qos": 0.5, "max_load_rps": [200.0, 150.0, np.nan]})
    qos = pd.DataFrame({"app": ["kvstore"], "qos_ns": [3.0]})
    notes: list[str] = []
    out = rejudged(rows, curve, qos, notes)
    # First touch alone is Table III's cell, whose curve this is; CC and migration are not.
    assert list(out["policy"]) == ["ft"] and out["max_load_rps"].iloc[0] == pytest.approx(250)
    assert [n.split(":")[0] for n in notes] == [
        "judged arch9 kvstore ft again at the new QoS 0.0 us (was 0.0 us; no samples in the "
        "reference)", "left out arch9 kvstore cc", "left out arch9 kvstore ft+mig"]
    # A model that missed its own sample keeps no max load, and is said so.
    invalid = rows.iloc[[0]].assign(max_load_rps=np.nan)
    notes.clear()
    again = rejudged(invalid, curve, qos, notes)
    assert again["max_load_rps"].isna().all() and "missed its own sample" in notes[0]


def test_fig4_comes_from_the_sampled_runs_of_cells_with_the_counters(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pimcloud.analysis import characterisation

    study = dataclasses.replace(load_study("characterisation-gem5"),
                                placements=("ft", "cc"), dynamic=("migration",))
    results = []
    for preset, placement, dynamic, lines in (
            ("arch1", "ft", "none", None),
            ("arch9", "cc", "migration", ["0x10 90 private ro 4 - -",
                                          "0x11 30 shared rw 5 - -",
                                          "0x12 10 shared rw 5 - -"])):
        cell = next(c for c in study.cells() if (c.preset, c.service, c.placement,
                                                   c.dynamic)
                    == (preset, "kvstore", placement, dynamic))
        run = tmp_path / cell.name
        (run / "results").mkdir(parents=True)
        if lines:
            (run / "results" / "hw-hottest-node2.txt").write_text(
                f"frames {len(lines)} node 2 scan_ps 9\n" + "\n".join(lines) + "\n")
        times = np.random.default_rng(1).exponential(20e3, 300)
        made = CellResult(cell, times, pd.DataFrame(), 1.0, tmp_path, study="s",
                          sample_dir=run)
        made.points = pd.DataFrame({"rps": [cell.sample_rps], "requests": [300],
                                    "p99_ns": [made.queue.p99_ns(cell.sample_rps)],
                                    "p99_low_ns": np.nan, "p99_high_ns": np.nan,
                                    "preset": preset, "app": "kvstore",
                                    "placement": placement, "dynamic": dynamic})
        results.append(made)
    monkeypatch.setattr(characterisation, "read_study", lambda *_: results)
    out = characterisation.write_study_report(study, tmp_path, tmp_path / "report")
    types = pd.read_csv(out.parent / "tables" / "page_types.csv")
    # Only the cell with counters, every type (zero where none), shares of its accesses.
    assert set(types["arch"]) == {"arch9"} and len(types) == 4
    share = types.set_index("page_type")["share"]
    assert share["private ro"] == pytest.approx(90 / 130)
    assert share["shared rw"] == pytest.approx(40 / 130) and share["shared ro"] == 0
    assert (out.parent / "figures" / "fig4.png").is_file() and "Fig. 4" in out.read_text()
    # Into a reference and out again: a later part without counters keeps the rows.
    reference = tmp_path / "reference"
    characterisation.write_study_report(study, tmp_path, tmp_path / "r1",
                                        reference=reference)
    monkeypatch.setattr(characterisation, "read_study", lambda *_: results[:1])
    again = characterisation.write_study_report(study, tmp_path, tmp_path / "r2",
                                                reference=reference)
    kept = pd.read_csv(again.parent / "tables" / "page_types.csv")
    assert len(kept) == 4 and kept["carried"].all()


def test_arch8_is_compared_with_each_cpu_centric_arch_over_their_common_services() -> None:
    from pimcloud.analysis.characterisation import claims

    table = pd.DataFrame({"arch": ["arch1", "arch1", "arch4", "arch8", "arch8"],
                          "app": ["kvstore", "imgdnn", "kvstore", "kvstore", "imgdnn"],
                          "normalized_max_load": [1.0, 1.0, 0.5, 0.6, 0.5],
                          "max_load_rps": [10.0, 10.0, 5.0, 6.0, 5.0],
                          "tail_over_qos": 0.1, "qos_ns": 1.0, "mean_occupied_us": 1.0})
    row = claims(table).set_index("claim").loc[
        "Arch 8 beats every CPU-centric architecture on average (normalised max load)"]
    assert row["verdict"] == "does not hold (of arch1, arch4 only)"
    # arch4 has no imgdnn: arch8's imgdnn does not weigh on that comparison.
    assert row["numbers"] == ("arch8 0.55 against arch1 1.00 over imgdnn, kvstore; "
                              "arch8 0.60 against arch4 0.50 over kvstore")
    ahead = claims(table[table["arch"] != "arch1"]).set_index("claim")
    assert ahead.iloc[0]["verdict"] == "holds (of arch4 only)"


def test_pairs_at_zero_or_without_a_max_load_decide_no_claim() -> None:
    from pimcloud.analysis.characterisation import claims

    table = pd.DataFrame({"arch": ["arch4", "arch8", "arch1", "arch5"],
                          "app": "kvstore", "normalized_max_load": [0.0, 0.0, 1.0, np.nan],
                          "max_load_rps": [0.0, 0.0, 10.0, np.nan],
                          "tail_over_qos": 0.1, "qos_ns": 1.0, "mean_occupied_us": 1.0})
    rows = claims(table[table["arch"] != "arch1"]).set_index("claim")["verdict"]
    assert rows.iloc[0] == "not measurable"  # arch8 0 against arch4 0
    # arch1 -> arch5 has no max load on arch5 (its model missed its sample): no pair.
    latency = claims(table).set_index("claim").loc[
        "Lower memory latency raises max load (paper: up to 67 %, 26 % on average)"]
    assert latency["verdict"] == "not measurable" and "nan" not in latency["numbers"]


def test_a_cell_with_an_unreadable_counters_file_has_no_fig4_row(tmp_path: Path) -> None:
    from pimcloud.analysis.characterisation import page_types

    study = dataclasses.replace(load_study("characterisation-gem5"), placements=("ft", "cc"),
                                dynamic=("migration",))
    cell = next(c for c in study.cells() if c.dynamic == "migration")
    run = tmp_path / "run" / "results"
    run.mkdir(parents=True)
    (run / "hw-hottest-node1.txt").write_text("frames 1 node 1 scan_ps 9\n"
                                              "0x10 90 private ro 4 - -\n")
    (run / "hw-hottest-node2.txt").write_text("frames 2 node 2 scan_ps 9\n0x11 5\n")
    result = CellResult(cell, np.full(10, 1e3), pd.DataFrame(), 1.0, tmp_path,
                        sample_dir=tmp_path / "run")
    notes: list[str] = []
    assert page_types([result], notes).empty
    assert notes and notes[0].startswith(f"left out of Fig. 4 {cell.name}")
    (run / "hw-hottest-node2.txt").unlink()
    assert set(page_types([result])["accesses"]) == {90, 0}


def test_a_cell_has_each_stacks_queue_from_its_sampled_runs_statistics(
        tmp_path: Path) -> None:
    import json

    from pimcloud.analysis.characterisation import memory_queues
    from pimcloud.analysis.synthetic import controller_window_dump
    from pimcloud.topology import load_topology

    study = dataclasses.replace(load_study("characterisation-gem5"), placements=("ft", "il"))
    cell = next(c for c in study.cells() if (c.preset, c.placement) == ("arch9", "il"))
    run = tmp_path / "run"
    (run / "m5out").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": "r", "topology": "arch9", "execution": {
        "command": ["gem5", "pim_fs.py", "--topology", "arch9", "--mem-divisor", "8"]}}))
    arch9 = load_topology("arch9").with_memory_divided(8)
    (run / "m5out" / "stats.txt").write_text(
        controller_window_dump(arch9, 2e9, 1e9, 5e6, 0, 1000, 3e7, 1.5)
        + controller_window_dump(arch9, 3e9, 1e9, 10, 5e6, 9000, 0, 0))  # the wrap-up
    result = CellResult(cell, np.full(10, 1e3), pd.DataFrame(), 1.0, tmp_path, study="s",
                        sample_dir=run)
    rows = memory_queues([result]).set_index("memory")
    # arch9 divided by 8 has one controller a stack; the wrap-up's reads are left out.
    assert sorted(rows.index) == ["stack0", "stack1"]
    assert (rows["reads"] == 1000).all()
    assert rows["queue_ns"].tolist() == pytest.approx([30.0, 30.0])
    assert (rows["placement"] == "il").all() and (rows["study"] == "s").all()
    (run / "m5out" / "stats.txt").unlink()
    notes: list[str] = []
    assert memory_queues([result], notes).empty
    assert notes and cell.name in notes[0] and "stats.txt" in notes[0]


def test_fig3_memory_draws_only_the_presets_of_placement_cells() -> None:
    from pimcloud.analysis.characterisation import _spanning

    rows = pd.DataFrame({"arch": ["arch1", "arch1", "arch9", "arch9", "arch9", "arch9"],
                         "app": "kv", "placement": ["ft", "ft", "ft", "ft", "il", "il"],
                         "dynamic": "none",
                         "memory": ["stack0", "stack1"] * 3,
                         "queue_ns": [10.0, 10.0, 60.0, 5.0, 30.0, 25.0]})
    drawn = _spanning(rows)
    assert set(drawn["arch"]) == {"arch9"}  # arch1's first touch is Table III's, not Fig. 3's
    assert drawn.set_index(["policy", "memory"]).loc[("ft", "stack0"), "queue_ns"] == 60.0


def test_a_lone_placement_is_not_normalised_to_itself() -> None:
    """Fig. 3 without arch8's baseline normalises to the best static placement: a service
    with only one placement would be a bar of 1.0 over itself, so it gets none."""
    import numpy as np
    import pandas as pd
    from pimcloud.analysis.characterisation import placement_normalised

    frame = pd.DataFrame([
        {"arch": "arch9", "app": "oltp", "placement": "ft", "dynamic": "none",
         "max_load_rps": 750.0},
        {"arch": "arch9", "app": "search", "placement": "ft", "dynamic": "none",
         "max_load_rps": 900.0},
        {"arch": "arch9", "app": "search", "placement": "il", "dynamic": "none",
         "max_load_rps": 1000.0},
        {"arch": "arch9", "app": "kvstore", "placement": "ft", "dynamic": "none",
         "max_load_rps": 50.0},
        {"arch": "arch9", "app": "translate", "placement": "ft", "dynamic": "none",
         "max_load_rps": 0.0}])
    local = pd.DataFrame([{"arch": "arch8", "app": "kvstore", "max_load_rps": 100.0},
                          {"arch": "arch8", "app": "translate", "max_load_rps": 0.0}])
    out = placement_normalised(frame, local).set_index(["app", "placement"])
    assert np.isnan(out.loc[("oltp", "ft"), "normalized_max_load"])
    assert out.loc[("oltp", "ft"), "normalized_to"] == "nothing yet (one placement, no arch8)"
    # arch8 made, but at no load within QoS: no baseline either, and said so.
    assert np.isnan(out.loc[("translate", "ft"), "normalized_max_load"])
    assert out.loc[("translate", "ft"), "normalized_to"] == (
        "nothing yet (one placement, arch8 carries no load)")
    assert out.loc[("search", "ft"), "normalized_max_load"] == 0.9  # over the best, IL
    assert out.loc[("kvstore", "ft"), "normalized_max_load"] == 0.5  # over arch8's


def test_lower_latency_holds_only_when_most_pairs_gain() -> None:
    """A mean gain from one large pair while most pairs lose is not the paper's trend."""
    from pimcloud.analysis.characterisation import claims

    claim = "Lower memory latency raises max load (paper: up to 67 %, 26 % on average)"

    def latency(loads: dict[str, float]) -> pd.Series:
        table = pd.DataFrame({"arch": list(loads), "app": "search",
                              "max_load_rps": list(loads.values()), "tail_over_qos": 0.1,
                              "qos_ns": 1.0, "mean_occupied_us": 1.0})
        table["normalized_max_load"] = table["max_load_rps"] / 100
        return claims(table).set_index("claim").loc[claim]

    # arch1->arch5 +60 %, arch2->arch6 -10 %, arch3->arch7 -10 %: mean +13 %, 1 of 3 higher.
    split = latency({"arch1": 100, "arch5": 160, "arch2": 100, "arch6": 90,
                     "arch3": 100, "arch7": 90})
    assert split["verdict"] == "does not hold"
    assert "+13% on average over 3 pairs, higher in 1" in split["numbers"]
    most = latency({"arch1": 100, "arch5": 120, "arch2": 100, "arch6": 110,
                    "arch3": 100, "arch7": 95})
    assert most["verdict"] == "holds" and "higher in 2" in most["numbers"]


def test_curves_drawn_in_other_processes_are_the_same_curves() -> None:
    """A report draws its cells' curves in a process a core; a cell's curve is its own
    common random numbers, whichever process draws it."""
    from pimcloud.analysis.characterisation import PARALLEL_FROM, curves

    study = load_study("characterisation-gem5")
    cells = [c for c in study.cells() if c.service == "kvstore"][:PARALLEL_FROM]
    rng = np.random.default_rng(5)
    results = [CellResult(cell, rng.lognormal(np.log(10e3), 0.3, 200), pd.DataFrame(), 1.0,
                          Path("."), overhead_ns=2e3) for cell in cells]
    here = curves(results, jobs=1)
    there = curves(results, jobs=2)
    assert len(here) == PARALLEL_FROM * 86
    pd.testing.assert_frame_equal(here, there, check_exact=True)
