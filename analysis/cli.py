"""``pimcloud analyze``: summaries, tidy exports and the HTML report.

    pimcloud analyze CAMPAIGN_DIR              tail latency per run and app
    pimcloud analyze CAMPAIGN_DIR --report     write CAMPAIGN_DIR/report/index.html
    pimcloud analyze CAMPAIGN_DIR --report --screenshot   and report/screenshot.png
    pimcloud analyze CAMPAIGN_A CAMPAIGN_B --report --out DIR   several read as one
    pimcloud analyze m5out/stats.txt           the dumps of one stats.txt
    pimcloud analyze m5out/stats.txt --export stats.parquet   the tidy frame
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd
from pimcloud.stats_file import parse_stats

from .campaign import load_campaigns
from .metrics import latency_percentiles
from .report import build_report


def _qos(text: str) -> tuple[str, float]:
    app, sep, value = text.partition("=")
    try:
        if not sep or not app:
            raise ValueError
        return app, float(value) * 1e6
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--qos {text!r}: write APP=MILLISECONDS, e.g. --qos xapian=1"
        ) from None


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="tables, metrics, figures and an HTML report from a campaign or a stats.txt",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", type=Path, nargs="+",
                        help="a campaign folder (or several, read as one: each run id "
                             "prefixed with its campaign's name; --report then needs --out), "
                             "or a gem5 stats.txt")
    parser.add_argument("--report", action="store_true",
                        help="write an HTML report (campaign folders)")
    parser.add_argument("--screenshot", action="store_true",
                        help="with --report: render it in headless chromium into "
                             "report/screenshot.png")
    parser.add_argument("--out", type=Path, default=None,
                        help="report folder (default CAMPAIGN/report)")
    parser.add_argument("--qos", type=_qos, action="append", default=[], metavar="APP=MS",
                        help="QoS target of an app in ms, over run.json's qos_ns (repeatable)")
    parser.add_argument("--export", type=Path, default=None,
                        help="write the tidy stats frame (or request table) to .parquet/.csv")
    parser.set_defaults(handler=run)


def _export(frame: pd.DataFrame, path: Path) -> None:
    from ..atomic import atomic_write_bytes, atomic_write_text

    if path.suffix == ".parquet":
        import io

        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        atomic_write_bytes(path, buffer.getvalue())
    elif path.suffix == ".csv":
        atomic_write_text(path, frame.to_csv(index=False))
    else:
        raise ValueError(f"--export {path}: name a .parquet or .csv file")
    print(f"wrote {len(frame)} rows to {path}")


def run(args: argparse.Namespace) -> int:
    paths: list[Path] = args.path
    path = paths[0]
    if len(paths) > 1:
        missing = [str(p) for p in paths if not p.is_dir()]
        if missing:
            raise FileNotFoundError(f"{', '.join(missing)}: no such campaign folder")
    elif path.is_file():
        parsed = parse_stats(path)
        with pd.option_context("display.width", 120, "display.max_rows", 40):
            print(parsed.dumps.to_string(index=False))
        print(f"{len(parsed.stats)} statistics rows, "
              f"{parsed.stats['stat'].nunique()} distinct statistics")
        if args.export:
            _export(parsed.stats, args.export)
        return 1 if parsed.problems else 0
    elif not path.is_dir():
        raise FileNotFoundError(f"{path}: no such campaign folder or stats.txt")
    if args.report:
        index = build_report(paths, args.out, qos_ns=dict(args.qos))
        print(f"report: {index}")
        if args.screenshot:
            from .screenshot import screenshot

            print(f"screenshot: {screenshot(index, index.parent / 'screenshot.png')}")
        return 0
    campaign = load_campaigns(paths, with_stats=False)
    if campaign.requests.empty:
        print(f"{len(campaign.runs)} runs, no latency records yet")
        return 0
    table = latency_percentiles(campaign.requests)
    with pd.option_context("display.width", 120, "display.max_rows", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if args.export:
        _export(campaign.requests, args.export)
    return 0
