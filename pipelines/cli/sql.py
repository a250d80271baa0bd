"""``pitwatch sql``: ad-hoc read-only SQL in DuckDB over the lake's tables as views."""
from __future__ import annotations

import sys

import click

from pipelines.cli.common import StrictCommand, lake_option, user_errors
from pipelines.cli.render import format_option, render


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch sql "SELECT rule_id, count(*) AS n FROM findings GROUP BY ALL ORDER BY n DESC" --lake lake
  pitwatch sql "FROM rounds WHERE gaming_day = DATE '2026-11-28' AND table_id = 'BAC-07'" --lake lake --format csv
  pitwatch sql "DESCRIBE events" --lake lake
  pitwatch sql - --lake lake --format json < investigation.sql
""")
@click.argument("statement", metavar="SQL")
@lake_option
@format_option
@user_errors
def sql(statement, lake, fmt):
    """Run one read-only SQL statement (DuckDB dialect) over the lake and print the rows.

    \b
    Views: events, rejects, rounds, packs, findings, runs, rules (the lake's
    tables; filter on gaming_day to read only those days' files) and
    seeds_<name> for each seeds/*.csv (e.g. seeds_combate_paytable).
    SQL "-" reads the statement from standard input.  Only queries run
    (SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN): anything that
    writes or changes settings is refused.
    """
    from queries.lake_views import connect, run_sql

    if statement == "-":
        statement = sys.stdin.read()
    if not statement.strip():
        raise click.UsageError("the SQL statement is empty")
    con = connect(lake)
    try:
        columns, rows = run_sql(con, statement)
    finally:
        con.close()
    click.echo(render(columns, rows, fmt), nl=False)
