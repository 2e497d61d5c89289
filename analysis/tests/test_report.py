"""The report and figures on a synthetic campaign folder."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from pimcloud.analysis import figures, metrics
from pimcloud.analysis.campaign import load_campaign
from pimcloud.analysis.report import build_report, offered_loads, qos_targets


def test_offered_loads_and_qos(demo_campaign: Path) -> None:
    campaign = load_campaign(demo_campaign, with_stats=False)
    loads = offered_loads(campaign).set_index(["run_id", "app"])["rps"]
    assert loads[("sphinx-host-600", "sphinx")] == 600
    assert loads[("mix-pimcloud-0.2", "imgdnn")] == pytest.approx(1600 * 0.5)
    assert qos_targets(campaign, {"sphinx": 1.0}) == {"sphinx": 1.0, "imgdnn": 3_000_000}


def test_knee_follows_the_service_rate(demo_campaign: Path) -> None:
    """A faster core sustains more load under the same QoS, as the queue says it must."""
    campaign = load_campaign(demo_campaign, with_stats=False)
    table = metrics.latency_percentiles(campaign.requests).merge(
        offered_loads(campaign), on=["run_id", "app"])
    table = table.merge(campaign.runs[["run_id", "system"]], on="run_id")
    single = table.dropna(subset=["system"])
    loads = metrics.max_load_under_qos(single, {"sphinx": 5e6, "imgdnn": 3e6},
                                       by=["app", "system"], contiguous=True)
    loads = loads.set_index(["app", "system"])["max_load"]
    assert loads[("sphinx", "pim")] > loads[("sphinx", "host")]
    assert loads[("imgdnn", "host")] > loads[("imgdnn", "pim")]


@pytest.mark.slow
def test_report_writes_html_figures_and_tables(demo_campaign: Path, tmp_path: Path) -> None:
    index = build_report(demo_campaign, tmp_path / "report")
    page = index.read_text()
    for title in ("Runs", "Latency against load", "Colocation", "Timelines",
                  "Manager decisions", "Best-effort throughput", "gem5 statistics"):
        assert f">{title}</h2>" in page, title
    images = re.findall(r"src='([^']+\.png)'", page)
    assert len(images) >= 4
    # Fig. 9 over the load axis, per best-effort job.
    assert "figures/be_blackscholes.png" in images
    for image in images:
        png = tmp_path / "report" / image
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.with_suffix(".svg").read_text().lstrip().startswith("<?xml")
    max_load = pd.read_csv(tmp_path / "report" / "tables" / "max_load_under_qos.csv")
    assert set(max_load["system"]) == {"host", "pim"}
    emu = pd.read_csv(tmp_path / "report" / "tables" / "emu_per_run.csv")
    assert len(emu) == 4
    assert "memory read latency by requester and target" in page
    estimates = pd.read_csv(tmp_path / "report" / "tables" /
                            "latency_estimate_per_run_and_app.csv")
    assert set(estimates["app"]) == {"sphinx"} and (estimates["estimate_ns"] == 120.0).all()
    assert "(Fig. 7 form)" in page and "(Fig. 9 form)" in page


def test_every_figure_draws(tmp_path: Path) -> None:
    fig7 = pd.DataFrame({
        "mix": "a+b", "manager": ["Default"] * 3 + ["PIMCloud-preference"] * 3
        + ["PIMCloud-core"] * 3, "x_pct": [10, 50, 90] * 3,
        "y_pct": [80, 50, 10, 85, 60, 20, 95, 70, 30]})
    fig8 = pd.DataFrame({"manager": "PIMCloud", "x_pct": [10, 10, 50, 50],
                         "y_pct": [10, 50, 10, 50], "z_pct": [90, 40, 50, float("nan")]})
    fig9 = pd.DataFrame({"manager": ["A", "A", "B", "B"], "x_pct": [10, 50, 10, 50],
                         "throughput": [1.0, 0.5, 1.2, 0.9]})
    table = metrics.table_iii(pd.DataFrame({
        "arch": ["a1", "a1", "a2", "a2"], "app": "x", "rps": [1, 2, 1, 2],
        "p99_ns": [1, 2, 0.5, 3]}), 2.5, baseline_arch="a1")
    drawn = [
        figures.colocation_curves(fig7), figures.colocation_heatmap(fig8),
        figures.be_throughput(fig9), figures.table_iii_figure(table),
        figures.max_load_bars(pd.DataFrame({"app": ["x", "x"], "policy": ["FT", "CC"],
                                            "normalized_max_load": [0.8, 1.0]})),
        figures.policy_comparison(
            pd.DataFrame({"label": ["mode=balm", "mode=mba"], "app": "kv", "tail": [0.9, 1.4],
                          "over_qos": True}),
            pd.DataFrame({"label": ["mode=balm", "mode=mba"], "app": "membw",
                          "throughput": [3.0, 1.0]})),
    ]
    for i, figure in enumerate(drawn):
        paths = figures.save_figure(figure, tmp_path / f"f{i}")
        assert [p.suffix for p in paths] == [".png", ".svg"]
        assert all(p.stat().st_size > 1000 for p in paths)
    # Fig. 3's bars in the paper's order, whatever order the table has.
    bars = figures.max_load_bars(pd.DataFrame({
        "app": "x", "policy": ["il", "cc+mig", "ft", "cc", "ft+mig"],
        "normalized_max_load": [0.5, 0.9, 1.0, 0.8, 1.1]}))
    labels = [text.get_text() for text in bars.axes[0].get_legend().get_texts()]
    assert labels == ["ft", "ft+mig", "cc", "cc+mig", "il"]
    # A placement keeps its colour with migration (hatched), and differs from the others.
    faces = {label: patch.get_facecolor()[:3] for label, patch in
             zip(labels, bars.axes[0].get_legend().legend_handles, strict=True)}
    assert faces["ft"] == faces["ft+mig"] and faces["cc"] == faces["cc+mig"]
    assert faces["ft"] != faces["cc"] != faces["il"]
    assert [p.get_hatch() for p in bars.axes[0].patches[:2]] == [None, "///"]


def test_report_of_lats_bin_only_campaign_with_numeric_axes(tmp_path: Path) -> None:
    """Runs whose axes are plain numbers (an int64 column) and that only have lats.bin."""
    from pimcloud.analysis.results import write_lats_bin

    for rps in (100, 200, 300):
        run = tmp_path / "c" / f"r{rps}"
        (run / "x").mkdir(parents=True)
        (run / "run.json").write_text(f'{{"run_id": "r{rps}", "app": "x", "rps": {rps}}}')
        sojourn = [1_000, 2_000, rps * 10_000]
        write_lats_bin(run / "x" / "lats.bin", pd.DataFrame(
            {"queue_ns": 0, "service_ns": sojourn, "sojourn_ns": sojourn}))
    index = build_report(tmp_path / "c", tmp_path / "out", qos_ns={"x": 2.5e6})
    page = index.read_text()
    assert ">Latency against load</h2>" in page
    assert ">Timelines</h2>" not in page  # lats.bin has no times
    loads = pd.read_csv(tmp_path / "out" / "tables" / "max_load_under_qos.csv")
    # p99 of (1, 2, rps/100) ms is about rps/100 ms: 200 RPS is the last within 2.5 ms
    assert loads["max_load"].tolist() == [200]


def test_report_table_iii_over_architectures(tmp_path: Path) -> None:
    from pimcloud.analysis.results import write_lats_bin

    # arch2 is twice as fast: every sojourn halves, so it holds QoS at twice the load
    for arch, scale in (("arch1", 1.0), ("arch2", 0.5)):
        for rps in (100, 200, 300, 400):
            run = tmp_path / "c" / f"{arch}-{rps}"
            (run / "x").mkdir(parents=True)
            (run / "run.json").write_text(
                f'{{"run_id": "{arch}-{rps}", "app": "x", "arch": "{arch}", "rps": {rps}, '
                '"qos_ns": 2500000}')
            sojourn = [int(scale * rps * 10_000)] * 3
            write_lats_bin(run / "x" / "lats.bin", pd.DataFrame(
                {"queue_ns": 0, "service_ns": sojourn, "sojourn_ns": sojourn}))
    index = build_report(tmp_path / "c", tmp_path / "out")
    assert "Table III" in index.read_text()
    table = pd.read_csv(next((tmp_path / "out" / "tables").glob("table_iii*.csv")))
    row = table.set_index("arch").loc["arch2"]
    assert row["normalized_max_load x"] == 2.0
    assert row["tail_over_qos x"] == pytest.approx(0.5 * 100 * 10_000 / 2.5e6)


def test_max_load_holds_in_every_repeat_of_a_load(tmp_path: Path) -> None:
    from pimcloud.analysis.results import write_lats_bin

    for rps, seed, p99_ms in ((100, 1, 1), (200, 1, 2), (200, 2, 3), (300, 1, 4)):
        run = tmp_path / "c" / f"r{rps}-{seed}"
        (run / "x").mkdir(parents=True)
        (run / "run.json").write_text(json.dumps(
            {"run_id": run.name, "app": "x", "rps": rps, "seed": seed, "qos_ns": 2.5e6}))
        sojourn = [p99_ms * 1_000_000] * 3
        write_lats_bin(run / "x" / "lats.bin", pd.DataFrame(
            {"queue_ns": 0, "service_ns": sojourn, "sojourn_ns": sojourn}))
    build_report(tmp_path / "c", tmp_path / "out")
    loads = pd.read_csv(tmp_path / "out" / "tables" / "max_load_under_qos.csv")
    assert loads["max_load"].tolist() == [100]  # seed 2 at 200 RPS missed QoS


def test_report_lists_damaged_files(tmp_path: Path) -> None:
    from pimcloud.stats_file import StatsFileWarning

    run = tmp_path / "c" / "r1"
    (run / "m5out").mkdir(parents=True)
    (run / "run.json").write_text('{"run_id": "r1"}')
    whole = (Path(__file__).parent / "fixtures" / "three_dumps.txt").read_text()
    (run / "m5out" / "stats.txt").write_text(whole[: whole.index("system.l3") + 12])
    with pytest.warns(StatsFileWarning, match="line 17: cannot parse"):
        index = build_report(tmp_path / "c", tmp_path / "out")
    page = index.read_text()
    assert ">Problems found while reading</h2>" in page
    assert "line 17: cannot parse" in page


def test_screenshot_names_a_missing_browser(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    from pimcloud.analysis.screenshot import BrowserMissing, screenshot

    monkeypatch.setenv("PIMCLOUD_BROWSER", "no-such-browser-here")
    (tmp_path / "index.html").write_text("<p>x</p>")
    with pytest.raises(BrowserMissing, match="PIMCLOUD_BROWSER=no-such-browser-here"):
        screenshot(tmp_path / "index.html", tmp_path / "shot.png")
    assert not (tmp_path / "shot.png").exists()


@pytest.mark.slow
def test_report_renders_in_headless_chromium(demo_campaign: Path, tmp_path: Path) -> None:
    """The report as a browser draws it: a tall page whose figures loaded (coloured
    plot pixels), not just text."""
    import numpy as np
    from PIL import Image
    from pimcloud.analysis.screenshot import BrowserMissing, find_browser, screenshot

    try:
        find_browser()
    except BrowserMissing as missing:
        pytest.skip(str(missing))
    index = build_report(demo_campaign, tmp_path / "report")
    png = screenshot(index, tmp_path / "report" / "screenshot.png", height=2400)
    image = Image.open(png).convert("RGB")
    assert image.size == (1280, 2400)
    pixels = np.asarray(image, dtype=np.int16).reshape(-1, 3)
    inked = int((pixels.min(axis=1) < 200).sum())
    coloured = int((pixels.max(axis=1) - pixels.min(axis=1) > 80).sum())
    assert inked > 0.01 * len(pixels)
    # Text and table rules are grey; only the loaded figures bring saturated colour.
    assert coloured > 2000, f"only {coloured} coloured pixels: did the figures load?"


def test_per_app_dicts_show_as_one_short_cell() -> None:
    from pimcloud.analysis.report import _display

    runs = pd.DataFrame({"run_id": ["a"], "apps": [["kvstore", "imgdnn"]],
                         "mix": ["kvstore+imgdnn"],
                         "rps": [{"kvstore": 4000.0, "imgdnn": 600.0}],
                         "qos_ns": [{"kvstore": 1e6, "imgdnn": 7e6}]})
    shown = _display(runs)
    assert "apps" not in shown.columns  # the mix names them
    assert shown["rps"].tolist() == ["kvstore 4000, imgdnn 600"]
    assert shown["qos_ms"].tolist() == ["kvstore 1, imgdnn 7"]


def test_failed_attempts_are_listed_and_numbers_stay_whole(tmp_path: Path) -> None:
    from pimcloud.analysis.report import _format_number, failed_attempts

    attempt = tmp_path / "failed" / "load-0.5_manager-default" / "attempt-1"
    attempt.mkdir(parents=True)
    (attempt / "failure.json").write_text(json.dumps(
        {"exit_cause": "simulated-time-limit", "host_seconds": 2964.7,
         "simulated_seconds": 2.24}))
    (tmp_path / "failed" / "x" / "attempt-2").mkdir(parents=True)
    (tmp_path / "failed" / "x" / "attempt-2" / "failure.json").write_text("{trunc")
    table = failed_attempts(tmp_path)
    assert table["run_id"].tolist() == ["load-0.5_manager-default", "x"]
    assert table["exit_cause"].iloc[0] == "simulated-time-limit"
    assert pd.isna(table["exit_cause"].iloc[1])  # a damaged record still shows its run
    assert _format_number(10000.0) == "10000" and _format_number(0.62039) == "0.6204"


@pytest.mark.parametrize(("axis", "label"), [("options.balm.mode", "mode"),
                                             ("variant", "variant"),
                                             ("manager", "manager")])  # Fig. 9 at one load
def test_a_policy_option_axis_gets_its_comparison(tmp_path: Path, axis: str, label: str
                                                  ) -> None:
    """Runs that differ by a policy option (options.<manager>.<key>) or by named variants
    (whose placements differ too, the label names the variant alone), or by manager with
    best-effort jobs at one load: LC p99 over QoS and best-effort throughput per variant,
    from the runs' own files."""
    from pimcloud.analysis.results import write_lats_bin

    for mode, scale, gb in (("balm", 1, 4.0), ("mba", 3, 1.0)):
        run = tmp_path / "c" / f"balm.mode-{mode}"
        (run / "kv").mkdir(parents=True)
        (run / "membw").mkdir()
        placement = {"placement": "cc" if mode == "balm" else "il"} if axis == "variant" else {}
        (run / "run.json").write_text(json.dumps(
            {"run_id": f"balm.mode-{mode}", "app": "kv", "rps": 100, "manager": "balm",
             axis: mode, "qos_ns": {"kv": 2e6}, **placement}))
        write_lats_bin(run / "kv" / "lats.bin", pd.DataFrame(
            {"queue_ns": 0, "service_ns": [scale * 1_000_000] * 3,
             "sojourn_ns": [scale * 1_000_000] * 3}))
        lines = [{"job": "membw", "t_ns": t * 10**8, "interval_ns": 10**8, "work": gb / 10,
                  "unit": "GB", "final": False} for t in range(1, 6)]
        (run / "membw" / "progress.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in lines))
    index = build_report(tmp_path / "c", tmp_path / "out")
    assert ">A policy against its baselines</h2>" in index.read_text()
    lc = pd.read_csv(tmp_path / "out" / "tables" / "policy_comparison__lc.csv")
    assert dict(zip(lc["label"], lc["tail"], strict=True)) == {f"{label}=balm": 0.5,
                                                               f"{label}=mba": 1.5}
    be = pd.read_csv(tmp_path / "out" / "tables" / "policy_comparison__be.csv")
    assert dict(zip(be["label"], be["throughput"].round(6), strict=True)) == {
        f"{label}=balm": 4.0, f"{label}=mba": 1.0}
    # The seed papers count BE throughput only where the LC apps keep their QoS.
    assert dict(zip(be["label"], be["qos_met"], strict=True)) == {
        f"{label}=balm": True, f"{label}=mba": False}
    assert set(be["unit"]) == {"GB"}


def test_an_oom_killed_service_is_a_result_named_in_the_report(tmp_path: Path) -> None:
    from pimcloud.analysis.results import write_lats_bin
    from pimcloud.runs.guest_scenario import OOM_FILE

    run = tmp_path / "c" / "placement-slow-always"
    (run / "kv").mkdir(parents=True)
    (run / "results").mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "placement-slow-always", "app": "kv",
                                              "rps": 100, "placement": "slow-always"}))
    write_lats_bin(run / "kv" / "lats.bin", pd.DataFrame(
        {"queue_ns": 0, "service_ns": [1000] * 3, "sojourn_ns": [1000] * 3}))
    line = "[    3.2] Out of memory: Killed process 231 (pimcloud-kvstor) total-vm:1kB"
    (run / "results" / OOM_FILE).write_text(line + "\n")
    campaign = load_campaign(tmp_path / "c")
    assert campaign.runs["oom_killed"].tolist() == [line]
    assert "oom_killed" not in campaign.axes
    page = build_report(tmp_path / "c", tmp_path / "out").read_text()
    assert "killed by the guest kernel&#x27;s OOM killer" in page


