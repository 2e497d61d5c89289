"""Writes the binary fixtures (pagemap, idle page bitmap) the backend tests read.

The text fixtures beside them (maps, numa_maps, sysfs files) are written by hand; the
layout of the binary ones is described in fixtures/README.md. Run from anywhere:
    python3 guest/pimcloud-agent/tools/make_fixtures.py
"""

import struct
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PRESENT = 1 << 63
SWAPPED = 1 << 62
SHARED = 1 << 61  # file page or shared anonymous page
EXCLUSIVE = 1 << 56


def pagemap() -> bytes:
    entries = [0] * 0x20  # virtual pages 0x00..0x1f
    for i in range(6):  # [heap] 0x10000-0x18000: six present pages, PFN 0x100..0x105
        entries[0x10 + i] = PRESENT | EXCLUSIVE | (0x100 + i)
    entries[0x16] = SWAPPED  # swapped out
    entries[0x17] = 0  # never touched
    for i in range(4):  # anonymous 0x1c000-0x20000: PFN 0x140..0x143
        entries[0x1C + i] = PRESENT | EXCLUSIVE | (0x140 + i)
    entries[0x1D] = PRESENT | SHARED | 0x141  # shared with another process
    return struct.pack("<32Q", *entries)


def idle_bitmap() -> bytes:
    words = [0] * 6
    for pfn in (0x100, 0x102, 0x104, 0x140, 0x142):  # idle since marked: not accessed
        words[pfn // 64] |= 1 << (pfn % 64)
    return struct.pack("<6Q", *words)


def main() -> None:
    (FIXTURES / "proc/4242").mkdir(parents=True, exist_ok=True)
    (FIXTURES / "proc/4242/pagemap").write_bytes(pagemap())
    (FIXTURES / "sys/kernel/mm/page_idle").mkdir(parents=True, exist_ok=True)
    (FIXTURES / "sys/kernel/mm/page_idle/bitmap").write_bytes(idle_bitmap())


if __name__ == "__main__":
    main()
