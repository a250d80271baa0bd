"""``pitwatch run``: the nightly batch (one-off over files, or ``--day`` from an inbox)."""
from __future__ import annotations

import logging
import sys

import click

from pitwatch.cli import exits
from pitwatch.cli.common import (
    AFTER_DASHES_META,
    COMMAND_META,
    CONFIG_META,
    SETTINGS_META,
    Incomplete,
    StrictCommand,
    UserError,
    no_such_option,
    option_names,
    raise_not_intact,
    setting_option,
    setup_logging,
    signal_name,
)
from pitwatch.cli.locking import lake_lock, lock_timeout_option
from pitwatch.cli.render import visible
from pitwatch.config import at_or_above
from pitwatch.lake import Lake
from pitwatch.wording import plural

log = logging.getLogger("pitwatch")


class RunCommand(StrictCommand):
    """``run`` leaves the options it does not know to Beam, which must know them (checked in the
    command), and passes what follows ``--`` to Beam as it is."""

    passthrough_after_dashes = True


@click.command(
    cls=RunCommand,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    epilog="""\b
Examples:
  pitwatch run feeds/ --lake lake
  pitwatch run --day 2026-11-28 --inbox /data/inbox --lake /data/lake --fail-on critical
  pitwatch run --day 2026-11-28 --config /etc/pitwatch/pitwatch.toml
  pitwatch run 'feeds/*.jsonl.gz' --lake lake --timezone America/Puerto_Rico
  pitwatch run feeds/ --lake lake --direct_num_workers=2 --direct_running_mode=multi_processing
  pitwatch run gs://casino/feeds/ --lake /mnt/lake --runner=FlinkRunner --flink_master=…   (a lake all workers mount)
  pitwatch run s3://casino-feeds/2026-11-28/ --lake s3://casino-lake/lake     (AWS_* variables: docs/inputs.md)
  pitwatch run --day 2026-11-28 --inbox s3://casino-feeds/inbox --lake s3://casino-lake/lake
  pitwatch run feeds/ --lake s3://casino-lake/lake --runner=PortableRunner --job_endpoint=localhost:8099
      --environment_type=EXTERNAL --environment_config=localhost:50000   (a cluster's rehearsal: docs/scale-out.md)
  pitwatch run feeds/ --lake lake -- --a_runner_flag=x     (after --: passed to Beam unchecked)
""",
)
@click.argument("inputs", nargs=-1, metavar="[INPUT…]")
@setting_option("lake", required=True)
@click.option("--day", metavar="YYYY-MM-DD",
              help="Nightly form: replay this gaming day from --inbox, continuing from the previous day's state.")
@setting_option("inbox")
@click.option("--lookback-days", default=7, show_default=True, type=click.IntRange(0),
              help="With --day: earlier days whose inbox folder is checked for late files.")
@click.option("--rebuild-from", metavar="YYYY-MM-DD",
              help="With --day: replay again from this day on (from the lake's first day: may change "
                   "--timezone/--cutoff).")
@click.option("--allow-empty-day", is_flag=True,
              help="With --day: a day with no inbox folder or nothing readable in it is a closed casino, not an error.")
@click.option("--strict-inbox", is_flag=True,
              help="With --day: any file pitwatch does not read (checksum, .partial, hidden …) is an error.")
@setting_option("fail_on")
@click.option("--not-after", metavar="YYYY-MM-DD",
              help="The run's last gaming day: lines more than 2 days after it are rejected (--day sets it).")
@setting_option("cutoff")
@setting_option("timezone")
@click.option("--chunk-lines", default=20_000, show_default=True, type=click.IntRange(100),
              help="Most lines per chunk read and decoded as one unit (a JSONL chunk also ends at each 4 MB read).")
@setting_option("max_rejects_in_a_row", type=click.IntRange(0), metavar="LINES")
@setting_option("log_file", metavar="FILE")
@click.option("--devices", metavar="FILE",
              help="The device registry (devices.csv: device_id,source,table_id,from_day,to_day) for SHOE_SILENT "
                   "and UNKNOWN_DEVICE, kept in the lake; the nightly form reads INBOX/devices.csv when this is "
                   "not given; with neither, the registry the lake keeps.")
