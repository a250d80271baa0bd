"""The compiled replay engine (Cython, ``setup.py``) is the source's engine, or is not used.

The ``.py`` files are the source of truth; a compiled module runs only while
it was built from the source beside it (``rules/__init__.py``).  Real
processes throughout: the choice is made once, when ``rules`` is imported.
"""
from __future__ import annotations

from tests import lake_rows

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import rules
from simulator import FAULT_NAMES, simulate

REPO = pathlib.Path(__file__).resolve().parents[2]
built = pytest.mark.skipif(not rules.compiled_modules(), reason="rules/ not compiled (installed with PITWATCH_PURE=1)")

_WHERE = "import rules.table, rules.stud; print(rules.table.__file__); print(rules.stud.__file__)"


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PITWATCH_PURE"}
    env.update(extra)
    return env


def _where(cwd: pathlib.Path, **env) -> tuple[list[str], str]:
    out = subprocess.run([sys.executable, "-c", _WHERE], cwd=cwd, env=_env(**env),
                         capture_output=True, text=True, check=True)
    return out.stdout.split(), out.stderr


@pytest.fixture
def copy_of_rules(tmp_path) -> pathlib.Path:
    """The built ``rules`` package (sources, compiled modules, digests) in a folder of its own."""
    root = tmp_path / "root"
    shutil.copytree(REPO / "rules", root / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    return root


@built
def test_a_current_build_runs_compiled(copy_of_rules):
    files, err = _where(copy_of_rules)
    assert all(f.startswith(str(copy_of_rules)) and not f.endswith(".py") for f in files), files
    assert "RuntimeWarning" not in err


@built
def test_a_rule_edited_after_the_build_runs_every_module_from_source(copy_of_rules):
    cards = copy_of_rules / "rules" / "cards.py"
    cards.write_text(cards.read_text() + "\n# edited after the build\n")
    files, err = _where(copy_of_rules)
    assert files == [str(copy_of_rules / "rules" / "table.py"), str(copy_of_rules / "rules" / "stud.py")]
    assert "rules.cards changed since the rules were compiled" in err


@built
def test_a_build_without_its_digests_runs_from_source(copy_of_rules):
    (copy_of_rules / "rules" / "_compiled_from.json").unlink()
    files, err = _where(copy_of_rules)
    assert all(f.endswith(".py") for f in files) and "RuntimeWarning" in err


@built
def test_pitwatch_pure_runs_from_source_without_a_warning(copy_of_rules):
    files, err = _where(copy_of_rules, PITWATCH_PURE="1")
    assert all(f.endswith(".py") for f in files) and "RuntimeWarning" not in err


@built
@pytest.mark.slow
def test_compiled_and_source_engines_write_the_same_lake(tmp_path):
    """Every fault of every game, replayed by the compiled engine and by the source (PITWATCH_PURE=1):
    the same findings, rounds and packs, byte for byte (the run records differ: times, run ids)."""
    feeds = tmp_path / "feeds"
    simulate(feeds, tables={"baccarat": 1, "three_bet_poker": 1, "combate": 1, "stud": 1, "stud8": 1, "razz": 1},
             hours=2, seed=11, faults={name: 0.2 for name in FAULT_NAMES})
    lakes = {}
    for mode, env in (("compiled", _env()), ("source", _env(PITWATCH_PURE="1"))):
        lake = tmp_path / mode
        out = subprocess.run([sys.executable, "-m", "pipelines.cli", "run", str(feeds), "--lake", str(lake), "--quiet"],
                             cwd=tmp_path, env=env, capture_output=True, text=True)
        assert out.returncode in (0, 1), out.stderr     # 1: findings at or above --fail-on
        assert "RuntimeWarning" not in out.stderr
        lakes[mode] = lake_rows.data_files(lake)     # each table's files, named without the run id
    assert lakes["compiled"] == lakes["source"]
    rule_ids = set(lake_rows.table(tmp_path / "compiled", "findings").column("rule_id").to_pylist())
    assert len(rule_ids) >= 15    # most rules fired: the engines were exercised
