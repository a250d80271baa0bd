"""``pitwatch dealers``: the dealers' roster the lake keeps (:mod:`pitwatch.lake.roster`)."""
from __future__ import annotations

import logging

import click

from pitwatch.cli.common import COMMAND_META, StrictCommand, StrictGroup, UserError, lake_option, user_errors
from pitwatch.cli.locking import lake_lock, lock_timeout_option
from pitwatch.lake import Lake

log = logging.getLogger("pitwatch")


@click.group(cls=StrictGroup, epilog="""\b
Examples:
  pitwatch dealers import dealers.csv --lake lake
  pitwatch dealers show --lake lake
""")
def dealers():
    """The dealers' roster (dealers.csv: id,name,shift) kept in the lake, so
    every command (sql, query, export-duckdb, watch) shows a dealer's name
    beside the id without --dealers.  The nightly run also keeps the inbox's
    dealers.csv (docs/nightly.md)."""


@dealers.command("import", cls=StrictCommand, epilog="""\b
Examples:
  pitwatch dealers import /srv/rosters/dealers.csv --lake /data/lake
  pitwatch dealers import dealers.csv --lake s3://casino-lake/floor
""")
@click.argument("file", metavar="FILE")
@lake_option
@lock_timeout_option
@click.pass_context
@user_errors
def import_(ctx, file, lake, lock_timeout):
    """Keep FILE (CSV: id,name,shift) in the lake as its dealers' roster
    (the lake a folder or an object store's s3://BUCKET/PATH; FILE local).

    A roster whose bytes differ from the lake's becomes its next version
    (named in a chained runs record; pitwatch verify checks its bytes); the
    same bytes again keep the version and write nothing.  A malformed file, a
    roster with no dealer, or a --lake folder that is not a pitwatch lake is
    refused (exit 2) and nothing is written.  Holds the lake's lock
    (waits for a run up to --lock-timeout, then exit 4)."""
    import pyarrow.fs as pafs

    from pitwatch.inputs.dealers import load_roster_to_keep
    from pitwatch.lake import roster as lake_roster
    from pitwatch.lake import settings as lake_settings

    roster = load_roster_to_keep(file)          # a bad roster: exit 2 before the lake is touched
    lake = Lake.at(lake)
    if lake.fs.get_file_info(lake.root).type != pafs.FileType.Directory:   # a folder, or an object store's prefix
        raise UserError(f"no lake at {lake}: pitwatch run writes one first")
    if not lake_settings.is_lake(lake):     # an inbox, a mistyped path: not written into
        raise UserError(f"{lake} is not a pitwatch lake (no settings, table or lock of one): "
                        "pitwatch run writes one first")
    command = ctx.meta.get(COMMAND_META, f"pitwatch dealers import {file} --lake {lake}")
    with lake_lock(lake, lock_timeout, command, log):
        chosen = lake_roster.import_roster(lake, roster, command)
    click.echo(chosen.said)


@dealers.command("show", cls=StrictCommand, epilog="""\b
Examples:
  pitwatch dealers show --lake /data/lake
""")
@lake_option
@user_errors
def show(lake):
    """Print the lake's dealers' roster (id, name, shift) and its version;
    exit 2 when the lake keeps none."""
    from pitwatch.cli.render import visible
    from pitwatch.lake import roster as lake_roster

    lake = Lake.at(lake)
    held = lake_roster.lake_roster(lake)
    if not held or not held.get("kept"):
        raise UserError(f"the lake {lake} keeps no dealers roster: pitwatch dealers import FILE --lake {lake}")
    roster = lake_roster.read_kept(lake, held)
    click.echo(f"dealers roster version {held.get('version')} ({held['kept']}, from {visible(str(held.get('path')))}): "
               f"{roster.table.num_rows} dealers")
    for row in roster.table.to_pylist():
        click.echo(visible(f"{row['id']},{row['name']},{row['shift']}"))
