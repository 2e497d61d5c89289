"""The guest root image: its inputs (package list, mirror), and the built ext4 read back with
debugfs (no mount): every listed package installed, the engines' files, our init."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from pimcloud.guest.image import (
    IMAGE_NAME,
    INIT_DIR,
    INIT_PATH,
    KEEP_IMAGES,
    PACKAGES_FILE,
    ImageArtifacts,
    ImageBuildError,
    _clamp_times,
    _keep_unlinked_image,
    _note_use,
    _point,
    _prune_images,
    build_image,
    debian_mirror,
    keyed_image,
    pack_ext4,
    read_package_list,
    root_args,
    source_date_epoch,
    tree_digest,
)

# Files the workloads cannot run without, whatever else packages.txt grows to hold.
KEY_FILES = ["/usr/bin/busybox", "/usr/bin/numactl", "/usr/bin/stress-ng",
             "/usr/lib/x86_64-linux-gnu/libnuma.so.1"]
# Removed from the image to keep it small; dpkg's file lists still name them.
SCRUBBED = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/")


def test_package_list_is_sorted_deduplicated_and_commented(tmp_path: Path) -> None:
    listing = tmp_path / "packages.txt"
    listing.write_text("# engines\nstress-ng\nlibnuma1  # NUMA\n\nstress-ng\nbusybox-static\n")
    assert read_package_list(listing) == ["busybox-static", "libnuma1", "stress-ng"]


def test_package_list_rejects_bad_names_and_empty_lists(tmp_path: Path) -> None:
    listing = tmp_path / "packages.txt"
    listing.write_text("numactl\nstress-ng libnuma1\n")
    with pytest.raises(ImageBuildError, match=r"packages.txt:2: .*one name per line"):
        read_package_list(listing)
    listing.write_text("# nothing\n")
    with pytest.raises(ImageBuildError, match="lists no package"):
        read_package_list(listing)


def test_mirror_comes_from_apt_sources_in_both_formats(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        "deb http://security.example/debian-security bookworm-security main\n")
    (tmp_path / "sources.list.d" / "old.list.disabled").write_text(
        "deb http://wrong.example/debian bookworm main\n")
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\n"
        "Components: main contrib\n")
    assert debian_mirror("bookworm", tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list").write_text("deb [arch=amd64] http://one.example/d bookworm main\n")
    assert debian_mirror("bookworm", tmp_path) == "http://one.example/d"


def test_missing_mirror_names_the_suite_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "sources.list").write_text("deb http://mirror.example/debian trixie main\n")
    with pytest.raises(ImageBuildError, match="no apt source for 'bookworm main'"):
        debian_mirror("bookworm", tmp_path)


def test_tree_digest_sees_content_modes_and_names(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("one")
    first = tree_digest(tmp_path)
    (tmp_path / "a").write_text("two")
    second = tree_digest(tmp_path)
    (tmp_path / "a").chmod(0o755)
    third = tree_digest(tmp_path)
    (tmp_path / "a").rename(tmp_path / "b")
    assert len({first, second, third, tree_digest(tmp_path)}) == 4


# ----------------------------------------------------------------------------- the real image

def debugfs(image: Path, request: str) -> str:
    """Standard output of one debugfs request (its banner and errors go to stderr)."""
    result = subprocess.run(["debugfs", "-R", request, str(image)], capture_output=True,
                            text=True, check=False)
    return result.stdout


def file_type(image: Path, path: str) -> str | None:
    """'regular', 'directory', 'symlink'... of a path in the image, None when absent."""
    output = debugfs(image, f'stat "{path}"')
    for line in output.splitlines():
        if "Type:" in line:
            return line.split("Type:")[1].split()[0]
    return None


def usr_merged(path: str) -> str:
    """bookworm's root is /usr-merged: /bin, /sbin, /lib* are links into /usr."""
    for top in ("/bin/", "/sbin/", "/lib/", "/lib64/"):
        if path.startswith(top):
            return "/usr" + path
    return path


