"""SimObjects this bundle adds to gem5 (scons-extra/), looked up by name."""

from __future__ import annotations


def scons_extra_object(name: str):  # type: ignore[no-untyped-def]
    """A SimObject class of scons-extra, or an error saying how to get it."""
    import m5.objects

    try:
        return getattr(m5.objects, name)
    except AttributeError:
        raise RuntimeError(
            f"this gem5 lacks {name}: build gem5.opt with "
            "EXTRAS=<pimcloud>/scons-extra (see scons-extra/README.md)") from None
