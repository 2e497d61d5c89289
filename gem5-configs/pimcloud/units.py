"""Quantities with units, written as strings in TOML ("8GiB", "2.4GHz", "4ns", "160GB/s").

Every parser returns an integer in the base unit (bytes, Hz, picoseconds, bytes/s) so
that derived tables are exact, and raises ``UnitError`` naming the accepted units.
"""

from __future__ import annotations

import re

_NUMBER = r"\s*([0-9]+(?:\.[0-9]+)?)\s*"

SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
FREQUENCY_UNITS = {"Hz": 1, "kHz": 10**3, "MHz": 10**6, "GHz": 10**9}
TIME_UNITS_PS = {"ps": 1, "ns": 10**3, "us": 10**6, "ms": 10**9, "s": 10**12}
BANDWIDTH_UNITS = {
    "B/s": 1,
    "KB/s": 10**3,
    "MB/s": 10**6,
    "GB/s": 10**9,
    "KiB/s": 1 << 10,
    "MiB/s": 1 << 20,
    "GiB/s": 1 << 30,
}


class UnitError(ValueError):
    """A quantity that does not parse; the message lists the accepted units."""


def _parse(text: object, units: dict[str, int], what: str, example: str) -> int:
    if isinstance(text, bool) or not isinstance(text, str):
        raise UnitError(f"expected a {what} as a string with a unit, for example \"{example}\"")
    match = re.fullmatch(_NUMBER + r"([A-Za-z/]+)\s*", text)
    if not match or match.group(2) not in units:
        accepted = ", ".join(units)
        raise UnitError(f"write the {what} as a number and one of {accepted}, e.g. \"{example}\"")
    value = float(match.group(1)) * units[match.group(2)]
    if abs(value - round(value)) > 1e-9 * max(1.0, abs(value)):
        raise UnitError(f"the {what} {text!r} is not a whole number of {min(units, key=units.get)}")
    return round(value)


def parse_size(text: object) -> int:
    """Bytes from "8GiB"; binary units only, so a capacity is never ambiguous."""
    return _parse(text, SIZE_UNITS, "size", "8GiB")


def parse_frequency(text: object) -> int:
    """Hz from "2.4GHz"."""
    return _parse(text, FREQUENCY_UNITS, "frequency", "2.4GHz")


def parse_time_ps(text: object) -> int:
    """Picoseconds from "13.75ns"."""
    return _parse(text, TIME_UNITS_PS, "time", "13.75ns")


def parse_bandwidth(text: object) -> int:
    """Bytes per second from "160GB/s" (GB is 10^9, GiB is 2^30)."""
    return _parse(text, BANDWIDTH_UNITS, "bandwidth", "160GB/s")


def format_size(num_bytes: int) -> str:
    """The largest binary unit that divides the size exactly: 3221225472 -> "3GiB"."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        scale = SIZE_UNITS[unit]
        if num_bytes and num_bytes % scale == 0:
            return f"{num_bytes // scale}{unit}"
    return f"{num_bytes}B"


def format_time_ps(picoseconds: int | float) -> str:
    """Nanoseconds with up to two decimals: 13750 -> "13.75ns"."""
    return f"{picoseconds / 1000:.2f}".rstrip("0").rstrip(".") + "ns"


def format_bandwidth(bytes_per_second: int | float) -> str:
    """Decimal GB/s, as link datasheets quote them."""
    return f"{bytes_per_second / 1e9:.1f}".rstrip("0").rstrip(".") + "GB/s"
