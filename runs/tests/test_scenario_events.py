"""Scenario events (an app arrives, exits or is killed at a time; a hog fills a stack),
the static placement the services start under, and the scaled interval: the spec checks
them, and the generated run.sh does them, run here by a real shell with stand-in
services (the QEMU tests in guest/tests run the real ones)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pimcloud.runs.guest_scenario import (
    agent_config,
    harness_command,
    run_part_script,
    run_script,
)
from pimcloud.runs.spec import SpecError, parse_spec
from pimcloud.workloads.besteffort import MEMBW_MIB_PER_THREAD


def spec_with(events: list[dict[str, Any]], measured: str = "1s",
              **scenario: Any) -> dict[str, Any]:
    return {"scenario": {"apps": ["kvstore", "imgdnn"], "rps": 100, "manager": "none",
                         "events": events, **scenario},
            "length": {"warmup": "50ms", "measured": measured}}


@pytest.mark.parametrize(("event", "field", "says"), [
    ({"at": "1s", "kind": "kill", "app": "oltp"}, "events[0].app", "not in the run's apps"),
    ({"at": "1s", "kind": "arrive", "app": "kvstore"}, "events[0].at", "arrive before"),
    ({"at": "20ms", "kind": "exit", "app": "kvstore"}, "events[0].at", "after length.warmup"),
    ({"at": "2s", "kind": "kill", "app": "kvstore"}, "events[0].at", "after the run's end"),
    ({"at": "1s", "kind": "fill", "stack": 3, "free": "64MiB"}, "events[0].stack", "1..2"),
    ({"at": "1s", "kind": "fill", "stack": 1}, "events[0].free", "missing"),
    ({"at": "1s", "kind": "explode", "app": "kvstore"}, "events[0].kind", "choose one of"),
])
def test_bad_events_name_the_field_and_the_fix(event: dict[str, Any], field: str,
                                               says: str) -> None:
    with pytest.raises(SpecError, match=says) as error:
        parse_spec(spec_with([event]))
    assert field in str(error.value)


def test_a_fill_at_time_zero_is_done_before_the_start_signal() -> None:
    spec = parse_spec(spec_with([{"at": "0s", "kind": "fill", "stack": 2, "free": "100MiB"}]))
    script = run_script(spec.runs()[0], "qemu")
    hog = script.index("pimcloud-memhog --node 2 --free-mib 100")
    start = script.index("mv /run/pimcloud/start-")
    assert hog < start
    assert script.index("grep -q filled", hog) < start


def test_a_fill_at_time_zero_is_set_up_on_the_atomic_cores_in_gem5() -> None:
    raw = spec_with([{"at": "0s", "kind": "fill", "stack": 2, "free": "100MiB"}])
    raw["system"] = {"backend": "gem5"}
    with_checkpoint = parse_spec(raw).runs()[0]
    raw["gem5"] = {"app_checkpoint": False}
    without = parse_spec(raw).runs()[0]
    for script in (run_part_script(with_checkpoint), run_script(without, "gem5")):
        hog = script.index("pimcloud-memhog --node 2 --free-mib 100")
        switch = script.index("switching to the detailed cores")
        assert script.index("grep -q filled", hog) < switch < script.index(
            "mv /run/pimcloud/start-")


def test_an_app_that_exits_before_it_arrives_is_refused() -> None:
    with pytest.raises(SpecError, match="exits before it arrives"):
        parse_spec(spec_with([{"at": "500ms", "kind": "arrive", "app": "imgdnn"},
                              {"at": "300ms", "kind": "exit", "app": "imgdnn"}]))


def test_lengths_interval_and_placement_reach_the_harness_and_the_agent() -> None:
    spec = parse_spec(spec_with([{"at": "400ms", "kind": "arrive", "app": "imgdnn"},
                                 {"at": "600ms", "kind": "exit", "app": "kvstore"}],
                                placement="il", manager="pimcloud", interval="10ms"))
    run = spec.runs()[0]
    kv, img = (harness_command(run, i, "qemu") for i in range(2))
    assert kv[:8] == ["pimcloud-agent", "exec", "--placement", "il", "--resident", "1",
                      "--stacks", "2"]
    # kvstore measures from its warm-up's end to its exit; imgdnn from its arrival to the end.
    assert kv[kv.index("--seconds") + 1] == "0.55"
    assert img[img.index("--seconds") + 1] == "0.6"
    assert img[img.index("--start-file") + 1] == "/run/pimcloud/start-imgdnn"
    assert kv[kv.index("--interval-ms") + 1] == "10"
    config = agent_config(run)
    assert config["interval_ms"] == pytest.approx(10)
    assert [a.get("arrives", False) for a in config["apps"]] == [False, True]


STAND_IN = """#!/bin/sh
# A stand-in service: loads, says it is ready, waits for its start file, serves --seconds.
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift ;;
    --ready-file) ready=$2; shift ;;
    --start-file) start=$2; shift ;;
    --out) out=$2; shift ;;
  esac
  shift
