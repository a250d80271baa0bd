"""``pitwatch watch``: live alerts from growing event files and Redis Streams."""
from __future__ import annotations

import logging
import sys

import click

from pitwatch.cli.common import StrictCommand, UserError, lake_option, setting_option, setup_logging, user_errors
from pitwatch.config import SETTINGS
from pitwatch.lake import Lake
from pitwatch.wording import plural

log = logging.getLogger("pitwatch")


@click.command(
    cls=StrictCommand,
    epilog="""\b
Examples:
  pitwatch watch /data/feeds/ --lake /data/lake
  pitwatch watch /data/feeds/ --lake lake --alerts-file alerts.jsonl --webhook https://pit/hooks/pitwatch
  pitwatch watch /data/feeds/ --lake lake --format text --syslog tcp://siem.pit:6514 --video-pad 60
  pitwatch watch 'redis://floor-bus:6379/0?stream=pit:*' --lake lake --no-stdout --alerts-file alerts.jsonl
  pitwatch watch day.jsonl --lake lake --stop-after-idle 5 --finalize-at-stop   (batch-like: ends when input stops)
  pitwatch watch /data/feeds/ --lake /data/newlake --create-lake --timezone America/Puerto_Rico   (a new lake)

\b
Alerts: one JSON object per line on stdout, with the columns of the lake's
findings table (--format text: one line for people, the default on a terminal);
the same alerts go to LAKE/alerts/gaming_day=D/<watch-id>-<n>.parquet.
A status line on stderr at most every --status-every seconds; new files are
announced once each.
SIGTERM or Ctrl-C checkpoints and exits 0; a restart resumes exactly there.
A --lake that is no pitwatch lake, or an input that cannot be reached at the
start (no such file or folder, Redis down or refusing), is one Error line,
exit 2; an input lost later is a SOURCE_LOST alert and the watcher goes on.
""",
)
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT…")
@lake_option
@click.option("--create-lake", is_flag=True,
              help="Make a new lake at --lake when it is no pitwatch lake yet, recording --timezone and --cutoff "
                   "as its gaming-day settings (as a first run does); without it, such a --lake is an error.")
@click.option("--state-dir", metavar="DIR", help="Checkpoint folder.  [default: LAKE/_watch/WATCH_ID]")
@click.option("--watch-id", default="default", show_default=True, metavar="ID",
              help="Name of this watcher (its state folder and its alerts files in the lake).")
@click.option("--alerts-file", metavar="PATH", help="Also append alerts to this JSONL file.")
@click.option("--webhook", "webhooks", multiple=True, metavar="URL",
              help="Also POST each alert as JSON to URL (repeatable).")
@click.option("--syslog", "syslogs", multiple=True, metavar="[udp://|tcp://]HOST:PORT",
              help="Also send each alert to a syslog collector, RFC 5424 (UDP by default; TCP with octet "
                   "counting); repeatable.")
@click.option("--syslog-facility", default="local0", show_default=True,
              type=click.Choice(["user"] + [f"local{i}" for i in range(8)]), help="Facility of the syslog messages.")
@click.option("--stdout/--no-stdout", default=True, show_default=True, help="Alerts on stdout (see --format).")
@click.option("--format", "fmt", type=click.Choice(["json", "text"]),
              help="stdout: JSON lines (the findings' columns) or one line of text per alert for people. "
                   "[default: text on a terminal, json otherwise (a pipe, a file)]")
@click.option("--video-pad", type=int, metavar="SECONDS",
              help="Seconds of video before and after an alert's evidence in the text's video window "
                   "(as `pitwatch query findings_video --video-pad`, and its default).")
@click.option("--dealers", metavar="FILE", type=click.Path(dir_okay=False),
              help="The casino's dealers (CSV: id,name,shift, as `pitwatch query --dealers`): the text alert "
                   "shows the name beside the dealer id; default the lake's roster (pitwatch dealers import), "
                   "else none (the id).  Read once at start: a roster imported while watching shows "
                   "after a restart.")
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
@click.option("--skew", default=2.0, show_default=True, type=click.FloatRange(0, 60), metavar="SECONDS",
              callback=lambda _ctx, param, v: _finite(param, v),
              help="Clock difference allowed between a table's shoe and dealer terminal: a shoe draw made between "
                   "rounds is alerted (CARD_DISAGREEMENT) only once the terminal is this far past it without "
                   "recording it, or at the round's end (docs/watch.md).")
@click.option("--silence-after", default=120.0, show_default=True, type=click.FloatRange(0, 86400),
              metavar="SECONDS",
              help="Announce a dealer terminal or shoe silent this long while its table plays (DEVICE_SILENT, "
                   "an info alert, live only); 0: never.")
