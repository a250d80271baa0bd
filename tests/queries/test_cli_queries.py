"""``pitwatch sql``, ``pitwatch query`` and ``pitwatch export-duckdb`` through the real CLI."""
from __future__ import annotations

import datetime as dt
import subprocess
import sys

import duckdb
import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.lake import Lake
from pitwatch.queries import load_queries
from pitwatch.queries.catalog import MACRO_PARAM_PREFIX, run_query
from pitwatch.queries.lake_views import connect

BURNS = ["query", "dealer_rule_repeats", "--param", "rule_id=BURN_SKIPPED", "--param", "to_day=2026-11-28"]

# parameters that give every investigation rows in the test lake
PARAMS = {
    "findings_by_rule": {"from_day": "2026-11-27", "to_day": "2026-11-28"},
    "findings_per_dealer": {"from_day": "2026-11-27", "to_day": "2026-11-28"},
    "table_day_summary": {"table_id": "BAC-07", "from_day": "2026-11-27", "to_day": "2026-11-28"},
    "pack_custody": {"table_id": "BAC-07", "pack_id": "P-1"},
    "round_replay": {"table_id": "BAC-07", "round_id": "R-1"},
    "stub_compliance": {"from_day": "2026-11-27", "to_day": "2026-11-28"},
    "cut_placement": {"from_day": "2026-11-27", "to_day": "2026-11-28", "bucket": "100"},
    "dealer_rule_repeats": {"to_day": "2026-11-28", "rule_id": "BURN_SKIPPED"},
    "findings_evidence": {"gaming_day": "2026-11-28", "severity": "*"},
    "alerts_vs_findings": {"gaming_day": "2026-11-28"},     # no watcher on this lake: every finding never alerted
    "dealer_scorecard": {"from_day": "2026-11-28", "to_day": "2026-11-28"},
    "table_health": {"from_day": "2026-11-27", "to_day": "2026-11-28"},
}


def cli(*args):
    return CliRunner().invoke(main, list(args))


def test_query_output_is_pinned_in_every_format(lake, dealers_file):
    burns = [*BURNS, "--lake", lake, "--dealers", dealers_file]
    assert cli(*burns).output == (
        "dealer_id  dealer_name  rule_id       severity  findings  days_with_findings  tables  first_ts                   last_ts\n"
        "---------  -----------  ------------  --------  --------  ------------------  ------  -------------------------  -------------------------\n"
        "D-2        Luis Vega    BURN_SKIPPED  major     2         2                   BAC-08  2026-11-27 22:00:00+00:00  2026-11-28 20:30:00+00:00\n"
        "D-1        Ana Rivera   BURN_SKIPPED  major     1         1                   BAC-07  2026-11-27 20:01:00+00:00  2026-11-27 20:01:00+00:00\n")
    assert cli(*burns, "--format", "csv").output == (
        "dealer_id,dealer_name,rule_id,severity,findings,days_with_findings,tables,first_ts,last_ts\n"
        "D-2,Luis Vega,BURN_SKIPPED,major,2,2,BAC-08,2026-11-27 22:00:00+00:00,2026-11-28 20:30:00+00:00\n"
        "D-1,Ana Rivera,BURN_SKIPPED,major,1,1,BAC-07,2026-11-27 20:01:00+00:00,2026-11-27 20:01:00+00:00\n")
    assert cli(*burns, "--format", "json").output == (
        '{"dealer_id":"D-2","dealer_name":"Luis Vega","rule_id":"BURN_SKIPPED","severity":"major","findings":2,'
        '"days_with_findings":2,"tables":"BAC-08","first_ts":"2026-11-27T22:00:00+00:00","last_ts":"2026-11-28T20:30:00+00:00"}\n'
        '{"dealer_id":"D-1","dealer_name":"Ana Rivera","rule_id":"BURN_SKIPPED","severity":"major","findings":1,'
        '"days_with_findings":1,"tables":"BAC-07","first_ts":"2026-11-27T20:01:00+00:00","last_ts":"2026-11-27T20:01:00+00:00"}\n')
    assert cli(*burns, "--format", "text").output == (
        "dealer_id:          D-2\n"
        "dealer_name:        Luis Vega\n"
        "rule_id:            BURN_SKIPPED\n"
        "severity:           major\n"
        "findings:           2\n"
        "days_with_findings: 2\n"
        "tables:             BAC-08\n"
        "first_ts:           2026-11-27 22:00:00+00:00\n"
        "last_ts:            2026-11-28 20:30:00+00:00\n"
        "\n"
        "dealer_id:          D-1\n"
        "dealer_name:        Ana Rivera\n"
        "rule_id:            BURN_SKIPPED\n"
        "severity:           major\n"
        "findings:           1\n"
        "days_with_findings: 1\n"
        "tables:             BAC-07\n"
        "first_ts:           2026-11-27 20:01:00+00:00\n"
        "last_ts:            2026-11-27 20:01:00+00:00\n")


