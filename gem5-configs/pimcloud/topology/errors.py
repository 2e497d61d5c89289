"""The error type of the topology model: it names the field, the value and the fix."""

from __future__ import annotations

from ..checked import InputError


class TopologyError(InputError):
    """An invalid topology: ``field`` is the dotted TOML path, ``value`` what was found."""
