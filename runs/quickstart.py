"""``pimcloud quickstart``: from a set-up machine to a report in one command.

gem5 when $GEM5 is set and usable (runs/campaigns/quickstart.toml), otherwise QEMU
(runs/campaigns/quickstart-qemu.toml, a few minutes on 2 cores) under a banner saying its
timings are not architectural.  Builds the kernel, the image and the checkpoint when
missing (each is cached), runs the campaign locally, collects it, writes the report.
"""

from __future__ import annotations

import time
from pathlib import Path

from .campaign import choose_backend, prepare_campaign
from .layout import DEFAULT_OUT, CampaignDir
from .spec import CAMPAIGN_DIR, load_spec

BANNER = """\
+----------------------------------------------------------------------------+
| QEMU FUNCTIONAL BACKEND: gem5 is not available ({why}).
| The guest, the agent and the services run for real, but under QEMU TCG with no
| timing model: latencies, loads and every figure in this report are NOT
| architectural.  Set GEM5 to a gem5.opt built with scons-extra for real results.
+----------------------------------------------------------------------------+"""


def set_aside_older_quickstart(spec_path: Path) -> None:
    """The default quickstart folder made by an older version of the spec (the bundle was
    updated) is renamed, not reused and not deleted, so the new campaign starts clean."""
    spec = load_spec(spec_path)
    folder = CampaignDir(DEFAULT_OUT / spec.name)
    if not folder.record_path.is_file():
        return
    old_hash = folder.read_record().get("spec_hash")
    if old_hash == spec.spec_hash:
        return
    kept = folder.root.with_name(f"{folder.root.name}.spec-{old_hash}")
    if kept.exists():
        kept = kept.with_name(f"{kept.name}-{int(time.time())}")
    folder.root.rename(kept)
    print(f"quickstart: {folder.root} held a campaign of an older spec; kept it as {kept}")


def quickstart(out: Path | None = None, backend: str = "auto", jobs: int = 0,
               live: bool | None = None, checkpoint_from: Path | None = None) -> int:
    from .cli import adopt_checkpoint, execute
    from .collect import collect

    chosen, _, version = choose_backend(backend, print)
    if chosen == "gem5":
        spec = CAMPAIGN_DIR / "quickstart.toml"
        print(f"quickstart: gem5 {version} ({spec.name}); the first run boots the paper "
              "system once and checkpoints it")
    else:
        spec = CAMPAIGN_DIR / "quickstart-qemu.toml"
        why = "GEM5 is not set" if backend == "auto" else f"--backend {backend}"
        print(BANNER.format(why=why))
    if out is None:
        set_aside_older_quickstart(spec)
    campaign = prepare_campaign(spec, out, chosen)
    if checkpoint_from is not None:
        problem = adopt_checkpoint(campaign, checkpoint_from)
        if problem:
            print(f"quickstart: {problem}")
            return 2
    status = execute(campaign, "local", jobs, live=live)
    runs_csv, _ = collect(campaign)
    print(f"runs: {runs_csv}")
    if not any(campaign.dir.is_done(run.run_id) for run in campaign.runs()):
        print("quickstart: no run finished, so there is no report; see the failures above "
              f"and {campaign.dir.root / 'failures.csv'}")
        return 1
    from pimcloud.analysis.report import build_report

    index = build_report(campaign.dir.root)
    if chosen != "gem5":
        print("quickstart: QEMU functional backend - the report's timings are not "
              "architectural")
    print(f"report: {index}")
    return status
