"""The bundle's layers (.importlinter at the checkout's root), checked by import-linter.

The distribution spreads one package over several folders (pyproject's package-dir),
which import-linter cannot follow: the test lays the package out as installed, in a
temporary tree of its modules, and runs lint-imports there. A layer that imports one
above it breaks the contract and the test, naming the import."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def lay_out_package(into: Path) -> None:
    """Copy every module of the distribution to where an install would put it."""
    setup = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders: dict[str, str] = setup["package-dir"]
    for package in setup["packages"]:
        home = max((name for name in folders if package == name or
                    package.startswith(name + ".")), key=len)
        source = REPO / folders[home] / Path(*package[len(home):].split(".")[1:])
        target = into / Path(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for module in source.glob("*.py"):
            shutil.copy(module, target / module.name)


def lint_imports(tree: Path, edit: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
    """lint-imports over the package laid out in ``tree``, after appending ``edit``'s
    lines to its modules (relative paths)."""
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        pytest.skip("import-linter is not installed: make setup (it is a dev dependency)")
    lay_out_package(tree)
    shutil.copy(REPO / ".importlinter", tree / ".importlinter")
    for module, line in (edit or {}).items():
        (tree / module).write_text((tree / module).read_text() + "\n" + line + "\n")
    return subprocess.run([str(lint)], cwd=tree, capture_output=True, text=True,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                          check=False, timeout=300)


def test_every_import_goes_down_the_layers(tmp_path: Path) -> None:
    done = lint_imports(tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 kept, 0 broken" in done.stdout


def test_a_layer_that_imports_upward_is_caught(tmp_path: Path) -> None:
    done = lint_imports(tmp_path, {"pimcloud/topology/__init__.py":
                                   "import pimcloud.runs.spec  # noqa"})
    assert done.returncode != 0
    assert "pimcloud.topology is not allowed to import pimcloud.runs" in done.stdout
