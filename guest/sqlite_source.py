"""Debian's SQLite, as the amalgamation the oltp service compiles in with doubles.

Debian 12's libsqlite3 computes with x87 ``long double`` (``fcomip``, ``fdivrp``...), which
gem5 v24.0.0.1 leaves unimplemented, so oltp hung or read a malformed schema in gem5.
SQLite supports a plain ``double`` at compile time (``LONGDOUBLE_TYPE``), so the bundle
builds Debian's own SQLite source package that way instead of patching anything:

1. ``apt-get source --download-only sqlite3`` from this machine's Debian mirror (read from
   /etc/apt, as the image build does) through a private apt state, so the machine's apt
   configuration is left as it is;
2. ``dpkg-source -x`` (Debian's patches applied), ``./configure``, ``make sqlite3.c``;
3. ``sqlite3.c``, ``sqlite3.h`` and ``VERSION`` into ``$PIMCLOUD_CACHE/sqlite/``.

workloads/services/oltp/CMakeLists.txt compiles that file with Debian's own compile
options (debian/rules) plus ``LONGDOUBLE_TYPE=double`` into pimcloud-oltp.

    python -m pimcloud.guest.sqlite_source          # make it when missing; print the folder
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pimcloud.atomic import atomic_write_text
from pimcloud.paths import cache_dir

from .image import SUITE, debian_mirror
from .kernel import Log

PACKAGE = "sqlite3"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
OUTPUTS = ("sqlite3.c", "sqlite3.h", "VERSION")


class SqliteSourceError(RuntimeError):
    """The source package could not be fetched or built: the message says what to do."""


def sqlite_dir() -> Path:
    return cache_dir() / "sqlite"


def _run(command: list[str], cwd: Path, log_file: Path) -> None:
    with log_file.open("a") as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        done = subprocess.run(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SqliteSourceError(f"{' '.join(command[:3])} failed (exit {done.returncode}); "
                                f"see {log_file}")


def _apt_options(state: Path) -> list[str]:
    return ["-o", "Dir::Etc::SourceList=/dev/null", "-o", f"Dir::Etc::SourceParts={state}",
            "-o", f"Dir::State::Lists={state / 'lists'}",
            "-o", f"Dir::Cache={state / 'cache'}", "-o", "APT::Sandbox::User=root"]


def ensure_sqlite_source(log: Log = print, mirror: str | None = None) -> Path:
    """The folder holding Debian's SQLite amalgamation, made when missing."""
    out = sqlite_dir()
    if all((out / name).is_file() for name in OUTPUTS):
        return out
    for tool in ("apt-get", "dpkg-source", "tclsh", "make", "cc"):
        if shutil.which(tool) is None:
            raise SqliteSourceError(f"{tool} not found: `make setup` installs it (guest/"
                                    "apt-packages.txt: dpkg-dev, tcl, build-essential)")
    mirror = mirror or debian_mirror()
    out.mkdir(parents=True, exist_ok=True)
    log_file = out / "build.log"
    log(f"sqlite: fetching Debian's {PACKAGE} source package from {mirror} (log: {log_file})")
    with tempfile.TemporaryDirectory(dir=out, prefix=".work-") as name:
        work = Path(name)
        state = work / "apt"
        (state / "lists" / "partial").mkdir(parents=True)
        (state / "cache" / "archives" / "partial").mkdir(parents=True)
        (state / "debian-src.sources").write_text(
            f"Types: deb-src\nURIs: {mirror}\nSuites: {SUITE}\nComponents: main\n"
            f"Signed-By: {KEYRING}\n")
        _run(["apt-get", *_apt_options(state), "update"], work, log_file)
        _run(["apt-get", *_apt_options(state), "source", "--download-only", PACKAGE],
             work, log_file)
        (dsc,) = work.glob(f"{PACKAGE}_*.dsc")
        _run(["dpkg-source", "-x", dsc.name, "src"], work, log_file)
        src = work / "src"
        log("sqlite: configure; make sqlite3.c")
        _run(["./configure", "--disable-tcl"], src, log_file)
        _run(["make", "sqlite3.c"], src, log_file)
        debian_version = dsc.stem.split("_", 1)[1]
        for name in OUTPUTS[:2]:
            shutil.copyfile(src / name, out / f".{name}.partial")
            (out / f".{name}.partial").rename(out / name)
        atomic_write_text(out / "VERSION",
                          f"{(src / 'VERSION').read_text().strip()} (Debian {debian_version})\n")
    log(f"sqlite: {(out / 'VERSION').read_text().strip()} in {out}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", action="store_true",
                        help="print the folder only (nothing is made)")
    args = parser.parse_args()
    if args.dir:
        print(sqlite_dir())
        return 0
    try:
        # Progress on stderr: stdout is the folder alone (the Makefile passes it to CMake).
        print(ensure_sqlite_source(log=lambda line: print(line, file=sys.stderr)))
    except SqliteSourceError as error:
        print(f"sqlite: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
