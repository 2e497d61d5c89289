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


def test_the_check_tells_a_fast_build_from_an_opt_one() -> None:
    """gem5 names its builds gem5.opt (assertions and tracing on) and gem5.fast (both
    compiled out); the check's answer must agree with the binary's own name."""
    from pimcloud.gem5_runner import inspect_gem5

    name = Path(os.environ["GEM5"]).name
    if name not in ("gem5.opt", "gem5.fast", "gem5.debug"):
        pytest.skip(f"GEM5 is named {name}: not one of gem5's build names")
    info = inspect_gem5()
    assert info.build == ("fast" if name == "gem5.fast" else "opt"), info
