from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pimcloud.cli import main
from pimcloud.workloads.services import SERVICES, service


def test_workload_run_prints_percentiles_and_histogram(
    capsys: pytest.CaptureFixture[str], need: Callable[[str], Path]
) -> None:
    need("pimcloud-kvstore")
    assert (
        main(["workload", "run", "kvstore", "--rps", "200", "--seconds", "1", "--threads", "2"])
        == 0
    )
    out = capsys.readouterr().out
    assert "p99" in out and "service-time histogram" in out and "consistent" in out


def test_every_service_has_a_qos_target_and_mix() -> None:
    assert set(SERVICES) == {"oltp", "kvstore", "imgdnn", "search", "translate", "speech"}
    for s in SERVICES.values():
        assert s.qos_ns > 0 and s.request_mix


def test_unknown_service_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="kvstore"):
        service("masstree")
