"""The real backends beside the fake: a small campaign in QEMU (functional) and in gem5.

QEMU: needs qemu-system-x86 and the project's kernel and image (built by the guest
folder; the test skips, saying so, when they are not built).  gem5: needs $GEM5 (a
gem5.opt with scons-extra) and takes hours: two loads x two managers on paper from one
checkpoint, the folders checked with analysis's loader."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from pimcloud.analysis.campaign import load_campaign
from pimcloud.gem5_runner import NO_GEM5
from pimcloud.runs.campaign import prepare_campaign
from pimcloud.runs.cli import execute
from pimcloud.runs.spec import CAMPAIGN_DIR

pytestmark = pytest.mark.slow


def _project_builds() -> tuple[Path, Path] | None:
    from pimcloud.guest.image import IMAGE_NAME, image_dir
    from pimcloud.guest.kernel import kernel_dir

    kernel, image = kernel_dir() / "bzImage", image_dir() / IMAGE_NAME
    return (kernel, image) if kernel.is_file() and image.is_file() else None


@pytest.mark.qemu
def test_small_campaign_in_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 is missing: apt-get install qemu-system-x86")
    builds = _project_builds()
    if builds is None:
        pytest.skip("the project kernel and image are not built: pimcloud kernel build, "
                    "pimcloud image build")
    kernel, image = builds
    monkeypatch.setenv("PIMCLOUD_SPEEDS", str(tmp_path / "speeds.json"))
    text = (CAMPAIGN_DIR / "quickstart-qemu.toml").read_text()
    text = text.replace('kernel = "project"', f'kernel = "{kernel}"')
    text = text.replace('image = "project"', f'image = "{image}"')
    text = text.replace("load = [0.2, 0.5]", "load = [0.2]")
    text = text.replace('manager = ["pimcloud", "default"]', 'manager = ["default"]')
    spec = tmp_path / "qemu-small.toml"
    spec.write_text(text)
    campaign = prepare_campaign(spec, tmp_path / "out")
    assert campaign.backend_name == "qemu"
    code = execute(campaign, "local", jobs=1, live=False)
    run_id = "load-0.2_manager-default"
    if code != 0:
        failure = sorted((tmp_path / "out" / "failed" / run_id).glob("*/failure.json"))[-1]
        pytest.fail(f"QEMU run failed: {failure.read_text()[:3000]}")
    record = json.loads((tmp_path / "out" / "runs" / run_id / "run.json").read_text())
    assert record["execution"]["backend"] == "qemu"
    assert "not architectural" in record["execution"]["timing"]
    loaded = load_campaign(tmp_path / "out", with_stats=False)
    assert set(loaded.requests["app"]) == {"kvstore", "oltp"}


@pytest.mark.gem5
def test_small_campaign_in_gem5(tmp_path: Path) -> None:
    if not os.environ.get("GEM5"):
        pytest.skip(NO_GEM5)
    # Preemptible, with progress checkpoints too far apart to fall in so short a run:
    # the one each run takes is the one right after its detailed part.
    spec = tmp_path / "quickstart.toml"
    spec.write_text((CAMPAIGN_DIR / "quickstart.toml").read_text()
                    .replace("[gem5]\n", '[gem5]\nprogress_every = "1h"\n', 1))
    campaign = prepare_campaign(spec, tmp_path / "out", "gem5")
    assert execute(campaign, "local", live=False) == 0
    loaded = load_campaign(tmp_path / "out")
    assert len(loaded.runs) == 4 and not loaded.stats.empty
    checkpoints = {json.loads(p.read_text())["execution"]["checkpoint"]
                   for p in (tmp_path / "out" / "runs").glob("*/run.json")}
    assert len(checkpoints) == 1
    # gem5's simOps, read for the runs' pricing (runs/speeds.py): every run ran some.
    assert all(json.loads(p.read_text())["execution"].get("guest_ops", 0) > 0
               for p in (tmp_path / "out" / "runs").glob("*/run.json"))
    # Each run's wrap-up (outputs, checks) ran on the atomic cores: the run script waits
    # for the switch back once the services are done (runs/guest_scenario.py).
    logs = sorted((tmp_path / "out" / "runs").glob("*/gem5.log"))
    assert len(logs) == 4
    # A progress checkpoint follows at once (gem5-configs/pim_fs.py, Progress.save_soon),
    # so a run stopped in its wrap-up does not redo its detailed part.
    for log in logs:
        text = log.read_text(errors="replace")
        assert "back on the atomic cores" in text, log
        assert "progress checkpoint at tick" in text.split("back on the atomic cores")[1], log
