"""The guest side of a run: the script starts the manager the way the agent expects, a
manager that dies early fails the run, and a bad agent config is caught on the host."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from pimcloud.runs.backends import hang_detail
from pimcloud.runs.guest_scenario import (
    BE_PIDS,
    CGROUP_ROOT,
    DONE_FIFO,
    HANG_EXIT,
    HANG_MARK,
    PLACED_FILE,
    WRAPUP_FILE,
    WRAPUP_JOIN_S,
    AgentConfigError,
    agent_config,
    best_effort_lines,
    check_agent_config,
    event_lines,
    hang_after_s,
    harness_command,
    killable_subshell,
    placed_lines,
    program_candidates,
    run_part_script,
    run_script,
    setup_script,
    start_file_of,
    watchdog_lines,
    wrapup_join_lines,
    wrapup_lines,
    write_scenario,
    write_setup,
)
from pimcloud.runs.spec import ScenarioEvent, SpecError, load_spec
from pimcloud.workloads.harness_args import RUN_OPTIONS


def test_script_runs_the_agent_and_fails_when_it_dies_early(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    spec = load_spec(write_spec())
    run = next(r for r in spec.runs() if r.scenario.manager == "pimcloud")
    script = run_script(run, "qemu")
    assert 'pimcloud-agent run --config "$HERE/agent.json"' in script
    # Execute the script's end with a manager that has already exited.
    tail = script[script.index('status=0'):]
    probe = tmp_path / "tail.sh"
    probe.write_text('say() { echo "pimcloud-run $*"; }\nLC=""\nBE=""\nsh -c "exit 2" &\n'
                     'AGENT=$!\nsleep 0.2\n' + tail)
    done = subprocess.run(["sh", str(probe)], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "manager exited before the services" in done.stdout


def test_host_agent_rejects_a_bad_config(tmp_path: Path) -> None:
    if not program_candidates("pimcloud-agent"):
        pytest.skip("pimcloud-agent is not built (make cxx)")
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"policy": "pimcloud", "topology": "sysfs",
                                "apps": [{"name": "kvstore", "threads": 4, "qos_ms": 1.0}]}))
    check_agent_config(good)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"policy": "pimcloud-typo", "apps": []}))
    with pytest.raises(AgentConfigError, match="pimcloud-agent check failed"):
        check_agent_config(bad)


def test_gem5_runs_load_on_atomic_cores_then_switch_and_release_the_services(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    spec = load_spec(write_spec(extra="[gem5]\napp_checkpoint = false\n"))
    run = next(r for r in spec.runs() if r.scenario.manager == "pimcloud")
    command = harness_command(run, 0, "gem5")
    assert command[command.index("--start-file") + 1] == start_file_of("kvstore")
    assert "--control-file" in command  # the agent's profiling requests are answered
    assert "--start-file" not in harness_command(run, 0, "qemu")
    # Each app's requests are their own gem5 work item type, below gem5's 16.
    types = [harness_command(run, i, "gem5") for i in range(len(run.apps))]
    assert [c[c.index("--gem5-work-type") + 1] for c in types] == \
        [str(i) for i in range(len(run.apps))]
    assert "--gem5-work-type" not in harness_command(run, 0, "qemu")
    script = run_script(run, "gem5")
    # Run the barrier with the real m5 command (native backend: a logged no-op): the
    # services' ready files exist, so it switches and creates the start file.
    m5 = program_candidates("m5")
    if not m5:
        pytest.skip("the m5 command is not built (make cxx)")
    # Up to the start signal: the numa_maps sampler that follows runs until the end, and
    # the wrap-up's switcher waits for the services (tested on its own, below).
    barrier = script[script.index("for f in /run/pimcloud/ready-"):
                     script.index("(\n  trap ")]
    wrapup = "\n".join(wrapup_lines(run, "gem5")) + "\n"
    assert wrapup in barrier
    barrier = barrier.replace(wrapup, "")
    barrier = barrier.replace("/run/pimcloud", str(tmp_path))
    for app in run.apps:
        (tmp_path / f"ready-{app.name}").write_text("1\n")
    probe = tmp_path / "barrier.sh"
    probe.write_text('say() { echo "pimcloud-run $*"; }\nsleep 5 &\nLC=$!\n' + barrier)
    done = subprocess.run(["sh", str(probe)], capture_output=True, text=True, check=False,
                          timeout=30, env={"PATH": f"{m5[0].parent}:/usr/bin:/bin",
                                           "PIMCLOUD_BACKEND": "native"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "switching to the detailed cores" in done.stdout
    assert "switchcpu" in done.stderr  # m5 logged the op it would run in gem5
    # The start file carries the run's own options (load, length, seed...).
    started = (tmp_path / "start-kvstore").read_text().split()
    assert started[started.index("--rps") + 1] == f"{run.scenario.rps_of(run.apps[0]):g}"
    assert all(word in RUN_OPTIONS for word in started if word.startswith("--"))


def test_app_checkpoint_splits_the_app_set_from_each_runs_own_part(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    spec = load_spec(write_spec())
    runs = list(spec.runs())
    setups = {setup_script(run) for run in runs}
    assert len(setups) == 1, "the app set's script must not depend on the run"
    setup = setups.pop()
    launch = next(line for line in setup.splitlines() if "--mode integrated" in line)
    assert "--rps" not in launch and "--seed" not in launch and "--start-file" in launch
    assert setup.index("m5 checkpoint") < setup.index("m5 readfile")
    assert setup.rstrip().endswith(". /tmp/run-part/run.sh")
    part = run_part_script(runs[0])
    assert "pimcloud-kvstore" not in part.replace("start-kvstore", "")
    # The run's own part runs on the atomic cores and switches just before its start
    # signal (fast_forward, the default); without fast_forward it starts detailed.
    assert part.index("m5 switchcpu") < part.index("start-kvstore") and "--rps" in part
    # ...and back to the atomic cores once the services' requests are done.
    assert part.index(f"mkfifo {DONE_FIFO}") < part.index("m5 switchcpu")
    assert f"--done-file {DONE_FIFO}" in part
    detailed = load_spec(write_spec("detailed", extra="[gem5]\nfast_forward = false\n"))
    assert "m5 switchcpu" not in run_part_script(next(iter(detailed.runs())))
    # Two runs of the set: the same set-up folder, byte for byte; their own parts differ.
    for index, run in enumerate(runs[:2]):
        write_setup(run, tmp_path / f"setup{index}", ship_programs=False)
        write_scenario(run, tmp_path / f"part{index}", "gem5", ship_programs=False)
    assert (tmp_path / "setup0/run.sh").read_bytes() == (tmp_path / "setup1/run.sh").read_bytes()
    assert (tmp_path / "part0/run-id").read_text() != (tmp_path / "part1/run-id").read_text()
    assert json.loads((tmp_path / "part0/scenario.json").read_text())["app_checkpoint"]


def test_the_wrap_up_switches_back_once_every_service_is_done(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """The switcher blocks on the FIFO (no polling) and runs `m5 switchcpu` after the
    last service's line, not before; an app's second line (killed after its done line)
    does not count for another's, and a kill writes the line a killed app cannot."""
    m5 = program_candidates("m5")
    if not m5:
        pytest.skip("the m5 command is not built (make cxx)")
    run = load_spec(write_spec()).run_at({"apps": ["kvstore", "oltp"]})
    assert "-lt 2 ]" in wrapup_lines(run, "gem5")[1]
    killed = replace(run, scenario=replace(run.scenario, events=(
        ScenarioEvent(0.05, "kill", app="oltp"),)))
    assert "-lt 2 ]" in wrapup_lines(killed, "gem5")[1]
    assert "printf '%s killed\\n' oltp" in "\n".join(event_lines(killed, "gem5"))
    assert "killed\\n" not in "\n".join(event_lines(killed, "qemu"))  # no switcher there
    script = "\n".join(['say() { echo "pimcloud-run $*"; }', *wrapup_lines(run, "gem5"),
                        # a best-effort job, as best_effort_lines starts one
                        "sleep 30 & BE=$!", f"echo $BE > {BE_PIDS}",
                        f"echo kvstore 1 > {DONE_FIFO}", f"echo kvstore killed > {DONE_FIFO}",
                        "sleep 0.3",
                        'say "one done"', f"echo oltp 2 > {DONE_FIFO}",
                        "wait $SWITCHER",
                        # a stop takes effect when the job is next scheduled
                        "for i in 1 2 3 4 5 6 7 8 9 10; do read -r _ _ state _ < /proc/$BE/stat; "
                        '[ "$state" = T ] && break; sleep 0.1; done; echo "be state $state"',
                        "kill -CONT $BE; kill $BE"]).replace("/run/pimcloud", str(tmp_path))
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30,
                          env={"PATH": f"{m5[0].parent}:/usr/bin:/bin",
                               "PIMCLOUD_BACKEND": "native"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.index("one done") < done.stdout.index("measured requests done")
    assert "switchcpu" in done.stderr
    assert "be state T" in done.stdout  # stopped for the wrap-up on the atomic cores
    assert (tmp_path / Path(WRAPUP_FILE).name).exists()  # the watchdog allows for it


@pytest.mark.parametrize("case", ["both lines", "one line", "switcher stopped"])
def test_the_switch_back_comes_before_the_wrap_up(
        write_spec: Callable[..., Path], tmp_path: Path, case: str) -> None:
    """Services that exit right after their done lines (imgdnn) left the switcher killed
    before its turn, and the wrap-up on the detailed cores; one that ended without its
    line (the OOM killer) must not leave the wrap-up waiting, nor a switcher that cannot
    run (stopped here: the wrap-up goes on after WRAPUP_JOIN_S, shortened here)."""
    m5 = program_candidates("m5")
    if not m5:
        pytest.skip("the m5 command is not built (make cxx)")
    run = load_spec(write_spec()).run_at({"apps": ["kvstore", "oltp"]})
    assert wrapup_join_lines(run, "qemu") == []  # no detailed cores to leave
    lines = 1 if case == "one line" else 2
    script = "\n".join(['say() { echo "pimcloud-run $*"; }', *wrapup_lines(run, "gem5"),
                        *(["kill -STOP $SWITCHER"] if case == "switcher stopped" else []),
                        # the services: their lines, and they exit at once
                        *[f"echo app {i} > {DONE_FIFO}" for i in range(lines)],
                        'say "services done"', *wrapup_join_lines(run, "gem5"),
                        "kill $SWITCHER 2>/dev/null", 'say "wrap-up"']
                       ).replace("/run/pimcloud", str(tmp_path))
    # The guard's nap: short where it must fire; where the switcher ends, long enough
    # that a guard's nap left behind would hold the script's output past it (one did).
    join_s = 0.5 if case == "switcher stopped" else 20
    assert f"nap {WRAPUP_JOIN_S};" in script
    script = script.replace(f"nap {WRAPUP_JOIN_S};", f"nap {join_s};")
    began = time.monotonic()
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{m5[0].parent}:/usr/bin:/bin",
                               "PIMCLOUD_BACKEND": "native"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wrap-up" in done.stdout
    assert time.monotonic() - began < 10, "the join guard's nap outlived the script"
    if case == "switcher stopped":
        assert "switchcpu" not in done.stderr  # killed by the guard, never switched
        return
    assert "switchcpu" in done.stderr  # the native m5 says what it would have done
    assert done.stdout.index("measured requests done") < done.stdout.index("wrap-up")


def test_a_napping_subshell_ended_at_once_leaves_nothing_holding_the_output() -> None:
    """run.sh ends its guard, watchdog and timers with SIGTERM, sometimes microseconds
    after it started them (the wrap-up's guard, when the switch was made already): a TERM
    before the nap knows its sleep's pid left that sleep behind, holding the script's
    output for the whole nap (dash: 10 of 300 tries)."""
    one = f"{killable_subshell(['nap 30'])} & g=$!; kill $g"
    began = time.monotonic()
    done = subprocess.run(["sh", "-c", "\n".join([one] * 300)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - began < 20, "a nap's sleep outlived its subshell"


def test_the_real_harness_takes_the_run_options_from_its_start_file(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """Both sides of the harness command line: every option the runner puts in a start
    file is one the harness accepts there, and it runs with them."""
    synthetic = program_candidates("pimcloud-synthetic")
    if not synthetic:
        pytest.skip("the workloads are not built (make cxx)")
    from pimcloud.workloads.harness_args import LaunchArgs, RunArgs

    run_options = RunArgs(rps=3000, seconds=0.05, warmup_s=0.01, seed=4,
                          out=str(tmp_path / "out"), stats_file=str(tmp_path / "live.jsonl"),
                          interval_ms=20, gem5_work_type=1,
                          control_file=str(tmp_path / "control.jsonl"),
                          done_file=str(tmp_path / "done")).args()
    start = tmp_path / "go"
    launch = LaunchArgs(str(synthetic[0]), threads=1, ready_file=str(tmp_path / "ready"),
                        start_file=str(start), prewarm=20).args()
    process = subprocess.Popen(launch, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    (tmp_path / "go.tmp").write_text(" ".join(run_options) + "\n")
    (tmp_path / "go.tmp").rename(start)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["requests"] > 0 and summary["schedule"] == [[0, 3000]], summary
    assert summary["seed"] == 4 and summary["warmup"] == 30, summary
    assert summary["prewarm"] == 20  # served before it said it was ready
    assert (tmp_path / "live.jsonl").read_text().strip()
    # It said when its measured requests were done (the wrap-up's signal), once.
    assert (tmp_path / "done").read_text() == f"synthetic {process.pid}\n"
    # An option that would reshape the loaded service is refused, by name.
    refused = subprocess.Popen([str(synthetic[0]), "--start-file", str(tmp_path / "go2")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    (tmp_path / "go2").write_text("--seconds 0.05 --threads 8\n")
    _, err = refused.communicate(timeout=60)
    assert refused.returncode == 2 and "--threads" in err


def test_the_harness_takes_the_work_type_the_campaign_gives(tmp_path: Path) -> None:
    synthetic = program_candidates("pimcloud-synthetic")
    if not synthetic:
        pytest.skip("the workloads are not built (make cxx)")
    common = [str(synthetic[0]), "--rps", "2000", "--requests", "20", "--warmup", "0",
              "--threads", "1", "--out", str(tmp_path / "out")]
    done = subprocess.run([*common, "--gem5-work-type", "1"], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    refused = subprocess.run([*common, "--gem5-work-type", "16"], capture_output=True,
                             text=True, check=False, timeout=60)
    assert refused.returncode == 2 and "num_work_ids" in refused.stderr


def _run_end_of_script(script: str, services: str, hang_s: float, folder: Path,
                       wrapup_s: float = 0.0) -> subprocess.CompletedProcess[str]:
    """Run the script's watchdog and end with real processes standing in for services."""
    body = ("\n".join(watchdog_lines(hang_s, wrapup_s)) + "\n"
            + script[script.index("status=0"):])
    probe = folder / "end.sh"
    probe.write_text('say() { echo "pimcloud-run $*"; }\nAGENT=""\nBE=""\nLC=""\n' +
                     services + body.replace("/run/pimcloud", str(folder)))
    return subprocess.run(["sh", str(probe)], capture_output=True, text=True, check=False,
                          timeout=60)


def test_a_hung_service_is_reported_thread_by_thread_and_ended(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    spec = load_spec(write_spec())
    run = next(iter(spec.runs()))
    script = run_script(run, "gem5")
    assert "WATCHDOG=$!" in script
    # A real process asleep in the kernel stands in for a service that never ends.
    done = _run_end_of_script(script, "sleep 600 &\nLC=\"$LC $!\"\nsleep 0.05 &\n"
                              "LC=\"$LC $!\"\n", 0.5, tmp_path)
    assert done.returncode == HANG_EXIT, done.stdout + done.stderr
    assert "hung; their threads follow" in done.stdout
    lines = [line for line in done.stdout.splitlines() if line.startswith(HANG_MARK)]
    assert len(lines) == 1, done.stdout  # the finished service is not reported
    assert " state S cpu " in lines[0] and " wchan " in lines[0]
    detail = hang_detail("[  1.0] noise\n" + done.stdout)
    assert lines[0] in detail and "still running after 0.500 s" in detail


def test_services_that_finish_in_time_end_the_watchdog(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    spec = load_spec(write_spec())
    script = run_script(next(iter(spec.runs())), "gem5")
    done = _run_end_of_script(script, "sleep 0.1 &\nLC=$!\n", 30.0, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert HANG_MARK not in done.stdout and not (tmp_path / "hung").exists()


def test_the_watchdog_allows_for_the_wrap_up_only_once_it_has_begun(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """kvstore's end-of-run check of 200,000 keys outlasted the measured part's bound on
    the atomic cores and was killed as hung: once the wrap-up began, the bound is longer."""
    script = run_script(next(iter(load_spec(write_spec()).runs())), "gem5")
    slow_check = "sleep 0.8 &\nLC=$!\n"
    cut = _run_end_of_script(script, slow_check, 0.3, tmp_path, wrapup_s=2.0)
    assert cut.returncode == HANG_EXIT, cut.stdout  # the measured part itself overran
    assert "still running after 0.300 s: hung" in cut.stdout
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / Path(WRAPUP_FILE).name).touch()
    done = _run_end_of_script(script, slow_check, 0.3, marked, wrapup_s=2.0)
    assert done.returncode == 0, done.stdout + done.stderr
    assert HANG_MARK not in done.stdout
    hung = tmp_path / "hung-in-wrap-up"
    hung.mkdir()
    (hung / Path(WRAPUP_FILE).name).touch()
    stuck = _run_end_of_script(script, "sleep 600 &\nLC=$!\n", 0.2, hung, wrapup_s=0.3)
    assert stuck.returncode == HANG_EXIT, stuck.stdout
    assert "after 0.200 s and 0.300 s of wrap-up: hung" in stuck.stdout


def test_only_gem5_runs_get_a_watchdog_scaled_to_the_run_length(
        write_spec: Callable[..., Path]) -> None:
    spec = load_spec(write_spec())
    run = next(iter(spec.runs()))
    assert hang_after_s(run, "qemu") is None
    assert "WATCHDOG=$!" not in run_script(run, "qemu")
    span = spec.length.warmup_s + spec.length.measured_s
    assert hang_after_s(run, "gem5") == pytest.approx(3 * span + 0.2)


def test_no_script_calls_seq() -> None:
    """Debian's seq computes in x87 long double and never ends in gem5: the best-effort
    jobs of be-gem5 waited for their cgroup with $(seq 1 200) and never started."""
    from pimcloud.runs.spec import CAMPAIGN_DIR

    for path in sorted(CAMPAIGN_DIR.glob("*.toml")):
        for run in load_spec(path).runs():
            for script in (run_script(run, "gem5"), run_part_script(run), setup_script(run)):
                assert not re.search(r"\bseq\b", script), (path.name, run.run_id)


def test_best_effort_jobs_wait_for_their_cgroup_without_seq(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    spec = load_spec(write_spec())
    run = next(r for r in spec.runs() if r.scenario.manager == "pimcloud")
    run = replace(run, scenario=replace(run.scenario, be=("membw",)))
    lines = best_effort_lines(run)
    wait = next(line for line in lines if line.startswith("tries=0"))
    cgroup = tmp_path / "be"
    script = (f"(sleep 0.2; mkdir -p {cgroup}; touch {cgroup}/cgroup.procs) &\n"
              + wait.replace(CGROUP_ROOT, str(tmp_path)) + '\necho "waited $tries"\n')
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    tries = int(done.stdout.split()[-1])
    assert 5 <= tries < 200, done.stdout  # it waited for the cgroup, and not to the end


def test_a_pim_only_system_tells_the_agent_its_first_stack_is_node_0(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """arch9 has no host node: the kernel numbers its first stack node 0, and the agent's
    sysfs topology must hear it (placement.first_stack, as exec --first-stack); presets
    with a host node say nothing, so their configs stay as they were."""
    paper = load_spec(write_spec()).runs()[0]
    assert "first_stack" not in agent_config(paper)["placement"]
    (tmp_path / "arch9.toml").write_text(
        write_spec().read_text().replace('topology = "paper"', 'topology = "arch9"'))
    pim_only = load_spec(tmp_path / "arch9.toml").runs()[0]
    config = agent_config(pim_only)
    assert config["placement"]["first_stack"] == 0
    if not program_candidates("pimcloud-agent"):
        pytest.skip("pimcloud-agent is not built (make cxx)")
    written = tmp_path / "agent.json"
    written.write_text(json.dumps(config))
    check_agent_config(written)


def test_the_hotness_axis_reaches_the_agent_and_the_agent_accepts_it(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """Python writes "hotness" into agent.json; the C++ agent's own check reads it."""
    text = write_spec().read_text().replace(
        'manager = ["pimcloud", "default"]', 'manager = ["pimcloud"]\nhotness = ["idle", "hw"]')
    (tmp_path / "hot.toml").write_text(text)
    runs = load_spec(tmp_path / "hot.toml").runs()
    configs = {run.scenario.hotness: agent_config(run) for run in runs}
    assert set(configs) == {"idle", "hw"}
    assert configs["hw"]["hotness"] == "hw" and "hotness" not in configs["idle"]
    records = {run.scenario.hotness: run.axes_record() for run in runs}
    assert records["hw"]["hotness"] == "hw" and "hotness" not in records["idle"]
    if not program_candidates("pimcloud-agent"):
        pytest.skip("pimcloud-agent is not built (make cxx)")
    written = tmp_path / "agent.json"
    written.write_text(json.dumps(configs["hw"]))
    check_agent_config(written)
    written.write_text(json.dumps({**configs["hw"], "hotness": "psychic"}))
    with pytest.raises(AgentConfigError, match="hotness"):
        check_agent_config(written)


def test_the_hotness_shadow_reaches_the_agent_and_the_agent_accepts_it(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """``hotness_shadow`` goes into agent.json as a boolean the C++ agent's check reads."""
    text = write_spec().read_text().replace(
        'manager = ["pimcloud", "default"]',
        'manager = ["pimcloud"]\nhotness = ["hw"]\nhotness_shadow = [true, false]')
    (tmp_path / "shadow.toml").write_text(text + "\n[gem5]\ncounters = true\n")
    runs = load_spec(tmp_path / "shadow.toml").runs()
    configs = {run.scenario.hotness_shadow: agent_config(run) for run in runs}
    assert configs[True]["hotness_shadow"] is True and "hotness_shadow" not in configs[False]
    records = {run.scenario.hotness_shadow: run.axes_record() for run in runs}
    assert records[True]["hotness_shadow"] is True and "hotness_shadow" not in records[False]
    (tmp_path / "bare.toml").write_text(text)
    with pytest.raises(SpecError, match=r"page-access counters; add \[gem5\] counters = true"):
        load_spec(tmp_path / "bare.toml").runs()
    (tmp_path / "qemu.toml").write_text(text.replace('backend = "gem5"', 'backend = "qemu"')
                                        + "\n[gem5]\ncounters = true\n")
    with pytest.raises(SpecError, match="only the gem5 board has; use backend"):
        load_spec(tmp_path / "qemu.toml").runs()
    if not program_candidates("pimcloud-agent"):
        pytest.skip("pimcloud-agent is not built (make cxx)")
    written = tmp_path / "agent.json"
    written.write_text(json.dumps(configs[True]))
    check_agent_config(written)
    written.write_text(json.dumps({**configs[True], "hotness_shadow": "both"}))
    with pytest.raises(AgentConfigError, match="hotness_shadow"):
        check_agent_config(written)


def test_wait_placed_starts_the_requests_after_the_agents_initial_allocation(
        write_spec: Callable[..., Path], tmp_path: Path) -> None:
    """wait_placed: the agent is told where to say it has placed the apps, and the run's
    part waits for that before the switch and the start signals (at most 50 intervals)."""
    text = write_spec().read_text().replace("[scenario]\n", "[scenario]\nwait_placed = true\n")
    (tmp_path / "placed.toml").write_text(text)
    spec = load_spec(tmp_path / "placed.toml")
    runs = {r.scenario.manager: r for r in spec.runs()}
    pim = runs["pimcloud"]
    assert agent_config(pim)["placed"] == PLACED_FILE
    assert pim.axes_record()["wait_placed"] is True
    part = run_part_script(pim)
    assert part.index("manager placed the apps") < part.index("m5 switchcpu")
    assert part.index("manager placed the apps") < part.rindex(start_file_of("kvstore"))
    # QEMU without fast-forward: the requests wait for a start signal too.
    qemu = run_script(pim, "qemu")
    assert qemu.index("manager placed the apps") < qemu.rindex(start_file_of("kvstore"))
    plain = replace(pim, scenario=replace(pim.scenario, wait_placed=False))
    assert "placed" not in agent_config(plain) and not placed_lines(plain)
    # The wait itself, in a shell: the file appears after 0.2 s; an agent that dies ends it.
    wait = "\n".join(placed_lines(pim))
    marker = tmp_path / "placed"
    say = 'say() { echo "$*"; }\n'
    script = (say + f"(sleep 0.2; touch {marker}) &\nsleep 30 & AGENT=$!\n"
              + wait.replace(PLACED_FILE, str(marker)) + "\nkill $AGENT\n")
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert "manager placed the apps" in done.stdout, done.stdout + done.stderr
    marker.unlink()
    script = (say + "(sleep 0.2) & AGENT=$!\n" + wait.replace(PLACED_FILE, str(marker)))
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert "manager exited before it placed the apps" in done.stdout, done.stdout + done.stderr
    script = (say + "sleep 30 & AGENT=$!\n"
              + re.sub(r"-lt \d+", "-lt 20", wait.replace(PLACED_FILE, str(marker)))
              + "\nkill $AGENT\n")
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert "did not place the apps" in done.stdout, done.stdout + done.stderr
    if not program_candidates("pimcloud-agent"):
        pytest.skip("pimcloud-agent is not built (make cxx)")
    written = tmp_path / "agent.json"
    written.write_text(json.dumps(agent_config(pim)))
    check_agent_config(written)


def test_a_translate_set_up_ships_the_prefork_library_beside_the_service(
        tmp_path: Path) -> None:
    """pimcloud-translate finds libpimcloud-prefork.so beside itself (its stages preload
    it), so an app set with translate ships both from the real build."""
    from pimcloud.runs.spec import parse_spec

    if not program_candidates("libpimcloud-prefork.so"):
        pytest.skip("the translate service is not built (make cxx)")
    spec = parse_spec({
        "name": "p", "system": {"topology": "arch1", "backend": "gem5"},
        "apps": {"translate": {"threads": 4}}, "scenario": {"apps": ["translate"]},
        "axes": {"rps": [100.0]}, "length": {"warmup": "1ms", "measured": "10ms"}}, "<test>")
    write_setup(next(iter(spec.runs())), tmp_path / "setup")
    shipped = {path.name for path in (tmp_path / "setup/bin").iterdir()}
    assert {"pimcloud-translate", "libpimcloud-prefork.so"} <= shipped