@pytest.fixture(scope="module")
def image() -> ImageArtifacts:
    return build_image()


@pytest.mark.slow
def test_image_is_a_clean_ext4(image: ImageArtifacts) -> None:
    assert image.size_bytes == image.path.stat().st_size > 0
    check = subprocess.run(["e2fsck", "-fn", str(image.path)], capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.slow
def test_engines_key_files_are_in_the_image(image: ImageArtifacts) -> None:
    missing = [path for path in KEY_FILES
               if file_type(image.path, path) not in ("regular", "symlink")]
    assert missing == []


@pytest.mark.slow
def test_every_listed_package_is_installed_with_its_files(image: ImageArtifacts) -> None:
    manifest = json.loads(debugfs(image.path, "cat /etc/pimcloud-image.json"))
    problems = []
    for package in read_package_list(PACKAGES_FILE):
        if package not in manifest["packages"]:
            problems.append(f"{package}: not installed")
            continue
        listing = debugfs(image.path, f"cat /var/lib/dpkg/info/{package}.list")
        if not listing:
            listing = debugfs(image.path, f"cat /var/lib/dpkg/info/{package}:amd64.list")
        files = [line for line in listing.splitlines()
                 if line.startswith("/") and not line.startswith(SCRUBBED)]
        types = [file_type(image.path, usr_merged(path)) for path in files[-5:]]
        if not files or None in types:
            problems.append(f"{package}: files {files[-5:]} have types {types}")
    assert problems == []


@pytest.mark.slow
def test_our_init_is_installed_when_guest_init_provides_one(image: ImageArtifacts) -> None:
    if not (INIT_DIR / "pimcloud-init").is_file():
        pytest.skip("guest/init/pimcloud-init does not exist yet")
    assert file_type(image.path, INIT_PATH) == "regular"


@pytest.mark.slow
def test_unchanged_rebuild_does_nothing(image: ImageArtifacts) -> None:
    before = image.path.stat().st_mtime_ns
    again = build_image(log=lambda _line: None)
    assert again.path == image.path
    assert again.path.stat().st_mtime_ns == before


def test_a_rebuild_keeps_the_image_a_running_campaign_recorded(tmp_path: Path) -> None:
    """Images are keyed files behind one link: a campaign's recorded image survives the
    next build; one built before keys is kept under its stamp's key; the oldest go."""
    link, stamp = tmp_path / IMAGE_NAME, tmp_path / "image.json"
    link.write_bytes(b"unkeyed image")
    stamp.write_text(json.dumps({"key": "ab" * 32}))
    _keep_unlinked_image(link, stamp)
    kept = keyed_image(tmp_path, "ab" * 32)
    assert kept.read_bytes() == b"unkeyed image" and not link.exists()
    images = []
    for number in range(KEEP_IMAGES + 1):
        image = keyed_image(tmp_path, f"{number:016x}")
        image.write_bytes(b"image %d" % number)
        time.sleep(0.01)
        _note_use(image)
        _point(link, image)
        _prune_images(tmp_path, image)
        images.append(image)
        assert link.is_symlink() and link.read_bytes() == image.read_bytes()
    left = sorted(p.name for p in tmp_path.glob("pimcloud-root-*.ext4"))
    assert left == sorted(p.name for p in images[-KEEP_IMAGES:]), left
    # Last asked for, not last built: an older image a build reused again stays; a link
    # into another cache (even a dangling one) is left alone.
    _note_use(images[-KEEP_IMAGES])
    (tmp_path / "pimcloud-root-linked00000000.ext4").symlink_to(tmp_path / "gone.ext4")
    newest = keyed_image(tmp_path, "f" * 16)
    newest.write_bytes(b"newest")
    _note_use(newest)
    _prune_images(tmp_path, newest)
    left = sorted(p.name for p in tmp_path.glob("pimcloud-root-*.ext4"))
    assert images[-KEEP_IMAGES].name in left and images[-KEEP_IMAGES + 1].name not in left
    assert newest.name in left and "pimcloud-root-linked00000000.ext4" in left
    # A placeholder key (not a digest) is not kept: the next link replaces the file.
    placeholder = tmp_path / "other"
    placeholder.mkdir()
    (placeholder / IMAGE_NAME).write_bytes(b"x")
    (placeholder / "image.json").write_text('{"key": "placeholder"}')
    _keep_unlinked_image(placeholder / IMAGE_NAME, placeholder / "image.json")
    assert list(placeholder.glob("pimcloud-root-*")) == []


@pytest.mark.skipif(shutil.which("mkfs.ext4") is None, reason="mkfs.ext4 missing: e2fsprogs")
def test_packing_the_same_tree_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    """Reproducible images: two copies of a tree made at different times pack identically
    (mkfs.ext4 -d copies host ctimes and atimes; pack_ext4 pins them)."""
    images = []
    for copy in ("one", "two"):
        root = tmp_path / copy
        (root / "usr/bin").mkdir(parents=True)
        (root / "usr/bin/tool").write_bytes(b"\x7fELF" + bytes(range(256)) * 40)
        (root / "usr/bin/tool").chmod(0o755)
        (root / "bin").symlink_to("usr/bin")
        (root / "etc").mkdir()
        (root / "etc/hostname").write_text("pimcloud\n")
        _clamp_times(root, source_date_epoch())
        image = tmp_path / f"{copy}.ext4"
        pack_ext4(root, image, "5eed" * 16, tmp_path / "log")
        images.append(image.read_bytes())
        time.sleep(1.1)  # so the second copy's host ctimes differ
    assert images[0] == images[1]
    assert file_type(tmp_path / "one.ext4", "/usr/bin/tool") == "regular"


# A shell as init (the words after `--` go to it): no `=` inside, the kernel would split there.
BOOT_SCRIPT = ("mount -t proc proc /proc; mount -t sysfs sys /sys; numactl --hardware; "
               "stress-ng --cpu 2 --cpu-ops 200 --metrics-brief; echo pimcloud-image-booted; "
               "/usr/bin/busybox poweroff -f")


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None,
                    reason="qemu-system-x86_64 missing: install Debian's qemu-system-x86")