@setting_option("devices", metavar="FILE")
@click.option("--commit-every", default=30.0, show_default=True, type=click.FloatRange(0.05, 86400),
              callback=lambda _ctx, param, v: _finite(param, v), metavar="SECONDS",
              help="Commit the lake's alerts table at most this often (and on stop; never per checkpoint).")
@click.option("--checkpoint-every", default=5.0, show_default=True, type=click.FloatRange(0.05),
              metavar="SECONDS", help="Checkpoint interval.")
@click.option("--poll", default=0.02, show_default=True, type=click.FloatRange(0.001), metavar="SECONDS",
              help="Sleep between looks at quiet inputs.")
@click.option("--cutoff", default="06:00", show_default=True, metavar="HH:MM",
              help=SETTINGS["cutoff"].help)
@click.option("--timezone", default="UTC", show_default=True, metavar="ZONE",
              help="Time zone of the gaming day (IANA name).")
@click.option("--with-trigger", is_flag=True, help="Add to each alert the input line that raised it.")
@click.option("--local", is_flag=True,
              help="Alerts' ts and evidence_from in their table's local time, not UTC: the lake's time zone, "
                   "or the table's [display.tables] zone of pitwatch.toml (one zone per table, whichever "
                   "device wrote the evidence).")
@click.option("--fsync", is_flag=True, help="fsync the delivery journal and the lake's batch file per alert (survives power loss).")
@setting_option("log_file", metavar="FILE")
@click.option("--status-every", default=10.0, show_default=True, type=click.FloatRange(0.01, 3600),
              metavar="SECONDS", help="At most one status line on stderr this often (only when something changed).")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@user_errors
def watch(inputs, lake, create_lake, state_dir, watch_id, alerts_file, webhooks, syslogs, syslog_facility, stdout,
          fmt, video_pad, dealers, lake_alerts, stop_after_idle, finalize_at_stop, finalize_after_idle, gap_wait, skew,
          silence_after, devices, commit_every, checkpoint_every, poll, cutoff, timezone, with_trigger, local, fsync,
          log_file, status_every,
          quiet):
    """Follow growing event files (.jsonl; folders and globs pick up new files)
    and Redis Streams (redis://HOST:PORT/DB?stream=NAME), replay every table
    live with the same engine as the nightly batch, and raise an alert for
    each finding the moment its evidence is complete.
    """
    import re

    setup_logging(quiet, log_file)
    pad = _video_pad(video_pad)
    if fmt is None:
        fmt = "text" if sys.stdout.isatty() else "json"
    from pitwatch.live.sinks import WebhookSink
    from pitwatch.live.syslog import parse_target

    for target in syslogs:
        parse_target(target)               # a wrong target: one Error line, exit 2, before anything is written
    for url in webhooks:
        WebhookSink.check(url)
    from pitwatch.inputs.devices import load_registry
    from pitwatch.lake import registry as lake_registry
    from pitwatch.lake import settings as lake_settings
    from pitwatch.lake.parquet import check_writable
    from pitwatch.live.service import WatchOptions, WatchService, default_state_dir
    from pitwatch.schemas.decode import GamingDayConfig

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", watch_id):
        raise click.BadParameter("letters, digits, '_', '.', '-' only", param_hint="--watch-id")
    config = GamingDayConfig(cutoff, timezone)
    given = load_registry(devices)         # RegistryError: one Error line, exit 2
    dealer_names = _dealer_names(Lake.at(lake), dealers) if dealers else None   # a bad file: before the lake
    _reachable(inputs)                     # before anything is written: a mistyped input writes no lake
    state_dir = state_dir or default_state_dir(Lake.at(lake), watch_id)   # a remote lake needs one: before it is made
    lake = _lake(Lake.at(lake), create_lake, config, watch_id)
    if dealer_names is None:
        dealer_names = _dealer_names(lake, None)     # the lake's roster, else none
    check_writable(lake)
    lake_settings.check(lake, config)      # the lake's time zone and cutoff, or exit 2

    # the given one is kept in the lake and named by the first alerts commit's record; none given:
    # the lake's (pitwatch.lake.registry); with --no-lake-alerts nothing of the watcher is recorded
    registry = (lake_registry.Chosen(given, None, "") if given is not None and not lake_alerts
                else lake_registry.choose(lake, given))
    if registry.said:
        (log.warning if registry.warning else log.info)("%s", registry.said)
    opts = WatchOptions(
        inputs=list(inputs), lake=lake, state_dir=state_dir, watch_id=watch_id,
        config=config, poll=poll, reorder_wait=gap_wait, skew=skew,
        silence_after=silence_after or None, devices=registry.registry,
        devices_record=registry.record if given is not None else None,
        checkpoint_every=checkpoint_every, commit_every=commit_every, stop_after_idle=stop_after_idle,
        finalize_at_stop=finalize_at_stop, finalize_after_idle=finalize_after_idle, stdout=stdout,
        alerts_file=alerts_file, webhooks=tuple(webhooks), lake_alerts=lake_alerts,
        with_trigger=with_trigger, local=local, fsync=fsync, format=fmt, video_pad=pad, dealer_names=dealer_names,
        display_zones=lake_settings.display_zones(lake)[1],
        syslog=tuple(syslogs), syslog_facility=syslog_facility, status_every=status_every)
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


