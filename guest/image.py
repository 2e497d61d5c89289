"""Build the guest root image: Debian bookworm from debootstrap, our binaries and our init.

Everything comes from this machine's configured Debian mirror (read from /etc/apt). Steps,
each cached in ``$PIMCLOUD_CACHE/image/`` (default ``<repo>/.cache/image/``):

1. ``debootstrap-<key>.tgz``: the .debs of the package list (``--make-tarball``), so a
   rebuild never downloads again;
2. ``rootfs-<key>/``: that tarball installed (``--unpack-tarball``) and scrubbed of
   build-time noise (logs, caches, dates), so the same list gives the same tree;
3. ``pimcloud-root-<key>.ext4``: a copy of that tree plus /opt/pimcloud (our binaries),
   /sbin/pimcloud-init (our init) and the image hooks, packed with ``mkfs.ext4 -d``
   (no mount), with a fixed UUID, hash seed and SOURCE_DATE_EPOCH; ``pimcloud-root.ext4``
   links to the newest.  A campaign records the keyed file, so a rebuild for a new
   campaign leaves the image of one still running in place (the last ``KEEP_IMAGES``
   are kept).

Only step 3 reruns when our binaries or init change; steps 1-2 rerun when the package
list, the mirror or the suite change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

from pimcloud.atomic import atomic_write_text
from pimcloud.paths import REPO_ROOT, build_dir, cache_dir

from .kernel import Log, _locked

PACKAGES_FILE = REPO_ROOT / "disk-images" / "packages.txt"
INIT_DIR = REPO_ROOT / "guest" / "init"
# Executables run on the host with the staged root as their argument (and $ROOTFS), sorted by
# name, to lay out data sets made from registry packages.  They may `chroot "$ROOTFS" ...`.
# A hook's line `# image-inputs: PATH...` (repository paths, files or folders) names what
# else it reads, so that a change there rebuilds the image too.
HOOK_DIRS = (REPO_ROOT / "disk-images" / "hooks", REPO_ROOT / "workloads" / "image-hooks")
CMAKE_BUILD_DIR = build_dir()
SUITE = "bookworm"
ARCH = "amd64"
VARIANT = "minbase"
INIT_PATH = "/sbin/pimcloud-init"
# The image is a bare ext4 (no partition table): gem5's IDE disk, QEMU's virtio disk.
ROOT_DEVICES = {"gem5": "/dev/sda", "qemu": "/dev/vda"}
# 2025-01-01T00:00:00Z unless the caller sets SOURCE_DATE_EPOCH.
DEFAULT_SOURCE_DATE_EPOCH = 1735689600
RECIPE_VERSION = 1
IMAGE_NAME = "pimcloud-root.ext4"  # a link to the newest keyed image
KEEP_IMAGES = 3  # keyed images kept: campaigns started on an older build still find theirs


class ImageBuildError(RuntimeError):
    """The image could not be built; the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class ImageArtifacts:
    """The root image in the cache."""

    path: Path
    size_bytes: int
    seconds: float


def root_args(platform: str) -> list[str]:
    """Kernel command-line words that boot this image with our init (``gem5`` or ``qemu``)."""
    if platform not in ROOT_DEVICES:
        raise ImageBuildError(f"platform {platform!r} is unknown; use one of "
                              f"{', '.join(sorted(ROOT_DEVICES))}")
    return [f"root={ROOT_DEVICES[platform]}", "rootfstype=ext4", "rw", f"init={INIT_PATH}"]


def image_dir() -> Path:
    return cache_dir() / "image"


def source_date_epoch() -> int:
    value = os.environ.get("SOURCE_DATE_EPOCH", str(DEFAULT_SOURCE_DATE_EPOCH))
    if not value.isdigit():
        raise ImageBuildError(f"SOURCE_DATE_EPOCH={value!r} is not a whole number of seconds "
                              "since 1970; unset it or give e.g. 1735689600")
    return int(value)


