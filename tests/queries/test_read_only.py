"""Issue 22, "read-only means read-only": every probe of a hostile insider, replayed.

Each probe is refused (or, for the limits, interrupted or cut with a message)
and every file under the lake (data, nightly state, the live checkpoint) and
the seeds folder is byte-identical afterwards: a SHA-256 of the whole tree,
names and modes included, before and after.  The two walls are tested
separately: the statement check refuses (through the real CLI), and with the
check bypassed the connection itself can neither read nor write a file.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import duckdb
import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.lake import Lake
from pitwatch.queries.errors import RefusedStatement
from pitwatch.queries.lake_views import connect, seed_files
from pitwatch.queries.statement_check import check_read_only
from tests.queries.lakes import build_lake

SEEDS = os.path.dirname(next(iter(seed_files().values())))
FINDINGS_FILE = "findings/gaming_day=2026-11-28/replay-2026-11-28-hand-built.parquet"
CHECKPOINT = "_watch/default/checkpoint.json"
MANIFEST = "state/gaming_day=2026-11-28/replay-2026-11-28-test-manifest.parquet"
STATE_FILE = "state/gaming_day=2026-11-28/replay-2026-11-28-test-tables.parquet"


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    """The hand-built lake, plus a night's replay state and a live watcher's checkpoint."""
    from pitwatch.lake import state
    from pitwatch.live.checkpoint import StateDir

    lake = build_lake(str(tmp_path_factory.mktemp("lake")))
    files = [state.write_state_file(Lake.at(lake), "2026-11-28", "test", "tables",
                                    [{"table_id": "BAC-07", "state": '{"shoe": ["Qs"]}'}]),
             state.write_manifest(Lake.at(lake), "2026-11-28", "test", {"pitwatch": "test", "inputs": []})]
    from pitwatch.lake import delta

    delta.commit_replays(Lake.at(lake), state.TABLE, files, ["2026-11-28"], run_id="test", fence_at_start=0,
                         schema=state.STATE, partitioned=True)
    watcher = StateDir(os.path.join(lake, "_watch", "default"))
    watcher.save({"BAC-07": b'{"undealt": ["Qs", "7d", "Kh"]}'}, b"{}")
    watcher.close()
    return lake


def tree(*roots: str) -> dict[str, tuple[str, int]]:
    """Every file and folder under ``roots``: path → (SHA-256 of the bytes, mode)."""
    out = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs:
                path = os.path.join(folder, name)
                out[path] = ("dir", os.stat(path).st_mode)
            for name in files:
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    out[path] = (hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mode)
    return out


@pytest.fixture
def untouched(lake):
    """Asserts, after the test, that the lake and the seeds are exactly as before it."""
    before = tree(lake, SEEDS)
    assert os.path.join(lake, CHECKPOINT) in before and os.path.join(lake, MANIFEST) in before
    yield
    assert tree(lake, SEEDS) == before


def sql(lake, statement, *options):
    return CliRunner().invoke(main, ["sql", statement.format(lake=lake), "--lake", lake, *options])


def refused_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.stderr


# ---------------------------------------------------------------- the probes

OVERWRITE = ("with x as (copy (select * exclude (gaming_day) from findings where severity <> 'critical') "
             "to '{lake}/" + FINDINGS_FILE + "' (format parquet)) select * from x")
COPY_CTE = "with x as (copy (select 1 as a) to '{lake}/y.csv') select * from x"

REFUSED = {
    # the findings overwrite, as written and disguised
    "overwrite findings": OVERWRITE,
    "mixed case": ("WiTh x As (CoPy (SeLeCt * ExClUdE (gaming_day) FrOm findings WhErE severity <> 'critical') "
                   "To '{lake}/" + FINDINGS_FILE + "' (FoRmAt PaRqUeT)) SeLeCt * FrOm x"),
    "comments": "/* a look */ -- at the findings\n" + OVERWRITE.replace("(copy", "( /* c */ copy") + " -- done",
    "full-width letters": OVERWRITE.replace("copy", "ｃｏｐｙ"),
    "full-width select": "ＳＥＬＥＣＴ 1",
    "; inside a string then COPY": "select ';' as s; copy findings to '{lake}/" + FINDINGS_FILE + "'",
    "; inside a quoted name then COPY": "select 1 as \"a;b\"; copy findings to '{lake}/x.csv'",
    "explain analyze overwrite": "explain analyze " + OVERWRITE,
    "explain overwrite": "EXPLAIN " + OVERWRITE,
    "explain options overwrite": "explain (format json) " + OVERWRITE,
    "explain analyze CTE copy to csv": "explain analyze " + COPY_CTE,
    "CTE inside a subquery": "select * from (" + COPY_CTE + ")",
    "CTE inside a scalar subquery": "select 1 where 1 in (" + COPY_CTE + ")",
    "CTE inside a CTE": "with y as (" + COPY_CTE + ") select * from y",
    "CTE inside a union": "select 1 as a union all (" + COPY_CTE + ")",
    "DESCRIBE of a CTE copy": "describe (" + COPY_CTE + ")",
    "SUMMARIZE of a CTE copy": "summarize (" + COPY_CTE + ")",
    "PIVOT over a CTE copy": "pivot (" + COPY_CTE + ") on a using count(*)",
    "INSERT in a CTE": "with x as (insert into seeds_tables select * from seeds_tables returning *) select * from x",
    "UPDATE in a CTE": "with x as (update seeds_tables set value = 'x' returning *) select * from x",
    "DELETE in a CTE": "with x as (delete from seeds_tables returning *) select * from x",
    # reading what it must not
    "read_text checkpoint": "select * from read_text('{lake}/" + CHECKPOINT + "')",
    "read_blob checkpoint": "select * from read_blob('{lake}/" + CHECKPOINT + "')",
    "read_json checkpoint": "select * from read_json('{lake}/" + CHECKPOINT + "')",
    "read_text in a subquery": "select (select content from read_text('{lake}/" + CHECKPOINT + "'))",
    "read_parquet state": "select * from read_parquet('{lake}/state/**/*.parquet')",
    "read_csv a seed": "select * from read_csv('" + SEEDS + "/tables.csv')",
    "glob the lake": "select * from glob('{lake}/**')",
    "a path as a table": "select * from '{lake}/" + FINDINGS_FILE + "'",
    "parquet_metadata": "select * from parquet_metadata('{lake}/" + FINDINGS_FILE + "')",
    "sniff_csv": "select * from sniff_csv('" + SEEDS + "/tables.csv')",
    "query() text": "select * from query('select 1')",
    # every statement type the issue lists
    "COPY TO": "copy findings to '{lake}/" + FINDINGS_FILE + "' (format parquet)",
    "COPY FROM": "copy seeds_tables from '" + SEEDS + "/tables.csv'",
    "ATTACH": "attach '{lake}/x.duckdb'",
    "DETACH": "detach memory",
    "EXPORT": "export database '{lake}/dump'",
    "IMPORT": "import database '{lake}/dump'",
    "INSTALL": "install httpfs",
    "LOAD": "load httpfs",
    "SET": "set enable_external_access = true",
    "RESET": "reset lock_configuration",
    "PRAGMA": "pragma enable_profiling",
    "CALL": "call pragma_version()",
    "CREATE": "create table x as select 1",
    "INSERT": "insert into seeds_tables select * from seeds_tables",
    "UPDATE": "update seeds_tables set value = 'x'",
    "DELETE": "delete from seeds_tables",
    "DROP": "drop view findings",
    "ALTER": "alter table seeds_tables rename to t",
    "CHECKPOINT": "checkpoint",
    "BEGIN": "begin transaction",
    "PREPARE": "prepare p as select 1",
    "USE": "use memory",
    "two statements": "select 1; select 2",
}


@pytest.mark.parametrize("statement", REFUSED.values(), ids=REFUSED.keys())
def test_a_probe_is_refused_and_the_lake_is_untouched(lake, untouched, statement):
    refused_line(sql(lake, statement))


@pytest.mark.parametrize("statement", [s for k, s in REFUSED.items() if "full-width" not in k],
                         ids=[k for k in REFUSED if "full-width" not in k])
def test_the_statement_check_refuses_it(lake, statement):
    with pytest.raises(RefusedStatement, match="refused|exactly one"):
        check_read_only(statement.format(lake=lake))


def test_the_overwrite_as_written_through_the_installed_command(lake, untouched):
    result = subprocess.run([sys.executable, "-m", "pitwatch.cli", "sql", OVERWRITE.format(lake=lake),
                             "--lake", lake], capture_output=True, text=True)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "Error: refused: the lake is read-only and this query holds a COPY\n"
    assert connect(Lake.at(lake)).execute("select count(*) from findings where severity = 'critical'").fetchone() == (2,)


# ---------------------------------------------------------------- the first wall alone

FILE_PATHS = {
    "lake data": "{lake}/" + FINDINGS_FILE,
    "checkpoint": "{lake}/" + CHECKPOINT,
    "nightly state": "{lake}/" + MANIFEST,
    "a seed": SEEDS + "/tables.csv",
    "outside": "/etc/hostname",
    "relative": "findings/gaming_day=2026-11-28/part-0.parquet",
}
READERS = ["read_text", "read_blob", "read_csv", "read_parquet", "read_json", "glob", "parquet_metadata"]


@pytest.fixture(scope="module")
def con(lake):
    """The analysts' connection, used directly: the statement check is not in the way."""
    con = connect(Lake.at(lake))
    yield con
    con.close()


