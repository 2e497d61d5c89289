#!/usr/bin/env python3
"""A stand-in for gem5.opt in unit tests: it takes gem5's command line for pim_fs.py and
check_gem5.py and leaves what gem5 would (m5out/stats.txt in gem5's text format, the
guest's results.tar, the console, the checkpoint folder), without simulating anything.

Behaviour per run, on command: $FAKE_GEM5_PLAN is a JSON file {"<run id part>": [b1, b2,
...]} giving the behaviour of the 1st, 2nd, ... attempt of any run whose id contains the
key: "ok", "crash" (SIGSEGV), "hang" (sleeps), "fail" (exit 1), "no-results", "sim-limit".
Attempts are counted in $FAKE_GEM5_STATE.  Each app serves ``capacity`` requests per
second (M/M/1): $FAKE_GEM5_CAPACITY (JSON {app: rps}, default 1000).  $FAKE_GEM5_SLEEP
adds host seconds to every restore; every invocation is appended to $FAKE_GEM5_STATE/calls.
"""

import io
import json
import math
import os
import random
import signal
import struct
import sys
import tarfile
import time
from pathlib import Path


def check() -> int:
    report = {"version": "24.0.0.1", "isas": ["X86"],
              "present": ["PimAcpiTable", "PimHpet", "PimLinkRouter"], "missing": []}
    print("PIMCLOUD-GEM5-CHECK " + json.dumps(report))
    return 0


def option(args: list, name: str, default=None):
    return args[args.index(name) + 1] if name in args else default


def behaviour(run_id: str, state: Path) -> str:
    plan_file = os.environ.get("FAKE_GEM5_PLAN")
    plan = json.loads(Path(plan_file).read_text()) if plan_file else {}
    counter = state / f"attempts-{run_id}"
    attempt = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(attempt))
    for key, steps in plan.items():
        if key in run_id:
            return steps[min(attempt, len(steps)) - 1]
    return "ok"


def stats_text(dumps: int, seconds: float) -> str:
    out = []
    for dump in range(dumps):
        out += ["", "---------- Begin Simulation Statistics ----------",
                f"simSeconds {seconds / dumps:.6f} # Number of seconds simulated (Second)",
                f"simTicks {int(seconds / dumps * 1e12)} # Number of ticks simulated (Tick)",
                f"board.processor.cores0.core.numCycles {1000 * (dump + 1)} "
                "# Number of cpu cycles simulated (Cycle)",
                "", "---------- End Simulation Statistics   ----------"]
    return "\n".join(out) + "\n"


def results_tar(scenario: dict, capacity: dict) -> bytes:
    """Per app: lats.bin + requests.csv from an M/M/1 queue at the offered load."""
    files = {}
    rng = random.Random(scenario["seed"])
    for app, params in scenario["apps"].items():
        rps = params["rps"]
        mu = float(capacity.get(app, 1000.0))
        n = max(50, min(2000, int(rps * scenario["measured_s"])))
        # Past saturation the queue grows: latency rises with the request's position.
        rate = max(mu - rps, mu * 0.01)
        t = 0.0
        records, rows = [], ["request_id,thread,scheduled_ns,start_ns,end_ns,queue_ns,"
                             "service_ns,sojourn_ns"]
        for i in range(n):
            t += rng.expovariate(rps)
            service = rng.expovariate(mu)
            sojourn = rng.expovariate(rate) + (i / rps) * max(0.0, rps / mu - 1)
            sojourn = max(sojourn, service)
            q, s, so = (int((sojourn - service) * 1e9), int(service * 1e9), int(sojourn * 1e9))
            records.append(struct.pack("<QQQ", q, s, so))
            start = int(t * 1e9)
            rows.append(f"{i},0,{start},{start + q},{start + so},{q},{s},{so}")
        files[f"{app}/lats.bin"] = b"".join(records)
        files[f"{app}/requests.csv"] = ("\n".join(rows) + "\n").encode()
    files["decisions.jsonl"] = (json.dumps({"t_ns": 1, "event": "start",
                                            "app": next(iter(scenario["apps"]))}) + "\n").encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def main(argv: list) -> int:
    if any(a.endswith("check_gem5.py") for a in argv):
        return check()
    state = Path(os.environ.get("FAKE_GEM5_STATE", "/tmp/fake-gem5"))
    state.mkdir(parents=True, exist_ok=True)
    with (state / "calls").open("a") as calls:
        calls.write(json.dumps(argv) + "\n")
    outdir = Path(option(argv, "-d", "m5out"))
    outdir.mkdir(parents=True, exist_ok=True)
    checkpoint = Path(option(argv, "--checkpoint-dir"))
    if "boot" in argv:
        time.sleep(float(os.environ.get("FAKE_GEM5_BOOT_SLEEP", "0")))
        checkpoint.mkdir(parents=True, exist_ok=True)
        (checkpoint / "m5.cpt").write_text("[root]\ncurTick=970000000000\n")
        print("pimcloud: exit at tick 970000000000 (1 s host): checkpoint", flush=True)
        return 0
    if not (checkpoint / "m5.cpt").is_file():
        print(f"fatal: no checkpoint in {checkpoint}", file=sys.stderr)
        return 1
    with tarfile.open(option(argv, "--scenario")) as archive:
        scenario = json.load(archive.extractfile("scenario.json"))
    what = behaviour(scenario["run_id"], state)
    time.sleep(float(os.environ.get("FAKE_GEM5_SLEEP", "0")))
    print(f"fake gem5: run {scenario['run_id']}: {what}", flush=True)
    if what == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if what == "hang":
        while True:
            time.sleep(1)
    if what == "fail":
        print("panic: fake failure", file=sys.stderr)
        return 1
    length = scenario["warmup_s"] + scenario["measured_s"]
    tick = 970000000000 + int(length * 1e12)
    if what == "sim-limit":
        print(f"pimcloud: exit at tick {tick} (1 s host): simulate() limit reached", flush=True)
        return 3
    capacity = json.loads(os.environ.get("FAKE_GEM5_CAPACITY", "{}"))
    (outdir / "stats.txt").write_text(stats_text(max(1, math.ceil(length / 0.1)), length))
    (outdir / "board.pc.com_1.device").write_text(
        "pimcloud-scenario-begin uptime_s=1.00\npimcloud-scenario-exit 0 uptime_s=1.30\n"
        "pimcloud-exit uptime_s=1.31\n")
    if what != "no-results":
        (outdir / "results.tar").write_bytes(results_tar(scenario, capacity))
    print(f"pimcloud: exit at tick {tick} (1 s host): m5_exit instruction encountered",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