def test_image_boots_with_our_kernel_and_runs_the_engines(image: ImageArtifacts) -> None:
    """Kernel + image under QEMU with the paper topology: the root mounts from virtio, the
    Debian userland runs, numactl sees the three nodes and stress-ng completes."""
    from pimcloud.guest.kernel import build_kernel
    from pimcloud.kernel_args import QEMU_KERNEL_ARGS
    from pimcloud.topology import load_topology
    from pimcloud.topology.qemu import machine_args, numa_args

    kernel = build_kernel(log=lambda _line: None)
    topology = load_topology("paper").with_memory_divided(8)
    root = [arg for arg in root_args("qemu") if not arg.startswith("init=")]
    append = " ".join([*QEMU_KERNEL_ARGS, *root, "init=/bin/sh", "--", "-c",
                       f'"{BOOT_SCRIPT}"'])
    command = ["qemu-system-x86_64", "-accel", "tcg", "-nographic", "-no-reboot",
               "-monitor", "none", "-serial", "stdio", "-kernel", str(kernel.bzimage),
               "-drive", f"file={image.path},format=raw,if=virtio,snapshot=on",
               *machine_args(topology), *numa_args(topology), "-append", append]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=900,
                          check=False)
    console = done.stdout.decode(errors="replace")
    tail = console[-4000:]
    assert "pimcloud-image-booted" in console, tail
    assert "available: 3 nodes (0-2)" in console, tail
    for node, cpus in ((0, "0 1 2 3"), (1, "4 5 6 7 8 9 10 11"),
                       (2, "12 13 14 15 16 17 18 19")):
        assert f"node {node} cpus: {cpus}\r" in console or f"node {node} cpus: {cpus}\n" \
            in console, tail
    assert "successful run completed" in console, tail
