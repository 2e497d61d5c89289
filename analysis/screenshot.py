"""A PNG of the HTML report as a browser renders it (Debian's chromium, headless).

    pimcloud analyze CAMPAIGN --report --screenshot      -> CAMPAIGN/report/screenshot.png

The screenshot is the check a person makes: do the figures load, do the tables fit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


class BrowserMissing(RuntimeError):
    """No headless browser on this machine."""


def find_browser() -> str:
    """The browser to render with: $PIMCLOUD_BROWSER, else the first of BROWSERS on PATH."""
    given = os.environ.get("PIMCLOUD_BROWSER")
    if given:
        if shutil.which(given) is None:
            raise BrowserMissing(f"PIMCLOUD_BROWSER={given}: no such program")
        return given
    for name in BROWSERS:
        if shutil.which(name):
            return name
    raise BrowserMissing("no chromium on PATH: install Debian's chromium (make setup does, "
                         "from analysis/apt-packages.txt) or set PIMCLOUD_BROWSER")


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 3000,
               timeout_s: float = 120.0) -> Path:
    """Render ``page`` (an HTML file) headless into ``png``; returns ``png``.

    The PNG is written next to its final name and moved there, so a failed render
    leaves any earlier screenshot in place."""
    browser = find_browser()
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pimcloud-browser-") as profile:
        partial = png.with_name(f".{png.name}.partial.png")
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu",
                   "--hide-scrollbars", f"--user-data-dir={profile}",
                   f"--window-size={width},{height}", f"--screenshot={partial}",
                   page.resolve().as_uri()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
        if done.returncode != 0 or not partial.is_file():
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"{browser} could not render {page} (exit {done.returncode}): "
                               f"{done.stderr.strip()[-800:]}")
        partial.replace(png)
    return png