def test_counted_runs_get_the_page_type_breakdown(tmp_path: Path) -> None:
    from pimcloud.analysis.results import write_lats_bin

    for app, lines in (("kv", ["0x10 90 private ro 4 - -", "0x11 10 shared rw 5 - -"]),
                       ("img", ["0x20 40 shared ro 4 - -"])):
        run = tmp_path / "c" / f"app-{app}"
        (run / app).mkdir(parents=True)
        (run / "results").mkdir()
        (run / "run.json").write_text(json.dumps({"run_id": f"app-{app}", "app": app,
                                                  "rps": 100}))
        write_lats_bin(run / app / "lats.bin", pd.DataFrame(
            {"queue_ns": 0, "service_ns": [1000] * 3, "sojourn_ns": [1000] * 3}))
        (run / "results" / "hw-hottest-node1.txt").write_text(
            f"frames {len(lines)} node 1 scan_ps 9\n" + "\n".join(lines) + "\n")
    campaign = load_campaign(tmp_path / "c")
    assert campaign.hot_frames.groupby("run_id")["count"].sum().to_dict() == {
        "app-img": 40, "app-kv": 100}
    page = build_report(tmp_path / "c", tmp_path / "out").read_text()
    assert "Page accesses by page type (Fig. 4 form)" in page
    assert (tmp_path / "out" / "figures" / "page_types.png").is_file()