def test_sql_output_is_pinned(lake):
    sql = "SELECT rule_id, count(*) AS n, list(DISTINCT dealer_id ORDER BY dealer_id) AS dealers FROM findings " \
          "WHERE gaming_day = DATE '2026-11-28' AND severity = 'critical' GROUP BY rule_id ORDER BY rule_id"
    assert cli("sql", sql, "--lake", lake).output == (
        "rule_id             n  dealers\n"
        "------------------  -  -------\n"
        "SHOE_CARD_MISMATCH  1  [D-1]\n"
        "VOID_NOT_DECLARED   1  [D-3]\n")
    assert cli("sql", sql, "--lake", lake, "--format", "json").output == (
        '{"rule_id":"SHOE_CARD_MISMATCH","n":1,"dealers":["D-1"]}\n'
        '{"rule_id":"VOID_NOT_DECLARED","n":1,"dealers":["D-3"]}\n')
    stdin = CliRunner().invoke(main, ["sql", "-", "--lake", lake, "--format", "csv"], input=sql)
    assert stdin.output == "rule_id,n,dealers\nSHOE_CARD_MISMATCH,1,[D-1]\nVOID_NOT_DECLARED,1,[D-3]\n"


def test_query_list_names_every_investigation_with_its_parameters():
    result = cli("query", "--list", "--format", "csv")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0] == "name,parameters,description"
    assert [l.split(",")[0] for l in lines[1:]] == sorted(load_queries())
    assert any(l.startswith('cut_placement,"[from_day date, to_day date, bucket int[1..1000] = 20]",') for l in lines)


@pytest.mark.parametrize("args, message", [
    (["query", "nosuch"], "Error: no query named 'nosuch' (pitwatch query --list shows them)"),
    (["query", "round_replays"], "Error: no query named 'round_replays'; did you mean 'round_replay'?"),
    (["query", "round_replay", "--param", "table_id=BAC-07"],
     "Error: query round_replay needs --param round_id=<string> (the round (hand, coup), e.g. BAC-01-0054)"),
    (BURNS + ["--param", "dealer=D-1"],
     "Error: query dealer_rule_repeats has no parameter 'dealer' (its parameters: to_day, rule_id, days, min_count)"),
    (["query", "findings_evidence", "--param", "gaming_day=28/11/2026"],
     "Error: parameter gaming_day: '28/11/2026' is not a date YYYY-MM-DD"),
    (BURNS + ["--param", "days=seven"], "Error: parameter days: 'seven' is not an integer from 1 to 366 (ASCII digits)"),
    (BURNS + ["--param", "days"], "Error: --param 'days': write it as KEY=VALUE"),
    (BURNS + ["--param", "rule_id=X"], "Error: --param rule_id given twice"),
    (["sql", "DROP VIEW findings"], "Error: refused: the lake is read-only and this statement is DROP;"),
    (["sql", "SELECT nope FROM findings"], 'Error: Binder Error: Referenced column "nope" not found'),
])
def test_user_mistakes_are_one_error_line(lake, args, message):
    result = cli(*args, "--lake", lake)
    assert result.exit_code == 2      # pitwatch.cli.exits.USAGE: a bad statement or parameter
    assert result.output.startswith(message) and result.output.count("\n") == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


RANGED = sorted(q.name for q in load_queries().values()
                if {p.name: p.type for p in q.params if p.name in ("from_day", "to_day")}
                == {"from_day": "date", "to_day": "date"})


def test_every_query_over_a_range_of_days_is_one_of_the_ranged():
    assert {"dealer_scorecard", "hold", "table_health", "open_findings", "findings_by_rule"} <= set(RANGED)


@pytest.mark.parametrize("name", RANGED)
def test_a_reversed_range_of_days_is_one_error_line(lake, name):
    result = cli("query", name, "--lake", lake, *PARAM_ARGS.get(name, []),
                 "--param", "from_day=2026-11-28", "--param", "to_day=2026-11-27")
    assert result.exit_code == 2, result.output
    assert result.output == ("Error: parameter from_day: 2026-11-28 is after to_day 2026-11-27 "
                             "(the range runs from from_day to to_day)\n")


@pytest.mark.parametrize("name", RANGED)
def test_a_range_of_one_day_is_answered(lake, name):
    result = cli("query", name, "--lake", lake, *PARAM_ARGS.get(name, []),
                 "--param", "from_day=2026-11-28", "--param", "to_day=2026-11-28")
    assert result.exit_code == 0, result.output


# the parameters other than the range a ranged query needs
PARAM_ARGS = {"table_day_summary": ["--param", "table_id=BAC-07"]}


