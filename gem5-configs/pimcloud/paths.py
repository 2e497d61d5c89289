"""Where the bundle's things live: the checkout, the CMake build tree, the cache of built
guests, and the programs the build made. The one home of these rules (standard library
only: gem5's interpreter imports the package too)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    """The CMake build tree: ``$PIMCLOUD_BUILD`` or ``<checkout>/build``."""
    configured = os.environ.get("PIMCLOUD_BUILD")
    return Path(configured).expanduser().resolve() if configured else REPO_ROOT / "build"


def cache_dir() -> Path:
    """Root of everything built outside git (kernel, image, data): ``$PIMCLOUD_CACHE`` or
    ``<checkout>/.cache``."""
    configured = os.environ.get("PIMCLOUD_CACHE")
    return Path(configured).expanduser().resolve() if configured else REPO_ROOT / ".cache"


def program_candidates(name: str) -> list[Path]:
    """Executables called ``name`` that the CMake build made (``pimcloud-kvstore``, ...)."""
    build = build_dir()
    if not build.is_dir():
        return []
    return sorted(p for p in build.glob(f"**/{name}") if p.is_file() and
                  p.stat().st_mode & 0o111 and "CMakeFiles" not in p.parts)
