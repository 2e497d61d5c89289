"""What the characterisation takes from a measured run: each request's time on a worker."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pimcloud.analysis.characterisation import occupied_ns


def requests(rows: list[tuple[int, int, int]]) -> pd.DataFrame:
    """(scheduled, start, end) ns -> a request table."""
    frame = pd.DataFrame(rows, columns=["scheduled_ns", "start_ns", "end_ns"])
    frame["queue_ns"] = frame["start_ns"] - frame["scheduled_ns"]
    frame["service_ns"] = frame["end_ns"] - frame["start_ns"]
    frame["sojourn_ns"] = frame["end_ns"] - frame["scheduled_ns"]
    return frame


def test_the_hand_over_counts_only_where_a_worker_was_idle() -> None:
    # One worker: the first two arrive to an empty system (hand-over 5 ns, service 10 ns);
    # the third arrives while the second is in service and queues 8 ns more: not a hand-over.
    frame = requests([(0, 5, 15), (100, 105, 115), (106, 119, 129)])
    occupied = occupied_ns(frame, servers=1)
    assert occupied.tolist() == [15.0, 15.0, 15.0]  # service + the hand-over seen idle
    # With two workers the third found one idle: its 13 ns wait is a hand-over too.
    two = occupied_ns(frame, servers=2, seed=3)
    assert set(two.tolist()) <= {15.0, 23.0} and 23.0 in two.tolist()


def test_without_times_the_service_time_alone() -> None:
    frame = requests([(0, 5, 15)]).drop(columns=["scheduled_ns", "start_ns", "end_ns"])
    assert occupied_ns(frame, servers=4).tolist() == [10.0]


def test_occupied_never_below_service() -> None:
    rng = np.random.default_rng(0)
    arrivals = np.cumsum(rng.exponential(1000, 500)).astype(int)
    rows = [(a, a + 50, a + 50 + int(s)) for a, s in zip(arrivals, rng.exponential(300, 500),
                                                         strict=True)]
    frame = requests(rows)
    occupied = occupied_ns(frame, servers=4)
    assert (occupied >= frame["service_ns"].to_numpy()).all()
    assert occupied.mean() == pytest.approx(frame["service_ns"].mean() + 50, rel=0.02)
