"""The harness answers the real resource manager's profile requests (guest/pimcloud-agent).

Both run natively here: the agent (affinity mode, a two-core model: host CPU 0, one stack
with CPU 1) profiles an app it does not know the throughput of, the harness
(pimcloud-synthetic at a low offered load, --control-file) saturates itself on each asked
CPU for each window, and the agent's own `profile-done` line carries what it read.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from pimcloud.paths import REPO_ROOT as REPO

Need = Callable[[str], Path]
OFFERED_RPS = 20


def _agent() -> Path:
    build = Path(os.environ.get("PIMCLOUD_BUILD", REPO / "build"))
    agent = build / "guest" / "pimcloud-agent" / "pimcloud-agent"
    if not agent.is_file():
        pytest.skip(f"{agent} is not built: cmake --build build --target pimcloud-agent")
    return agent


def test_the_agent_reads_the_saturated_throughput_of_each_core(
    tmp_path: Path, need: Need
) -> None:
    agent = _agent()
    synthetic = need("pimcloud-synthetic")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs (host CPU 0 and a stack CPU 1)")
    latency, control = tmp_path / "latency.jsonl", tmp_path / "control.jsonl"
    config = {
        "policy": "pimcloud",
        "interval_ms": 100,
        "profile_ms": 500,
        "topology": {"host_cpus": [0], "stacks": [[1]]},
        "sysfs_root": str(tmp_path / "sys"),  # no nodes: free memory unknown
        "cgroup": {"mode": "affinity"},
        "apps": [{"name": "synthetic", "qos_ms": 50, "threads": 2}],
        "latency": str(latency),
        "control": str(control),
        "log": str(tmp_path / "decisions.jsonl"),
        "summary": str(tmp_path / "summary.json"),
    }
    (tmp_path / "agent.json").write_text(json.dumps(config))
    harness = subprocess.Popen(
        [str(synthetic), "--rps", str(OFFERED_RPS), "--seconds", "4", "--warmup", "0",
         "--threads", "2", "--stats-file", str(latency), "--control-file", str(control),
         "--opt", "work_us=200", "--opt", "dist=fixed", "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        managed = subprocess.run(
            [str(agent), "run", "--config", str(tmp_path / "agent.json"), "--duration-s", "3"],
            capture_output=True, text=True, timeout=120, check=False)
        _, err = harness.communicate(timeout=120)
    finally:
        harness.kill()
    assert managed.returncode == 0, managed.stdout + managed.stderr
    assert harness.returncode == 0, err

    requests = [json.loads(line) for line in control.read_text().splitlines()]
    asked = [r for r in requests if r["event"] == "profile"]
    assert [(r["core_type"], r["cpu"]) for r in asked] == [("host", 0), ("pim", 1)]
    done = [r for r in requests if r["event"] == "profile-done"]
    assert len(done) == 1, requests
    # Without an answer the agent would read the offered load (about 20 RPS).
    assert done[0]["max_rps_host"] > 5 * OFFERED_RPS, done
    assert done[0]["max_rps_pim"] > 5 * OFFERED_RPS, done

    windows = json.loads((tmp_path / "out" / "summary.json").read_text())["profiles"]
    assert [(w["request"]["core_type"], w["request"]["cpu"]) for w in windows] == [
        ("host", 0), ("pim", 1)]
    assert [w["request"]["t_ns"] for w in windows] == [r["t_ns"] for r in asked]
    for window, key in zip(windows, ("max_rps_host", "max_rps_pim"), strict=True):
        assert window["intervals"] >= 3 and window["max_rps"] > 5 * OFFERED_RPS, window
        # The agent counts exactly the lines the harness marked with its request.
        assert done[0][key] == pytest.approx(window["max_rps"], rel=1e-3), (done, window)
        print(f"{key}: agent read {done[0][key]:.1f}, harness window max "
              f"{window['max_rps']:.1f} over {window['intervals']} intervals")
