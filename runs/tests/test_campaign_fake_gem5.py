"""The runner against a fake gem5 (tests/fake_gem5.py): one shared checkpoint, atomic run
folders that analysis reads, retries, failure isolation, host-time limits, resume.

The real thing beside it: test_campaign_gem5.py (gem5), test_slurm.py (Slurm) and
test_campaign_qemu.py (QEMU)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pimcloud.analysis.campaign import load_campaign
from pimcloud.runs.campaign import CampaignError, open_campaign, prepare_campaign
from pimcloud.runs.cli import execute
from pimcloud.runs.status import campaign_status
from pimcloud.runs.worker import execute_run

RUN_IDS = ["load-0.2_manager-pimcloud", "load-0.2_manager-default",
           "load-0.5_manager-pimcloud", "load-0.5_manager-default"]


def test_a_fast_build_is_named_in_the_records_and_the_log(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A gem5.fast runs the bundle; the campaign says that its assertions are off."""
    monkeypatch.setenv("FAKE_GEM5_FAST", "1")
    said: list[str] = []
    campaign = prepare_campaign(write_spec(), tmp_path / "out", log=said.append)
    assert campaign.record["gem5_build"] == "fast"
    assert any("assertions and debug flags are compiled out" in line for line in said), said


def test_campaign_completes_from_one_checkpoint(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        gem5_calls: Callable[[str], list[list[str]]]) -> None:
    campaign = prepare_campaign(write_spec(), tmp_path / "out")
    assert campaign.backend_name == "gem5" and campaign.record["gem5_version"] == "24.0.0.1"
    assert execute(campaign, "local", jobs=2, live=False) == 0
    assert len(gem5_calls("boot")) == 1  # booted once, restored by every run
    restores = gem5_calls("restore")
    assert len(restores) == 4
    checkpoint_dirs = {argv[argv.index("--checkpoint-dir") + 1] for argv in restores}
    assert len(checkpoint_dirs) == 1
    for run_id in RUN_IDS:
        record = json.loads((tmp_path / "out" / "runs" / run_id / "run.json").read_text())
        assert record["run_id"] == run_id and record["app"] == "kvstore"
        execution = record["execution"]
        assert execution["backend"] == "gem5" and execution["exit_cause"] == "m5-exit"
        assert execution["spec_hash"] == campaign.spec.spec_hash
        assert execution["gem5_version"] == "24.0.0.1" and execution["host_seconds"] > 0
        assert execution["gem5_build"] == "opt"
        # The binary each run started with, so a gem5 rebuilt mid-campaign shows.
        wrapper = Path(campaign.record["gem5"])
        assert execution["gem5_sha256"] == hashlib.sha256(wrapper.read_bytes()).hexdigest()
        assert execution["simulated_seconds"] == pytest.approx(0.11)
        assert (tmp_path / "out" / "runs" / run_id / "m5out" / "stats.txt").is_file()
    # What analysis reads: one row per run with its axes, requests and stats by run id.
    loaded = load_campaign(tmp_path / "out")
    assert sorted(loaded.runs["run_id"]) == sorted(RUN_IDS)
    assert set(loaded.requests["app"]) == {"kvstore"}
    assert set(loaded.stats["run_id"]) == set(RUN_IDS)
    assert {"load", "manager", "rps"} <= set(loaded.runs.columns)
    assert not (tmp_path / "out" / ".staging").exists() or not any(
        (tmp_path / "out" / ".staging").iterdir())
    # A second campaign on the same inputs reuses the checkpoint.
    other = prepare_campaign(write_spec(name="again"), tmp_path / "out2")
    assert execute(other, "local", jobs=2, live=False) == 0
    assert len(gem5_calls("boot")) == 1
    assert len(gem5_calls("setup")) == 1  # and the app checkpoint of its app set
    # The measured speeds replace the default estimates: restores with the busy cores.
    speeds = json.loads(Path(os.environ["PIMCLOUD_SPEEDS"]).read_text())
    assert len(speeds["gem5/restore/paper"]) == 8 and len(speeds["gem5/setup/paper"]) == 1
    assert all(sample[2] == 4 for sample in speeds["gem5/restore/paper"])  # kvstore's workers
    # with the micro-ops its cores ran: stats.txt's last simOps (two dumps of 0.11 s)
    assert all(sample[5] == 1e6 for sample in speeds["gem5/restore/paper"])


