"""sha256 of the large inputs a checkpoint depends on (kernel, disk image)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pimcloud.atomic import atomic_write_text


def file_digest(path: Path, cache: Path | None = None) -> str:
    """sha256 of a (large) file, remembered by path, size and mtime in ``cache``."""
    stat = path.stat()
    stamp = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    known: dict[str, str] = {}
    if cache is not None and cache.is_file():
        try:
            known = json.loads(cache.read_text())
        except ValueError:
            known = {}
    if stamp in known:
        return known[stamp]
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    if cache is not None:
        known[stamp] = value
        atomic_write_text(cache, json.dumps(known, indent=1) + "\n")
    return value


def input_digests(kernel: Path, image: Path, cache: Path | None = None) -> dict[str, str]:
    """What a boot records and a checkpoint is keyed by: the kernel's and image's sha256."""
    return {"kernel": file_digest(kernel, cache), "image": file_digest(image, cache)}