def test_a_policy_comparison_says_how_long_each_variant_violated(tmp_path: Path) -> None:
    """With per-request times, each variant's p99 per monitoring window is drawn over
    time and the table says how long it stayed above QoS (BALM's figure)."""
    from pimcloud.workloads.records import REQUEST_COLUMNS

    # 10 ms windows, 20 requests each; balm violates in one window, mba in three.
    for mode, bad in (("balm", {1}), ("mba", {1, 2, 3})):
        run = tmp_path / "c" / f"balm.mode-{mode}"
        (run / "kv").mkdir(parents=True)
        (run / "run.json").write_text(json.dumps(
            {"run_id": f"balm.mode-{mode}", "app": "kv", "rps": 2000, "manager": "balm",
             "options.balm.mode": mode, "qos_ns": {"kv": 2e6}, "interval_s": 0.01}))
        rows = []
        for window in range(5):
            for i in range(20):
                start = window * 10_000_000 + i * 500_000
                sojourn = 5_000_000 if window in bad else 100_000
                rows.append([len(rows), 0, start, start, start + sojourn, 0, sojourn, sojourn])
        pd.DataFrame(rows, columns=list(REQUEST_COLUMNS)).to_csv(run / "kv" / "requests.csv",
                                                                  index=False)
    build_report(tmp_path / "c", tmp_path / "out")
    spans = pd.read_csv(tmp_path / "out" / "tables" / "violations_per_variant.csv")
    # Windows go by completion: a slow window's late requests end in the next one.
    assert dict(zip(spans["label"], spans["violated"], strict=True)) == {"mode=balm": 2,
                                                                          "mode=mba": 4}
    assert (tmp_path / "out" / "figures" / "policy_tails_over_time.png").is_file()


