"""``pitwatch export-duckdb``: a DuckDB database file with the lake's views and the investigations as macros."""
from __future__ import annotations

import os

import click

from pitwatch.cli.common import StrictCommand, lake_option, user_errors
from pitwatch.cli.sql import as_of_option, lake_answers
from pitwatch.lake import Lake


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch export-duckdb --lake /data/lake --out pitwatch.duckdb
  pitwatch export-duckdb --lake lake --out audit.duckdb --force
  pitwatch export-duckdb --lake lake --out night-28.duckdb --as-of 2026-11-29T07:00:00Z
then, in any DuckDB client:
  duckdb audit.duckdb "FROM findings_by_rule(DATE '2026-11-22', DATE '2026-11-28')"
  duckdb audit.duckdb "FROM dealer_rule_repeats(DATE '2026-11-28', p_rule_id := 'BURN_SKIPPED')"
""")
@lake_option
@click.option("--out", "out", required=True, metavar="FILE.duckdb", help="The database file to write.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@as_of_option
@user_errors
def export_duckdb(lake, out, force, as_of):
    """Write a read-only DuckDB database file for analysts: a copy of every
    lake table and seed (seeds_<name>) as the last successful run left it (or
    as --as-of names: an earlier run, or the lake at a time), every investigation of
    `pitwatch query --list` as a table macro whose parameters are the query's
    with a p_ prefix (dates as DATE '…'), and a table pitwatch_queries listing
    them.  The file holds no path into the lake and is written with mode 0444;
    export again (--force) for newer gaming days.
    """
    from pitwatch.queries.export import EXPORT_MODE, export_database

    lake = Lake.at(lake)
    with lake_answers():
        path, run = export_database(lake, out, force=force, as_of=as_of)
    pinned = f"as run {run['run_id']} left them" if run else "as of now"   # no successful run recorded
    click.echo(f"wrote {path}: a copy of the lake's tables {pinned}, read-only (mode {EXPORT_MODE:o}); "
               f"open it with any DuckDB client, e.g. duckdb -readonly {os.path.basename(path)} "
               "\"FROM pitwatch_queries\"")
