"""The characterisation study: spec, cells and their campaign specs, and a whole study
(run, status, validate, report) against the fake gem5, read by the analysis."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd
import pimcloud.runs
import pytest
from pimcloud.runs.guest_scenario import setup_script
from pimcloud.runs.spec import parse_spec
from pimcloud.runs.study import StudyDir, StudyError, load_study, parse_study, to_toml
from pimcloud.study_cli import _selected, _validation_qos_ns, open_study, run_order
from pimcloud.units import parse_time_ps
from pimcloud.workloads.services import SERVICES

STUDY = """
name = "tiny"
kernel = "vmlinux"
image = "disk.img"
presets = ["arch1", "arch8"]
services = ["kvstore", "imgdnn"]
utilisation = 0.5
requests = 200
warmup_requests = 20
validate = ["arch1/kvstore"]
[service.kvstore]
service_us = { brawny = 1000, wimpy = 2500 }
qos = "20ms"
[service.imgdnn]
service_us = { brawny = 2000, wimpy = 5000 }
[cell.limits]
host_time = "60s"
memory = "2GiB"
"""

# The same study with the project's own kernel and image (nothing to find on disk).
PROJECT_STUDY = STUDY.replace('kernel = "vmlinux"\nimage = "disk.img"\n', "")


def test_the_shipped_study_expands_into_one_campaign_per_cell() -> None:
    study = load_study("characterisation-gem5")
    cells = {(c.preset, c.service): c for c in study.cells()}
    assert len(cells) == 9 * 6
    arch1, arch8, arch9 = (cells[(p, "kvstore")] for p in ("arch1", "arch8", "arch9"))
    assert (arch1.cores, arch1.core_type) == (4, "brawny")
    assert (arch8.cores, arch8.core_type) == (16, "wimpy")
    assert (arch9.cores, arch9.core_type) == (16, "wimpy")  # 8 + 8 over two stacks
    # The sampled load is the utilisation of the estimated capacity.
    kv = study.services["kvstore"]
    assert arch1.sample_rps == pytest.approx(study.utilisation * 4 / kv.service_s["brawny"],
                                             rel=1e-2)
    for cell in (arch1, arch8):
        raw = tomllib.loads(to_toml(study.cell_spec(cell)))
        spec = parse_spec(raw, source=f"{cell.name}.toml")
        (run,) = spec.runs()
        assert run.topology == cell.preset and run.scenario.manager == "none"
        assert run.scenario.threads == cell.cores == spec.apps["kvstore"].threads
        assert run.scenario.rps_of(spec.apps["kvstore"]) == cell.sample_rps
        # requests / rps of measured time, so every cell has the same request count
        assert spec.length.measured_s * cell.sample_rps == pytest.approx(
            study.requests_of("kvstore"), rel=1e-2)
        assert spec.apps["kvstore"].options == {"keys": "20000"}
        # Its service is not warmed before the app checkpoint (the study's choice).
        assert spec.apps["kvstore"].prewarm == study.prewarm_requests == 0
        assert "--prewarm" not in setup_script(run)
        # The id a max-load probe of this app gets: probes and the sample share a folder.
        assert run.run_id == f"apps-kvstore_rps-{cell.sample_rps:g}"
    # With prewarm_requests, it is, on the atomic cores.
    warmed = dataclasses.replace(study, prewarm_requests=200)
    (run,) = parse_spec(tomllib.loads(to_toml(warmed.cell_spec(arch1)))).runs()
    assert run.apps[0].prewarm == 200 and "--prewarm 200" in setup_script(run)
    # kvstore measures more requests than the others (its start-up transient is long in
    # requests, short in host time).
    assert study.requests_of("kvstore") == 600 and study.requests_of("imgdnn") == 300
    # A service whose cells outlast [cell.limits] has a host-time limit of its own, and
    # translate's requests are the short sentences.
    speech = parse_spec(tomllib.loads(to_toml(study.cell_spec(cells[("arch1", "speech")]))))
    assert speech.limits.host_time_s == 300 * 3600
    kv = parse_spec(tomllib.loads(to_toml(study.cell_spec(arch1))))
    assert kv.limits.host_time_s == 8 * 3600
    # ... and one whose gem5 outgrows [cell.limits]' memory has a memory limit of its own,
    # its host time still the cells'.
    translate = parse_spec(tomllib.loads(to_toml(
        study.cell_spec(cells[("arch8", "translate")]))))
    assert translate.limits.memory_bytes == 12 * 2**30
    assert translate.limits.host_time_s == kv.limits.host_time_s
    assert kv.limits.memory_bytes == 8 * 2**30
    # speech's set-up alone passes 8 GiB (8.3 GB on arch8 while still loading its models).
    assert speech.limits.memory_bytes == 16 * 2**30
    assert study.services["translate"].options == {"max_words": "4"}


@pytest.mark.parametrize(("change", "message"), [
    ('utilisation = 1.5', "utilisation"),
    ('services = ["kvstore", "nosuch"]', "add a [service.nosuch] table"),
    ('validate = ["arch2/kvstore"]', "validate"),
    ('presets = ["arch42"]', "presets"),
])
def test_study_errors_name_the_field(change: str, message: str) -> None:
    key = change.split(" =")[0]
    text = "\n".join(line for line in PROJECT_STUDY.splitlines()
                     if not line.startswith(key + " ="))
    with pytest.raises(StudyError, match=re.escape(message)):
        parse_study(tomllib.loads(change + "\n" + text))


def test_a_service_limit_that_is_no_size_is_refused() -> None:
    text = PROJECT_STUDY.replace("[service.imgdnn]\n", '[service.imgdnn]\nmemory = "12 gigs"\n')
    with pytest.raises(StudyError, match=re.escape("service.imgdnn.memory")):
        parse_study(tomllib.loads(text))


def test_a_service_without_estimates_is_refused() -> None:
    text = PROJECT_STUDY.replace("service_us = { brawny = 2000, wimpy = 5000 }",
                                 "service_us = { brawny = 2000 }")
    with pytest.raises(StudyError, match=re.escape("service.imgdnn.service_us.wimpy")):
        parse_study(tomllib.loads(text))


def test_a_serial_section_bounds_the_sampled_load_where_it_is_the_tighter() -> None:
    # oltp's writer: 1000 us a request on the PIM cores bounds arch9 (16 cores) at 1,000
    # rps, below the 16 / 7.5 ms its workers would carry; arch1's 4 host cores stay bound by
    # the workers (4 / 3 ms < 1 / 300 us).
    study = load_study("characterisation-gem5")
    oltp = study.services["oltp"]
    assert oltp.serial_s == {"brawny": pytest.approx(300e-6), "wimpy": pytest.approx(1e-3)}
    assert study.cell("arch9", "oltp").sample_rps == pytest.approx(study.utilisation / 1e-3)
    assert study.cell("arch1", "oltp").sample_rps == pytest.approx(
        study.utilisation * 4 / oltp.service_s["brawny"], rel=1e-2)
    # A service without one is bound by its cores alone.
    assert not study.services["search"].serial_s
    text = PROJECT_STUDY.replace("service_us = { brawny = 2000, wimpy = 5000 }",
                                 "service_us = { brawny = 2000, wimpy = 5000 }\n"
                                 "serial_us = { brawny = -1, wimpy = 100 }")
    with pytest.raises(StudyError, match=re.escape("service.imgdnn.serial_us.brawny")):
        parse_study(tomllib.loads(text))


def test_a_service_may_measure_its_own_number_of_requests() -> None:
    text = PROJECT_STUDY.replace('qos = "20ms"', 'qos = "20ms"\nrequests = 500')
    study = parse_study(tomllib.loads(text))
    assert study.requests_of("kvstore") == 500 and study.requests_of("imgdnn") == 200
    with pytest.raises(StudyError, match=re.escape("service.kvstore.requests = 50")):
        parse_study(tomllib.loads(text.replace("requests = 500", "requests = 50")))


def test_a_service_may_prewarm_on_its_own() -> None:
    text = PROJECT_STUDY.replace('qos = "20ms"', 'qos = "20ms"\nprewarm_requests = 50')
    study = parse_study(tomllib.loads(text))
    assert study.prewarm_of("kvstore") == 50 and study.prewarm_of("imgdnn") == 0
    kvstore, imgdnn = (study.cell("arch1", s) for s in ("kvstore", "imgdnn"))
    assert study.cell_spec(kvstore)["apps"]["kvstore"]["prewarm"] == 50
    assert "prewarm" not in study.cell_spec(imgdnn)["apps"]["imgdnn"]
    # A service's own 0 turns off the study's prewarm for it; the others keep it.
    both = parse_study(tomllib.loads(
        text.replace("prewarm_requests = 50", "prewarm_requests = 0").replace(
            'presets = ["arch1", "arch8"]', 'prewarm_requests = 30\npresets = ["arch1", "arch8"]')))
    assert both.prewarm_of("kvstore") == 0 and both.prewarm_of("imgdnn") == 30


def test_a_report_of_a_service_the_study_lacks_is_refused(tmp_path: Path) -> None:
    (tmp_path / "study.json").write_text(json.dumps(
        {"name": "s", "spec_source": "s.toml", "spec_text": PROJECT_STUDY}))
    done = cli("study", "report", str(tmp_path), "--services", "kvstore,speach")
    assert done.returncode == 2 and "--services speach" in done.stderr
    assert "choose among kvstore, imgdnn" in done.stderr


def test_parallel_jobs_take_different_presets() -> None:
    study = parse_study(tomllib.loads(PROJECT_STUDY))
    order = [c.name for c in run_order(study.cells(), jobs=2)]
    assert order == ["arch1-kvstore", "arch8-kvstore", "arch1-imgdnn", "arch8-imgdnn"]
    assert [c.name for c in run_order(study.cells(), jobs=1)][:2] == ["arch1-kvstore",
                                                                      "arch1-imgdnn"]
    # Priced, a boot's cells go longest first (as `study plan` packs them): the longest
    # left for last would run alone at the end.
    seconds = {"arch1-kvstore": 600.0, "arch1-imgdnn": 3600.0, "arch8-kvstore": 900.0}
    order = [c.name for c in run_order(study.cells(), jobs=2, seconds=seconds)]
    assert order == ["arch1-imgdnn", "arch8-kvstore", "arch1-kvstore", "arch8-imgdnn"]


def test_parallel_jobs_boot_the_counters_board_beside_the_plain_one() -> None:
    """arch9's migration cells boot a board of their own: two jobs boot both at once
    instead of one waiting on the other's boot."""
    arch9 = 'presets = ["arch9"]\nplacements = ["ft", "cc", "il"]\ndynamic = ["migration"]'
    study = parse_study(tomllib.loads(PROJECT_STUDY.replace(
        'presets = ["arch1", "arch8"]', arch9).replace(
        'validate = ["arch1/kvstore"]', 'validate = ["arch9/kvstore"]')))
    order = [c.name for c in run_order(study.cells(), jobs=2)]
    assert order[:2] == ["arch9-kvstore", "arch9-kvstore-ft-mig"], order


