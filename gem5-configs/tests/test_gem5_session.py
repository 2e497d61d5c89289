"""pimcloud gem5 boot/restore from the host side: command lines, the guest's NUMA check,
and failures reported with their cause. A stand-in gem5 (a script writing what gem5
would) tests the host logic here; the real boot runs when $GEM5 is set."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from pimcloud.gem5_runner import NO_GEM5
from pimcloud.gem5_session import (
    Gem5Inputs,
    boot,
    read_boot,
    restore,
    restore_mode,
    unimplemented_instructions,
)
from pimcloud.topology import load_topology, numa_nodes, slit_distances

FAKE = '''#!/usr/bin/env python3
import json, os, sys, tarfile
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("-d") + 1]); out.mkdir(parents=True, exist_ok=True)
ckpt = Path(args[args.index("--checkpoint-dir") + 1])
console = os.environ["FAKE_CONSOLE"]
if "boot" in args:
    if os.environ.get("FAKE_FAIL"):
        print("panic: fake failure"); sys.exit(1)
    ckpt.mkdir(parents=True)
    (out / "board.pc.com_1.device").write_text(Path(console).read_text())
    print("pimcloud: exit at tick 2000000000000 (5 s host): checkpoint")
    sys.exit(0)
Path(os.environ["FAKE_ARGS"]).write_text(json.dumps(args))
(out / "board.pc.com_1.device").write_text("pimcloud-scenario-exit 0 uptime_s=3.0\\n")
with tarfile.open(out / "results.tar", "w") as archive:
    archive.add(Path(os.environ["FAKE_RESULT"]), arcname="answer.txt")
print("pimcloud: exit at tick 2500000000000 (9 s host): m5_exit instruction encountered")
'''


def _console(topology_name: str, break_distance: bool = False,
             crng: str | None = "ready") -> str:
    topology = load_topology(topology_name)
    slit = slit_distances(topology)
    lines = ["pimcloud-init uptime_s=1.5", "pimcloud-clocksource hpet available=hpet,tsc"]
    if crng is not None:  # None: an image made before the init seeded the CRNG
        lines.insert(1, f"pimcloud-rng crng={crng} was_ready=0 seed=1")
    for node in numa_nodes(topology):
        distances = list(slit[node.node_id])
        if break_distance and node.node_id == 1:
            distances[0] += 1
        cpus = f"{node.cpus[0]}-{node.cpus[-1]}" if node.cpus else ""
        kib = node.capacity // 1024
        lines.append(f"pimcloud-node {node.node_id} cpus={cpus} present_kib={kib} "
                     f"memtotal_kib={kib} distance={','.join(map(str, distances))}")
    lines.append("pimcloud-ready uptime_s=2.0")
    return "\n".join(lines) + "\n"


@pytest.fixture
def fake_gem5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Gem5Inputs:
    gem5 = tmp_path / "gem5.opt"
    gem5.write_text(FAKE)
    gem5.chmod(gem5.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "vmlinux").write_text("kernel")
    (tmp_path / "root.ext4").write_text("image")
    monkeypatch.setenv("FAKE_ARGS", str(tmp_path / "args.json"))
    (tmp_path / "answer.txt").write_text("42\n")
    monkeypatch.setenv("FAKE_RESULT", str(tmp_path / "answer.txt"))
    return Gem5Inputs(gem5, "paper", tmp_path / "vmlinux", tmp_path / "root.ext4")


def _set_console(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    (tmp_path / "console.txt").write_text(text)
    monkeypatch.setenv("FAKE_CONSOLE", str(tmp_path / "console.txt"))


def test_boot_checks_the_guest_nodes_and_restore_returns_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_gem5: Gem5Inputs) -> None:
    _set_console(tmp_path, monkeypatch, _console("paper"))
    report = boot(fake_gem5, tmp_path / "ckpt-paper")
    assert report.ok, report.problems
    assert report.tick == 2 * 10**12 and report.clocksource == "hpet"
    record = read_boot(tmp_path / "ckpt-paper")
    assert record["simulated_seconds"] == 2.0 and len(record["nodes"]) == 3
    assert record["crng_ready"] is True
    assert record["input_sha256"] == {
        "kernel": hashlib.sha256(b"kernel").hexdigest(),
        "image": hashlib.sha256(b"image").hexdigest()}
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    (scenario / "run.sh").write_text("echo hi\n")
    run = restore(fake_gem5, tmp_path / "ckpt-paper", scenario, tmp_path / "run",
                  fast_forward=True, max_seconds=1.5)
    assert run.ok, run.problems
    assert run.results == ["answer.txt"] and run.simulated_seconds == pytest.approx(0.5)
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[args.index("--max-seconds") + 1] == "3.500000"
    assert "--fast-forward" in args and args[args.index("--topology") + 1] == "paper"
    # An image rebuilt in place since the boot: its checkpoint would read garbage.
    (tmp_path / "root.ext4").write_text("image, rebuilt")
    with pytest.raises(ValueError, match="the image changed since this boot"):
        restore(fake_gem5, tmp_path / "ckpt-paper", scenario, tmp_path / "run2")


@pytest.mark.parametrize("crng", ["not-ready", None])
def test_a_guest_whose_crng_is_not_ready_fails_the_boot(
        crng: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        fake_gem5: Gem5Inputs) -> None:
    _set_console(tmp_path, monkeypatch, _console("paper", crng=crng))
    report = boot(fake_gem5, tmp_path / "ckpt")
    assert not report.ok
    assert any("CRNG is not ready" in problem for problem in report.problems), report.problems


def test_a_guest_layout_unlike_the_model_fails_the_boot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_gem5: Gem5Inputs) -> None:
    _set_console(tmp_path, monkeypatch, _console("paper", break_distance=True))
    report = boot(fake_gem5, tmp_path / "ckpt")
    assert not report.ok
    assert any("node 1: distances" in p for p in report.problems), report.problems
    with pytest.raises(ValueError, match="its boot failed"):
        read_boot(tmp_path / "ckpt")


def test_a_failed_gem5_is_reported_with_its_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_gem5: Gem5Inputs) -> None:
    _set_console(tmp_path, monkeypatch, "")
    monkeypatch.setenv("FAKE_FAIL", "1")
    report = boot(fake_gem5, tmp_path / "ckpt")
    assert not report.ok
    assert any("exit 1" in p and "fake failure" in p for p in report.problems)
    with pytest.raises(ValueError, match="pimcloud gem5 boot"):
        read_boot(tmp_path / "nothing-here")


def test_restore_mode_names_every_option() -> None:
    mode = restore_mode(Path("/c"), Path("/s.tar"), max_seconds=2, stats_period="100ms")
    assert mode == ["restore", "--checkpoint-dir", "/c", "--scenario", "/s.tar",
                    "--max-seconds", "2.000000", "--stats-period", "100ms"]
    assert restore_mode(Path("/c"), Path("/s.tar"), counting=False)[-1] == "--counters-detached"


NEEDS_GEM5 = pytest.mark.skipif(not os.environ.get("GEM5"), reason=NO_GEM5)

# kvstore at 4000 RPS on the detailed cores, started after `m5 switchcpu`: its load
# generator sleeps in clock_nanosleep between arrivals, so it needs the timer interrupts
# of the CPU it sleeps on.  Without scons-extra's PimHaltGuard, one CPU of this run went
# to sleep with its APIC timer interrupt pending and the generator never woke again.
TIMER_SCENARIO = """#!/bin/sh
export PATH="/opt/pimcloud/bin:/sbin:/usr/sbin:/bin:/usr/bin:$PATH"
mkdir -p /run/pimcloud
pimcloud-kvstore --mode integrated --rps 4000 --seconds 0.1 --warmup 80 --seed 1 \\
    --threads 4 --out "$PIMCLOUD_RESULTS" --interval-ms 100 --opt keys=20000 \\
    --ready-file /run/pimcloud/ready --start-file /run/pimcloud/start > /dev/null &
