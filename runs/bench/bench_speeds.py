"""Refresh the speeds ``campaign plan`` estimates from, and print them.

    GEM5=/path/to/gem5.opt python runs/bench/bench_speeds.py [--topology paper]
        [--lengths 20ms,60ms] [--mem-divisor 8] [--out DIR]

Makes a small gem5 campaign on the topology: kvstore alone at two measured lengths, with
4 and 8 workers (so the detailed speed is fitted against the simulated length and the
busy cores).  The runner records every boot, app checkpoint and run it makes in the
measured speed table (runs/out/speeds.json, or $PIMCLOUD_SPEEDS); this prints the fitted
figures the plan will use, with the host time each phase took here.  Resumable: run it
again after a stop and it makes only what is missing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from pimcloud.runs.campaign import prepare_campaign
from pimcloud.runs.cli import execute
from pimcloud.runs.layout import DEFAULT_OUT
from pimcloud.runs.plan import SETUP_SIMULATED_S
from pimcloud.runs.speeds import speed_of

SPEC = """
name = "bench-speeds"
description = "kvstore alone: detailed speed against simulated length and busy cores"
[system]
topology = "{topology}"
backend = "gem5"
[apps.kvstore]
qos = "1ms"
max_rps_host_core = 100000
max_rps_pim_core = 40000
options = {{ keys = "20000" }}
[scenario]
apps = ["kvstore"]
rps = 5000
manager = "none"
placement = "cc"
[axes]
threads = [4, 8]
[length]
warmup = "5ms"
measured = "{measured}"
[gem5]
mem_divisor = {mem_divisor}
[limits]
host_time = "6h"
memory = "16GiB"
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topology", default="paper")
    parser.add_argument("--lengths", default="20ms,60ms",
                        help="measured lengths, comma-separated (simulated)")
    parser.add_argument("--mem-divisor", type=int, default=8)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT / "bench-speeds")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    started = time.monotonic()
    for measured in args.lengths.split(","):
        with tempfile.TemporaryDirectory() as folder:
            spec = Path(folder) / f"bench-speeds-{measured}.toml"
            spec.write_text(SPEC.format(topology=args.topology, measured=measured,
                                        mem_divisor=args.mem_divisor))
            campaign = prepare_campaign(spec, args.out / measured)
            if execute(campaign, "local", args.jobs, live=False) != 0:
                print(f"some runs of {measured} failed: see {args.out / measured}",
                      file=sys.stderr)
                return 1
    print(f"\nmade in {time.monotonic() - started:.0f} s host time; the plan's speeds now:")
    for phase, simulated in (("boot", 1.0), ("setup", SETUP_SIMULATED_S),
                             ("restore", 0.1)):
        speed = speed_of("gem5", phase, args.topology)
        busy = (f", {speed.per_busy_core:+.4g} x per busy core from {speed.busy_reference:g}"
                if speed.per_busy_core else "")
        print(f"  gem5/{phase}/{args.topology}: {speed.overhead_s:.0f} s + "
              f"{speed.host_per_sim:.0f} x simulated s{busy} [{speed.source}]; "
              f"{simulated:g} s simulated -> {speed.host_seconds(simulated):.0f} s host")
    return 0


if __name__ == "__main__":
    sys.exit(main())
