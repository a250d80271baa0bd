"""Every test that runs a Beam pipeline is marked ``slow`` (tests/conftest.py enforces it), so that
``make check`` (``-m "not slow"``) stays quick and runs no pipeline."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

_TESTS = '''
import apache_beam as beam
import pytest

def test_unmarked_runs_a_pipeline():
    try:                                    # even a test that swallows the guard's error fails
        with beam.Pipeline(runner="FnApiRunner") as p:
            p | beam.Create([1])
    except Exception:
        pass

@pytest.mark.slow
def test_marked_runs_a_pipeline():
    with beam.Pipeline(runner="FnApiRunner") as p:
        p | beam.Create([1])

def test_unmarked_without_a_pipeline():
    assert beam.Create([1]) is not None
'''


@pytest.mark.slow
def test_a_pipeline_in_an_unmarked_test_fails_it(tmp_path):
    (tmp_path / "test_guarded.py").write_text(_TESTS)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
                          "--rootdir", str(tmp_path), str(tmp_path / "test_guarded.py")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "1 failed, 2 passed" in out.stdout, out.stdout[-3000:]
    assert "test_unmarked_runs_a_pipeline runs a Beam pipeline: mark it @pytest.mark.slow" in out.stdout
