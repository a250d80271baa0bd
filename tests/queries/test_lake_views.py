"""The DuckDB views over the lake: columns, young lakes, read-only, partition pruning, seeds."""
from __future__ import annotations

import csv
import datetime as dt
import os

import duckdb
import pytest

from pitwatch.lake import Lake
from pitwatch.queries.lake_views import (
    STATUS_COLUMNS,
    LakeQueryError,
    connect,
    run_sql,
    seed_files,
    table_files,
    view_columns,
)
from pitwatch.schemas.arrow import LAKE_TABLES


def describe(con, view):
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {view}").fetchall()]


def test_every_lake_table_and_seed_is_there_by_name(con):
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert views == set(LAKE_TABLES) | {"alerts", "reviews"}     # the registered datasets (alerts: the live service's; reviews: pitwatch review's)
    assert tables == set(seed_files())        # read into memory before the lockdown
    assert "seeds_combate_paytable" in tables


def test_a_table_is_its_data_files_and_nothing_else(lake, tmp_path):
    """A table is the files its Delta log's current version names: stray files, folders, a killed
    writer's file and other files of the lake are no part of it."""
    from tests.queries.lakes import build_lake

    lake = Lake.at(build_lake(str(tmp_path / "lake")))
    assert [os.path.relpath(f, lake) for f in table_files(lake, "findings")] == [
        "findings/gaming_day=2026-11-27/replay-2026-11-27-hand-built.parquet",
        "findings/gaming_day=2026-11-28/replay-2026-11-28-hand-built.parquet"]
    day = tmp_path / "lake" / "findings" / "gaming_day=2026-11-28"
    (day / ".part-0.parquet.tmp-1").write_bytes(b"half written")
    (day / "replay-2026-11-28-killed.parquet").write_bytes(b"PAR1 half written")
    (day / "notes.txt").write_text("x")
    (tmp_path / "lake" / "findings" / "backup").mkdir()
    (tmp_path / "lake" / "findings" / "backup" / "part-0.parquet").write_bytes(b"junk")
    assert len(table_files(lake, "findings")) == 2
    assert run_sql(connect(lake), "SELECT count(*) FROM findings")[1] == [(9,)]
    assert table_files(lake, "rejects") == []


def test_views_have_the_schema_columns_whether_written_or_not(lake, tmp_path):
    empty_lake = tmp_path / "empty"
    empty_lake.mkdir()
    young = connect(Lake.at(empty_lake))
    full = connect(Lake.at(lake))
    for name in LAKE_TABLES:
        shown = view_columns(name).names + (list(STATUS_COLUMNS) if name == "findings" else [])
        assert [c for c, _ in describe(young, name)] == shown, name
        assert young.execute(f"SELECT count(*) FROM {name}").fetchone() == (0,)
    for name in ("events", "rounds", "packs", "findings"):  # written in the test lake: same names and types
        assert describe(full, name) == describe(young, name), name
    assert dict(describe(young, "findings"))["gaming_day"] == "DATE"
    assert dict(describe(young, "findings"))["event_ids"] == "VARCHAR[]"


def test_gaming_day_comes_from_the_folder(con):
    rows = con.execute("SELECT gaming_day, count(*) FROM events GROUP BY ALL ORDER BY 1").fetchall()
    assert rows == [(dt.date(2026, 11, 27), 1), (dt.date(2026, 11, 28), 35)]


@pytest.mark.parametrize("statement", [
    "INSERT INTO findings SELECT * FROM findings",
    "CREATE TABLE x AS SELECT 1",
    "CREATE OR REPLACE VIEW findings AS SELECT 1",
    "DROP VIEW findings",
    "UPDATE findings SET severity = 'info'",
    "DELETE FROM findings",
    "COPY (SELECT 1) TO '{lake}/out.csv'",
    "COPY findings FROM '{lake}/x.csv'",
    "ATTACH '{lake}/x.duckdb'",
    "DETACH memory",
    "EXPORT DATABASE '{lake}/dump'",
    "PRAGMA enable_profiling",
    "SET threads = 1",
    "RESET TimeZone",
    "INSTALL httpfs",
    "LOAD httpfs",
    "CALL pragma_version()",
    "CHECKPOINT",
    "BEGIN TRANSACTION",
    "PREPARE p AS SELECT 1",
    "EXPLAIN ANALYZE DELETE FROM findings",
    "-- a comment first\nEXPLAIN ANALYZE INSERT INTO findings SELECT * FROM findings",
    "WITH a AS (SELECT 1) INSERT INTO findings SELECT * FROM findings",
    "SELECT 1; DROP VIEW findings",
    "USE memory",
    "UPDATE EXTENSIONS",
])
def test_writes_and_setting_changes_are_refused(con, lake, statement):
    before = sorted(os.listdir(lake))
    with pytest.raises(LakeQueryError, match="refused|exactly one"):
        run_sql(con, statement.format(lake=lake))
    assert sorted(os.listdir(lake)) == before
    assert con.execute("SELECT count(*) FROM findings").fetchone() == (9,)


@pytest.mark.parametrize("statement", [
    "SELECT count(*) FROM findings",
    "WITH f AS (SELECT * FROM findings) SELECT count(*) FROM f",
    "FROM findings SELECT count(*)",
    "DESCRIBE findings",
    "SHOW TABLES",
    "SUMMARIZE rounds",
    "EXPLAIN SELECT * FROM rounds",
    "EXPLAIN ANALYZE SELECT count(*) FROM rounds",
    "/* why */ EXPLAIN (FORMAT json) SELECT 1",
    "VALUES (1)",
])
def test_queries_run(con, statement):
    columns, rows = run_sql(con, statement)
    assert columns and rows


