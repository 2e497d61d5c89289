"""Native single-core figures of every service: max RPS and service-time p50/p99.

For each service: a low-load run (one worker, one core) gives the service-time
distribution; an overload run (one worker, offered 3x what it can serve) gives max RPS as
completions over the busy span. Printed beside the paper's Table II QoS targets, as
p99 service time / paper QoS, and peak memory beside Table II's capacity.

    .venv/bin/python workloads/bench/bench_services.py [--cpu 1] [--only kvstore ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from pimcloud.workloads.latency import RunOutput
from pimcloud.workloads.run import DEFAULT_DATA, service_command
from pimcloud.workloads.services import SERVICES

# Table II capacity (GB) of the application each service stands for.
PAPER_CAPACITY_GB = {
    "oltp": 1.8,
    "kvstore": 9.3,
    "imgdnn": 0.3,
    "search": 5.6,
    "translate": 2.5,
    "speech": 1.4,
}
# (low-load RPS, measured requests) per service; speech is slow, few requests.
PLAN = {
    "kvstore": (200, 2000),
    "oltp": (100, 1000),
    "imgdnn": (100, 1000),
    "search": (100, 1000),
    "translate": (10, 200),
    "speech": (0.1, 6),
}


def run_pinned(command: list[str], cpu: int) -> tuple[int, int]:
    """Runs on one CPU; returns (exit code, peak resident KiB)."""
    proc = subprocess.Popen(
        ["taskset", "-c", str(cpu), *command], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss


def bench(name: str, cpu: int, data: Path) -> dict[str, float]:
    rps, n = PLAN[name]
    with tempfile.TemporaryDirectory() as tmp:
        low = Path(tmp) / "low"
        cmd = service_command(name, rps, 1, low, data=data, threads=1, warmup=max(2, n // 20))
        cmd[cmd.index("--seconds") : cmd.index("--seconds") + 2] = ["--requests", str(n)]
        code, rss_kib = run_pinned(cmd, cpu)
        if code:
            raise RuntimeError(f"{name} low-load run failed ({code})")
        service_ns = RunOutput.load(low).requests["service_ns"].to_numpy()
        offered = 3e9 / float(np.mean(service_ns))
        high = Path(tmp) / "high"
        cmd = service_command(name, offered, 1, high, data=data, threads=1, warmup=2)
        cmd[cmd.index("--seconds") : cmd.index("--seconds") + 2] = ["--requests", str(n)]
        code, _ = run_pinned(cmd, cpu)
        if code:
            raise RuntimeError(f"{name} overload run failed ({code})")
        frame = RunOutput.load(high).requests
        span_s = (frame["end_ns"].max() - frame["start_ns"].min()) / 1e9
    p50, p99 = np.percentile(service_ns, [50, 99])
    return {
        "max_rps": len(frame) / span_s,
        "p50_ms": p50 / 1e6,
        "p99_ms": p99 / 1e6,
        "rss_mb": rss_kib / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", type=int, default=1, help="the one CPU to run on")
    parser.add_argument("--only", action="append", choices=sorted(SERVICES))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    print(
        f"{'service':10} {'paper':9} {'max RPS':>9} {'svc p50':>10} {'svc p99':>10} "
        f"{'our QoS':>9} {'paper QoS':>9} {'p99/pQoS':>8} {'RSS MB':>7} {'paper GB':>8}"
    )
    for name in args.only or list(SERVICES):
        spec = SERVICES[name]
        r = bench(name, args.cpu, args.data)
        print(
            f"{name:10} {spec.paper_name:9} {r['max_rps']:9.1f} {r['p50_ms']:8.3f}ms "
            f"{r['p99_ms']:8.3f}ms {spec.qos_ns / 1e6:7.1f}ms {spec.paper_qos_ns / 1e6:7.1f}ms "
            f"{r['p99_ms'] * 1e6 / spec.paper_qos_ns:8.3f} {r['rss_mb']:7.0f} "
            f"{PAPER_CAPACITY_GB[name]:8.1f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
