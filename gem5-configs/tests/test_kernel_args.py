"""The guest kernel command line: what pim_fs.py would give, and what a boot printed."""

from __future__ import annotations

from pathlib import Path

from pimcloud.kernel_args import DEFAULT_KERNEL_ARGS, booted_kernel_args, expected_kernel_args


def test_expected_follows_the_run_script_options() -> None:
    assert expected_kernel_args() == DEFAULT_KERNEL_ARGS.format(root="/dev/sda")
    assert "idle=halt" in expected_kernel_args()
    assert "root=/dev/hda " in expected_kernel_args(["--root-device", "/dev/hda"])
    assert expected_kernel_args(["--kernel-args", " console=ttyS0   root=/dev/sda "]) == \
        "console=ttyS0 root=/dev/sda"
    assert expected_kernel_args(["--kernel-args=quiet"]) == "quiet"


def test_booted_reads_the_guest_console(tmp_path: Path) -> None:
    assert booted_kernel_args(tmp_path) is None
    (tmp_path / "board.pc.com_1.device").write_text(
        "[    0.000000] Linux version 6.1.192\n"
        "[    0.000000] Command line: console=ttyS0  idle=halt root=/dev/sda\n"
        "[    0.044708] Kernel command line: something else\n")
    assert booted_kernel_args(tmp_path) == "console=ttyS0 idle=halt root=/dev/sda"
