"""Type-check the packages whose types allow it (``make lint``).

pitwatch's subpackages live in the repository's top-level folders and are mapped into one import
package by ``[tool.setuptools.package-dir]`` (pyproject.toml), which mypy cannot read: this script
builds that package as a tree of symbolic links under ``build/mypy/pitwatch`` and checks it there.

``TYPED`` lists the subpackages checked (``pitwatch``: the base modules); the others are named in docs/layout.md
("Types") with their error counts and what keeps them out.  ``STRICT``: those checked again with ``--strict``
(the engine: its state and plug-in API are typed through).  ``python .ci/mypy.py lake`` checks one subpackage.
"""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPED = ["pitwatch", "schemas", "rules", "engine", "inputs", "seeds", "cli", "queries", "pipelines", "simulator", "lake", "console"]
STRICT = ["rules", "engine"]


def main() -> int:
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    tree = ROOT / "build" / "mypy" / "pitwatch"
    tree.mkdir(parents=True, exist_ok=True)
    for f in (ROOT / "pitwatch").iterdir():
        if f.suffix == ".py":
            _link(tree / f.name, f)
    for name, folder in dirs.items():
        if name != "pitwatch":
            _link(tree / name.split(".", 1)[1], ROOT / folder)
    targets = [str(tree / f) if f != "pitwatch" else str(tree / "__init__.py") for f in sys.argv[1:] or TYPED]
    if "pitwatch" in (sys.argv[1:] or TYPED):
        targets += [str(p) for p in tree.glob("*.py") if p.name != "__init__.py"]
    mypy = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    status = subprocess.call([*mypy, *targets], cwd=tree.parent)
    strict = [str(tree / f) for f in STRICT if f in (sys.argv[1:] or TYPED)]
    if strict:
        status = subprocess.call([*mypy, "--strict", *strict], cwd=tree.parent) or status
    return status


def _link(at: Path, to: Path) -> None:
    if at.is_symlink() and at.resolve() == to.resolve():
        return
    if at.is_symlink():
        at.unlink()
    at.symlink_to(to)


if __name__ == "__main__":
    sys.exit(main())
