"""``pitwatch vacuum``: remove the files runs replaced, past the retention, legal holds honoured."""
from __future__ import annotations

import logging

import click

from pitwatch.cli.common import (
    COMMAND_META,
    CONFIG_META,
    Incomplete,
    StrictCommand,
    UserError,
    setting_option,
    setup_logging,
    user_errors,
)
from pitwatch.cli.locking import lake_lock, lock_timeout_option
from pitwatch.config import MAX_DAYS
from pitwatch.lake import Lake
from pitwatch.wording import plural

log = logging.getLogger("pitwatch")


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch vacuum --lake /data/lake --config /etc/pitwatch/pitwatch.toml --dry-run
  pitwatch vacuum --lake /data/lake --config /etc/pitwatch/pitwatch.toml
  pitwatch vacuum --lake lake --retention-days 30 --hold 2026-11-28 --no-config-holds
  pitwatch vacuum --lake s3://casino-lake/floor --config /etc/pitwatch/pitwatch.toml --dry-run
""")
@setting_option("lake", required=True)
@setting_option("retention_days", type=click.IntRange(0, MAX_DAYS), metavar="DAYS")
@click.option("--hold", "extra_holds", multiple=True, metavar="DAY|FIRST..LAST",
              help="Also hold this gaming day (or range): added to the config's legal_holds, never replacing them.")
@click.option("--no-config-holds", is_flag=True,
              help="Vacuum although no config file is read (so no legal_holds but --hold's).")
@click.option("--dry-run", is_flag=True, help="List what would be removed and what is kept; change nothing.")
@lock_timeout_option
@setting_option("log_file", metavar="FILE")
@click.option("--quiet", is_flag=True, help="No progress on stderr; only the summary.")
@click.pass_context
@user_errors
def vacuum(ctx, lake, retention_days, extra_holds, no_config_holds, dry_run, lock_timeout, log_file, quiet):
    """Remove from the lake's Delta tables the data files that no current
    version references and that a run removed (a replayed day replaces its
    files) longer ago than the retention (retention_days in pitwatch.toml,
    or --retention-days; default 2555 days = 7 years).  Files of a gaming day
    under a legal hold (legal_holds in pitwatch.toml, and --hold) are kept,
    whatever their age.  Each table's _delta_log is never touched: time travel
    keeps working for every version whose files remain.

    It holds the lake's lock (waits for a run, up to --lock-timeout, then exit
    4) and leaves a runs record naming every file it removed, with its size
    and SHA-256: pitwatch verify reads it as retention (still intact, exit 0,
    saying how many files and up to which gaming day), and --as-of a run whose
    files it removed is refused naming it.  --dry-run only reads: no lock, no
    record.
    """
    from pitwatch.lake.lock import holder_update
    from pitwatch.lake.vacuum import LegalHolds, plan, summary, tables
    from pitwatch.lake.vacuum import vacuum as carry_out

    lake = Lake.at(lake)
    setup_logging(quiet, log_file)
    loaded = ctx.meta.get(CONFIG_META)
    if loaded is None and not dry_run and not no_config_holds:
        raise UserError("vacuum removes history and reads the legal holds from the config file: give --config FILE "
                        "(or PITWATCH_CONFIG), or --no-config-holds to vacuum with only the --hold days held")
    if loaded is not None and no_config_holds:
        raise UserError(f"--no-config-holds goes without a config file, and {loaded.path} is read: its "
                        "legal_holds are always honoured")
    try:
        holds = LegalHolds.parse([*(loaded.values.get("legal_holds", []) if loaded else []), *extra_holds])
    except ValueError as exc:
        raise UserError(f"--hold: {exc}") from None
    tables(lake)          # a lake that is not there, or has no Delta table: exit 2 before the lock creates anything
    command = ctx.meta.get(COMMAND_META, "pitwatch vacuum")
    held = ", ".join(holds.texts()) or "none"
    if dry_run:
        plans = plan(lake, retention_days, holds)
        click.echo(f"vacuum of {lake} (dry run: nothing removed), retention {plural(retention_days, 'day')}, "
                   f"legal holds: {held}")
        _echo(summary(plans, None), "would remove")
        return
    with lake_lock(lake, lock_timeout, command, log):
        try:
            outcome = carry_out(lake, retention_days, holds, command, log,
                                holder_update=lambda **kw: holder_update(lake, **kw))
        except KeyboardInterrupt:
            raise Incomplete("interrupted: the runs record lists the files removed before it stopped; "
                             "run pitwatch vacuum again to complete it") from None
    click.echo(f"vacuum of {lake}, run {outcome.run_id}: {outcome.status}; retention "
               f"{plural(retention_days, 'day')}, legal holds: {held}")
    _echo(summary(outcome.plans, outcome.removed), "removed", paths=False)
    if outcome.failed:
        raise Incomplete(f"run {outcome.run_id} {outcome.status}")


def _echo(per_table: dict, verb: str, paths: bool = True) -> None:
    width = max((len(t) for t in per_table), default=0)
    for table, s in per_table.items():
        click.echo(f"  {table:<{width}}  version {s['version']}: {verb} {plural(s['removed'], 'file')} "
                   f"({plural(s['bytes'], 'byte')}); kept {s['kept']:,} past the retention")
        if paths:
            for row in s["files"]:
                click.echo(f"    {verb} {row['path']}")
        for row in s["kept_files"]:
            click.echo(f"    kept {row['path']}: {row['kept']}")
