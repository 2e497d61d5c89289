"""The workloads' image hook: what it declares as inputs, and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pimcloud.guest.image import ImageBuildError, hook_inputs
from pimcloud.paths import REPO_ROOT as REPO
from pimcloud.workloads import image_data
from pimcloud.workloads.datasets import DataError

HOOK = REPO / "workloads" / "image-hooks" / "50-workload-data"


def test_the_hook_declares_the_data_set_code_as_image_inputs() -> None:
    inputs = {p.relative_to(REPO).as_posix() for p in hook_inputs(HOOK)}
    assert {"workloads/datasets.py", "workloads/image_data.py"} <= inputs
    assert HOOK.stat().st_mode & 0o111, "the image build runs only executable hooks"


def test_a_declared_input_outside_the_repository_is_refused(tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.write_text("#!/bin/sh\n# image-inputs: workloads/datasets.py ../../etc/passwd\n")
    with pytest.raises(ImageBuildError, match="etc/passwd"):
        hook_inputs(hook)


def test_missing_source_packages_are_named() -> None:
    with pytest.raises(DataError, match="no-such-package-pimcloud"):
        image_data.package_versions(("no-such-package-pimcloud",))


def test_install_wants_a_staged_root(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="staged root"):
        image_data.install(tmp_path)
    assert image_data.main([]) == 2
