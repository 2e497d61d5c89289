"""The QEMU backend's decisions before any boot: memory divisor, share, command lines,
the initramfs, and the errors for missing inputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pimcloud.guest import qemu
from pimcloud.guest.qemu import (
    QemuRunError,
    choose_share,
    default_memory_divisor,
    kernel_cmdline,
    kernel_config,
    run_scenario,
    scaled_topology,
)
from pimcloud.topology import load_topology, numa_nodes

GIB = 1 << 30


def test_paper_memory_is_divided_so_each_node_fits_in_a_gib() -> None:
    paper = load_topology("paper")
    divisor = default_memory_divisor(paper)
    assert divisor == 8  # 8 GiB stacks
    scaled = scaled_topology(paper, divisor)
    assert max(node.capacity for node in numa_nodes(scaled)) == GIB
    assert default_memory_divisor(paper, node_limit=8 * GIB) == 1


def test_a_divisor_that_starves_a_node_is_refused() -> None:
    with pytest.raises(QemuRunError, match="at least 64 MiB"):
        scaled_topology(load_topology("paper"), 256)


def test_share_follows_the_kernel_config(tmp_path: Path) -> None:
    builtin = {option: "y" for option in qemu.NEEDS_9P}
    assert choose_share(builtin) == "9p"
    assert choose_share({**builtin, "CONFIG_9P_FS": "m"}) == "initramfs"
    assert choose_share({}) == "initramfs"
    # Debian layout: config-<version> beside vmlinuz-<version>.
    (tmp_path / "vmlinuz-6.1.0-9-amd64").write_bytes(b"k")
    (tmp_path / "config-6.1.0-9-amd64").write_text("CONFIG_9P_FS=m\n# CONFIG_X is not set\n")
    assert kernel_config(tmp_path / "vmlinuz-6.1.0-9-amd64") == {"CONFIG_9P_FS": "m"}
    # Project layout: config beside bzImage.
    (tmp_path / "bzImage").write_bytes(b"k")
    (tmp_path / "config").write_text("\n".join(f"{o}=y" for o in qemu.NEEDS_9P))
    assert choose_share(kernel_config(tmp_path / "bzImage")) == "9p"


def test_kernel_command_line() -> None:
    line = kernel_cmdline("initramfs", with_image=False).split()
    for word in ("console=ttyS0", "tsc=reliable", "clocksource=tsc", "pimcloud.backend=qemu",
                 "pimcloud.share=initramfs", "panic=-1", f"rdinit={qemu.GUEST_INIT}"):
        assert word in line
    with_image = kernel_cmdline("9p", with_image=True, append="quiet").split()
    assert "root=/dev/vda" in with_image and f"init={qemu.GUEST_INIT}" in with_image
    assert with_image[-1] == "quiet"


def test_qemu_command_has_the_topology_and_no_kvm(tmp_path: Path) -> None:
    scaled = scaled_topology(load_topology("paper"), 8)
    command = qemu.qemu_command(scaled, tmp_path / "k", tmp_path / "i", None, tmp_path / "s",
                                "console=ttyS0", tmp_path / "console.log")
    joined = " ".join(command)
    assert "-accel tcg,thread=" in joined and "kvm" not in joined
    assert "-smp 20," in joined and "-m 2048M" in joined
    assert "-no-reboot" in command and "-nographic" in command
    assert f"file:{tmp_path / 'console.log'}" in command
    assert "mount_tag=pimcloud" in joined
    assert sum(1 for arg in command if arg.startswith("node,nodeid=")) == 3


@pytest.mark.skipif(shutil.which("cc") is None or not qemu.BUSYBOX.exists(),
                    reason="needs a C compiler and busybox-static")
def test_base_initramfs_holds_busybox_init_m5_and_the_rng_seed(tmp_path: Path) -> None:
    archive = qemu.base_initramfs(qemu.m5_binary(print), qemu.rng_seed_binary(print))
    assert archive.startswith(b"070701")
    for name in (b"bin/busybox\0", b"sbin/pimcloud-init\0", b"sbin/m5\0",
                 b"sbin/pimcloud-rng-seed\0", b"bin/sh\0",
                 b"pimcloud/host/out\0", b"TRAILER!!!\0"):
        assert name in archive, name
    assert qemu.INIT_SCRIPT.read_bytes() in archive


def _scenario(tmp_path: Path) -> Path:
    script = tmp_path / "s.sh"
    script.write_text("true\n")
    return script


@pytest.mark.skipif(shutil.which(qemu.QEMU) is None, reason="needs qemu-system-x86")
def test_missing_kernel_image_and_initrd_are_reported(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    with pytest.raises(QemuRunError, match=r"kernel .*nope.* does not exist"):
        run_scenario("paper", scenario, kernel=tmp_path / "nope", out=tmp_path / "r1")
    with pytest.raises(QemuRunError, match=r"image .* does not exist"):
        run_scenario("paper", scenario, image=tmp_path / "no.ext4", out=tmp_path / "r2")
    with pytest.raises(QemuRunError, match=r"initrd .* does not exist"):
        run_scenario("paper", scenario, initrd=tmp_path / "no.cpio", out=tmp_path / "r3")
    assert not any((tmp_path / name).exists() for name in ("r1", "r2", "r3"))


@pytest.mark.skipif(shutil.which(qemu.QEMU) is None, reason="needs qemu-system-x86")
def test_an_image_needs_a_kernel_with_virtio_and_9p(tmp_path: Path) -> None:
    kernel = tmp_path / "vmlinuz-6.1.0-9-amd64"
    kernel.write_bytes(b"k")
    (tmp_path / "config-6.1.0-9-amd64").write_text("CONFIG_VIRTIO_BLK=m\nCONFIG_9P_FS=m\n")
    image = tmp_path / "root.ext4"
    image.write_bytes(b"\0" * 1024)
    with pytest.raises(QemuRunError, match="cannot boot --image"):
        run_scenario("paper", _scenario(tmp_path), kernel=kernel, image=image,
                     out=tmp_path / "r")


@pytest.mark.skipif(shutil.which(qemu.QEMU) is None, reason="needs qemu-system-x86")
def test_a_used_run_folder_is_refused(tmp_path: Path) -> None:
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"k")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "run.json").write_text("{}")
    with pytest.raises(QemuRunError, match="not empty"):
        run_scenario("paper", _scenario(tmp_path), kernel=kernel, out=tmp_path / "used")


def test_tcg_threads_follow_the_host_cores() -> None:
    assert qemu.tcg_threads(20, host_cpus=2) == "single"
    assert qemu.tcg_threads(20, host_cpus=32) == "multi"
