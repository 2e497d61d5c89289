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
$FAKE_GEM5_BURST (JSON {"seed": S, "from_rps": R}) gives the runs of seed S at R rps or more
a burst: one request in 30 answered a second late, as a run-to-run outlier near a knee.
$FAKE_GEM5_POOL (any value) makes the app's workers one pool: a request waits only when
all of them are busy.
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
    present = ["PimAcpiTable", "PimHpet", "PimLinkRouter"]
    if os.environ.get("FAKE_GEM5_COUNTERS"):  # a gem5 built with the counters
        present.append("PimCounters")
    report = {"version": "24.0.0.1", "isas": ["X86"], "present": present, "missing": [],
              "tracing": not os.environ.get("FAKE_GEM5_FAST")}  # a gem5.fast: no tracing
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
                f"simOps {500000 * (dump + 1)} "
                "# Number of ops (including micro ops) simulated (Count)",
                "", "---------- End Simulation Statistics   ----------"]
    return "\n".join(out) + "\n"


def results_tar(scenario: dict, capacity: dict, extra: dict | None = None) -> bytes:
    """Per app: lats.bin + requests.csv from an M/M/1 queue at the offered load."""
    files = {}
    rng = random.Random(scenario["seed"])
    burst = json.loads(os.environ.get("FAKE_GEM5_BURST", "{}"))
    pool = bool(os.environ.get("FAKE_GEM5_POOL"))
    for app, params in scenario["apps"].items():
        rps = params["rps"]
        bursts = burst.get("seed") == scenario["seed"] and rps >= burst.get("from_rps", 0)
        mu = float(capacity.get(app, 1000.0))
        command = params.get("command") or []
        workers = int(command[command.index("--threads") + 1]) if "--threads" in command else 1
        n = max(50, min(2000, int(rps * scenario["measured_s"])))
        # Past saturation the queue grows: latency rises with the request's position.
        rate = max(mu - rps, mu * 0.01)
        t = 0.0
        records, rows = [], ["request_id,thread,scheduled_ns,start_ns,end_ns,queue_ns,"
                             "service_ns,sojourn_ns"]
        for i in range(n):
            t += rng.expovariate(rps)
            # M/M/1 FCFS: a wait only behind a busy server (probability rps / mu), then
            # Exp(mu - rps); wait + service is the Exp(mu - rps) sojourn. With
            # $FAKE_GEM5_POOL the server is the app's workers together: a request waits
            # only when all are busy (roughly (rps / mu) ^ workers), else starts at once,
            # as at an idle worker (what the characterisation takes for a hand-over).
            service = rng.expovariate(mu)
            busy = min(1.0, rps / mu) ** (workers if pool else 1)
            wait = rng.expovariate(rate) if rng.random() < busy else 0.0
            wait += (i / rps) * max(0.0, rps / mu - 1)
            sojourn = wait + service + (1.0 if bursts and i % 30 == 0 else 0.0)
            q, s, so = (int((sojourn - service) * 1e9), int(service * 1e9), int(sojourn * 1e9))
            records.append(struct.pack("<QQQ", q, s, so))
            start = int(t * 1e9)
            rows.append(f"{i},0,{start},{start + q},{start + so},{q},{s},{so}")
        if "--early-stop-qos-ms" in command:
            # The harness's early stop, roughly: a point whose p99 misses the target is
            # cut after a third of its requests, with the verdict in summary.json.
            qos_ns = float(command[command.index("--early-stop-qos-ms") + 1]) * 1e6
            sojourns = sorted(struct.unpack("<QQQ", r)[2] for r in records)
            miss = sojourns[int(0.99 * (len(sojourns) - 1))] > qos_ns
            if miss:
                keep = max(1, len(records) // 3)
                records, rows = records[:keep], rows[:keep + 1]
            files[f"{app}/summary.json"] = json.dumps({"early_stop": {
                "verdict": "miss" if miss else "undecided", "decided": len(records),
                "late": 0, "bound": 0.0, "confidence": 0.99, "qos_ns": qos_ns,
                "discarded": 0}}).encode()
        files[f"{app}/lats.bin"] = b"".join(records)
        files[f"{app}/requests.csv"] = ("\n".join(rows) + "\n").encode()
    files["decisions.jsonl"] = (json.dumps({"t_ns": 1, "event": "start",
                                            "app": next(iter(scenario["apps"]))}) + "\n").encode()
    files.update(extra or {})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


STEPS = 10  # a preemptible fake run: ten steps of simulated time, one stats dump each
OPS_A_STEP = 1000  # its cores' micro-ops a step (simOps counts from this process's start)
PROCESS = f"{os.getpid()}-{time.time_ns()}"  # as pim_fs.py's Progress.process


def save_progress(folder: Path, outdir: Path, tick: int, from_tick: int, state: dict,
                  offsets: dict, host_s: float) -> None:
    """As pim_fs.py Progress.maybe_save: segment (what this attempt wrote since its last
    progress checkpoint), then the checkpoint, then the older checkpoint goes."""
    segment = folder / "segments" / f".partial-{tick}"
    segment.mkdir(parents=True, exist_ok=True)
    for name in ("stats.txt", "board.pc.com_1.device"):
        data = (outdir / name).read_bytes() if (outdir / name).is_file() else b""
        (segment / name).write_bytes(data[offsets.get(name, 0):])
        offsets[name] = len(data)
    (segment / "segment.json").write_text(json.dumps(
        {"from_tick": from_tick, "to_tick": tick, "process": PROCESS, "host_seconds": host_s}))
    segment.rename(folder / "segments" / str(tick))
    partial = folder / f".partial-ckpt-{tick}"
    partial.mkdir()
    (partial / "m5.cpt").write_text(f"[root]\ncurTick={tick}\nfakeState={json.dumps(state)}\n")
    partial.rename(folder / f"ckpt-{tick}")
    for old in folder.glob("ckpt-*"):
        if old.name != f"ckpt-{tick}":
            for file in old.iterdir():
                file.unlink()
            old.rmdir()


def hog_memory() -> None:
    """Hold 256 MiB of touched memory until stopped (a minute at most)."""
    held = b"\x01" * (256 << 20)
    time.sleep(60)
    print(f"fake gem5: nobody stopped me ({len(held)} B)", flush=True)


def stepped_restore(argv: list, scenario: dict, outdir: Path, checkpoint: Path,
                    what: str) -> int:
    """A run in STEPS steps (FAKE_GEM5_STEP_SLEEP host seconds each) with progress
    checkpoints; "die@K" SIGKILLs this attempt after step K's dump, before its checkpoint (the
next attempt does step K again), "hog@K" takes 256 MiB
    after step K (and its progress checkpoint) and waits to be stopped, "hog-now" does so
    before its first step (gem5's O3 leaks in small), "ok-no-ops" dumps no simOps. The guest's state
    (steps done) travels in the checkpoint, so resumed steps are neither lost nor
    repeated; results.tar lists them (steps.txt)."""
    saved = (checkpoint / "m5.cpt").read_text()
    tick = int(saved.split("curTick=")[1].split()[0])
    state = (json.loads(saved.split("fakeState=")[1].splitlines()[0])
             if "--resume" in argv else {"steps": [], "start_tick": tick})
    folder = Path(option(argv, "--progress-dir")) if "--progress-dir" in argv else None
    every = float(option(argv, "--progress-every", "1800"))
    die_at = int(what.split("@")[1]) if what.startswith("die@") else None
    hog_at = 0 if what == "hog-now" else (
        int(what.split("@")[1]) if what.startswith("hog@") else None)
    if hog_at == 0:
        hog_memory()
    length = scenario["warmup_s"] + scenario["measured_s"]
    step_ticks = int(length * 1e12 / STEPS)
    offsets: dict = {}
    last, from_tick, ops = time.monotonic(), tick, 0
    for step in range(len(state["steps"]) + 1, STEPS + 1):
        time.sleep(float(os.environ.get("FAKE_GEM5_STEP_SLEEP", "0.02")))
        state["steps"].append(step)
        tick += step_ticks
        ops += OPS_A_STEP
        with (outdir / "stats.txt").open("a") as stats:
            stats.write(f"\n---------- Begin Simulation Statistics ----------\n"
                        f"simTicks {step_ticks} # ticks\nfake.step {step} # step\n"
                        + (f"simOps {ops} # ops\n" if what != "ok-no-ops" else "")
                        + "---------- End Simulation Statistics   ----------\n")
        with (outdir / "board.pc.com_1.device").open("a") as console:
            console.write(f"pimcloud-run fake step {step}\n")
        if step == die_at:  # step K done and dumped, not saved: the next attempt redoes it
            os.kill(os.getpid(), signal.SIGKILL)
        if folder is not None and time.monotonic() - last >= every:
            save_progress(folder, outdir, tick, from_tick, state, offsets,
                          round(time.monotonic() - last, 3))
            last, from_tick = time.monotonic(), tick
        if step == hog_at:
            hog_memory()
    with (outdir / "board.pc.com_1.device").open("a") as console:
        console.write("pimcloud-scenario-exit 0 uptime_s=1.30\npimcloud-exit uptime_s=1.31\n")
    capacity = json.loads(os.environ.get("FAKE_GEM5_CAPACITY", "{}"))
    steps = ("\n".join(map(str, state["steps"])) + "\n").encode()
    (outdir / "results.tar").write_bytes(results_tar(scenario, capacity, {"steps.txt": steps}))
    print(f"pimcloud: exit at tick {tick} (1 s host): m5_exit instruction encountered",
          flush=True)
    return 0


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
        # The init's seeding of the guest's CRNG: FAKE_GEM5_CRNG=not-ready, or absent (an
        # image without pimcloud-rng-seed).
        crng = os.environ.get("FAKE_GEM5_CRNG", "ready")
        (outdir / "board.pc.com_1.device").write_text(
            "pimcloud-init backend=gem5 share=none uptime_s=0.57\n"
            + (f"pimcloud-rng crng={crng} was_ready=0 seed=1\n" if crng != "absent" else "")
            + "pimcloud-ready uptime_s=0.61\n")
        print("pimcloud: exit at tick 970000000000 (1 s host): checkpoint", flush=True)
        return 0
    if not (checkpoint / "m5.cpt").is_file():
        print(f"fatal: no checkpoint in {checkpoint}", file=sys.stderr)
        return 1
    if "setup" in argv:
        # The app set's services load: half a simulated second after the boot's tick.
        save = Path(option(argv, "--save-dir"))
        save.mkdir(parents=True, exist_ok=True)
        with tarfile.open(option(argv, "--scenario")) as archive:
            script = archive.extractfile("run.sh").read().decode()
        if "m5 checkpoint" not in script:
            print("fake gem5: the set-up scenario never asks for a checkpoint", file=sys.stderr)
            return 3
        with (state / "setups-from").open("a") as starts:
            starts.write(str(checkpoint) + "\n")
        # $FAKE_GEM5_SETUP_DIE: a set-up with progress checkpoints saves one half-way and
        # is killed there, once (a session's end); the next attempt names it.
        folder = Path(option(argv, "--progress-dir")) if "--progress-dir" in argv else None
        if (folder is not None and os.environ.get("FAKE_GEM5_SETUP_DIE")
                and not list(folder.glob("ckpt-*"))):
            save_progress(folder, outdir, 1220000000000, 970000000000, {"setup": "half"}, {},
                          7.0)
            os.kill(os.getpid(), signal.SIGKILL)
        tick = 1470000000000
        (save / "m5.cpt").write_text(f"[root]\ncurTick={tick}\n")
        with (state / "setups").open("a") as setups:
            setups.write(str(save) + "\n")
        print(f"pimcloud: exit at tick {tick} (1 s host): checkpoint", flush=True)
        return 0
    with tarfile.open(option(argv, "--scenario")) as archive:
        scenario = json.load(archive.extractfile("scenario.json"))
    what = behaviour(scenario["run_id"], state)
    if what.startswith(("die@", "hog")) or "--progress-dir" in argv:
        return stepped_restore(argv, scenario, outdir, checkpoint, what)
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
    saved = (checkpoint / "m5.cpt").read_text()
    restored = int(saved.split("curTick=")[1]) if "curTick=" in saved else 970000000000
    tick = restored + int(length * 1e12)
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
