"""The workloads' part of the guest image (run by workloads/image-hooks/ at image build).

Lays out under the staged root:

- ``/opt/pimcloud/workload-data/``: the data sets of search, imgdnn, speech and translate,
  built here on the host by ``datasets.build`` from Debian packages (fortunes,
  dataset-fashion-mnist, espeak-ng, pocketsphinx-en-us), exactly as natively; the service
  binaries read it by default (``--data``). kvstore and oltp generate theirs at start.
- the service binaries in ``/opt/pimcloud/bin`` (put there by the CMake install rules)
  without their debug sections, which the guest never reads.

Building the data sets trains the image classifier, so they are cached in
``$PIMCLOUD_CACHE/workload-data/<key>`` where the key covers the builder's code and the
versions of the packages it reads; an image rebuilt for new binaries reuses them.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pimcloud.paths import cache_dir
from pimcloud.workloads import datasets
from pimcloud.workloads.services import SERVICES

GUEST_DATA = "opt/pimcloud/workload-data"  # the harness's default --data in the guest
# Debian packages the data sets are made from (their versions are part of the cache key).
SOURCE_PACKAGES = ("fortunes", "fortunes-min", "dataset-fashion-mnist", "espeak-ng",
                   "pocketsphinx-en-us", "libxapian30")
HERE = Path(__file__).resolve().parent
BUILDER_SOURCES = (HERE / "datasets.py", HERE / "services" / "search" / "search_index.cc")


def package_versions(names: tuple[str, ...] = SOURCE_PACKAGES) -> dict[str, str]:
    """name -> installed version on this host; a missing package is named with the fix."""
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status} ${Version}\n",
                           *names], capture_output=True, text=True, check=False)
    versions = {}
    for line in done.stdout.splitlines():
        name, status, version = [*line.split(" ", 2), "", ""][:3]
        if status == "installed":
            versions[name] = version
    missing = [n for n in names if n not in versions]
    if missing:
        raise datasets.DataError(f"the workload data sets need the Debian packages {missing}: "
                                 f"apt-get install {' '.join(missing)} "
                                 "(listed in workloads/apt-packages.txt)")
    return versions


def data_key() -> str:
    digest = hashlib.sha256()
    for source in BUILDER_SOURCES:
        digest.update(source.read_bytes())
    digest.update(json.dumps(package_versions(), sort_keys=True).encode())
    digest.update(f"numpy {__import__('numpy').__version__}".encode())
    return digest.hexdigest()[:16]


def cached_data() -> Path:
    """The data sets for this key, built once (into a temporary folder, then renamed)."""
    folder = cache_dir() / "workload-data" / data_key()
    if (folder / "manifest.json").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".building-"))
    try:
        datasets.build(partial)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def install(root: Path) -> dict[str, object]:
    """Data sets into ``root/opt/pimcloud/workload-data``; service binaries stripped."""
    if not (root / "usr").is_dir():
        raise datasets.DataError(f"{root} does not look like a staged root (no usr/); the "
                                 "image build passes the root folder as the argument")
    target = root / GUEST_DATA
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(cached_data(), target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # readable by any guest user
    binaries = [root / "opt/pimcloud/bin" / s.binary for s in SERVICES.values()]
    binaries += [root / "opt/pimcloud/bin" / n for n in ("pimcloud-be", "pimcloud-synthetic",
                                                         "pimcloud-search-index")]
    stripped = [b for b in binaries if b.is_file()]
    if stripped and shutil.which("strip"):
        subprocess.run(["strip", "--strip-debug", *map(str, stripped)], check=True)
    return {"data": str(target), "bytes": sum(p.stat().st_size for p in target.rglob("*")
                                               if p.is_file()),
            "stripped": [b.name for b in stripped]}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: image_data.py ROOT (the staged image root)", file=sys.stderr)
        return 2
    try:
        print(json.dumps(install(Path(argv[0]))))
    except datasets.DataError as error:
        print(f"workload image data: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
