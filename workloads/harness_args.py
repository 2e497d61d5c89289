"""The harness's command line, in two parts (workloads/harness/src/runner.cc owns it).

A service is *launched* with what shapes the loaded service (its program, workers, data,
engine options, and the ready/start files) and *run* with what one run chooses (load,
lengths, seed, outputs, statistics, gem5 hooks). The run part goes on the command line,
or, when the service waits for a start file, into that file: the harness reads it when
the file appears (``with_start_options``), so one loaded service, e.g. in a gem5 app
checkpoint, serves runs with different loads. ``RUN_OPTIONS`` is the harness's
``is_run_option`` list; a test starts the real harness with each of them in a start file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Options a start file may carry (runner.cc is_run_option).
RUN_OPTIONS = frozenset({
    "--rps", "--schedule", "--seconds", "--requests", "--warmup", "--seed", "--out",
    "--stats-file", "--stats-socket", "--interval-ms", "--tids-file", "--control-socket",
    "--control-file", "--check-every", "--log-answers", "--gem5", "--gem5-work-type",
    "--early-stop-qos-ms", "--early-stop-confidence", "--early-stop-min-requests",
    "--early-stop-meet", "--done-file"})


@dataclass(frozen=True)
class LaunchArgs:
    """What shapes the loaded service; fixed for as long as it runs."""

    program: str
    threads: int
    mode: str = "integrated"
    data: str | None = None
    options: tuple[tuple[str, str], ...] = ()  # --opt KEY=VALUE, sorted
    ready_file: str | None = None
    start_file: str | None = None
    prewarm: int = 0  # requests served before the ready file

    def args(self) -> list[str]:
        args = [self.program, "--mode", self.mode, "--threads", str(self.threads)]
        if self.ready_file:
            args += ["--ready-file", self.ready_file]
        if self.prewarm:
            args += ["--prewarm", str(self.prewarm)]
        if self.start_file:
            args += ["--start-file", self.start_file]
        if self.data:
            args += ["--data", self.data]
        for key, value in self.options:
            args += ["--opt", f"{key}={value}"]
        return args


@dataclass(frozen=True)
class RunArgs:
    """One run's own options: on the command line, or in the start file."""

    rps: float
    seconds: float
    warmup_s: float  # warm-up as time at the offered load...
    seed: int
    out: str
    warmup: int | None = None  # ...or as a number of requests
    stats_file: str | None = None
    interval_ms: float = 100.0
    gem5_hooks: bool = False
    gem5_work_type: int | None = None
    control_file: str | None = None
    done_file: str | None = None  # a line there once the measured requests are done
    extra: tuple[str, ...] = field(default=())

    @property
    def warmup_requests(self) -> int:
        return self.warmup if self.warmup is not None else math.ceil(self.rps * self.warmup_s)

    def args(self) -> list[str]:
        args = ["--rps", f"{self.rps:g}", "--seconds", f"{self.seconds:g}",
                "--warmup", str(self.warmup_requests), "--seed", str(self.seed),
                "--out", self.out, "--interval-ms", f"{self.interval_ms:g}"]
        if self.stats_file:
            args += ["--stats-file", self.stats_file]
        if self.gem5_hooks:
            args.append("--gem5")
        if self.gem5_work_type is not None:
            args += ["--gem5-work-type", str(self.gem5_work_type)]
        if self.control_file:
            args += ["--control-file", self.control_file]
        if self.done_file:
            args += ["--done-file", self.done_file]
        args += list(self.extra)
        flags = [word for word in args if word.startswith("--")]
        assert all(flag in RUN_OPTIONS for flag in flags), flags
        return args
