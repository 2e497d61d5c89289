"""The guest kernel: fragment parsing and checking, the built .config, and a QEMU boot.

The required options below are written out here, independently of guest/kernel/pimcloud.config,
so that a fragment which loses one of them fails this test.
"""

from __future__ import annotations

import shutil

import pytest
from pimcloud.guest.kernel import (
    FRAGMENT,
    KernelArtifacts,
    KernelBuildError,
    build_kernel,
    build_key,
    parse_config,
    parse_fragment,
    unmet_options,
)
from pimcloud.guest.numa_probe import mismatches, probe
from pimcloud.topology import load_topology

# What the guest needs, all built in (=y) unless a value is given.
REQUIRED = {
    "CONFIG_64BIT": "y", "CONFIG_SMP": "y", "CONFIG_NUMA": "y", "CONFIG_X86_64_ACPI_NUMA": "y",
    "CONFIG_ACPI": "y", "CONFIG_PCI": "y", "CONFIG_ACPI_TABLE_UPGRADE": "y",
    "CONFIG_BLK_DEV_INITRD": "y", "CONFIG_SERIAL_8250": "y", "CONFIG_SERIAL_8250_CONSOLE": "y",
    "CONFIG_ATA": "y", "CONFIG_ATA_PIIX": "y", "CONFIG_BLK_DEV_SD": "y",
    "CONFIG_VIRTIO_PCI": "y", "CONFIG_VIRTIO_BLK": "y", "CONFIG_NET_9P": "y",
    "CONFIG_NET_9P_VIRTIO": "y", "CONFIG_9P_FS": "y", "CONFIG_EXT4_FS": "y",
    "CONFIG_BINFMT_ELF": "y", "CONFIG_BINFMT_SCRIPT": "y", "CONFIG_PROC_FS": "y",
    "CONFIG_SYSFS": "y", "CONFIG_DEVTMPFS": "y", "CONFIG_DEVTMPFS_MOUNT": "y",
    "CONFIG_TMPFS": "y", "CONFIG_SHMEM": "y", "CONFIG_FUTEX": "y", "CONFIG_POSIX_TIMERS": "y",
    "CONFIG_EPOLL": "y", "CONFIG_EVENTFD": "y", "CONFIG_SIGNALFD": "y", "CONFIG_TIMERFD": "y",
    "CONFIG_UNIX": "y", "CONFIG_INET": "y", "CONFIG_MIGRATION": "y", "CONFIG_CGROUPS": "y",
    "CONFIG_CPUSETS": "y", "CONFIG_CGROUP_SCHED": "y", "CONFIG_FAIR_GROUP_SCHED": "y",
    "CONFIG_CFS_BANDWIDTH": "y", "CONFIG_PROC_PAGE_MONITOR": "y",
    "CONFIG_IDLE_PAGE_TRACKING": "y", "CONFIG_NUMA_BALANCING": "y", "CONFIG_X86_TSC": "y",
    "CONFIG_HPET_TIMER": "y", "CONFIG_MULTIUSER": "y", "CONFIG_SYSVIPC": "y",
    "CONFIG_POSIX_MQUEUE": "y", "CONFIG_PRINTK": "y", "CONFIG_PRINTK_TIME": "y",
    "CONFIG_PANIC_TIMEOUT": "-1",
}
MUST_BE_OFF = ["CONFIG_NUMA_BALANCING_DEFAULT_ENABLED", "CONFIG_RANDOMIZE_BASE"]
# Built in means no driver the boot needs is a module.
NOT_MODULES = ["CONFIG_ATA_PIIX", "CONFIG_VIRTIO_BLK", "CONFIG_EXT4_FS", "CONFIG_9P_FS"]


def test_fragment_parses_both_line_forms() -> None:
    text = "# a comment\nCONFIG_A=y\n\n# CONFIG_B is not set\nCONFIG_C=\"x y\"\nCONFIG_D=-1\n"
    assert parse_fragment(text) == {"CONFIG_A": "y", "CONFIG_B": None, "CONFIG_C": '"x y"',
                                    "CONFIG_D": "-1"}


def test_fragment_rejects_bad_lines_with_the_line_number() -> None:
    with pytest.raises(KernelBuildError, match=r"frag:2: .*not a Kconfig line"):
        parse_fragment("CONFIG_A=y\nA=y\n", "frag")
    with pytest.raises(KernelBuildError, match=r"frag:2: CONFIG_A is given twice"):
        parse_fragment("CONFIG_A=y\n# CONFIG_A is not set\n", "frag")