def _lake(lake: Lake, create: bool, config, watch_id: str) -> Lake:
    """The lake at ``--lake`` (:func:`pitwatch.lake.settings.is_lake`).  Anything else (a mistyped
    path, a folder of something else) is exit 2 naming it, nothing written (issue 41: ``--lake nolake``
    made a lake there, with no time-zone check), unless ``create``: then the lake is made as a first
    run makes it, its gaming-day settings recorded, so that every later run and watcher must match them."""
    import pyarrow.fs as pafs

    from pitwatch.lake import settings as lake_settings

    if lake_settings.is_lake(lake):
        return lake
    kind = lake.fs.get_file_info(lake.root).type
    if not create:
        what = {pafs.FileType.NotFound: "no such folder",
                pafs.FileType.File: "a file, not a lake"}.get(kind, "a folder that is not a pitwatch lake (no "
                                                                  "settings.json, no table, no lock)")
        raise UserError(f"--lake {lake}: {what}; give the lake's folder, or add --create-lake to make a new lake "
                        f"there (its time zone and cutoff: --timezone {config.timezone} --cutoff {config.cutoff})")
    from pitwatch.lake.parquet import check_writable

    check_writable(lake)
    lake_settings.record(lake, config, watch_id, by=f"pitwatch watch --watch-id {watch_id} --create-lake")
    log.info("made a new lake at %s: time zone %s, cutoff %s", lake, config.timezone, config.cutoff)
    return lake


def _reachable(inputs) -> None:
    """Every input can be read now: a file or folder that does not exist, a Redis server down or refusing,
    is one ``Error:`` line naming it, exit 2 (issue 41: Redis down and ``--stop-after-idle`` was exit 0,
    ``0 lines``).  The sources are opened to look, then closed: the service opens its own."""
    from pitwatch.live.sources import RedisStreamSource, open_sources

    try:
        sources = open_sources(list(inputs))
    except FileNotFoundError as exc:
        raise UserError(f"input {exc.filename}: no such file or folder") from None
    try:
        for source in sources:
            if isinstance(source, RedisStreamSource):
                source.check()          # InputUnreachable (a ValueError): one Error line, exit 2
    finally:
        for source in sources:
            source.close()


def _dealer_names(lake: Lake, path: str | None) -> dict[str, str]:
    """dealer id -> name for the text alerts: ``--dealers FILE``, else the roster the lake keeps
    (:mod:`pitwatch.lake.roster`), else none (the id alone).  The same choice as the analysts'
    ``seeds_dealers`` (:func:`pitwatch.queries.lake_views.dealers_table`)."""
    from pitwatch.queries.lake_views import dealers_table

    roster = dealers_table(lake, path)      # a malformed file or a changed kept roster: LakeQueryError, exit 2
    return {i: n for i, n in zip(roster.column("id").to_pylist(), roster.column("name").to_pylist()) if n}


def _finite(param, value: float) -> float:
    """A number of seconds, refused when not finite (``nan`` passes a range check: every comparison is false)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise click.BadParameter(f"{value!r} is not a number of seconds", param=param)
    return value


def _video_pad(given: int | None) -> int:
    """``--video-pad``: checked against, and by default taken from, the ``video_pad`` parameter of the
    named query ``findings_video`` (one window for the console's text and the morning's query)."""
    from pitwatch.cli.common import UserError
    from pitwatch.queries.catalog import get_query
    from pitwatch.queries.errors import LakeQueryError

    param = get_query("findings_video").param("video_pad")
    assert param is not None and isinstance(param.default, int)     # video_pad: int[0..3600] = 30
    if given is None:
        return param.default
    try:
        return param.convert(str(given))
    except LakeQueryError as exc:
        raise UserError(f"--video-pad: {exc}".replace("parameter video_pad: ", "")) from None