# ----------------------------------------------------------------------------- inputs

def read_package_list(path: Path = PACKAGES_FILE) -> list[str]:
    """The guest's Debian packages: one name per line, `#` comments; sorted, deduplicated."""
    names: set[str] = set()
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        name = raw.split("#", 1)[0].strip()
        if not name:
            continue
        if not re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", name):
            raise ImageBuildError(f"{path}:{number}: {name!r} is not a Debian package name; "
                                  "write one name per line (lower case, e.g. stress-ng)")
        names.add(name)
    if not names:
        raise ImageBuildError(f"{path} lists no package; add at least busybox-static")
    return sorted(names)


def _sources_entries(text: str, deb822: bool) -> Iterable[tuple[list[str], list[str], list[str]]]:
    """(uris, suites, components) of each `deb` source in a sources file."""
    if deb822:
        for paragraph in re.split(r"\n\s*\n", text):
            fields: dict[str, str] = {}
            for line in paragraph.splitlines():
                if line.startswith("#") or ":" not in line or line[:1].isspace():
                    continue
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
            if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
                yield (fields.get("uris", "").split(), fields.get("suites", "").split(),
                       fields.get("components", "").split())
    else:
        for line in text.splitlines():
            words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
            if len(words) >= 3 and words[0] == "deb":
                yield [words[1]], [words[2]], words[3:]


def debian_mirror(suite: str = SUITE, apt_dir: Path = Path("/etc/apt")) -> str:
    """The mirror this machine's apt uses for ``suite`` main (never a hard-coded host)."""
    files = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*"))]
    for path in files:
        if not path.is_file() or path.suffix not in (".list", ".sources"):
            continue
        for uris, suites, components in _sources_entries(path.read_text(),
                                                         path.suffix == ".sources"):
            if suite in suites and "main" in components and uris:
                return uris[0].rstrip("/")
    raise ImageBuildError(
        f"no apt source for '{suite} main' in {apt_dir}/sources.list or sources.list.d/; "
        f"add the Debian mirror this machine should use for {suite}")


def _hooks() -> list[Path]:
    hooks = [p for d in HOOK_DIRS if d.is_dir() for p in d.iterdir()
             if p.is_file() and os.access(p, os.X_OK)]
    return sorted(hooks, key=lambda p: (p.name, str(p)))


def hook_inputs(hook: Path) -> list[Path]:
    """The repository paths a hook declares with `# image-inputs: PATH...` lines."""
    paths: list[Path] = []
    for line in hook.read_bytes().decode(errors="replace").splitlines():
        head, _, rest = line.partition("image-inputs:")
        if rest and head.strip() == "#":
            for name in rest.split():
                path = (REPO_ROOT / name).resolve()
                if not path.exists() or not path.is_relative_to(REPO_ROOT):
                    raise ImageBuildError(f"{hook}: image input {name!r} is not a path in "
                                          f"{REPO_ROOT}; fix its `# image-inputs:` line")
                paths.append(path)
    return paths


def _hook_digest(hook: Path) -> bytes:
    """A hook's name, its bytes and the contents of the inputs it declares."""
    parts = [hook.name.encode(), hook.read_bytes()]
    for path in hook_inputs(hook):
        parts += [str(path.relative_to(REPO_ROOT)).encode(),
                  tree_digest(path) if path.is_dir() else path.read_bytes()]
    return _digest(parts).encode()


