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


def test_spearman_is_the_rank_correlation_without_scipy() -> None:
    from pimcloud.analysis.characterisation import rank_correlations, spearman

    a = pd.Series([1.0, 2.0, 3.0, 4.0])
    assert spearman(a, pd.Series([10.0, 20.0, 30.0, 40.0])) == pytest.approx(1.0)
    assert spearman(a, pd.Series([4.0, 3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    # Monotone but not linear: still 1; one swap of four: 1 - 6*2/(4*15) = 0.8.
    assert spearman(a, pd.Series([1.0, 8.0, 27.0, 64.0])) == pytest.approx(1.0)
    assert spearman(a, pd.Series([2.0, 1.0, 3.0, 4.0])) == pytest.approx(0.8)
    assert np.isnan(spearman(a, pd.Series([5.0, 5.0, 5.0, 5.0])))
    # Three architectures in a Table III column are enough for a coefficient.
    table = pd.DataFrame({"arch": ["arch1", "arch4", "arch8"], "app": "kvstore",
                          "tail_over_qos": [0.75, 1.2, 3.5],
                          "normalized_max_load": [1.0, 0.5, 0.0]})
    ranks = rank_correlations(table).set_index("metric")
    assert ranks.loc["tail_over_qos", "architectures"] == 3
    # The paper's kvstore tails: arch1 0.21 < arch8 0.40 < arch4 0.53: one swap of three.
    assert ranks.loc["tail_over_qos", "spearman"] == pytest.approx(0.5)


def test_imgdnn_claim_uses_the_service_time_when_the_model_is_invalid() -> None:
    from pimcloud.analysis.characterisation import claims

    def verdict(table: pd.DataFrame) -> str:
        found = claims(table)
        row = found[found["claim"].str.startswith("ImgDNN cannot meet QoS")]
        return str(row["verdict"].iloc[0])

    base = {"app": "imgdnn", "qos_ns": 1.36e6, "normalized_max_load": np.nan}
    # arch4 without a valid model, but a request alone takes longer than QoS: holds.
    slow = pd.DataFrame([{**base, "arch": "arch4", "tail_over_qos": np.nan,
                          "max_load_rps": np.nan, "mean_occupied_us": 1543.0}])
    assert verdict(slow) == "holds"
    # No model and a request fits in QoS: nothing can be said.
    fast = slow.assign(mean_occupied_us=400.0)
    assert verdict(fast) == "not measurable"
    # A valid model that meets QoS: the claim does not hold.
    met = slow.assign(tail_over_qos=0.5, max_load_rps=3000.0)
    assert verdict(met) == "does not hold"
