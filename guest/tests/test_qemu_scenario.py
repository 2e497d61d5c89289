"""Scenario files, the results archive and the console protocol of the guest init."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
from pathlib import Path

import pytest
from pimcloud.guest.scenario import (
    ScenarioError,
    is_tar,
    load_scenario,
    parse_console,
    parse_cpu_list,
    unpack_results,
)


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_script_is_passed_as_it_is(tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text("echo hi > $PIMCLOUD_RESULTS/hi\n")
    scenario = load_scenario(script)
    assert scenario.kind == "script"
    assert scenario.payload == b"echo hi > $PIMCLOUD_RESULTS/hi\n"
    assert not is_tar(scenario.payload)


def test_a_folder_becomes_a_deterministic_archive(tmp_path: Path) -> None:
    folder = tmp_path / "scn"
    (folder / "data").mkdir(parents=True)
    (folder / "run.sh").write_text("cat data/x\n")
    (folder / "data" / "x").write_bytes(b"\x00\x01payload")
    first = load_scenario(folder)
    (folder / "run.sh").touch()  # a new mtime must not change the bytes
    second = load_scenario(folder)
    assert first.kind == "archive" and is_tar(first.payload)
    assert first.payload == second.payload
    with tarfile.open(fileobj=io.BytesIO(first.payload)) as archive:
        assert sorted(archive.getnames()) == ["data", "data/x", "run.sh"]
        member = archive.extractfile("data/x")
        assert member is not None and member.read() == b"\x00\x01payload"
        assert {m.uid for m in archive.getmembers()} == {0}


def test_a_tar_archive_must_hold_run_sh(tmp_path: Path) -> None:
    good = tmp_path / "good.tar"
    good.write_bytes(_tar({"./run.sh": b"true\n", "./x": b"1"}))
    assert load_scenario(good).kind == "archive"
    bad = tmp_path / "bad.tar"
    bad.write_bytes(_tar({"other.sh": b"true\n"}))
    with pytest.raises(ScenarioError, match=r"no run\.sh"):
        load_scenario(bad)


@pytest.mark.parametrize(("name", "content", "message"), [
    ("missing.sh", None, "no such file"),
    ("empty.sh", b"  \n", "is empty"),
    ("binary", b"\x7fELF\x00\x01", "neither a shell script"),
])
def test_bad_scenarios_are_named_with_the_fix(tmp_path: Path, name: str,
                                              content: bytes | None, message: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ScenarioError, match=message) as caught:
        load_scenario(path)
    assert str(path) in str(caught.value)


def test_a_folder_without_run_sh_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"has no run\.sh"):
        load_scenario(tmp_path)


def test_results_unpack_inside_the_folder_only(tmp_path: Path) -> None:
    names = unpack_results(_tar({"./a.txt": b"A", "./sub/b.txt": b"B"}), tmp_path / "r")
    assert names == ["a.txt", "sub/b.txt"]
    assert (tmp_path / "r" / "sub" / "b.txt").read_bytes() == b"B"
    with pytest.raises(ScenarioError, match="outside"):
        unpack_results(_tar({"../evil": b"x"}), tmp_path / "r2")
    assert not (tmp_path / "evil").exists()


def test_cpu_lists() -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert parse_cpu_list("") == ()


def _file_block(name: str, data: bytes, *, size: int | None = None) -> str:
    encoded = base64.encodebytes(data).decode()
    return (f"pimcloud-file-begin {name} {len(data) if size is None else size}\n{encoded}"
            f"pimcloud-file-end {name} {hashlib.sha256(data).hexdigest()}\n")


CONSOLE = """\
[    0.000000] Linux version 6.1.0
[    6.9] Run /sbin/pimcloud-init as init process
pimcloud-init backend=qemu share=initramfs uptime_s=7.63
pimcloud-sysctl kernel.numa_balancing=0
pimcloud-rng crng=ready was_ready=0 seed=1
pimcloud-node 0 cpus=0-3 present_kib=0 memtotal_kib=0 distance=10,15,15
[    7.7] random: crng init done
pimcloud-node 1 cpus=4-11 present_kib=1048184 memtotal_kib=983720 distance=15,10,13
pimcloud-clocksource tsc available=tsc,hpet,acpi_pm
pimcloud-cgroup controllers=cpuset,cpu,memory
pimcloud-init-warning cannot mount tmpfs on /run
pimcloud-ready uptime_s=8.03
pimcloud-scenario-begin uptime_s=8.12
pimcloud-scenario-exit 3 uptime_s=9.5
"""


def test_console_lines_are_parsed() -> None:
    payload = bytes(range(256)) * 50
    report = parse_console(CONSOLE + _file_block("results.tar", payload)
                           + "pimcloud-exit uptime_s=10.25\npimcloud-m5-exit\n")
    assert report.backend == "qemu" and report.share == "initramfs"
    assert report.uptime_at_init_s == pytest.approx(7.63)
    assert report.uptime_at_ready_s == pytest.approx(8.03)
    assert [n.node_id for n in report.nodes] == [0, 1]
    assert report.nodes[1].cpus == tuple(range(4, 12))
    assert report.nodes[1].present_kib == 1048184
    assert report.nodes[1].distances == (15, 10, 13)
    assert report.nodes[0].cpus == (0, 1, 2, 3) and report.nodes[0].memtotal_kib == 0
    assert report.clocksource == "tsc"
    assert report.available_clocksources == ("tsc", "hpet", "acpi_pm")
    assert report.numa_balancing == "0"
    assert report.crng_ready is True
    assert report.cgroup_controllers == ("cpuset", "cpu", "memory")
    assert report.init_warnings == ["cannot mount tmpfs on /run"]
    assert report.scenario_exit == 3
    assert report.uptime_at_exit_s == pytest.approx(10.25)
    assert report.m5_exit
    assert report.files == {"results.tar": payload}
    assert not report.file_errors and report.panic is None and report.fail_code is None


def test_kernel_lines_inside_a_file_are_skipped_and_corruption_is_caught() -> None:
    data = b"x" * 300
    block = _file_block("a.bin", data)
    lines = block.splitlines()
    interleaved = "\n".join([lines[0], "[   9.1] some kernel message", *lines[1:]]) + "\n"
    assert parse_console(interleaved).files == {"a.bin": data}
    corrupt = block.replace(lines[1], lines[1][:-4] + "AAAA")
    report = parse_console(corrupt)
    assert report.files == {} and "checksum" in report.file_errors[0]
    truncated = parse_console(block.rsplit("pimcloud-file-end", 1)[0])
    assert "before its end marker" in truncated.file_errors[0]
    escaping = parse_console(_file_block("../x", data))
    assert escaping.files == {} and "outside" in escaping.file_errors[0]


def test_panic_fail_and_init_errors_are_reported() -> None:
    report = parse_console(
        "[ 1.2] Kernel panic - not syncing: No working init found.  Try passing init=\n")
    assert report.panic is not None and report.panic.startswith("Kernel panic - not syncing")
    assert not report.reached_init
    report = parse_console("pimcloud-init-error the scenario is empty\npimcloud-fail code=1\n")
    assert report.init_errors == ["the scenario is empty"]
    assert report.fail_code == 1


def test_node_comparison_finds_each_kind_of_difference() -> None:
    from pimcloud.guest.scenario import node_mismatches
    from pimcloud.topology import load_topology

    node2 = "pimcloud-node 2 cpus=12-19 present_kib=1048448 memtotal_kib=1 distance=15,13,10\n"
    nodes = parse_console(CONSOLE + node2).nodes
    paper = load_topology("paper").with_memory_divided(8)
    assert node_mismatches(paper, nodes) == []
    problems = node_mismatches(load_topology("tiered").with_memory_divided(8), nodes)
    assert any("node 0:" in p and "KiB present" in p for p in problems)
    moved = parse_console(CONSOLE + node2.replace("15,13,10", "20,20,10")).nodes
    assert node_mismatches(paper, moved) == ["node 2: distances [20, 20, 10] != [15, 13, 10]"]
    assert "guest nodes [0, 1]" in node_mismatches(paper, nodes[:2])[0]