def _digest(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def tree_digest(root: Path) -> bytes:
    """Names, modes, link targets and contents of a folder, in sorted order."""
    parts: list[bytes] = []
    if not root.exists():
        return b"absent"
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        relative = str(path.relative_to(root)).encode()
        if path.is_symlink():
            parts += [b"l", relative, os.readlink(path).encode()]
        elif path.is_file():
            parts += [b"f", relative, oct(path.stat().st_mode & 0o777).encode(),
                      hashlib.sha256(path.read_bytes()).digest()]
        else:
            parts += [b"d", relative]
    return _digest(parts).encode()


# ----------------------------------------------------------------------------- stages

def _run(command: list[str], log_file: Path, env: Mapping[str, str] | None = None) -> None:
    with log_file.open("a") as stream:
        stream.write(f"\n$ {' '.join(command)}\n")
        stream.flush()
        result = subprocess.run(command, stdout=stream, stderr=subprocess.STDOUT, check=False,
                                env=dict(env) if env is not None else None)
    if result.returncode != 0:
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-30:])
        raise ImageBuildError(f"`{' '.join(command)}` failed with status {result.returncode}; "
                              f"full log in {log_file}; last lines:\n{tail}")


def _check_tools() -> None:
    needed = {"debootstrap": "debootstrap", "mkfs.ext4": "e2fsprogs", "debugfs": "e2fsprogs"}
    missing = sorted({pkg for tool, pkg in needed.items() if not shutil.which(tool)})
    if missing:
        raise ImageBuildError(f"missing host tools; install: apt-get install {' '.join(missing)} "
                              "(listed in disk-images/apt-packages.txt)")
    if os.geteuid() != 0:
        raise ImageBuildError("debootstrap must run as root (it chroots to configure packages); "
                              "run the image build as root, e.g. with sudo")


def _debootstrap_args(packages: list[str]) -> list[str]:
    return ["debootstrap", f"--arch={ARCH}", f"--variant={VARIANT}",
            f"--include={','.join(packages)}"]


def _make_tarball(packages: list[str], mirror: str, key: str, log: Log, log_file: Path) -> Path:
    tarball = image_dir() / f"debootstrap-{key[:16]}.tgz"
    if tarball.exists():
        return tarball
    log(f"image: downloading {len(packages)} packages and their dependencies from {mirror}")
    work = Path(tempfile.mkdtemp(dir=image_dir(), prefix=".download-"))
    partial = image_dir() / f".{tarball.name}.partial"
    try:
        _run([*_debootstrap_args(packages), f"--make-tarball={partial}", SUITE,
              str(work / "root"), mirror], log_file)
        partial.rename(tarball)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        partial.unlink(missing_ok=True)
    return tarball


