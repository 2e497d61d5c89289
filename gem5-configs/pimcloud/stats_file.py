"""gem5 ``stats.txt`` into one tidy frame: one row per dump x statistic (x subfield).

A stats.txt is a sequence of dumps, each framed by ``---------- Begin Simulation
Statistics ----------`` and ``---------- End Simulation Statistics   ----------``.
Every line inside is ``name value [pdf% cdf%] # description (Unit)``, where the
name of a vector element, a distribution field or a histogram bucket carries a
``::subname`` (``::0``, ``::total``, ``::system.cpu0.data``, ``::samples``,
``::10-19``, ``::overflows``).  The pdf/cdf columns are dropped: they follow
from the values and the ``::total`` row.

The parser is columnar: a chunk of the file becomes one Arrow string array of
lines without copying, RE2 (through ``pyarrow.compute``) checks and splits every
line at once, and names, descriptions and units are interned, so the work per
line is a few vectorised passes.  Damage stops the parse at the damaged line
with a :class:`StatsFileWarning` naming it; everything before it is kept.
"""

from __future__ import annotations

import gzip
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

BEGIN_MARKER = "---------- Begin Simulation Statistics ----------"
END_MARKER = "---------- End Simulation Statistics   ----------"
SIM_SECONDS_NAMES = ("simSeconds", "sim_seconds")  # gem5 >= 21.1, and older releases

# A number as gem5 prints it (fixed notation, nan, inf) or as a person might (exponent).
_NUMBER = r"[-+]?(?:nan|inf|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_PERCENT = r"[-+]?(?:nan|inf|[0-9]*\.?[0-9]+)%"
# A whole statistics line; RE2 answers "does it match" with its DFA, which is fast.
STAT_LINE = (
    rf"^[^\s#]+[ \t]+{_NUMBER}(?:[ \t]+{_PERCENT}){{0,2}}[ \t]*(?:#[^\n]*)?\r?\n?$"
)
# Extracting only name and value keeps RE2 on its one-pass engine.
_NAME_VALUE = r"^(?P<name>\S+)\s+(?P<value>\S+)"
# Trailing "(Unit)"; gem5 writes rates as "((Tick/Second))", so allow nesting.
_UNIT_RE = re.compile(r"^(?P<desc>.*?)\s*\((?P<unit>(?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)$")
_REST_RE = re.compile(r"#\s?(?P<rest>.*?)\s*$")
# Statistics with gem5's ``oneline`` flag (Ruby's histograms, for one) print every
# element on one line, unnamed: ``name | v pdf cdf | v pdf cdf ... # desc``.  Element
# i becomes subname ``i`` (for a histogram: bucket i from ``::min_bucket`` in steps of
# ``::bucket_size``, which gem5 prints just before).
_ONELINE_RE = re.compile(r"^(?P<name>[^\s#|]+)[ \t]+(?P<cells>\|[^#]*?)[ \t]*(?:#.*)?\r?\n?$")
_CELL_RE = re.compile(rf"^\s*(?P<value>{_NUMBER})(?:\s+{_PERCENT}){{0,2}}\s*$")

DEFAULT_CHUNK_BYTES = 64 << 20

STATS_COLUMNS = ("dump", "sim_seconds", "stat", "subname", "value", "unit", "description", "line")


class StatsFileWarning(UserWarning):
    """A stats.txt was damaged or truncated; the warning names the file and line."""


class StatsFormatError(ValueError):
    """A file is not a gem5 stats.txt at all."""


@dataclass(frozen=True)
class ParsedStats:
    """What a stats.txt holds.

    ``stats``: one row per dump x statistic x subfield (columns :data:`STATS_COLUMNS`).
    ``dumps``: one row per dump, including empty ones (``dump``, ``sim_seconds``,
    ``begin_line``, ``end_line`` (NaN when the dump was cut off), ``rows``).
    ``problems``: the warnings that were raised, as text.
    """

    stats: pd.DataFrame
    dumps: pd.DataFrame
    problems: tuple[str, ...]


def split_description(rest: str) -> tuple[str, str]:
    """``'Number of ticks (Tick)'`` -> ``('Number of ticks', 'Tick')``.

    gem5 since 21.1 always ends a description with its unit; in older files a
    description's own closing parenthesis (``rate (inst/s)``) reads as a unit.
    """
    match = _UNIT_RE.match(rest)
    if match is None:
        return rest.strip(), ""
    return match["desc"], match["unit"]


def describe_line(line: str) -> tuple[str, str]:
    """Description and unit of one statistics line (the text after ``#``)."""
    match = _REST_RE.search(line)
    if match is None:
        return "", ""
    return split_description(match["rest"])


