"""The quickstart's default folder: kept when it holds this spec, set aside (renamed,
never deleted) when an older spec made it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pimcloud import quickstart
from pimcloud.runs.spec import CAMPAIGN_DIR, load_spec


def test_an_older_quickstart_folder_is_renamed_and_a_current_one_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quickstart, "DEFAULT_OUT", tmp_path)
    spec_path = CAMPAIGN_DIR / "quickstart-qemu.toml"
    spec = load_spec(spec_path)
    root = tmp_path / spec.name
    root.mkdir()
    (root / "campaign.json").write_text(json.dumps({"spec_hash": spec.spec_hash}))
    quickstart.set_aside_older_quickstart(spec_path)
    assert root.is_dir()  # same spec: resumed later, not moved
    (root / "campaign.json").write_text(json.dumps({"spec_hash": "0ld"}))
    (root / "finished-run.txt").write_text("kept\n")
    quickstart.set_aside_older_quickstart(spec_path)
    assert not root.exists()
    kept = tmp_path / f"{spec.name}.spec-0ld"
    assert (kept / "finished-run.txt").read_text() == "kept\n"
    root.mkdir()
    (root / "campaign.json").write_text(json.dumps({"spec_hash": "0ld"}))
    quickstart.set_aside_older_quickstart(spec_path)  # the name is taken: a second one
    assert len(list(tmp_path.glob(f"{spec.name}.spec-0ld*"))) == 2
