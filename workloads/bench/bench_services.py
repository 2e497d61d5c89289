"""Native single-core figures of every service: max RPS and service-time p50/p99.

For each service: a low-load run (one worker, one core) gives the service-time
distribution; an overload run (one worker, offered 3x what it can serve) gives max RPS as
completions over the busy span. Printed beside the paper's Table II QoS targets, as
p99 service time / paper QoS.

    .venv/bin/python workloads/bench/bench_services.py [--cpu 1] [--only kvstore ...]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from pimcloud.workloads.latency import RunOutput
from pimcloud.workloads.run import DEFAULT_DATA, service_command
from pimcloud.workloads.services import SERVICES

# (low-load RPS, measured requests) per service; speech and translate are slow: fewer.
PLAN = {
    "kvstore": (200, 2000),
    "oltp": (100, 1000),
    "imgdnn": (100, 1000),
    "search": (100, 1000),
    "translate": (10, 200),
    "speech": (1, 20),
}


def run_pinned(command: list[str], cpu: int) -> int:
    """Runs on one CPU; returns the exit code."""
    done = subprocess.run(["taskset", "-c", str(cpu), *command], capture_output=True)
    return done.returncode


def bench(name: str, cpu: int, data: Path) -> dict[str, float]:
    rps, n = PLAN[name]
    with tempfile.TemporaryDirectory() as tmp:
        low = Path(tmp) / "low"
        cmd = service_command(name, rps, 1, low, data=data, threads=1, warmup=max(2, n // 20))
        cmd[cmd.index("--seconds") : cmd.index("--seconds") + 2] = ["--requests", str(n)]
        code = run_pinned(cmd, cpu)
        if code:
            raise RuntimeError(f"{name} low-load run failed ({code})")
        service_ns = RunOutput.load(low).requests["service_ns"].to_numpy()
        offered = 3e9 / float(np.mean(service_ns))
        high = Path(tmp) / "high"
        cmd = service_command(name, offered, 1, high, data=data, threads=1, warmup=2)
        cmd[cmd.index("--seconds") : cmd.index("--seconds") + 2] = ["--requests", str(n)]
        code = run_pinned(cmd, cpu)
        if code:
            raise RuntimeError(f"{name} overload run failed ({code})")
        frame = RunOutput.load(high).requests
        span_s = (frame["end_ns"].max() - frame["start_ns"].min()) / 1e9
    p50, p99 = np.percentile(service_ns, [50, 99])
    return {
        "max_rps": len(frame) / span_s,
        "p50_ms": p50 / 1e6,
        "p99_ms": p99 / 1e6,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", type=int, default=1, help="the one CPU to run on")
    parser.add_argument("--only", action="append", choices=sorted(SERVICES))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    print(
        f"{'service':10} {'paper':9} {'max RPS':>9} {'svc p50':>10} {'svc p99':>10} "
        f"{'our QoS':>9} {'paper QoS':>9} {'p99/pQoS':>8}"
    )
    for name in args.only or list(SERVICES):
        spec = SERVICES[name]
        r = bench(name, args.cpu, args.data)
        print(
            f"{name:10} {spec.paper_name:9} {r['max_rps']:9.1f} {r['p50_ms']:8.3f}ms "
            f"{r['p99_ms']:8.3f}ms {spec.qos_ns / 1e6:7.1f}ms {spec.paper_qos_ns / 1e6:7.1f}ms "
            f"{r['p99_ms'] * 1e6 / spec.paper_qos_ns:8.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