done
touch "$ready"
while [ ! -e "$start" ]; do sleep 0.01; done
# The run's own options come in the start file.
set -- $(cat "$start")
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift ;;
    --out) out=$2; shift ;;
  esac
  shift
done
date +%s.%N > "$out/started"
sleep "$seconds"
date +%s.%N > "$out/ended"
"""


def test_the_run_script_does_its_events_at_their_times(tmp_path: Path) -> None:
    # The kill comes late enough that a loaded host cannot blur the two times.
    spec = parse_spec(spec_with([{"at": "2000ms", "kind": "kill", "app": "imgdnn"},
                                 {"at": "200ms", "kind": "arrive", "app": "kvstore"}],
                                measured="2500ms", placement="ft"))
    run = spec.runs()[0]
    folder = tmp_path / "pimcloud"
    results = tmp_path / "results"
    bin_dir = tmp_path / "bin"
    for path in (folder, results, bin_dir):
        path.mkdir()
    for app in ("kvstore", "imgdnn"):
        program = bin_dir / f"pimcloud-{app}"
        program.write_text(STAND_IN)
        program.chmod(0o755)
    (tmp_path / "scenario.json").write_text("{}")
    script = run_script(run, "qemu").replace("/run/pimcloud", str(folder))
    (tmp_path / "run.sh").write_text(script)
    env = {**os.environ, "PIMCLOUD_SCENARIO_DIR": str(tmp_path), "PIMCLOUD_RESULTS": str(results),
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    begin = time.time()
    done = subprocess.run(["sh", str(tmp_path / "run.sh")], capture_output=True, text=True,
                          env=env, check=False, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "killed by the scenario" in done.stdout
    events = [json.loads(line) for line in (results / "events.jsonl").read_text().splitlines()]
    assert [(e["kind"], e["target"]) for e in events] == [("arrive", "kvstore"),
                                                          ("kill", "imgdnn")]
    # imgdnn started with the signal and never ended; kvstore started at its arrival.
    assert not (results / "imgdnn" / "ended").exists()
    img_start = float((results / "imgdnn" / "started").read_text())
    kv_start = float((results / "kvstore" / "started").read_text())
    assert 0.15 < kv_start - img_start < 1.9
    assert (results / "kvstore" / "ended").exists()
    assert time.time() - begin < 30
    # The kernel's own view of each service's pages, at the start and while it ran.
    for app in ("kvstore", "imgdnn"):
        assert (results / app / "numa_maps.start").read_text().strip()
        assert (results / app / "numa_maps.last").read_text().strip()
    assert (results / "cgroups.txt").exists()
    assert (results / "cgroups-after-imgdnn.txt").exists()  # once the killed app had gone
    kill = next(e for e in events if e["kind"] == "kill")
    assert isinstance(kill["uptime_s"], float)


def test_best_effort_jobs_start_from_the_registry_into_the_be_cgroup() -> None:
    spec = parse_spec(spec_with([], be=["compute", "membw"], manager="pimcloud"))
    script = run_script(spec.runs()[0], "qemu")
    assert 'pimcloud-be compute --threads $(nproc) --seconds 0 --interval-ms 100 ' \
           '--stats-file "$R/compute"/progress.jsonl' in script
    assert "pimcloud-be membw" in script
    assert f"--mib {MEMBW_MIB_PER_THREAD}" in script
    assert "/sys/fs/cgroup/pimcloud/be/cgroup.procs" in script
    # In gem5 the jobs start with the requests: in the run's own part after the restore
    # of the app checkpoint, or after the switch when the run loads its own services.
    part = run_part_script(spec.runs()[0])
    assert part.index("mv /run/pimcloud/start-kvstore") < part.index("pimcloud-be compute")
    loading = replace(spec, gem5=replace(spec.gem5, app_checkpoint=False))
    gem5 = run_script(loading.runs()[0], "gem5")
    assert gem5.index("m5 switchcpu") < gem5.index("pimcloud-be compute")
    assert script.index("pimcloud-be compute") < script.index('mkdir -p "$R/kvstore"')
    with pytest.raises(SpecError, match="use compute, membw"):
        parse_spec(spec_with([], be=["stream"]))


def test_control_loops_scale_together_or_one_by_one_and_reach_the_agent() -> None:
    scaled = parse_spec(spec_with([], manager="pimcloud", control_scale=0.1)).runs()[0]
    assert scaled.scenario.interval_s == pytest.approx(0.01)
    config = agent_config(scaled)
    assert config["interval_ms"] == pytest.approx(10)
    assert config["profile_ms"] == pytest.approx(50)
    assert config["slack"] == {"intervals": 5, "min_intervals": 3}
    assert config["stability"] == {"cores_intervals": [2, 3], "pages_intervals": [3, 8]}
    record = scaled.axes_record()["control"]
    assert record["scale"] == 0.1 and record["interval_s"] == pytest.approx(0.01)
    # Each value on its own; the paper's otherwise.
    own = parse_spec(spec_with([], manager="pimcloud", interval="20ms", slack_intervals=7,
                               wait_pages=[2, 4])).runs()[0]
    config = agent_config(own)
    assert config["interval_ms"] == pytest.approx(20) and config["profile_ms"] == 500
    assert config["slack"]["intervals"] == 7
    assert config["stability"]["pages_intervals"] == [2, 4]
    with pytest.raises(SpecError, match="wait_cores"):
        parse_spec(spec_with([], wait_cores=[3, 2]))
    with pytest.raises(SpecError, match="min_intervals"):
        parse_spec(spec_with([], slack_intervals=2, min_intervals=3))


def test_ended_helpers_leave_no_sleep_holding_the_scenario_output(tmp_path: Path) -> None:
    """The guest init waits for the end of run.sh's output pipe before it sends the
    results: a helper's sleep that outlived run.sh kept it open (0.36 s of a gem5 run)."""
    spec = parse_spec(spec_with([{"at": "6000ms", "kind": "arrive", "app": "imgdnn"}],
                                measured="8s", placement="ft"))
    script = run_script(spec.runs()[0], "qemu")
    sampler = script[script.index("(\n  trap "):script.index("SAMPLER=$!")]
    timer = next(line for line in script.splitlines() if "nap 6.000000" in line)
    probe = tmp_path / "helpers.sh"
    probe.write_text("R=.; PID_0=$$; PID_1=$$\nmkdir -p kvstore imgdnn\n" + sampler +
                     "SAMPLER=$!\n" + timer + "\nTIMER=$!\nsleep 0.3\n"
                     "kill $SAMPLER $TIMER\necho ended\n")
    started = time.monotonic()
    # Through a pipe, as the init runs it: the pipe ends when every writer has gone.
    done = subprocess.run(f"sh {probe} | cat", shell=True, capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert "ended" in done.stdout
    # Without the fix the pipe ends with the timer's sleep: 0.3 s + 6 s; with it, after
    # 0.3 s (a wide margin, so that a loaded host does not fail it).
    assert time.monotonic() - started < 4, "a helper's sleep held the pipe open"


def test_a_counted_run_keeps_each_memorys_hottest_frames(tmp_path: Path) -> None:
    """The run's lines against a stand-in pimcloud-hw answering as the driver does (the
    real driver in gem5: gem5-configs/tests/test_counters_gem5.py)."""
    from pimcloud.guest.hw_counters import read_hottest
    from pimcloud.runs.guest_scenario import hot_pages_lines

    raw = spec_with([])
    raw["system"] = {"backend": "gem5"}
    raw["gem5"] = {"counters": True}
    run = parse_spec(raw).runs()[0]
    assert "pimcloud-hw hottest" in run_part_script(run)
    raw["gem5"] = {"counters": False}
    assert "pimcloud-hw hottest" not in run_part_script(parse_spec(raw).runs()[0])
    fake = tmp_path / "bin" / "pimcloud-hw"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n"
                    'if [ "$1" = info ]; then\n'
                    "  echo 'stacks 2 cpus 4 max_query 7 throttle_levels 10 "
                    "throttle_step_ps 2000 decay_period_ps 0'\n"
                    "  echo 'stack 0 node 1 frames 8'; echo 'stack 1 node 2 frames 8'\n"
                    'else echo "frames 1 node $3 scan_ps 8"; echo "0x$3 $2 private ro 0 - -"; fi\n')
    fake.chmod(0o755)
    script = "\n".join(['have() { command -v "$1" >/dev/null 2>&1; }', *hot_pages_lines()])
    subprocess.run(["sh", "-c", script], check=True, env={
        **os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "R": str(tmp_path)})
    for node in (1, 2):
        frames = read_hottest(tmp_path / f"hw-hottest-node{node}.txt")
        assert frames["node"].tolist() == [node] and frames["count"].tolist() == [7]