def test_a_study_takes_at_least_its_longest_cell_however_many_jobs() -> None:
    from pimcloud.study_cli import study_wall_s

    cells = [100.0, 10.0, 10.0, 10.0]
    assert study_wall_s([5.0, 7.0], cells, 64) == pytest.approx(7 + 100)
    assert study_wall_s([], cells, 1) == pytest.approx(130)
    assert study_wall_s([], [40.0, 30.0, 20.0, 10.0], 2) == pytest.approx(50)


def test_cells_narrow_a_selection_to_named_cells() -> None:
    text = PROJECT_STUDY.replace('presets = ["arch1", "arch8"]', 'presets = ["arch1", "arch9"]')
    text = text.replace("validate =", 'placements = ["ft", "cc"]\nvalidate =')
    study = parse_study(tomllib.loads(text))
    every = _selected(study, "arch9", "kvstore")
    assert every == {"arch9-kvstore", "arch9-kvstore-cc"}
    assert _selected(study, "arch9", "kvstore", "arch9-kvstore") == {"arch9-kvstore"}
    with pytest.raises(ValueError, match="--cells arch1-kvstore: not a cell"):
        _selected(study, "arch9", None, "arch1-kvstore")


def _seconds(text: str) -> float:
    """format_seconds's text ("1h05m", "3m20s", "45s") back to seconds."""
    found = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    assert found and text, f"not a duration: {text!r}"
    h, m, sec = (int(g or 0) for g in found.groups())
    return h * 3600 + m * 60 + sec


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pimcloud.cli", *args], capture_output=True,
                          text=True)


