"""Real QEMU boots of the paper topology: layout, scenario round trip, clean exit, and the
failure modes (kernel panic, hang, m5 fail) reported as such with no QEMU left behind."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pytest
from pimcloud.guest import qemu
from pimcloud.guest.image import build_image
from pimcloud.guest.kernel import build_kernel
from pimcloud.guest.stock_kernel import stock_kernel
from pimcloud.topology import load_topology, numa_nodes, slit_distances

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which(qemu.QEMU) is None, reason="needs qemu-system-x86"),
]


def _qemu_processes_for(run_dir: Path) -> list[int]:
    """QEMU processes whose command line names this run's folder (its console file)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if qemu.QEMU.encode() in cmdline and str(run_dir).encode() in cmdline:
            found.append(int(proc.name))
    return found


def _boot_inputs(which: str) -> dict[str, Path]:
    """The kernel (and image) to boot. The project's own are built here if the cache lacks
    them (a no-op when built), so a fresh machine builds and boots them."""
    if which == "stock":
        return {"kernel": stock_kernel()}
    inputs = {"kernel": build_kernel().bzimage}
    if which == "image":
        inputs["image"] = build_image().path
    return inputs


@pytest.mark.parametrize("which", ["stock", "project", "image"],
                         ids=["stock-kernel-initramfs", "project-kernel-9p",
                              "project-kernel-root-image"])
def test_paper_boots_with_the_model_layout_and_runs_a_scenario(tmp_path: Path,
                                                               which: str) -> None:
    token = secrets.token_hex(8)
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    (scenario / "input.txt").write_text(f"token {token}\n")
    (scenario / "run.sh").write_text(
        "set -e\n"
        'cat input.txt > "$PIMCLOUD_RESULTS/echo.txt"\n'
        'mkdir -p "$PIMCLOUD_RESULTS/deep/er"\n'
        'echo $((6 * 7)) > "$PIMCLOUD_RESULTS/deep/er/answer.txt"\n'
        'nproc > "$PIMCLOUD_RESULTS/nproc.txt"\n'
        'echo "backend $PIMCLOUD_BACKEND"\n'
        "m5 dumpresetstats\n"
        "m5 writefile input.txt copies/input.txt\n")
    run_dir = tmp_path / "run"
    result = qemu.run_scenario("paper", scenario, out=run_dir, timeout=600,
                               **_boot_inputs(which))
    assert result.cause == "exit", [*result.problems, result.console_tail]
    assert result.scenario_exit == 0 and result.ok, result.problems
    paper = load_topology("paper")
    scaled = paper.with_memory_divided(result.memory_divisor)
    assert result.memory_divisor == 8
    assert qemu.node_mismatches(scaled, result) == []
    assert [tuple(n["distances"]) for n in result.nodes] == [  # type: ignore[arg-type]
        tuple(row) for row in slit_distances(scaled)]
    assert [tuple(n["cpus"]) for n in result.nodes] == [  # type: ignore[arg-type]
        node.cpus for node in numa_nodes(paper)]
    assert result.share == ("initramfs" if which == "stock" else "9p")
    assert result.clocksource == "tsc"
    assert result.numa_balancing == "0"
    assert result.crng_ready is True  # pimcloud-rng-seed ran in the init
    results = run_dir / "results"
    assert (results / "echo.txt").read_text() == f"token {token}\n"
    assert (results / "deep/er/answer.txt").read_text() == "42\n"
    assert (results / "nproc.txt").read_text() == "20\n"
    log = (results / "scenario.log").read_text()
    assert "backend qemu" in log
    assert "m5: dumpresetstats: no-op outside gem5 (backend qemu)" in log
    assert (run_dir / "written/copies/input.txt").read_text() == f"token {token}\n"
    assert (run_dir / "console.log").is_file() and (run_dir / "run.json").is_file()
    assert result.times["guest_boot_to_init_s"] is not None
    assert _qemu_processes_for(run_dir) == []


def _script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.sh"
    path.write_text(text)
    return path


def test_a_bad_init_path_is_reported_as_a_kernel_panic(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = qemu.run_scenario("paper", _script(tmp_path, "true\n"), kernel=stock_kernel(),
                               out=run_dir, append="rdinit=/sbin/missing-init", timeout=600)
    assert result.cause == "panic"
    assert "Kernel panic - not syncing" in result.problems[0]
    assert "Kernel panic" in result.console_tail
    assert not result.ok
    assert _qemu_processes_for(run_dir) == []


def test_a_hang_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = qemu.run_scenario("paper", _script(tmp_path, "true\n"), kernel=stock_kernel(),
                               out=run_dir, timeout=3)
    assert result.cause == "timeout"
    assert "timeout" in result.problems[0]
    assert result.times["wall_s"] is not None and result.times["wall_s"] < 30
    assert _qemu_processes_for(run_dir) == []


def test_m5_fail_ends_the_run_with_its_code(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = qemu.run_scenario("paper", _script(tmp_path, "echo before\nm5 fail 3\n"),
                               kernel=stock_kernel(), out=run_dir, timeout=600)
    assert result.cause == "fail" and result.fail_code == 3
    assert "before" in (run_dir / "console.log").read_text()
    assert _qemu_processes_for(run_dir) == []