@setting_option("anchor", metavar="FILE")
@setting_option("anchor_key", metavar="FILE")
@lock_timeout_option
@click.option("--quiet", is_flag=True, help="No progress on stderr; only the summary.")
@click.option("--verbose", is_flag=True,
              help="Progress per input file, table and partition too, not only per phase (--log-file keeps it always).")
@click.pass_context
def run(ctx, inputs, lake, day, inbox, lookback_days, rebuild_from, allow_empty_day, strict_inbox, fail_on, not_after, cutoff,
        timezone, chunk_lines, max_rejects_in_a_row, log_file, devices, anchor, anchor_key, lock_timeout, quiet,
        verbose):
    """Ingest event files (.jsonl, .jsonl.gz, .parquet; files, folders or globs),
    validate them against the event contract, replay every round against its
    procedure and write the lake: events, rejects, rounds, packs, findings, runs.

    The nightly form (--day with --inbox) replays one gaming day's folder of
    the inbox, starting from the state the previous day left in the lake (a
    shoe or a stub-count window that runs across the cutoff), and replays
    again any earlier day whose folder received late files.  A day with no
    folder, or nothing pitwatch reads in it, is an error (exit 2) unless
    --allow-empty-day.

    Options this command does not know must be Beam pipeline options (--runner,
    --direct_num_workers, …; checked with Beam's own option parser): anything
    else is an error.  A runner's flags Beam does not know go after "--".  The
    default runner is Beam's embedded FnApiRunner on this machine.  --timezone
    and --cutoff must be the lake's (recorded by its first run).

    One writer at a time: the run holds the lake's lock for the whole command
    (every day it replays); a second run waits, saying who holds it, up to
    --lock-timeout and then exits 4.  The lake may be on a local disk, a POSIX
    file system or an S3-compatible object store (s3://bucket/lake; the inputs
    and the inbox too): the store and its credentials come from the standard
    AWS variables (docs/inputs.md, docs/nightly.md; the lock:
    docs/operations.md, "The lake's lock").
    """
    setup_logging(quiet, log_file, verbose)  # before importing Beam, which logs at import time

    from pitwatch.inputs.files import InputError
    from pitwatch.lake.parquet import LakeError
    from pitwatch.lake.state import StateError

    lake = Lake.at(lake)                       # where the lake is, resolved once for the whole command
    key = _anchor_key(lake, anchor, anchor_key)
    try:
        paths, beam_args = pipeline_args(ctx, list(inputs) + list(ctx.args))
        summaries = _anchored(lake, anchor, key, lambda: _run(
            ctx, paths, beam_args, lake, day, inbox, lookback_days, rebuild_from, allow_empty_day, strict_inbox, cutoff,
            timezone, chunk_lines, not_after, devices, lock_timeout, max_rejects_in_a_row))
    except (InputError, LakeError, StateError, ValueError) as exc:
        raise_not_intact(exc)      # the lake's evidence changed outside pitwatch: exit 5, as verify
        raise UserError(str(exc)) from None
    except (PermissionError, FileNotFoundError) as exc:
        raise UserError(f"{exc.strerror or exc}: {exc.filename}") from None
    except click.ClickException:
        raise
    except KeyboardInterrupt as exc:
        log.warning("interrupted by %s", signal_name(exc))
        raise Incomplete(f"interrupted by {signal_name(exc)}: the run record says interrupted; "
                         "run the same command again to complete it") from None
    except Exception as exc:    # a failure of the run itself (the runner, the disk …): did not complete
        log.debug("the run failed", exc_info=True)
        from pitwatch.pipelines.batch import failure_text

        raise Incomplete(f"the run failed: {failure_text(exc)}"
                         + ("" if log_file else " (give --log-file FILE to keep the traceback)")) from None
    for s in summaries:
        click.echo(render_summary(s))
    failed = [s for s in summaries if not s.status.startswith("succeeded")]
    if failed:
        raise Incomplete(f"run {failed[0].run_id} {failed[0].status}")
    if fail_on:
        n = sum(s.findings_by_severity.get(sev, 0) for s in summaries for sev in at_or_above(fail_on))
        if n:
            click.echo(f"{plural(n, 'finding')} of severity {fail_on} or higher", err=True)
            sys.exit(exits.FINDINGS)


