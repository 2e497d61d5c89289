"""Preemptible gem5 runs against the fake gem5: a run killed at random points resumes from
its latest progress checkpoint, and its statistics, console and results are those of the
same run uninterrupted (nothing lost, nothing counted twice).

The real thing: runs/tests/test_campaign_real.py restores real gem5 progress checkpoints
when $GEM5 is set; the closing figures come from a real run killed twice."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pimcloud.runs.campaign import prepare_campaign
from pimcloud.runs.cli import execute
from pimcloud.runs.progress import RunProgress, ops_of_processes
from pimcloud.runs.status import OWN_PACE_FROM, campaign_status

PREEMPTIBLE = "[gem5]\nprogress_every = \"0.001s\"\n"  # a progress checkpoint each step
RUN = "load-0.2_manager-pimcloud"


def _run_files(campaign_dir: Path) -> tuple[list[str], list[str], bytes, str]:
    folder = campaign_dir / "runs" / RUN
    stats = (folder / "m5out" / "stats.txt").read_text()
    steps = [line.split()[1] for line in stats.splitlines() if line.startswith("fake.step")]
    console = [line for line in (folder / "m5out" / "board.pc.com_1.device").read_text()
               .splitlines() if "fake step" in line]
    return steps, console, (folder / "results" / "kvstore" / "lats.bin").read_bytes(), \
        (folder / "results" / "steps.txt").read_text()


def _execution(campaign_dir: Path) -> dict:
    return json.loads((campaign_dir / "runs" / RUN / "run.json").read_text())["execution"]


def test_a_resumed_run_adds_up_the_ops_of_its_processes() -> None:
    """gem5's simOps counts from the start of a process: a process's largest is its ops,
    and a segment that does not name its process (written before segments did) leaves
    the run's ops unknown rather than wrong."""
    segments = [{"process": "a", "sim_ops": 100.0}, {"process": "a", "sim_ops": 250.0},
                {"process": "b", "sim_ops": 40.0}]
    assert ops_of_processes(segments, 60.0) == 250 + 40 + 60
    assert ops_of_processes([], 60.0) == 60
    assert ops_of_processes(segments, None) is None
    assert ops_of_processes([*segments, {"sim_ops": 10.0}], 60.0) is None
    assert ops_of_processes([*segments, {"process": "c"}], 60.0) is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_run_killed_at_random_points_resumes_without_loss_or_double_counting(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        set_plan: Callable[[dict[str, list[str]]], None],
        gem5_calls: Callable[[str], list[list[str]]], seed: int) -> None:
    whole = prepare_campaign(write_spec("whole", extra=PREEMPTIBLE), tmp_path / "whole")
    assert execute(whole, "local", jobs=1, live=False) == 0
    expected = _run_files(tmp_path / "whole")
    assert expected[0] == [str(step) for step in range(1, 11)]

    for counter in fake_gem5.glob("attempts-*"):  # the fake counts attempts per run id
        counter.unlink()
    kills = sorted(random.Random(seed).sample(range(2, 11), 2))
    set_plan({RUN: [f"die@{kills[0]}", f"die@{kills[1]}", "ok"]})
    cut = prepare_campaign(write_spec("cut", retries=3, extra=PREEMPTIBLE), tmp_path / "cut")
    assert execute(cut, "local", jobs=1, live=False) == 0
    assert _run_files(tmp_path / "cut") == expected
    record = json.loads((tmp_path / "cut" / "runs" / RUN / "run.json").read_text())
    execution = record["execution"]
    assert execution["failed_attempts"] == ["crash: SIGKILL", "crash: SIGKILL"]
    # Its cores' ops are the uninterrupted run's (ten steps of 1000 ops): each gem5 process
    # counted its own from 0 and its segments name it; a killed process's ops past its last
    # checkpoint (its last step, dumped then killed) are done again, and counted once.
    assert _execution(tmp_path / "whole")["guest_ops"] == 10_000
    assert execution["guest_ops"] == 10_000
    assert len({info["process"] for info in execution["segments"]}) == 2
    # three gem5 processes, each of which paid gem5's start (a weight subtracts them all)
    assert _execution(tmp_path / "whole")["gem5_processes"] == 1
    assert execution["gem5_processes"] == 3
    # The last attempt resumed at the checkpoint before the second kill.
    assert execution["resumed_from_tick"] == execution["segments"][-1]["to_tick"]
    restores = [argv for argv in gem5_calls("restore") if "cut" in " ".join(argv)
                and RUN in " ".join(argv)]
    assert ["--resume" in argv for argv in restores] == [False, True, True]
    assert not (tmp_path / "cut" / ".progress" / RUN).exists()  # spent once the run is whole


def test_a_resumed_run_whose_last_process_counted_no_ops_records_none(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        set_plan: Callable[[dict[str, list[str]]], None]) -> None:
    """The last process's ops come from its own stats.txt, read before the earlier
    segments are stitched in front of it: read after, the last segment's simOps would
    stand for the last process's and the earlier process would count twice."""
    set_plan({RUN: ["die@4", "ok-no-ops"]})
    cut = prepare_campaign(write_spec("noops", retries=1, extra=PREEMPTIBLE),
                           tmp_path / "noops")
    assert execute(cut, "local", jobs=1, live=False) == 0
    execution = _execution(tmp_path / "noops")
    assert execution["segments"] and execution["segments"][-1]["sim_ops"] == 3_000
    assert "guest_ops" not in execution


