"""Build the guest kernel: Debian's linux-source-6.1, `tinyconfig` plus our fragment.

One kernel serves every topology in gem5 (uncompressed ``vmlinux``) and QEMU (``bzImage``).
The build runs out of tree in the cache (``$PIMCLOUD_CACHE``, default ``<repo>/.cache``):

    kernel/linux-source-6.1-<version>/   the unpacked Debian source (read only but for
                                         drivers/pimcloud/, our built-in driver, copied
                                         in by every build from guest/driver/)
    kernel/build-<version>/              kbuild's O= folder, kept so rebuilds are incremental
    kernel/vmlinux, bzImage, config      the published artifacts of the last good build
    kernel/build.json                    the key those artifacts were built for

The key covers the fragment, the driver's sources, the source package version and this
recipe, so a changed fragment or driver is noticed; with an unchanged key and the
artifacts present nothing runs at all.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pimcloud.atomic import atomic_write_text
from pimcloud.paths import cache_dir

FRAGMENT = Path(__file__).resolve().parent / "kernel" / "pimcloud.config"
# The guest driver of the hardware counters, built in (drivers/pimcloud/), and the register
# map it shares with the gem5 device (its one home is scons-extra).
DRIVER_DIR = Path(__file__).resolve().parent / "driver"
DRIVER_FILES = (DRIVER_DIR / "Makefile", DRIVER_DIR / "pimcloud_counters.c",
                Path(__file__).resolve().parents[1] / "scons-extra" / "pimcloud"
                / "pim_counters_abi.h")
DRIVER_MAKEFILE_LINE = "obj-y += pimcloud/"
SOURCE_PACKAGE = "linux-source-6.1"
SOURCE_TARBALL = Path("/usr/src") / f"{SOURCE_PACKAGE}.tar.xz"
# Bump when the recipe below changes in a way that must rebuild every cached kernel.
RECIPE_VERSION = 1
# The host tools kbuild calls for this configuration, with the Debian package of each.
HOST_TOOLS = {
    "make": "make", "gcc": "gcc", "bc": "bc", "bison": "bison", "flex": "flex",
    "perl": "perl", "xz": "xz-utils", "gzip": "gzip",
}

# Every boot of this kernel, in gem5 and QEMU: serial console, and the TSC as clocksource
# (otherwise gem5's unsynchronised TSCs leave the guest on jiffies and latencies read 0 ns).

Log = Callable[[str], None]


class KernelBuildError(RuntimeError):
    """The kernel could not be configured or built; the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class KernelArtifacts:
    """What a kernel build leaves in the cache."""

    vmlinux: Path
    bzimage: Path
    config: Path
    seconds: float


def kernel_dir() -> Path:
    return cache_dir() / "kernel"


# ----------------------------------------------------------------------------- config files

_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


def parse_fragment(text: str, source: str = "fragment") -> dict[str, str | None]:
    """Options of a Kconfig fragment: name -> value, or None for `# CONFIG_X is not set`."""
    options: dict[str, str | None] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        unset = _UNSET.match(line)
        if unset:
            name, value = unset.group(1), None
        elif line.startswith("#"):
            continue
        else:
            match = _SET.match(line)
            if not match:
                raise KernelBuildError(
                    f"{source}:{number}: {raw!r} is not a Kconfig line; write CONFIG_NAME=value "
                    "or '# CONFIG_NAME is not set'")
            name, value = match.group(1), match.group(2)
        if name in options and options[name] != value:
            raise KernelBuildError(
                f"{source}:{number}: {name} is given twice with different values; keep one")
        options[name] = value
    return options


def parse_config(text: str) -> dict[str, str]:
    """The options a full .config sets (unset ones are simply absent)."""
    options: dict[str, str] = {}
    for line in text.splitlines():
        match = _SET.match(line.strip())
        if match:
            options[match.group(1)] = match.group(2)
    return options