def _scrub(root: Path, epoch: int) -> None:
    """Remove what records when or where the tree was built, and clamp every time."""
    for pattern in ("var/log/*", "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb",
                    "var/lib/apt/lists/*", "var/cache/ldconfig/aux-cache",
                    "var/cache/debconf/*-old", "var/lib/dpkg/*-old", "etc/*-",
                    "usr/share/doc/*", "usr/share/man/*", "usr/share/info/*", "debootstrap"):
        for path in root.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    machine_id = root / "etc/machine-id"
    if machine_id.exists():
        machine_id.write_text("")
    shadow = root / "etc/shadow"
    if shadow.exists():
        day = str(epoch // 86400)
        lines = []
        for line in shadow.read_text().splitlines():
            fields = line.split(":")
            if len(fields) > 2 and fields[2]:
                fields[2] = day
            lines.append(":".join(fields))
        shadow.write_text("\n".join(lines) + "\n")
    _clamp_times(root, epoch)


def _clamp_times(root: Path, epoch: int) -> None:
    for path in [root, *root.rglob("*")]:
        stat = path.lstat()
        if stat.st_mtime > epoch or stat.st_atime > epoch:
            os.utime(path, (epoch, min(stat.st_mtime, epoch)), follow_symlinks=False)


def _base_rootfs(packages: list[str], mirror: str, key: str, log: Log, log_file: Path) -> Path:
    rootfs = image_dir() / f"rootfs-{key[:16]}"
    if (rootfs / ".pimcloud-complete").exists():
        return rootfs
    tarball = _make_tarball(packages, mirror, key, log, log_file)
    log(f"image: installing {tarball.name} with debootstrap (suite {SUITE}, {VARIANT})")
    work = Path(tempfile.mkdtemp(dir=image_dir(), prefix=".rootfs-"))
    try:
        _run([*_debootstrap_args(packages), f"--unpack-tarball={tarball}", SUITE,
              str(work / "root"), mirror], log_file)
        _scrub(work / "root", source_date_epoch())
        shutil.rmtree(rootfs, ignore_errors=True)
        (work / "root").rename(rootfs)
        (rootfs / ".pimcloud-complete").write_text(key + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rootfs


def _installed_packages(root: Path) -> dict[str, str]:
    """Package -> version from the tree's dpkg status file."""
    packages: dict[str, str] = {}
    status = root / "var/lib/dpkg/status"
    for paragraph in status.read_text().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in paragraph.splitlines()
                      if ": " in line and not line.startswith(" "))
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            packages[fields["Package"]] = fields.get("Version", "")
    return dict(sorted(packages.items()))


def _append(log_file: Path, line: str) -> None:
    with log_file.open("a") as log:
        log.write(line + "\n")


def _stage_binaries(target: Path, log_file: Path) -> None:
    """Our programs: the project's CMake build (as `make cxx` does), then whatever its
    install rules put under the prefix; that prefix becomes /opt/pimcloud."""
    target.mkdir(parents=True, exist_ok=True)
    if not (REPO_ROOT / "CMakeLists.txt").exists() or shutil.which("cmake") is None:
        return
    from .sqlite_source import ensure_sqlite_source  # it reads this module's mirror

    sqlite = ensure_sqlite_source(log=lambda line: _append(log_file, line))
    _run(["cmake", "-S", str(REPO_ROOT), "-B", str(CMAKE_BUILD_DIR), "-G", "Ninja",
          "-DCMAKE_BUILD_TYPE=RelWithDebInfo", f"-DPIMCLOUD_SQLITE_DIR={sqlite}"], log_file)
    _run(["nice", "-n", "10", "cmake", "--build", str(CMAKE_BUILD_DIR), "-j2"], log_file)
    _run(["cmake", "--install", str(CMAKE_BUILD_DIR), "--prefix", str(target)], log_file)


def _overlay(root: Path, binaries: Path, packages: Mapping[str, str]) -> None:
    opt = root / "opt/pimcloud"
    if binaries.exists():
        shutil.copytree(binaries, opt, symlinks=True, dirs_exist_ok=True)
    opt.mkdir(parents=True, exist_ok=True)
    if INIT_DIR.is_dir() and any(INIT_DIR.iterdir()):
        shutil.copytree(INIT_DIR, opt / "init", symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "tests"))
    init = _init_program(opt)
    if init is not None:
        target = root / INIT_PATH.lstrip("/")
        target.unlink(missing_ok=True)
        shutil.copyfile(init, target)
        target.chmod(0o755)
    (root / "etc/hostname").write_text("pimcloud\n")
    (root / "etc/fstab").write_text(
        "# The init mounts what it needs; this is for tools that read fstab.\n"
        "/dev/root / ext4 defaults 0 1\nproc /proc proc defaults 0 0\n"
        "sysfs /sys sysfs defaults 0 0\n")
    (root / "etc/pimcloud-image.json").write_text(json.dumps(
        {"suite": SUITE, "packages": dict(packages)}, indent=1) + "\n")


def _init_program(opt: Path) -> Path | None:
    """Our init: guest/init/pimcloud-init as written, else a CMake-installed bin/pimcloud-init."""
    for candidate in (opt / "init" / "pimcloud-init", opt / "bin" / "pimcloud-init"):
        if candidate.is_file():
            return candidate
    return None