def test_crash_is_retried_and_kept(fake_gem5: Path, write_spec: Callable[..., Path],
                                   tmp_path: Path,
                                   set_plan: Callable[[dict[str, list[str]]], None]) -> None:
    set_plan({"load-0.2_manager-pimcloud": ["crash", "ok"]})
    campaign = prepare_campaign(write_spec(retries=1), tmp_path / "out")
    assert execute(campaign, "local", jobs=2, live=False) == 0
    run = tmp_path / "out" / "runs" / "load-0.2_manager-pimcloud"
    record = json.loads((run / "run.json").read_text())["execution"]
    assert record["attempt"] == 2 and record["failed_attempts"] == ["crash: SIGSEGV"]
    failure = tmp_path / "out" / "failed" / "load-0.2_manager-pimcloud" / "attempt-1"
    assert json.loads((failure / "failure.json").read_text())["exit_cause"] == "crash: SIGSEGV"
    assert "fake gem5" in (failure / "gem5.log").read_text()
    assert not (failure / "run.json").exists()  # analysis never sees a failed attempt
    assert len(load_campaign(tmp_path / "out").runs) == 4


def test_failures_and_hangs_are_isolated(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        set_plan: Callable[[dict[str, list[str]]], None]) -> None:
    set_plan({"load-0.5_manager-pimcloud": ["fail", "fail", "fail"],
              "load-0.2_manager-default": ["hang", "ok"],
              "load-0.5_manager-default": ["no-results", "sim-limit"]})
    campaign = prepare_campaign(write_spec(host_time="3s", retries=1), tmp_path / "out")
    assert execute(campaign, "local", jobs=2, live=False) == 1
    status = {s.run_id: s for s in campaign_status(campaign).runs}
    assert status["load-0.2_manager-pimcloud"].state == "done"
    assert status["load-0.2_manager-default"].state == "done"  # hung, stopped, retried
    assert status["load-0.5_manager-pimcloud"].state == "failed"
    assert status["load-0.5_manager-pimcloud"].attempts == 2  # retries = 1: two attempts
    assert status["load-0.5_manager-default"].cause == "simulated-time-limit"
    hang = tmp_path / "out" / "failed" / "load-0.2_manager-default" / "attempt-1"
    assert json.loads((hang / "failure.json").read_text())["exit_cause"] == "host-time-limit"
    first = json.loads((tmp_path / "out" / "failed" / "load-0.5_manager-default" /
                        "attempt-1" / "failure.json").read_text())
    assert first["exit_cause"] == "no-results"
    # No fake gem5 is left running after the hang was stopped.
    left = subprocess.run(["pgrep", "-f", str(fake_gem5)], capture_output=True, text=True)
    assert left.stdout.strip() == ""
    # --retry-failed gives the failed runs new attempts; the plan now lets them succeed.
    set_plan({})
    assert subprocess.run([sys.executable, "-m", "pimcloud.cli", "campaign", "resume",
                           str(tmp_path / "out"), "--retry-failed", "--plain"],
                          env=os.environ.copy(), capture_output=True).returncode == 0
    assert campaign_status(open_campaign(tmp_path / "out")).counts["done"] == 4


