"""Per-preset gem5 figures: boot-to-checkpoint host time and detailed simulation speed.

For each preset it boots to the checkpoint with the atomic CPUs (``pimcloud gem5 boot``),
then restores it fast-forwarded, starts one busy loop pinned to every CPU, switches to
the detailed cores (O3 host, narrow O3 PIM) and measures a window of simulated time: an
m5 resetstats, then a stats dump and the end of the run that gem5 itself schedules
--window-ms after the next m5 call (so the window is that plus one exec of m5). A guest
``sleep`` would overshoot by the several milliseconds its wake-up, fork and exec take on
detailed cores, and on 40 O3 cores each simulated millisecond costs minutes. From that
dump: simulated microseconds per host second (gem5's hostSeconds, a wall time: run it
beside nothing busier than itself), and committed instructions per host second
(the cores' commit counters of the window over hostSeconds).

    GEM5=/path/to/gem5.opt .venv/bin/python gem5-configs/bench/bench_presets.py \\
        [--presets paper arch1 ...] [--mem-divisor 8] [--window-ms 1] [--out DIR]

Capacities are divided by --mem-divisor (default 8) so checkpoints stay small; the CPUs,
caches, links and timings are the preset's. Results are kept per preset in
DIR/<preset>/ (boot.json, bench.json); a rerun reuses finished boots.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from pimcloud.atomic import atomic_write_text
from pimcloud.file_digest import input_digests
from pimcloud.gem5_cli import gem5_inputs
from pimcloud.gem5_runner import Gem5Missing
from pimcloud.gem5_session import Gem5Inputs, boot, read_boot, restore
from pimcloud.kernel_args import booted_kernel_args, expected_kernel_args
from pimcloud.topology import cpus, load_topology
from pimcloud.topology.parse import preset_names

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "runs" / "out" / "bench-presets"
# The run ends this long after the window's dump, so the dump is written first.
EXIT_AFTER_DUMP_NS = 1000


def busy_scenario(folder: Path, cpu_count: int, window_ms: float) -> None:
    """run.sh: a busy loop on every CPU, switch to detailed, one measured window."""
    folder.mkdir(parents=True, exist_ok=True)
    window_ns = round(window_ms * 1e6)
    lines = [
        "#!/bin/sh",
        "# Detailed-speed window: every CPU busy, stats reset, a dump and the end of the",
        "# run that gem5 schedules exactly one window later.",
        "# The loops run at nice 19 so this script's own steps (fork, exec, m5) are not",
        "# starved by the loop sharing its CPU. Each step is logged with the guest's uptime.",
        "# The CPU list is literal: the image's seq(1) spins forever under gem5's x86.",
        'say() { read up _ < /proc/uptime; echo "pimcloud-bench $* uptime_s=$up"; }',
        f"for cpu in {' '.join(str(cpu) for cpu in range(cpu_count))}; do",
        "    nice -n 19 taskset -c $cpu sh -c 'while :; do :; done' &",
        "done",
        'say "loops started"',
        "m5 switchcpu",
        'say "switched"',
        "m5 resetstats",
        f"m5 dumpstats {window_ns}",
        f"m5 exit {window_ns + EXIT_AFTER_DUMP_NS}",
        "# gem5 ends the run inside this sleep, just after the dump; no results are sent.",
        "sleep 60",
        "",
    ]
    atomic_write_text(folder / "run.sh", "\n".join(lines))


def window_figures(stats_file: Path) -> dict[str, float]:
    """Simulated and host seconds and instructions of the first dump (the window)."""
    from pimcloud.stats_file import parse_stats

    parsed = parse_stats(stats_file)
    first = parsed.stats[parsed.stats["dump"] == 0]
    values = {row.stat: row.value for row in first.itertuples() if row.subname == ""}
    sim_s, host_s = values["simSeconds"], values["hostSeconds"]
    # gem5's simInsts counts from the start of the run and ignores resetstats; the
    # cores' own commit counters are reset with the window.
    committed = [value for stat, value in values.items()
                 if stat.endswith(".core.commitStats0.numInsts")]
    insts = sum(committed) if committed else float("nan")
    return {"window_sim_s": sim_s, "window_host_s": host_s, "window_insts": insts,
            "sim_us_per_host_s": sim_s * 1e6 / host_s, "insts_per_host_s": insts / host_s}


def current_boot(folder: Path, inputs: Gem5Inputs) -> dict[str, Any] | None:
    """The boot record in ``folder``, or None when there is none or it was made from other
    inputs: another kernel command line, kernel or image (the stale folder is removed)."""
    try:
        record = read_boot(folder)
    except ValueError:
        return None
    if (booted_kernel_args(folder / "m5out") != expected_kernel_args()
            or record.get("input_sha256") != input_digests(inputs.kernel, inputs.image)):
        shutil.rmtree(folder)
        return None
    return record


def bench_preset(name: str, out: Path, mem_divisor: int, window_ms: float) -> dict[str, Any]:
    folder = out / name
    inputs = gem5_inputs(name, None, None, mem_divisor)
    record = current_boot(folder / "boot", inputs)
    if record is None:
        report = boot(inputs, folder / "boot")
        if not report.ok:
            return {"preset": name, "ok": False, "problems": report.problems}
        record = read_boot(folder / "boot")
    cpu_count = len(cpus(load_topology(name)))
    busy_scenario(folder / "scenario", cpu_count, window_ms)
    run = restore(inputs, folder / "boot", folder / "scenario", folder / "window",
                  fast_forward=True, max_seconds=1.0 + window_ms / 1000,
                  expects_results=False)  # the window's m5 exit ends the run first
    row: dict[str, Any] = {"preset": name, "cpus": cpu_count,
                           "boot_host_s": record["host_seconds"],
                           "boot_cpu_s": record.get("cpu_seconds"),
                           "boot_sim_s": record["simulated_seconds"],
                           "boot_peak_rss_gib": record["peak_rss_bytes"] / 2**30,
                           "restore_host_s": run.host_seconds,
                           "restore_cpu_s": run.cpu_seconds, "gem5": str(inputs.gem5),
                           "ok": True}
    stats = folder / "window" / "m5out" / "stats.txt"
    problems = list(run.problems)
    if not problems and (not stats.is_file() or stats.stat().st_size == 0):
        problems = [f"no stats dump from the window; see {folder / 'window'}"]
    if problems:
        # One preset's failure (a gem5 abort, a guest error) is a row of the table, not
        # the end of the benchmark: the other presets still run.
        row.update(ok=False, problems=problems)
    else:
        row.update(window_figures(stats))
    atomic_write_text(folder / "bench.json", json.dumps(row, indent=1) + "\n")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="*", default=sorted(preset_names()))
    parser.add_argument("--mem-divisor", type=int, default=8)
    parser.add_argument("--window-ms", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    rows = []
    for name in args.presets:
        print(f"== {name}", flush=True)
        try:
            rows.append(bench_preset(name, args.out.resolve(), args.mem_divisor,
                                     args.window_ms))
        except Gem5Missing as missing:
            print(f"gem5 is not usable: {missing}", file=sys.stderr)
            return 2
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{'preset':<12} {'cpus':>4} {'boot host s':>11} {'boot cpu s':>10} "
          f"{'boot sim s':>10} "
          f"{'sim us/host s':>13} {'insts/host s':>12}")
    for row in rows:
        if not row.get("ok"):
            print(f"{row['preset']:<12} FAILED: {'; '.join(row.get('problems', []))[:200]}")
            continue
        print(f"{row['preset']:<12} {row['cpus']:>4} {row['boot_host_s']:>11.0f} "
              f"{row.get('boot_cpu_s') or float('nan'):>10.0f} "
              f"{row['boot_sim_s']:>10.3f} {row['sim_us_per_host_s']:>13.1f} "
              f"{row['insts_per_host_s']:>12.3g}")
    return 0 if all(row.get("ok") for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