def test_a_run_past_the_memory_limit_goes_on_from_its_checkpoint_in_a_new_process(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        set_plan: Callable[[dict[str, list[str]]], None],
        gem5_calls: Callable[[str], list[list[str]]]) -> None:
    """gem5 v24.0.0.1's O3 CPU keeps memory it no longer uses, so a long run's resident
    memory grows with its simulated work. Stopped at the limit after a progress checkpoint,
    it goes on from there in a new process within the same attempt (no retry spent), and
    its files are those of the run uninterrupted; a process that saved nothing new since
    it started fails as before, as does a run without progress checkpoints."""
    whole = prepare_campaign(write_spec("whole", extra=PREEMPTIBLE), tmp_path / "whole")
    assert execute(whole, "local", jobs=1, live=False) == 0
    expected = _run_files(tmp_path / "whole")

    for counter in fake_gem5.glob("attempts-*"):
        counter.unlink()
    set_plan({RUN: ["hog@3", "hog@7", "ok"]})
    grown = prepare_campaign(write_spec("grown", retries=0, memory="160MiB",
                                        extra=PREEMPTIBLE), tmp_path / "grown")
    assert execute(grown, "local", jobs=1, live=False) == 0
    assert _run_files(tmp_path / "grown") == expected
    execution = json.loads((tmp_path / "grown" / "runs" / RUN / "run.json").read_text()
                           )["execution"]
    assert execution["failed_attempts"] == [] and execution["attempt"] == 1
    assert execution["guest_ops"] == 10_000  # three processes' ops, none counted twice
    assert execution["gem5_processes"] == 3
    restarts = execution["memory_restarts"]
    assert [r["from_tick"] is None for r in restarts] == [True, False]
    assert restarts[0]["stopped_at_checkpoint"] == restarts[1]["from_tick"]
    assert restarts[1]["stopped_at_checkpoint"] == execution["resumed_from_tick"] \
        == execution["segments"][-1]["to_tick"]
    assert all(r["peak_rss_bytes"] > 160 * 2**20 for r in restarts)
    assert all(r["host_seconds_lost"] >= 0 for r in restarts)
    # The run's host time is every process's, whole: the stopped ones' (their saved
    # segments and their time past their last checkpoint) and the last one's.
    assert execution["host_seconds"] == pytest.approx(
        sum(r["host_seconds"] for r in restarts) + execution["host_seconds_last_attempt"],
        abs=0.3)
    restores = [argv for argv in gem5_calls("restore") if "grown" in " ".join(argv)
                and RUN in " ".join(argv)]
    assert ["--resume" in argv for argv in restores] == [False, True, True]
    log = (tmp_path / "grown" / "runs" / RUN / "gem5.log").read_text()
    assert log.count("a new gem5 goes on from the progress checkpoint") == 2

    # Nothing saved since it started: no restart, the attempt fails at the limit.
    for plan, extra, name in ((["hog@3", "hog-now"], PREEMPTIBLE, "stuck"),
                              (["hog@3"], "", "unsaved")):
        for counter in fake_gem5.glob("attempts-*"):
            counter.unlink()
        set_plan({RUN: plan})
        campaign = prepare_campaign(write_spec(name, retries=0, memory="160MiB",
                                               extra=extra), tmp_path / name)
        assert execute(campaign, "local", jobs=1, live=False) != 0
        failure = json.loads((tmp_path / name / "failed" / RUN / "attempt-1" /
                              "failure.json").read_text())
        assert failure["exit_cause"] == "memory-limit"
        assert len(failure.get("memory_restarts", [])) == (1 if name == "stuck" else 0)


