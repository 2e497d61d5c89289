"""A run's steady state: its requests after the start-up transient.

A run restored from a checkpoint starts with cold caches (gem5 restores none) and the
service's threads just woken, so its first requests queue behind a slower start; near
capacity that backlog drains slowly (at the difference between capacity and load) and
can outlast the warm-up.  A p99 over such a run measures the start, not the load.

The transient is cut by MSER-5 (White, 1997; Hoad, Robinson and Davies, 2010): the
sojourn series, in batches of 5, is truncated where the standard error of the mean of
what remains is smallest, searching the first half only.  A truncation at that limit,
where the half cut off differs from the rest beyond chance, means the series never
settled in the window (a backlog still draining, or one still growing: an overload): the
run has shown no steady state, and :func:`steady_state` says so.
The max-load search (runs/maxload.py) and the characterisation's points
(analysis/characterisation.py) both read a run's p99 here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BATCH = 5  # MSER-5: batch means smooth the series before the truncation rule
# Fewer batches than this (100 requests): no truncation is tried and the run counts as
# settled, for the rule then cuts stationary series by chance.
MIN_BATCHES = 20
# A cut at the limit says "never settled" only where what it cut differs from the rest by
# more than this many standard errors (of the batch means): the rule alone reaches its limit
# on a stationary series by chance (iid exponential sojourns: 1 run in 35 at 100 requests,
# 1 in 370 at 300); with the test, 1 in 150 and 1 in 3,000.
SETTLED_Z = 2.0


@dataclass(frozen=True)
class SteadyState:
    start: int  # the first request (in the series' order) of the steady state
    requests: int  # requests from there on
    settled: bool  # False: the truncation reached half the series (no steady state seen)


def mser_start(values: np.ndarray, batch: int = BATCH) -> tuple[int, bool]:
    """MSER-``batch``: the truncation point of ``values`` (a multiple of ``batch``) and
    whether it lies below half the series (the rule searches that far only)."""
    data = np.asarray(values, dtype=float)
    batches = len(data) // batch
    if batches < MIN_BATCHES:
        return 0, True
    means = data[:batches * batch].reshape(batches, batch).mean(axis=1)
    limit = batches // 2
    # For every cut d: the squared deviations of means[d:] about their mean, over (m-d)^2.
    tail = means[::-1]
    count = np.arange(1, batches + 1, dtype=float)
    total = np.cumsum(tail)
    squares = np.cumsum(tail * tail)
    deviations = (squares - total * total / count)[::-1]  # of means[d:], d = 0..m-1
    remaining = count[::-1]
    statistic = deviations[:limit + 1] / remaining[:limit + 1] ** 2
    cut = int(np.argmin(statistic))
    if cut < limit:
        return cut * batch, True
    before, after = means[:cut], means[cut:]
    error = np.sqrt(before.var(ddof=1) / len(before) + after.var(ddof=1) / len(after))
    return cut * batch, bool(abs(before.mean() - after.mean()) <= SETTLED_Z * error)


def steady_state(sojourn_ns: np.ndarray) -> SteadyState:
    """Where a run's steady state starts in its sojourn series (completion order)."""
    start, settled = mser_start(sojourn_ns)
    return SteadyState(start, len(sojourn_ns) - start, settled)


def steady_sojourn(sojourn_ns: np.ndarray) -> tuple[np.ndarray, SteadyState]:
    """The sojourn times of the steady state, and where it starts."""
    state = steady_state(sojourn_ns)
    return np.asarray(sojourn_ns)[state.start:], state
