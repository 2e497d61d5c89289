"""Write newc cpio archives (the initramfs format) without root and deterministically.

Linux reads a concatenation of archives; an *uncompressed* first archive is where the
early ACPI table upgrade looks for kernel/firmware/acpi/*.aml.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

TRAILER = "TRAILER!!!"


@dataclass(frozen=True)
class Entry:
    """One archive member: a directory, regular file or symlink, with its mode."""

    path: str
    mode: int
    data: bytes = b""


def directory(path: str) -> Entry:
    return Entry(path, stat.S_IFDIR | 0o755)


def regular(path: str, data: bytes, executable: bool = False) -> Entry:
    return Entry(path, stat.S_IFREG | (0o755 if executable else 0o644), data)


def symlink(path: str, target: str) -> Entry:
    return Entry(path, stat.S_IFLNK | 0o777, target.encode())


def _pad4(length: int) -> bytes:
    return b"\0" * ((-length) % 4)


def _member(inode: int, entry: Entry) -> bytes:
    name = entry.path.lstrip("/").encode() + b"\0"
    nlink = 2 if stat.S_ISDIR(entry.mode) else 1
    fields = [inode, entry.mode, 0, 0, nlink, 0, len(entry.data), 0, 0, 0, 0, len(name), 0]
    header = b"070701" + b"".join(f"{value:08X}".encode() for value in fields)
    out = header + name
    out += _pad4(len(out))
    out += entry.data + _pad4(len(entry.data))
    return out


def archive(entries: list[Entry]) -> bytes:
    """The archive bytes; parent directories must come before their contents."""
    body = b"".join(_member(inode, e) for inode, e in enumerate(entries, start=1))
    body += _member(0, Entry(TRAILER, 0))
    return body + _pad4(len(body))


def with_parents(entries: list[Entry]) -> list[Entry]:
    """Add the directory entries every member needs, parents first."""
    seen: set[str] = set()
    ordered: list[Entry] = []
    for entry in entries:
        parts = Path(entry.path.lstrip("/")).parts
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent not in seen:
                seen.add(parent)
                ordered.append(directory(parent))
        if entry.path.lstrip("/") not in seen:
            seen.add(entry.path.lstrip("/"))
            ordered.append(entry)
    return ordered