def unmet_options(wanted: Mapping[str, str | None], config: Mapping[str, str]) -> list[str]:
    """Each fragment option the final config does not honour, as 'NAME: wanted X, got Y'.

    Kconfig drops an option silently when its dependencies are missing; this is the check.
    """
    problems = []
    for name, value in wanted.items():
        got = config.get(name)
        if value is None:
            if got not in (None, "n"):
                problems.append(f"{name}: wanted not set, got {got}")
        elif got != value:
            problems.append(f"{name}: wanted {value}, got {got if got is not None else 'not set'}")
    return problems


# ----------------------------------------------------------------------------- the build

def source_version() -> str:
    """Version of the installed linux-source-6.1 Debian package."""
    try:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}|${Version}", SOURCE_PACKAGE],
            capture_output=True, text=True, check=False)
    except FileNotFoundError as error:
        raise KernelBuildError("dpkg-query not found: the kernel build needs a Debian host") \
            from error
    status, _, version = result.stdout.partition("|")
    if result.returncode != 0 or "ok installed" not in status or not SOURCE_TARBALL.exists():
        raise KernelBuildError(
            f"Debian package {SOURCE_PACKAGE} is not installed ({SOURCE_TARBALL} missing); "
            f"run `make setup` or `apt-get install {SOURCE_PACKAGE}`")
    return version


def build_key(fragment: bytes, version: str, driver: tuple[bytes, ...] = ()) -> str:
    digest = hashlib.sha256()
    for part in (f"recipe {RECIPE_VERSION}".encode(), version.encode(), fragment, *driver):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def _check_host_tools() -> None:
    missing = sorted({package for tool, package in HOST_TOOLS.items() if not shutil.which(tool)})
    if missing:
        raise KernelBuildError(
            f"host tools for the kernel build are missing; install: apt-get install "
            f"{' '.join(missing)} (all listed in guest/kernel/apt-packages.txt)")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One build of a cache folder at a time (tests and the CLI may start builds together)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _unpack_source(version: str, log: Log) -> Path:
    tree = kernel_dir() / f"{SOURCE_PACKAGE}-{version}"
    if (tree / "Makefile").exists():
        return tree
    log(f"kernel: unpacking {SOURCE_TARBALL} ({SOURCE_PACKAGE} {version})")
    staging = Path(tempfile.mkdtemp(dir=kernel_dir(), prefix=".unpack-"))
    try:
        subprocess.run(["tar", "-xf", str(SOURCE_TARBALL), "-C", str(staging)], check=True)
        unpacked = staging / SOURCE_PACKAGE
        if not (unpacked / "Makefile").exists():
            raise KernelBuildError(f"{SOURCE_TARBALL} has no {SOURCE_PACKAGE}/Makefile; "
                                   f"reinstall the package: apt-get install --reinstall "
                                   f"{SOURCE_PACKAGE}")
        shutil.rmtree(tree, ignore_errors=True)
        unpacked.rename(tree)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return tree


def _install_driver(tree: Path) -> None:
    """Copy the built-in driver into drivers/pimcloud/ and list it in drivers/Makefile
    (both only when they differ, so kbuild rebuilds only what changed)."""
    target = tree / "drivers" / "pimcloud"
    target.mkdir(exist_ok=True)
    for source in DRIVER_FILES:
        copy = target / source.name
        if not copy.exists() or copy.read_bytes() != source.read_bytes():
            shutil.copyfile(source, copy)
    makefile = tree / "drivers" / "Makefile"
    text = makefile.read_text()
    if DRIVER_MAKEFILE_LINE not in text.splitlines():
        makefile.write_text(text.rstrip("\n") + f"\n{DRIVER_MAKEFILE_LINE}\n")


def _run_logged(command: list[str], cwd: Path, env: Mapping[str, str], log_file: Path) -> None:
    with log_file.open("a") as stream:
        stream.write(f"\n$ {' '.join(command)}\n")
        stream.flush()
        result = subprocess.run(command, cwd=cwd, env=dict(env), stdout=stream,
                                stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-40:])
        raise KernelBuildError(
            f"`{' '.join(command)}` failed with status {result.returncode}; "
            f"full log in {log_file}; last lines:\n{tail}")


