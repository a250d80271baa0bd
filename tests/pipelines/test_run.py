"""End to end: ``pitwatch run`` over real files into a real lake, read back with DuckDB."""
from __future__ import annotations

import gzip
import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from tests import lake_rows
from tests.conftest import event, line


def _run(*args):
    result = CliRunner().invoke(main, ["run", *map(str, args), "--quiet"], catch_exceptions=False)
    return result


@pytest.fixture
def mixed_inputs(tmp_path):
    """Two files and a gzip: good lines, duplicates, a conflict, bad lines, blanks, BOM, CRLF."""
    a = tmp_path / "in" / "a.jsonl"
    a.parent.mkdir()
    lines_a = [
        line(seq=1),
        line(seq=2),
        line(seq=2),                                   # exact duplicate in the same file
        "",                                            # blank: skipped, not counted
        line(seq=3, card="Zz"),                        # bad card
        "{not json",                                   # not JSON
        line(seq=4, event_id="dup-conflict"),
        json.dumps({**event(seq=5), "firmware": "4.2"}),
    ]
    a.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines_a).encode() + b"\r\n")
    b = tmp_path / "in" / "b.jsonl.gz"
    with gzip.open(b, "wt") as f:
        f.write(json.dumps(dict(reversed(list(event(seq=1).items())))) + "\n")   # duplicate of a:1, keys reordered
        f.write(line(seq=4, event_id="dup-conflict", card="2c") + "\n")     # conflicting copy
        f.write(line(seq=6, ts="2026-11-29T07:00:00Z") + "\n")            # next gaming day
    c = tmp_path / "in" / "c.parquet"
    rows = [event(seq=7), event(seq=8, pack_id=None)]   # second row lacks its pack_id
    pq.write_table(pa.Table.from_pylist(rows), c)
    return tmp_path / "in"


@pytest.mark.slow
def test_run_reconciles_counts_and_keeps_rejects_with_reasons(mixed_inputs, tmp_path):
    lake = tmp_path / "lake"
    result = _run(mixed_inputs, "--lake", lake)
    assert result.exit_code == 0, result.output
    assert "lines read  12 = accepted 5 + rejected 5 + duplicates 2" in result.output
    con = lake_rows.connection(lake)
    rejects = con.sql("""select file, line, raw, reason from rejects order by file, line""").fetchall()
    got = [(pathlib.Path(f).name, n, reason.split(":")[0]) for f, n, _raw, reason in rejects]
    assert got == [
        ("a.jsonl", 5, "field 'card' is not a card code (rank A23456789TJQK + suit cdhs)"),
        ("a.jsonl", 6, "not valid JSON"),
        ("a.jsonl", 7, "conflicting duplicate"),
        ("b.jsonl.gz", 2, "conflicting duplicate"),
        ("c.parquet", 2, "required field 'pack_id' is missing"),
    ]
    raws = {(pathlib.Path(f).name, n): raw for f, n, raw, _ in rejects}
    assert raws[("a.jsonl", 6)] == "{not json" and raws[("a.jsonl", 7)] == line(seq=4, event_id="dup-conflict")
    assert '"card": "2c"' in raws[("b.jsonl.gz", 2)]
    runs = con.sql("select lines_read, accepted, rejected, duplicates, status from runs").fetchall()
    assert runs == [(12, 5, 5, 2, "succeeded")]


@pytest.mark.slow
def test_events_are_typed_and_partitioned_by_gaming_day(mixed_inputs, tmp_path):
    lake = tmp_path / "lake"
    assert _run(mixed_inputs, "--lake", lake).exit_code == 0
    con = lake_rows.connection(lake)
    rows = con.sql("""select gaming_day::varchar, count(*), typeof(any_value(ts)), typeof(any_value(seq)),
                      typeof(any_value(gaming_day)) from events
                      group by all order by 1""").fetchall()
    assert rows == [("2026-11-28", 4, "TIMESTAMP WITH TIME ZONE", "BIGINT", "DATE"),
                    ("2026-11-29", 1, "TIMESTAMP WITH TIME ZONE", "BIGINT", "DATE")]
    unknown = con.execute("select unknown_fields from events where seq = 5").fetchone()
    assert json.loads(unknown[0]) == {"firmware": "4.2"}
    kept = con.execute("select file, line from events where seq = 1").fetchone()
    assert kept[0].endswith("a.jsonl") and kept[1] == 1


@pytest.mark.slow
def test_parquet_input_goes_through_the_same_validation(mixed_inputs, tmp_path):
    lake = tmp_path / "lake"
    assert _run(mixed_inputs / "c.parquet", "--lake", lake).exit_code == 0
    con = lake_rows.connection(lake)
    assert con.sql("select seq from events").fetchall() == [(7,)]
    reason = con.sql("select line, reason from rejects").fetchall()
    assert reason == [(2, "required field 'pack_id' is missing")]


def _lake_files(lake: pathlib.Path) -> dict[str, bytes]:
    return lake_rows.data_files(lake)


@pytest.mark.slow
def test_rerun_over_the_same_input_gives_byte_identical_partitions(mixed_inputs, tmp_path):
    lake = tmp_path / "lake"
    assert _run(mixed_inputs, "--lake", lake).exit_code == 0
    first = _lake_files(lake)
    assert _run(mixed_inputs, "--lake", lake).exit_code == 0
    assert _lake_files(lake) == first
    assert [r["status"] for r in lake_rows.run_records(lake)] == ["succeeded"] * 2   # every run is recorded


def test_missing_input_is_one_error_line(tmp_path):
    result = CliRunner().invoke(main, ["run", str(tmp_path / "nope.jsonl"), "--lake", str(tmp_path / "lake")])
    assert result.exit_code == 2
    assert result.output == f"Error: input {tmp_path / 'nope.jsonl'} does not exist\n"


def test_unwritable_lake_is_one_error_line(tmp_path, mixed_inputs):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = CliRunner().invoke(main, ["run", str(mixed_inputs), "--lake", str(blocker / "lake")])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: cannot write to lake {blocker / 'lake'}")
    assert "Traceback" not in result.output


def test_empty_folder_is_one_error_line(tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["run", str(tmp_path / "empty"), "--lake", str(tmp_path / "lake")])
    assert result.exit_code == 2 and "holds no .jsonl, .jsonl.gz or .parquet file" in result.output


@pytest.mark.slow
def test_beam_options_pass_through(mixed_inputs, tmp_path):
    lake = tmp_path / "lake"
    result = _run(mixed_inputs, "--lake", lake, "--direct_num_workers=1", "--runner=FnApiRunner")
    assert result.exit_code == 0, result.output
    opts = lake_rows.connection(lake).execute("select options from runs").fetchone()[0]
    assert json.loads(opts)["beam_args"] == ["--direct_num_workers=1", "--runner=FnApiRunner"]
