"""Best-effort jobs: the command campaigns start and the progress analysis reads are one
contract (pimcloud.workloads.besteffort), tested here against the real pimcloud-be."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pimcloud.analysis.campaign import load_campaign
from pimcloud.analysis.metrics import be_throughput
from pimcloud.workloads.besteffort import (
    JOBS,
    PROGRESS_FILE,
    BestEffortError,
    be_command,
    read_progress,
)


@pytest.mark.parametrize("job", sorted(JOBS))
def test_the_real_job_writes_what_analysis_reads(job: str, tmp_path: Path,
                                                 need: Callable[[str], Path]) -> None:
    program = need("pimcloud-be")
    run = tmp_path / "r1"
    out = run / "results" / job
    out.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": "r1", "be": [job]}))
    command = be_command(job, str(out), "2", 50)
    process = subprocess.Popen([str(program), *command[1:]], stdout=subprocess.DEVNULL)
    time.sleep(0.6)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    progress = read_progress(out / PROGRESS_FILE)
    assert len(progress) >= 5  # the start, then one row per 50 ms interval
    assert progress["work"].iloc[0] == 0 and progress["work"].is_monotonic_increasing
    assert progress["work"].iloc[-1] > 0
    assert set(progress["unit"]) == {JOBS[job][1]}
    # The same file through the campaign reader: the job is named by its folder.
    campaign = load_campaign(tmp_path, with_stats=False)
    rate = be_throughput(campaign.progress)
    assert rate["app"].tolist() == [job] and float(rate.iloc[0, -1]) > 0


def test_an_unknown_job_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(BestEffortError, match="compute, membw"):
        be_command("stream", str(tmp_path), "1", 100)
    bad = tmp_path / PROGRESS_FILE
    bad.write_text('{"job":"compute"}\n')
    with pytest.raises(BestEffortError, match="lacks t_ns or work"):
        read_progress(bad)