@pytest.mark.parametrize("path", FILE_PATHS.values(), ids=FILE_PATHS.keys())
@pytest.mark.parametrize("reader", READERS)
def test_with_the_check_bypassed_no_file_can_be_read(lake, con, untouched, reader, path):
    with pytest.raises(duckdb.Error, match="disabled by configuration|does not exist"):
        con.execute(f"select * from {reader}('{path.format(lake=lake)}')").fetchall()
    with pytest.raises(duckdb.Error, match="disabled by configuration|not exist|not found"):
        con.execute(f"select * from '{path.format(lake=lake)}'").fetchall()


BYPASS = {
    "overwrite findings": OVERWRITE,
    "explain analyze CTE copy": "explain analyze " + COPY_CTE,
    "COPY TO": "copy findings to '{lake}/" + FINDINGS_FILE + "' (format parquet)",
    "COPY TO a new file": "copy (select 1) to '{lake}/new.csv'",
    "ATTACH": "attach '{lake}/x.duckdb'",
    "EXPORT": "export database '{lake}/dump'",
    "INSTALL": "install httpfs",
    "LOAD": "load httpfs",
    "external access on": "set enable_external_access = true",
    "reset external access": "reset enable_external_access",
    "unlock": "set lock_configuration = false",
    "spill into the lake": "set temp_directory = '{lake}'",
    "replacement scans on": "set python_enable_replacements = true",
}


