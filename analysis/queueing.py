"""Tail latency predicted from measured service times: an M/G/k queue, simulated.

In the spirit of BigHouse (Meisner et al., ISPASS 2012): a service on k cores with k
workers (the paper's one thread per core) and one FIFO queue in front of them is a k-server
FCFS queue; its arrivals are Poisson (the harness's open loop) and its service times are
drawn from the ones measured in gem5 on that architecture.  The simulation uses common
random numbers, so the predicted p99 rises monotonically with the load and a bisection on
the load finds the max load under QoS exactly for that sample.

A service with a serial section (oltp: SQLite's one writer, which NewOrder, Payment and
Delivery hold in turn) says per request how long it held it (``serial_ns``, requests.csv);
the simulation then queues those requests on one such section too: a request on a worker
first waits for the section (FIFO), holds it for its serial time, then finishes the rest
of its service.  Without that, k workers look k times as strong as one writer lets them be.

The harness's load generator is one thread: it makes, times and hands over every request in
turn, so it is a single server in front of the workers.  The harness measures its CPU time
a request (summary.json ``generator_cpu_ns``); the simulation releases request i to the
workers at max(its arrival + its own lateness, release of i-1 + that time), so the
generator bounds the load at one request per its time and delays bunched arrivals, as it
does.  A request's own lateness (0 where the harness did not record releases) is drawn
from the sample's: what it was released after the later of its arrival and its
predecessor's release, i.e. the timer's wake-up or a busy core, not the backlog that the
second term already rebuilds.

The harness's own work shares the cores too: its load generator (a timed sleep, the
request, the wake of a worker), answer checks and monitors.  The harness measures the
process's CPU time over the measured region (summary.json ``measured_cpu_ns``); what a
request costs beyond its time on a worker (``overhead_ns``) enters the simulation as a job
of that length taking a core at each arrival, in front of the request, so it does not
delay a request while cores are idle but takes their capacity as the load rises.

The generator is late too: it sleeps until each arrival and shares the cores, so it puts a
request in the queue some microseconds after the arrival was due (a timer's wake-up, a
busy core). Where the harness recorded each request's release (``lateness_ns``: each
request's own lateness, above), the simulation draws one of those a request. They were
measured at the sample's load: a lateness from busy cores is then pessimistic below it
and optimistic above it.

A request that finds a worker idle waits for its hand-over: the worker sleeps on a futex
and its core halts, so a wake costs microseconds (8.7 us on arch1's O3 cores). A request
that finds every worker busy is taken from the queue by the first to finish, unwoken. The
harness's records show which requests found a worker idle and how long their hand-over took
(``handover_ns``); the simulation draws one of those for a request that finds an idle
worker, and none otherwise, so the wake delays a light load's requests and vanishes as the
load rises, as it does.

What it leaves out, and the direct measurements check: service times that change with the
load (shared caches, memory bandwidth, the OS).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, fields

import numpy as np

DEFAULT_REQUESTS = 100_000  # simulated requests per point
DEFAULT_WARMUP = 0.1  # fraction of them dropped at the start
PERCENTILE = 99.0


@dataclass(frozen=True)
class MGk:
    """A k-server FCFS queue over an empirical service-time distribution (ns), with one
    serial section where ``serial_ns`` (paired with ``service_ns``, part of it) says so."""

    service_ns: np.ndarray
    servers: int
    requests: int = DEFAULT_REQUESTS
    seed: int = 1
    serial_ns: np.ndarray | None = None
    overhead_ns: float = 0.0  # the harness's CPU a request, beyond its time on a worker
    generator_ns: float = 0.0  # the load generator's CPU a request (one thread, in turn)
    handover_ns: np.ndarray | None = None  # hand-overs to an idle worker, as measured
    # Each sampled request's own lateness, as measured (characterisation.lateness_ns;
    # None: not measured, the hand-overs then hold it, counted from the arrival).
    lateness_ns: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.servers < 1:
            raise ValueError(f"servers = {self.servers}: a queue needs at least one")
        if len(self.service_ns) == 0:
            raise ValueError("no service times: measure the service first")
        serial = np.zeros(len(self.service_ns)) if self.serial_ns is None else \
            np.asarray(self.serial_ns, dtype=float)
        if len(serial) != len(self.service_ns):
            raise ValueError(f"{len(serial)} serial times for {len(self.service_ns)} "
                             "service times: give one a request (0 outside the section)")
        service = np.asarray(self.service_ns, dtype=float)
        if self.generator_ns < 0:
            raise ValueError(f"generator time {self.generator_ns:g} ns: the generator's CPU "
                             "a request cannot be negative")
        if self.overhead_ns < 0:
            raise ValueError(f"overhead {self.overhead_ns:g} ns: the harness's CPU a request "
                             "beyond its service cannot be negative")
        if (serial > service).any():
            raise ValueError("a serial time exceeds its request's service time: the serial "
                             "section is part of the service")
        object.__setattr__(self, "serial_ns", serial)
        rng = np.random.default_rng(self.seed)
        # Common random numbers: one draw of unit gaps and services for every load.
        object.__setattr__(self, "_gaps", rng.exponential(1.0, self.requests))
        draw = rng.integers(0, len(self.service_ns), self.requests)
        object.__setattr__(self, "_services", service[draw])
        object.__setattr__(self, "_serial", serial[draw])
        handover = np.zeros(1) if self.handover_ns is None or not len(self.handover_ns) \
            else np.asarray(self.handover_ns, dtype=float)
        if not np.isfinite(handover).all() or (handover < 0).any():
            raise ValueError("hand-over times must be finite and not negative: give those of "
                             "the requests that found a worker idle")
        object.__setattr__(self, "_handover",
                           handover[rng.integers(0, len(handover), self.requests)])
        late = np.zeros(self.requests)
        if self.lateness_ns is not None and len(self.lateness_ns):
            measured = np.asarray(self.lateness_ns, dtype=float)
            if not np.isfinite(measured).all() or (measured < 0).any():
                raise ValueError("lateness times must be finite and not negative: give each "
                                 "sampled request's release less its scheduled arrival")
            late = measured[rng.integers(0, len(measured), self.requests)]
        object.__setattr__(self, "_late", late)
        # What every load shares, ready for sojourn_ns's loop: arrivals at 1 request a
        # second, and each request's lateness, hand-over, service and serial time.
        object.__setattr__(self, "_unit_arrivals",
                           np.cumsum(self._gaps))  # type: ignore[attr-defined]
        object.__setattr__(self, "_draws", tuple(column.tolist() for column in (
            late, self._handover, self._services, self._serial)))  # type: ignore[attr-defined]

    def __getstate__(self) -> dict[str, object]:
        # Its fields only: the draws are remade from the seed (a report hands cells to
        # other processes, and the draws are 100,000 numbers each).
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self.__post_init__()

    @property
    def mean_service_ns(self) -> float:
        return float(np.mean(self.service_ns))

    @property
    def mean_serial_ns(self) -> float:
        return 0.0 if self.serial_ns is None else float(np.mean(self.serial_ns))

    @property
    def capacity_rps(self) -> float:
        """The load at which the servers, the serial section or the generator would be
        busy all the time."""
        bounds = [self.servers / ((self.mean_service_ns + self.overhead_ns) * 1e-9)]
        bounds += [1 / (ns * 1e-9) for ns in (self.mean_serial_ns, self.generator_ns) if ns > 0]
        return min(bounds)

    def sojourn_ns(self, rps: float) -> np.ndarray:
        """Each request's sojourn (queue + service) at ``rps``, warm-up dropped."""
        if rps <= 0:
            raise ValueError(f"rps = {rps}: the load must be positive")
        arrivals = (self._unit_arrivals * (1e9 / rps)).tolist()  # type: ignore[attr-defined]
        # The loop is sequential (each start depends on the servers' state), so it runs on
        # Python floats, not numpy scalars: a report makes thousands of these curves.
        columns = (arrivals, *self._draws)  # type: ignore[attr-defined]
        free = [0.0] * self.servers  # when each server is next free (a min-heap)
        section_free = 0.0  # when the serial section is next free
        out = []
        append, heapreplace = out.append, heapq.heapreplace
        overhead, generator = self.overhead_ns, self.generator_ns
        released = -np.inf  # when the generator handed over the previous request
        for arrival, late, handover, service, serial in zip(*columns, strict=True):
            # Late by its own wake-up (measured) or by its CPU for those before it.
            # (max() spelt out: the builtin's call is most of this loop's time)
            due, after = arrival + late, released + generator
            released = due if due >= after else after
            if overhead > 0:  # the harness's share of the cores, ahead of the request
                first = free[0]
                heapreplace(free, (released if released >= first else first) + overhead)
            # Workers start requests in arrival order, so they reach the section in it too.
            # An idle worker is woken (its hand-over); a busy one takes it from the queue.
            first = free[0]
            start = released + handover if first <= released else first
            if serial > 0:
                if section_free > start:
                    start = section_free
                section_free = start + serial
            end = start + service
            heapreplace(free, end)
            append(end - arrival)
        return np.array(out[int(self.requests * DEFAULT_WARMUP):])

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
