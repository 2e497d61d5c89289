"""pimcloud checkpoints list|prune on a store of made-up checkpoints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pimcloud.runs.checkpoint_store import scan


def _checkpoint(folder: Path, meta: dict[str, object], age_s: float = 0.0) -> Path:
    (folder / "ckpt").mkdir(parents=True)
    (folder / "ckpt" / "m5.cpt").write_bytes(b"x" * 1000)
    (folder / "meta.json").write_text(json.dumps(meta))
    (folder / "last-used").touch()
    when = time.time() - age_s
    os.utime(folder / "last-used", (when, when))
    return folder


def test_stale_failed_and_unused_checkpoints_are_pruned(tmp_path: Path) -> None:
    root = tmp_path / "store"
    kernel, image = tmp_path / "vmlinux", tmp_path / "disk.img"
    kernel.write_text("k")
    image.write_text("i")
    old = time.time() - 3600
    os.utime(kernel, (old, old))
    os.utime(image, (old, old))
    _checkpoint(root / "paper-aaaa", {"key": "aaaa", "kernel": str(kernel),
                                      "image": str(image)})
    _checkpoint(root / "apps" / "paper-aaaa-kvstore-1111", {"boot_key": "aaaa",
                                                            "apps": ["kvstore"]})
    _checkpoint(root / "apps" / "paper-aaaa-oltp-2222", {"boot_key": "aaaa", "apps": ["oltp"]},
                age_s=30 * 86400)
    _checkpoint(root / "apps" / "paper-gone-kvstore-3333", {"boot_key": "gone",
                                                            "apps": ["kvstore"]})
    (root / "apps" / "failed-paper-aaaa-kvstore-1111-1").mkdir(parents=True)
    states = {entry.path.name: entry.stale for entry in scan(root)}
    assert states["paper-aaaa"] == "" and states["paper-aaaa-kvstore-1111"] == ""
    assert states["paper-gone-kvstore-3333"] == "its boot checkpoint is gone"
    env = {**os.environ, "PIMCLOUD_CHECKPOINTS": str(root)}
    listed = subprocess.run([sys.executable, "-m", "pimcloud.cli", "checkpoints", "list"],
                            capture_output=True, text=True, env=env, check=True).stdout
    assert "kvstore" in listed and "stale: its boot checkpoint is gone" in listed
    dry = subprocess.run([sys.executable, "-m", "pimcloud.cli", "checkpoints", "prune",
                          "--unused-for", "7d", "--dry-run"], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert "would remove" in dry and (root / "apps" / "paper-aaaa-oltp-2222").is_dir()
    subprocess.run([sys.executable, "-m", "pimcloud.cli", "checkpoints", "prune",
                    "--unused-for", "7d"], capture_output=True, text=True, env=env, check=True)
    left = sorted(p.name for p in (root / "apps").iterdir())
    assert left == ["paper-aaaa-kvstore-1111"]
    assert (root / "paper-aaaa").is_dir()
    # A rebuilt image makes its boot checkpoint (and what is made on it) stale.
    image.write_text("rebuilt")
    states = {entry.path.name: entry.stale for entry in scan(root)}
    assert "rebuilt after it" in states["paper-aaaa"]
    assert states["paper-aaaa-kvstore-1111"] == "its boot checkpoint is stale"


def test_a_killed_set_ups_staging_is_swept_and_a_live_ones_kept(tmp_path: Path) -> None:
    """A staging folder of this host whose owner lock nobody holds (its set-up was killed)
    goes, with the partial checkpoint in it; one a set-up holds stays, as does another
    host's (its lock may not show here) and an ownerless one (made before owner files)
    with anything changed in the last hour; an old ownerless one goes."""
    import fcntl
    import socket

    from pimcloud.runs.app_checkpoints import (
        STAGING_OWNER,
        UNOWNED_STAGING_S,
        held_staging,
        sweep_stale_staging,
    )

    def staging(name: str, host: str | None) -> Path:
        folder = tmp_path / name
        (folder / "building" / "ckpt").mkdir(parents=True)
        (folder / "building" / "ckpt" / "board.physmem.store0.pmem").write_bytes(b"\0" * 4096)
        if host is not None:
            (folder / STAGING_OWNER).write_text(json.dumps({"host": host, "pid": 1}))
        return folder

    then = time.time() - UNOWNED_STAGING_S - 60

    def age(folder: Path) -> None:
        for path in [folder, *folder.rglob("*")]:
            os.utime(path, (then, then))

    killed = staging(".setup-killed", socket.gethostname())
    elsewhere = staging(".setup-elsewhere", "another-host")
    young = staging(".setup-young", None)
    age(young)
    os.utime(young / "building" / "ckpt" / "board.physmem.store0.pmem")  # written just now
    old = staging(".setup-old", None)
    age(old)
    claim = tmp_path / ".claim-abandoned"
    claim.mkdir()
    age(claim)
    kept_checkpoint = tmp_path / "arch8-kvstore-0123456789abcdef"
    kept_checkpoint.mkdir()
    said: list[str] = []
    with held_staging(tmp_path) as live:
        assert live.name.startswith(".setup-")  # renamed from its claim once locked
        removed = sweep_stale_staging(tmp_path, said.append)
        assert live.is_dir()
        # The live one's lock is really held: another open file cannot take it.
        with (live / STAGING_OWNER).open("r") as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert sorted(removed) == sorted([claim, killed, old])
    assert not killed.exists() and not old.exists() and not claim.exists()
    assert young.is_dir() and elsewhere.is_dir() and kept_checkpoint.is_dir()
    assert not live.exists()
    assert len(said) == 3 and all("killed" in line for line in said)
