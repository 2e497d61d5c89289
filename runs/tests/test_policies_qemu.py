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


def _pages_on(numa_maps: Path, node: int) -> int:
    """4 KiB pages of a process on a node, as its numa_maps counts them (huge pages too)."""
    total = 0
    for line in numa_maps.read_text().splitlines():
        found = re.search(rf" N{node}=(\d+)", line)
        if found:
            size = re.search(r" kernelpagesize_kB=(\d+)", line)
            total += int(found.group(1)) * (int(size.group(1)) // 4 if size else 1)
    return total


def test_balm_moves_the_best_effort_pages_off_the_lc_stack(
        run_shipped_qemu: Callable[[str, dict[str, str]], Path]) -> None:
    runs = run_shipped_qemu("balm-qemu", {})
    for mode in ("pgm", "unshared"):
        results = runs / f"balm.mode-{mode}" / "results"
        decisions = _lines(results / "decisions.jsonl")
        asks = [d for d in decisions if d["event"] == "be-migrate"]
        assert asks and all(d["placement"][0]["from_stack"] == 1  # type: ignore[index]
                            and d["placement"][0]["stack"] == 2 for d in asks), asks[:2]
        assert "planned off stack 1" in str(asks[0]["reason"])
        # Booked as move_pages reported them, in the asking decision or its later "migrate"
        # entries (under TCG a busy job's pages move at tens per second: its threads must
        # acknowledge every TLB shootdown, and they share two host cores).
        moved = sum(int(d["pages_moved"]) for d in decisions  # type: ignore[call-overload]
                    if d["app"] == "be")
        assert moved > 0, (mode, asks[:2])
        # The kernel's count agrees: the job's memory on stack 2 holds at least the pages
        # the log says went there.
        last = results / "membw" / "numa_maps.last"
        assert _pages_on(last, 2) >= moved, (mode, _pages_on(last, 2), moved)