def test_several_campaigns_read_as_one_keep_their_runs_apart(tmp_path: Path) -> None:
    """The same mix at two control intervals, each its own campaign whose one run is
    "single": one report, each run under its campaign's name."""
    from pimcloud.workloads.records import REQUEST_COLUMNS

    for name, interval in (("loops-paper", 0.1), ("loops-scaled", 0.01)):
        run = tmp_path / name / "runs" / "single"
        (run / "kv").mkdir(parents=True)
        (run / "run.json").write_text(json.dumps(
            {"run_id": "single", "app": "kv", "rps": 1000, "qos_ns": {"kv": 2e6},
             "interval_s": interval}))
        rows = [[i, 0, i * 1_000_000, i * 1_000_000, i * 1_000_000 + 200_000, 0, 200_000,
                 200_000] for i in range(200)]
        pd.DataFrame(rows, columns=list(REQUEST_COLUMNS)).to_csv(run / "kv" / "requests.csv",
                                                                  index=False)
        (run / "decisions.jsonl").write_text(json.dumps(
            {"t_ns": 0, "event": "init", "app": "kv", "to_cores": [0, 1],
             "cores_after": 2}) + "\n")
    # A failed attempt of one of them is listed under its campaign's name.
    attempt = tmp_path / "loops-paper" / "failed" / "single" / "attempt-1"
    attempt.mkdir(parents=True)
    (attempt / "failure.json").write_text(json.dumps(
        {"exit_cause": "host-time-limit", "host_seconds": 10.0}))
    with pytest.raises(ValueError, match="needs a folder of its own"):
        build_report([tmp_path / "loops-paper", tmp_path / "loops-scaled"])
    build_report([tmp_path / "loops-paper", tmp_path / "loops-scaled"], tmp_path / "out")
    runs = pd.read_csv(tmp_path / "out" / "tables" / "runs.csv")
    assert sorted(runs["run_id"]) == ["loops-paper/single", "loops-scaled/single"]
    assert sorted(runs["campaign"]) == ["loops-paper", "loops-scaled"]
    failed = pd.read_csv(tmp_path / "out" / "tables" / "failed_attempts.csv")
    assert list(failed["run_id"]) == ["loops-paper/single"]
    drawn = {p.name for p in (tmp_path / "out" / "figures").glob("timeline_*.png")}
    assert drawn == {"timeline_loops_paper_single.png", "timeline_loops_scaled_single.png"}
    # Two folders of the same name could not be told apart.
    shutil.copytree(tmp_path / "loops-paper", tmp_path / "again" / "loops-paper")
    with pytest.raises(ValueError, match="same name"):
        build_report([tmp_path / "loops-paper", tmp_path / "again" / "loops-paper"],
                     tmp_path / "out2")


