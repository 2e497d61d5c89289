"""A straightforward line-by-line stats.txt parser: the yardstick for :mod:`.stats`.

It reads one line at a time with one regular expression, the way most gem5
scripts do.  It follows the same rules as the columnar parser (same frame, same
warnings), so tests check one against the other and the benchmark measures what
the columnar design buys.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from pimcloud.stats_file import (
    BEGIN_MARKER,
    SIM_SECONDS_NAMES,
    STAT_LINE,
    ParsedStats,
    StatsFileWarning,
    StatsFormatError,
    describe_line,
    oneline_values,
    open_stats,
)

_LINE = re.compile(STAT_LINE.replace("\\n?$", "\\n?\\Z"))
_NAME_VALUE = re.compile(r"(\S+)\s+(\S+)")


def parse_stats_reference(path: str | os.PathLike[str]) -> ParsedStats:
    path = Path(path)
    records: list[tuple[int, str, float, int]] = []
    begins: list[int] = []
    ends: list[float] = []
    problems: list[str] = []
    is_open = False
    damaged: list[int] = []  # the line where parsing stopped, if it did

    def warn(message: str) -> None:
        problems.append(message)
        warnings.warn(message, StatsFileWarning, stacklevel=3)

    def damage(number: int, text: str) -> None:
        damaged.append(number)
        shown = text.rstrip("\r\n")
        if len(shown) > 80:
            shown = shown[:77] + "..."
        warn(
            f"{path}: line {number}: cannot parse {shown!r}; kept the statistics of the "
            f"{number - 1} lines before it. Re-run or re-dump the simulation for a whole file."
        )

    with open_stats(path) as stream:
        for number, raw in enumerate(stream, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                damage(number, raw.decode("utf-8", "replace"))
                break
            if _LINE.match(text):
                if not is_open:
                    damage(number, text)
                    break
                match = _NAME_VALUE.match(text)
                assert match is not None
                records.append((len(begins) - 1, match[1], float(match[2]), number))
                continue
            stripped = text.strip()
            if not stripped:
                continue
            if stripped == BEGIN_MARKER:
                if is_open:
                    warn(
                        f"{path}: line {number}: a dump begins before the previous one "
                        f"(line {begins[-1]}) ended; that one is cut off."
                    )
                begins.append(number)
                ends.append(math.nan)
                is_open = True
            elif stripped.startswith("---------- End Simulation Statistics"):
                if not is_open:
                    damage(number, text)
                    break
                ends[-1] = number
                is_open = False
            elif (found := oneline_values(text)) is not None:
                if not is_open:
                    damage(number, text)
                    break
                name, values = found
                records.extend((len(begins) - 1, f"{name}::{i}", v, number)
                               for i, v in enumerate(values))
            else:
                damage(number, text)
                break
    if is_open and not damaged:
        warn(
            f"{path}: the file ends inside dump {len(begins) - 1} (begun at line "
            f"{begins[-1]}): truncated; its statistics so far are kept."
        )
    if not begins and not problems:
        raise StatsFormatError(f"{path}: no '{BEGIN_MARKER}' line: not a gem5 stats.txt.")

    # Descriptions come from each name's first line, as in the columnar parser.
    first_line_of: dict[str, int] = {}
    for _, name, _, number in records:
        first_line_of.setdefault(name, number)
    wanted = set(first_line_of.values())
    rest_of_line: dict[int, tuple[str, str]] = {}
    with open_stats(path) as stream:
        for number, raw in enumerate(stream, start=1):
            if number in wanted:
                rest_of_line[number] = describe_line(raw.decode("utf-8"))
    sim_seconds = [math.nan] * len(begins)
    present = {name for _, name, _, _ in records}
    seconds_name = next((name for name in SIM_SECONDS_NAMES if name in present), None)
    for dump, name, value, _ in records:
        if name == seconds_name:
            sim_seconds[dump] = value
    rows = []
    for dump, name, value, number in records:
        stat, _, sub = name.partition("::")
        desc, unit = rest_of_line[first_line_of[name]]
        rows.append((dump, sim_seconds[dump], stat, sub, value, unit, desc, number))
    stats = pd.DataFrame(
        rows,
        columns=["dump", "sim_seconds", "stat", "subname", "value", "unit", "description",
                 "line"],
    )
    counts = np.bincount(stats["dump"].to_numpy(dtype=np.int64), minlength=len(begins))
    dumps = pd.DataFrame(
        {
            "dump": np.arange(len(begins), dtype=np.int32),
            "sim_seconds": np.asarray(sim_seconds, dtype=np.float64),
            "begin_line": np.asarray(begins, dtype=np.int64),
            "end_line": np.asarray(ends, dtype=np.float64),
            "rows": counts.astype(np.int64),
        }
    )
    return ParsedStats(stats=stats, dumps=dumps, problems=tuple(problems))