def test_a_study_runs_resumes_validates_and_reports(
        fake_gem5: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's cells are what the analysis reads: run.json axes, lats.bin, the
    max-load search's record; the report's Table III and claims come from them."""
    (tmp_path / "vmlinux").write_bytes(b"\x7fELF fake kernel")
    (tmp_path / "disk.img").write_bytes(b"fake image" * 100)
    spec = tmp_path / "tiny.toml"
    spec.write_text(STUDY)
    # The fake serves each app at this many rps (M/M/1 service times of 1/rate).
    monkeypatch.setenv("FAKE_GEM5_CAPACITY", json.dumps({"kvstore": 8000, "imgdnn": 4000}))
    # Its workers share the queue, so a light load's requests start at once (no waits to
    # take for hand-overs to idle workers).
    monkeypatch.setenv("FAKE_GEM5_POOL", "1")
    out = tmp_path / "study"
    done = cli("study", "plan", str(spec), "--out", str(out), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "4 cells" in done.stdout and "checkpoint boot of arch1" in done.stdout
    done = cli("study", "run", str(spec), "--out", str(out), "--jobs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    status = cli("study", "status", str(out))
    assert status.returncode == 0
    assert status.stdout.count("1/1 done") == 4, status.stdout
    # The plan counts only what is left.
    planned = cli("study", "plan", str(spec), "--out", str(out))
    assert "4 cells, 4 done" in planned.stdout and planned.stdout.count(" done\n") == 4
    # A cell left to make: its ETA in `study status` is the study plan's price for it (its
    # measured CPU a request), not the campaign's generic speed table.
    [record] = out.glob("cells/arch8-kvstore/runs/*/run.json")
    record.rename(record.with_suffix(".kept"))
    # `study run` left its price in the cell's record, for the runner's own progress lines.
    priced_then = json.loads((out / "cells/arch8-kvstore/campaign.json").read_text())
    assert priced_then["estimate_per_run_s"] > 0
    planned = cli("study", "plan", str(spec), "--out", str(out), "--cells", "arch8-kvstore")
    priced = re.search(r"app checkpoint (\S+).*, run (\S+) \(", planned.stdout)
    assert priced and "measured" in planned.stdout, planned.stdout
    eta = re.search(r"arch8-kvstore .*1 pending, ETA (\S+)",
                    cli("study", "status", str(out)).stdout)
    assert eta, "no ETA for the cell left to make"
    assert _seconds(eta[1]) == pytest.approx(
        _seconds(priced[1]) + _seconds(priced[2]), abs=2)
    record.with_suffix(".kept").rename(record)
    # Again: nothing is made twice.
    runs_before = sorted(p.name for p in out.glob("cells/*/runs/*"))
    assert cli("study", "run", str(spec), "--out", str(out)).returncode == 0
    assert sorted(p.name for p in out.glob("cells/*/runs/*")) == runs_before
    # A search under the knee of the service's arch1 curve (the default) starts where
    # the model meets that knee.
    study, root = open_study(out)
    knee_ns = _validation_qos_ns(study, StudyDir(root), "imgdnn", "knee")
    assert 0 < knee_ns < SERVICES["imgdnn"].qos_ns
    # The study's own arch1 knee, not the reference's, where the study has one.
    elsewhere = tmp_path / "reference-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "qos.csv").write_text("app,knee_qos_ns\nimgdnn,1.0\n")
    assert _validation_qos_ns(study, StudyDir(root), "imgdnn", "knee",
                              reference=elsewhere) == knee_ns
    done = cli("study", "validate", str(out), "--tolerance", "0.2", "--seeds", "2",
               "--jobs", "2", "--qos", "study")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the model predicts" in done.stdout and "measured max load" in done.stdout
    # The search is a campaign of its own, beside the cell's: 10 QoS targets a probe.
    search = out / "searches" / "arch1-kvstore"
    found = json.loads((search / "maxload-kvstore.json").read_text())
    probes = sorted(p.name for p in search.glob("runs/*"))
    assert len(probes) == len(found["probes"]) >= 2
    assert sorted(p.name for p in out.glob("cells/*/runs/*")) == runs_before
    searched = tomllib.loads((out / "specs" / "arch1-kvstore-maxload.toml").read_text())
    assert parse_time_ps(searched["length"]["measured"]) == pytest.approx(200e9)  # 200 ms
    assert all("settled" in p and p["requests"] > p["transient"] for p in found["probes"])
    # Resumed under a model that now predicts otherwise: the same search, nothing new.
    again = cli("study", "validate", str(out), "--tolerance", "0.2", "--seeds", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(p.name for p in search.glob("runs/*")) == probes
    done = cli("study", "report", str(out))
    assert done.returncode == 0, done.stderr
    tables = out / "report" / "tables"
    table = pd.read_csv(tables / "table_iii.csv")
    assert set(table["arch"]) == {"arch1", "arch8"} and set(table["app"]) == {"kvstore",
                                                                               "imgdnn"}
    base = table[table["arch"] == "arch1"]
    assert (base["normalized_max_load"] == 1.0).all()
    # The fake's service rate does not depend on the cores: 16 servers carry more load.
    arch8 = table[table["arch"] == "arch8"]
    assert (arch8["normalized_max_load"] > 2).all()
    assert (table["sample_requests"] > 100).all()
    points = pd.read_csv(tables / "points.csv")
    assert points["probe"].sum() == len(probes)  # Fig. 2 shows the search's probes too
    qos = pd.read_csv(tables / "qos.csv").set_index("app")
    assert qos.loc["imgdnn", "knee_qos_ns"] == pytest.approx(knee_ns)  # the report's knee
    valid = pd.read_csv(tables / "validation.csv")
    assert list(valid["arch"]) == ["arch1"] and valid["measured_rps"].iloc[0] > 0
    assert valid["predicted_rps"].iloc[0] > 0 and pd.notna(valid["error"].iloc[0])
    assert valid["window_ms"].iloc[0] == pytest.approx(200)  # the search's, not the cell's
    claims = pd.read_csv(tables / "claims.csv")
    assert "Arch 8 beats every CPU-centric" in claims["claim"].iloc[0]
    assert claims["verdict"].iloc[0].startswith("holds")
    assert (out / "report" / "figures" / "fig2.png").is_file()
    assert (out / "report" / "figures" / "table_iii.png").is_file()
    # Into a reference made earlier: its cells this study did not make stay, marked
    # carried; the ones it made again are replaced.
    reference = tmp_path / "reference"
    reference.mkdir()
    old = table.assign(max_load_rps=1.0)
    extra = old[old["arch"] == "arch8"].assign(arch="arch4")
    pd.concat([old, extra]).to_csv(reference / "table_iii.csv", index=False)
    done = cli("study", "report", str(out), "--reference", str(reference))
    assert done.returncode == 0, done.stderr
    merged = pd.read_csv(reference / "table_iii.csv")
    assert set(merged["arch"]) == {"arch1", "arch4", "arch8"}
    assert list(merged[merged["arch"] == "arch4"]["carried"]) == [True, True]
    ours = merged[merged["arch"] != "arch4"]
    assert not ours["carried"].any() and (ours["max_load_rps"] > 1).all()
    # Normalised again over the merged table: the carried rows over this arch1.
    arch4 = merged[merged["arch"] == "arch4"].set_index("app")["normalized_max_load"]
    base = ours[ours["arch"] == "arch1"].set_index("app")["max_load_rps"]
    assert arch4["kvstore"] == pytest.approx(1.0 / base["kvstore"])
    assert (reference / "figures" / "table_iii.png").is_file()
    # The reference keeps each cell's sampled times: a later part that makes arch1 alone
    # re-models the arch8 cells from them, even under another QoS, where carried max
    # loads would not compare.
    samples = pd.read_csv(reference / "samples.csv")
    assert set(samples["preset"]) == {"arch1", "arch8"}
    assert samples.groupby(["preset", "app"]).size().min() > 100
    part = tmp_path / "part"
    shutil.copytree(out, part)
    for cell in part.glob("cells/arch8-*"):
        shutil.rmtree(cell)
    again = tmp_path / "reference-table2"
    shutil.copytree(reference, again)
    kept = pd.read_csv(again / "table_iii.csv")
    kept[kept["arch"] != "arch4"].to_csv(again / "table_iii.csv", index=False)
    done = cli("study", "report", str(part), "--reference", str(again), "--qos", "table2")
    assert done.returncode == 0, done.stderr
    remodelled = pd.read_csv(again / "table_iii.csv").set_index(["arch", "app"])
    assert set(remodelled.index) == {(a, s) for a in ("arch1", "arch8")
                                     for s in ("kvstore", "imgdnn")}
    assert remodelled["carried"].to_dict() == {key: key[0] == "arch8"
                                               for key in remodelled.index}
    for app in ("kvstore", "imgdnn"):
        assert remodelled.loc[("arch8", app), "qos_ns"] == SERVICES[app].paper_qos_ns
        assert remodelled.loc[("arch8", app), "max_load_rps"] != pytest.approx(
            ours.set_index(["arch", "app"]).loc[("arch8", app), "max_load_rps"])
    # A misspelt reference folder is named, not created.
    done = cli("study", "report", str(out), "--reference", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "no such folder" in done.stderr
    # Carried cells judged at another QoS (and without samples) are judged again at this
    # one from their model curves; one without a curve is left out, and both are said.
    moved = pd.read_csv(reference / "table_iii.csv")
    moved.loc[moved["arch"] == "arch4", "qos_ns"] *= 2
    moved.to_csv(reference / "table_iii.csv", index=False)
    lines = pd.read_csv(reference / "curves.csv")
    arch8_kv = lines[(lines["arch"] == "arch8") & (lines["app"] == "kvstore")]
    pd.concat([lines, arch8_kv.assign(arch="arch4")]).to_csv(reference / "curves.csv",
                                                             index=False)
    done = cli("study", "report", str(out), "--reference", str(reference))
    assert done.returncode == 0, done.stderr
    assert "judged arch4 kvstore again" in done.stderr
    assert "left out arch4 imgdnn" in done.stderr
    again = pd.read_csv(reference / "table_iii.csv").set_index(["arch", "app"])
    assert ("arch4", "imgdnn") not in again.index
    assert again.loc[("arch4", "kvstore"), "qos_ns"] == again.loc[("arch1", "kvstore"),
                                                                   "qos_ns"]
    # The same curve as arch8's: the same max load, to the curve's resolution.
    assert again.loc[("arch4", "kvstore"), "max_load_rps"] == pytest.approx(
        again.loc[("arch8", "kvstore"), "max_load_rps"], rel=0.03)
    # Its image removed (an image cache keeps the last few): the study is still read, its
    # status and report; running it again names the missing file.
    (tmp_path / "disk.img").unlink()
    status = cli("study", "status", str(out))
    assert status.returncode == 0 and status.stdout.count("1/1 done") == 4, status.stderr
    done = cli("study", "report", str(out), "--out", str(tmp_path / "after"))
    assert done.returncode == 0, done.stderr
    done = cli("study", "run", str(spec), "--out", str(out))
    assert done.returncode != 0 and "disk.img" in done.stderr and "no such file" in done.stderr


def test_the_plan_prices_a_cell_by_the_cpu_a_request_measured_nearest_it(
        tmp_path: Path) -> None:
    """Measured CPU a request beats the estimates: this study's own run on the preset
    first, then the reference's, then the mean over presets of the same core type."""
    from pimcloud.runs.study_work import request_costs

    text = PROJECT_STUDY.replace('presets = ["arch1", "arch8"]',
                                 'presets = ["arch1", "arch8", "arch4"]')
    study = parse_study(tomllib.loads(text))
    reference = tmp_path / "table_iii.csv"
    reference.write_text("arch,app,mean_occupied_us,overhead_us,generator_us\n"
                         "arch1,kvstore,100,10,\n"     # the generator's figure missing
                         "arch8,imgdnn,800,,20\n"
                         "arch1,imgdnn,,,\n")          # no measurement: skipped
    root = tmp_path / "study"
    for cell, cpu_ms, requests in (("arch8-kvstore", 60, 200), ("arch8-kvstore", 100, 200),
                                   ("arch1-kvstore", 1, 0)):  # no requests: says nothing
        run = root / "cells" / cell / "runs" / f"r{cpu_ms}" / "results" / "kvstore"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps(
            {"measured_cpu_ns": cpu_ms * 1e6, "requests": requests}))
    costs = request_costs(study, root, reference)
    assert costs["arch8-kvstore"].seconds == pytest.approx(0.4e-3)  # (0.3 + 0.5) / 2 ms
    assert "this study" in costs["arch8-kvstore"].source
    assert costs["arch1-kvstore"].seconds == pytest.approx(110e-6)  # the reference's
    assert "reference" in costs["arch1-kvstore"].source
    assert costs["arch8-imgdnn"].seconds == pytest.approx(820e-6)
    # arch4 (the same 2-wide cores) borrows arch8's figures; arch1 imgdnn has none.
    assert costs["arch4-kvstore"].seconds == pytest.approx(0.4e-3)
    assert costs["arch4-imgdnn"].seconds == pytest.approx(820e-6)
    assert "arch8 (wimpy cores)" in costs["arch4-imgdnn"].source
    assert "arch1-imgdnn" not in costs
    assert "0.82 ms a request" in costs["arch4-imgdnn"].describe()
    # Once arch4 has a service of its own measured, the borrowed figures are scaled by what
    # that service costs there against arch8: imgdnn at twice arch8's makes kvstore twice.
    (root / "cells" / "arch4-imgdnn" / "runs" / "r1" / "results" / "imgdnn").mkdir(
        parents=True)
    (root / "cells" / "arch4-imgdnn" / "runs" / "r1" / "results" / "imgdnn" /
     "summary.json").write_text(json.dumps({"measured_cpu_ns": 1640e6, "requests": 1000}))
    scaled = request_costs(study, root, reference)
    assert scaled["arch4-kvstore"].seconds == pytest.approx(0.8e-3)
    assert "x what the other services cost on arch4 against them" in \
        scaled["arch4-kvstore"].source


