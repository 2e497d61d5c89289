"""campaign plan output, speed tables, and the max-load search against the fake gem5."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from pimcloud.runs.campaign import Campaign, prepare_campaign
from pimcloud.runs.cli import execute
from pimcloud.runs.maxload import MaxLoad, find_max_load
from pimcloud.runs.speeds import record_speed, speed_of


def _shipped_weights(service: str) -> dict[str, float]:
    """speeds.toml's weights of a service's ops, by preset."""
    from pimcloud.runs.speeds import DEFAULTS

    with DEFAULTS.open("rb") as stream:
        return dict(tomllib.load(stream)["gem5"]["ops"][service]["weights"])


def _shipped_presets(service: str) -> str:
    """The presets speeds.toml has a weight of a service's ops for, as a plan names them."""
    return ", ".join(sorted(_shipped_weights(service)))


def _shipped_median_weight(service: str) -> float:
    """What a preset without a weight of its own takes: the median of speeds.toml's."""
    return statistics.median(_shipped_weights(service).values())


def test_plan_lists_runs_and_estimates(write_spec: Callable[..., Path],
                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    spec = write_spec()
    done = subprocess.run([sys.executable, "-m", "pimcloud.cli", "campaign", "plan", str(spec),
                           "--backend", "gem5", "--jobs", "2"], capture_output=True,
                          text=True, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for run_id in ("load-0.2_manager-pimcloud", "load-0.5_manager-default"):
        assert run_id in out
    assert "kvstore 200" in out and "kvstore 500" in out
    # gem5 runs restore an app checkpoint (made once for the app set) by default.
    default = speed_of("gem5", "restore", "paper")
    per_run = default.host_seconds(0.11)
    assert f"{default.host_per_sim:g} x" in out and "checkpoint boot of paper" in out
    assert "app checkpoint of kvstore on paper" in out and "its 4 run(s)" in out
    assert "with 2 parallel job(s)" in out
    assert round(per_run) > 0
    # A measured speed replaces the default, and plan says so.
    record_speed("gem5", "restore", "paper", 0.1, 1000.0)
    record_speed("gem5", "restore", "paper", 0.2, 1900.0)
    measured = speed_of("gem5", "restore", "paper")
    assert measured.source == "measured (2 runs)"
    assert measured.host_per_sim == pytest.approx(9000) and measured.overhead_s == \
        pytest.approx(100)
    again = subprocess.run([sys.executable, "-m", "pimcloud.cli", "campaign", "plan",
                            str(spec), "--backend", "gem5"], capture_output=True, text=True,
                           env=os.environ.copy()).stdout
    assert "measured (2 runs)" in again


def test_plan_reports_spec_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[scenario]\napps = ["kvstore"]\nload = 0.5\n[length]\nmeasured = "1s"\n')
    done = subprocess.run([sys.executable, "-m", "pimcloud.cli", "campaign", "plan", str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "apps.kvstore.max_rps is missing" in done.stderr


def test_max_load_bisection_finds_the_knee_and_reuses_runs(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake serves kvstore at 1000 rps (M/M/1): p99 = ln(100) / (1000 - rps) s, so a
    # 20 ms QoS is met up to 1000 - 4.6 / 0.02 = 770 rps.
    monkeypatch.setenv("FAKE_GEM5_CAPACITY", json.dumps({"kvstore": 1000}))
    spec = write_spec(extra="")
    spec.write_text(spec.read_text().replace('qos = "5ms"', 'qos = "20ms"'))
    campaign = prepare_campaign(spec, tmp_path / "out")

    def make_runs() -> None:
        execute(campaign, "local", jobs=2, live=False)

    result = find_max_load(campaign, "kvstore", make_runs, start_rps=400, tolerance=0.05,
                           log=lambda _: None)
    assert result.first_miss_rps is not None
    assert result.first_miss_rps - result.max_load_rps <= 0.05 * result.first_miss_rps
    assert 650 <= result.max_load_rps <= 800, result
    probes = len(result.probes)
    assert probes <= 12
    saved = json.loads((tmp_path / "out" / "maxload-kvstore.json").read_text())
    assert saved["max_load_rps"] == result.max_load_rps
    # The same search again makes no new run.
    before = len(list((tmp_path / "out" / "runs").iterdir()))
    again = find_max_load(campaign, "kvstore", make_runs, start_rps=400, log=lambda _: None)
    # The sweep's own runs were made first and count as points (pimcloud at 200 and 500
    # rps); every known point is reused.
    assert {200.0, 500.0} <= {p["rps"] for p in result.probes}
    assert again.max_load_rps == result.max_load_rps and again.reused == probes
    assert len(list((tmp_path / "out" / "runs").iterdir())) == before


def test_a_template_at_the_start_load_is_the_first_probe_not_made_twice(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GEM5_CAPACITY", json.dumps({"kvstore": 1000}))
    campaign = one_point_campaign(write_spec, tmp_path, "out", load=0.4)
    assert [run.axes_record()["rps"] for run in campaign.runs()] == [400.0]
    result = find_max_load(campaign, "kvstore",
                           lambda: execute(campaign, "local", jobs=2, live=False),
                           start_rps=400, tolerance=0.05, log=lambda _: None)
    at_start = [p for p in result.probes if p["rps"] == 400.0]
    assert len(at_start) == 1 and at_start[0]["run_id"] == campaign.runs()[0].run_id
    made = [d.name for d in (tmp_path / "out" / "runs").iterdir()]
    assert len(made) == len(result.probes), made


def test_max_load_with_early_stop_finds_the_same_knee(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Probes that certainly miss stop early (the fake cuts them as the harness would) and
    count as misses: the same max load as without early stop."""
    monkeypatch.setenv("FAKE_GEM5_CAPACITY", json.dumps({"kvstore": 1000}))
    found = {}
    for early in (False, True):
        spec = write_spec(f"es{int(early)}", extra="[early_stop]\nmiss = true\n" if early
                          else "")
        spec.write_text(spec.read_text().replace('qos = "5ms"', 'qos = "20ms"'))
        campaign = prepare_campaign(spec, tmp_path / f"out{int(early)}")
        said: list[str] = []
        found[early] = find_max_load(
            campaign, "kvstore", lambda c=campaign: execute(c, "local", jobs=2, live=False),
            start_rps=400, tolerance=0.05, log=said.append)
        stopped = [p for p in found[early].probes if p["early_stop"]
                   and p["early_stop"]["verdict"] == "miss"]
        assert bool(stopped) == early
        assert any("stopped early after" in line for line in said) == early
    assert found[True].max_load_rps == found[False].max_load_rps


def one_point_campaign(write_spec: Callable[..., Path], tmp_path: Path, name: str,
                       load: float) -> Campaign:
    """kvstore alone under a 20 ms QoS, the template one run at ``load`` (no axes)."""
    spec = write_spec(name, extra="")
    text = spec.read_text().replace('qos = "5ms"', 'qos = "20ms"')
    text = text.replace('measured = "100ms"', 'measured = "200ms"')  # 10 QoS targets
    text = text.replace("[axes]\nload = [0.2, 0.5]\nmanager = [\"pimcloud\", "
                        "\"default\"]\n", "")
    spec.write_text(text.replace('manager = "pimcloud"', f'manager = "pimcloud"\nload = {load}'))
    return prepare_campaign(spec, tmp_path / name)


def _search_with_a_burst(write_spec: Callable[..., Path], tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch, burst_from: float, seeds: int
                         ) -> tuple[MaxLoad, list[str]]:
    """kvstore served at 1000 rps (a 20 ms QoS is met up to 770 rps), the template's seed
    with a burst from ``burst_from`` rps on; the search from 400 rps."""
    monkeypatch.setenv("FAKE_GEM5_CAPACITY", json.dumps({"kvstore": 1000}))
    monkeypatch.setenv("FAKE_GEM5_BURST", json.dumps({"seed": 1, "from_rps": burst_from}))
    name = f"burst{burst_from:g}-seeds{seeds}"
    campaign = one_point_campaign(write_spec, tmp_path, name, load=0.4)
    assert campaign.spec.scenario.seed == 1
    said: list[str] = []
    result = find_max_load(
        campaign, "kvstore", lambda: execute(campaign, "local", jobs=2, live=False),
        start_rps=400, tolerance=0.05, log=said.append, seeds=seeds)
    by_load = {load["rps"]: load for load in result.loads}
    assert result.first_miss_rps is not None
    assert result.first_miss_rps - result.max_load_rps <= 0.05 * result.first_miss_rps
    assert result.confirmed, said
    for end in (result.max_load_rps, result.first_miss_rps):
        assert by_load[end]["runs"] == seeds, result.loads
    assert len(result.probes) == sum(load["runs"] for load in result.loads)
    assert any("confirming" in line for line in said) == (seeds > 1)
    return result, said


def test_a_burst_in_one_run_near_the_knee_is_outvoted_by_more_seeds(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst from 700 rps on: one run per load ends the search below 700; three seeds
    per final load outvote the burst."""
    one, _ = _search_with_a_burst(write_spec, tmp_path, monkeypatch, 700, 1)
    three, _ = _search_with_a_burst(write_spec, tmp_path, monkeypatch, 700, 3)
    assert one.max_load_rps < 700 <= one.first_miss_rps
    assert 700 <= three.max_load_rps <= 800, three.loads
    # The burst's runs are in the record, outvoted: some of seed 1's runs missed at loads
    # that meet.
    outvoted = [p for p in three.probes if p["seed"] == 1 and not p["meets_qos"]
                and p["rps"] <= three.max_load_rps]
    assert outvoted, three.probes


def test_a_seed_bad_at_every_load_is_outvoted_without_a_crawl(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The template's seed misses from the start load on: once it is outvoted every new
    load runs at every seed, and the search still ends confirmed near the knee, in a
    bounded number of runs (not one confirmation per load above the first bracket)."""
    result, said = _search_with_a_burst(write_spec, tmp_path, monkeypatch, 400, 3)
    assert 650 <= result.max_load_rps <= 800, result.loads
    assert len(result.probes) <= 45, result.loads
    assert not any("warning" in line for line in said)


def test_seeds_below_one_are_refused(fake_gem5: Path, write_spec: Callable[..., Path],
                                     tmp_path: Path) -> None:
    from pimcloud.runs.campaign import CampaignError

    campaign = prepare_campaign(write_spec(), tmp_path / "out")
    with pytest.raises(CampaignError, match="seeds is 0"):
        find_max_load(campaign, "kvstore", lambda: None, start_rps=400, seeds=0)


def test_speed_by_busy_cores_is_fitted_once_the_samples_differ(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    # host = 60 + simulated x (1000 + 500 x busy); each run simulates 50 ms beyond its length
    for simulated, busy in ((0.1, 2), (0.2, 8), (0.1, 20), (0.3, 4)):
        record_speed("gem5", "restore", "paper", simulated, 60 + simulated * (1000 + 500 * busy),
                     busy, length_s=simulated - 0.05)
    speed = speed_of("gem5", "restore", "paper")
    assert "by busy cores" in speed.source
    assert speed.overhead_s == pytest.approx(60)  # the defaults' (speeds.toml)
    assert speed.extra_sim_s == pytest.approx(0.05)
    assert speed.host_seconds(0.15, 10) == pytest.approx(60 + 0.2 * 6000)


def test_speed_by_guest_work_is_fitted_and_the_plan_prices_runs_by_it(
        write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pimcloud.runs.plan import format_plan, guest_work_estimate, make_plan
    from pimcloud.runs.spec import load_spec

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    # host = 100 + 5000 x the services' guest CPU s, whatever the simulated time
    for simulated, work in ((0.1, 0.02), (0.1, 0.2), (0.3, 0.05), (0.2, 0.1)):
        record_speed("gem5", "restore", "paper", simulated, 100 + 5000 * work, 4,
                     length_s=simulated - 0.05, work_s=work)
    speed = speed_of("gem5", "restore", "paper")
    assert "by guest work" in speed.source
    assert speed.overhead_s == pytest.approx(100) and speed.per_work == pytest.approx(5000)
    spec = load_spec(write_spec())
    plan = make_plan(spec, "gem5", 1, {"paper"}, None)
    length = spec.length.warmup_s + spec.length.measured_s
    loads = {}
    for run in plan.runs:
        work = guest_work_estimate(run, length)
        assert work is not None
        assert plan.per_run[run.run_id] == pytest.approx(100 + 5000 * work)
        loads[run.scenario.load] = work
    # A run at a larger share of its max load keeps its workers busier.
    assert loads[0.5] == pytest.approx(loads[0.2] * 2.5)
    assert "5000 x guest CPU s" in format_plan(plan)
    # Runs of one service at one window do much the same work: the line then keeps the
    # defaults' overhead (speeds.toml: 60 s for restore/*) and fits only the slope.
    for _ in range(3):
        record_speed("gem5", "restore", "mini", 0.1, 60 + 4000 * 0.05, 4, length_s=0.05,
                     work_s=0.05)
    alike = speed_of("gem5", "restore", "mini")
    assert alike.per_work == pytest.approx(4000) and alike.overhead_s == pytest.approx(60)
    # So do runs whose work spans less than a factor of two: arch9's three imgdnn runs
    # (their host times as noisy) would put the intercept at 3,190 s and price a kvstore
    # cell of a fiftieth of their work near an hour.
    for work, host in ((0.340351, 4273.471), (0.448769, 4805.714), (0.424108, 4033.626)):
        record_speed("gem5", "restore", "arch9", 0.09, host, 16, length_s=0.05, work_s=work)
    noisy = speed_of("gem5", "restore", "arch9")
    assert noisy.overhead_s < 200 and noisy.host_seconds(0.05, 16, 0.02) < 500
    # Only gem5's restored runs are priced by work: QEMU's time is the guest's.
    for work in (0.02, 0.2, 0.05):
        record_speed("qemu", "run", "paper", 0.1, 50.0 + 0.1 * work, 4, length_s=0.05,
                     work_s=work)
    assert speed_of("qemu", "run", "paper").per_work == 0


def test_a_run_is_priced_by_its_guest_ops_where_measured(
        write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pimcloud.runs.plan import format_plan, guest_work_estimate, make_plan
    from pimcloud.runs.spec import load_spec
    from pimcloud.runs.speeds import (
        op_weight,
        ops_per_request,
        record_op_weight,
        record_service_ops,
    )

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    # host = 300 + 2 s a million ops; the services' CPU seconds say otherwise (a service
    # that waits on a lock holds its workers longer for the same ops), so only ops fit.
    for ops, work in ((1e8, 0.2), (4e8, 0.9), (2e8, 0.5)):
        record_speed("gem5", "restore", "paper", 0.1, 300 + 2e-6 * ops, 4, length_s=0.05,
                     work_s=work, ops=ops)
    speed = speed_of("gem5", "restore", "paper")
    assert "by guest ops" in speed.op_source and "by guest work" in speed.source
    assert speed.op_overhead_s == pytest.approx(300) and speed.per_op == pytest.approx(2e-6)
    # the work's line, for services without ops a request, keeps its own intercept
    assert speed.per_work > 0 and speed.overhead_s != pytest.approx(300)
    assert ops_per_request("gem5", "kvstore") is None
    spec = load_spec(write_spec())
    length = spec.length.warmup_s + spec.length.measured_s
    by_work = make_plan(spec, "gem5", 1, {"paper"}, None)
    for run in by_work.runs:
        work = guest_work_estimate(run, length)
        assert work is not None
        assert by_work.per_run[run.run_id] == pytest.approx(
            speed.overhead_s + speed.per_work * work)
    assert "kvstore (its runs on the lines by guest ops): none measured" in format_plan(
        by_work)
    for value in (4e5, 5e5, 6e5):
        record_service_ops("gem5", "kvstore", value * 300, 300)
    assert ops_per_request("gem5", "kvstore") == (5e5, "measured (3 runs)")

    def priced_by_ops(weight: float) -> str:
        plan = make_plan(spec, "gem5", 1, {"paper"}, None)
        for run in plan.runs:
            ops = run.scenario.rps_of(run.apps[0]) * length * 5e5
            assert plan.per_run[run.run_id] == pytest.approx(300 + 2e-6 * ops * weight)
            assert plan.per_run[run.run_id] != pytest.approx(by_work.per_run[run.run_id])
        return format_plan(plan)

    text = priced_by_ops(1.0)
    assert "300 s + 2 x guest M ops [measured (3 runs, by guest ops)]" in text
    assert text.endswith(
        "guest ops of kvstore (its runs on the lines by guest ops): 0.5 M a request "
        "[measured (3 runs)]")
    # A service whose ops cost more to simulate than the line's (its runs measured so):
    # its ops count at their weight.
    for value in (1.5, 2.0, 2.5):
        record_op_weight("gem5", "kvstore", value)
    assert op_weight("gem5", "kvstore") == (2.0, "measured (3 runs)")
    assert ("kvstore (its runs on the lines by guest ops): 0.5 M a request [measured (3 runs)], "
            "each 2x the line's cost [measured (3 runs)]") in priced_by_ops(2.0)


def test_the_table_iii_presets_price_measured_services_by_ops_before_any_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pimcloud.runs.speeds import op_weight, ops_per_request, record_op_weight

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "none.json"))
    for preset in ("arch2", "arch3", "arch5", "arch6", "arch7"):
        speed = speed_of("gem5", "restore", preset)
        assert speed.per_op > 0 and speed.per_work > 0
        assert speed.op_overhead_s > 0 and speed.op_overhead_s != speed.overhead_s
    # Runs measured by their work alone (before ops were recorded) fit the work's line and
    # leave speeds.toml's line by ops in place.
    for work in (0.2, 0.5, 0.9):
        record_speed("gem5", "restore", "arch2", 0.1, 1000 + 3000 * work, 6, length_s=0.05,
                     work_s=work)
    measured = speed_of("gem5", "restore", "arch2")
    assert measured.per_work == pytest.approx(3000)
    assert measured.overhead_s == pytest.approx(1000)
    assert measured.per_op == speed_of("gem5", "restore", "arch3").per_op > 0
    for service in ("oltp", "imgdnn", "search", "translate"):
        figure = ops_per_request("gem5", service)
        assert figure is not None and 1e5 < figure[0] < 1e7
    speech = ops_per_request("gem5", "speech")  # a decode: hundreds of millions
    assert speech is not None and 1e8 < speech[0] < 1e9
    assert ops_per_request("gem5", "kvstore") is None
    # translate's and speech's ops cost more than the line's on arch2 (their runs there);
    # arch7, where speech has not run, takes the median of its presets' figures; the
    # others' are the line's.
    assert op_weight("gem5", "translate", "arch2")[0] > 1.3
    assert op_weight("gem5", "speech", "arch2")[0] > 1.3
    assert op_weight("gem5", "translate", "arch5") == (0.97, "speeds.toml on arch5")
    assert "arch7" not in _shipped_weights("speech")
    assert op_weight("gem5", "speech", "arch7") == (
        pytest.approx(_shipped_median_weight("speech")),
        f"speeds.toml on {_shipped_presets('speech')}")
    # ... and a measured figure of another preset joins that median
    record_op_weight("gem5", "speech", 2 * _shipped_median_weight("speech") + 1, "arch5")
    shipped_speech = _shipped_weights("speech")
    assert op_weight("gem5", "speech", "arch7") == (
        pytest.approx(statistics.median(
            [*shipped_speech.values(), 2 * _shipped_median_weight("speech") + 1])),
        f"measured (1 runs) and speeds.toml on {', '.join(sorted({*shipped_speech, 'arch5'}))}")
    assert op_weight("gem5", "oltp") == (1.0, "the line's")


def test_a_finished_run_records_its_ops_and_its_ops_a_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pimcloud.runs.progress import last_sim_ops
    from pimcloud.runs.speeds import (
        op_weight,
        ops_per_request,
        record_run_speed,
        requests_generated,
    )

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    run = tmp_path / "run"
    assert last_sim_ops(run / "m5out" / "stats.txt") is None
    (run / "m5out").mkdir(parents=True)
    # gem5 counts simOps from its start: the last dump holds the run's.
    (run / "m5out" / "stats.txt").write_text(
        "---------- Begin Simulation Statistics ----------\n"
        "simOps                 165468706   # Number of ops\n"
        "---------- Begin Simulation Statistics ----------\n"
        "simOps                 502000000   # Number of ops\n")
    ops = last_sim_ops(run / "m5out" / "stats.txt")
    assert ops == 502e6
    (run / "results" / "oltp").mkdir(parents=True)
    (run / "results" / "oltp" / "summary.json").write_text(json.dumps(
        {"measured_cpu_ns": 8e8, "requests": 300, "generated": 400}))
    assert requests_generated(run) == {"oltp": 400}
    record_run_speed("gem5", "restore", "arch2", 0.43, 1955.0, 16, 0.4, run, "oltp", ops)
    # Its ops against arch2's line by ops as it stood (speeds.toml: 411 s + 2.27 s a
    # million): 1,544 s above the intercept for 1,140 s of the line's.
    weight = op_weight("gem5", "oltp")[0]
    assert weight == pytest.approx((1955 - 411) / (2.27e-6 * 502e6), abs=1e-4)
    # Its sample counts its ops at that weight: the line by ops is one of ops at weight 1.
    speeds = json.loads((tmp_path / "speeds.json").read_text())
    assert speeds["gem5/restore/arch2"] == [[0.43, 1955.0, 16, 0.4,
                                             pytest.approx(0.8 * 400 / 300),
                                             pytest.approx(502e6 * weight)]]
    assert ops_per_request("gem5", "oltp") == (1.255e6, "measured (1 runs)")
    # its sample: ops a request, requests, workers started (its summary names none)
    assert speeds["gem5/ops/oltp"] == [[pytest.approx(1.255e6), 400, 0]]
    # Not one service alone (two, or a manager beside it): its ops cannot be split.
    record_run_speed("gem5", "restore", "arch2", 0.43, 1955.0, 16, 0.4, run, None, ops)
    assert ops_per_request("gem5", "oltp") == (1.255e6, "measured (1 runs)")
    # Ops unknown (a resumed run whose segments predate their process names): only work.
    record_run_speed("gem5", "restore", "arch2", 0.43, 1955.0, 16, 0.4, run, "oltp", None)
    speeds = json.loads((tmp_path / "speeds.json").read_text())
    assert speeds["gem5/restore/arch2"][-1] == [0.43, 1955.0, 16, 0.4,
                                                pytest.approx(0.8 * 400 / 300)]
    assert ops_per_request("gem5", "oltp") == (1.255e6, "measured (1 runs)")
    weights = json.loads((tmp_path / "speeds.json").read_text())["gem5/opweight/oltp/arch2"]
    assert len(weights) == 1
    # A QEMU run is timed by the guest, whatever its work: nothing read.
    record_run_speed("qemu", "run", "arch2", 0.43, 50.0, 16, 0.4, run, "oltp", ops)
    assert json.loads((tmp_path / "speeds.json").read_text())["qemu/run/arch2"] == [
        [0.43, 50.0, 16, 0.4]]
    weights = json.loads((tmp_path / "speeds.json").read_text())["gem5/opweight/oltp/arch2"]
    assert len(weights) == 1
    # A probe cut by its early stop generated requests it never served.
    (run / "results" / "oltp" / "summary.json").write_text(json.dumps(
        {"measured_cpu_ns": 8e8, "requests": 100, "generated": 400,
         "early_stop": {"verdict": "miss", "discarded": 250}}))
    assert requests_generated(run) == {"oltp": 150}


def test_a_service_s_ops_are_a_request_s_and_a_worker_s_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """translate's runs: a worker's first requests cost more, so a request's ops grow with
    the workers a run starts; with runs over different worker counts both parts are
    fitted, else speeds.toml's start is taken off each run's figure."""
    from pimcloud.runs.speeds import (
        fit_service_ops,
        record_service_ops,
        service_ops,
    )

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    shipped = service_ops("gem5", "translate")
    assert shipped is not None and shipped.per_worker > 0
    assert shipped.of(400, 16) == pytest.approx(400 * shipped.per_request
                                                + 16 * shipped.per_worker)
    # One worker count: its runs' median, less the shipped start of each of their workers.
    record_service_ops("gem5", "translate", 402 * 8e6, 402, 10)
    one = service_ops("gem5", "translate")
    assert one is not None and one.source == "measured (1 runs)"
    assert one.per_request == pytest.approx(8e6 - 10 * shipped.per_worker / 402)
    assert one.per_worker == shipped.per_worker
    # Three more runs over three worker counts: the fit finds both parts again.
    for requests, workers in ((400, 4), (380, 16), (402, 10)):
        record_service_ops("gem5", "translate", requests * 6e6 + workers * 5e7, requests,
                           workers)
    samples = json.loads((tmp_path / "speeds.json").read_text())["gem5/ops/translate"]
    assert samples[-1] == [pytest.approx(6e6 + 10 * 5e7 / 402), 402, 10]
    assert fit_service_ops(samples[1:]) == (pytest.approx(6e6), pytest.approx(5e7), 3)
    fitted = service_ops("gem5", "translate")
    assert fitted is not None and fitted.source == "fitted over 4 runs"
    # (the first run, 8 M a request on 10 workers, pulls the fit up from the other three)
    assert fitted.per_request > 6.05e6


def test_a_service_s_ops_without_a_fit(tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs that do not say their workers (recorded before they did), or whose figure
    less speeds.toml's start would not be positive, keep their figures as they are, the
    start inside them: a start is never counted twice."""
    from pimcloud.runs.speeds import _append_sample, fit_service_ops, service_ops

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    for value in (7.39e6, 8.98e6, 8.31e6):  # older samples: a request's figure alone
        _append_sample("gem5/ops/translate", [value])
    older = service_ops("gem5", "translate")
    assert older is not None
    assert (older.per_request, older.per_worker) == (8.31e6, 0.0)
    # a short run on many workers: 20 requests less 16 starts would be negative
    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "short.json"))
    _append_sample("gem5/ops/translate", [8e6, 20, 16])
    short = service_ops("gem5", "translate")
    assert short is not None and (short.per_request, short.per_worker) == (8e6, 0.0)
    # A fit that says a worker's start gives ops back is no fit; nor are older samples,
    # one worker count, or workers in step with requests.
    assert fit_service_ops([[7e6, 400, 4], [6e6, 400, 16], [6.5e6, 400, 10]]) is None
    assert fit_service_ops([[7e6], [6e6], [6.5e6]]) is None
    assert fit_service_ops([[7e6, 400, 4], [6e6, 300, 4], [6.5e6, 200, 4]]) is None
    assert fit_service_ops([[7e6, 400, 4], [7e6, 800, 8], [7e6, 1200, 12]]) is None


def test_the_shipped_translate_ops_are_the_fit_of_its_runs() -> None:
    """speeds.toml's translate figures are what the fit makes of the four runs its note
    names, and the weights of arch1, arch8 and arch9 (whose runs did not count their ops)
    are their CPU seconds against the line at those ops (weights_note)."""
    from pimcloud.runs.speeds import DEFAULTS, ServiceOps, fit_service_ops

    with DEFAULTS.open("rb") as stream:
        entry = tomllib.load(stream)["gem5"]["ops"]["translate"]
    runs = [[7.39e6, 402, 4], [7.46e6, 402, 6], [8.31e6, 402, 10], [8.98e6, 402, 16]]
    fitted = fit_service_ops(runs)
    assert fitted is not None
    assert entry["per_request"] == pytest.approx(fitted[0], rel=2e-3)
    assert entry["per_worker"] == pytest.approx(fitted[1], rel=2e-3)
    model = ServiceOps(entry["per_request"], entry["per_worker"], "speeds.toml")
    for value, requests, workers in runs:
        assert model.of(requests, workers) == pytest.approx(value * requests, rel=0.025)
    # (CPU s - 411 s a gem5 process) / (2.27 s a million ops x the fit's ops)
    for preset, cpu, processes, workers in (("arch1", 4246, 1, 4), ("arch8", 9065, 3, 16),
                                            ("arch9", 8989, 3, 16)):
        weight = (cpu - 411 * processes) / (2.27e-6 * model.of(400, workers))
        assert entry["weights"][preset] == pytest.approx(weight, abs=5e-3), preset


def test_the_workers_a_run_starts(tmp_path: Path, write_spec: Callable[..., Path]) -> None:
    """Recorded from a run's summaries and planned from its spec alike: the threads, less
    one for each prewarm request, and no more than the requests served."""
    from pimcloud.runs.plan import workers_starting
    from pimcloud.runs.spec import load_spec
    from pimcloud.runs.speeds import workers_started

    run = tmp_path / "run"
    for name, summary in (("translate", {"threads": 16}),
                          ("search", {"threads": 16, "prewarm": 200}),
                          ("oltp", {"threads": 4, "prewarm": 2}), ("kvstore", {}),
                          ("speech", {"threads": 16})):
        (run / "results" / name).mkdir(parents=True)
        (run / "results" / name / "summary.json").write_text(json.dumps(summary))
    assert workers_started(run) == {"translate": 16, "search": 0, "oltp": 2, "kvstore": 0,
                                    "speech": 16}
    assert workers_started(run, {"speech": 5, "translate": 400})["speech"] == 5
    spec = load_spec(write_spec())
    planned = spec.runs()[0]
    app = planned.apps[0]
    threads = app.threads or planned.scenario.threads
    assert workers_starting(planned, app, 1000.0) == threads
    assert workers_starting(planned, app, 2.5) == min(threads, 2)
    warm = dataclasses.replace(app, prewarm=threads - 1)
    assert workers_starting(planned, warm, 1000.0) == 1


def test_guest_work_is_read_from_the_harness_summaries(tmp_path: Path) -> None:
    from pimcloud.runs.speeds import guest_work_seconds

    assert guest_work_seconds(tmp_path) is None  # no summary: nothing to say
    for app, cpu_ms, requests, generated in (("kvstore", 10, 300, 400), ("imgdnn", 60, 100,
                                                                          150)):
        (tmp_path / "results" / app).mkdir(parents=True)
        (tmp_path / "results" / app / "summary.json").write_text(json.dumps(
            {"measured_cpu_ns": cpu_ms * 1e6, "requests": requests, "generated": generated}))
    assert guest_work_seconds(tmp_path) == pytest.approx(0.010 * 4 / 3 + 0.060 * 1.5)
    # translate's engine is Apertium's pipeline processes, whose CPU the harness's process
    # clock misses: its workers' time on each request (requests.csv) counts it.
    (tmp_path / "results" / "translate").mkdir()
    (tmp_path / "results" / "translate" / "summary.json").write_text(json.dumps(
        {"measured_cpu_ns": 1e6, "requests": 3, "generated": 6}))
    (tmp_path / "results" / "translate" / "requests.csv").write_text(
        "request_id,thread,service_ns,sojourn_ns\n1,0,2000000,2100000\n"
        "2,1,3000000,3000000\n3,0,4000000,4500000\n")
    assert guest_work_seconds(tmp_path) == pytest.approx(
        0.010 * 4 / 3 + 0.060 * 1.5 + 0.009 * 2)


def test_table_iii_presets_are_priced_by_guest_work_before_any_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "none.json"))
    # speeds.toml's lines: a preset's cost follows the detailed cores' work.
    for preset in ("arch1", "arch4", "arch8", "arch9"):
        assert speed_of("gem5", "restore", preset).per_work > 0


def test_wall_time_counts_jobs_beyond_the_host_cores_as_sharing_them() -> None:
    from pimcloud.runs.plan import Plan

    four = {f"r{i}": 100.0 for i in range(4)}  # CPU seconds each
    def plan(jobs: int, cores: int) -> Plan:
        return Plan(None, "gem5", [], dict(four), {}, {}, jobs, {}, cores)  # type: ignore[arg-type]

    assert plan(2, 2).wall_s == pytest.approx(200)
    assert plan(4, 2).wall_s == pytest.approx(200)  # two cores: four jobs take as long
    assert plan(4, 0).wall_s == pytest.approx(100)  # a cluster: a core each
    assert plan(1, 2).wall_s == pytest.approx(400)


def test_runs_with_best_effort_jobs_have_speeds_of_their_own(
        write_spec: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pimcloud.runs.plan import detailed_phase, make_plan
    from pimcloud.runs.spec import load_spec

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    alone = load_spec(write_spec("alone"))
    text = write_spec("be").read_text().replace('manager = "pimcloud"\n[axes]',
                                                'manager = "pimcloud"\nbe = ["membw"]\n[axes]')
    path = tmp_path / "be2.toml"
    path.write_text(text)
    with_be = load_spec(path)
    assert detailed_phase(with_be.runs()[0], "gem5", True) == "restore-be"
    assert detailed_phase(with_be.runs()[0], "gem5", False) == "run-be"
    assert detailed_phase(with_be.runs()[0], "qemu", False) == "run"  # guest time: no matter
    assert detailed_phase(alone.runs()[0], "gem5", True) == "restore"
    # Streaming jobs on every free core cost far more per simulated second than the
    # services alone: measured samples of one regime do not move the other's estimate.
    for simulated in (0.1, 0.2):
        record_speed("gem5", "restore", "paper", simulated, 60 + simulated * 4000)
        record_speed("gem5", "restore-be", "paper", simulated, 60 + simulated * 30000)
    plain = make_plan(alone, "gem5", 1, {"paper"}, None)
    be = make_plan(with_be, "gem5", 1, {"paper"}, None)
    run_s = 0.11 + speed_of("gem5", "restore", "paper").extra_sim_s
    assert min(plain.per_run.values()) == pytest.approx(60 + run_s * 4000)
    assert min(be.per_run.values()) == pytest.approx(60 + run_s * 30000)
    assert "gem5/restore-be/paper" in be.speeds and "gem5/restore/paper" not in be.speeds


def test_a_search_out_of_probes_says_it_is_not_confirmed(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pimcloud.runs.maxload as maxload

    monkeypatch.setenv("FAKE_GEM5_CAPACITY", json.dumps({"kvstore": 1000}))
    monkeypatch.setattr(maxload, "MAX_PROBES", 2)
    spec = write_spec(extra="")
    spec.write_text(spec.read_text().replace('qos = "5ms"', 'qos = "20ms"'))
    campaign = prepare_campaign(spec, tmp_path / "out")
    said: list[str] = []
    result = find_max_load(campaign, "kvstore",
                           lambda: execute(campaign, "local", jobs=2, live=False),
                           start_rps=400, log=said.append, seeds=3)
    assert not result.confirmed
    assert any("not confirmed" in line for line in said), said
    saved = json.loads((tmp_path / "out" / "maxload-kvstore.json").read_text())
    assert saved["confirmed"] is False


@pytest.mark.parametrize("start", [720.0, 850.0])
def test_a_first_step_brackets_a_good_start_in_fewer_probes_than_doubling(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, start: float) -> None:
    """A start near the knee (a model's prediction: 770 rps meets a 20 ms QoS): a widening
    step from it finds the knee with fewer runs than doubling or halving."""
    monkeypatch.setenv("FAKE_GEM5_CAPACITY", json.dumps({"kvstore": 1000}))
    found = {}
    for first_step in (None, 0.1):
        name = "double" if first_step is None else "step"
        # The template is one run at 300 rps (as a study cell's sampled run).
        campaign = one_point_campaign(write_spec, tmp_path, name, load=0.3)
        found[name] = find_max_load(
            campaign, "kvstore", lambda c=campaign: execute(c, "local", jobs=2, live=False),
            start_rps=start, tolerance=0.1, log=lambda _: None, first_step=first_step)
    for result in found.values():
        assert result.first_miss_rps is not None and 680 <= result.max_load_rps <= 800
        assert result.first_miss_rps - result.max_load_rps <= 0.1 * result.first_miss_rps
    assert len(found["step"].probes) < len(found["double"].probes), found
    assert start in {p["rps"] for p in found["step"].probes}


@pytest.mark.parametrize("first_step", [2.0, 0.001])
def test_a_first_step_outside_its_range_is_refused(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        first_step: float) -> None:
    campaign = prepare_campaign(write_spec(extra=""), tmp_path / "out")
    with pytest.raises(Exception, match=r"fraction of the start load from 0\.01"):
        find_max_load(campaign, "kvstore", lambda: None, start_rps=400, first_step=first_step)


def test_a_window_under_ten_qos_targets_is_warned_of(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """100 ms of measured requests under a 20 ms QoS: an overload could pass unseen."""
    spec = write_spec("short", extra="")
    spec.write_text(spec.read_text().replace('qos = "5ms"', 'qos = "20ms"'))
    campaign = prepare_campaign(spec, tmp_path / "short")
    said: list[str] = []
    find_max_load(campaign, "kvstore", lambda: execute(campaign, "local", live=False),
                  start_rps=400, tolerance=0.5, log=said.append)
    assert any("under 10 QoS targets" in line for line in said), said


def test_a_good_start_below_a_known_miss_is_run_first(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An overloaded sample (900 rps misses the 20 ms QoS) does not hide the start: the
    search runs the start before stepping, and finds the knee near it."""
    monkeypatch.setenv("FAKE_GEM5_CAPACITY", json.dumps({"kvstore": 1000}))
    campaign = one_point_campaign(write_spec, tmp_path, "over", load=0.9)
    said: list[str] = []
    result = find_max_load(campaign, "kvstore",
                           lambda: execute(campaign, "local", jobs=2, live=False),
                           start_rps=720, tolerance=0.1, log=said.append, first_step=0.1)
    probes = [line for line in said if " rps -> p99" in line]
    assert probes[0].startswith("maxload kvstore: 720 rps"), said
    assert result.first_miss_rps is not None and 680 <= result.max_load_rps <= 800
    assert len(result.probes) <= 4, result.probes


def test_a_set_up_is_priced_by_its_workers_start_up_at_the_stores_instruction_rate(
        tmp_path: Path) -> None:
    """translate starts a pipeline a worker: its set-up costs the workers' start-up
    instructions over the rate of the store's set-ups made by the same gem5 (their
    instructions over the CPU seconds of the attempt that counted them)."""
    from pimcloud.runs.speeds import SETUP_INSTRUCTIONS_PER_CPU_S, setup_instruction_rate

    assert setup_instruction_rate(tmp_path) == (SETUP_INSTRUCTIONS_PER_CPU_S,
                                                "gem5.opt on the reference host")
    for name, insts, meta in (
            ("a", 400e6, {"cpu_seconds": 1000.0}),
            ("b", 300e6, {"cpu_seconds": 1000.0}),
            ("c", 500e6, {"cpu_seconds": 3000.0, "resumed_cpu_seconds": 2000.0}),
            ("d", 450e6, {"cpu_seconds": 1000.0}),
            ("fast", 900e6, {"cpu_seconds": 1000.0, "gem5": "/x/gem5.fast"}),
            ("old", 1e9, {"cpu_seconds": None}),    # before CPU time was recorded
            ("nostats", None, {"cpu_seconds": 1000.0})):
        folder = tmp_path / "apps" / name
        (folder / "m5out").mkdir(parents=True)
        command = [meta.pop("gem5", "/y/gem5.opt"), "pim_fs.py"]
        (folder / "meta.json").write_text(json.dumps({**meta, "command": command}))
        if insts is not None:
            (folder / "m5out" / "stats.txt").write_text(
                "\n---------- Begin Simulation Statistics ----------\n"
                f"simSeconds 0.5 # s\nsimInsts {insts:.0f} # n\n"
                "---------- End Simulation Statistics   ----------\n"
                "---------- Begin Simulation Statistics ----------\n"
                "simInsts 1 # a later dump\n"
                "---------- End Simulation Statistics   ----------\n")
    rate, source = setup_instruction_rate(tmp_path, "/elsewhere/gem5.opt")
    assert rate == pytest.approx(425e3)  # the median of 300, 400, 450, 500 thousand
    assert source == "measured over 4 set-up(s) here"
    assert setup_instruction_rate(tmp_path, "gem5.fast")[0] == pytest.approx(900e3)


def test_a_campaigns_plan_prices_translates_set_up_by_its_workers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real plan: translate's set-up holds one pipeline's start-up and a forked copy's
    a further worker (each pipeline's own with --opt prefork=0), kvstore's has none, and a
    stored app checkpoint costs nothing."""
    from pimcloud.runs.plan import Plan, app_set_of, make_plan
    from pimcloud.runs.spec import CampaignSpec, parse_spec
    from pimcloud.workloads.services import SERVICES

    monkeypatch.setenv("PIMCLOUD_CHECKPOINTS", str(tmp_path))  # an empty store
    monkeypatch.delenv("GEM5", raising=False)

    def plan_of(app: str, threads: int) -> tuple[CampaignSpec, Plan]:
        spec = parse_spec({
            "name": "p", "system": {"topology": "arch8", "backend": "gem5"},
            "apps": {app: {"threads": threads}},
            "scenario": {"apps": [app], "threads": threads},
            "axes": {"rps": [100.0]}, "length": {"warmup": "1ms", "measured": "10ms"}},
            "<test>")
        return spec, make_plan(spec, "gem5", 1)

    _, four = plan_of("translate", 4)
    spec, sixteen = plan_of("translate", 16)
    translate = SERVICES["translate"]
    first, further = (translate.startup_instructions / 390e3,
                      translate.worker_startup_instructions / 390e3)
    assert 0 < further < first / 10  # the further workers' pipelines are forked copies
    assert list(four.startups.values()) == [pytest.approx(first + 3 * further)]
    assert list(sixteen.startups.values()) == [pytest.approx(first + 15 * further)]
    assert sixteen.startup_rate == (390e3, "gem5.opt on the reference host")
    ((_, _, seconds),) = sixteen.setups.values()
    assert seconds > first + 15 * further
    # Each pipeline loading on its own (--opt prefork=0) is priced as such.
    own = parse_spec({
        "name": "p", "system": {"topology": "arch8", "backend": "gem5"},
        "apps": {"translate": {"threads": 16, "options": {"prefork": "0"}}},
        "scenario": {"apps": ["translate"], "threads": 16},
        "axes": {"rps": [100.0]}, "length": {"warmup": "1ms", "measured": "10ms"}}, "<test>")
    assert list(make_plan(own, "gem5", 1).startups.values()) == [pytest.approx(16 * first)]
    _, kvstore = plan_of("kvstore", 16)
    assert kvstore.startups == {} and kvstore.startup_rate is None
    stored = make_plan(spec, "gem5", 1, None, {app_set_of(spec.runs()[0])})
    assert stored.setups == {} and stored.startups == {}


def test_the_plan_warns_of_a_set_up_longer_than_the_host_time_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """16 translate workers' start-up, each loading its own pipeline (--opt prefork=0:
    over 10 h at the default rate), against a 6 h limit:
    with progress checkpoints every 20 min it takes 2 attempts (within the default retries)
    or, under a 2 h limit, more than a run gets; with none, or with them no more often than
    the limit, it cannot finish; a run over the limit is named too; under a limit long
    enough the plan says nothing."""
    from pimcloud.runs.plan import format_plan, make_plan, over_limit
    from pimcloud.runs.spec import parse_spec
    from pimcloud.workloads.services import SERVICES

    monkeypatch.setenv("PIMCLOUD_CHECKPOINTS", str(tmp_path))  # an empty store
    monkeypatch.delenv("GEM5", raising=False)
    own = dataclasses.replace(SERVICES["translate"], startup_instructions=937e6,
                              worker_startup_instructions=937e6)  # natively, prefork=0
    monkeypatch.setitem(SERVICES, "translate", own)

    def plan_of(host_time: str, progress: str | None, measured: str = "10ms") -> list[str]:
        spec = parse_spec({
            "name": "p", "system": {"topology": "arch8", "backend": "gem5"},
            "apps": {"translate": {"threads": 16}},
            "scenario": {"apps": ["translate"], "threads": 16},
            "axes": {"rps": [100.0]}, "length": {"warmup": "1ms", "measured": measured},
            "limits": {"host_time": host_time},
            **({"gem5": {"progress_every": progress}} if progress else {})}, "<test>")
        plan = make_plan(spec, "gem5", 1)
        ((_, _, setup_s),) = plan.setups.values()
        assert 10 * 3600 < setup_s < 12 * 3600  # the premise: 16 x 40 min and the set-up
        notes = over_limit(plan)
        assert [f"warning: {note}" for note in notes] == [
            line for line in format_plan(plan).splitlines() if line.startswith("warning:")]
        return notes

    (resumed,) = plan_of("6h", "20min")
    assert resumed.startswith("app checkpoint of translate on arch8:")
    assert "over the 6h" in resumed and "resumes from its last progress checkpoint" in resumed
    assert resumed.endswith("about 2 attempts")  # within the 2 a run gets
    (short,) = plan_of("2h", "20min")
    assert "about 7 attempts, more than the 2 a run gets" in short  # 1h40m kept each
    assert "raise retries to 6" in short and "--retry-failed" in short
    for progress in (None, "6h"):
        (stuck,) = plan_of("6h", progress)
        assert "cannot finish" in stuck and "progress_every" in stuck
    setup, run = plan_of("6h", "20min", measured="3s")  # a long simulated window
    assert setup.startswith("app checkpoint") and run.startswith("rps-100")
    assert plan_of("30h", "20min") == []


def test_a_services_weight_is_against_the_line_before_its_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three runs at weight 1 fit arch5's line (100 s + 2 s a million ops); a run of a
    dearer service (3 s a million) then records its weight, 1.5, against that line, not
    against a line its own sample has tilted, and its sample counts its ops at 1.5 so the
    line stays where the others put it. A run that cost about the intercept records none."""
    from pimcloud.runs.speeds import op_weight, record_run_speed

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    for ops in (1e8, 5e8, 9e8):
        record_speed("gem5", "restore", "arch5", 0.1, 100 + 2e-6 * ops, 4, length_s=0.05,
                     work_s=0.1, ops=ops)
    before = speed_of("gem5", "restore", "arch5")
    assert before.op_overhead_s == pytest.approx(100) and before.per_op == pytest.approx(2e-6)
    run = tmp_path / "run"
    (run / "results" / "translate").mkdir(parents=True)
    (run / "results" / "translate" / "summary.json").write_text(json.dumps(
        {"measured_cpu_ns": 8e8, "requests": 300, "generated": 400}))
    record_run_speed("gem5", "restore", "arch5", 0.4, 100 + 3e-6 * 8e8, 4, 0.4, run,
                     "translate", 8e8)
    assert op_weight("gem5", "translate", "arch5") == (pytest.approx(1.5),
                                                       "measured (1 runs) on arch5")
    after = speed_of("gem5", "restore", "arch5")
    assert after.op_overhead_s == pytest.approx(100) and after.per_op == pytest.approx(2e-6)
    # Two services and a manager: no weight of either; a run near the intercept: none.
    (run / "results" / "kvstore").mkdir()
    (run / "results" / "kvstore" / "summary.json").write_text(json.dumps(
        {"measured_cpu_ns": 1e8, "requests": 300, "generated": 400}))
    record_run_speed("gem5", "restore", "arch5", 0.4, 5000.0, 4, 0.4, run, None, 8e8)
    (run / "results" / "kvstore" / "summary.json").unlink()
    record_run_speed("gem5", "restore", "arch5", 0.4, 150.0, 4, 0.4, run, "translate", 1e6)
    speeds = json.loads((tmp_path / "speeds.json").read_text())
    assert speeds["gem5/opweight/translate/arch5"] == [[1.5]]
    assert not any(key.startswith("gem5/opweight/kvstore") for key in speeds)
    # A run resumed over two gem5 processes paid the intercept twice: its weight is of
    # what is left after both.
    line = speed_of("gem5", "restore", "arch5")
    host = 2 * line.op_overhead_s + 1.25 * line.per_op * 8e8
    record_run_speed("gem5", "restore", "arch5", 0.4, host, 4, 0.4, run, "translate", 8e8,
                     processes=2)
    speeds = json.loads((tmp_path / "speeds.json").read_text())
    assert speeds["gem5/opweight/translate/arch5"] == [[1.5], [pytest.approx(1.25, abs=1e-4)]]
    # and its sample is of one process: its second start taken off
    assert speeds["gem5/restore/arch5"][-1][1] == pytest.approx(host - line.op_overhead_s)


def test_a_weight_comes_from_the_preset_else_every_preset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kvstore's ops measured dear on arch2, cheap on arch1, between on arch8: each of
    those presets takes its own figure, any other the median of them all."""
    from pimcloud.runs.speeds import op_weight, record_op_weight

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    assert op_weight("gem5", "kvstore", "arch2") == (1.0, "the line's")
    record_op_weight("gem5", "kvstore", 2.0, "arch2")
    record_op_weight("gem5", "kvstore", 0.5, "gem5-configs/pimcloud/topology/presets/arch1.toml")
    record_op_weight("gem5", "kvstore", 1.0, "arch8")
    record_op_weight("gem5", "kvstore", 3.0, "arch8")
    assert op_weight("gem5", "kvstore", "arch2") == (2.0, "measured (1 runs) on arch2")
    assert op_weight("gem5", "kvstore", "arch1") == (0.5, "measured (1 runs) on arch1")
    assert op_weight("gem5", "kvstore", "arch8") == (2.0, "measured (2 runs) on arch8")
    assert op_weight("gem5", "kvstore", "arch5") == (
        1.5, "measured (4 runs) on arch1, arch2, arch8")
    # a figure that names no preset (recorded before figures named theirs) counts only
    # where every preset's do
    record_op_weight("gem5", "kvstore", 3.5)
    assert op_weight("gem5", "kvstore", "arch1") == (0.5, "measured (1 runs) on arch1")
    assert op_weight("gem5", "kvstore") == (2.0, "measured (5 runs) on arch1, arch2, arch8")
    # A preset's measured runs replace speeds.toml's figure for it, not add to it.
    assert op_weight("gem5", "translate", "arch2") == (1.57, "speeds.toml on arch2")
    record_op_weight("gem5", "translate", 3.0, "arch2")
    assert op_weight("gem5", "translate", "arch2") == (3.0, "measured (1 runs) on arch2")
    shipped = _shipped_weights("translate")
    # A preset without a figure of its own (none here: every Table III preset has one)
    # takes the median of every preset's, arch2's measured one in place of speeds.toml's.
    assert op_weight("gem5", "translate") == (
        pytest.approx(statistics.median({**shipped, "arch2": 3.0}.values())),
        f"measured (1 runs) and speeds.toml on {_shipped_presets('translate')}")


def test_a_plan_prices_each_preset_at_its_own_weight(
        tmp_path: Path, write_spec: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """translate on arch2, arch5 and arch7 in one campaign: the same ops, each at its
    preset's weight on the line by ops (speeds.toml's, no runs measured)."""
    from pimcloud.runs.plan import format_plan, make_plan, workers_starting
    from pimcloud.runs.spec import load_spec
    from pimcloud.runs.speeds import op_weight, service_ops

    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "none.json"))
    text = write_spec().read_text().replace('topology = "paper"', 'topology = "arch2"')
    text = text.replace('apps = ["kvstore"]\nmanager = "pimcloud"',
                        'apps = ["translate"]\nmanager = "none"')
    text = text.replace('[apps.oltp]', '[apps.translate]\nmax_rps = 500\nqos = "10ms"\n'
                        '[apps.oltp]')
    text = text.replace('manager = ["pimcloud", "default"]',
                        'topology = ["arch2", "arch5", "arch7"]')
    (tmp_path / "translate.toml").write_text(text)
    spec = load_spec(tmp_path / "translate.toml")
    plan = make_plan(spec, "gem5", 1, {"arch2", "arch5", "arch7"}, {"apps"})
    model = service_ops("gem5", "translate")
    assert model is not None and model.per_worker > 0
    length = spec.length.warmup_s + spec.length.measured_s
    weights = _shipped_weights("translate")
    seen = set()
    for run in plan.runs:
        speed = speed_of("gem5", "restore", run.topology)
        weight = op_weight("gem5", "translate", run.topology)[0]
        requests = run.scenario.rps_of(run.apps[0]) * length
        workers = workers_starting(run, run.apps[0], requests)
        assert workers == min(run.scenario.threads, int(requests)) > 0
        ops = requests * model.per_request + workers * model.per_worker
        assert plan.per_run[run.run_id] == pytest.approx(
            speed.op_overhead_s + speed.per_op * ops * weight)
        seen.add((run.topology, round(weight, 3)))
    assert seen == {(preset, weights[preset]) for preset in ("arch2", "arch5", "arch7")}
    assert ("each 1.57x the line's cost on arch2 [speeds.toml on arch2], each 0.97x the "
            f"line's cost on arch5 [speeds.toml on arch5], each {weights['arch7']:.3g}x the "
            "line's cost on arch7 [speeds.toml on arch7]") in format_plan(plan)
    assert (f"guest ops of translate (its runs on the lines by guest ops): "
            f"{model.per_request / 1e6:.3g} M a request + {model.per_worker / 1e6:.3g} M a "
            "worker's start [") in format_plan(plan)
