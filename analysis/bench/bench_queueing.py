"""Speed of the M/G/k model (analysis/queueing.py): a study report draws every cell's
curve at 86 utilisations of 100,000 simulated requests, and finds two max loads by
bisection, so the model's time a curve is most of `pimcloud study report`'s.

Prints, for a 4-worker and a 16-worker cell with every term of the model on (a serial
section, the harness's overhead, the generator, hand-overs, lateness), the CPU seconds
of one p99, of one Fig. 2 curve and of one max load.

    .venv/bin/python analysis/bench/bench_queueing.py [--requests 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from pimcloud.analysis.characterisation import CURVE_UTILISATIONS
from pimcloud.analysis.queueing import DEFAULT_REQUESTS, MGk


def cell(servers: int, requests: int, seed: int = 3) -> MGk:
    """A cell like the study's: 400 sampled requests of ~1.7 ms (a lognormal spread)."""
    rng = np.random.default_rng(seed)
    service = rng.lognormal(np.log(1.7e6), 0.4, 400)
    return MGk(service, servers, requests=requests,
               serial_ns=service * rng.uniform(0.0, 0.2, 400), overhead_ns=20e3,
               generator_ns=9e3, handover_ns=rng.uniform(5e3, 9e3, 50),
               lateness_ns=rng.uniform(0.0, 4e3, 300))


def cpu_seconds(work: object, repeat: int) -> float:
    """The least CPU time of ``repeat`` calls (the others lost time to other processes'
    cache use, not to the model)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for servers in (4, 16):
        queue = cell(servers, args.requests)
        one = cpu_seconds(lambda q=queue: q.p99_ns(0.8 * q.capacity_rps), args.repeat)
        curve = cpu_seconds(lambda q=queue: q.curve(CURVE_UTILISATIONS), 1)
        knee = cpu_seconds(lambda q=queue: q.max_load(2.5 * q.mean_service_ns), 1)
        print(f"{servers:2d} workers, {args.requests:,} requests: a p99 {one * 1e3:.0f} ms, "
              f"a curve ({len(CURVE_UTILISATIONS)} points) {curve:.1f} s, "
              f"a max load {knee:.2f} s (CPU)")


if __name__ == "__main__":
    main()