def test_a_measured_cpu_a_request_sets_a_runs_work_however_its_capacity_was_estimated(
        ) -> None:
    """oltp on the PIM cores: a capacity held down by the one writer made the estimate
    price 16 workers half busy; the measured figure prices the requests themselves."""
    from pimcloud.runs.plan import guest_work_estimate

    study = load_study("characterisation-gem5")
    cell = study.cell("arch9", "oltp")
    spec = parse_spec(study.cell_spec(cell), "<cell>")
    run = spec.runs()[0]
    length = spec.length.warmup_s + spec.length.measured_s
    estimated = guest_work_estimate(run, length)
    assert estimated == pytest.approx(cell.sample_rps / (cell.sample_rps / study.utilisation)
                                      * cell.cores * length)
    measured = guest_work_estimate(run, length, {"oltp": 1e-3})
    assert measured == pytest.approx(cell.sample_rps * length * 1e-3)
    assert measured < estimated / 5
    assert guest_work_estimate(run, length, {"search": 1e-3}) == pytest.approx(estimated)


def test_the_shipped_plan_prices_translates_pipelines(tmp_path: Path) -> None:
    """The real plan of the shipped study: translate's app checkpoint holds its start-up
    (one pipeline's load, which its further workers' copies share: 4 workers on arch1,
    16 on arch8), kvstore's does not."""
    done = subprocess.run(
        [sys.executable, "-m", "pimcloud.cli", "study", "plan", "characterisation-gem5",
         "--out", str(tmp_path / "s"), "--only", "arch1,arch8", "--services",
         "translate,kvstore"], capture_output=True, text=True,
        env={**{k: v for k, v in os.environ.items() if k != "GEM5"},
             "PIMCLOUD_CHECKPOINTS": str(tmp_path / "store")})  # nothing stored
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()
             if line.startswith("  arch")}
    assert "start-up" in lines["arch1-translate"] and "start-up" not in lines["arch1-kvstore"]
    assert "start-up at 390,000 guest instructions" in done.stdout

    def setup_s(line: str) -> float:
        return parse_host_s(line.split("app checkpoint ")[1].split()[0].rstrip(","))

    assert (setup_s(lines["arch1-translate"]) < setup_s(lines["arch8-translate"])
            < 1.5 * setup_s(lines["arch1-translate"]))
    assert setup_s(lines["arch1-translate"]) > 2 * setup_s(lines["arch1-kvstore"])