def test_query_without_a_lake_is_a_usage_error():
    result = cli(*BURNS)
    assert result.exit_code == 2 and "--lake" in result.output


def test_no_traceback_from_the_installed_entry_point(lake):
    result = subprocess.run([sys.executable, "-m", "pitwatch.cli", "sql", "INSERT INTO rules VALUES (1)",
                             "--lake", lake], capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.startswith("Error: refused") and "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["sql", "query", "export-duckdb"])
def test_help_has_an_example(name):
    result = cli(name, "--help")
    assert result.exit_code == 0 and "Examples:" in result.output
    examples = result.output.split("Examples:")[1].strip().splitlines()
    assert examples[0].strip().startswith(f"pitwatch {name}")


# ---------------------------------------------------------------- export-duckdb


@pytest.fixture(scope="module")
def exported(lake, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("export") / "pitwatch.duckdb")
    result = cli("export-duckdb", "--lake", lake, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def _typed(query, given):
    return {p.name: p.convert(given[p.name]) if p.name in given else p.default for p in query.params}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_the_exported_file_answers_like_pitwatch_query(lake, exported, name):
    query = load_queries()[name]
    expected_columns, expected = run_query(connect(Lake.at(lake)), name, PARAMS[name])
    assert expected, f"{name}: pick PARAMS that give rows"
    values = _typed(query, PARAMS[name])
    args = ", ".join(f"{MACRO_PARAM_PREFIX}{p.name} := ${p.name}" if p.has_default else f"${p.name}"
                     for p in query.params)
    con = duckdb.connect(exported, read_only=True)
    con.execute("SET TimeZone = 'UTC'")
    cur = con.execute(f"FROM {name}({args})", values)
    assert [d[0] for d in cur.description] == expected_columns
    assert cur.fetchall() == expected


def test_the_exported_file_lists_its_macros_and_holds_the_seeds(exported):
    con = duckdb.connect(exported, read_only=True)
    calls = dict(con.execute("SELECT name, call FROM pitwatch_queries").fetchall())
    assert set(calls) == set(load_queries())
    assert calls["pack_custody"] == "FROM pack_custody(p_table_id VARCHAR, p_pack_id VARCHAR)"
    assert calls["dealer_rule_repeats"] == (
        "FROM dealer_rule_repeats(p_to_day DATE, p_rule_id := '*', p_days := 7, p_min_count := 1)")
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert "seeds_combate_paytable" in tables
    assert con.execute("SELECT count(*) FROM findings WHERE gaming_day = DATE '2026-11-28'").fetchone() == (7,)
    rows = con.execute("FROM dealer_rule_repeats(DATE '2026-11-28', p_rule_id := 'BURN_SKIPPED') "
                       "SELECT dealer_id, findings").fetchall()
    assert rows == [("D-2", 2), ("D-1", 1)]


def test_export_refuses_to_overwrite_without_force(lake, tmp_path):
    out = tmp_path / "a.duckdb"
    out.write_bytes(b"precious")
    result = cli("export-duckdb", "--lake", lake, "--out", str(out))
    assert result.exit_code == 2 and result.output == f"Error: {out} exists; add --force to replace it\n"
    assert out.read_bytes() == b"precious"
    assert cli("export-duckdb", "--lake", lake, "--out", str(out), "--force").exit_code == 0
    con = duckdb.connect(str(out), read_only=True)
    assert con.execute("SELECT max(gaming_day) FROM rounds").fetchone() == (dt.date(2026, 11, 28),)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.duckdb"]  # no temporary file left


def test_unusual_types_print_in_every_format(lake):
    sql = ("select timetz '12:00:00+02' as t, interval 1 day as i, 'abc'::blob as b, 1::hugeint as h, "
           "map {'a': 1} as m, 'infinity'::timestamp as inf")
    for fmt in ("table", "csv", "json"):
        result = cli("sql", sql, "--lake", lake, "--format", fmt)
        assert result.exit_code == 0 and result.exception is None, result.output
    assert cli("sql", sql, "--lake", lake, "--format", "json").stdout.startswith('{"t":"12:00:00+02:00",')


def test_sql_on_stdin_that_is_not_utf8_is_one_error_line(lake):
    result = CliRunner().invoke(main, ["sql", "-", "--lake", lake], input=b"select '\xff'")
    assert result.exit_code == 2 and result.output == "Error: the SQL on standard input is not UTF-8 (byte 8)\n"


def test_sql_help_names_every_table_of_the_connection_and_the_findings_review_columns():
    from pitwatch.queries.lake_views import STATUS_COLUMNS, VIEW_TABLES
    from pitwatch.schemas.arrow import RUN_STAMPS

    text = " ".join(cli("sql", "--help").output.split())
    missing = [n for n in (*VIEW_TABLES, *STATUS_COLUMNS, *RUN_STAMPS) if n not in text]
    assert missing == [], missing
