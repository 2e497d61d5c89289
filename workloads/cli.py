"""``pimcloud workload ...``: build data sets, list services, run one natively for a look."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pimcloud.workloads import datasets
from pimcloud.workloads.run import DEFAULT_DATA, run_service
from pimcloud.workloads.services import SERVICES


def _list(_: argparse.Namespace) -> int:
    for s in SERVICES.values():
        print(
            f"{s.name:10} {s.paper_name:9} QoS {s.qos_ns / 1e6:>8.1f} ms  {s.engine}: "
            f"{s.request_mix}"
        )
    return 0


def _data(args: argparse.Namespace) -> int:
    manifest = datasets.build(Path(args.out), args.only or None)
    print(json.dumps(manifest, indent=2))
    return 0


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _run(args: argparse.Namespace) -> int:
    result = run_service(
        args.service,
        args.rps,
        args.seconds,
        out=Path(args.out) if args.out else None,
        data=Path(args.data),
        threads=args.threads,
        warmup=args.warmup,
        seed=args.seed,
        check_every=args.check_every,
    )
    s = result.summary
    sojourn = result.percentiles_ns("sojourn_ns")
    service_time = result.percentiles_ns("service_ns")
    qos = SERVICES[args.service].qos_ns
    print(
        f"{args.service}: {s['requests']} requests, achieved {s['achieved_rps']} RPS "
        f"(offered {args.rps}), {args.threads} workers, outputs in {result.folder}"
    )
    print(
        f"  sojourn  p50 {_ms(sojourn['p50'])}  p95 {_ms(sojourn['p95'])}  "
        f"p99 {_ms(sojourn['p99'])}  (QoS {_ms(qos)}: "
        f"{'met' if sojourn['p99'] <= qos else 'violated'})"
    )
    print(
        f"  service  p50 {_ms(service_time['p50'])}  p95 {_ms(service_time['p95'])}  "
        f"p99 {_ms(service_time['p99'])}"
    )
    print(f"  checked {s['checked']}, wrong {s['failed']}; service: {json.dumps(s['service'])}")
    print("  service-time histogram:")
    hist = result.service_histogram()
    peak = max((c for _, _, c in hist), default=1) or 1
    for low, high, count in hist:
        print(f"    {_ms(low):>12} - {_ms(high):>12} {count:7d} {'#' * round(40 * count / peak)}")
    return 0 if s["failed"] == 0 else 3


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("workload", help="latency-critical services and their data")
    sub = parser.add_subparsers(dest="workload_command", metavar="ACTION", required=True)

    p = sub.add_parser("list", help="the services, their QoS targets and request mixes")
    p.set_defaults(handler=_list)

    p = sub.add_parser("data", help="build the services' data sets from Debian packages")
    p.add_argument("--out", default=str(DEFAULT_DATA), help="data folder (%(default)s)")
    p.add_argument(
        "--only",
        action="append",
        choices=sorted(datasets.BUILDERS),
        help="build only this data set (repeatable)",
    )
    p.set_defaults(handler=_data)

    p = sub.add_parser("run", help="run one service natively and summarise its latency")
    p.add_argument("service", choices=sorted(SERVICES))
    p.add_argument("--rps", type=float, required=True, help="offered load (Poisson)")
    p.add_argument("--seconds", type=float, required=True, help="measured region")
    p.add_argument("--threads", type=int, default=20, help="server workers (%(default)s)")
    p.add_argument("--warmup", type=int, default=200, help="warm-up requests (%(default)s)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check-every", type=int, default=10, help="check every Nth answer")
    p.add_argument("--data", default=str(DEFAULT_DATA), help="data folder (%(default)s)")
    p.add_argument("--out", help="keep the outputs here (default: a temporary folder)")
    p.set_defaults(handler=_run)
