"""The resource manager in a real guest: QEMU, `paper` topology, real kernel.

The guest script (guest/pimcloud-agent/tools/guest-integration.sh) runs two services and
a best-effort job under pimcloud-agent, then checks the kernel's own files: the cpusets
the agent wrote and /proc/<pid>/numa_maps after it migrated pages between stacks.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
STATIC = ("pimcloud-agent-static", "pimcloud_agent_demo_service_static",
          "pimcloud_agent_migration_bench_static")

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


def test_agent_moves_cores_and_pages_in_a_real_guest(tmp_path: Path) -> None:
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 missing: install Debian's qemu-system-x86")
    missing = [name for name in STATIC if not (BUILD / "guest/pimcloud-agent" / name).exists()]
    if missing:
        pytest.skip(f"build the static agent programs first (make cxx): missing {missing}")
    out = tmp_path / "run"
    done = subprocess.run(["sh", str(REPO / "guest/pimcloud-agent/tools/qemu-integration.sh"),
                           str(BUILD), str(out)], capture_output=True, text=True,
                          timeout=1500, check=False)
    log = (out / "results/scenario.log")
    detail = log.read_text() if log.exists() else done.stdout + done.stderr
    assert done.returncode == 0, detail[-4000:]
    checks = [line for line in detail.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert checks and all(line.startswith("PASS") for line in checks), "\n".join(checks)
    # The checks that read the kernel: cpusets and numa_maps page counts per node.
    assert any("a's pages migrated to stack 1" in line for line in checks)
    assert any("cpuset.cpus=" in line for line in checks)
