"""The scons-extra SimObjects inside a real gem5 (GEM5 = a gem5.opt built with EXTRAS).

Each case runs a small gem5 script and relies on its own checks (exit status and a
PASS/FAIL line); the bad-input cases check that gem5 stops with a message that names
the problem.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pimcloud.gem5_runner import NO_GEM5

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.gem5


def gem5_binary() -> Path:
    value = os.environ.get("GEM5")
    if not value:
        pytest.skip(NO_GEM5)
    path = Path(value)
    if not path.is_file():
        pytest.fail(f"GEM5={value} is not a file; set it to the gem5.opt binary")
    return path


def run_gem5(script: str, args: list[str], outdir: Path) -> subprocess.CompletedProcess[str]:
    command = [str(gem5_binary()), f"--outdir={outdir}", str(HERE / script), *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr[-4000:])
    return result


@pytest.mark.parametrize("scenario", ["latency", "stress"])
def test_router_scenario(scenario: str, tmp_path: Path) -> None:
    result = run_gem5("router_two_stacks.py", ["--scenario", scenario], tmp_path)
    assert result.returncode == 0, f"gem5 failed:\n{result.stdout[-3000:]}"
    assert f"PASS {scenario}" in result.stdout


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("bad-route", "route 1 -> 2 is broken"),
        ("bad-targets", "target_locations has 1 entries but 2 mem_side ports"),
        ("bad-checksum", "bad checksum"),
        ("bad-length", "says its length is"),
    ],
)
def test_bad_configuration_is_named(case: str, message: str, tmp_path: Path) -> None:
    result = run_gem5("bad_config.py", [case], tmp_path)
    assert result.returncode != 0, f"gem5 accepted {case}"
    output = result.stdout + result.stderr
    assert message in output, output[-3000:]


def test_good_acpi_table_is_accepted(tmp_path: Path) -> None:
    result = run_gem5("bad_config.py", ["good-table"], tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "PASS good-table" in result.stdout