def test_the_shipped_plan_says_which_cells_it_prices_by_guest_ops(tmp_path: Path) -> None:
    """A cell on a preset with a line by guest ops, of a service with ops a request, is
    priced by them at the service's weight, and its line says so; one on a preset without
    such a line keeps its CPU a request."""
    done = subprocess.run(
        [sys.executable, "-m", "pimcloud.cli", "study", "plan", "characterisation-gem5",
         "--out", str(tmp_path / "s"), "--only", "arch1,arch2,arch5,arch7", "--services",
         "translate,oltp,speech"], capture_output=True, text=True,
        env={**{k: v for k, v in os.environ.items() if k != "GEM5"},
             "PIMCLOUD_CHECKPOINTS": str(tmp_path / "store"),
             "PIMCLOUD_SPEEDS": str(tmp_path / "none.json")})
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()
             if line.startswith("  arch")}
    # translate's ops are dearer than the line's on arch2 and cheaper on arch5 and arch7
    # (its runs there)
    with (Path(pimcloud.runs.__file__).parent / "speeds.toml").open("rb") as stream:
        ops = tomllib.load(stream)["gem5"]["ops"]
    shipped = ops["translate"]["weights"]
    weights = {}
    for preset, source in (("arch2", "arch2"), ("arch5", "arch5"), ("arch7", "arch7")):
        line = lines[f"{preset}-translate"]
        found = re.search(r"(\d+) \w+ +workers.*guest ops [0-9.]+ M x [0-9]+ requests \+ "
                          r"[0-9.]+ M x (\d+) workers' starts = [0-9.]+ G \[speeds.toml\], "
                          rf"each ([0-9.]+)x the line's cost \[speeds.toml on {source}\]", line)
        assert found, line
        assert found[1] == found[2]  # every worker starts in the run (no prewarm)
        weights[preset] = float(found[3])
    assert weights["arch5"] < 1 < weights["arch2"]
    assert weights["arch7"] == pytest.approx(shipped["arch7"], abs=5e-3)
    # speech has run on arch2 alone: arch7 takes the median of every preset's weight
    speech = ops["speech"]["weights"]
    assert "arch7" not in speech
    found = re.search(r"guest ops [0-9.]+ M a request \[speeds.toml\], each ([0-9.]+)x the "
                      rf"line's cost \[speeds.toml on {', '.join(sorted(speech))}\]",
                      lines["arch7-speech"])
    assert found, lines["arch7-speech"]
    assert float(found[1]) == pytest.approx(statistics.median(speech.values()), abs=5e-3)
    assert "M a request [speeds.toml])" in lines["arch2-oltp"]  # weight 1, no start
    assert "guest ops" not in lines["arch1-translate"] and "ms a request" in lines[
        "arch1-translate"]


