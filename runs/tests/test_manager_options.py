"""The managers and their options: one list, the agent's (`pimcloud-agent policies
--json`), which the campaign side must match, and per-policy options that a spec passes
through to the agent, which validates them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pimcloud.runs.guest_scenario import (
    AgentConfigError,
    agent_config,
    check_agent_config,
    program_candidates,
)
from pimcloud.runs.spec import MANAGERS, TIERING_MODES, SpecError, parse_spec


def _agent() -> Path:
    agents = program_candidates("pimcloud-agent")
    if not agents:
        pytest.skip("pimcloud-agent is not built (make cxx)")
    return agents[0]


def _spec(**scenario: object) -> dict[str, object]:
    return {"apps": {"kvstore": {"qos": "1ms"}},
            "scenario": {"apps": ["kvstore"], "rps": 100, **scenario},
            "length": {"measured": "1s"}}


def test_the_campaign_side_knows_exactly_the_agents_policies() -> None:
    listed = json.loads(subprocess.run([str(_agent()), "policies", "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    names = {p["name"] for p in listed["policies"]}
    assert names | {"none"} == set(MANAGERS)
    ams = next(p for p in listed["policies"] if p["name"] == "ams")
    assert [o["key"] for o in ams["options"]] == ["host_min_r", "be_core_type"]


def test_options_reach_the_agent_which_checks_them(tmp_path: Path) -> None:
    spec = parse_spec(_spec(manager="ams", manager_options={
        "ams": {"host_min_r": 2.0, "be_core_type": "host"},
        "octopus-man": {"order": ["kvstore"]}}))
    config = agent_config(spec.runs()[0])
    assert config["options"] == {"be_core_type": "host", "host_min_r": 2.0}
    _agent()
    good = tmp_path / "good.json"
    good.write_text(json.dumps(config))
    check_agent_config(good)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**config, "options": {"host_min_r": -1}}))
    with pytest.raises(AgentConfigError, match=r"options\.host_min_r is -1"):
        check_agent_config(bad)


def test_options_for_an_unknown_manager_are_refused() -> None:
    with pytest.raises(SpecError, match="not a manager with options"):
        parse_spec(_spec(manager_options={"pimcloud-fast": {"x": 1}}))


def test_a_policy_option_is_an_axis_with_the_other_options_kept(tmp_path: Path) -> None:
    spec = parse_spec({**_spec(manager="interference",
                               manager_options={"interference": {"learn_intervals": 5}}),
                       "axes": {"options": {"interference": {"signal": ["latency", "none"]}}}})
    runs = spec.runs()
    assert [r.run_id for r in runs] == ["interference.signal-latency",
                                        "interference.signal-none"]
    config = agent_config(runs[1])
    assert config["options"] == {"learn_intervals": 5, "signal": "none"}
    assert runs[1].axes_record()["options.interference.signal"] == "none"  # for analysis
    _agent()
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(config))
    check_agent_config(path)
    path.write_text(json.dumps({**config, "options": {"signal": "counters"}}))
    with pytest.raises(AgentConfigError, match=r"options\.signal"):
        check_agent_config(path)


@pytest.mark.parametrize("axes, fix", [
    ({"options": {"pimcloud-fast": {"x": [1]}}}, "not a manager with options"),
    ({"options": {"interference": {"signal": []}}}, "non-empty list"),
    ({"options": {"interference": {"signal": ["p99", "p99"]}}}, "listed twice"),
    ({"options": ["signal"]}, "options.<manager>.<key>"),
])
def test_option_axes_errors_name_the_fix(axes: dict[str, object], fix: str) -> None:
    with pytest.raises(SpecError, match=fix):
        parse_spec({**_spec(manager="interference"), "axes": axes})


@pytest.mark.parametrize(("tiering", "mode"), list(TIERING_MODES.items()))
def test_tiering_reaches_the_agent_config_which_accepts_it(tmp_path: Path, tiering: str,
                                                           mode: str) -> None:
    spec = parse_spec({**_spec(placement="slow-preferred", tiering=tiering),
                       "system": {"topology": "tiered"}})
    config = agent_config(spec.runs()[0])
    assert config["placement"] == {"static": "slow-preferred", "tiering_pages": 2048,
                                   "tiering": mode}
    # Small stacks: the tiering step and the agent's reserve scale down with them.
    small = parse_spec({**_spec(placement="slow-preferred", tiering=tiering,
                                tiering_pages=256, reserve="8MiB"),
                        "system": {"topology": "tiered"}})
    assert agent_config(small.runs()[0])["placement"] == {
        "static": "slow-preferred", "tiering_pages": 256, "tiering": mode, "reserve_mib": 8.0}
    _agent()
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(config))
    check_agent_config(path)
    path.write_text(json.dumps(agent_config(small.runs()[0])))
    check_agent_config(path)
    path.write_text(json.dumps({**config, "placement": {"static": "slow-sometimes"}}))
    with pytest.raises(AgentConfigError, match="fast-preferred"):
        check_agent_config(path)
    path.write_text(json.dumps({**config, "placement": {**config["placement"],
                                                        "tiering": "lru"}}))
    with pytest.raises(AgentConfigError, match="heteroos-coordinated"):
        check_agent_config(path)