def test_the_eta_counts_only_what_a_resumed_run_has_left(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """A run half saved in progress checkpoints (a session cut it off) has half its
    estimate left; one whose latest checkpoint was saved after it started running counts
    its time from that checkpoint."""
    campaign = prepare_campaign(write_spec("eta", extra=PREEMPTIBLE), tmp_path / "eta")
    before = campaign_status(campaign, estimate_per_run_s=100.0)
    assert before.eta_s == pytest.approx(400.0)  # 4 runs, one job
    start = 970_000_000_000
    half = int(0.5 * 0.110 * 1e12)  # warm-up 10 ms + measured 100 ms
    progress = campaign.dir.progress / RUN
    (progress / "segments" / str(start + half)).mkdir(parents=True)
    (progress / "segments" / str(start + half) / "segment.json").write_text(json.dumps(
        {"from_tick": start, "to_tick": start + half, "host_seconds": 50.0}))
    (progress / f"ckpt-{start + half}").mkdir()
    (progress / f"ckpt-{start + half}" / "m5.cpt").write_text("[root]\n")
    status = campaign_status(campaign, estimate_per_run_s=100.0)
    (resumed,) = [run for run in status.runs if run.run_id == RUN]
    assert resumed.state == "pending" and resumed.saved_fraction == pytest.approx(0.5)
    assert status.eta_s == pytest.approx(350.0)
    # Running since before its checkpoint: 20 s of work past it are done.
    resumed.state, resumed.since = "running", time.time() - 600
    resumed.saved_at = time.time() - 20
    assert status.eta_s == pytest.approx(330.0, abs=1.0)
    # Its checkpoints hold half its length, made in 150 CPU s where the plan said 50: the
    # rest is priced at its own pace (the other three runs at the plan's). A segment past
    # the latest checkpoint (an attempt killed before that checkpoint) is not counted.
    (progress / "segments" / str(start + half) / "segment.json").write_text(json.dumps(
        {"from_tick": start, "to_tick": start + half, "host_seconds": 400.0,
         "cpu_seconds": 150.0}))
    (progress / "segments" / str(start + 2 * half)).mkdir()
    (progress / "segments" / str(start + 2 * half) / "segment.json").write_text(json.dumps(
        {"from_tick": start + half, "to_tick": start + 2 * half, "host_seconds": 9.0}))
    paced = campaign_status(campaign, estimate_per_run_s=100.0)
    (resumed,) = [run for run in paced.runs if run.run_id == RUN]
    assert resumed.saved_host_s == 150.0
    assert paced.eta_s == pytest.approx(450.0)
    # Too little saved to tell (under OWN_PACE_FROM of its length): the plan's estimate.
    resumed.saved_fraction = OWN_PACE_FROM / 2
    assert paced.eta_s == pytest.approx(300.0 + 100.0 * (1 - OWN_PACE_FROM / 2))


def test_segments_an_attempt_wrote_after_its_last_checkpoint_are_dropped(tmp_path: Path
                                                                         ) -> None:
    progress = RunProgress(tmp_path)
    for tick, has_checkpoint in ((100, True), (200, False)):
        segment = tmp_path / "segments" / str(tick)
        segment.mkdir(parents=True)
        (segment / "segment.json").write_text(json.dumps(
            {"from_tick": tick - 100, "to_tick": tick, "host_seconds": 1.0}))
        (segment / "stats.txt").write_text(f"dump to {tick}\n")
        if has_checkpoint:
            (tmp_path / f"ckpt-{tick}").mkdir()
            (tmp_path / f"ckpt-{tick}" / "m5.cpt").write_text("[root]\n")
    progress.drop_orphans()
    latest = progress.latest()
    assert latest is not None and latest[1] == 100
    m5out = tmp_path / "m5out"
    m5out.mkdir()
    (m5out / "stats.txt").write_text("dump after 100\n")
    used = progress.stitch(m5out, latest[1])
    assert [info["to_tick"] for info in used] == [100]
    assert (m5out / "stats.txt").read_text() == "dump to 100\ndump after 100\n"
    assert not (tmp_path / "segments" / "200").exists()


def test_a_set_up_killed_after_a_progress_checkpoint_resumes_there(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An app checkpoint's set-up can outlast a session (translate's on arch1): killed, the
    next attempt restores its latest progress checkpoint, not the boot checkpoint."""
    monkeypatch.setenv("FAKE_GEM5_SETUP_DIE", "1")
    campaign = prepare_campaign(write_spec("setup", retries=2, extra=PREEMPTIBLE),
                                tmp_path / "out")
    assert execute(campaign, "local", jobs=1, live=False) == 0
    starts = (fake_gem5 / "setups-from").read_text().split()
    assert len(starts) == 2
    assert starts[0].endswith("/ckpt") and "/.progress-" in starts[1]
    assert starts[1].rsplit("/", 1)[-1] == "ckpt-1220000000000"
    made = [json.loads(path.read_text()) for path in
            (Path(campaign.record["checkpoint_root"]) / "apps").glob("*/meta.json")]
    assert len(made) == 1 and made[0]["tick"] == 1470000000000
    # The killed attempt's kept work counts in the set-up's CPU and host time (a study's
    # table showed a resumed set-up's last process alone); its progress is spent.
    assert made[0]["cpu_seconds"] >= 7.0 and made[0]["host_seconds"] >= 7.0
    assert not list((Path(campaign.record["checkpoint_root"]) / "apps").glob(".progress-*"))


def test_the_runner_records_a_resumed_runs_speed_with_its_processes(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        set_plan: Callable[[dict[str, list[str]]], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run made in three gem5 processes (two memory restarts) is recorded with them, so
    that its speed and weight take gem5's start off three times."""
    from pimcloud.runs import worker

    recorded: list[tuple[object, ...]] = []
    monkeypatch.setattr(worker, "record_run_speed", lambda *args: recorded.append(args))
    set_plan({RUN: ["hog@3", "hog@7", "ok"]})
    grown = prepare_campaign(write_spec("grown", retries=0, memory="160MiB",
                                        extra=PREEMPTIBLE), tmp_path / "grown")
    assert worker.execute_run(grown, grown.run(RUN), log=lambda line: None) == "done"
    (args,) = recorded
    assert args[-2] == 10_000 and args[-1] == 3  # its ops, over its three processes
