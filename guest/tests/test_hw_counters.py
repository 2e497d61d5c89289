"""The driver's hot-page answer as analysis reads it (the agent's C++ parser reads the
same fixture: backend/HwCountersTest.cpp)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pimcloud.guest.hw_counters import HotPagesError, read_hottest

FIXTURE = (Path(__file__).resolve().parents[1] / "pimcloud-agent" / "fixtures" / "driver"
           / "hottest-node2.txt")


def test_the_shared_fixture_answer_reads_with_types_and_mappings() -> None:
    frames = read_hottest(FIXTURE)
    assert frames["node"].tolist() == [2, 2, 2]
    assert frames["pfn"].tolist() == [0x40123, 0x40124, 0x40200]
    assert frames["count"].tolist() == [977, 500, 12]
    assert (frames["sharing"] + " " + frames["access"]).tolist() == [
        "private ro", "shared rw", "private rw"]
    assert frames["pid"].tolist() == [120, 120, -1]
    assert frames["vaddr"].iat[0] == 0x7F00AA001000


def test_no_device_and_a_bad_answer_are_named(tmp_path: Path) -> None:
    none = tmp_path / "hw-hottest-node1.txt"
    none.write_text("error: no PimCounters device (no ACPI PIMC table)\n")
    with pytest.raises(HotPagesError, match="answered 'error: no PimCounters device"):
        read_hottest(none)
    cut = tmp_path / "cut.txt"
    cut.write_text("frames 2 node 1 scan_ps 5\n0x1 3 private ro 0 - -\n")
    with pytest.raises(HotPagesError, match="announced 2 frames, holds 1"):
        read_hottest(cut)
    odd = tmp_path / "odd.txt"
    odd.write_text("frames 1 node 1 scan_ps 5\n0x1 3 cold ro 0 - -\n")
    with pytest.raises(HotPagesError, match=r"odd\.txt:2"):
        read_hottest(odd)
