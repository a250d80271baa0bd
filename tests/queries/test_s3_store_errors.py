"""A lake on an S3 API that is not there, or a store that does not answer (issue 44): the analysts'
commands say so in one ``Error:`` line, exit 2, never an empty answer or a traceback.  moto's S3
server (tests/object_store.py); no lake is built."""
from __future__ import annotations

import pytest

from pitwatch.cli import exits
from tests.conftest import run_pitwatch as pitwatch


def test_a_bucket_or_path_with_no_lake_is_exit_2_not_an_empty_answer(s3_lake):
    for args in (("sql", "SELECT 1"), ("query", "open_findings"), ("verify",)):
        result = pitwatch(*args, "--lake", s3_lake)
        assert result.returncode == exits.USAGE, (args, result.stdout, result.stderr)
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.slow           # waits out pyarrow's retries of a store that does not answer: 6 s a request
@pytest.mark.parametrize("args", [
    ("sql", "SELECT 1"), ("query", "open_findings"), ("verify",), ("export-duckdb", "--out", "OUT"),
    ("review", "f-1", "--disposition", "confirmed", "--by", "vera"), ("report", "--day", "2026-11-28", "--out", "OUT"),
    ("incidents", "--day", "2026-11-28"), ("dealers", "show")],
    ids=["sql", "query", "verify", "export", "review", "report", "incidents", "dealers-show"])
def test_a_store_that_does_not_answer_is_one_error_line_not_a_traceback(s3_lake, monkeypatch, tmp_path, args):
    from tests.object_store import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")     # nothing listens there
    args = tuple(str(tmp_path / "x.duckdb") if a == "OUT" else a for a in args)
    result = pitwatch(*args, "--lake", s3_lake)
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr.startswith(f"Error: cannot read the lake at {s3_lake}: ") and result.stderr.count("\n") == 1
    assert "endpoint, region and credentials" in result.stderr and not (tmp_path / "x.duckdb").exists()