def _anchor_key(lake: Lake, anchor: str | None, anchor_key: str | None) -> bytes | None:
    """The anchor's signing key, checked before anything is written (``--key`` needs ``--anchor``)."""
    from pitwatch.lake import anchor as anchors

    if anchor_key and not anchor:
        raise UserError("--key goes with --anchor (it signs the anchor's entries)")
    try:
        if anchor:
            anchors.outside_the_lake(anchor, lake, "--anchor")
        return anchors.read_key(anchor_key, lake) if anchor_key else None
    except anchors.AnchorError as exc:
        raise UserError(str(exc)) from None


def _anchored(lake: Lake, anchor: str | None, key: bytes | None, work):
    """Run ``work``; then, whatever its end, append the lake's chain head to the anchor
    (:mod:`pitwatch.lake.anchor`): a failed or interrupted run's record is chained too."""
    from pitwatch.lake import anchor as anchors

    try:
        return work()
    finally:
        if anchor:
            try:
                entry = anchors.append(anchor, lake, key)
                if entry:
                    log.info("anchored the chain head %s (runs version %d) in %s", entry["record_sha256"],
                             entry["runs_version"], anchor)
            except (anchors.AnchorError, OSError) as exc:
                raise Incomplete(f"the lake was written but its chain head was not anchored: {exc}") from None


def pipeline_args(ctx, tokens: list[str]) -> tuple[list[str], list[str]]:
    """Input paths and Beam options from the tokens click left; an unknown option is exit 2."""
    from pitwatch.pipelines.batch import BeamOptionError, beam_option_names, split_pipeline_args

    try:
        paths, beam_args = split_pipeline_args(tokens)
    except BeamOptionError as exc:
        if exc.option is None:
            raise UserError(str(exc)) from None
        ours = option_names(ctx.command)
        message = no_such_option(exc.option, ours)
        if "did you mean" not in message:
            message = no_such_option(exc.option, beam_option_names())
        raise UserError(message) from None
    return paths, beam_args + list(ctx.meta.get(AFTER_DASHES_META, []))


def _run(ctx, paths, beam_args, lake, day, inbox, lookback_days, rebuild_from, allow_empty_day, strict_inbox,
         cutoff, timezone, chunk_lines, not_after=None, devices=None, lock_timeout=3600.0,
         max_rejects_in_a_row=None):
    import datetime as _dt

    from pitwatch.schemas.decode import GamingDayConfig

    if not_after is not None and day is not None:
        raise ValueError("--not-after goes without --day (a nightly run's last day is its --day)")
    try:
        last = None if not_after is None else _dt.date.fromisoformat(not_after)
    except ValueError:
        raise ValueError(f"--not-after must be a date YYYY-MM-DD, got {not_after!r}") from None
    config = GamingDayConfig(cutoff, timezone, last)
    command = ctx.meta.get(COMMAND_META, "pitwatch run")
    recorded = {"settings": ctx.meta.get(SETTINGS_META, {})}
    loaded = ctx.meta.get(CONFIG_META)
    display = loaded.values.get("display") if loaded is not None else None    # None: the lake's kept
    if display is not None:
        recorded["display_tables"] = display
    bounds = {} if max_rejects_in_a_row is None else {"max_rejects_in_a_row": int(max_rejects_in_a_row)}
    if day is None:
        nightly_only = [name for name, given in (
            ("--inbox", inbox and _flag_given(ctx, "inbox")), ("--rebuild-from", rebuild_from),
            ("--allow-empty-day", allow_empty_day), ("--strict-inbox", strict_inbox)) if given]
        if nightly_only:
            raise ValueError(f"{' and '.join(nightly_only)} go with --day (the nightly form)")
        if not paths:
            raise ValueError("give at least one INPUT file, folder or glob (or --day with --inbox)")
        from pitwatch.inputs.devices import load_registry, registry_path
        from pitwatch.pipelines.batch import run_batch

        registry = load_registry(registry_path(devices))
        with lake_lock(lake, lock_timeout, command, log):     # the whole run: one writer at a time
            return [run_batch(paths, lake, beam_args=beam_args, gaming_day=config, chunk_lines=chunk_lines,
                              command=command, recorded=recorded, devices=registry, display=display, **bounds)]
    from pitwatch.pipelines.nightly import parse_day, run_nightly

    if paths:
        raise ValueError(f"with --day the input is the --inbox folder; unexpected argument {paths[0]!r}")
    if not inbox:
        raise ValueError("--day needs --inbox DIR")
    with lake_lock(lake, lock_timeout, command, log):         # every day it replays, under one lock
        return run_nightly(parse_day(day), inbox, lake, beam_args=beam_args, gaming_day=config,
                           chunk_lines=chunk_lines, lookback_days=lookback_days,
                           rebuild_from=parse_day(rebuild_from) if rebuild_from else None, log=log, command=command,
                           recorded=recorded, allow_empty_day=allow_empty_day, strict_inbox=strict_inbox,
                           devices=devices, display=display, **bounds)


