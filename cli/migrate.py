"""``pitwatch migrate``: convert a lake of the previous layout into today's (:mod:`pitwatch.lake.migrate`)."""
from __future__ import annotations

import click

from pitwatch.cli.common import Incomplete, StrictCommand, lake_option, signal_name, user_errors
from pitwatch.lake import Lake


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  cp -a /data/lake /data/lake.before-migrate     (a backup first)
  pitwatch migrate --lake /data/lake
""")
@lake_option
@user_errors
def migrate(lake):
    """Convert a lake written by an earlier pitwatch (plain Parquet files:
    LAKE/<table>/gaming_day=D/part-0.parquet, replay-D.parquet, runs/<id>.parquet,
    state/gaming_day=D/manifest.json) into today's Delta tables, its nightly
    state included; the data files keep their bytes (renamed) and the runs
    table gets a `migrate` record naming every file converted.  A lake
    already of Delta tables: nothing to do (exit 0).  An unknown file or a
    lake pitwatch did not write: Error, nothing changed (exit 2).  An
    interrupted migration is finished by running the command again; see
    docs/operations.md, "Upgrading a lake".
    """
    from pitwatch.lake.migrate import migrate as run_migration

    lake = Lake.at(lake)
    try:
        record = run_migration(lake)
    except KeyboardInterrupt as exc:      # SIGINT / SIGTERM: the plan stays, the migration resumes
        raise Incomplete(f"interrupted by {signal_name(exc)}: the lake is half migrated; finish it with "
                         f"pitwatch migrate --lake {lake}") from None
    if record is None:
        click.echo(f"lake {lake} is of today's layout (Delta tables): nothing to migrate")
        return
    import json

    options = json.loads(record["options"])
    files = sum(len(v) for v in options["files"].values())
    click.echo(f"migrated {lake}: run {record['run_id']}, {files} data files in "
               f"{sum(1 for v in options['files'].values() if v)} tables, the state of "
               f"{len(options['state_days'])} gaming days; every reader now reads the migrated tables")
    for day in options["days_counted_twice"]:
        click.echo(f"warning: gaming day {day} holds the events of a one-off run and of a nightly replay of it "
                   f"(counted twice in the old layout, kept as they were): replay it with "
                   f"pitwatch run --day {day} --inbox INBOX --lake {lake} --rebuild-from {day}", err=True)