def test_the_plan_counts_the_counters_boards_boot_apart(tmp_path: Path) -> None:
    """A migration cell's board has the page-access counters, so its boot is not the
    static cells' (runs/checkpoints.py keys it apart): the plan prices both."""
    done = subprocess.run(
        [sys.executable, "-m", "pimcloud.cli", "study", "plan", "characterisation-gem5",
         "--out", str(tmp_path / "s"), "--cells", "arch9-kvstore,arch9-kvstore-ft-mig"],
        capture_output=True, text=True,
        env={**{k: v for k, v in os.environ.items() if k != "GEM5"},
             "PIMCLOUD_CHECKPOINTS": str(tmp_path / "store")})
    assert done.returncode == 0, done.stderr
    boots = [line for line in done.stdout.splitlines() if "checkpoint boot of" in line]
    assert len(boots) == 2, done.stdout
    assert sum("with the page-access counters" in line for line in boots) == 1


def parse_host_s(text: str) -> float:
    """Seconds of a `format_seconds` figure such as 2h54m or 13m51s."""
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)([hms])", text):
        total += float(number) * {"h": 3600, "m": 60, "s": 1}[unit]
    return total


def test_a_cell_may_take_its_own_seed() -> None:
    text = PROJECT_STUDY + '[seeds]\n"arch8-kvstore" = 2\n'
    study = parse_study(tomllib.loads(text))
    seed_of = {c.name: study.cell_spec(c)["scenario"]["seed"] for c in study.cells()}
    assert seed_of == {"arch1-kvstore": 1, "arch1-imgdnn": 1, "arch8-kvstore": 2,
                       "arch8-imgdnn": 1}
    with pytest.raises(StudyError, match=re.escape("seeds.arch9-kvstore")):
        parse_study(tomllib.loads(text.replace('"arch8-kvstore"', '"arch9-kvstore"')))
    with pytest.raises(StudyError, match=re.escape("seeds.arch8-kvstore")):
        parse_study(tomllib.loads(text.replace('"arch8-kvstore" = 2', '"arch8-kvstore" = 0')))


