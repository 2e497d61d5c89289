"""Instructions a service's start-up costs a worker, natively, counted by callgrind.

A gem5 set-up runs a cell's services on the atomic cores up to their app checkpoint, and
its host time follows the instructions the guest executes there. Most services load their
data once; translate starts one Apertium pipeline (11 processes, each loading its
dictionaries) a worker, or, with its prefork (the default), one pipeline of which each
further worker's is a forked copy. The service runs under `valgrind --tool=callgrind
--trace-children=yes` with one worker and with two, up to its ready file (the point a
set-up takes its app checkpoint), where `callgrind_control` dumps every process's costs;
the difference is one more worker's start-up, in user-space instructions (the guest
kernel's page faults and reads add to it in gem5). Costs are also dumped on entering fork,
so that a forked copy counts from there, not from its parent's start. The service
registry's `startup_instructions` and `worker_startup_instructions`
(workloads/services.py) take the figures, and the plans price a set-up by them.

    .venv/bin/python workloads/bench/bench_startup.py [--only translate ...]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from pimcloud.workloads.run import DEFAULT_DATA, service_command
from pimcloud.workloads.services import SERVICES

TOTALS = re.compile(r"^totals:\s+(\d+)", re.MULTILINE)
# The dumps up to the ready point: on entering fork, and the one asked for there.
UP_TO_READY = re.compile(r"^desc: Trigger: (--dump-before=fork|dump ready)$", re.MULTILINE)


def instructions(name: str, workers: int, data: Path, timeout_s: float = 1800) -> int:
    """User-space instructions of the service's whole process tree, started with
    ``workers`` workers, up to its ready file."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ready, start = folder / "ready", folder / "start"
        cmd = service_command(name, 1.0, 1.0, folder / "out", data=data, threads=workers,
                              warmup=0)
        cmd[cmd.index("--seconds") : cmd.index("--seconds") + 2] = ["--requests", "2"]
        cmd += ["--ready-file", str(ready), "--start-file", str(start)]
        service = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "-q", "--trace-children=yes",
             "--dump-before=fork", f"--callgrind-out-file={folder}/cg.%p", *cmd],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout_s
        while not ready.exists():
            if service.poll() is not None or time.monotonic() > deadline:
                service.kill()
                raise RuntimeError(f"{name} with {workers} worker(s) never got ready "
                                   f"({service.returncode}): {service.communicate()[1][-2000:]}")
            time.sleep(0.2)
        subprocess.run(["callgrind_control", "--dump=ready"], capture_output=True, check=True)
        time.sleep(2)  # each process dumps at its next scheduling point
        start.touch()
        _, err = service.communicate(timeout=timeout_s)
        if service.returncode not in (0, 3):  # 3: it ran, some answers were wrong (summary)
            raise RuntimeError(f"{name} with {workers} worker(s) failed "
                               f"({service.returncode}): {err[-2000:]}")
        parts = [f.read_text(errors="replace") for f in folder.glob("cg.*.*")]
        return sum(int(m.group(1)) for text in parts if UP_TO_READY.search(text)
                   for m in TOTALS.finditer(text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(SERVICES), default=None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        parser.error("valgrind is missing: install the Debian package valgrind")
    print(f"{'service':<10} {'1 worker':>15} {'2 workers':>15} {'a worker':>15}")
    for name in args.only or sorted(SERVICES):
        one, two = instructions(name, 1, args.data), instructions(name, 2, args.data)
        print(f"{name:<10} {one:>15,} {two:>15,} {two - one:>15,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
