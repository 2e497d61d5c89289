"""Progress checkpoints of a preemptible gem5 run, kept across its attempts.

pim_fs.py (``--progress-dir``) saves ``ckpt-<tick>/`` every so many host seconds, and
before it ``segments/<tick>/`` with the statistics and console the attempt wrote since
its previous progress checkpoint.  An attempt of a run that was killed, preempted or cut
off resumes from the latest checkpoint; when the run ends, its statistics and console are
the segments in tick order followed by what the last attempt wrote, as one file each.

What is identical to an uninterrupted run: the guest (memory, processes, clocks, the
requests and their records) and every statistic's total.  What is not: caches, branch
predictors and pipelines restart cold at each resume (gem5 writes back and drains them),
and the statistics interval around a checkpoint is split between two dumps.  Counters
that gem5 keeps from the start of its process (simOps) begin again at 0 in each process
of a resumed run; each segment names its process (segment.json ``process``, written by
gem5-configs/pim_fs.py), so ops_of_processes can add them up.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

STITCHED = ("stats.txt", "board.pc.com_1.device")


class RunProgress:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def latest(self) -> tuple[Path, int] | None:
        """The newest complete progress checkpoint and its tick."""
        found = []
        for path in self.folder.glob("ckpt-*"):
            tick = path.name.removeprefix("ckpt-")
            if tick.isdigit() and (path / "m5.cpt").is_file():
                found.append((int(tick), path))
        if not found:
            return None
        tick, path = max(found)
        return path, tick

    def saved_span(self) -> tuple[int, float, float] | None:
        """Simulated ticks its progress checkpoints hold (from the run's start to the
        latest), when the latest was saved (epoch s), and the CPU seconds its segments
        took (the run's own pace; host seconds for segments written before CPU time was
        kept); None: nothing saved."""
        latest = self.latest()
        if latest is None:
            return None
        starts, cpu_s = [], 0.0
        for path in self.folder.glob("segments/*/segment.json"):
            if not path.parent.name.isdigit() or int(path.parent.name) > latest[1]:
                continue  # an orphan: redone by the next attempt
            try:
                info = json.loads(path.read_text())
                starts.append(int(info["from_tick"]))
                cpu_s += float(info.get("cpu_seconds", info.get("host_seconds", 0.0)))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        if not starts:
            return None
        try:
            saved_at = latest[0].stat().st_mtime
        except FileNotFoundError:  # replaced by a newer one as it was read
            return None
        return max(0, latest[1] - min(starts)), saved_at, cpu_s

    def drop_orphans(self) -> None:
        """Remove segments past the latest checkpoint: an attempt killed between writing
        its segment and its checkpoint left them, and the resumed run does that part again."""
        latest = self.latest()
        for path in self.folder.glob(".partial-*"):  # a checkpoint it had begun to write
            shutil.rmtree(path, ignore_errors=True)
        for path in self.folder.glob("segments/*"):
            if not path.name.isdigit() or latest is None or int(path.name) > latest[1]:
                shutil.rmtree(path, ignore_errors=True)

    def segments(self, up_to_tick: int) -> list[dict[str, Any]]:
        """The saved segments that end at or before ``up_to_tick``, in tick order (those
        after it were written by the attempt being stitched, whose files hold them)."""
        kept = []
        for path in self.folder.glob("segments/*"):
            if not path.name.isdigit() or int(path.name) > up_to_tick:
                continue
            try:
                info = json.loads((path / "segment.json").read_text())
            except (OSError, ValueError):
                continue
            kept.append({**info, "path": path})
        return sorted(kept, key=lambda info: info["to_tick"])

    def stitch(self, m5out: Path, up_to_tick: int) -> list[dict[str, Any]]:
        """Put the segments before what the last attempt wrote into ``m5out`` (stats.txt,
        console): the run's files as one. Returns the segments used."""
        used = self.segments(up_to_tick)
        if not used:
            return []
        for info in used:
            ops = last_sim_ops(info["path"] / "stats.txt")
            if ops is not None:
                info["sim_ops"] = ops
        for name in STITCHED:
            parts = [info["path"] / name for info in used] + [m5out / name]
            data = b"".join(path.read_bytes() for path in parts if path.is_file())
            (m5out / name).write_bytes(data)
        return [{k: v for k, v in info.items() if k != "path"} for info in used]

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def last_sim_ops(stats: Path) -> float | None:
    """The last ``simOps`` in a gem5 stats.txt: the micro-ops its process's cores ran from
    its start to that dump (gem5 counts them over every dump).  None without."""
    ops = None
    try:
        with stats.open(encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("simOps "):
                    ops = float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return ops if ops and ops > 0 else None


def ops_of_processes(segments: list[dict[str, Any]], last_process_ops: float | None
                     ) -> float | None:
    """The micro-ops a resumed run ran: for each earlier gem5 process its segments' largest
    simOps (a process counts from its own start), plus the last process's
    (``last_process_ops``, its own stats.txt before stitching).  None where a segment does
    not name its process or holds no simOps (written before segments named theirs)."""
    if last_process_ops is None:
        return None
    by_process: dict[str, float] = {}
    for info in segments:
        process, ops = info.get("process"), info.get("sim_ops")
        if not process or ops is None:
            return None
        by_process[process] = max(by_process.get(process, 0.0), float(ops))
    return sum(by_process.values()) + last_process_ops
