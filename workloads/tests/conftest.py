"""Shared fixtures: the service binaries and one data folder built once per session."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pimcloud.workloads import datasets
from pimcloud.workloads.run import DEFAULT_DATA


def binary_or_skip(name: str) -> Path:
    try:
        return datasets.find_tool(name)
    except datasets.DataError as error:
        pytest.skip(f"{name} is not built ({error})")


@pytest.fixture(scope="session")
def need() -> Callable[[str], Path]:
    """need(name): the built binary, or the test is skipped saying how to build it."""
    return binary_or_skip


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """build/workload-data (or $PIMCLOUD_WORKLOAD_DATA), each data set built if missing."""
    binary_or_skip("pimcloud-search-index")
    manifest = DEFAULT_DATA / "manifest.json"
    have = json.loads(manifest.read_text()) if manifest.exists() else {}
    missing = [n for n in datasets.BUILDERS if n not in have or not (DEFAULT_DATA / n).is_dir()]
    if missing:
        datasets.build(DEFAULT_DATA, missing)
    return DEFAULT_DATA