@pytest.mark.parametrize("statement", BYPASS.values(), ids=BYPASS.keys())
def test_with_the_check_bypassed_no_file_can_be_written(lake, con, untouched, statement):
    with pytest.raises(duckdb.Error, match="disabled (by|through) configuration|configuration has been locked"):
        con.execute(statement.format(lake=lake)).fetchall()
    assert con.execute("select current_setting('enable_external_access')").fetchone() == (False,)


def test_the_connection_sees_the_lake_tables_and_seeds_only(con):
    names = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
    assert names == {"events", "rejects", "rounds", "packs", "findings", "finding_changes", "runs", "rules", "alerts",
                     "reviews",
                     *seed_files()}


# ---------------------------------------------------------------- plain queries still run

PLAIN = {
    "explain of a parenthesised query": "explain (select 1)",
    "dynamic PIVOT": "PIVOT findings ON severity USING count(*) GROUP BY rule_id ORDER BY rule_id",
    "PIVOT with IN": "pivot findings on severity in ('critical', 'major') using count(*) group by rule_id",
    "UNPIVOT": "unpivot (select 1 as a, 2 as b) on a, b into name k value v",
    "; in a string": "select 'a;b' as s",
    "; and COPY in a comment": "select ';' as s -- ; copy findings to 'x'",
    "copy as a quoted name": "select 1 as \"copy\"",
    "SUMMARIZE": "summarize findings",
    "DESCRIBE": "describe events",
    "SHOW": "show tables",
    "EXPLAIN ANALYZE": "explain analyze select count(*) from findings",
    "EXPLAIN options": "/* x */ EXPLAIN (FORMAT json) SELECT 1",
    "a day's findings": "select count(*) from findings where gaming_day = date '2026-11-28'",
    "FROM first": "from rules select count(*)",
    "VALUES": "values (1), (2)",
}


@pytest.mark.parametrize("statement", PLAIN.values(), ids=PLAIN.keys())
def test_a_plain_query_runs(lake, untouched, statement):
    result = sql(lake, statement, "--format", "json")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() and result.stderr == ""


