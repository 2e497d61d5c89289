"""The one error type of the topology model: it names the field, the value and the fix."""

from __future__ import annotations


class TopologyError(ValueError):
    """An invalid topology: ``field`` is the dotted TOML path, ``value`` what was found."""

    def __init__(self, source: str, field: str, value: object, fix: str) -> None:
        self.source = source
        self.field = field
        self.value = value
        self.fix = fix
        if value == "(missing)":
            super().__init__(f"{source}: {field} is missing: {fix}")
            return
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"{source}: {field} = {shown}: {fix}")
