"""Instructions a service's start-up costs a worker, natively, counted by callgrind.

A gem5 set-up runs a cell's services on the atomic cores up to their app checkpoint, and
its host time follows the instructions the guest executes there. Most services load their
data once; translate starts one Apertium pipeline (11 processes, each loading its
dictionaries) a worker. The service runs twice under `valgrind --tool=callgrind
--trace-children=yes`, with one worker and with two, serving two requests; the
difference is one worker's start-up, in user-space instructions (the guest kernel's page
faults and reads add to it in gem5). The service registry's `startup_instructions`
(workloads/services.py) takes the figure, and the plans price a set-up by it.

    .venv/bin/python workloads/bench/bench_startup.py [--only translate ...]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from pimcloud.workloads.run import DEFAULT_DATA, service_command
from pimcloud.workloads.services import SERVICES

TOTALS = re.compile(r"^totals:\s+(\d+)", re.MULTILINE)


def instructions(name: str, workers: int, data: Path) -> int:
    """User-space instructions of the service's whole process tree, started with
    ``workers`` workers and serving two requests."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cmd = service_command(name, 1.0, 1.0, folder / "out", data=data, threads=workers,
                              warmup=0)
        cmd[cmd.index("--seconds") : cmd.index("--seconds") + 2] = ["--requests", "2"]
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "-q", "--trace-children=yes",
             f"--callgrind-out-file={folder}/cg.%p", *cmd],
            capture_output=True, text=True)
        if done.returncode not in (0, 3):  # 3: it ran, some answers were wrong (summary)
            raise RuntimeError(f"{name} with {workers} worker(s) failed ({done.returncode}): "
                               f"{done.stderr[-2000:]}")
        return sum(int(m.group(1)) for f in folder.glob("cg.*")
                   for m in TOTALS.finditer(f.read_text(errors="replace")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(SERVICES), default=None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        parser.error("valgrind is missing: install the Debian package valgrind")
    print(f"{'service':<10} {'1 worker':>15} {'2 workers':>15} {'a worker':>15}")
    for name in args.only or sorted(SERVICES):
        one, two = instructions(name, 1, args.data), instructions(name, 2, args.data)
        print(f"{name:<10} {one:>15,} {two:>15,} {two - one:>15,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
