"""``pimcloud qemu run`` boots the project's image by default, as campaigns do."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_without_a_built_image_it_says_how_to_get_one(tmp_path: Path) -> None:
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 is missing: apt-get install qemu-system-x86")
    scenario = tmp_path / "run.sh"
    scenario.write_text("echo hello\n")
    done = subprocess.run([sys.executable, "-m", "pimcloud.cli", "qemu", "run", "--topology",
                           "paper", "--scenario", str(scenario), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, check=False, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PIMCLOUD_CACHE": str(tmp_path / "c")},
                          cwd=REPO)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pimcloud image build" in done.stdout and "--initramfs-only" in done.stdout
    assert not (tmp_path / "o").exists()  # nothing booted
