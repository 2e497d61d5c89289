"""The preset benchmark's window scenario: gem5, not the guest's clock, closes the window."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_presets.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_presets", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_window_is_scheduled_by_gem5_and_the_run_ends_after_the_dump(tmp_path: Path) -> None:
    bench = load_bench()
    bench.busy_scenario(tmp_path, cpu_count=3, window_ms=2.5)
    script = (tmp_path / "run.sh").read_text()
    lines = script.splitlines()
    # One pinned busy loop per CPU, then the switch, reset, dump and exit, in that order.
    assert re.search(r"^for cpu in 0 1 2; do$", script, re.MULTILINE)
    order = [next(i for i, line in enumerate(lines) if line.startswith(command))
             for command in ("m5 switchcpu", "m5 resetstats", "m5 dumpstats", "m5 exit")]
    assert order == sorted(order)
    dump_ns = int(lines[order[2]].split()[2])
    exit_ns = int(lines[order[3]].split()[2])
    assert dump_ns == 2_500_000
    assert exit_ns > dump_ns
