"""The wheel carries everything the pipeline needs at run time (Beam workers install it).

Builds the wheel from the repo, installs it into a fresh virtual environment
outside the repo, and runs ``pitwatch --help`` and a small ``pitwatch run``
there; the replay engine in it is the compiled one (``setup.py``).  The fresh environment gets the third-party dependencies from the
test environment (a path entry, not a copy) so the test needs no network and
stays fast; pitwatch itself comes only from the wheel.
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
    for needed in ("schemas/events.schema.json", "cli/__init__.py", "rules/__init__.py",
                   "seeds/__init__.py", "seeds/baccarat.csv", "queries/__init__.py", "queries/round_replay.sql",
                   "simulator/__init__.py", "live/__init__.py"):
        assert needed in names, f"{needed} missing from the wheel"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]
    (pathlib.Path(purelib) / "_test_deps.pth").write_text(deps + "\n")
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = subprocess.run([str(py), "-c", "import schemas, pipelines, pitwatch.rules.table; print(schemas.__file__); "
                            "print(pitwatch.rules.table.__file__)"], cwd=work, check=True, capture_output=True, text=True)
    assert all(w.startswith(str(venv)) for w in where.stdout.split()), where.stdout
    if os.environ.get("PITWATCH_PURE"):
        assert not any(n.endswith(".so") for n in names)
    else:   # the replay engine ships compiled (setup.py), with its sources and their digests, and runs compiled
        assert "rules/_compiled_from.json" in names and "rules/table.py" in names
        assert any(n.startswith("rules/table.") and n.endswith(".so") for n in names)
        assert where.stdout.split()[1].endswith(".so") and "RuntimeWarning" not in where.stderr, where
    exe = venv / "bin" / "pitwatch"
    help_text = subprocess.run([str(exe), "--help"], cwd=work, check=True, capture_output=True, text=True).stdout
    assert "pitwatch run" in help_text
    (work / "in.jsonl").write_text("\n".join(line(seq=i) for i in range(1, 6)) + "\n")
    out = subprocess.run([str(exe), "run", "in.jsonl", "--lake", "lake", "--quiet"], cwd=work,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "lines read  5 = accepted 5 + rejected 0 + duplicates 0" in out.stdout