def test_a_cell_may_take_its_own_sampled_load() -> None:
    """[sample_rps] sets one cell's sampled load (its run, its warm-up and window, the
    max load its search starts from); the other cells keep the estimate's."""
    text = PROJECT_STUDY + '[sample_rps]\n"arch1-kvstore" = 600\n'
    study = parse_study(tomllib.loads(text))
    plain = {c.name: c for c in parse_study(tomllib.loads(PROJECT_STUDY)).cells()}
    cells = {c.name: c for c in study.cells()}
    assert cells["arch1-kvstore"].sample_rps == 600 != plain["arch1-kvstore"].sample_rps
    assert {n: c for n, c in cells.items() if n != "arch1-kvstore"} == {
        n: c for n, c in plain.items() if n != "arch1-kvstore"}
    spec = study.cell_spec(cells["arch1-kvstore"])
    assert spec["axes"]["rps"] == [600]
    assert spec["apps"]["kvstore"]["max_rps"] == pytest.approx(600 / study.utilisation)
    assert parse_time_ps(spec["length"]["measured"]) == pytest.approx(200 / 600 * 1e12,
                                                                      rel=1e-3)
    with pytest.raises(StudyError, match=re.escape("sample_rps.arch9-kvstore")):
        parse_study(tomllib.loads(text.replace('"arch1-kvstore"', '"arch9-kvstore"')))
    with pytest.raises(StudyError, match=re.escape("sample_rps.arch1-kvstore")):
        parse_study(tomllib.loads(text.replace("= 600", "= 0")))


