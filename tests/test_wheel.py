"""The wheel carries everything the pipeline needs at run time (Beam workers install it), under one
import package, ``pitwatch``, and nothing else (issue 38).

Builds the wheel from the repo, installs it into a fresh virtual environment outside the repo beside
another distribution that owns a top-level ``rules`` package (as PyPI's ``rules``, a Django library,
does), imports both, and runs ``pitwatch --help`` and a small ``pitwatch run`` there.  The fresh
environment gets the third-party dependencies from the test environment (a path entry, not a copy) so
the test needs no network and stays fast; pitwatch itself comes only from the wheel.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from tests.conftest import line

REPO = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_repo(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist)], check=True, cwd=tmp_path)
    wheel = next(dist.glob("pitwatch-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"pitwatch", wheel.name.split("-py3")[0] + ".dist-info"}
    for needed in ("pitwatch/schemas/events.schema.json", "pitwatch/cli/__init__.py", "pitwatch/rules/table.py",
                   "pitwatch/seeds/__init__.py", "pitwatch/seeds/baccarat.csv", "pitwatch/queries/__init__.py",
                   "pitwatch/queries/round_replay.sql", "pitwatch/simulator/__init__.py", "pitwatch/live/__init__.py",
                   "pitwatch/lake/verify.py", "pitwatch/engine/driver.py", "pitwatch/inputs/stored.py"):
        assert needed in names, f"{needed} missing from the wheel"
    assert not any(n.endswith((".so", ".c", ".pyx")) for n in names)      # pure Python, one wheel for every platform
    other = _distribution_with_a_top_level_rules(tmp_path / "other", dist)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    before = set(os.listdir(purelib))
    deps = sysconfig.get_paths()["purelib"]
    (pathlib.Path(purelib) / "_test_deps.pth").write_text(deps + "\n")
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    added = set(os.listdir(purelib)) - before - {"_test_deps.pth"}
    assert added == {"pitwatch", wheel.name.split("-py3")[0] + ".dist-info"}
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(other)], check=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = subprocess.run([str(py), "-c", "import rules, pitwatch.rules.table; print(rules.__file__); "
                            "print(pitwatch.rules.table.__file__); print(rules.WHO)"],
                           cwd=work, check=True, capture_output=True, text=True)
    other_file, ours, who = where.stdout.split()
    assert other_file == os.path.join(purelib, "rules", "__init__.py") and who == "other-rules"
    assert ours == os.path.join(purelib, "pitwatch", "rules", "table.py")
    exe = venv / "bin" / "pitwatch"
    help_text = subprocess.run([str(exe), "--help"], cwd=work, check=True, capture_output=True, text=True).stdout
    assert "pitwatch run" in help_text
    (work / "in.jsonl").write_text("\n".join(line(seq=i) for i in range(1, 6)) + "\n")
    out = subprocess.run([str(exe), "run", "in.jsonl", "--lake", "lake", "--quiet"], cwd=work,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "lines read  5 = accepted 5 + rejected 0 + duplicates 0" in out.stdout


def _distribution_with_a_top_level_rules(src: pathlib.Path, dist: pathlib.Path) -> pathlib.Path:
    """A wheel of a distribution ``other-rules`` whose one import package is a top-level ``rules``."""
    (src / "rules").mkdir(parents=True)
    (src / "rules" / "__init__.py").write_text('WHO = "other-rules"\n')
    (src / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\nbuild-backend = '
                                        '"setuptools.build_meta"\n[project]\nname = "other-rules"\n'
                                        'version = "1.0"\n[tool.setuptools]\npackages = ["rules"]\n')
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist)], check=True, cwd=src)
    return next(dist.glob("other_rules-*.whl"))
