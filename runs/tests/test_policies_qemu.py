"""The seed papers' policies in a real guest (QEMU, functional): each policy's actions
checked in the kernel's own files the run brings back, beside the agent's log."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.qemu]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _cpu_max(cgroups: Path, name: str) -> str:
    line = next(x for x in cgroups.read_text().splitlines() if x.startswith(f"{name} "))
    found = re.search(r" cpu\.max=(\S*)", line)
    assert found, line
    return found.group(1)


def test_interference_controller_sets_the_best_effort_quota_in_cpu_max(
        run_shipped_qemu: Callable[[str, dict[str, str]], Path]) -> None:
    runs = run_shipped_qemu("interference-qemu", {})
    # p99-driven: kvstore far under its QoS, so the BE quota grows half a core an interval.
    results = runs / "interference.signal-p99" / "results"
    quotas = [d for d in _lines(results / "decisions.jsonl") if d["event"] == "be-quota"]
    cores = [float(d["values"]["cores"]) for d in quotas]  # type: ignore[index]
    assert len(cores) >= 3 and cores[0] == 1.0 and cores[1] == 1.5, cores
    # The kernel holds what the agent last logged: cores x the 100 ms period.
    assert _cpu_max(results / "cgroups.txt", "be") == f"{round(cores[-1] * 100000)}/100000"
    # The membw job ran in that cgroup and did work.
    progress = _lines(results / "membw" / "progress.jsonl")
    assert sum(float(p["work"]) for p in progress if not p["final"]) > 0  # type: ignore[arg-type]
    # No control: the BE cgroup's cpu.max is left unlimited and no quota is logged.
    none = runs / "interference.signal-none" / "results"
    assert not [d for d in _lines(none / "decisions.jsonl") if d["event"] == "be-quota"]
    assert _cpu_max(none / "cgroups.txt", "be") == "max/100000"