def oneline_values(line: str) -> tuple[str, list[float]] | None:
    """Name and element values of a ``oneline`` statistics line, or None if it is not one."""
    match = _ONELINE_RE.match(line)
    if match is None:
        return None
    values = []
    for cell in match["cells"].split("|")[1:]:
        parsed = _CELL_RE.match(cell)
        if parsed is None:
            return None
        values.append(float(parsed["value"]))
    return match["name"], values


def open_stats(path: Path) -> BinaryIO:
    """``path`` for binary reading; a ``.gz`` name is read through gzip (archived runs)."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def read_stats(path: str | os.PathLike[str], **kwargs: int) -> pd.DataFrame:
    """The tidy statistics frame of ``path`` (see :func:`parse_stats`)."""
    return parse_stats(path, **kwargs).stats


def parse_stats(
    path: str | os.PathLike[str], *, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> ParsedStats:
    """Parse a gem5 stats.txt (any number of dumps) into tidy frames.

    Damaged or truncated files parse up to the damage; a :class:`StatsFileWarning`
    names the line.  A file with no dump at all raises :class:`StatsFormatError`.
    """
    path = Path(path)
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
    state = _State(path)
    for data, first_line in _chunks(path, chunk_bytes):
        if not state.feed(data, first_line):
            break
    return state.finish()


def _chunks(path: Path, chunk_bytes: int) -> Iterator[tuple[memoryview, int]]:
    """The file in pieces that end at a line break, with the number of their first line.

    One buffer is read into again and again (fresh 64 MB blocks cost page faults);
    a piece is only valid until the next one is asked for, which suits ``feed``:
    nothing it keeps points into the buffer.
    """
    line = 1
    buffer = bytearray(chunk_bytes)
    filled = 0  # bytes in buffer: the carried tail of the last piece, then new data
    with open_stats(path) as stream:
        while True:
            if filled == len(buffer):  # one line longer than the buffer: grow it
                buffer.extend(bytes(len(buffer)))
            with memoryview(buffer) as free:
                got = stream.readinto(free[filled:])
            if not got:
                break
            filled += got
            cut = buffer.rfind(b"\n", 0, filled) + 1
            if cut == 0:
                continue
            with memoryview(buffer) as view, view[:cut] as piece:
                yield piece, line
            line += buffer.count(b"\n", 0, cut)
            buffer[: filled - cut] = buffer[cut:filled]
            filled -= cut
    if filled:
        yield memoryview(bytes(buffer[:filled])), line


class _State:
    """Running state of one parse: interned names, dump framing, collected columns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name_ids: dict[str, int] = {}
        self.names: list[str] = []
        self.name_rest: list[tuple[str, str]] = []  # description, unit per name
        self.codes: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        self.dump_of_row: list[np.ndarray] = []
        self.lines: list[np.ndarray] = []
        self.dump_begin: list[int] = []
        self.dump_end: list[float] = []
        self.open = False  # inside a Begin/End frame
        self.damaged = False  # parsing stopped at a damaged line
        self.out_of_order = False  # oneline rows were appended after their chunk
        self.problems: list[str] = []

    def warn(self, message: str, depth: int = 0) -> None:
        """Record and raise a warning; ``depth`` is how far below feed/finish we are,
        so that the warning points at the caller of parse_stats."""
        self.problems.append(message)
        warnings.warn(message, StatsFileWarning, stacklevel=4 + depth)

    def damage(self, line: int, text: str) -> None:
        shown = text.rstrip("\r\n")
        if len(shown) > 80:
            shown = shown[:77] + "..."
        self.damaged = True
        self.warn(
            depth=1,
            message=f"{self.path}: line {line}: cannot parse {shown!r}; kept the statistics of the "
            f"{line - 1} lines before it. Re-run or re-dump the simulation for a whole file.",
        )

    def feed(self, data: bytes | memoryview, first_line: int) -> bool:
        """Parse one chunk; False once the file is damaged and parsing must stop."""
        lines = _line_array(data)
        if lines is None:  # bytes that are not UTF-8: find the first bad line slowly
            return self._feed_undecodable(data, first_line)
        n = len(lines)
        good = pc.match_substring_regex(lines, STAT_LINE).to_numpy(zero_copy_only=False)
        odd_rows = np.flatnonzero(~good)
        stop = n  # rows at or after stop are dropped
        frames: list[tuple[int, int]] = []  # (row, +1 Begin / -1 End) in row order
        oneline: list[tuple[int, str, list[float], str]] = []  # rare: found one by one
        for row, text in zip(odd_rows.tolist(), lines.take(pa.array(odd_rows)).to_pylist(),
                             strict=True):
            stripped = text.strip()
            if not stripped:
                continue
            if stripped == BEGIN_MARKER:
                frames.append((row, 1))
            elif stripped.startswith("---------- End Simulation Statistics"):
                frames.append((row, -1))
            elif (found := oneline_values(text)) is not None:
                oneline.append((row, found[0], found[1], text))
            else:
                self.damage(first_line + row, text)
                stop = row
                break
        has_stat = good
        if oneline:
            has_stat = good.copy()
            has_stat[[row for row, *_ in oneline]] = True
        # Walk the frame markers in order; the good rows between them belong to the
        # open dump, or are damage when no dump is open.
        row_dump = np.full(n, -1, dtype=np.int64)
        cursor = 0
        for row, kind in [*frames, (stop, 0)]:
            if self.open:
                row_dump[cursor:row] = len(self.dump_begin) - 1
            else:
                stray = np.flatnonzero(has_stat[cursor:row])
                if len(stray):
                    bad = cursor + int(stray[0])
                    self.damage(first_line + bad, lines[bad].as_py())
                    stop = bad
                    break
            if kind == 1:
                if self.open:
                    self.warn(
                        f"{self.path}: line {first_line + row}: a dump begins before the "
                        f"previous one (line {self.dump_begin[-1]}) ended; that one is cut off."
                    )
                self.dump_begin.append(first_line + row)
                self.dump_end.append(float("nan"))
                self.open = True
            elif kind == -1:
                if not self.open:
                    self.damage(first_line + row, lines[row].as_py())
                    stop = row
                    break
                self.dump_end[-1] = first_line + row
                self.open = False
            cursor = row + 1
        take = good.copy()
        take[stop:] = False
        rows = np.flatnonzero(take)
        if len(rows):
            self._collect(lines, rows, row_dump[rows], first_line)
        for row, name, values, text in oneline:
            if row < stop:
                self._collect_oneline(name, values, text, int(row_dump[row]), first_line + row)
        return stop == n

    def _intern(self, name: str, text: str) -> int:
        known = self.name_ids.get(name)
        if known is None:
            known = len(self.names)
            self.name_ids[name] = known
            self.names.append(name)
            self.name_rest.append(describe_line(text))
        return known

    def _collect_oneline(self, name: str, values: list[float], text: str, dump: int,
                         line: int) -> None:
        self.codes.append(np.array([self._intern(f"{name}::{i}", text)
                                    for i in range(len(values))], dtype=np.int32))
        self.values.append(np.asarray(values, dtype=np.float64))
        self.dump_of_row.append(np.full(len(values), dump, dtype=np.int32))
        self.lines.append(np.full(len(values), line, dtype=np.int64))
        self.out_of_order = True

    def _collect(
        self, lines: pa.Array, rows: np.ndarray, dumps: np.ndarray, first_line: int
    ) -> None:
        # Split every line, then keep the good rows' short name and value strings:
        # cheaper than gathering the long lines first.
        parts = pc.extract_regex(lines, _NAME_VALUE)
        mask = np.zeros(len(lines), dtype=bool)
        mask[rows] = True
        keep = pa.array(mask)
        names = pc.dictionary_encode(pc.filter(parts.field("name"), keep))
        values = pc.cast(pc.filter(parts.field("value"), keep), pa.float64()).to_numpy(
            zero_copy_only=False
        )
        indices = names.indices.to_numpy(zero_copy_only=False)
        local_names = names.dictionary.to_pylist()
        # Map this chunk's dictionary onto the parse-wide one; new names need their
        # description and unit, read once from their first line.
        mapping = np.empty(len(local_names), dtype=np.int32)
        new_local: list[int] = []
        for i, name in enumerate(local_names):
            known = self.name_ids.get(name)
            if known is None:
                known = len(self.names)
                self.name_ids[name] = known
                self.names.append(name)
                self.name_rest.append(("", ""))
                new_local.append(i)
            mapping[i] = known
        if new_local:
            first_rows = np.full(len(local_names), -1, dtype=np.int64)
            order = np.arange(len(indices) - 1, -1, -1)
            first_rows[indices[order]] = order  # the smallest row wins
            texts = lines.take(pa.array(rows[first_rows[new_local]])).to_pylist()
            for i, text in zip(new_local, texts, strict=True):
                self.name_rest[mapping[i]] = describe_line(text)
        self.codes.append(mapping[indices])
        self.values.append(values)
        self.dump_of_row.append(dumps.astype(np.int32))
        self.lines.append(rows.astype(np.int64) + first_line)

    def _feed_undecodable(self, data: bytes | memoryview, first_line: int) -> bool:
        raw_lines = bytes(data).split(b"\n")
        for offset, raw in enumerate(raw_lines):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                before = b"".join(line + b"\n" for line in raw_lines[:offset])
                if before and not self.feed(before, first_line):
                    return False
                self.damage(first_line + offset, raw.decode("utf-8", "replace"))
                return False
        raise AssertionError("a chunk Arrow rejects as UTF-8 decodes line by line")

    def finish(self) -> ParsedStats:
        if self.open and not self.damaged:
            self.warn(
                f"{self.path}: the file ends inside dump {len(self.dump_begin) - 1} "
                f"(begun at line {self.dump_begin[-1]}): truncated; its statistics so far "
                "are kept."
            )
        if not self.dump_begin and not self.problems:
            raise StatsFormatError(
                f"{self.path}: no '{BEGIN_MARKER}' line: not a gem5 stats.txt. "
                "Pass the stats.txt from the run's output folder (gem5 --outdir)."
            )
        return _assemble(self)


