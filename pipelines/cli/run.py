"""``pitwatch run``: the nightly batch (one-off over files, or ``--day`` from an inbox)."""
from __future__ import annotations

import sys

import click

from pipelines.cli.common import lake_option, setup_logging

SEVERITY_ORDER = ("info", "minor", "major", "critical")
EXIT_FINDINGS = 1
EXIT_INPUT = 2


class RunError(click.ClickException):
    """A user or configuration mistake: one ``Error:`` line, exit code 2 (a scheduler's "fix the input")."""

    exit_code = EXIT_INPUT


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    epilog="""\b
Examples:
  pitwatch run feeds/ --lake lake
  pitwatch run --day 2026-11-28 --inbox /data/inbox --lake /data/lake --fail-on critical
  pitwatch run 'feeds/*.jsonl.gz' --lake lake --timezone America/Puerto_Rico
  pitwatch run feeds/ --lake lake --direct_num_workers=2 --direct_running_mode=multi_processing
  pitwatch run gs://casino/feeds/ --lake gs://casino/lake --runner=DataflowRunner --project=… --region=…

\b
Exit codes: 0 done; 1 findings at or above --fail-on; 2 input or configuration error.
""",
)
@click.argument("inputs", nargs=-1, metavar="[INPUT…]")
@lake_option
@click.option("--day", metavar="YYYY-MM-DD",
              help="Nightly form: replay this gaming day from --inbox, continuing from the previous day's state.")
@click.option("--inbox", metavar="DIR", help="With --day: folder with one sub-folder of files per gaming day.")
@click.option("--lookback-days", default=7, show_default=True, type=click.IntRange(0),
              help="With --day: earlier days whose inbox folder is checked for late files.")
@click.option("--rebuild-from", metavar="YYYY-MM-DD", help="With --day: replay again from this day on.")
@click.option("--fail-on", type=click.Choice(SEVERITY_ORDER),
              help="Exit with code 1 when findings of this severity or higher were written.")
@click.option("--cutoff", default="06:00", show_default=True, metavar="HH:MM",
              help="Local time at which a gaming day ends.")
@click.option("--timezone", default="UTC", show_default=True, metavar="ZONE",
              help="Time zone of the gaming day (IANA name, e.g. America/Puerto_Rico).")
@click.option("--chunk-lines", default=20_000, show_default=True, type=click.IntRange(100),
              help="Most lines per chunk read and decoded as one unit (a JSONL chunk also ends at each 4 MB read).")
@click.option("--devices", metavar="FILE",
              help="The device registry (devices.csv: device_id,source,table_id,from_day,to_day) for SHOE_SILENT "
                   "and UNKNOWN_DEVICE; the nightly form reads INBOX/devices.csv when this is not given.")
@click.option("--quiet", is_flag=True, help="No progress on stderr; only the summary.")
@click.pass_context
def run(ctx, inputs, lake, day, inbox, lookback_days, rebuild_from, fail_on, cutoff, timezone, chunk_lines, devices,
        quiet):
    """Ingest event files (.jsonl, .jsonl.gz, .parquet; files, folders or globs),
    validate them against the event contract, replay every round against its
    procedure and write the lake: events, rejects, rounds, packs, findings, runs.

    The nightly form (--day with --inbox) replays one gaming day's folder of
    the inbox, starting from the state the previous day left in the lake (a
    shoe or a stub-count window that runs across the cutoff), and replays
    again any earlier day whose folder received late files.

    Options this command does not know are Beam pipeline options and pass
    through to Beam (--runner, --direct_num_workers, …).  The default runner is
    Beam's embedded FnApiRunner on this machine.
    """
    setup_logging(quiet)  # before importing Beam, which logs at import time
    import logging

    from pipelines.inputs import InputError
    from pipelines.lake import LakeError
    from pipelines.state import StateError

    paths, beam_args = split_beam_args(list(inputs) + list(ctx.args))
    try:
        summaries = _run(paths, beam_args, lake, day, inbox, lookback_days, rebuild_from, cutoff, timezone,
                         chunk_lines, logging.getLogger("pitwatch"), devices)
    except (InputError, LakeError, StateError, ValueError) as exc:
        raise RunError(str(exc)) from None
    except (PermissionError, FileNotFoundError) as exc:
        raise RunError(f"{exc.strerror or exc}: {exc.filename}") from None
    for s in summaries:
        click.echo(render_summary(s))
    failed = [s for s in summaries if not s.status.startswith("succeeded")]
    if failed:
        raise click.ClickException(failed[0].status)
    if fail_on:
        at_or_above = SEVERITY_ORDER[SEVERITY_ORDER.index(fail_on):]
        n = sum(s.findings_by_severity.get(sev, 0) for s in summaries for sev in at_or_above)
        if n:
            click.echo(f"{n} finding(s) of severity {fail_on} or higher", err=True)
            sys.exit(EXIT_FINDINGS)