def _copy_atomic(source: Path, target: Path) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    os.close(handle)
    try:
        shutil.copyfile(source, temporary)
        os.chmod(temporary, 0o644)  # mkstemp makes 0600; gem5 may run as another user
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _published(key: str) -> KernelArtifacts | None:
    folder = kernel_dir()
    artifacts = KernelArtifacts(folder / "vmlinux", folder / "bzImage", folder / "config", 0.0)
    try:
        stamp = json.loads((folder / "build.json").read_text())
    except (OSError, ValueError):
        return None
    present = all(p.exists() for p in (artifacts.vmlinux, artifacts.bzimage, artifacts.config))
    return artifacts if present and stamp.get("key") == key else None


def build_kernel(force: bool = False, *, jobs: int = 2, log: Log = print) -> KernelArtifacts:
    """Configure and build the guest kernel, or return the cached one if nothing changed.

    ``force`` reruns kbuild even when the cache says the artifacts are current (kbuild itself
    still skips what is up to date; delete ``kernel/build-*`` in the cache for a clean build).
    """
    start = time.monotonic()
    fragment_bytes = FRAGMENT.read_bytes()
    wanted = parse_fragment(fragment_bytes.decode(), str(FRAGMENT))
    version = source_version()
    key = build_key(fragment_bytes, version, tuple(p.read_bytes() for p in DRIVER_FILES))
    with _locked(kernel_dir() / ".lock"):
        cached = _published(key)
        if cached and not force:
            seconds = time.monotonic() - start
            log(f"kernel: up to date ({cached.vmlinux}), checked in {seconds:.2f} s")
            return dataclasses.replace(cached, seconds=seconds)
        _check_host_tools()
        tree = _unpack_source(version, log)
        _install_driver(tree)
        out = kernel_dir() / f"build-{version}"
        out.mkdir(parents=True, exist_ok=True)
        log_file = kernel_dir() / "build.log"
        log_file.write_text(f"pimcloud kernel build, key {key}\n")
        env = {
            **os.environ,
            "ARCH": "x86_64",
            # Reproducible version string: the same fragment gives the same `uname -v`.
            "KBUILD_BUILD_TIMESTAMP": f"pimcloud {key[:12]}",
            "KBUILD_BUILD_USER": "pimcloud",
            "KBUILD_BUILD_HOST": "pimcloud",
            "KBUILD_BUILD_VERSION": "1",
        }
        make = ["nice", "-n", "10", "make", f"O={out}", f"-j{max(1, jobs)}"]
        log(f"kernel: configuring in {out} (log: {log_file})")
        _run_logged([*make, "tinyconfig"], tree, env, log_file)
        _run_logged([str(tree / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(out),
                     str(out / ".config"), str(FRAGMENT)], tree, env, log_file)
        _run_logged([*make, "olddefconfig"], tree, env, log_file)
        problems = unmet_options(wanted, parse_config((out / ".config").read_text()))
        if problems:
            raise KernelBuildError(
                f"{FRAGMENT}: Kconfig did not apply {len(problems)} option(s), usually because "
                "a dependency is missing; add the dependency to the fragment or drop the "
                "option:\n  " + "\n  ".join(problems))
        log(f"kernel: building vmlinux and bzImage with -j{jobs}")
        _run_logged([*make, "vmlinux", "bzImage"], tree, env, log_file)
        folder = kernel_dir()
        _copy_atomic(out / "vmlinux", folder / "vmlinux")
        _copy_atomic(out / "arch/x86/boot/bzImage", folder / "bzImage")
        _copy_atomic(out / ".config", folder / "config")
        seconds = time.monotonic() - start
        atomic_write_text(folder / "build.json", json.dumps(
            {"key": key, "source_version": version, "seconds": round(seconds, 1)}, indent=2))
        artifacts = KernelArtifacts(folder / "vmlinux", folder / "bzImage", folder / "config",
                                    seconds)
        log(f"kernel: built in {seconds:.1f} s: vmlinux {artifacts.vmlinux.stat().st_size:,} B, "
            f"bzImage {artifacts.bzimage.stat().st_size:,} B")
        return artifacts