def pack_ext4(root: Path, image: Path, key: str, log_file: Path) -> None:
    """``root`` as an ext4 file system in ``image``, without mounting; the same tree and key
    give the same bytes (UUID and hash seed from the key, every time pinned)."""
    used = sum(p.lstat().st_size for p in root.rglob("*"))
    inodes = sum(1 for _ in root.rglob("*"))
    # Room for ext4's metadata and for files the guest writes during a run.
    size_mib = (used * 13 // 10 + inodes * 4096) // (1 << 20) + 128
    fixed_uuid = str(uuid.UUID(key[:32]))
    epoch = str(source_date_epoch())
    env = {**os.environ, "E2FSPROGS_FAKE_TIME": epoch, "SOURCE_DATE_EPOCH": epoch}
    image.unlink(missing_ok=True)
    _run(["mkfs.ext4", "-q", "-F", "-L", "pimcloud-root", "-U", fixed_uuid, "-b", "4096",
          "-m", "0", "-E", f"hash_seed={fixed_uuid},root_owner=0:0,nodiscard", "-d", str(root),
          str(image), f"{size_mib}M"], log_file, env)
    _clamp_inode_times(root, image, int(epoch), log_file)


def _clamp_inode_times(root: Path, image: Path, epoch: int, log_file: Path) -> None:
    """mkfs.ext4 -d copies each file's ctime and atime, which its own reads and the host set;
    pin them here.

    Inode numbers and blocks already follow the (stable) tree, so this makes the image
    byte-for-byte the same for the same tree.
    """
    commands = []
    for path in ["/", *sorted("/" + str(p.relative_to(root)) for p in root.rglob("*"))]:
        if '"' in path or "\n" in path:
            raise ImageBuildError(f"{path!r} in the root tree has a quote or newline in its "
                                  "name, which debugfs cannot address; rename it")
        # atime too: mkfs reading the host files has just moved theirs.
        commands += [f'sif "{path}" ctime @{epoch}\n', f'sif "{path}" atime @{epoch}\n']
    script = image.parent / "ctime.debugfs"
    script.write_text("".join(commands))
    result = subprocess.run(["debugfs", "-w", "-f", str(script), str(image)],
                            capture_output=True, text=True, check=False,
                            env={**os.environ, "E2FSPROGS_FAKE_TIME": str(epoch)})
    errors = [line for line in result.stderr.splitlines() if not line.startswith("debugfs ")]
    with log_file.open("a") as stream:
        stream.write(f"\n$ debugfs -w -f {script} {image}: {len(commands)} inode times set\n")
    if result.returncode != 0 or errors:
        raise ImageBuildError(f"debugfs could not set inode times in {image}: "
                              f"{'; '.join(errors[:5]) or result.returncode}")


def keyed_image(folder: Path, key: str) -> Path:
    return folder / f"pimcloud-root-{key[:16]}.ext4"


def _point(link: Path, image: Path) -> None:
    """Make ``link`` name ``image`` (relative, replaced in one step)."""
    if link.is_symlink() and os.readlink(link) == image.name:
        return
    partial = link.with_name(f".{link.name}.{os.getpid()}")
    partial.unlink(missing_ok=True)
    partial.symlink_to(image.name)
    os.replace(partial, link)


def _keep_unlinked_image(link: Path, stamp: Path) -> None:
    """An image built before images were keyed is a file where the link goes: keep it
    under its own key (from the stamp) instead of replacing it."""
    if link.is_symlink() or not link.is_file():
        return
    try:
        key = str(json.loads(stamp.read_text()).get("key") or "")
    except (OSError, ValueError):
        key = ""
    if re.fullmatch(r"[0-9a-f]{16,}", key) and not keyed_image(link.parent, key).exists():
        os.replace(link, keyed_image(link.parent, key))


def _used_marker(image: Path) -> Path:
    return image.with_suffix(".used")


def _note_use(image: Path) -> None:
    """Mark ``image`` as the one builds last asked for (its own mtime stays: campaigns'
    digest caches and stored boots go by it)."""
    _used_marker(image).touch()


def note_image_use(image: Path) -> None:
    """A campaign that names a keyed image by its path (a study pins its image) uses it
    without asking a build for it: mark it used too, so that a later build's pruning
    keeps the images campaigns use, not only those builds were last asked for."""
    image = image.resolve()  # a pin through a link marks the file it names
    if re.fullmatch(r"pimcloud-root-[0-9a-f]{16}\.ext4", image.name) and image.is_file():
        # A cache this user cannot write to: its owner's builds prune it.
        with contextlib.suppress(OSError):
            _note_use(image)


def _prune_images(folder: Path, current: Path) -> None:
    """Keep the ``KEEP_IMAGES`` keyed images last asked for (``current`` among them);
    links (a cache folder sharing another's files) are never removed."""
    def last_use(image: Path) -> float:
        marker = _used_marker(image)
        return (marker if marker.exists() else image).lstat().st_mtime

    images = sorted((p for p in folder.glob("pimcloud-root-*.ext4")
                     if p != current and not p.is_symlink()), key=last_use, reverse=True)
    for old in images[KEEP_IMAGES - 1:]:
        old.unlink(missing_ok=True)
        _used_marker(old).unlink(missing_ok=True)


def build_image(force: bool = False, *, log: Log = print) -> ImageArtifacts:
    """Build the guest root image, or return the cached one if none of its inputs changed."""
    start = time.monotonic()
    packages = read_package_list()
    mirror = debian_mirror()
    base_key = _digest([f"recipe {RECIPE_VERSION}".encode(), SUITE.encode(), ARCH.encode(),
                        VARIANT.encode(), mirror.encode(), "\n".join(packages).encode(),
                        str(source_date_epoch()).encode()])
    folder = image_dir()
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / IMAGE_NAME
    stamp = folder / "image.json"
    with _locked(folder / ".lock"):
        log_file = folder / "build.log"
        log_file.write_text(f"pimcloud image build, base key {base_key}\n")
        with tempfile.TemporaryDirectory(dir=folder, prefix=".binaries-") as binaries:
            _stage_binaries(Path(binaries), log_file)
            hooks = _hooks()
            key = _digest([base_key.encode(), tree_digest(Path(binaries)),
                           tree_digest(INIT_DIR),
                           *(_hook_digest(p) for p in hooks)])
            image = keyed_image(folder, key)
            _keep_unlinked_image(link, stamp)
            if image.is_file() and not force:
                _point(link, image)
                _note_use(image)
                seconds = time.monotonic() - start
                log(f"image: up to date ({image}, {image.stat().st_size:,} B), "
                    f"checked in {seconds:.2f} s")
                return ImageArtifacts(image, image.stat().st_size, seconds)
            _check_tools()
            rootfs = _base_rootfs(packages, mirror, base_key, log, log_file)
            log("image: staging the root tree with our binaries and init")
            staging = Path(tempfile.mkdtemp(dir=folder, prefix=".staging-"))
            try:
                tree = staging / "root"
                _run(["cp", "-a", str(rootfs), str(tree)], log_file)
                (tree / ".pimcloud-complete").unlink()
                installed = _installed_packages(tree)
                _overlay(tree, Path(binaries), installed)
                for hook in hooks:
                    log(f"image: running hook {hook}")
                    _run([str(hook), str(tree)], log_file, {**os.environ, "ROOTFS": str(tree)})
                _clamp_times(tree, source_date_epoch())
                partial = staging / IMAGE_NAME
                pack_ext4(tree, partial, key, log_file)
                os.replace(partial, image)
                _point(link, image)
                _note_use(image)
                _prune_images(folder, image)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        atomic_write_text(folder / "packages.json", json.dumps(installed, indent=1) + "\n")
        seconds = time.monotonic() - start
        size = image.stat().st_size
        atomic_write_text(stamp, json.dumps(
            {"key": key, "mirror": mirror, "suite": SUITE, "size_bytes": size,
             "seconds": round(seconds, 1)}, indent=2))
        log(f"image: built {image} in {seconds:.1f} s: {size:,} B "
            f"({size / (1 << 20):.0f} MiB), {len(installed)} packages")
        return ImageArtifacts(image, size, seconds)
