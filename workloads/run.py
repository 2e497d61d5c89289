"""Runs a service binary natively (integrated mode) and loads what it wrote."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from pimcloud.paths import build_dir
from pimcloud.workloads.datasets import find_tool
from pimcloud.workloads.harness_args import LaunchArgs, RunArgs
from pimcloud.workloads.latency import RunOutput
from pimcloud.workloads.services import service

DEFAULT_DATA = Path(os.environ.get("PIMCLOUD_WORKLOAD_DATA", build_dir() / "workload-data"))


def service_command(
    name: str,
    rps: float,
    seconds: float,
    out: Path,
    data: Path = DEFAULT_DATA,
    threads: int = 20,
    warmup: int = 200,
    seed: int = 1,
    check_every: int = 0,
    extra: list[str] | None = None,
) -> list[str]:
    spec = service(name)
    if spec.needs_data and not (data / spec.data_set).is_dir():
        raise ValueError(
            f"{name} needs its data set in {data / spec.data_set}; build it with "
            f"`pimcloud workload data --out {data} --only {spec.data_set}`"
        )
    if rps <= 0 or seconds <= 0:
        raise ValueError(f"--rps and --seconds must be > 0 (got {rps}, {seconds})")
    launch = LaunchArgs(program=str(find_tool(spec.binary)), threads=threads, data=str(data))
    run = RunArgs(rps=rps, seconds=seconds, warmup_s=0.0, warmup=warmup, seed=seed,
                  out=str(out), extra=("--check-every", str(check_every)))
    # ``extra`` may hold launch options too (--mode, --opt): given last, they win.
    return [*launch.args(), *run.args(), *(extra or [])]


def run_service(
    name: str,
    rps: float,
    seconds: float,
    out: Path | None = None,
    timeout_s: float | None = None,
    **kwargs: object,
) -> RunOutput:
    """Runs `name` and returns its outputs; raises with the binary's error if it fails."""
    folder = out or Path(tempfile.mkdtemp(prefix=f"pimcloud-{name}-"))
    command = service_command(name, rps, seconds, folder, **kwargs)  # type: ignore[arg-type]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode not in (0, 3):  # 3: ran, but some answers were wrong (in summary)
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")
    return RunOutput.load(folder)
