"""A non-editable install (a wheel) carries what the package reads at run time: the
topology presets, the campaign specs and the speed table."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _source_copy(target: Path) -> Path:
    """The files the build reads, copied (setuptools builds in the tree: build/, egg-info)."""
    skip = shutil.ignore_patterns("__pycache__", "out", "tests", "*.egg-info", "fixtures")
    for name in ("pyproject.toml", "README.md"):
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target / name)
    for folder in ("gem5-configs/pimcloud", "guest", "workloads", "runs", "analysis"):
        shutil.copytree(REPO / folder, target / folder, ignore=skip)
    return target


def test_a_wheel_installed_elsewhere_lists_the_presets(tmp_path: Path) -> None:
    source = _source_copy(tmp_path / "source")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-w", str(tmp_path / "dist"), str(source)],
                           capture_output=True, text=True, timeout=600)
    if built.returncode != 0 and "No module named pip" in built.stderr:
        pytest.skip("pip is not in this Python")
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("pimcloud-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "pimcloud/topology/presets/paper.toml" in names
    assert "pimcloud/runs/speeds.toml" in names
    assert "pimcloud/runs/campaigns/quickstart.toml" in names
    # Installed into a fresh venv (no repository on its path): the presets load.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")],
                   check=True, timeout=120)
    site = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    zipfile.ZipFile(wheel).extractall(site)
    listed = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c",
                             "from pimcloud.topology import load_topology, preset_names\n"
                             "print(preset_names()); print(load_topology('paper').name)"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "arch9" in listed.stdout and "paper" in listed.stdout.splitlines()[-1]
    assert str(REPO) not in listed.stdout