def _run(paths, beam_args, lake, day, inbox, lookback_days, rebuild_from, cutoff, timezone, chunk_lines, log,
         devices=None):
    from schemas.decode import GamingDayConfig

    config = GamingDayConfig(cutoff, timezone)
    if day is None:
        if inbox or rebuild_from:
            raise ValueError("--inbox and --rebuild-from go with --day")
        if not paths:
            raise ValueError("give at least one INPUT file, folder or glob (or --day with --inbox)")
        from pipelines.batch import run_batch
        from pipelines.devices import load_registry, registry_path

        registry = load_registry(registry_path(devices))
        return [run_batch(paths, lake, beam_args=beam_args, gaming_day=config, chunk_lines=chunk_lines,
                          devices=registry)]
    from pipelines.nightly import parse_day, run_nightly

    if paths:
        raise ValueError(f"with --day the input is the --inbox folder; unexpected argument {paths[0]!r}")
    if not inbox:
        raise ValueError("--day needs --inbox DIR")
    return run_nightly(parse_day(day), inbox, lake, beam_args=beam_args, gaming_day=config, chunk_lines=chunk_lines,
                       lookback_days=lookback_days, rebuild_from=parse_day(rebuild_from) if rebuild_from else None,
                       log=log, devices=devices)


def split_beam_args(tokens: list[str]) -> tuple[list[str], list[str]]:
    """Tell input paths from pass-through Beam options (``--name=value`` or ``--name value``)."""
    import glob
    import os

    paths, beam = [], []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("-"):
            beam.append(tok)
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if ("=" not in tok and nxt is not None and not nxt.startswith("-")
                    and not os.path.exists(nxt) and not glob.glob(nxt) and "://" not in nxt):
                beam.append(nxt)
                i += 1
        else:
            paths.append(tok)
        i += 1
    return paths, beam


def render_summary(s) -> str:
    title = f"gaming day {s.replay_day}, run {s.run_id}" if s.replay_day else f"run {s.run_id}"
    sev = ", ".join(f"{k} {v}" for k, v in s.findings_by_severity.items() if v) or "none"
    lines = [
        f"{title}: {s.status} in {s.seconds:.1f} s",
        f"  inputs      {len(s.inputs)} file(s), {sum(i['bytes'] for i in s.inputs):,} bytes",
        f"  lines read  {s.lines_read:,} = accepted {s.accepted:,} + rejected {s.rejected:,}"
        f" + duplicates {s.duplicates:,}",
        f"  gaming days {', '.join(s.gaming_days) or '-'}",
        f"  findings    {s.findings:,} ({sev})",
        f"  lake        {s.lake}",
    ]
    for name in ("events", "rounds", "packs", "findings", "rejects"):
        lines.append(f"    {name:<9} {s.rows.get(name, 0):>10,} rows")
    if s.rejected:
        lines.append(f"  rejected lines are in {s.lake}/rejects/")
    return "\n".join(lines)