def test_pivot_gives_its_rows(lake):
    result = sql(lake, PLAIN["dynamic PIVOT"], "--format", "csv")
    assert result.stdout.splitlines()[:3] == ["rule_id,critical,major", "BURN_COUNT,0,1", "BURN_SKIPPED,0,3"]


# ---------------------------------------------------------------- limits

def test_a_runaway_cross_join_is_interrupted(lake, untouched):
    statement = "select count(*) from events a, events b, events c, events d, events e, range(1000000)"
    result = subprocess.run([sys.executable, "-m", "pitwatch.cli", "sql", statement, "--lake", lake,
                             "--timeout", "1"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3 and result.stdout == ""
    assert result.stderr == ("Error: the query was stopped after 1 s (--timeout 1); "
                             "filter on gaming_day or give it more time\n")


def test_the_timeout_defaults_to_a_minute_and_must_be_positive(lake):
    from pitwatch.cli.query import query
    from pitwatch.cli.sql import sql as sql_command

    for command in (sql_command, query):
        defaults = {p.name: p.default for p in command.params}
        assert (defaults["timeout"], defaults["max_rows"]) == (60.0, 100_000)
        assert (defaults["max_bytes"], defaults["max_memory"]) == ("256MB", "4GB")
    for bad in ("0", "-1", "soon"):
        assert sql(lake, "select 1", "--timeout", bad).exit_code == 2


def test_a_million_rows_are_cut_at_the_row_limit_with_a_message(lake, untouched):
    result = sql(lake, "select * from range(1000000)", "--format", "csv")
    assert result.exit_code == 3
    lines = result.stdout.splitlines()
    assert lines[0] == "range" and len(lines) == 1 + 100_000 and lines[-1] == "99999"
    assert result.stderr == ("Error: the output was cut at 100,000 rows (--max-rows 100000); "
                             "there are more: narrow the query or raise --max-rows\n")


@pytest.mark.parametrize("limits, message", [
    # the statement: ~100 GB of values inside the default limits before; DuckDB makes its
    # first 2,048 rows (2 GB) at once, so under the default --max-memory it may stop there, or the
    # printed values are cut at --max-bytes: either is one line, exit 3, and memory stays bounded
    ((), r"Error: (the query needed more memory than 4GB \(--max-memory 4GB\); .*|the output was cut at "
         r"26\d rows, 256MB of values \(--max-bytes 256MB\); there are more: narrow the query or raise --max-bytes)\n"),
    (("--max-memory", "1GB"), r"Error: the query needed more memory than 1GB \(--max-memory 1GB\); filter on "
                              r"gaming_day, select fewer or shorter columns, or raise --max-memory\n"),
], ids=["defaults", "max-memory 1GB"])
def test_a_hundred_gigabytes_of_text_is_stopped_in_bounded_memory(lake, untouched, limits, message):
    """Issue 37: ``select repeat('x',1000000) from range(100000)`` fetched ~100 GB inside the
    default limits (--max-rows counts rows) and ended in a MemoryError traceback under ulimit -v."""
    import re

    child = subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "sql", "select repeat('x',1000000) "
                              "from range(100000)", "--lake", lake, "--format", "csv", *limits],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)   # this child's own peak, not the worker's other children
    child.stderr.close()
    assert os.waitstatus_to_exitcode(status) == 3, stderr[-2000:]
    assert re.fullmatch(message, stderr), stderr[-2000:]
    # --max-memory bounds the growth of the address space from the open lake (~2 GB mapped then,
    # libraries and thread arenas, mostly not resident); before, ~100 GB were asked for
    assert usage.ru_maxrss / 1024 < (1024 if limits else 4096) + 2560


def test_max_bytes_cuts_the_printed_values_with_a_message(lake, untouched):
    result = sql(lake, "select repeat('x', 1000) as t from range(1000)", "--format", "csv", "--max-bytes", "100kB")
    assert result.exit_code == 3
    lines = result.stdout.splitlines()
    assert lines[0] == "t" and len(lines) == 1 + 100 and set(lines[1:]) == {"x" * 1000}
    assert result.stderr == ("Error: the output was cut at 100 rows, 100kB of values (--max-bytes 100kB); "
                             "there are more: narrow the query or raise --max-bytes\n")
    whole = sql(lake, "select repeat('x', 1000) as t from range(1000)", "--format", "csv", "--max-bytes", "2MB")
    assert whole.exit_code == 0 and len(whole.stdout.splitlines()) == 1001


