"""Fixtures: a campaign spec in a temporary folder, and the fake gem5 behind $GEM5."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

FAKE_GEM5 = Path(__file__).resolve().parent / "fake_gem5.py"

SPEC = """
name = "{name}"
[system]
topology = "paper"
kernel = "vmlinux"
image = "disk.img"
backend = "gem5"
[apps.kvstore]
max_rps = 1000
qos = "5ms"
[apps.oltp]
max_rps = 500
qos = "10ms"
[scenario]
apps = ["kvstore"]
manager = "pimcloud"
[axes]
load = [0.2, 0.5]
manager = ["pimcloud", "default"]
[length]
warmup = "10ms"
measured = "100ms"
[limits]
host_time = "{host_time}"
memory = "{memory}"
retries = {retries}
"""


@pytest.fixture
def fake_gem5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$GEM5 = a wrapper around fake_gem5.py; its state folder is returned."""
    wrapper = tmp_path / "bin" / "gem5.opt"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE_GEM5} \"$@\"\n")
    wrapper.chmod(0o755)
    state = tmp_path / "fake-state"
    state.mkdir()
    monkeypatch.setenv("GEM5", str(wrapper))
    monkeypatch.setenv("FAKE_GEM5_STATE", str(state))
    monkeypatch.setenv("PIMCLOUD_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    return state


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[..., Path]:
    """Write a small spec (4 runs: 2 loads x 2 managers of kvstore) with dummy inputs."""
    (tmp_path / "vmlinux").write_bytes(b"\x7fELF fake kernel")
    (tmp_path / "disk.img").write_bytes(b"fake image" * 100)

    def write(name: str = "fake", host_time: str = "60s", retries: int = 1,
              extra: str = "", memory: str = "2GiB") -> Path:
        path = tmp_path / f"{name}.toml"
        path.write_text(SPEC.format(name=name, host_time=host_time, retries=retries,
                                    memory=memory) + extra)
        return path

    return write


@pytest.fixture
def set_plan(fake_gem5: Path, monkeypatch: pytest.MonkeyPatch
             ) -> Callable[[dict[str, list[str]]], None]:
    """Tell the fake gem5 how attempts of runs whose id contains a key should end."""

    def set_it(plan: dict[str, list[str]]) -> None:
        path = fake_gem5 / "plan.json"
        path.write_text(json.dumps(plan))
        monkeypatch.setenv("FAKE_GEM5_PLAN", str(path))

    return set_it


@pytest.fixture
def gem5_calls(fake_gem5: Path) -> Callable[[str], list[list[str]]]:
    """The fake gem5's invocations in a mode ("boot" or "restore")."""

    def calls(mode: str) -> list[list[str]]:
        path = fake_gem5 / "calls"
        if not path.exists():
            return []
        found = [json.loads(line) for line in path.read_text().splitlines()]
        return [argv for argv in found if mode in argv]

    return calls


@pytest.fixture
def run_shipped_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                     ) -> Callable[[str, dict[str, str]], Path]:
    """Run a shipped spec (runs/campaigns/<name>.toml) in QEMU with the project's kernel
    and image, after text edits {old: new}; returns its runs folder."""
    import re
    import shutil

    from pimcloud.runs.campaign import prepare_campaign
    from pimcloud.runs.cli import execute
    from pimcloud.runs.spec import CAMPAIGN_DIR

    def run(spec_name: str, edit: dict[str, str]) -> Path:
        if shutil.which("qemu-system-x86_64") is None:
            pytest.skip("qemu-system-x86_64 is missing: apt-get install qemu-system-x86")
        from pimcloud.guest.image import IMAGE_NAME, image_dir
        from pimcloud.guest.kernel import kernel_dir

        kernel, image = kernel_dir() / "bzImage", image_dir() / IMAGE_NAME
        if not (kernel.is_file() and image.is_file()):
            pytest.skip("the project kernel and image are not built: pimcloud kernel build, "
                        "pimcloud image build")
        monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
        text = (CAMPAIGN_DIR / f"{spec_name}.toml").read_text()
        text = re.sub(r'(?m)^(kernel|image) = "project".*\n', "", text)
        text = text.replace('[system]', f'[system]\nkernel = "{kernel}"\nimage = "{image}"')
        for old, new in edit.items():
            assert old in text
            text = text.replace(old, new)
        spec = tmp_path / f"{spec_name}.toml"
        spec.write_text(text)
        campaign = prepare_campaign(spec, tmp_path / "out")
        if execute(campaign, "local", jobs=1, live=False) != 0:
            failures = sorted((tmp_path / "out" / "failed").rglob("failure.json"))
            pytest.fail(f"QEMU run failed: {failures[-1].read_text()[:3000] if failures else ''}")
        return tmp_path / "out" / "runs"

    return run
