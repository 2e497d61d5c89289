"""``pimcloud quickstart``: from a set-up machine to a report in one command.

gem5 when $GEM5 is set and usable (runs/campaigns/quickstart.toml), otherwise QEMU
(runs/campaigns/quickstart-qemu.toml, a few minutes on 2 cores) under a banner saying its
timings are not architectural.  Builds the kernel, the image and the checkpoint when
missing (each is cached), runs the campaign locally, collects it, writes the report.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .runs.campaign import choose_backend, prepare_campaign
from .runs.layout import DEFAULT_OUT, CampaignDir
from .runs.spec import CAMPAIGN_DIR, load_spec

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
    from .runs.cli import adopt_checkpoint, execute
    from .runs.collect import collect

    chosen, _, version, _ = choose_backend(backend, print)
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
    from .analysis.report import build_report

    index = build_report(campaign.dir.root)
    if chosen != "gem5":
        print("quickstart: QEMU functional backend - the report's timings are not "
              "architectural")
    print(f"report: {index}")
    return status


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``pimcloud quickstart``: the top of the layers, composing a campaign and its report."""
    quick = subparsers.add_parser(
        "quickstart", help="build what is missing, run a small campaign on paper, report",
        description="Builds the kernel, the image and (gem5) the checkpoint when missing, "
        "runs two services at two loads under PIMCloud and Default on the paper system - "
        "in gem5 when $GEM5 is set and usable, otherwise in QEMU (functional: timings are "
        "not architectural) - and writes the analysis report.")
    quick.add_argument("--out", type=Path, help="campaign folder (default runs/out/<name>)")
    quick.add_argument("--backend", choices=("auto", "gem5", "qemu"), default="auto")
    quick.add_argument("--jobs", type=int, default=0)
    quick.add_argument("--plain", action="store_true")
    quick.add_argument("--checkpoint-from", type=Path, metavar="BOOT_DIR",
                       help="gem5: a `pimcloud gem5 boot paper --mem-divisor 8` folder to "
                            "restore instead of booting again")
    quick.set_defaults(handler=lambda args: quickstart(
        out=args.out, backend=args.backend, jobs=args.jobs,
        live=False if args.plain else None, checkpoint_from=args.checkpoint_from))

