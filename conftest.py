"""The tests' gem5 runs reserve their memory limits in a ledger of the test session's own
(pimcloud.memory_budget): a campaign running on the same machine must not hold the test
suite waiting for its memory, nor the tests hold it (they do not count in its budget)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pimcloud.memory_budget import LEDGER_ENV


@pytest.fixture(autouse=True, scope="session")
def _own_memory_ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    ledger = tmp_path_factory.mktemp("memory-ledger")
    before = os.environ.get(LEDGER_ENV)
    os.environ[LEDGER_ENV] = str(ledger)
    yield ledger
    if before is None:
        os.environ.pop(LEDGER_ENV, None)
    else:
        os.environ[LEDGER_ENV] = before
