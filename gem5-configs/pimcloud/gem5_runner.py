"""Run gem5 (found through $GEM5) on the bundle's scripts, from the host side.

gem5 is a prerequisite the user provides: a gem5.opt of v24.0.0.1 for X86 built with
EXTRAS=<this repository>/scons-extra.  Nothing here fetches or builds gem5.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

GEM5_CONFIGS = Path(__file__).resolve().parents[1]
REQUIRED_VERSION = "24.0"
EXTRAS_OBJECTS = ("PimAcpiTable", "PimHaltGuard", "PimHpet", "PimLinkRouter")


class Gem5Missing(RuntimeError):
    """No usable gem5: the message says what to set or build."""


@dataclass(frozen=True)
class Gem5Info:
    path: Path
    version: str
    isas: list[str]
    present: list[str]
    missing: list[str]
    # False in a gem5.fast: assertions and debug flags are compiled out, so a run that
    # gem5.opt stops at a failed assertion goes on (gem5-configs/README.md, "gem5.fast").
    assertions: bool = True

    @property
    def build(self) -> str:
        return "opt" if self.assertions else "fast"


# What a gem5.fast gives up, said by `gem5 check` and by a campaign that runs one.
FAST_BUILD_NOTE = ("a fast build (gem5.fast): assertions and debug flags are compiled out, "
                   "so a run that gem5.opt would stop at a failed assertion goes on with "
                   "what that assertion guarded; check a new configuration with gem5.opt "
                   "first (gem5-configs/README.md, 'gem5.fast')")

# Why everything that needs gem5 is skipped or refused without it: one text for all.
NO_GEM5 = ("GEM5 is not set: point it at a gem5.opt (v24.0.0.1, X86) built with "
           f"EXTRAS={GEM5_CONFIGS.parent / 'scons-extra'}")


def gem5_binary(named: str | os.PathLike[str] | None = None) -> Path:
    """``named`` (a campaign's own gem5, e.g. a gem5.fast), else $GEM5, checked to be an
    executable file."""
    configured = str(named) if named else os.environ.get("GEM5")
    if not configured:
        raise Gem5Missing(NO_GEM5)
    path = Path(configured)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise Gem5Missing(f"GEM5={configured} is not an executable file")
    return path


def inspect_gem5(timeout: float = 300, named: str | os.PathLike[str] | None = None
                 ) -> Gem5Info:
    """Ask gem5 itself for its version, ISAs and which SimObjects it holds."""
    binary = gem5_binary(named)
    done = subprocess.run([str(binary), "--quiet", str(GEM5_CONFIGS / "check_gem5.py")],
                          capture_output=True, text=True, timeout=timeout, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("PIMCLOUD-GEM5-CHECK "):
            report = json.loads(line.split(" ", 1)[1])
            return Gem5Info(binary, report["version"], report["isas"], report["present"],
                            report["missing"], bool(report.get("tracing", True)))
    raise Gem5Missing(f"{binary} did not run the check script (exit {done.returncode}):\n"
                      f"{(done.stdout + done.stderr)[-2000:]}")


def require_usable_gem5(named: str | os.PathLike[str] | None = None) -> Gem5Info:
    """gem5 with X86 and our SimObjects, or Gem5Missing naming exactly what is missing."""
    info = inspect_gem5(named=named)
    problems = []
    if not info.version.startswith(REQUIRED_VERSION):
        problems.append(f"version {info.version} (the bundle is written for v24.0.0.1)")
    if "X86" not in info.isas:
        problems.append(f"ISAs {info.isas} lack X86: build build/X86/gem5.opt")
    missing_extras = [name for name in EXTRAS_OBJECTS if name in info.missing]
    if missing_extras:
        problems.append(f"SimObjects {', '.join(missing_extras)} are missing: rebuild with "
                        f"EXTRAS={GEM5_CONFIGS.parent / 'scons-extra'}")
    other = [name for name in info.missing if name not in EXTRAS_OBJECTS]
    if other:
        problems.append(f"stock SimObjects missing: {', '.join(other)}")
    if problems:
        raise Gem5Missing(f"{info.path}: " + "; ".join(problems))
    return info
