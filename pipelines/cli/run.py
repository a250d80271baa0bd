"""``pitwatch run``: the nightly batch."""
from __future__ import annotations

import click

from pipelines.cli.common import lake_option, setup_logging, user_errors


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    epilog="""\b
Examples:
  pitwatch run /data/inbox/2026-11-28/ --lake /data/lake
  pitwatch run 'feeds/*.jsonl.gz' --lake lake --timezone America/Puerto_Rico
  pitwatch run feeds/ --lake lake --direct_num_workers=2 --direct_running_mode=multi_processing
  pitwatch run gs://casino/feeds/ --lake gs://casino/lake --runner=DataflowRunner --project=… --region=…
""",
)
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT…")
@lake_option
@click.option("--cutoff", default="06:00", show_default=True, metavar="HH:MM",
              help="Local time at which a gaming day ends.")
@click.option("--timezone", default="UTC", show_default=True, metavar="ZONE",
              help="Time zone of the gaming day (IANA name, e.g. America/Puerto_Rico).")
@click.option("--chunk-lines", default=20_000, show_default=True, type=click.IntRange(100),
              help="Lines per chunk read and decoded as one unit.")
@click.option("--quiet", is_flag=True, help="No progress on stderr; only the summary.")
@click.pass_context
@user_errors
def run(ctx, inputs, lake, cutoff, timezone, chunk_lines, quiet):
    """Ingest event files (.jsonl, .jsonl.gz, .parquet; files, folders or globs),
    validate them against the event contract, replay every round against its
    procedure and write the lake: events, rejects, rounds, packs, findings, runs.

    Options this command does not know are Beam pipeline options and pass
    through to Beam (--runner, --direct_num_workers, …).  The default runner is
    Beam's embedded FnApiRunner on this machine.
    """
    setup_logging(quiet)  # before importing Beam, which logs at import time
    from pipelines.batch import run_batch
    from schemas.decode import GamingDayConfig

    paths, beam_args = split_beam_args(list(inputs) + list(ctx.args))
    if not paths:
        raise click.UsageError("give at least one INPUT file, folder or glob")
    summary = run_batch(paths, lake, beam_args=beam_args,
                        gaming_day=GamingDayConfig(cutoff, timezone), chunk_lines=chunk_lines)
    click.echo(render_summary(summary))
    if not summary.status.startswith("succeeded"):
        raise click.ClickException(summary.status)


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
    lines = [
        f"run {s.run_id}: {s.status} in {s.seconds:.1f} s",
        f"  inputs      {len(s.inputs)} file(s), {sum(i['bytes'] for i in s.inputs):,} bytes",
        f"  lines read  {s.lines_read:,} = accepted {s.accepted:,} + rejected {s.rejected:,}"
        f" + duplicates {s.duplicates:,}",
        f"  gaming days {', '.join(s.gaming_days) or '-'}",
        f"  lake        {s.lake}",
    ]
    for name in ("events", "rounds", "packs", "findings", "rejects"):
        lines.append(f"    {name:<9} {s.rows.get(name, 0):>10,} rows")
    if s.rejected:
        lines.append(f"  rejected lines are in {s.lake}/rejects/gaming_day={max(s.gaming_days or ['…'])}/")
    return "\n".join(lines)
