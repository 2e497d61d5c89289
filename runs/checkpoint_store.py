"""``pimcloud checkpoints list|prune``: what the checkpoint store holds, and clearing it.

    pimcloud checkpoints list [--root DIR]
    pimcloud checkpoints prune [--root DIR] [--unused-for 14d] [--dry-run]

The store (``$PIMCLOUD_CHECKPOINTS`` or runs/out/checkpoints) holds boot checkpoints
(``<topology>-<key>/``) and under ``apps/`` app checkpoints (``<boot>-<apps>-<key>/``).
A checkpoint is *stale* when what it was made from has changed: a boot checkpoint whose
kernel or image file is gone or was written after it, an app checkpoint whose boot
checkpoint is gone or stale.  ``prune`` removes stale checkpoints, failed and abandoned
attempts (``failed-*``, ``.building-*`` a day old, a killed set-up's ``.setup-*``), and with
``--unused-for`` those no run has restored for that long.  A run that needs a removed
checkpoint makes it again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .app_checkpoints import CLAIM_PREFIX, STAGING_PREFIX, staging_abandoned
from .checkpoints import LAST_USED
from .layout import default_checkpoint_root
from .spec import parse_host_seconds
from .status import format_seconds

ABANDONED_AFTER_S = 86400.0


@dataclass
class Entry:
    kind: str  # boot, app, failed, abandoned
    path: Path
    size: int
    created: float
    last_used: float
    stale: str  # why it is stale ("" when it is not)
    meta: dict[str, Any]


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _meta(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((path / "meta.json").read_text())
        return data
    except (OSError, ValueError):
        return {}


def _boot_stale(meta: dict[str, Any], created: float) -> str:
    for name in ("kernel", "image"):
        file = Path(str(meta.get(name, "")))
        if not file.is_file():
            return f"its {name} {file} is gone"
        if file.stat().st_mtime > created:
            return f"its {name} {file} was rebuilt after it"
    return ""


def scan(root: Path) -> list[Entry]:
    """Every checkpoint and leftover in the store."""
    entries: list[Entry] = []
    boots: dict[str, Entry] = {}
    for folder in sorted(p for p in root.glob("*") if p.is_dir() and p.name != "apps"):
        entries.append(_entry(folder, boots))
    apps = root / "apps"
    for folder in sorted(p for p in apps.glob("*") if p.is_dir()) if apps.is_dir() else []:
        entry = _entry(folder, boots)
        if entry.kind == "app" and not entry.stale:
            boot = boots.get(str(entry.meta.get("boot_key")))
            if boot is None:
                entry.stale = "its boot checkpoint is gone"
            elif boot.stale:
                entry.stale = "its boot checkpoint is stale"
        entries.append(entry)
    return entries


def _entry(folder: Path, boots: dict[str, Entry]) -> Entry:
    meta = _meta(folder)
    stat = (folder / "meta.json").stat() if (folder / "meta.json").is_file() else folder.stat()
    created = stat.st_mtime
    used = (folder / LAST_USED).stat().st_mtime if (folder / LAST_USED).is_file() else created
    if folder.name.startswith("failed-"):
        return Entry("failed", folder, _size(folder), created, used, "a failed attempt", meta)
    if folder.name.startswith((STAGING_PREFIX, CLAIM_PREFIX)):
        # A set-up's staging: abandoned when no live set-up on this host holds it (a long
        # set-up may work in it for more than a day).
        return Entry("abandoned", folder, _size(folder), created, used,
                     "a killed set-up's" if staging_abandoned(folder) else "", meta)
    if folder.name.startswith("."):
        old = time.time() - folder.stat().st_mtime > ABANDONED_AFTER_S
        return Entry("abandoned", folder, _size(folder), created, used,
                     "an attempt abandoned a day ago" if old else "", meta)
    if "boot_key" in meta:
        return Entry("app", folder, _size(folder), created, used, "", meta)
    entry = Entry("boot", folder, _size(folder), created, used,
                  _boot_stale(meta, created) if meta else "no meta.json", meta)
    if "key" in meta:
        boots[str(meta["key"])] = entry
    return entry


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def _list(args: argparse.Namespace) -> int:
    root = args.root or default_checkpoint_root()
    entries = [e for e in scan(root) if e.kind != "abandoned" or e.stale]
    if not entries:
        print(f"{root}: no checkpoints")
        return 0
    rows = [("kind", "checkpoint", "size", "created", "last used", "state")]
    for entry in entries:
        what = entry.path.name
        if entry.kind == "app":
            what += f" ({'+'.join(entry.meta.get('apps', []))}, " \
                    f"{entry.meta.get('host_seconds', 0):.0f} s to make)"
        rows.append((entry.kind, what, f"{entry.size / 2**20:.0f} MiB", _when(entry.created),
                     _when(entry.last_used), f"stale: {entry.stale}" if entry.stale else "ok"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths,
                                                                 strict=True)).rstrip())
    total = sum(e.size for e in entries)
    print(f"{len(entries)} entries, {total / 2**30:.2f} GiB in {root}")
    return 0


def _prune(args: argparse.Namespace) -> int:
    root = args.root or default_checkpoint_root()
    unused_s = parse_host_seconds(args.unused_for) if args.unused_for else None
    now = time.time()
    freed = 0
    for entry in scan(root):
        why = entry.stale
        if not why and unused_s is not None and entry.kind in ("boot", "app") and \
                now - entry.last_used > unused_s:
            why = f"not used for {format_seconds(now - entry.last_used)}"
        if not why:
            continue
        print(f"{'would remove' if args.dry_run else 'removing'} {entry.path} "
              f"({entry.size / 2**20:.0f} MiB): {why}")
        freed += entry.size
        if not args.dry_run:
            shutil.rmtree(entry.path, ignore_errors=True)
    print(f"{'would free' if args.dry_run else 'freed'} {freed / 2**20:.0f} MiB")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("checkpoints", help="list and prune the checkpoint store",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="checkpoints_command", metavar="ACTION",
                                     required=True)
    listing = commands.add_parser("list", help="boot and app checkpoints, sizes, state")
    listing.add_argument("--root", type=Path, help="the store (default $PIMCLOUD_CHECKPOINTS "
                         "or runs/out/checkpoints)")
    listing.set_defaults(handler=_list)
    prune = commands.add_parser("prune", help="remove stale, failed and unused checkpoints")
    prune.add_argument("--root", type=Path)
    prune.add_argument("--unused-for", metavar="TIME",
                       help='also remove checkpoints no run restored for this long ("14d")')
    prune.add_argument("--dry-run", action="store_true", help="say what would go")
    prune.set_defaults(handler=_prune)