@pytest.mark.parametrize("bad", ["0", "-1GB", "lots", "4XB", "0.1B"])
def test_a_size_that_is_not_one_is_refused(lake, bad):
    for option in ("--max-bytes", "--max-memory"):
        result = sql(lake, "select 1", option, bad)
        assert result.exit_code == 2 and "is not a size" in result.stderr


def test_max_rows_applies_to_query_too(lake):
    result = CliRunner().invoke(main, ["query", "findings_evidence", "--param", "gaming_day=2026-11-28",
                                       "--param", "severity=*", "--lake", lake, "--max-rows", "2",
                                       "--format", "csv"])
    assert result.exit_code == 3 and len(result.stdout.splitlines()) == 3
    assert "cut at 2 rows" in result.stderr
    exact = CliRunner().invoke(main, ["sql", "select * from range(5)", "--lake", lake, "--max-rows", "5"])
    assert exact.exit_code == 0 and exact.stderr == ""


def test_a_preview_with_limit_shows_the_first_rows_and_exits_0(lake, untouched):
    """Issue 42: ``--max-rows N`` used as a preview exited 3 ("did not complete"), so a script took a
    preview for a failure.  ``--limit N`` shows the first N rows, says on stderr that there are more,
    and exits 0; ``--max-rows`` stays the safety cut (exit 3), also when the limit asks for more."""
    preview = sql(lake, "select * from range(1000)", "--format", "csv", "--limit", "3")
    assert preview.exit_code == 0
    assert preview.stdout.splitlines() == ["range", "0", "1", "2"]
    assert preview.stderr == "the first 3 rows shown (--limit 3); there are more\n"
    whole = sql(lake, "select * from range(3)", "--format", "csv", "--limit", "3")
    assert whole.exit_code == 0 and whole.stdout.splitlines() == ["range", "0", "1", "2"] and whole.stderr == ""
    safety = sql(lake, "select * from range(1000)", "--format", "csv", "--limit", "500", "--max-rows", "10")
    assert safety.exit_code == 3 and len(safety.stdout.splitlines()) == 11
    assert safety.stderr.startswith("Error: the output was cut at 10 rows (--max-rows 10)")
    by_query = CliRunner().invoke(main, ["query", "findings_evidence", "--param", "gaming_day=2026-11-28",
                                         "--param", "severity=*", "--lake", lake, "--limit", "2", "--format", "csv"])
    assert by_query.exit_code == 0 and len(by_query.stdout.splitlines()) == 3
    assert by_query.stderr == "the first 2 rows shown (--limit 2); there are more\n"
    for bad in ("0", "-1", "some"):
        refused = sql(lake, "select 1", "--limit", bad)
        assert refused.exit_code == 2 and "Error: Invalid value for '--limit'" in refused.stderr


CUT = ["query", "cut_placement", "--param", "from_day=2026-11-27", "--param", "to_day=2026-11-28"]


@pytest.mark.parametrize("args, message", [
    (CUT + ["--param", "bucket=0"], "parameter bucket: '0' is not an integer from 1 to 1000 (ASCII digits)"),
    (CUT + ["--param", "bucket=-5"], "parameter bucket: '-5' is not an integer from 1 to 1000 (ASCII digits)"),
    (CUT + ["--param", "bucket=١٢"], "parameter bucket: '١٢' is not an integer from 1 to 1000 (ASCII digits)"),
    (CUT + ["--param", "bucket=１２"], "parameter bucket: '１２' is not an integer from 1 to 1000 (ASCII digits)"),
    (CUT + ["--param", "bucket=99999999999999999999"], "is not an integer from 1 to 1000"),
    (CUT + ["--param", "bucket= 12"], "parameter bucket: ' 12' is not an integer"),
    (["query", "dealer_rule_repeats", "--param", "to_day=2026-11-28", "--param", "days=0"],
     "parameter days: '0' is not an integer from 1 to 366 (ASCII digits)"),
    (["query", "dealer_rule_repeats", "--param", "to_day=2026-11-28", "--param", "min_count=0"],
     "parameter min_count: '0' is not an integer of at least 1 (ASCII digits)"),
    (["query", "findings_evidence", "--param", "gaming_day=2026-02-30"],
     "parameter gaming_day: '2026-02-30' is not a date YYYY-MM-DD"),
    (["query", "findings_evidence", "--param", "gaming_day=٢٠٢٦-١١-٢٨"],
     "parameter gaming_day: '٢٠٢٦-١١-٢٨' is not a date YYYY-MM-DD"),
])
def test_a_bad_parameter_is_refused_before_the_lake_is_read(lake, untouched, args, message):
    assert message in refused_line(CliRunner().invoke(main, [*args, "--lake", lake]))


