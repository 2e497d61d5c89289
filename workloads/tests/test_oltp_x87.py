"""oltp runs in gem5: its SQLite (Debian's source, compiled in with doubles) holds no x87
instruction, which gem5 v24.0.0.1 leaves unimplemented; Debian's libsqlite3 holds some."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

# x87 mnemonics all start with "f"; fxsave/fxrstor save SSE state too and gem5 has them.
X87 = re.compile(r"^f(?!xsave|xrstor)[a-z0-9]+$")
SYSTEM_SQLITE = Path("/usr/lib/x86_64-linux-gnu/libsqlite3.so.0")


def x87_instructions(binary: Path) -> dict[str, int]:
    """Each x87 mnemonic in ``binary``'s code and how often it occurs."""
    if shutil.which("objdump") is None:
        pytest.skip("objdump is not installed (Debian's binutils)")
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)],
                             capture_output=True, text=True, check=True).stdout
    found: dict[str, int] = {}
    for line in listing.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].rstrip().endswith(":"):
            mnemonic = parts[1].split()[0] if parts[1].split() else ""
            if X87.match(mnemonic):
                found[mnemonic] = found.get(mnemonic, 0) + 1
    return found


def test_debian_libsqlite3_computes_with_x87() -> None:
    """The check finds what it looks for: the system library is why oltp hung in gem5."""
    if not SYSTEM_SQLITE.is_file():
        pytest.skip(f"{SYSTEM_SQLITE} is not installed (libsqlite3-0)")
    found = x87_instructions(SYSTEM_SQLITE)
    assert found.get("fld", 0) > 0 and any(m.startswith("fcomi") for m in found), found


def test_oltp_holds_no_x87_instruction(need: Callable[[str], Path]) -> None:
    oltp = need("pimcloud-oltp")
    assert x87_instructions(oltp) == {}
    linked = subprocess.run(["ldd", str(oltp)], capture_output=True, text=True).stdout
    assert "libsqlite3" not in linked, linked
