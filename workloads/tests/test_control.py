"""The resource manager's two channels into a running service: replication and load steps."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from pimcloud.workloads.latency import read_live
from pimcloud.workloads.run import service_command


def ask(control: Path, me: Path, command: str, timeout_s: float = 20) -> str:
    """Sends one command to the harness's control socket and returns its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind(str(me))
        s.settimeout(timeout_s)
        deadline = time.monotonic() + timeout_s
        while not control.exists():
            assert time.monotonic() < deadline, "the harness never bound its control socket"
            time.sleep(0.05)
        s.sendto(command.encode(), str(control))
        return s.recv(512).decode()


def test_imgdnn_replicates_its_weights_on_request(
    tmp_path: Path, data_dir: Path, need: Callable[[str], Path]
) -> None:
    need("pimcloud-imgdnn")
    control = tmp_path / "ctl"
    command = service_command(
        "imgdnn",
        100,
        3,
        tmp_path / "out",
        data=data_dir,
        threads=2,
        warmup=10,
        extra=["--control-socket", str(control)],
    )
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        assert ask(control, tmp_path / "a", "replicate 0") == "ok replicate 0"
        assert ask(control, tmp_path / "b", "replicate 99").startswith("error: replicate 99")
        assert ask(control, tmp_path / "c", "bogus").startswith("error: unknown command")
        assert proc.wait(timeout=120) == 0
    live = read_live(tmp_path / "out" / "live.jsonl")
    assert live[-1]["replicas"] == [0]


def test_load_follows_a_schedule_of_rps_steps(tmp_path: Path, need: Callable[[str], Path]) -> None:
    need("pimcloud-kvstore")
    command = service_command("kvstore", 1, 3, tmp_path, threads=2, warmup=0, extra=[])
    command[command.index("--rps") : command.index("--rps") + 2] = [
        "--schedule",
        "0:100,1.5:800",
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    live = read_live(tmp_path / "live.jsonl")
    low = [x["rps"] for x in live if 0.3e9 < x["t_ns"] - live[0]["t_ns"] < 1.2e9]
    high = [x["rps"] for x in live if 1.8e9 < x["t_ns"] - live[0]["t_ns"] < 2.8e9]
    assert low and high
    assert 50 < sum(low) / len(low) < 200
    assert 500 < sum(high) / len(high) < 1100
    assert {x["offered_rps"] for x in live} >= {100.0, 800.0}
