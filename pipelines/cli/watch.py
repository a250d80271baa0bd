"""``pitwatch watch``: live alerts from growing event files and Redis Streams."""
from __future__ import annotations

import sys

import click

from pipelines.cli.common import StrictCommand, lake_option, setting_option, setup_logging, user_errors
from pipelines.cli.render import plural


@click.command(
    cls=StrictCommand,
    epilog="""\b
Examples:
  pitwatch watch /data/feeds/ --lake /data/lake
  pitwatch watch /data/feeds/ --lake lake --alerts-file alerts.jsonl --webhook https://pit/hooks/pitwatch
  pitwatch watch 'redis://floor-bus:6379/0?stream=pit:*' --lake lake --no-stdout --alerts-file alerts.jsonl
  pitwatch watch day.jsonl --lake lake --stop-after-idle 5 --finalize-at-stop   (batch-like: ends when input stops)

\b
Alerts: one JSON object per line on stdout, with the columns of the lake's
findings table; the same alerts go to LAKE/alerts/gaming_day=D/<watch-id>-<n>.parquet.
SIGTERM or Ctrl-C checkpoints and exits 0; a restart resumes exactly there.
""",
)
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT…")
@lake_option
@click.option("--state-dir", metavar="DIR", help="Checkpoint folder.  [default: LAKE/_watch/WATCH_ID]")
@click.option("--watch-id", default="default", show_default=True, metavar="ID",
              help="Name of this watcher (its state folder and its alerts files in the lake).")
@click.option("--alerts-file", metavar="PATH", help="Also append alerts to this JSONL file.")
@click.option("--webhook", "webhooks", multiple=True, metavar="URL",
              help="Also POST each alert as JSON to URL (repeatable).")
@click.option("--stdout/--no-stdout", default=True, show_default=True, help="Alerts as JSON lines on stdout.")
@click.option("--lake-alerts/--no-lake-alerts", default=True, show_default=True,
              help="Write alerts to LAKE/alerts/ in small atomic batches.")
@click.option("--stop-after-idle", type=click.FloatRange(0), metavar="SECONDS",
              help="Stop (checkpoint, exit 0) after this long with no new input.")
@click.option("--finalize-at-stop", is_flag=True,
              help="At stop, decide what the engine keeps for the end of input (as the batch does).")
@click.option("--finalize-after-idle", type=click.FloatRange(0, min_open=True), metavar="SECONDS",
              help="Decide a table's end-of-input rules once it is silent this long (off by default).")
@click.option("--gap-wait", "--reorder-wait", "gap_wait", default=5.0, show_default=True,
              type=click.FloatRange(0, 86400), metavar="SECONDS",
              help="Longest wait for a device's missing seqs after a jump before taking them as lost (SEQ_GAP); "
                   "a line of the gap arriving later is replayed late; also the wait after a pack's first card "
                   "before UNSHUFFLED_PACK when no shuffle is recorded (docs/watch.md).")
@click.option("--silence-after", default=120.0, show_default=True, type=click.FloatRange(0, 86400),
              metavar="SECONDS",
              help="Announce a dealer terminal or shoe silent this long while its table plays (DEVICE_SILENT, "
                   "an info alert, live only); 0: never.")
@setting_option("devices", metavar="FILE")
@click.option("--checkpoint-every", default=5.0, show_default=True, type=click.FloatRange(0.05),
              metavar="SECONDS", help="Checkpoint interval.")
@click.option("--poll", default=0.02, show_default=True, type=click.FloatRange(0.001), metavar="SECONDS",
              help="Sleep between looks at quiet inputs.")
@click.option("--cutoff", default="06:00", show_default=True, metavar="HH:MM",
              help="Local time at which a gaming day ends.")
@click.option("--timezone", default="UTC", show_default=True, metavar="ZONE",
              help="Time zone of the gaming day (IANA name).")
@click.option("--with-trigger", is_flag=True, help="Add to each alert the input line that raised it.")
@click.option("--local", is_flag=True,
              help="Alerts' ts and evidence_from in the table's own time (the offset its device wrote, "
                   "ts_offset), not UTC.")
@click.option("--fsync", is_flag=True, help="fsync the delivery journal per alert (survives power loss).")
@setting_option("log_file", metavar="FILE")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@user_errors
def watch(inputs, lake, state_dir, watch_id, alerts_file, webhooks, stdout, lake_alerts, stop_after_idle,
          finalize_at_stop, finalize_after_idle, gap_wait, silence_after, devices, checkpoint_every, poll,
          cutoff, timezone, with_trigger, local, fsync, log_file, quiet):
    """Follow growing event files (.jsonl; folders and globs pick up new files)
    and Redis Streams (redis://HOST:PORT/DB?stream=NAME), replay every table
    live with the same engine as the nightly batch, and raise an alert for
    each finding the moment its evidence is complete.
    """
    import re

    setup_logging(quiet, log_file)
    from pipelines.lake import check_writable
    from live.service import WatchOptions, WatchService
    from schemas.decode import GamingDayConfig

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", watch_id):
        raise click.BadParameter("letters, digits, '_', '.', '-' only", param_hint="--watch-id")
    check_writable(lake)
    from pipelines import lake_settings
    from pipelines.devices import load_registry

    config = GamingDayConfig(cutoff, timezone)
    lake_settings.check(lake, config)      # the lake's time zone and cutoff, or exit 2 (watch never records them)

    registry = load_registry(devices)      # RegistryError: one Error line, exit 2
    opts = WatchOptions(
        inputs=list(inputs), lake=lake, state_dir=state_dir, watch_id=watch_id,
        config=config, poll=poll, reorder_wait=gap_wait,
        silence_after=silence_after or None, devices=registry,
        checkpoint_every=checkpoint_every, stop_after_idle=stop_after_idle,
        finalize_at_stop=finalize_at_stop, finalize_after_idle=finalize_after_idle, stdout=stdout,
        alerts_file=alerts_file, webhooks=tuple(webhooks), lake_alerts=lake_alerts,
        with_trigger=with_trigger, local=local, fsync=fsync)
    service = WatchService(opts)
    try:
        summary = service.run()
    except BrokenPipeError:
        sys.stderr.close()  # the reader of stdout went away: nothing more to say
        raise SystemExit(1) from None
    if not quiet:
        extra = "".join(f", {summary[k]:,} {k}" for k in ("stale",) if summary.get(k))
        late = f" ({summary['late']:,} late)" if summary.get("late") else ""
        damaged = (f", {plural(summary['damaged_files'], 'damaged gzip file')}"
                   if summary.get("damaged_files") else "")
        click.echo(
            f"pitwatch: stopped: {plural(summary['lines'], 'line')}, {summary['accepted']:,} accepted{late}, "
            f"{summary['rejected']:,} rejected, {plural(summary['duplicate'], 'duplicate')}{extra}{damaged}, "
            f"{plural(summary['findings'], 'finding')}, {summary.get('provisional', 0):,} provisional "
            f"({summary.get('provisional_cleared', 0):,} cleared); checkpoint in {summary['state_dir']}", err=True)
