"""A synthetic campaign folder in the layout runs/ writes, for report and CLI tests.

Latencies come from a single-server queue (Lindley's recursion) fed with Poisson
arrivals, so tail latency really rises with load and the knee falls where the
service rate says; nothing here is a measurement of the simulated server.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pimcloud.analysis.results import write_lats_bin
from pimcloud.analysis.synthetic import server_stats_text

# service time (ns) of one request per app and core type: the PIM core is faster for
# "sphinx" and slower for "imgdnn", as the paper's apps differ in preference.
SERVICE_NS = {("sphinx", "host"): 800_000, ("sphinx", "pim"): 500_000,
              ("imgdnn", "host"): 400_000, ("imgdnn", "pim"): 700_000}
QOS_NS = {"sphinx": 5_000_000, "imgdnn": 3_000_000}


def queue_requests(rng: np.random.Generator, rps: float, service_ns: float, seconds: float,
                   start_ns: int = 0) -> pd.DataFrame:
    """Requests through one FIFO server: Poisson arrivals, exponential service."""
    count = int(rps * seconds)
    scheduled = start_ns + np.cumsum(rng.exponential(1e9 / rps, count)).astype(np.int64)
    service = rng.exponential(service_ns, count).astype(np.int64) + 1
    start = np.empty(count, dtype=np.int64)
    free = 0
    for i in range(count):  # Lindley: a request starts when it arrives and the server is free
        start[i] = max(scheduled[i], free)
        free = start[i] + service[i]
    end = start + service
    return pd.DataFrame({
        "request_id": np.arange(count), "thread": 0, "scheduled_ns": scheduled,
        "start_ns": start, "end_ns": end, "queue_ns": start - scheduled,
        "service_ns": service, "sojourn_ns": end - scheduled,
    })


def write_run(root: Path, run_id: str, record: dict[str, object],
              requests: dict[str, pd.DataFrame], table: bool = True) -> Path:
    run = root / "runs" / run_id
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": run_id, **record}))
    for app, frame in requests.items():
        folder = run / "results" / app
        folder.mkdir(parents=True)
        write_lats_bin(folder / "lats.bin", frame)
        if table:
            frame.to_csv(folder / "requests.csv", index=False)
    return run


@pytest.fixture(scope="session")
def demo_campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("campaign")
    rng = np.random.default_rng(7)
    for app in ("sphinx", "imgdnn"):
        for system in ("host", "pim"):
            for rps in (200, 600, 1000, 1400, 1800):
                service = SERVICE_NS[(app, system)]
                frame = queue_requests(rng, rps, service, seconds=2.0)
                write_run(root, f"{app}-{system}-{rps}",
                          {"app": app, "system": system, "rps": rps, "qos_ns": QOS_NS[app]},
                          {app: frame}, table=(rps != 200))
    for manager in ("default", "pimcloud"):
        for load in (0.2, 0.5):
            apps = {"sphinx": 1600 * load, "imgdnn": 1600 * (0.6 - load / 2)}
            frames = {app: queue_requests(rng, rps, SERVICE_NS[(app, "pim")] / 3, 2.0)
                      for app, rps in apps.items()}
            run = write_run(root, f"mix-{manager}-{load}",
                            {"apps": list(apps), "mix": "sphinx+imgdnn", "manager": manager,
                             "load": load, "rps": apps, "qos_ns": QOS_NS}, frames)
            log = [
                {"t_ns": 0, "event": "init", "app": "sphinx", "to_cores": [4, 5, 6]},
                {"t_ns": 0, "event": "init", "app": "imgdnn", "to_cores": [0, 1]},
                {"t_ns": 300_000_000, "event": "upsize", "app": "sphinx",
                 "from_cores": [4, 5, 6], "to_cores": [4, 5, 6, 7], "slack": -0.2},
                {"t_ns": 600_000_000, "event": "migrate", "app": "sphinx", "pages_moved": 800},
                {"t_ns": 900_000_000 if manager == "pimcloud" else 1_500_000_000,
                 "event": "converged", "app": "sphinx"},
                # With the board's counters the agent logs a latency estimate per app.
                {"t_ns": 1_000_000_000, "event": "latency-estimate", "app": "sphinx",
                 "to_cores": [4, 5, 6, 7], "values": {"estimate_ns": 120.0, "misses": 500}},
            ]
            (run / "results" / "decisions.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in log))
            (run / "results" / "blackscholes").mkdir()
            # As pimcloud-be writes it: work per 1 s interval, then a final line.
            lines = [{"job": "compute", "t_ns": t, "interval_ns": 10**9, "work": w,
                      "unit": "GFLOP", "final": False} for t, w in
                     ((10**9, 40 * load), (2 * 10**9, 50 * load))]
            lines.append({"job": "compute", "t_ns": 2 * 10**9, "interval_ns": 2 * 10**9,
                          "work": 90 * load, "unit": "GFLOP", "final": True})
            (run / "results" / "blackscholes" / "progress.jsonl").write_text(
                "".join(json.dumps(line) + "\n" for line in lines))
            (run / "m5out").mkdir()
            (run / "m5out" / "stats.txt").write_text(
                server_stats_text(3, seed=len(run.name), host_cpus=2, pim_cpus=2))
    return root