def test_stop_and_resume_redoes_nothing(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        gem5_calls: Callable[[str], list[list[str]]]) -> None:
    monkeypatch.setenv("FAKE_GEM5_SLEEP", "1.5")
    spec = write_spec()
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pimcloud.cli", "campaign", "run", str(spec),
               "--out", str(out), "--jobs", "1", "--plain"]
    # A shell that starts the tests in the background leaves SIGINT ignored, and the
    # runner would inherit that: give it the terminal's default, as for a user's Ctrl-C.
    runner = subprocess.Popen(command, env=os.environ.copy(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    # Watch the folder while it runs: a run folder is complete whenever it exists.
    seen_partial = False
    while time.monotonic() < deadline:
        for run_dir in (out / "runs").glob("*") if (out / "runs").is_dir() else []:
            seen_partial |= not (run_dir / "run.json").is_file()
        if len(list((out / "runs").glob("*/run.json"))) >= 1 if (out / "runs").is_dir() \
                else False:
            break
        time.sleep(0.05)
    runner.send_signal(signal.SIGINT)  # Ctrl-C
    runner.wait(timeout=60)
    assert not seen_partial
    done_before = {p.parent.name for p in (out / "runs").glob("*/run.json")}
    assert 1 <= len(done_before) < 4
    restores_before = len(gem5_calls("restore"))
    times = {r: (out / "runs" / r / "run.json").stat().st_mtime_ns for r in done_before}

    resumed = subprocess.run([sys.executable, "-m", "pimcloud.cli", "campaign", "resume",
                              str(out), "--plain", "--jobs", "2"], env=os.environ.copy(),
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert {p.parent.name for p in (out / "runs").glob("*/run.json")} == set(RUN_IDS)
    for run_id, mtime in times.items():  # finished runs untouched
        assert (out / "runs" / run_id / "run.json").stat().st_mtime_ns == mtime
    made = [argv for argv in gem5_calls("restore")[restores_before:]]
    redone = [a for a in made if any(r in " ".join(a) for r in done_before)]
    assert not redone
    assert len(gem5_calls("boot")) == 1
    assert not any((out / ".staging").iterdir())


def test_killed_worker_leaves_no_run_and_is_resumed(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL in the middle of an attempt: the staging is abandoned, never published."""
    monkeypatch.setenv("FAKE_GEM5_SLEEP", "30")
    campaign = prepare_campaign(write_spec(), tmp_path / "out")
    campaign.checkpoints().ensure("paper", log=lambda _: None)
    worker = subprocess.Popen([sys.executable, "-m", "pimcloud.runs.worker",
                               str(campaign.dir.root), "--run", RUN_IDS[0]],
                              env=os.environ.copy(), stdout=subprocess.DEVNULL)
    # Wait for the attempt to be seen running (a loaded host may take a while to start it).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
            campaign.dir.staging.is_dir() and any(campaign.dir.staging.iterdir())
            and campaign_status(campaign).counts["running"] == 1):
        time.sleep(0.1)
    assert campaign_status(campaign).counts["running"] == 1
    worker.kill()
    worker.wait()
    assert not campaign.dir.is_done(RUN_IDS[0])
    status = campaign_status(campaign)
    assert status.counts["running"] == 0 and status.counts["pending"] == 4
    monkeypatch.setenv("FAKE_GEM5_SLEEP", "0")
    assert execute(open_campaign(campaign.dir.root), "local", jobs=2, live=False) == 0
    assert not any(campaign.dir.staging.iterdir())


def test_changed_spec_is_refused(fake_gem5: Path, write_spec: Callable[..., Path],
                                 tmp_path: Path) -> None:
    prepare_campaign(write_spec(), tmp_path / "out")
    changed = write_spec(extra="")
    changed.write_text(changed.read_text().replace('measured = "100ms"', 'measured = "1s"'))
    with pytest.raises(ValueError, match="another spec"):
        prepare_campaign(changed, tmp_path / "out")
    # Axes and limits may change: new runs join the campaign.
    grown = write_spec(retries=3)
    grown.write_text(grown.read_text().replace("load = [0.2, 0.5]", "load = [0.2, 0.5, 0.8]"))
    assert len(prepare_campaign(grown, tmp_path / "out").runs()) == 6


def test_rebuilt_image_is_refused_mid_campaign(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        set_plan: Callable[[dict[str, list[str]]], None]) -> None:
    # Two runs finish; then the image is rebuilt in place.  Running the rest would mix
    # two guests in one campaign, so resuming is refused, naming the file.
    campaign = prepare_campaign(write_spec(), tmp_path / "out")
    assert set(campaign.record["input_sha256"]) == {"kernel", "image"}
    for run in campaign.runs()[:2]:
        assert execute_run(campaign, run, log=lambda line: None) == "done"
    (tmp_path / "disk.img").write_bytes(b"rebuilt image" * 100)
    with pytest.raises(ValueError, match=r"inputs changed \(image .*disk.img"):
        prepare_campaign(write_spec(), tmp_path / "out")
    with pytest.raises(ValueError, match="another --out folder"):
        execute(open_campaign(tmp_path / "out"), "local", jobs=1, live=False)
    assert not campaign.dir.is_done(campaign.runs()[2].run_id)


def test_a_campaign_whose_image_was_removed_is_read_not_run(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """The image cache keeps only the newest images: a finished campaign's status and
    results stay readable once its image is gone; running it again names the file."""
    campaign = prepare_campaign(write_spec(), tmp_path / "out")
    assert execute_run(campaign, campaign.runs()[0], log=lambda line: None) == "done"
    (tmp_path / "disk.img").unlink()
    status = campaign_status(open_campaign(tmp_path / "out", to_run=False))
    assert status.counts["done"] == 1 and status.counts["pending"] == 3
    assert list(load_campaign(tmp_path / "out").runs["run_id"]) == [campaign.runs()[0].run_id]
    done = subprocess.run([sys.executable, "-m", "pimcloud.cli", "campaign", "collect",
                           str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 0 and (tmp_path / "out" / "runs.csv").is_file(), done.stderr
    with pytest.raises(ValueError, match=r"system.image.*disk.img.*no such file"):
        open_campaign(tmp_path / "out")


def _booted_folder(tmp_path: Path, mem_divisor: int, kernel_args: str | None = None,
                   name: str = "", digests: bool = True) -> Path:
    """What `pimcloud gem5 boot paper` leaves: boot.json (with the digests of the kernel
    and image it booted), boot.log, ckpt/, and m5out/ with the guest's console (which
    shows its kernel command line)."""
    from pimcloud.file_digest import file_digest
    from pimcloud.kernel_args import expected_kernel_args

    folder = tmp_path / f"booted-{mem_divisor}{name}"
    (folder / "ckpt").mkdir(parents=True)
    (folder / "m5out").mkdir()
    (folder / "m5out" / "board.pc.com_1.device").write_text(
        "[    0.000000] Linux version 6.1\n"
        f"[    0.000000] Command line: {kernel_args or expected_kernel_args()}\n")
    (folder / "ckpt" / "m5.cpt").write_text("[root]\n")
    (folder / "boot.log").write_text("Exiting @ tick 500000000000 because checkpoint\n")
    (folder / "boot.json").write_text(json.dumps({
        "topology": "paper", "mem_divisor": mem_divisor, "boot_cpu": "atomic", "ok": True,
        "tick": 500_000_000_000, "simulated_seconds": 0.5, "host_seconds": 60.0,
        "gem5": "gem5.opt", "kernel": str(tmp_path / "vmlinux"),
        "image": str(tmp_path / "disk.img"), "command": ["gem5.opt"], "problems": [],
        "created": "2026-11-22T12:00:00+0000",
        **({"input_sha256": {"kernel": file_digest(tmp_path / "vmlinux"),
                             "image": file_digest(tmp_path / "disk.img")}} if digests else {})}))
    return folder


def test_checkpoint_from_a_boot_of_an_image_since_rebuilt_is_refused(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """The checkpoint holds the guest's page cache of the image it booted: restoring it
    over an image rebuilt at the same path made every guest program fail to exec."""
    from pimcloud.runs.cli import adopt_checkpoint

    campaign = prepare_campaign(write_spec(), tmp_path / "out")
    booted = _booted_folder(tmp_path, mem_divisor=1)
    (tmp_path / "disk.img").write_bytes(b"rebuilt image" * 100)
    refused = adopt_checkpoint(campaign, booted)
    assert refused is not None and "image differs" in refused
    unrecorded = adopt_checkpoint(campaign, _booted_folder(
        tmp_path, mem_divisor=1, name="-old", digests=False))
    assert unrecorded is not None and "does not record the digests" in unrecorded


def test_checkpoint_from_a_gem5_boot_is_restored_not_booted_again(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        gem5_calls: Callable[[str], list[list[str]]]) -> None:
    from pimcloud.runs.cli import adopt_checkpoint

    campaign = prepare_campaign(write_spec(), tmp_path / "out")
    other_size = adopt_checkpoint(campaign, _booted_folder(tmp_path, mem_divisor=8))
    assert other_size is not None and "mem_divisor" in other_size
    # A boot with another kernel command line (here: MWAIT idle) holds another guest.
    other_args = adopt_checkpoint(campaign, _booted_folder(
        tmp_path, mem_divisor=1, name="-mwait",
        kernel_args="console=ttyS0 root=/dev/sda rw init=/sbin/pimcloud-init"))
    assert other_args is not None and "kernel_args" in other_args and "idle=halt" in other_args
    booted = _booted_folder(tmp_path, mem_divisor=1)
    assert adopt_checkpoint(campaign, booted) is None
    assert execute(campaign, "local", jobs=2, live=False) == 0
    assert gem5_calls("boot") == []
    # The app set loads once, from the adopted boot checkpoint; every run restores that.
    loaded = {argv[argv.index("--checkpoint-dir") + 1] for argv in gem5_calls("setup")}
    assert len(loaded) == 1
    adopted = Path(loaded.pop())
    assert (adopted / "m5.cpt").read_text() == "[root]\n"
    restored = {argv[argv.index("--checkpoint-dir") + 1] for argv in gem5_calls("restore")}
    assert len(restored) == 1 and Path(restored.pop()).parent.parent.name == "apps"
    assert (booted / "ckpt" / "m5.cpt").is_file()  # the booted folder stays whole
    meta = json.loads((adopted.parent / "meta.json").read_text())
    assert meta["adopted_from"] == str(booted)


def test_a_gem5_campaign_warns_of_services_gem5_cannot_run(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    prepare_campaign(write_spec(), tmp_path / "kv", log=said.append)
    with_oltp = write_spec("oltp", extra="").read_text().replace(
        'apps = ["kvstore"]', 'apps = ["kvstore", "oltp"]')
    (tmp_path / "oltp.toml").write_text(with_oltp)
    # oltp runs in gem5 (its SQLite computes in doubles, not x87): no warning.
    prepare_campaign(tmp_path / "oltp.toml", tmp_path / "oltp", log=said.append)
    assert not [line for line in said if line.startswith("warning")]
    # A service that has a caveat is named with it.
    monkeypatch.setattr("pimcloud.runs.campaign.gem5_caveat",
                        lambda app: "hangs in gem5" if app == "oltp" else "")
    prepare_campaign(tmp_path / "oltp.toml", tmp_path / "oltp2", log=said.append)
    warnings = [line for line in said if line.startswith("warning")]
    assert len(warnings) == 1 and "app oltp" in warnings[0] and "hangs" in warnings[0]


def test_counters_need_a_gem5_with_them_and_get_their_own_checkpoint(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, gem5_calls: Callable[[str], list[list[str]]]) -> None:
    spec = write_spec("hw", extra="[gem5]\ncounters = true\n")
    with pytest.raises(CampaignError, match="lacks PimCounters"):
        prepare_campaign(spec, tmp_path / "refused")
    monkeypatch.setenv("FAKE_GEM5_COUNTERS", "1")
    with_counters = prepare_campaign(spec, tmp_path / "hw")
    without = prepare_campaign(write_spec(), tmp_path / "plain")
    # A board with the counters holds one more SimObject: its own boot checkpoint.
    assert with_counters.checkpoints().key("paper") != without.checkpoints().key("paper")
    with_counters.checkpoints().ensure("paper", log=lambda _: None)
    boots = gem5_calls("boot")
    assert len(boots) == 1 and "--counters" in boots[0]
    assert boots[0].index("--counters") < boots[0].index("boot")  # a board option


@pytest.mark.parametrize("crng", ["absent", "not-ready"])
def test_a_boot_whose_guest_crng_is_not_ready_makes_no_checkpoint(
        crng: str, fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An image without the init's seeding (or a seeding that failed): every run restored
    from its checkpoint would spin a simulated second at its first /dev/urandom read."""
    monkeypatch.setenv("FAKE_GEM5_CRNG", crng)
    campaign = prepare_campaign(write_spec(retries=0), tmp_path / "out")
    with pytest.raises(RuntimeError, match=r"CRNG is not ready .*pimcloud image build"):
        execute(campaign, "local", jobs=1, live=False)
    store = tmp_path / "checkpoints"
    assert not [p for p in store.iterdir() if p.name.startswith("paper-")]
    failed = [p for p in store.iterdir() if p.name.startswith("failed-paper-")]
    assert failed and (failed[0] / "m5out" / "board.pc.com_1.device").is_file()


def test_an_image_a_campaign_pins_is_kept_by_the_next_builds(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """A study pins its keyed image by path; builds for other campaigns prune the images
    last used, and the pinned one counts as used each time its campaign goes on."""
    from pimcloud.guest.image import KEEP_IMAGES, _note_use, _prune_images, keyed_image

    cache = tmp_path / "image-cache"
    cache.mkdir()
    pinned = keyed_image(cache, "a" * 16)
    pinned.write_bytes(b"fake image" * 100)
    spec = write_spec()
    spec.write_text(spec.read_text().replace('"disk.img"', f'"{pinned}"'))
    campaign = prepare_campaign(spec, tmp_path / "out")
    assert campaign.record["inputs"]["image"] == str(pinned)
    hour_ago = time.time() - 3600
    os.utime(pinned.with_suffix(".used"), (hour_ago, hour_ago))  # the pin, an hour ago
    for number in range(KEEP_IMAGES - 1):  # then builds for other campaigns
        built = keyed_image(cache, f"{number:016x}")
        built.write_bytes(b"built")
        _note_use(built)
        os.utime(built.with_suffix(".used"), (hour_ago + 60 * (number + 1),) * 2)
        _prune_images(cache, built)
    assert pinned.is_file()
    assert execute_run(campaign, campaign.runs()[0], log=lambda line: None) == "done"
    newest = keyed_image(cache, "f" * 16)  # the next build: the oldest build goes
    newest.write_bytes(b"built")
    _note_use(newest)
    _prune_images(cache, newest)
    assert pinned.is_file() and not keyed_image(cache, f"{0:016x}").exists()


def test_status_tells_a_run_whose_gem5_waits_for_memory(
        fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose worker holds it while its gem5 waits for the machine's memory budget is
    "running" with a note, not a run whose gem5 runs (a cell showed "running" for 20
    minutes while its boot waited)."""
    import threading

    from pimcloud.memory_budget import BUDGET_ENV
    from pimcloud.runs.status import plain_lines, summary_line

    campaign = prepare_campaign(write_spec(), tmp_path / "out")
    first, second = (next(r for r in campaign.runs() if r.run_id == run_id)
                     for run_id in RUN_IDS[:2])
    assert execute_run(campaign, first, lambda _line: None) == "done"  # and the boot
    monkeypatch.setenv(BUDGET_ENV, "3GiB")  # another runner's 2 GiB and a run's 2 GiB pass it
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom pimcloud.memory_budget import reserved\n"
         "with reserved(2 * 2**30):\n    print('held', flush=True)\n    sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        worker = threading.Thread(target=execute_run, args=(campaign, second, lambda _l: None))
        worker.start()
        deadline = time.monotonic() + 30
        while True:
            status = campaign_status(campaign)
            state = next(s for s in status.runs if s.run_id == RUN_IDS[1])
            if state.waiting_for_memory or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert state.state == "running" and state.waiting_for_memory
        assert "1 running (1 waiting for memory)" in summary_line(status)
        assert any(RUN_IDS[1] in line and "waiting for memory" in line
                   for line in plain_lines(status))
        assert holder.stdin is not None
        holder.stdin.close()
        worker.join(60)
        assert not worker.is_alive()
    finally:
        holder.kill()
        holder.wait()
    done = campaign_status(campaign)
    assert not any(s.waiting_for_memory for s in done.runs)
    assert "waiting" not in summary_line(done)