def test_files_outside_the_lake_cannot_be_read_and_settings_are_locked(con, tmp_path):
    outside = tmp_path / "secret.csv"
    outside.write_text("a\n1\n")
    with pytest.raises(LakeQueryError, match="refused: read_csv"):
        run_sql(con, f"SELECT * FROM read_csv('{outside}')")
    with pytest.raises(duckdb.PermissionException, match="disabled by configuration"):
        con.execute(f"SELECT * FROM read_csv('{outside}')")   # the statement check bypassed
    with pytest.raises(Exception, match="lock"):
        con.execute("SET enable_external_access = true")
    assert con.execute("SELECT current_setting('TimeZone')").fetchone()[0] in ("UTC", "Etc/UTC")


def test_a_gaming_day_filter_prunes_the_other_partitions(tmp_path):
    """A corrupt file in another day's partition is never opened by a query filtered on gaming_day."""
    from tests.queries.lakes import build_lake

    lake = Lake.at(build_lake(str(tmp_path / "lake")))
    from pitwatch.lake import delta

    bad = tmp_path / "lake" / "events" / "gaming_day=2026-11-29"
    bad.mkdir()
    junk = b"PAR1 this is not a parquet file PAR1"
    (bad / "replay-2026-11-29-x.parquet").write_bytes(junk)      # committed: part of the table
    delta.commit_replays(lake, "events", [delta.DataFile("events", "gaming_day=2026-11-29/replay-2026-11-29-x.parquet",
                                                         len(junk), 1, "0" * 64, "2026-11-29")],
                         ["2026-11-29"], run_id="x", fence_at_start=delta.fence(lake, "events"))
    con = connect(lake)
    assert run_sql(con, "SELECT count(*) FROM events WHERE gaming_day = DATE '2026-11-28'")[1] == [(35,)]
    assert run_sql(con, "SELECT count(*) FROM events WHERE gaming_day = $d", {"d": dt.date(2026, 11, 27)})[1] == [(1,)]
    assert run_sql(con, "SELECT count(*) FROM events WHERE gaming_day BETWEEN $a AND $b",
                   {"a": dt.date(2026, 11, 20), "b": dt.date(2026, 11, 28)})[1] == [(36,)]
    with pytest.raises(LakeQueryError, match="gaming_day=2026-11-29"):
        run_sql(con, "SELECT count(*) FROM events")


def test_seeds_are_views_of_the_csv_files(con):
    path = seed_files()["seeds_combate_paytable"]
    with open(path, newline="") as f:
        expected = list(csv.DictReader(f))
    columns, rows = run_sql(con, "FROM seeds_combate_paytable")
    assert columns == list(expected[0])
    assert [[str(v).lower() for v in r] for r in rows] == [[v.lower() for v in e.values()] for e in expected]


def test_a_missing_lake_is_a_clear_error(tmp_path):
    with pytest.raises(LakeQueryError, match="no lake at"):
        connect(Lake.at(tmp_path / "nope"))


def test_a_duckdb_error_is_one_line(con):
    with pytest.raises(LakeQueryError) as err:
        run_sql(con, "SELECT no_such_column FROM findings")
    assert "\n" not in str(err.value) and "no_such_column" in str(err.value)


def test_the_alerts_table_is_there_empty_on_a_lake_with_no_watcher(con):
    """No watcher has written: ``alerts`` has its columns and no row, so the named query runs."""
    from pitwatch.schemas.arrow import ALERTS

    cols = [r[0] for r in con.execute("DESCRIBE alerts").fetchall()]
    assert sorted(cols) == sorted(ALERTS.names) and cols[-1] == "gaming_day"
    assert con.execute("SELECT count(*) FROM alerts").fetchone() == (0,)


def test_the_alerts_table_is_read_at_its_latest_version_and_a_plain_parquet_folder_is_read(tmp_path):
    """Not pinned to a run: a commit after the last run is seen; a folder written before the table was
    Delta (no log, no watcher since) is read from its visible files."""
    import shutil

    from pitwatch.live.alerts_table import AlertsTable
    from pitwatch.queries.lake_views import connect
    from tests.queries.lakes import build_lake

    lake = build_lake(str(tmp_path / "lake"))
    row = {"finding_id": "a" * 64, "rule_id": "BURN_SKIPPED", "title": "t", "severity": "major", "table_id": "BAC-07",
           "gaming_day": "2026-11-28", "ts": "2026-11-28T10:00:00Z", "event_ids": ["e"], "evidence": [],
           "expected": "x", "actual": "y", "source": "live"}
    sink = AlertsTable(Lake.at(lake), "pit-1")
    sink.recover({})
    for n in range(2):
        sink.send([{**row, "finding_id": str(n) * 64}])
        sink.flush()
        assert connect(Lake.at(lake)).execute("SELECT count(*) FROM alerts").fetchone() == (n + 1,)
    import duckdb

    from pitwatch.queries.export import export_database

    out = str(tmp_path / "audit.duckdb")
    export_database(Lake.at(lake), out)                        # export-duckdb copies it too
    assert duckdb.connect(out, read_only=True).execute("SELECT count(*) FROM alerts").fetchone() == (2,)
    shutil.rmtree(f"{lake}/alerts/_delta_log")        # what a watcher of before this table wrote
    assert connect(Lake.at(lake)).execute("SELECT count(*), min(gaming_day) FROM alerts").fetchone()[0] == 2
