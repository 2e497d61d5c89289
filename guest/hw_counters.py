"""The guest driver's hot-page answer (guest/driver/README.md: ``hottest N NODE``) as a
frame, and the file a run keeps it in.

A gem5 run with the board's counters saves, once its measured requests are done, each
counted memory's hottest frames (``hw-hottest-node<k>.txt`` in its results). Analysis
reads them for the paper's Fig. 4, the page-access breakdown by page type. The agent
parses the same answer in C++ (guest/pimcloud-agent/backend/HwCounters.cpp); both are
tested on guest/pimcloud-agent/fixtures/driver/hottest-node2.txt.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

HOTTEST_FILE = "hw-hottest-node{node}.txt"
HOTTEST_GLOB = "hw-hottest-node*.txt"
COLUMNS = ["node", "pfn", "count", "sharing", "access", "first_cpu", "pid", "vaddr"]
# The paper's four page types (Fig. 4): private/shared x read-only/read-write.
PAGE_TYPES = ("private ro", "private rw", "shared ro", "shared rw")
_HEADER = re.compile(r"^frames (\d+) node (\d+) scan_ps (\d+)$")


class HotPagesError(ValueError):
    """A hot-page answer that does not parse; the message names the file and line."""


def _number(text: str, base: int = 10) -> int:
    return -1 if text == "-" else int(text, base)


def read_hottest(path: Path) -> pd.DataFrame:
    """One row per frame, hottest first (``first_cpu``, ``pid``, ``vaddr``: -1 where the
    driver answered '-'). A run keeps the answer only where its board counts, so an
    ``error:`` answer (no device, a refused query) is an error too, with the driver's words."""
    lines = path.read_text().splitlines()
    if not lines or lines[0].startswith("error:"):
        said = lines[0] if lines else "an empty answer"
        raise HotPagesError(f"{path}: the driver answered '{said}'; was the run's board made "
                            "with [gem5] counters = true, and does its kernel have the driver?")
    header = _HEADER.match(lines[0])
    if header is None:
        raise HotPagesError(f"{path}:1: '{lines[0]}' is not 'frames N node K scan_ps T'")
    announced, node = int(header.group(1)), int(header.group(2))
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split()
        if (len(fields) != 7 or fields[2] not in ("private", "shared")
                or fields[3] not in ("ro", "rw")):
            raise HotPagesError(f"{path}:{number}: '{line}' is not 'pfn count private|shared "
                                "ro|rw cpu pid vaddr'")
        try:
            rows.append((node, int(fields[0], 16), int(fields[1]), fields[2], fields[3],
                         _number(fields[4]), _number(fields[5]), _number(fields[6], 16)))
        except ValueError:
            raise HotPagesError(f"{path}:{number}: a number of '{line}' does not parse") \
                from None
    if len(rows) != announced:
        raise HotPagesError(f"{path}: announced {announced} frames, holds {len(rows)}; the "
                            "answer was cut short")
    return pd.DataFrame.from_records(rows, columns=COLUMNS)
