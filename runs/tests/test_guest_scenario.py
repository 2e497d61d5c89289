"""The guest side of a run: the script starts the manager the way the agent expects, a
manager that dies early fails the run, and a bad agent config is caught on the host."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from pimcloud.runs.guest_scenario import (
    AgentConfigError,
    check_agent_config,
    program_candidates,
    run_script,
)
from pimcloud.runs.spec import load_spec


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