def _flag_given(ctx, name: str) -> bool:
    """Whether the user gave this option for this run (a config file's inbox serves the nightly form only)."""
    from click.core import ParameterSource

    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def render_summary(s) -> str:
    """The run's summary; where rows went under other gaming days than the run's, it says so."""
    from pitwatch.pipelines.graph import COUNTED_TABLES  # after a run: the batch is loaded already

    title = f"gaming day {s.replay_day}, run {s.run_id}" if s.replay_day else f"run {s.run_id}"
    sev = ", ".join(f"{k} {v:,}" for k, v in s.findings_by_severity.items() if v) or "none"
    lines = [
        f"{title}: {s.status} in {s.seconds:.1f} s",
        f"  inputs      {plural(len(s.inputs), 'file')}, {plural(sum(i['bytes'] for i in s.inputs), 'byte')}",
        f"  lines read  {s.lines_read:,} = accepted {s.accepted:,} + rejected {s.rejected:,}"
        f" + duplicates {s.duplicates:,}",
        f"  gaming days {', '.join(s.gaming_days) or '-'}",
        *([f"  registry    {s.registry}"] if getattr(s, "registry", "") else []),
        *[f"  damaged     {d['path']}: {d['reason']}" for d in getattr(s, "damage", [])],
        *[f"  refused     {f['path']}: {f['reason']}" for f in getattr(s, "refused", [])],
        *_incomplete(getattr(s, "incomplete", [])),
        f"  findings    {s.findings:,} ({sev})",
        f"  lake        {s.lake}",
    ]
    for name in COUNTED_TABLES:
        lines.append(f"    {name:<9} {plural(s.rows.get(name, 0), 'row'):>15}{_elsewhere(s, name)}")
    if s.rejected:
        lines.append(f"  rejected lines are in {s.lake}/rejects/")
    return "\n".join(visible(line) for line in lines)   # file names and reasons quote the input


def _incomplete(days: list[str]) -> list[str]:
    """One line when the run wrote INPUT_DAMAGED findings (``days``: a day per finding): the audit of
    those days is incomplete, and why (a file damaged in this run, or in an earlier one whose day it
    replayed)."""
    if not days:
        return []
    return [f"  audit       incomplete for {', '.join(sorted(set(days)))}: {plural(len(days), 'input file')} "
            f"could not be read to the end, the lines after the damage are not audited (INPUT_DAMAGED, major)"]


def _elsewhere(s, name: str) -> str:
    """`` (79 under 2026-11-29, 2 under 2026-11-28: …)`` when a table's rows went under more than
    one gaming day, or (nightly) under another day than the one replayed."""
    per_day = {day: n for day, n in getattr(s, "rows_by_day", {}).get(name, {}).items() if n}
    if not per_day or (len(per_day) == 1 and (s.replay_day is None or s.replay_day in per_day)):
        return ""
    split = ", ".join(f"{n:,} under {day}" for day, n in per_day.items())
    if s.replay_day is None:
        return f"  ({split})"
    other = sum(n for day, n in per_day.items() if day != s.replay_day)
    why = {"findings": "a finding carries the gaming day of the event that completed it",
           "rounds": "a round belongs to the gaming day it started in",
           "packs": "a pack belongs to the gaming day it was opened in",
           "events": "an event's gaming day comes from its own time stamp",
           "rejects": "a run's rejected lines go under its last gaming day, a damaged file's row under the day of "
                      "its last line read; the days' earlier ones stay under theirs"}[name]
    return f"  ({split}: {plural(other, 'row')} filed under another gaming day than {s.replay_day}; {why})"
