"""A line that is JSON but not an object (``null``, ``[1]``, ``5``, ``"x"``, ``true``) is rejected, never a crash.

Arrow's JSON reader (pyarrow 25) dies with a segmentation fault when a
block it parses starts with ``null``: the columnar fast path must never hand
it a line that does not start with ``{`` (such lines go the per-line way).
The run is a real process, so a crash fails the test instead of the test run.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pitwatch.inputs.files import LineBlock, iter_jsonl_chunks
from tests import lake_rows
from tests.conftest import line

NOT_OBJECTS = [b"null", b"[1]", b"5", b'"x"', b"true", b"nullx"]


@pytest.mark.slow    # `pitwatch run` in a child process: a Beam pipeline the guard of tests/conftest.py cannot see
def test_a_run_rejects_lines_that_are_not_objects_with_their_reason(tmp_path):
    good = [line(seq=s).encode() for s in range(1, 4)]
    path = tmp_path / "shoe.jsonl"
    path.write_bytes(b"\n".join([NOT_OBJECTS[0], good[0], *NOT_OBJECTS[1:], *good[1:]]) + b"\n")
    lake = tmp_path / "lake"
    done = subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(path), "--lake", str(lake)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rejects = lake_rows.dicts(lake, "rejects")
    assert sorted(r["line"] for r in rejects) == [1, 3, 4, 5, 6, 7]
    assert {r["raw"] for r in rejects} == {b.decode() for b in NOT_OBJECTS}
    assert all(r["reason"] for r in rejects)
    assert lake_rows.table(lake, "events").num_rows == 3


def test_a_chunk_with_a_line_not_starting_with_a_brace_is_read_line_by_line(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a":1}\n{"a":2}\nnull\n{"a":4}\n')
    chunks = list(iter_jsonl_chunks(str(path), 2))
    assert isinstance(chunks[0], LineBlock)
    assert chunks[1] == [(3, b"null"), (4, b'{"a":4}')]


def test_the_columnar_path_sends_lines_that_are_not_objects_back_alone():
    lines = [b"null", line(seq=2).encode(), b"[1]", line(seq=4).encode(), b" null"]
    code = (  # in a child process: on the unguarded path Arrow kills it
        "import json, sys\n"
        "from pitwatch.schemas.columnar import decode_block\n"
        "from pitwatch.schemas.decode import GamingDayConfig\n"
        f"table, slow = decode_block({lines!r}, 'f.jsonl', [1, 2, 3, 4, 5], GamingDayConfig())\n"
        "print(json.dumps([slow, table.column('line').to_pylist()]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [[0, 2, 4], [2, 4]]
