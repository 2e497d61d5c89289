"""Checked reading of TOML input: every mistake names the field, the value and the fix.

Shared by the topology model and the campaign specs.  Standard library only, because
the topology model is imported inside gem5.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from typing import Any, ClassVar

MISSING = "(missing)"


class InputError(ValueError):
    """Bad input: ``field`` is the dotted TOML path, ``value`` what was found."""

    def __init__(self, source: str, field: str, value: object, fix: str) -> None:
        self.source = source
        self.field = field
        self.value = value
        self.fix = fix
        if value == MISSING:
            super().__init__(f"{source}: {field} is missing: {fix}")
            return
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"{source}: {field} = {shown}: {fix}")


def suggestion(word: str, known: list[str] | tuple[str, ...]) -> str:
    """"did you mean 'x'? " when a known word is close, else ""."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"did you mean {close[0]!r}? " if close else ""


class CheckedTable:
    """Typed access to one TOML table that remembers which keys were read, so that
    ``finish()`` can reject the rest: misspellings never silently do nothing."""

    error_type: ClassVar[type[InputError]] = InputError

    def __init__(self, source: str, path: str, data: object) -> None:
        if not isinstance(data, dict):
            raise self.error_type(source, path or "(top level)", data, "this must be a table")
        self.source = source
        self.path = path
        self.data: dict[str, Any] = data
        self.read: set[str] = set()

    def name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, value: object, fix: str) -> InputError:
        return self.error_type(self.source, self.name(key), value, fix)

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return self.data.get(key, default)

    def _present(self, key: str, default: Any, example: str) -> Any:
        value = self.raw(key, default)
        if value is None:
            raise self.error(key, MISSING, f"add {self.name(key)} = {example}")
        return value

    def string(self, key: str, default: str | None = None) -> str:
        value = self._present(key, default, '"..."')
        if not isinstance(value, str):
            raise self.error(key, value, "must be a string")
        return value

    def choice(self, key: str, options: tuple[str, ...], default: str | None = None) -> str:
        value = self.string(key, default)
        if value not in options:
            raise self.error(key, value, suggestion(value, options) + "choose one of " +
                             ", ".join(repr(o) for o in options))
        return value

    def integer(self, key: str, default: int | None = None, minimum: int = 0,
                maximum: int | None = None, why: str = "") -> int:
        value = self._present(key, default, str(minimum))
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, value, "must be a whole number")
        if value < minimum:
            raise self.error(key, value, f"must be at least {minimum}{why}")
        if maximum is not None and value > maximum:
            raise self.error(key, value, f"must be at most {maximum}{why}")
        return value

    def number(self, key: str, default: float | None, minimum: float = 0.0) -> float | None:
        value = self.raw(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, value, "must be a number")
        if value < minimum or not math.isfinite(value):
            raise self.error(key, value, f"must be a finite number of at least {minimum}")
        return float(value)

    def strings(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self.raw(key, list(default))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, value, 'must be a list of strings, e.g. ["a", "b"]')
        return tuple(value)

    def array(self, key: str, default: list[Any] | None = None) -> list[Any]:
        value = self._present(key, default, "[...]")
        if not isinstance(value, list):
            raise self.error(key, value, "must be a list")
        return value

    def quantity(self, key: str, parser: Callable[[object], int], default: str | None = None,
                 positive: bool = True) -> int:
        """A string with a unit, parsed to base units; ``parser`` raises ValueError."""
        raw = self._present(key, default, '"<number><unit>"')
        if isinstance(raw, str) and raw.strip().startswith("-"):
            raise self.error(key, raw, "must not be negative")
        try:
            value = parser(raw)
        except ValueError as problem:
            raise self.error(key, raw, str(problem)) from None
        if positive and value <= 0:
            raise self.error(key, raw, "must be greater than zero")
        return value

    def table(self, key: str, default: dict[str, Any] | None = None) -> CheckedTable:
        """A sub-table; missing is an error unless a default (e.g. {}) is given."""
        value = self.raw(key, default)
        if value is None:
            raise self.error(key, MISSING, f"add a [{self.name(key)}] table")
        return type(self)(self.source, self.name(key), value)

    def optional_table(self, key: str) -> CheckedTable | None:
        self.read.add(key)
        return self.table(key) if key in self.data else None

    def finish(self) -> None:
        """Reject keys nobody read: misspellings or options that do not exist."""
        for key in self.data:
            if key not in self.read:
                known = sorted(self.read)
                raise self.error(key, self.data[key], f"unknown field; {suggestion(key, known)}"
                                 f"known here: {', '.join(known)}")
