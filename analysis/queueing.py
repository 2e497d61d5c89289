"""Tail latency predicted from measured service times: an M/G/k queue, simulated.

In the spirit of BigHouse (Meisner et al., ISPASS 2012): a service on k cores with k
workers (the paper's one thread per core) and one FIFO queue in front of them is a k-server
FCFS queue; its arrivals are Poisson (the harness's open loop) and its service times are
drawn from the ones measured in gem5 on that architecture.  The simulation uses common
random numbers, so the predicted p99 rises monotonically with the load and a bisection on
the load finds the max load under QoS exactly for that sample.

What it leaves out, and the direct measurements check: service times that change with the
load (shared caches, memory bandwidth, the OS), and the harness's own thread.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

DEFAULT_REQUESTS = 100_000  # simulated requests per point
DEFAULT_WARMUP = 0.1  # fraction of them dropped at the start
PERCENTILE = 99.0


@dataclass(frozen=True)
class MGk:
    """A k-server FCFS queue over an empirical service-time distribution (ns)."""

    service_ns: np.ndarray
    servers: int
    requests: int = DEFAULT_REQUESTS
    seed: int = 1

    def __post_init__(self) -> None:
        if self.servers < 1:
            raise ValueError(f"servers = {self.servers}: a queue needs at least one")
        if len(self.service_ns) == 0:
            raise ValueError("no service times: measure the service first")
        rng = np.random.default_rng(self.seed)
        # Common random numbers: one draw of unit gaps and services for every load.
        object.__setattr__(self, "_gaps", rng.exponential(1.0, self.requests))
        draw = rng.integers(0, len(self.service_ns), self.requests)
        object.__setattr__(self, "_services",
                           np.asarray(self.service_ns, dtype=float)[draw])

    @property
    def mean_service_ns(self) -> float:
        return float(np.mean(self.service_ns))

    @property
    def capacity_rps(self) -> float:
        """The load at which the servers would be busy all the time."""
        return self.servers / (self.mean_service_ns * 1e-9)

    def sojourn_ns(self, rps: float) -> np.ndarray:
        """Each request's sojourn (queue + service) at ``rps``, warm-up dropped."""
        if rps <= 0:
            raise ValueError(f"rps = {rps}: the load must be positive")
        arrivals = np.cumsum(self._gaps) * (1e9 / rps)  # type: ignore[attr-defined]
        services = self._services  # type: ignore[attr-defined]
        free = [0.0] * self.servers  # when each server is next free (a min-heap)
        out = np.empty(self.requests)
        for index in range(self.requests):
            arrival = arrivals[index]
            start = max(arrival, free[0])
            end = start + services[index]
            heapq.heapreplace(free, end)
            out[index] = end - arrival
        return out[int(self.requests * DEFAULT_WARMUP):]

    def p99_ns(self, rps: float) -> float:
        return float(np.percentile(self.sojourn_ns(rps), PERCENTILE))

    def curve(self, utilisations: np.ndarray) -> list[tuple[float, float]]:
        """(rps, p99 ns) at each utilisation (fraction of ``capacity_rps``)."""
        return [(u * self.capacity_rps, self.p99_ns(u * self.capacity_rps))
                for u in utilisations]

    def max_load(self, qos_ns: float, tolerance: float = 0.002) -> float:
        """The highest load (rps) whose p99 is within ``qos_ns`` (0 when even a light load
        misses it), to ``tolerance`` of the capacity."""
        lo, hi = 0.0, self.capacity_rps
        if self.p99_ns(tolerance * hi) > qos_ns:
            return 0.0
        lo = tolerance * hi
        while hi - lo > tolerance * self.capacity_rps:
            middle = (lo + hi) / 2
            if self.p99_ns(middle) <= qos_ns:
                lo = middle
            else:
                hi = middle
        return lo


def knee(x: np.ndarray, y: np.ndarray) -> int:
    """The index of a convex rising curve's knee (Kneedle, Satopaa et al. 2011): the point
    farthest below the chord once both axes are scaled to [0, 1]."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) < 3:
        raise ValueError("a knee needs at least three points")
    xs = (x - x.min()) / (np.ptp(x) or 1.0)
    ys = (y - y.min()) / (np.ptp(y) or 1.0)
    return int(np.argmax(xs - ys))


def p99_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the p99 of ``values``: the order statistics whose
    ranks bound the binomial(n, 0.99) count at ``confidence`` (NaN where n is too small)."""
    data = np.sort(np.asarray(values, dtype=float))
    n = len(data)
    if n == 0:
        return (float("nan"), float("nan"))
    ranks = np.arange(n + 1)
    # The binomial CDF of the count of values below the true p99, without scipy.
    log_pmf = (_log_choose(n, ranks) + ranks * np.log(0.99)
               + (n - ranks) * np.log(0.01))
    cdf = np.cumsum(np.exp(log_pmf - log_pmf.max()))
    cdf /= cdf[-1]
    tail = (1 - confidence) / 2
    low_rank = int(np.searchsorted(cdf, tail))  # P(count < low_rank) <= tail
    high_rank = int(np.searchsorted(cdf, 1 - tail)) + 1
    low = data[low_rank - 1] if low_rank >= 1 else float("nan")
    high = data[high_rank - 1] if high_rank <= n else float("nan")
    return (float(low), float(high))


def _log_choose(n: int, k: np.ndarray) -> np.ndarray:
    from math import lgamma

    return np.array([lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1) for i in k])