def test_a_good_bucket_still_gives_the_histogram(lake):
    result = CliRunner().invoke(main, [*CUT, "--param", "bucket=12", "--lake", lake, "--format", "csv"])
    assert result.exit_code == 0 and len(result.stdout.splitlines()) > 1


# ---------------------------------------------------------------- export-duckdb

def test_the_export_is_a_read_only_materialised_copy(tmp_path):
    import shutil

    small = build_lake(str(tmp_path / "lake"))
    out = tmp_path / "audit.duckdb"
    result = CliRunner().invoke(main, ["export-duckdb", "--lake", small, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "a copy of the lake's tables as of now, read-only (mode 444)" in result.stdout
    assert os.stat(out).st_mode & 0o777 == 0o444
    assert small.encode() not in out.read_bytes()      # no path into the lake
    shutil.rmtree(small)                               # the copy answers without the lake
    con = duckdb.connect(str(out), read_only=True)
    assert con.execute("select count(*) from duckdb_views() where not internal").fetchone() == (0,)
    tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
    assert {"events", "findings", "rounds", "packs", "rejects", "runs", "rules", "seeds_tables"} <= tables
    assert con.execute("select count(*) from findings where gaming_day = date '2026-11-28'").fetchone() == (7,)
    con.close()
    again = CliRunner().invoke(main, ["export-duckdb", "--lake", str(tmp_path), "--out", str(out)])
    assert again.exit_code == 2 and again.stderr == f"Error: {out} exists; add --force to replace it\n"


def test_force_replaces_a_read_only_export(lake, tmp_path):
    out = tmp_path / "audit.duckdb"
    assert CliRunner().invoke(main, ["export-duckdb", "--lake", lake, "--out", str(out)]).exit_code == 0
    first = out.read_bytes()
    assert CliRunner().invoke(main, ["export-duckdb", "--lake", lake, "--out", str(out)]).exit_code == 2
    assert out.read_bytes() == first
    assert CliRunner().invoke(main, ["export-duckdb", "--lake", lake, "--out", str(out), "--force"]).exit_code == 0
    assert os.stat(out).st_mode & 0o777 == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.duckdb"]


# ---------------------------------------------------------------- file modes

def test_private_state_is_0600_and_data_files_0644_whatever_the_umask(tmp_path):
    from pitwatch.lake import state
    from pitwatch.live.alerts_table import AlertsTable
    from pitwatch.live.checkpoint import StateDir
    from tests.queries.lakes import FINDINGS

    old = os.umask(0)
    try:
        lake = build_lake(str(tmp_path / "lake"))
        state.write_state_file(Lake.at(lake), "2026-11-28", "test", "tables", [{"table_id": "BAC-07", "state": "{}"}])
        state.write_manifest(Lake.at(lake), "2026-11-28", "test", {})
        watcher = StateDir(str(tmp_path / "lake" / "_watch" / "default"))
        watcher.save({"BAC-07": b"{}"}, b"{}")
        watcher.record("file", [("f-1", "2026-11-28")])
        watcher.close()
        alerts = AlertsTable(Lake.at(lake), "default")
        alerts.send([{**FINDINGS[0], "ts": "2026-11-27T20:01:00Z", "gaming_day": "2026-11-27"}])
        alerts.flush()
    finally:
        os.umask(old)
    modes = {os.path.relpath(p, lake): m & 0o777 for p, (_h, m) in tree(lake).items() if _h != "dir"}
    assert modes[FINDINGS_FILE] == 0o644
    assert modes[STATE_FILE] == 0o600
    assert modes[MANIFEST] == 0o600
    assert modes[CHECKPOINT] == 0o600
    assert modes["_watch/default/journal-00000001.log"] == 0o600
    assert modes["alerts/gaming_day=2026-11-27/default-00000000.parquet"] == 0o644   # a live watcher's
    data = [m for p, m in modes.items() if not p.startswith(("state/", "_watch/"))]
    assert len(data) > 8 and all(m == 0o644 for m in data)
    assert os.stat(tmp_path / "lake" / "_watch" / "default").st_mode & 0o777 == 0o700