def test_static_placements_name_the_stacks_nodes_on_a_pim_only_system() -> None:
    raw = spec_with([], placement="il")
    raw["system"] = {"topology": "arch9"}  # no host node: stack 0 is node 0
    run = parse_spec(raw).runs()[0]
    kv, img = (harness_command(run, i, "qemu") for i in range(2))
    assert kv[:10] == ["pimcloud-agent", "exec", "--placement", "il", "--resident", "0",
                       "--stacks", "2", "--first-stack", "0"]
    assert img[5] == "1"  # the second app's resident stack: node 1


def test_far_memory_is_named_to_the_agent_as_its_slow_node() -> None:
    raw = spec_with([], placement="slow-always")
    raw["system"] = {"topology": "tiered-far-mini"}
    run = parse_spec(raw).runs()[0]
    kv = harness_command(run, 0, "qemu")
    assert kv[kv.index("--slow-node") + 1] == "3"
    assert agent_config(run)["placement"]["slow_node"] == 3
    raw["system"] = {"topology": "tiered-mini"}  # the slow tier is node 0: said by omission
    run = parse_spec(raw).runs()[0]
    assert "--slow-node" not in harness_command(run, 0, "qemu")
    assert "slow_node" not in agent_config(run)["placement"]


def test_the_manager_hears_each_running_services_pid_before_the_start(tmp_path: Path) -> None:
    """The start lines the run writes parse as the agent's statistics protocol wants them
    (guest/pimcloud-agent/engine/LatencySource.cpp: app, event start, pid, qos_ns > 0)."""
    from pimcloud.runs.guest_scenario import announce_lines

    raw = spec_with([{"at": "400ms", "kind": "arrive", "app": "imgdnn"}], manager="pimcloud")
    raw["apps"] = {"kvstore": {"max_rps": 1000, "qos": "1ms"},
                   "imgdnn": {"max_rps": 100, "qos": "7ms"}}
    run = parse_spec(raw).runs()[0]
    lines = announce_lines(run)
    assert len(lines) == 1  # imgdnn arrives later and announces itself
    script = run_part_script(run)
    assert script.index(lines[0]) > script.index("pimcloud-agent run")
    assert script.index(lines[0]) < script.index("switching to the detailed cores")
    out = tmp_path / "latency.jsonl"
    subprocess.run(["sh", "-c", "PID_0=4242; " + lines[0].replace(
        "/run/pimcloud/latency.jsonl", str(out))], check=True)
    assert json.loads(out.read_text()) == {"app": "kvstore", "event": "start", "pid": 4242,
                                           "qos_ns": 1000000}
    raw["scenario"]["manager"] = "none"
    assert announce_lines(parse_spec(raw).runs()[0]) == []
