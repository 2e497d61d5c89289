"""Simulation speed per backend, phase and topology: what ``campaign plan`` estimates from.

A run costs ``overhead_s + host_per_sim * simulated seconds`` of host time.  Two tables:

- ``runs/speeds.toml`` (in git): starting figures, each saying where it comes from;
- ``runs/out/speeds.json`` (``$PIMCLOUD_SPEEDS``): measured, updated by the runner from
  every finished run (the last ``KEEP`` samples per key; a line fitted through them).

Measured figures win.  Keys are ``backend/phase/topology`` with phase ``boot`` (to the
checkpoint) or ``run`` (restore + scenario); ``backend/phase/*`` is the fallback.
"""

from __future__ import annotations

import fcntl
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pimcloud.atomic import atomic_write_text

from .layout import DEFAULT_OUT

DEFAULTS = Path(__file__).resolve().parent / "speeds.toml"
KEEP = 20


def measured_path() -> Path:
    configured = os.environ.get("PIMCLOUD_SPEEDS")
    return Path(configured) if configured else DEFAULT_OUT / "speeds.json"


@dataclass(frozen=True)
class Speed:
    overhead_s: float
    host_per_sim: float
    source: str  # "measured (N runs)" or the defaults file's note

    def host_seconds(self, simulated_s: float) -> float:
        return self.overhead_s + self.host_per_sim * simulated_s


def _defaults() -> dict[str, dict[str, object]]:
    with DEFAULTS.open("rb") as stream:
        raw = tomllib.load(stream)
    table: dict[str, dict[str, object]] = {}
    for backend, phases in raw.items():
        for phase, topologies in phases.items():
            for topology, entry in topologies.items():
                table[f"{backend}/{phase}/{topology}"] = entry
    return table


def _measured() -> dict[str, list[list[float]]]:
    try:
        data: dict[str, list[list[float]]] = json.loads(measured_path().read_text())
        return data
    except (OSError, ValueError):
        return {}


def fit(samples: list[list[float]], default_overhead: float) -> tuple[float, float]:
    """(overhead, host per simulated second) through samples of (simulated, host) seconds:
    least squares when the runs differ in length, else the defaults' overhead kept."""
    xs = [s for s, _ in samples]
    ys = [h for _, h in samples]
    n = len(samples)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    if n >= 2 and spread > 1e-12 * max(1.0, mean_x**2):
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
        overhead = mean_y - slope * mean_x
        if slope > 0 and overhead >= 0:
            return overhead, slope
    overhead = min(default_overhead, mean_y)
    return overhead, (mean_y - overhead) / mean_x if mean_x > 0 else 0.0


def speed_of(backend: str, phase: str, topology: str) -> Speed:
    name = Path(topology).stem
    defaults = _defaults()
    default = (defaults.get(f"{backend}/{phase}/{name}")
               or defaults.get(f"{backend}/{phase}/*")
               or {"overhead_s": 0.0, "host_per_sim": 1.0, "note": "no figure: guessed 1:1"})
    base_overhead = float(default.get("overhead_s", 0.0))  # type: ignore[arg-type]
    samples = _measured().get(f"{backend}/{phase}/{name}")
    if samples:
        overhead, slope = fit(samples, base_overhead)
        return Speed(overhead, slope, f"measured ({len(samples)} runs)")
    return Speed(base_overhead, float(default["host_per_sim"]),  # type: ignore[arg-type]
                 str(default.get("note", "default")))


def record_speed(backend: str, phase: str, topology: str, simulated_s: float,
                 host_s: float) -> None:
    """Add one finished run's figures (under a lock: many workers finish at once)."""
    if simulated_s <= 0 or host_s <= 0:
        return
    path = measured_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f".{path.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _measured()
        key = f"{backend}/{phase}/{Path(topology).stem}"
        samples = data.setdefault(key, [])
        samples.append([round(simulated_s, 6), round(host_s, 3)])
        data[key] = samples[-KEEP:]
        atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
