"""The init script: valid for both shells it runs under, and speaking the protocol the host
parses (its behaviour is tested by booting it: test_qemu_boot.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pimcloud.guest import qemu, scenario

INIT = qemu.INIT_SCRIPT


@pytest.mark.parametrize("shell", [["dash"], ["busybox", "ash"]])
def test_init_parses_in_dash_and_busybox(shell: list[str]) -> None:
    if shutil.which(shell[0]) is None:
        pytest.skip(f"{shell[0]} is not installed")
    done = subprocess.run([*shell, "-n", str(INIT)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr


def test_init_is_executable_with_a_sh_shebang() -> None:
    assert INIT.read_text().startswith("#!/bin/sh\n")
    assert INIT.stat().st_mode & 0o111


def test_every_marker_the_init_prints_is_one_the_host_parses() -> None:
    printed = set(re.findall(r'echo "(pimcloud-[a-z0-9-]+)', INIT.read_text()))
    parser = set(re.findall(r'"(pimcloud-[a-z0-9-]+)', Path(scenario.__file__).read_text()))
    assert printed, "no markers found in the init"
    assert printed <= parser, printed - parser


def test_the_init_checkpoints_only_in_gem5_and_just_before_reading_the_scenario() -> None:
    lines = [line.strip() for line in INIT.read_text().splitlines()]
    checkpoint = lines.index('[ "$BACKEND" = gem5 ] && m5 checkpoint')
    assert lines[checkpoint + 1] == "fetch_scenario"
    assert sum("m5 checkpoint" in line for line in lines) == 1
