"""The stats.txt parser on a hand-laid gem5-format file and on damaged ones."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pimcloud.analysis.stats_reference import parse_stats_reference
from pimcloud.analysis.synthetic import dump_text, server_stats_text, vector_lines
from pimcloud.stats_file import (
    StatsFileWarning,
    StatsFormatError,
    parse_stats,
    split_description,
)

FIXTURES = Path(__file__).parent / "fixtures"
THREE = FIXTURES / "three_dumps.txt"


def value(stats: pd.DataFrame, stat: str, subname: str = "", dump: int = 0) -> float:
    rows = stats[(stats["stat"] == stat) & (stats["subname"] == subname)
                 & (stats["dump"] == dump)]
    assert len(rows) == 1, (stat, subname, dump, len(rows))
    return float(rows["value"].iloc[0])


def plain(stats: pd.DataFrame) -> pd.DataFrame:
    """Categoricals as plain objects, to compare with the reference parser."""
    return stats.astype({c: object for c in ("stat", "subname", "unit", "description")})


def test_dumps_and_sim_seconds() -> None:
    parsed = parse_stats(THREE)
    assert parsed.problems == ()
    assert parsed.dumps["rows"].tolist() == [40, 0, 8]
    assert parsed.dumps["sim_seconds"].tolist()[0] == 0.1
    assert math.isnan(parsed.dumps["sim_seconds"].iloc[1])  # the empty dump
    assert parsed.dumps["sim_seconds"].iloc[2] == 0.05
    stats = parsed.stats
    assert set(stats.loc[stats["dump"] == 2, "sim_seconds"]) == {0.05}
    assert value(stats, "system.cpu3.numCycles", dump=2) == 120000000


def test_scalars_units_descriptions() -> None:
    stats = parse_stats(THREE).stats
    row = stats[stats["stat"] == "simFreq"].iloc[0]
    assert row["unit"] == "(Tick/Second)"
    assert row["description"] == "The number of ticks per simulated second"
    row = stats[stats["stat"] == "hostTickRate"].iloc[0]
    assert row["description"] == "The number of ticks simulated per host second (ticks/s)"
    row = stats[stats["stat"] == "finalTick"].iloc[0]
    assert row["unit"] == "Tick"
    assert row["description"].endswith("(restored from checkpoints and never reset)")
    assert row["line"] == 5


def test_nan_inf_and_minus_nan() -> None:
    stats = parse_stats(THREE).stats
    assert math.isnan(value(stats, "system.cpu3.ipc"))
    assert value(stats, "system.pim_cpus12.cpi") == math.inf
    assert math.isnan(value(stats, "system.pim_cpus12.rate"))


def test_vectors_per_requestor_histograms_distributions() -> None:
    stats = parse_stats(THREE).stats
    vector = "system.cpu3.commit.committedInstType_0"
    assert value(stats, vector, "IntAlu") == 300
    assert value(stats, vector, "total") == 400
    assert value(stats, "system.l3.demandMisses", "system.cpu3.data") == 1000
    assert value(stats, "system.l3.demandMissLatency", "system.pim_cpus12.data") == 0
    assert value(stats, "system.work_item_type0", "1000-1999") == 2
    assert value(stats, "system.work_item_type0", "samples") == 4
    dist = "system.mem_ctrl.readLatencyDist"
    assert value(stats, dist, "overflows") == 1
    assert value(stats, dist, "min_value") == 15000
    assert value(stats, dist, "underflows") == 0


def test_matches_reference_parser_across_chunk_sizes(tmp_path: Path) -> None:
    path = tmp_path / "stats.txt"
    path.write_text(server_stats_text(6, seed=3, host_cpus=2, pim_cpus=3))
    reference = parse_stats_reference(path)
    for chunk in (97, 4096, 1 << 20):
        parsed = parse_stats(path, chunk_bytes=chunk)
        pd.testing.assert_frame_equal(plain(parsed.stats), reference.stats, check_dtype=False)
        pd.testing.assert_frame_equal(parsed.dumps, reference.dumps, check_dtype=False)
    assert reference.dumps["rows"].min() > 100


def test_fixture_matches_reference() -> None:
    fast, slow = parse_stats(THREE), parse_stats_reference(THREE)
    pd.testing.assert_frame_equal(plain(fast.stats), slow.stats, check_dtype=False)


@pytest.mark.slow
def test_huge_vector(tmp_path: Path) -> None:
    values = np.arange(200_000) % 7
    text = dump_text(["simSeconds 0.5 # seconds (Second)",
                      *vector_lines("system.big", values, None, "big", "Count")])
    path = tmp_path / "stats.txt"
    path.write_text(text)
    stats = parse_stats(path, chunk_bytes=1 << 16).stats
    big = stats[stats["stat"] == "system.big"]
    assert len(big) == 200_001
    assert value(stats, "system.big", "199999") == 199999 % 7
    assert value(stats, "system.big", "total") == values.sum()


def _damaged(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stats.txt"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return path


def test_truncated_mid_line_keeps_what_came_before(tmp_path: Path) -> None:
    whole = THREE.read_text()
    cut = whole.index("system.l3.demandMisses::system.cpu3.data") + 20
    path = _damaged(tmp_path, whole[:cut])
    with pytest.warns(StatsFileWarning, match=r"line 17: cannot parse") as caught:
        parsed = parse_stats(path)
    assert parsed.stats["line"].max() == 16
    assert len(parsed.stats) == 14
    assert len(caught) == 1  # the damage, not also a cut-off dump
    with pytest.warns(StatsFileWarning, match=r"line 17: cannot parse"):
        reference = parse_stats_reference(path)
    pd.testing.assert_frame_equal(plain(parsed.stats), reference.stats, check_dtype=False)


def test_truncated_between_lines_warns_dump_cut_off(tmp_path: Path) -> None:
    lines = THREE.read_text().splitlines(keepends=True)
    path = _damaged(tmp_path, "".join(lines[:20]))
    with pytest.warns(StatsFileWarning, match="ends inside dump 0"):
        parsed = parse_stats(path)
    assert len(parsed.stats) == 18
    assert math.isnan(parsed.dumps["end_line"].iloc[0])


def test_corrupt_line_stops_the_parse_there(tmp_path: Path) -> None:
    lines = THREE.read_text().splitlines(keepends=True)
    lines[9] = "system.cpu3.numCycles  twelve # garbled\n"
    path = _damaged(tmp_path, "".join(lines))
    with pytest.warns(StatsFileWarning, match=r"line 10: cannot parse .*twelve"):
        parsed = parse_stats(path, chunk_bytes=256)
    assert parsed.stats["line"].max() == 9
    assert len(parsed.dumps) == 1


def test_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    lines = THREE.read_text().splitlines(keepends=True)
    lines[4] = "simTicks \udcff\udcfe 12\n"
    path = _damaged(tmp_path, "".join(lines))
    with pytest.warns(StatsFileWarning, match=r"line 5: cannot parse"):
        parsed = parse_stats(path)
    assert parsed.stats["stat"].astype(str).tolist() == ["simSeconds", "simTicks"]


def test_statistic_outside_a_dump_is_damage(tmp_path: Path) -> None:
    text = THREE.read_text() + "simSeconds 1.0 # stray (Second)\n"
    path = _damaged(tmp_path, text)
    with pytest.warns(StatsFileWarning, match=r"line 61: cannot parse"):
        parsed = parse_stats(path)
    assert len(parsed.dumps) == 3


def test_not_a_stats_file(tmp_path: Path) -> None:
    path = tmp_path / "config.ini"
    path.write_text("")
    with pytest.raises(StatsFormatError, match=r"not a gem5 stats\.txt"):
        parse_stats(path)


def test_split_description() -> None:
    assert split_description("Number of ticks simulated (Tick)") == (
        "Number of ticks simulated", "Tick")
    assert split_description("x ((Byte/Second)/Count)") == ("x", "(Byte/Second)/Count")
    assert split_description("no unit") == ("no unit", "")


def test_oneline_statistics_expand_to_indexed_elements(tmp_path: Path) -> None:
    text = dump_text([
        "simSeconds 0.5 # seconds (Second)",
        "system.ruby.delayHist::bucket_size                 10                       # delay",
        "system.ruby.delayHist                    |          30     75.00%     75.00% |"
        "          10     25.00%    100.00% |           0      0.00%    100.00% # delay (Tick)",
        "system.ruby.delayHist::total                       40                       # delay",
    ])
    path = tmp_path / "stats.txt"
    path.write_text(text + text)
    parsed = parse_stats(path, chunk_bytes=200)
    rows = parsed.stats[(parsed.stats["stat"] == "system.ruby.delayHist")
                        & (parsed.stats["dump"] == 1)]
    assert rows["subname"].astype(str).tolist() == ["bucket_size", "0", "1", "2", "total"]
    assert rows["value"].tolist() == [10, 30, 10, 0, 40]
    assert rows["unit"].astype(str).tolist()[1:4] == ["Tick"] * 3
    assert parsed.stats["line"].is_monotonic_increasing
    pd.testing.assert_frame_equal(plain(parsed.stats), parse_stats_reference(path).stats,
                                  check_dtype=False)
    broken = text.replace("| ", "| x", 1)
    path.write_text(broken)
    with pytest.warns(StatsFileWarning, match="line 5: cannot parse"):
        assert len(parse_stats(path).stats) == 2


def test_crlf_lines_and_chunks_smaller_than_a_line(tmp_path: Path) -> None:
    path = tmp_path / "stats.txt"
    path.write_bytes(THREE.read_bytes().replace(b"\n", b"\r\n"))
    reference = parse_stats_reference(THREE)
    for chunk in (1, 33, 1000):
        parsed = parse_stats(path, chunk_bytes=chunk)
        pd.testing.assert_frame_equal(plain(parsed.stats), reference.stats, check_dtype=False)
