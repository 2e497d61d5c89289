"""A real single-node Slurm (Debian's slurm-wlm and munge), started here on localhost with a
config written into a temporary folder, runs a small campaign end to end through job
arrays (the runs themselves use the fake gem5, so the test is about Slurm).  The daemons
run as this user, are bounded in time and are stopped at the end."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pimcloud.analysis.campaign import load_campaign

pytestmark = pytest.mark.slow
NEEDED = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")
MISSING = [tool for tool in NEEDED if shutil.which(tool) is None
           and not Path(f"/usr/sbin/{tool}").exists()]


def _tool(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(check: Callable[[], bool], seconds: float, what: str, logs: list[Path]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    tails = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-1500:]}" for p in logs
                      if p.exists())
    raise AssertionError(f"{what} not within {seconds:g} s\n{tails}")


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if MISSING:
        pytest.skip(f"Debian's slurm-wlm and munge are not installed (missing "
                    f"{', '.join(MISSING)}): apt-get install slurm-wlm munge "
                    "(runs/apt-packages.txt)")
    if os.geteuid() != 0:
        pytest.skip("slurmd must start jobs as their user: run this test as root")
    root = tmp_path / "slurm"
    for sub in ("munge", "state", "spool", "log"):
        (root / sub).mkdir(parents=True)
    (root / "munge").chmod(0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = root / "munge" / "munge.socket"
    host = socket.gethostname().split(".")[0]
    config = root / "slurm.conf"
    config.write_text(f"""
ClusterName=pimcloudtest
SlurmctldHost={host}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket},cred_expire=10
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={host} CPUs={os.cpu_count()} RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
    monkeypatch.setenv("SLURM_CONF", str(config))
    logs = [root / "log" / n for n in ("munged.log", "slurmctld.log", "slurmd.log")]
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        daemons.append(subprocess.Popen(
            [_tool("munged"), "--foreground", "--force", f"--socket={munge_socket}",
             f"--key-file={key}", f"--log-file={root}/log/munged.log",
             f"--pid-file={root}/munge/munged.pid", f"--seed-file={root}/munge/seed"]))
        _wait(munge_socket.exists, 20, "munged's socket", logs)
        daemons.append(subprocess.Popen([_tool("slurmctld"), "-D", "-i", "-f", str(config)]))
        daemons.append(subprocess.Popen([_tool("slurmd"), "-D", "-f", str(config)]))

        def node_idle() -> bool:
            shown = subprocess.run([_tool("sinfo"), "--noheader", "--format=%t"],
                                   capture_output=True, text=True, check=False).stdout
            return "idle" in shown
        _wait(node_idle, 60, "the Slurm node to come up idle", logs)
        yield root
    finally:
        for daemon in reversed(daemons):
            daemon.terminate()
        for daemon in reversed(daemons):
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()


def test_campaign_runs_through_slurm_job_arrays(
        slurm: Path, fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        set_plan: Callable[[dict[str, list[str]]], None],
        gem5_calls: Callable[[str], list[list[str]]]) -> None:
    set_plan({"load-0.5_manager-default": ["crash", "ok"]})
    spec = write_spec(name="slurmed", extra='[executor]\nkind = "slurm"\n')
    spec.write_text(spec.read_text().replace('memory = "2GiB"', 'memory = "512MiB"'))
    out = tmp_path / "campaign"
    done = subprocess.run([sys.executable, "-m", "pimcloud.cli", "campaign", "run", str(spec),
                           "--out", str(out), "--plain"], env=os.environ.copy(),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "submitted Slurm jobs" in done.stdout
    record = json.loads((out / "campaign.json").read_text())
    assert len(record["slurm_jobs"]) == 2  # the checkpoint job, then the array after it
    assert len(gem5_calls("boot")) == 1
    loaded = load_campaign(out)
    assert len(loaded.runs) == 4
    retried = json.loads((out / "runs" / "load-0.5_manager-default" / "run.json").read_text())
    assert retried["execution"]["failed_attempts"] == ["crash: SIGSEGV"]
    # Each run ran in its own array task: Slurm's output files say so.
    outputs = sorted((out / "slurm").glob("*_*.out"))
    assert len(outputs) == 4
    assert all("done" in p.read_text() for p in outputs)


def test_a_preemptible_run_is_requeued_near_its_time_limit_and_resumes(
        slurm: Path, fake_gem5: Path, write_spec: Callable[..., Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The time-limit notice (the signal Slurm sends before the limit, sent here at once
    with scancel) stops the worker and requeues the task; it resumes from its progress
    checkpoint instead of starting over."""
    monkeypatch.setenv("FAKE_GEM5_STEP_SLEEP", "1")  # ten host seconds per run
    spec = write_spec(name="preempted", extra='[executor]\nkind = "slurm"\n'
                      '[gem5]\nprogress_every = "1s"\n')
    text = spec.read_text().replace('memory = "2GiB"', 'memory = "512MiB"')
    spec.write_text(text.replace('load = [0.2, 0.5]', 'load = [0.2]').replace(
        'manager = ["pimcloud", "default"]', 'manager = ["pimcloud"]'))
    out = tmp_path / "campaign"
    done = subprocess.run([sys.executable, "-m", "pimcloud.cli", "campaign", "run", str(spec),
                           "--out", str(out), "--plain", "--no-wait"], env=os.environ.copy(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    array = json.loads((out / "campaign.json").read_text())["slurm_jobs"][-1]
    script = next((out / "slurm").glob("array-*.sh")).read_text()
    assert "scontrol requeue" in script
    progress = out / ".progress" / "load-0.2_manager-pimcloud"
    _wait(lambda: any(progress.glob("ckpt-*")), 90, "a progress checkpoint", [])
    subprocess.run([_tool("scancel"), "--signal=USR1", "--batch", array], check=True)

    def finished() -> bool:
        return (out / "runs" / "load-0.2_manager-pimcloud" / "run.json").exists()
    # Slurm holds a requeued job for cred_expire (10 s here, AuthInfo) before it starts.
    _wait(finished, 180, "the requeued run to finish",
          [*sorted((out / "slurm").glob("*.out")), slurm / "log" / "slurmctld.log"])
    record = json.loads((out / "runs" / "load-0.2_manager-pimcloud" / "run.json").read_text())
    assert record["execution"]["resumed_from_tick"] > 0
    stats = (out / "runs" / "load-0.2_manager-pimcloud" / "m5out" / "stats.txt").read_text()
    steps = [line.split()[1] for line in stats.splitlines() if line.startswith("fake.step")]
    assert steps == [str(step) for step in range(1, 11)]
    logs = "".join(p.read_text() for p in (out / "slurm").glob("*_*.out"))
    assert "time limit near: requeue" in logs
