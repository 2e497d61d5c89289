"""Parse speed of stats.txt: the columnar parser against the line-by-line reference.

Writes a large stats.txt of the paper's server (4 host + 16 PIM cores, two stacks,
caches, histograms, per-requestor memory-controller stats, a 1000-element vector per
host core), parses it with both parsers and prints seconds and MB/s.

    .venv/bin/python analysis/bench/bench_parse_stats.py --size-mb 1024
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pimcloud.analysis.stats_reference import parse_stats_reference
from pimcloud.analysis.synthetic import dump_text, server_dump_lines
from pimcloud.stats_file import ParsedStats, parse_stats


def write_stats(path: Path, size_mb: float, seed: int = 0) -> int:
    """Write dumps until the file reaches ``size_mb``; returns the number of dumps.

    A pool of distinct dumps is written round-robin, so values differ between
    neighbouring dumps without formatting a gigabyte in Python.
    """
    rng = np.random.default_rng(seed)
    pool = [
        dump_text(server_dump_lines(rng, dump, cpu_vector=1000)).encode()
        for dump in range(16)
    ]
    target = int(size_mb * 1e6)
    written = dumps = 0
    with path.open("wb") as stream:
        while written < target:
            block = pool[dumps % len(pool)]
            stream.write(block)
            written += len(block)
            dumps += 1
    return dumps


def timed(label: str, function: Callable[[Path], ParsedStats], path: Path, size_mb: float
          ) -> float:
    # CPU time of this process is what one core spends; wall time also counts
    # waiting for a core on a busy machine.
    start, start_cpu = time.perf_counter(), time.process_time()
    parsed = function(path)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - start_cpu
    print(
        f"{label:<10} wall {seconds:7.2f} s ({size_mb / seconds:6.1f} MB/s)  "
        f"cpu {cpu:7.2f} s ({size_mb / cpu:6.1f} MB/s)  "
        f"{len(parsed.stats):>11,} rows  {len(parsed.dumps):>6,} dumps"
    )
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1024.0,
                        help="size of the file the columnar parser reads (default 1024)")
    parser.add_argument("--reference-mb", type=float, default=100.0,
                        help="size of the file the reference parser reads; its time is "
                             "extrapolated linearly to --size-mb (default 100)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the files")
    args = parser.parse_args()
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        big = Path(folder) / "stats-big.txt"
        small = Path(folder) / "stats-small.txt"
        write_stats(big, args.size_mb)
        write_stats(small, args.reference_mb)
        big_mb = big.stat().st_size / 1e6
        small_mb = small.stat().st_size / 1e6
        print(f"files: {big_mb:.1f} MB and {small_mb:.1f} MB")
        fast_small = timed("columnar", parse_stats, small, small_mb)
        reference_small = timed("reference", parse_stats_reference, small, small_mb)
        fast_big = timed("columnar", parse_stats, big, big_mb)
        print(
            f"cpu seconds: reference extrapolated to {big_mb:.0f} MB: "
            f"{reference_small * big_mb / small_mb:.1f} s; "
            f"speed-up on {small_mb:.0f} MB: {reference_small / fast_small:.1f}x; "
            f"columnar at {big_mb:.0f} MB: {fast_big:.1f} s"
        )


if __name__ == "__main__":
    main()
