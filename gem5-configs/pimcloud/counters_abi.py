"""The PimCounters register interface, read from its one home: the C header
``scons-extra/pimcloud/pim_counters_abi.h`` that the gem5 device and the guest driver
include. Python (the board, the tests) takes its numbers from there rather than
repeating them. Standard library only: gem5's interpreter imports it."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from .paths import REPO_ROOT

ABI_HEADER = REPO_ROOT / "scons-extra" / "pimcloud" / "pim_counters_abi.h"
_DEFINE = re.compile(r"^#define[ \t]+(PIMC\w+|PIMCLOUD_COUNTERS_\w+)[ \t]+(\S+)", re.MULTILINE)


@cache
def abi(path: Path = ABI_HEADER) -> dict[str, int | str]:
    """Every ``#define`` of the header: integers (``0x10U``, ``0x31ULL``) and strings."""
    try:
        text = path.read_text(encoding="ascii")
    except OSError as error:
        raise RuntimeError(f"{path}: the PimCounters register interface is missing "
                           f"({error.strerror}); run from a full checkout") from None
    values: dict[str, int | str] = {}
    for name, raw in _DEFINE.findall(text):
        if raw.startswith('"'):
            values[name] = raw.strip('"')
        else:
            values[name] = int(raw.rstrip("ULul"), 0)
    return values


def value(name: str) -> int:
    number = abi()[name]
    if not isinstance(number, int):
        raise TypeError(f"{name} is not a number in {ABI_HEADER}")
    return number


def block_size(max_query: int) -> int:
    """Length of the register block for ``max_query`` result entries (as blockSize())."""
    return value("PIMC_RESULT_BASE") + max_query * value("PIMC_RESULT_STRIDE")
