"""MSER-5 truncation of a run's start-up transient (workloads/steady.py)."""

from __future__ import annotations

import numpy as np
from pimcloud.workloads.steady import BATCH, mser_start, steady_sojourn, steady_state


def _mser_by_definition(values: np.ndarray) -> int:
    """MSER-5 written out: every cut d of the batch means, sum of squares over (m-d)^2."""
    m = len(values) // BATCH
    means = values[:m * BATCH].reshape(m, BATCH).mean(axis=1)
    scores = [float(((means[d:] - means[d:].mean()) ** 2).sum() / (m - d) ** 2)
              for d in range(m // 2 + 1)]
    return int(np.argmin(scores)) * BATCH


def test_the_cut_is_the_definitions_on_random_series() -> None:
    rng = np.random.default_rng(7)
    for n in (100, 301, 1000):
        for _ in range(20):
            values = rng.exponential(1.0, n) + np.linspace(5, 0, n) * rng.random()
            assert mser_start(values)[0] == _mser_by_definition(values)


def test_a_draining_backlog_is_cut_and_the_rest_is_steady() -> None:
    """800 requests queued behind a slow start that drains over the first 200."""
    rng = np.random.default_rng(1)
    steady = rng.exponential(50e3, 800)
    backlog = np.concatenate([np.linspace(900e3, 0, 200), np.zeros(600)])
    sojourn, state = steady_sojourn(steady + backlog)
    assert state.settled
    assert 150 <= state.start <= 260, state
    assert state.requests == len(sojourn) == 800 - state.start
    # The p99 of what is left is the steady state's, not the start's.
    assert np.percentile(sojourn, 99) < 1.3 * np.percentile(steady, 99)
    assert np.percentile(steady + backlog, 99) > 3 * np.percentile(steady, 99)


def test_a_growing_backlog_never_settles() -> None:
    """An overload: each request waits longer than the one before."""
    rng = np.random.default_rng(2)
    growing = rng.exponential(50e3, 1000) + np.linspace(0, 2e6, 1000)
    state = steady_state(growing)
    assert not state.settled
    assert state.start == 500


def test_a_stationary_run_keeps_nearly_all_its_requests() -> None:
    rng = np.random.default_rng(3)
    cuts = [steady_state(rng.exponential(1.0, 1000)) for _ in range(50)]
    assert all(c.settled for c in cuts)
    assert np.mean([c.start for c in cuts]) < 50


def test_a_short_run_is_not_cut() -> None:
    """Below 100 requests the rule is not tried: the whole series, counted as settled."""
    values = np.concatenate([np.full(20, 1e6), np.ones(70)])
    state = steady_state(values)
    assert (state.start, state.requests, state.settled) == (0, 90, True)


def test_a_stationary_short_run_is_rarely_called_unsettled() -> None:
    """At 100 requests the rule reaches its limit by chance in 1 run of 35; the test on
    what it cut keeps that to about 1 in 150."""
    rng = np.random.default_rng(4)
    unsettled = [not steady_state(rng.exponential(1.0, 100)).settled for _ in range(2000)]
    assert np.mean(unsettled) < 0.015