while [ ! -e /run/pimcloud/ready ]; do sleep 0.01; done
m5 switchcpu
touch /run/pimcloud/start
wait $!
"""


@pytest.fixture(scope="module")
def paper_boot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Gem5Inputs, Path]:
    from pimcloud.gem5_cli import gem5_inputs

    inputs = gem5_inputs("paper", None, None, 8)
    folder = tmp_path_factory.mktemp("paper") / "boot"
    report = boot(inputs, folder)
    assert report.ok, report.problems
    # gem5's TSC runs at each CPU's clock: the guest must keep time on the HPET.
    assert report.clocksource == "hpet"
    return inputs, folder


@pytest.mark.gem5
@pytest.mark.slow
@NEEDS_GEM5
def test_paper_boots_in_gem5_with_the_model_layout(
        paper_boot: tuple[Gem5Inputs, Path]) -> None:
    _, folder = paper_boot
    record = read_boot(folder)
    assert record["ok"] and len(record["nodes"]) == len(numa_nodes(load_topology("paper")))


@pytest.mark.gem5
@pytest.mark.slow
@NEEDS_GEM5
def test_timed_sleeps_wake_on_time_on_the_detailed_cores(
        paper_boot: tuple[Gem5Inputs, Path], tmp_path: Path) -> None:
    inputs, folder = paper_boot
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    (scenario / "run.sh").write_text(TIMER_SCENARIO)
    run = restore(inputs, folder, scenario, tmp_path / "run", fast_forward=True,
                  max_seconds=0.6)
    assert run.ok, run.problems
    summary = json.loads((tmp_path / "run" / "results" / "summary.json").read_text())
    # Natively the sojourn p99 is tens of µs; a CPU whose tick stopped delays arrivals
    # by hundreds of ms.
    assert summary["requests"] >= 300 and summary["failed"] == 0
    assert summary["sojourn_p99_ns"] < 2_000_000, summary
    # Nothing the guest ran (init, scenario, harness) was an x87 no-op in gem5.
    assert run.unimplemented == [], run.unimplemented


def test_unimplemented_instructions_are_named_once_and_fwait_is_harmless() -> None:
    log = ("src/sim/simulate.cc:199: info: Entering event queue @ 0.  Starting simulation...\n"
           "build/X86/arch/x86/generated/exec-ns.cc.inc:27: warn: instruction 'fwait' "
           "unimplemented\n"
           "build/X86/arch/x86/generated/exec-ns.cc.inc:27: warn: instruction 'fdivrp' "
           "unimplemented\n"
           "build/X86/arch/x86/generated/exec-ns.cc.inc:27: warn: instruction 'fdivrp' "
           "unimplemented\n"
           "build/X86/arch/x86/generated/exec-ns.cc.inc:27: warn: instruction 'lsl_Gv_Ew' "
           "unimplemented\n")
    assert unimplemented_instructions(log) == ["fdivrp", "lsl_Gv_Ew"]
    assert unimplemented_instructions("warn: instruction 'fwait' unimplemented\n") == []


def test_a_campaign_checkpoint_reads_as_a_boot(tmp_path: Path) -> None:
    """The checkpoint store's folders (meta.json, ckpt/) restore and probe like a boot."""
    folder = tmp_path / "mini-0123456789abcdef"
    (folder / "ckpt").mkdir(parents=True)
    command = ["gem5.opt", "-d", "m5out", "pim_fs.py", "--topology", "mini", "--kernel", "k",
               "--disk", "i", "--mem-divisor", "2", "--counters", "boot"]
    kernel, image = tmp_path / "vmlinux", tmp_path / "root.ext4"
    kernel.write_text("kernel")
    image.write_text("image")
    (folder / "meta.json").write_text(json.dumps({
        "topology": "mini", "key": "0123456789abcdef", "tick": 5, "simulated_seconds": 0.67,
        "kernel": str(kernel), "image": str(image), "command": command}))
    os.utime(kernel, (1_000_000, 1_000_000))
    os.utime(image, (1_000_000, 1_000_000))
    record = read_boot(folder)
    assert (record["topology"], record["mem_divisor"], record["counters"]) == ("mini", 2, True)
    assert record["simulated_seconds"] == 0.67 and record["image"] == str(image)
    image.write_text("image, rebuilt")  # newer than the boot
    with pytest.raises(ValueError, match="its image changed since the boot"):
        read_boot(folder)
    os.utime(image, (1_000_000, 1_000_000))
    (folder / "ckpt").rmdir()
    with pytest.raises(ValueError, match="ckpt folder is missing"):
        read_boot(folder)
