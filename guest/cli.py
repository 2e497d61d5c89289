"""``pimcloud qemu run|stock-kernel``, ``pimcloud kernel build``, ``pimcloud image build``:
the guest's builds, and the guest in QEMU (functional mode, no timing)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("qemu", help="boot the guest under QEMU TCG with a "
                                   "topology's NUMA layout and run a scenario")
    commands = parser.add_subparsers(dest="qemu_command", metavar="ACTION", required=True)

    run = commands.add_parser(
        "run", help="boot, run a scenario, collect results into a run folder",
        description="Boot a kernel under QEMU TCG with the topology's CPUs and NUMA nodes "
        "(memory divided so each node stays within 1 GiB unless --mem-divisor says "
        "otherwise), run the scenario (a shell script, a folder with run.sh, or a tar "
        "holding run.sh) and collect console.log, run.json, results/ and written/.")
    run.add_argument("--topology", required=True, help="preset name or path to a .toml file")
    run.add_argument("--scenario", required=True, type=Path,
                     help="shell script, folder with run.sh, or tar archive holding run.sh")
    run.add_argument("--kernel", type=Path, help="bzImage (default: the project kernel in "
                     "the cache, else Debian's stock kernel)")
    run.add_argument("--image", type=Path, help="ext4 root image (needs a kernel with "
                     "virtio-blk, ext4 and 9p built in); default: the project's image "
                     "(pimcloud image build), as campaigns use it")
    run.add_argument("--initramfs-only", action="store_true",
                     help="boot our busybox initramfs alone, without the root image")
    run.add_argument("--initrd", type=Path, help="initramfs to boot instead of ours")
    run.add_argument("--out", type=Path,
                     help="run folder (default runs/out/qemu/<time>-<topology>)")
    run.add_argument("--timeout", type=float, default=600.0,
                     help="seconds before the run counts as a hang (default 600)")
    run.add_argument("--mem-divisor", type=int, help="divide every node's memory by N "
                     "(default: the smallest power of two leaving each node <= 1 GiB)")
    run.add_argument("--share", choices=("9p", "initramfs"),
                     help="how the scenario and results travel (default: from the kernel's config)")
    run.add_argument("--append", default="", help="extra kernel command-line parameters")
    run.add_argument("--tcg-threads", choices=("single", "multi"),
                     help="TCG threads (default: multi only when the host has a core per vCPU)")
    run.set_defaults(handler=_run)

    stock = commands.add_parser("stock-kernel", help="fetch Debian's stock 6.1 kernel into "
                                "the cache and print its path")
    stock.set_defaults(handler=_stock_kernel)

    kernel = subparsers.add_parser("kernel", help="the guest kernel (Debian's linux-source-6.1)")
    kernel_commands = kernel.add_subparsers(dest="kernel_command", metavar="ACTION",
                                            required=True)
    kernel_build = kernel_commands.add_parser(
        "build", help="build vmlinux (gem5) and bzImage (QEMU) into the cache, if changed")
    kernel_build.add_argument("--force", action="store_true", help="run kbuild even if the "
                              "fragment and source are unchanged")
    kernel_build.add_argument("--jobs", type=int, default=2)
    kernel_build.set_defaults(handler=_kernel_build)

    image = subparsers.add_parser("image", help="the guest root filesystem (debootstrap)")
    image_commands = image.add_subparsers(dest="image_command", metavar="ACTION", required=True)
    image_build = image_commands.add_parser(
        "build", help="build the ext4 root image into the cache, if changed")
    image_build.add_argument("--force", action="store_true")
    image_build.set_defaults(handler=_image_build)


def _kernel_build(args: argparse.Namespace) -> int:
    from .kernel import KernelBuildError, build_kernel

    try:
        built = build_kernel(force=args.force, jobs=args.jobs)
    except KernelBuildError as error:
        print(f"pimcloud kernel build: error: {error}")
        return 2
    print(f"vmlinux {built.vmlinux}\nbzImage {built.bzimage}\n({built.seconds:.1f} s)")
    return 0


def _image_build(args: argparse.Namespace) -> int:
    from .image import ImageBuildError, build_image

    try:
        built = build_image(force=args.force)
    except ImageBuildError as error:
        print(f"pimcloud image build: error: {error}")
        return 2
    print(f"image {built.path} ({built.size_bytes / 2**20:.0f} MiB, {built.seconds:.1f} s)")
    return 0


def _run(args: argparse.Namespace) -> int:
    from .image import IMAGE_NAME, image_dir
    from .qemu import run_scenario, summary

    image = args.image
    if image is None and not args.initramfs_only and args.initrd is None:
        image = image_dir() / IMAGE_NAME
        if not image.is_file():
            print(f"pimcloud qemu run: error: the project's image {image} is not built: run "
                  "'pimcloud image build', give --image, or boot --initramfs-only")
            return 2
    result = run_scenario(args.topology, args.scenario, kernel=args.kernel, image=image,
                          initrd=args.initrd, out=args.out, timeout=args.timeout,
                          memory_divisor=args.mem_divisor, share=args.share,
                          append=args.append, tcg=args.tcg_threads)
    print(summary(result))
    return 0 if result.ok else 1


def _stock_kernel(args: argparse.Namespace) -> int:
    from .stock_kernel import stock_kernel

    print(stock_kernel())
    return 0