def test_unmet_options_names_each_dropped_or_changed_option() -> None:
    wanted = {"CONFIG_A": "y", "CONFIG_B": None, "CONFIG_C": "256", "CONFIG_D": "y",
              "CONFIG_E": None}
    config = parse_config("CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=64\n# CONFIG_E is not set\n")
    assert unmet_options(wanted, config) == [
        "CONFIG_B: wanted not set, got y",
        "CONFIG_C: wanted 256, got 64",
        "CONFIG_D: wanted y, got not set",
    ]


def test_build_key_follows_fragment_and_source_version() -> None:
    key = build_key(b"CONFIG_A=y\n", "6.1.1-1")
    assert key == build_key(b"CONFIG_A=y\n", "6.1.1-1")
    assert key != build_key(b"CONFIG_A=n\n", "6.1.1-1")
    assert key != build_key(b"CONFIG_A=y\n", "6.1.2-1")
    # The built-in driver's sources are part of the key: a changed driver rebuilds.
    assert key != build_key(b"CONFIG_A=y\n", "6.1.1-1", (b"driver",))


def test_fragment_asks_for_every_required_option() -> None:
    fragment = parse_fragment(FRAGMENT.read_text(), str(FRAGMENT))
    assert unmet_options(REQUIRED, {k: v for k, v in fragment.items() if v is not None}) == []
    for name in MUST_BE_OFF:
        assert fragment.get(name, "absent") is None, f"{name} must be '# ... is not set'"


@pytest.fixture(scope="module")
def kernel() -> KernelArtifacts:
    return build_kernel()


@pytest.mark.slow
def test_built_config_has_every_required_option(kernel: KernelArtifacts) -> None:
    config = parse_config(kernel.config.read_text())
    assert unmet_options(REQUIRED, config) == []
    assert int(config["CONFIG_NR_CPUS"]) >= 256
    for name in MUST_BE_OFF:
        assert config.get(name, "n") == "n", f"{name} is on"
    for name in NOT_MODULES:
        assert config.get(name) == "y", f"{name} is {config.get(name)}, must be built in"
    # The whole fragment holds, not only the options listed here.
    assert unmet_options(parse_fragment(FRAGMENT.read_text()), config) == []


@pytest.mark.slow
def test_artifacts_are_an_elf_vmlinux_and_a_bzimage(kernel: KernelArtifacts) -> None:
    assert kernel.vmlinux.read_bytes()[:4] == b"\x7fELF"
    header = kernel.bzimage.read_bytes()[:0x210]
    assert header[0x202:0x206] == b"HdrS", "bzImage lacks the x86 boot protocol header"


@pytest.mark.slow
def test_unchanged_rebuild_does_nothing(kernel: KernelArtifacts) -> None:
    before = kernel.vmlinux.stat().st_mtime_ns
    again = build_kernel(log=lambda _line: None)
    assert again.vmlinux == kernel.vmlinux
    assert again.vmlinux.stat().st_mtime_ns == before


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None,
                    reason="qemu-system-x86_64 missing: install Debian's qemu-system-x86")
@pytest.mark.parametrize("mode", ["qemu", "tables"])
def test_our_kernel_boots_paper_topology_in_qemu(kernel: KernelArtifacts, mode: str) -> None:
    """3 nodes (memoryless host node, two stacks) with the paper's CPUs, and the TSC clock.

    ``qemu`` takes the layout from QEMU's -numa options; ``tables`` from our SRAT/SLIT/HMAT
    in the initrd, through the kernel's ACPI table upgrade (the path gem5 relies on).
    """
    topology = load_topology("paper").with_memory_divided(8)
    result = probe(kernel.bzimage, topology, mode)  # type: ignore[arg-type]
    tail = result.console[-3000:]
    assert [node.node_id for node in result.nodes] == [0, 1, 2], tail
    assert [node.cpus for node in result.nodes] == [
        tuple(range(0, 4)), tuple(range(4, 12)), tuple(range(12, 20))], tail
    assert result.clocksource == "tsc", tail
    assert mismatches(topology, result, mode) == [], tail  # type: ignore[arg-type]
    print(f"{mode}: boot to poweroff {result.seconds:.1f} s")
