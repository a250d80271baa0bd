"""``pitwatch export-duckdb``: a DuckDB database file with the lake's views and the investigations as macros."""
from __future__ import annotations

import os

import click

from pipelines.cli.common import StrictCommand, lake_option, user_errors


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch export-duckdb --lake /data/lake --out pitwatch.duckdb
  pitwatch export-duckdb --lake lake --out audit.duckdb --force
then, in any DuckDB client:
  duckdb audit.duckdb "FROM findings_by_rule(DATE '2026-11-22', DATE '2026-11-28')"
  duckdb audit.duckdb "FROM dealer_rule_repeats(DATE '2026-11-28', p_rule_id := 'BURN_SKIPPED')"
""")
@lake_option
@click.option("--out", "out", required=True, metavar="FILE.duckdb", help="The database file to write.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@user_errors
def export_duckdb(lake, out, force):
    """Write a DuckDB database file for analysts: a view per lake table (reading
    the lake's Parquet files by absolute path, so the file must stay able to
    see the lake), the seeds as tables (seeds_<name>), every investigation of
    `pitwatch query --list` as a table macro whose parameters are the query's
    with a p_ prefix (dates as DATE '…'), and a table pitwatch_queries listing them.

    A table the lake did not have yet is exported as an empty view: export
    again (--force) after the lake gains it.
    """
    from queries.export import export_database

    path = export_database(lake, out, force=force)
    click.echo(f"wrote {path}: open it with any DuckDB client, e.g. duckdb {os.path.basename(path)} "
               "\"FROM pitwatch_queries\"")
