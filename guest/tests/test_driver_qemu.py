"""The hardware-counters driver in a real guest without the device (QEMU): it says so at
boot and to every command that needs the device, and its reverse map (the pid and virtual
page the hot-page answer gives for each frame) names the right process and page."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pimcloud.guest import qemu
from pimcloud.guest.kernel import build_kernel

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "build" / "guest" / "pimcloud-agent" / "pimcloud-hw-static"

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which(qemu.QEMU) is None, reason="needs qemu-system-x86"),
]


def test_driver_without_device_says_so_and_its_reverse_map_is_right(tmp_path: Path) -> None:
    if not TOOL.exists():
        pytest.skip(f"build the static tool first (make cxx): {TOOL} is missing")
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    shutil.copy2(TOOL, scenario / "pimcloud-hw")
    (scenario / "run.sh").write_text(
        'out="$PIMCLOUD_RESULTS"\n'
        "dmesg | grep pimcloud_counters > \"$out/dmesg.txt\"\n"
        "ls -l /dev/pimcloud_counters > \"$out/node.txt\" 2>&1\n"
        './pimcloud-hw info > "$out/info.txt" 2>&1; echo "info $?" >> "$out/codes.txt"\n'
        './pimcloud-hw self-test > "$out/self.txt" 2>&1; echo "self $?" >> "$out/codes.txt"\n'
        './pimcloud-hw whois 1 > "$out/whois.txt" 2>&1; echo "whois $?" >> "$out/codes.txt"\n')
    run_dir = tmp_path / "run"
    result = qemu.run_scenario("paper", scenario, out=run_dir, timeout=900,
                               kernel=build_kernel().bzimage)
    assert result.ok, [*result.problems, result.console_tail]
    results = run_dir / "results"
    assert "no ACPI PIMC table" in (results / "dmesg.txt").read_text()
    assert "pimcloud_counters" in (results / "node.txt").read_text()
    codes = dict(line.split() for line in (results / "codes.txt").read_text().splitlines())
    # No device: info fails and names why.
    assert codes["info"] == "1"
    assert "no PimCounters device" in (results / "info.txt").read_text()
    # The reverse map needs no device: this process's own page is found.
    assert codes["self"] == "0", (results / "self.txt").read_text()
    assert ": ok" in (results / "self.txt").read_text()
    # A frame nothing maps (the first page of memory) is answered with dashes.
    assert (results / "whois.txt").read_text().split()[1:] == ["-", "-"]