def _line_array(data: bytes | memoryview) -> pa.Array | None:
    """The lines of ``data`` (each with its newline) as an Arrow string array, no copy."""
    if not data:
        return pa.array([], pa.string())
    raw = np.frombuffer(data, dtype=np.uint8)
    breaks = np.flatnonzero(raw == 10)
    ends = breaks + 1
    if len(ends) == 0 or ends[-1] != len(data):
        ends = np.append(ends, len(data))
    offset_type = np.int32 if len(data) < 2**31 else np.int64
    offsets = np.empty(len(ends) + 1, dtype=offset_type)
    offsets[0] = 0
    offsets[1:] = ends
    array_type = pa.string() if offset_type is np.int32 else pa.large_string()
    lines = pa.Array.from_buffers(
        array_type, len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    try:
        lines.validate(full=True)
    except pa.ArrowInvalid:
        return None
    return lines


def _assemble(state: _State) -> ParsedStats:
    n_dumps = len(state.dump_begin)
    if state.codes:
        codes = np.concatenate(state.codes)
        values = np.concatenate(state.values)
        dumps = np.concatenate(state.dump_of_row)
        lines = np.concatenate(state.lines)
        if state.out_of_order:
            order = np.argsort(lines, kind="stable")
            codes, values, dumps, lines = codes[order], values[order], dumps[order], lines[order]
    else:
        codes = np.empty(0, np.int32)
        values = np.empty(0, np.float64)
        dumps = np.empty(0, np.int32)
        lines = np.empty(0, np.int64)

    # Split every distinct name once: "a.b::c" -> stat "a.b", subname "c".
    stat_of_name = np.empty(len(state.names), dtype=np.int32)
    sub_of_name = np.empty(len(state.names), dtype=np.int32)
    stat_ids: dict[str, int] = {}
    sub_ids: dict[str, int] = {"": 0}
    for i, name in enumerate(state.names):
        stat, _, sub = name.partition("::")
        stat_of_name[i] = stat_ids.setdefault(stat, len(stat_ids))
        sub_of_name[i] = sub_ids.setdefault(sub, len(sub_ids))
    desc_ids: dict[str, int] = {}
    unit_ids: dict[str, int] = {}
    desc_of_name = np.empty(len(state.names), dtype=np.int32)
    unit_of_name = np.empty(len(state.names), dtype=np.int32)
    for i, (desc, unit) in enumerate(state.name_rest):
        desc_of_name[i] = desc_ids.setdefault(desc, len(desc_ids))
        unit_of_name[i] = unit_ids.setdefault(unit, len(unit_ids))

    sim_seconds = np.full(n_dumps, np.nan)
    for name in SIM_SECONDS_NAMES:
        code = state.name_ids.get(name)
        if code is not None:
            hit = codes == code
            sim_seconds[dumps[hit]] = values[hit]
            break

    def categorical(ids: dict[str, int], of_name: np.ndarray) -> pd.Categorical:
        return pd.Categorical.from_codes(of_name[codes], categories=list(ids))

    stats = pd.DataFrame(
        {
            "dump": dumps,
            "sim_seconds": sim_seconds[dumps] if n_dumps else np.empty(0),
            "stat": categorical(stat_ids, stat_of_name),
            "subname": categorical(sub_ids, sub_of_name),
            "value": values,
            "unit": categorical(unit_ids, unit_of_name),
            "description": categorical(desc_ids, desc_of_name),
            "line": lines,
        }
    )
    rows = np.bincount(dumps, minlength=n_dumps) if n_dumps else np.empty(0, np.int64)
    dump_table = pd.DataFrame(
        {
            "dump": np.arange(n_dumps, dtype=np.int32),
            "sim_seconds": sim_seconds,
            "begin_line": np.asarray(state.dump_begin, dtype=np.int64),
            "end_line": np.asarray(state.dump_end, dtype=np.float64),
            "rows": rows.astype(np.int64),
        }
    )
    return ParsedStats(stats=stats, dumps=dump_table, problems=tuple(state.problems))
