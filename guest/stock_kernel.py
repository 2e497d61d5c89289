"""Debian's stock 6.1 kernel, fetched from the Debian registry and unpacked (not installed).

It is the reference guest for checks that must not depend on our own kernel build:
whatever NUMA layout it reports comes from the firmware tables alone.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from pimcloud.paths import cache_dir

META_PACKAGE = "linux-image-amd64"


def _image_package() -> str:
    """The versioned image package the meta package depends on (linux-image-6.1.0-N-amd64)."""
    output = subprocess.run(["apt-cache", "depends", META_PACKAGE], check=True,
                            capture_output=True, text=True).stdout
    names = re.findall(r"Depends: (linux-image-6\.1\.\S+-amd64)\b", output)
    if not names:
        raise RuntimeError(f"apt-cache knows no 6.1 kernel behind {META_PACKAGE}; "
                           "run 'apt-get update' first")
    return names[0].removesuffix("-unsigned")


def stock_kernel() -> Path:
    """Path to the stock vmlinuz, downloading and unpacking the package once."""
    package = _image_package()
    root = cache_dir() / "stock-kernel" / package
    found = sorted(root.glob("boot/vmlinuz-*"))
    if found:
        return found[0]
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as scratch:
        subprocess.run(["apt-get", "download", "-q", package], cwd=scratch, check=True,
                       capture_output=True)
        debs = sorted(Path(scratch).glob("*.deb"))
        unpacked = Path(scratch) / "root"
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(unpacked)], check=True)
        unpacked.rename(root)
    return sorted(root.glob("boot/vmlinuz-*"))[0]
