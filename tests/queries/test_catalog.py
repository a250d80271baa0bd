"""queries/*.sql: headers, parameters declared = parameters used, dbt style, shipped as package data."""
from __future__ import annotations

import importlib.resources
import pathlib
import re
import subprocess
import sys
import zipfile

import duckdb
import pytest

from pitwatch.queries import load_queries
from pitwatch.queries.catalog import MACRO_PARAM_PREFIX, parameter_positions, parse
from pitwatch.schemas.arrow import LAKE_TABLES

QUERIES = load_queries()
REPO = pathlib.Path(__file__).resolve().parents[2]


def test_the_investigations_asked_for_are_there():
    assert set(QUERIES) == {
        "findings_by_rule", "findings_per_dealer", "table_day_summary", "pack_custody", "round_replay",
        "stub_compliance", "cut_placement", "dealer_rule_repeats", "findings_evidence", "findings_video",
        "alerts_vs_findings", "hold", "dealer_scorecard", "table_health", "open_findings", "review_log",
        "orphan_reviews", "findings_changed_since"}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_declared_parameters_are_the_ones_the_sql_uses(name):
    q = QUERIES[name]
    declared = [p.name for p in q.params]
    assert len(set(declared)) == len(declared)
    statements = duckdb.connect().extract_statements(q.sql)
    assert len(statements) == 1
    assert set(statements[0].named_parameters) == set(declared)          # DuckDB's parser
    assert {n for _, _, n in parameter_positions(q.sql)} == set(declared)  # the tokenizer the macros use


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_header_and_style(name):
    q = QUERIES[name]
    assert q.description and q.examples
    for example in q.examples:
        assert example.startswith(f"pitwatch query {name} --lake ")
        given = dict(re.findall(r"--param (\w+)=(\S+)", example))
        q.bind(given)  # every example's parameters are right
    assert all(p.description for p in q.params)
    body = q.sql
    for pos, kind in duckdb.tokenize(body):  # dbt style: lowercase keywords
        if kind == duckdb.token_type.keyword:
            word = re.match(r"\w+", body[pos:]).group(0)
            assert word == word.lower(), f"{name}: keyword {word!r} at {pos}"
    code = "\n".join(l for l in body.splitlines() if not l.lstrip().startswith("--"))
    assert code.lstrip().startswith("with"), f"{name}: import CTEs first"


def test_macro_parameters_never_shadow_a_column():
    columns = {c for schema in LAKE_TABLES.values() for c in schema.names}
    assert not any(c.startswith(MACRO_PARAM_PREFIX) for c in columns)
    for q in QUERIES.values():
        assert f"CREATE OR REPLACE MACRO {q.name}(" in q.macro_sql()
        assert "$" not in q.macro_sql().split("AS TABLE", 1)[1].replace("'$'", "")


def test_a_dollar_in_a_string_or_comment_is_not_a_parameter():
    sql = "-- $nope\nselect '$also_not' as a, $yes from t where b = $day"
    assert [n for _, _, n in parameter_positions(sql)] == ["yes", "day"]


@pytest.mark.parametrize("text, message", [
    ("-- name: other\n-- description: d\nselect 1", "must be the file name"),
    ("-- name: q\nselect 1", "no '-- description:'"),
    ("-- name: q\n-- description: d\n-- param x: float  no\nselect $x", "bad parameter line"),
    ("-- name: q\n-- description: d\n-- param x: int = ten  no\nselect $x", "not an integer"),
])
def test_a_malformed_header_names_the_file(text, message):
    with pytest.raises(ValueError, match=message):
        parse(text, "q.sql")


def test_queries_are_loaded_as_package_resources():
    files = {e.name for e in importlib.resources.files("pitwatch.queries").iterdir() if e.name.endswith(".sql")}
    assert files == {f"{n}.sql" for n in QUERIES}


@pytest.mark.slow
def test_the_wheel_ships_the_queries(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist)], check=True, cwd=tmp_path)
    names = zipfile.ZipFile(next(dist.glob("pitwatch-*.whl"))).namelist()
    assert {f"pitwatch/queries/{n}.sql" for n in QUERIES} <= set(names)
    assert {"pitwatch/queries/lake_views.py", "pitwatch/queries/catalog.py", "pitwatch/queries/export.py"} <= set(names)


def test_the_readme_lists_every_query_with_its_parameters():
    readme = (REPO / "queries" / "README.md").read_text()
    for q in QUERIES.values():
        row = next((l for l in readme.splitlines() if l.startswith(f"| `{q.name}` |")), None)
        assert row is not None, f"{q.name} missing from queries/README.md"
        assert [m for m in re.findall(r"`([a-z_]+) (?:date|int|string)", row)] == [p.name for p in q.params]