def test_a_resumed_gem5_run_gets_its_controllers_read_queues(tmp_path: Path) -> None:
    """Through the report's own loading (it keeps only some statistics): two cumulative
    dumps of one process, then the wrap-up after a reset, counted once each."""
    from pimcloud.analysis.results import write_lats_bin
    from pimcloud.analysis.synthetic import controller_window_dump
    from pimcloud.topology import load_topology

    run = tmp_path / "c" / "r"
    (run / "kv").mkdir(parents=True)
    (run / "m5out").mkdir()
    (run / "run.json").write_text(json.dumps({
        "run_id": "r", "app": "kv", "rps": 100, "topology": "mini",
        "execution": {"command": ["gem5", "pim_fs.py", "--mem-divisor", "1"]}}))
    write_lats_bin(run / "kv" / "lats.bin", pd.DataFrame(
        {"queue_ns": 0, "service_ns": [1000] * 3, "sojourn_ns": [1000] * 3}))
    mini = load_topology("mini")
    (run / "m5out" / "stats.txt").write_text(
        controller_window_dump(mini, 2e9, 1e9, 5e6, 0, 1000, 1e8, 1.0, 1e9)
        + controller_window_dump(mini, 3e9, 2e9, 9e6, 0, 3000, 3e8, 2.0, 2e9)
        + controller_window_dump(mini, 4e9, 1e9, 16, 8e6, 500, 0, 0.0))
    build_report(tmp_path / "c", tmp_path / "out")
    tables = tmp_path / "out" / "tables"
    queues = pd.read_csv(next(tables.glob("memory_controllers_over_the_detailed_part*.csv")))
    assert set(queues["memory"]) == {"stack0", "stack1"}
    assert (queues["reads"] == 3000).all()  # not 1000 + 3000, nor the wrap-up's 500
    assert queues["queue_ns"].tolist() == pytest.approx([100.0] * len(queues))
    per_run = pd.read_csv(tables / "stats_per_run.csv").iloc[0]
    assert (per_run["dumps"], per_run["windows"]) == (3, 2)
    assert per_run["simulated_s"] == pytest.approx(3e-3)
