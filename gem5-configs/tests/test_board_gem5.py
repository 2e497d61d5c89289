"""Every preset makes a valid gem5 system: pim_fs.py builds the restore board (caches,
router, HPET, NUMA tables, boot and detailed cores) and gem5 instantiates it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pimcloud.gem5_runner import NO_GEM5
from pimcloud.gem5_session import RUN_SCRIPT
from pimcloud.topology.parse import preset_names

pytestmark = [
    pytest.mark.gem5,
    pytest.mark.skipif(not os.environ.get("GEM5"), reason=NO_GEM5),
]


@pytest.fixture(scope="module")
def kernel_and_image() -> tuple[Path, Path]:
    from pimcloud.guest.image import build_image
    from pimcloud.guest.kernel import build_kernel

    return build_kernel().vmlinux, build_image().path


@pytest.mark.parametrize("preset", sorted(preset_names()))
def test_preset_instantiates_in_gem5(
        preset: str, tmp_path: Path, kernel_and_image: tuple[Path, Path]) -> None:
    kernel, image = kernel_and_image
    done = subprocess.run(
        [os.environ["GEM5"], "-d", str(tmp_path), str(RUN_SCRIPT), "--topology", preset,
         "--kernel", str(kernel), "--disk", str(image), "--mem-divisor", "8", "check"],
        capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "pimcloud: check ok:" in done.stdout
