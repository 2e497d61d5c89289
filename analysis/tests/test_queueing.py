"""The M/G/k model against queueing theory, the knee, and the p99 interval's coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pimcloud.analysis.queueing import MGk, knee, p99_interval


def exponential_services(mean_ns: float, count: int = 200_000, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).exponential(mean_ns, count)


def test_mm1_p99_matches_the_closed_form() -> None:
    # M/M/1: the sojourn is exponential with rate mu - lambda, so p99 = ln(100) / (mu - l).
    queue = MGk(exponential_services(1e6), servers=1, requests=200_000)
    mu = 1e9 / queue.mean_service_ns
    for load in (0.3, 0.6, 0.8):
        expected = math.log(100) / (mu * (1 - load)) * 1e9
        assert queue.p99_ns(load * mu) == pytest.approx(expected, rel=0.1)


def test_mmk_waits_follow_erlang_c() -> None:
    # M/M/k: P(wait) is Erlang C; the simulated fraction of requests that queued matches.
    k, load = 4, 0.7
    queue = MGk(exponential_services(1e6), servers=k, requests=200_000)
    mu = 1e9 / queue.mean_service_ns
    a = k * load
    top = a**k / math.factorial(k) / (1 - load)
    erlang_c = top / (sum(a**i / math.factorial(i) for i in range(k)) + top)
    sojourn = queue.sojourn_ns(load * k * mu)
    services = queue._services[int(queue.requests * 0.1):]  # type: ignore[attr-defined]
    waited = np.mean(sojourn - services > 1.0)
    assert waited == pytest.approx(erlang_c, abs=0.02)


def test_p99_rises_with_load_and_max_load_sits_at_qos() -> None:
    queue = MGk(exponential_services(1e6, 5000), servers=4, requests=50_000)
    curve = queue.curve(np.array([0.2, 0.4, 0.6, 0.8, 0.9]))
    p99s = [p99 for _, p99 in curve]
    assert p99s == sorted(p99s)
    qos = 8e6
    best = queue.max_load(qos)
    assert queue.p99_ns(best) <= qos < queue.p99_ns(best + 0.01 * queue.capacity_rps)
    # More servers of the same kind carry more load under the same QoS.
    assert MGk(queue.service_ns, servers=8, requests=50_000).max_load(qos) > 1.8 * best
    # A QoS below every service time is never met.
    assert MGk(np.full(100, 5e6), servers=4).max_load(1e6) == 0.0


def test_knee_of_a_hockey_stick() -> None:
    x = np.linspace(0.1, 0.95, 86)
    y = np.where(x < 0.7, 1.0 + 0.1 * x, 1.07 + 20 * (x - 0.7) ** 2)
    assert 0.65 <= x[knee(x, y)] <= 0.85
    with pytest.raises(ValueError):
        knee(x[:2], y[:2])


def test_p99_interval_covers_the_true_p99() -> None:
    rng = np.random.default_rng(11)
    truth = math.log(100)  # p99 of Exp(1)
    covered = 0
    for _ in range(400):
        low, high = p99_interval(rng.exponential(1.0, 400), confidence=0.95)
        covered += low <= truth <= high
    assert covered / 400 >= 0.92
    low, high = p99_interval(np.arange(20.0))  # too few values for an upper bound
    assert math.isnan(high)


def test_bad_input_names_the_problem() -> None:
    with pytest.raises(ValueError, match="no service times"):
        MGk(np.array([]), servers=2)
    with pytest.raises(ValueError, match="at least one"):
        MGk(np.ones(3), servers=0)


def test_a_serial_section_held_for_the_whole_service_makes_k_workers_one() -> None:
    # Every request holds the one section for all of its service: M/M/k becomes M/M/1
    # (oltp's writer taken by every transaction), whatever k.
    services = exponential_services(1e6)
    queue = MGk(services, servers=4, requests=200_000, serial_ns=services)
    mu = 1e9 / queue.mean_service_ns
    assert queue.capacity_rps == pytest.approx(mu)
    for load in (0.3, 0.6):
        expected = math.log(100) / (mu * (1 - load)) * 1e9
        assert queue.p99_ns(load * mu) == pytest.approx(expected, rel=0.1)


def test_no_serial_time_is_the_plain_queue_and_some_lowers_the_max_load() -> None:
    services = exponential_services(1e6, 5000)
    plain = MGk(services, servers=4, requests=50_000)
    none = MGk(services, servers=4, requests=50_000, serial_ns=np.zeros(len(services)))
    assert np.array_equal(plain.sojourn_ns(2000.0), none.sojourn_ns(2000.0))
    # Half the requests hold the section for 60 % of their service: it, not the 4 workers,
    # bounds the load (1 / 0.3 ms = 3,330 rps against 4,000).
    writers = np.arange(len(services)) % 2 == 0
    serial = np.where(writers, 0.6 * services, 0.0)
    queue = MGk(services, servers=4, requests=50_000, serial_ns=serial)
    assert queue.capacity_rps == pytest.approx(1e9 / np.mean(serial))
    assert queue.capacity_rps < plain.capacity_rps
    assert queue.max_load(10e6) < 0.9 * plain.max_load(10e6)


def test_bad_serial_times_name_the_problem() -> None:
    with pytest.raises(ValueError, match="one a request"):
        MGk(np.ones(3), servers=2, serial_ns=np.ones(2))
    with pytest.raises(ValueError, match="part of the service"):
        MGk(np.ones(3), servers=2, serial_ns=np.full(3, 2.0))


def test_the_harness_overhead_takes_capacity_but_not_low_load_latency() -> None:
    # 4 workers of 1 ms and 1 ms of the harness's CPU a request: half the capacity, and a
    # light load sees the service alone (an idle core runs the overhead beside it).
    services = np.full(5000, 1e6)
    plain = MGk(services, servers=4, requests=20_000)
    loaded = MGk(services, servers=4, requests=20_000, overhead_ns=1e6)
    assert loaded.capacity_rps == pytest.approx(plain.capacity_rps / 2)
    assert loaded.p99_ns(50.0) == pytest.approx(1e6, rel=0.01)
    assert loaded.max_load(3e6) < 0.6 * plain.max_load(3e6)
    with pytest.raises(ValueError, match="cannot be negative"):
        MGk(services, servers=4, overhead_ns=-1.0)


def test_the_one_generator_thread_bounds_the_offered_load() -> None:
    # Fast workers behind a generator of 10 us a request: at most 100,000 rps; under it a
    # D/M/1-like queue at the generator, nothing at a light load.
    services = np.full(5000, 1000.0)
    queue = MGk(services, servers=16, requests=50_000, generator_ns=10_000.0)
    assert queue.capacity_rps == pytest.approx(100_000)
    light = queue.sojourn_ns(1000.0)
    assert np.median(light) == pytest.approx(1000.0) and light.max() <= 1000.0 + 30_000
    assert queue.p99_ns(90_000.0) > 10 * queue.p99_ns(10_000.0)
    assert 0.8 * 100_000 < queue.max_load(1e6) < 100_000
    with pytest.raises(ValueError, match="cannot be negative"):
        MGk(services, servers=4, generator_ns=-1.0)


def test_a_hand_over_delays_a_light_load_and_vanishes_near_capacity() -> None:
    # 4 workers of 2 us, each hand-over to an idle one 8 us: a light load waits for the
    # wake (10 us a request), but the capacity stays 4 / 2 us, where no worker is idle;
    # with the hand-over on every request's time on a worker it would fall to 4 / 10 us.
    services = np.full(5000, 2000.0)
    queue = MGk(services, servers=4, requests=50_000, handover_ns=np.full(100, 8000.0))
    assert queue.capacity_rps == pytest.approx(2e6)
    assert np.median(queue.sojourn_ns(1000.0)) == pytest.approx(10_000.0)
    eager = MGk(services + 8000.0, servers=4, requests=50_000)
    assert queue.max_load(50_000.0) > 3 * eager.max_load(50_000.0)
    plain = MGk(services, servers=4, requests=50_000)
    assert queue.p99_ns(1.5e6) < 3 * plain.p99_ns(1.5e6)
    with pytest.raises(ValueError, match="hand-over times"):
        MGk(services, servers=4, handover_ns=np.array([1.0, np.nan]))


def test_the_generators_lateness_delays_every_request_but_takes_no_worker() -> None:
    # A generator that puts each request in the queue 20 us after its arrival was due (its
    # timer's wake-up): every sojourn, counted from the arrival, holds the 20 us, at a light
    # load as near capacity, but no worker is held by it, so the capacity stays 4 / 2 us.
    services = np.full(5000, 2000.0)
    queue = MGk(services, servers=4, requests=50_000, lateness_ns=np.full(100, 20_000.0))
    assert queue.capacity_rps == pytest.approx(2e6)
    assert np.median(queue.sojourn_ns(1000.0)) == pytest.approx(22_000.0)
    plain = MGk(services, servers=4, requests=50_000)
    assert queue.p99_ns(1.5e6) == pytest.approx(plain.p99_ns(1.5e6) + 20_000.0, rel=0.05)
    # Without lateness the model draws exactly as before (common random numbers).
    assert np.array_equal(MGk(services, servers=4, requests=1000, lateness_ns=np.zeros(10))
                          .sojourn_ns(1e5), MGk(services, servers=4, requests=1000)
                          .sojourn_ns(1e5))
    with pytest.raises(ValueError, match="lateness times"):
        MGk(services, servers=4, lateness_ns=np.array([-1.0]))


def _sojourns_by_hand(queue: MGk, rps: float) -> np.ndarray:
    """The queue's rules as written in its docstring, one request at a time over a plain
    list of the servers' free times (the model's loop keeps them in a heap, on floats)."""
    arrivals = np.cumsum(queue._gaps) * (1e9 / rps)  # type: ignore[attr-defined]
    free = [0.0] * queue.servers
    section_free, released, out = 0.0, -np.inf, []
    for i, arrival in enumerate(arrivals):
        released = max(arrival + queue._late[i],  # type: ignore[attr-defined]
                       released + queue.generator_ns)
        if queue.overhead_ns > 0:
            soonest = int(np.argmin(free))
            free[soonest] = max(released, free[soonest]) + queue.overhead_ns
        soonest = int(np.argmin(free))
        start = (released + queue._handover[i]  # type: ignore[attr-defined]
                 if free[soonest] <= released else free[soonest])
        serial = queue._serial[i]  # type: ignore[attr-defined]
        if serial > 0:
            start = max(start, section_free)
            section_free = start + serial
        free[soonest] = start + queue._services[i]  # type: ignore[attr-defined]
        out.append(free[soonest] - arrival)
    return np.array(out[int(queue.requests * 0.1):])


def test_the_loop_keeps_the_queues_rules_with_every_term_on() -> None:
    """The model's loop is written for speed (a report draws thousands of curves); the
    same rules by hand give the same sojourns, to the last bit, at light and heavy load."""
    rng = np.random.default_rng(7)
    service = rng.lognormal(np.log(1e6), 0.5, 300)
    queue = MGk(service, 4, requests=5_000, serial_ns=service * rng.uniform(0, 0.3, 300),
                overhead_ns=30e3, generator_ns=20e3, handover_ns=rng.uniform(5e3, 9e3, 40),
                lateness_ns=rng.uniform(0, 5e3, 200))
    plain = MGk(service, 3, requests=5_000)
    for model in (queue, plain):
        for utilisation in (0.2, 0.7, 1.1):
            rps = utilisation * model.capacity_rps
            assert np.array_equal(model.sojourn_ns(rps), _sojourns_by_hand(model, rps))