def test_a_study_without_arch1_validates_under_the_references_knee(tmp_path: Path) -> None:
    """A study made in parts (no arch1 cell of the service, or an unfinished one) searches
    under the knee its report will use, the reference's; with no reference knee either,
    the error says what to run."""
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "qos.csv").write_text("app,qos_ns,knee_qos_ns\nkvstore,69278.4,69278.4\n")
    said: list[str] = []
    for presets in ('["arch8"]', '["arch1", "arch8"]'):  # none; one not run
        study = parse_study(tomllib.loads(PROJECT_STUDY.replace('["arch1", "arch8"]', presets)
                                          .replace('validate = ["arch1/kvstore"]\n', "")),
                            inputs_must_exist=False)
        folder = StudyDir(tmp_path / "study")
        assert _validation_qos_ns(study, folder, "kvstore", "knee", reference,
                                  said.append) == pytest.approx(69278.4)
        assert _validation_qos_ns(study, folder, "kvstore", "study", reference) == 20e6
        with pytest.raises(ValueError, match="--qos study"):
            _validation_qos_ns(study, folder, "imgdnn", "knee", reference, said.append)
    assert len(said) == 2 and "knee of the reference's" in said[0] and "69.2784 us" in said[0]


def test_a_cell_that_used_up_its_attempts_goes_on_with_retry_failed(
        fake_gem5: Path, tmp_path: Path, set_plan: Any) -> None:
    """A cell whose run failed every attempt (a host-time limit each time, say) is not
    made by `study run` again; `study run --retry-failed` gives it a fresh set."""
    (tmp_path / "vmlinux").write_bytes(b"\x7fELF fake kernel")
    (tmp_path / "disk.img").write_bytes(b"fake image" * 100)
    spec = tmp_path / "tiny.toml"
    spec.write_text(STUDY)
    out = tmp_path / "study"
    set_plan({"apps-kvstore": ["fail", "fail", "fail", "fail"]})
    args = ("study", "run", str(spec), "--out", str(out), "--cells", "arch1-kvstore")
    first = cli(*args)
    assert first.returncode == 1 and "--retry-failed" in first.stdout, first.stdout
    attempts = sorted(p.name for p in out.glob("cells/arch1-kvstore/failed/*/attempt-*"))
    assert attempts == ["attempt-1", "attempt-2"]
    assert cli(*args).returncode == 1  # its two attempts are used up: nothing new
    assert sorted(p.name for p in out.glob("cells/arch1-kvstore/failed/*/attempt-*")) == \
        attempts
    set_plan({})
    retried = cli(*args, "--retry-failed")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "arch1-kvstore: its failed runs get 2 more attempts" in retried.stdout
    status = cli("study", "status", str(out)).stdout
    assert "1/1 done" in status
    # The spec's cells this runner was not asked for: one line, not one each.
    assert "not started: 3 cell(s): arch1-imgdnn, arch8-kvstore, arch8-imgdnn" in status, status


def test_the_plan_prices_only_what_a_resumed_cell_has_left(fake_gem5: Path, tmp_path: Path
                                                            ) -> None:
    """A cell whose run a session cut off holds part of its length in progress
    checkpoints: `study plan` prices the rest, at the run's own pace once enough of it is
    saved (RunState.left_s, the ETA of `campaign status`), and says so."""
    from pimcloud.runs.campaign import prepare_campaign
    from pimcloud.runs.study import each_cell

    (tmp_path / "vmlinux").write_bytes(b"\x7fELF fake kernel")
    (tmp_path / "disk.img").write_bytes(b"fake image" * 100)
    spec = tmp_path / "tiny.toml"
    spec.write_text(STUDY)
    root = tmp_path / "study"

    def plan() -> tuple[str, float]:
        done = cli("study", "plan", str(spec), "--out", str(root), "--cells", "arch1-kvstore")
        assert done.returncode == 0, done.stderr
        (line,) = [line for line in done.stdout.splitlines() if "arch1-kvstore" in line]
        total = re.search(r"total host time (\S+);", done.stdout)
        assert total, done.stdout
        return line, parse_host_s(total.group(1))

    def run_on(text: str) -> str:
        found = re.search(r", run (\S+) \(", text)
        assert found, text
        return found.group(1)

    whole_line, whole_s = plan()
    assert "saved in progress checkpoints" not in whole_line
    (_cell, spec_path, folder), = [item for item in each_cell(
        load_study(spec), root, log=lambda _: None) if item[0].name == "arch1-kvstore"]
    campaign = prepare_campaign(spec_path, folder, "gem5", log=lambda _: None)
    (run,) = campaign.runs()
    length_ps = int((run.spec.length.warmup_s + run.spec.length.measured_s) * 1e12)
    start, saved_ps = 10**12, length_ps * 3 // 4
    progress = campaign.dir.progress / run.run_id
    segment = progress / "segments" / str(start + saved_ps)
    segment.mkdir(parents=True)
    # Three quarters of the run made in 6,000 CPU s: its own pace says 2,000 s are left
    # (the plan's estimate of the whole run is minutes).
    segment.joinpath("segment.json").write_text(json.dumps(
        {"from_tick": start, "to_tick": start + saved_ps, "cpu_seconds": 6000.0}))
    (progress / f"ckpt-{start + saved_ps}").mkdir()
    (progress / f"ckpt-{start + saved_ps}" / "m5.cpt").write_text("[root]\n")
    line, total_s = plan()
    assert "75% of it made (runs done, progress checkpoints), 33m20s left" in line, line
    # The cell's whole run is still on its line; the total counts only what is left.
    assert run_on(line) == run_on(whole_line)
    assert parse_host_s(run_on(whole_line)) < 600
    assert total_s == pytest.approx(whole_s - parse_host_s(run_on(whole_line)) + 2000.0,
                                    abs=60.0)
