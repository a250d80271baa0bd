"""The nightly batch, as a library: ``run_batch()`` (``pitwatch run`` only renders it).

The graph is in :mod:`pitwatch.pipelines.graph`.  The embedded default is Beam's
``FnApiRunner``, named explicitly (Beam's ``DirectRunner`` first tries to
download a Prism binary, which hangs behind a silent network).  Any other
Beam option passes through (``--runner=FlinkRunner``, ``--direct_num_workers=2``
…): nothing in the pipeline depends on running embedded — no local side
channels between steps, no global state; the lake may be ``gs://``.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as _dt
import json
import logging
import os
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from pitwatch import __version__
from pitwatch.config import redacted_args
from pitwatch.inputs.files import expand_inputs
from pitwatch.lake import Lake, runs
from pitwatch.lake import parquet as lake
from pitwatch.lake import settings as lake_settings
from pitwatch.pipelines import progress
from pitwatch.pipelines.graph import COUNTED_TABLES
from pitwatch.pipelines.ingest import MAX_REJECTS_IN_A_ROW, IngestOptions
from pitwatch.wording import plural

log = logging.getLogger("pitwatch")

DEFAULT_RUNNER = "FnApiRunner"


@dataclasses.dataclass
class RunSummary:
    run_id: str
    lake: str
    inputs: list[dict]
    lines_read: int
    accepted: int
    rejected: int
    duplicates: int
    gaming_days: list[str]
    rows: dict[str, int]
    findings: int
    findings_by_severity: dict[str, int]
    status: str
    seconds: float
    replay_day: str | None = None
    rows_by_day: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    damaged_files: int = 0          # files read only up to their damage (pitwatch.inputs.files.Damage)
    bytes_not_read: int = 0
    damage: list[dict] = dataclasses.field(default_factory=list)
    registry: str = ""              # the device registry the run used, as pitwatch.lake.registry says it
    incomplete: list[str] = dataclasses.field(default_factory=list)   # a day per INPUT_DAMAGED finding written
    refused: list[dict] = dataclasses.field(default_factory=list)     # inputs not read: not regular files


PARALLEL_FROM_BYTES = 32 << 20   # inputs from this size are replayed by one worker process per CPU


def beam_options(beam_args: list[str], input_bytes: int = 0) -> PipelineOptions:
    """Beam's options from the user's, with the embedded default where the user named no runner.

    On the embedded runner, an input of ``PARALLEL_FROM_BYTES`` or more runs
    in one SDK worker process per CPU (``--direct_num_workers=N
    --direct_running_mode=multi_processing``), unless the user set either:
    the Python replay holds the GIL, so only processes use more than one
    core (measured: 1.4-1.5x on 2 cores); below that size, starting the
    workers costs more than it saves.
    """
    args = list(beam_args)
    runner = PipelineOptions(args).view_as(StandardOptions).runner
    cpus = os.cpu_count() or 1
    if (runner in (None, DEFAULT_RUNNER) and input_bytes >= PARALLEL_FROM_BYTES and cpus > 1
            and not any(a.startswith(("--direct_num_workers", "--direct_running_mode")) for a in args)):
        args += [f"--direct_num_workers={cpus}", "--direct_running_mode=multi_processing"]
    options = PipelineOptions(args)
    if not options.view_as(StandardOptions).runner:
        options.view_as(StandardOptions).runner = DEFAULT_RUNNER
    return options


class BeamOptionError(ValueError):
    """An option neither pitwatch nor Beam knows, or a Beam option with a wrong value."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


def beam_option_names() -> list[str]:
    """Every option Beam's own option classes define (``--runner``, ``--direct_num_workers`` …)."""
    return sorted(f"--{name}" for name in PipelineOptions([]).get_all_options())


def split_pipeline_args(tokens: list[str]) -> tuple[list[str], list[str]]:
    """Input paths and Beam pipeline options, from what the command line left over.

    A token that starts with ``-`` must be an option of one of Beam's public
    option classes, parsed by Beam's own parser (handed to us through
    ``get_all_options(add_extra_args_fn=…)``): it takes the next token as its
    value exactly when Beam's parser does.  Anything else starting with ``-``
    is a :class:`BeamOptionError` naming it: a typo must never reach Beam,
    which would ignore it.  Options for a runner's own flags that Beam does not
    know go after ``--`` (the caller keeps those as they are).
    """
    captured: list[argparse.ArgumentParser] = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=captured.append)
    parser = captured[0]
    paths, beam_args = [], []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("-") or tok == "-":
            paths.append(tok)
            i += 1
            continue
        pair = tokens[i:i + 1] if "=" in tok else tokens[i:i + 2]    # --name=value never takes the next
        left = _unparsed(parser, pair)
        if left[:1] == [tok]:
            raise BeamOptionError(f"no such option {tok.split('=', 1)[0]}", tok.split("=", 1)[0])
        taken = len(pair) - len(left)
        beam_args.extend(pair[:taken])
        i += taken
    return paths, beam_args


def _unparsed(parser, tokens: list[str]) -> list[str]:
    import contextlib
    import io

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_known_args(tokens)[1]
    except SystemExit:
        said = (err.getvalue().strip().splitlines() or ["invalid"])[-1].split("error: ", 1)[-1]
        said = said[len("argument "):] if said.startswith("argument ") else f"{tokens[0]}: {said}"
        raise BeamOptionError(f"Beam pipeline option {said}") from None


# Beam versions whose FnApiRunner was read and measured for the race below (pyproject.toml pins 2.77.*)
BUFFER_TIMER_CHECKED = ((2, 77),)


def beam_version() -> tuple[int, int]:
    major, minor = beam.__version__.split(".")[:2]
    return int(major), int(minor)


@contextlib.contextmanager
def whole_bundle_inputs():
    """While the pipeline runs, the embedded runner sends each bundle's input to its worker whole.

    Beam's FnApiRunner (2.77) streams a bundle's input to a worker process through
    an output stream that a timer thread flushes every
    ``worker_handlers.DATA_BUFFER_TIME_LIMIT_MS`` (1 s): it takes the buffer,
    hands it to the send queue (which blocks while the queue is full) and then
    clears the buffer, so bytes the runner's own thread writes in between are
    cleared unsent and those elements never reach the worker, without an error.
    Measured here: 3 runs of 10 of an input of 1.5M conflicting lines lost reject
    rows; with the timer at 5 ms, 9 to 18 of 40 elements of 1 MB were lost in every run
    (``tests/pipelines/test_whole_bundle_inputs.py``).  At 0 the stream has no
    timer and is sent when the bundle's input is complete.  Only this process's
    constant changes, for the run; the worker processes never had the timer.

    The constant is Beam's, not part of its API: it is set only on the Beam
    versions of :data:`BUFFER_TIMER_CHECKED`.  On any other version the run
    says so and leaves Beam as it is (read its runner again, then add the
    version).  The run's reconciliation of the rows it wrote with the lines it
    counted (:func:`pitwatch.lake.runs.unreconciled`), which is how the race was
    found, still fails a run that lost rows.
    """
    if beam_version() not in BUFFER_TIMER_CHECKED:
        log.warning("Beam %s: not checked for the lost-elements race of Beam 2.77's embedded runner "
                    "(pitwatch.pipelines.batch.whole_bundle_inputs); its buffer timer is left as it is", beam.__version__)
        yield
        return
    from apache_beam.runners.portability.fn_api_runner import worker_handlers

    before = worker_handlers.DATA_BUFFER_TIME_LIMIT_MS
    worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = 0
    try:
        yield
    finally:
        worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = before


def worker_processes(options: PipelineOptions) -> bool:
    """Whether the run's steps run in the embedded runner's worker processes."""
    return (options.view_as(StandardOptions).runner == DEFAULT_RUNNER
            and options.view_as(DirectOptions).direct_running_mode == "multi_processing")


@contextlib.contextmanager
def worker_reports(options: PipelineOptions):
    """While the pipeline runs in the embedded runner's worker processes: the steps' progress lines
    printed by this process (:mod:`pitwatch.pipelines.progress`: the workers append the ``pitwatch``
    logger's records to a file this run reads), and what the workers print themselves (Beam's
    chatter) silenced.  Nothing otherwise."""
    if not worker_processes(options):
        yield
        return
    with progress.WorkerReports(), worker_stderr_silenced():
        yield


@contextlib.contextmanager
def worker_stderr_silenced():
    """While the pipeline runs, send what Beam's worker processes print to /dev/null.

    The embedded runner's worker processes inherit stderr and log every
    bundle there at INFO (Beam configures their logging itself).  This
    process keeps its own stderr: ``sys.stderr`` and the handlers writing to
    it are pointed at a copy of the original descriptor.  A worker's failure
    still reaches this process as the pipeline's error.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    terminal = open(os.dup(saved), "w", buffering=1, encoding="utf-8", errors="replace")
    old_stderr = sys.stderr
    moved = [h for name in (None, "pitwatch") for h in logging.getLogger(name).handlers
             if isinstance(h, logging.StreamHandler) and h.stream is old_stderr]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        sys.stderr = terminal
        for h in moved:
            h.setStream(terminal)
        yield
    finally:
        terminal.flush()
        os.dup2(saved, 2)
        sys.stderr = old_stderr
        for h in moved:
            h.setStream(old_stderr)
        for fd in (saved, devnull):
            os.close(fd)
        terminal.close()


def remote_inputs_readable(beam_args: list[str] | None) -> None:
    """Let this process list and size ``s3://`` (``gs://`` …) inputs before any pipeline exists.

    Beam's file systems take their connection from the pipeline's options (``--s3_endpoint_url``,
    ``--s3_region_name`` …), handed to them when a ``beam.Pipeline`` is made; the launcher lists a
    remote folder or glob (:func:`pitwatch.inputs.files.expand_inputs`) and plans its ranges
    before that, where Beam's S3 file system refuses to start without options.  So the user's
    options are handed over first, through Beam's public ``FileSystems.set_options``.  Options
    that name no endpoint or key leave them to boto3, which reads the standard AWS variables
    (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID`` …; docs/inputs.md, "Inputs on an object store")."""
    from apache_beam.io.filesystems import FileSystems

    FileSystems.set_options(PipelineOptions(list(beam_args or [])))


def local_input_bytes(files: list[str]) -> int:
    return sum(os.path.getsize(f) for f in files if "://" not in f and os.path.exists(f))


def failure_text(exc: BaseException) -> str:
    """What a failed run's record and its ``Error:`` line say of the failure: the exception's type
    and message, or, for one that has none (gRPC's ``FutureTimeoutError`` when nothing answers at
    a portable runner's ``--job_endpoint``), what it means."""
    said = str(exc).strip()
    if not said and type(exc).__name__ == "FutureTimeoutError":
        said = ("the runner's job service did not answer in time (is it running at --job_endpoint? "
                "--job_server_timeout says how long to wait)")
    return f"{type(exc).__name__}: {said or '(no message)'}"


def run_batch(inputs: list[str], lake_path: Lake, beam_args: list[str] | None = None,
              gaming_day=None, chunk_lines: int = 20_000, command: str = "pitwatch run",
              night=None, recorded: dict | None = None, rebuilding: bool = False, devices=None, dealers=None,
              refused: list[dict] | None = None, max_rejects_in_a_row: int = MAX_REJECTS_IN_A_ROW,
              display: dict[str, str] | None = None) -> RunSummary:
    """Add ``inputs`` to the lake: ingest, replay from the first day they change, commit
    (:mod:`pitwatch.pipelines.lake_run`). Raises InputError/LakeError.

    With ``night`` (:class:`pitwatch.pipelines.lake_run.Night`) the run is the nightly form
    (:mod:`pitwatch.pipelines.nightly`); ``inputs`` may then be empty (a gaming day with no file).
    ``command`` (the whole command line) and ``recorded`` (more for the run record's
    ``options``: the effective settings with their origins, the inbox files skipped) go to
    the ``runs`` record.  ``devices``: the device registry given
    (:class:`pitwatch.inputs.devices.DeviceRegistry`) or None: the given one is kept in the lake, and
    without one the run uses the lake's (:mod:`pitwatch.lake.registry`, recorded in the run's
    options either way).  ``dealers``: the dealers' roster given
    (:class:`pitwatch.inputs.dealers.DealerRoster`, the inbox's ``dealers.csv``) or None: kept
    likewise (:mod:`pitwatch.lake.roster`), the record naming the lake's otherwise.
    The gaming-day settings must be the lake's (:mod:`pitwatch.lake.settings`), unless
    ``rebuilding`` the whole lake.  ``display``: the tables shown in another zone than the lake's
    (``[display.tables]`` of ``pitwatch.toml``), recorded in the lake's settings before the run
    writes (:func:`pitwatch.lake.settings.record_display`); None keeps the lake's.  The caller
    holds the lake's lock.
    A KeyboardInterrupt (Ctrl-C, or SIGTERM turned into one by the command)
    leaves the run record ``interrupted: SIGNAL``; any other failure ``failed: …``.
    """
    from pitwatch.lake import delta
    from pitwatch.lake import registry as lake_registry
    from pitwatch.lake import reviews as lake_reviews
    from pitwatch.lake import roster as lake_roster
    from pitwatch.pipelines import lake_run
    from pitwatch.pipelines.staging import staging_dir
    from pitwatch.schemas.decode import GamingDayConfig

    config = gaming_day or GamingDayConfig()
    if night is not None:    # the night's horizon is its own day, so any rerun of it decides the same
        config = dataclasses.replace(config, not_after=_dt.date.fromisoformat(night.day))
    refused = list(refused or [])
    remote_inputs_readable(beam_args)
    files = expand_inputs(inputs, refused) if (inputs or night is None) else []
    for f in refused:
        log.warning("input %s refused: %s", f["path"], f["reason"])
    lake.check_writable(lake_path)
    from pitwatch.lake.migrate_survey import refuse_old_layout

    refuse_old_layout(lake_path)    # its files would be taken for a killed run's leftovers and removed
    started = _dt.datetime.now(_dt.timezone.utc)
    run_id = runs.new_run_id(started)
    from pitwatch.lake import lock as lake_lock

    lake_lock.holder_update(lake_path, run_id=run_id)     # a second run waiting names this one
    lake_settings.check_and_record(lake_path, config, run_id, rebuilding)
    if display is not None and lake_settings.record_display(lake_path, display):
        log.info("display zones recorded: %s", ", ".join(f"{t} {z}" for t, z in sorted(display.items()))
                 or "every table in the lake's zone")
    lake_run.remove_leftovers(lake_path)
    lake_run.record_killed_runs(lake_path, run_id)
    registry = lake_registry.choose(lake_path, devices)     # the given one kept, else the lake's
    if registry.said:
        (log.warning if registry.warning else log.info)("%s", registry.said)
    roster = lake_roster.choose(lake_path, dealers)         # the inbox's kept, else the lake's: named again
    if roster.said:
        log.info("%s", roster.said)
    options = beam_options(list(beam_args or []), local_input_bytes(files))
    workers = options.view_as(DirectOptions).direct_num_workers
    if workers > 1:
        log.info("embedded runner: %d worker processes", workers)
    meta = {
        "run_id": run_id, "command": command, "started": started.isoformat(),
        "fallback_day": config.gaming_day(started).isoformat(), "versions": runs.versions(),
        "pitwatch": __version__,
        "options": json.dumps({"cutoff": config.cutoff, "timezone": config.timezone,
                               "not_after": config.not_after.isoformat() if config.not_after else None,
                               "runner": str(options.view_as(StandardOptions).runner),
                               "direct_num_workers": workers,
                               "beam_args": redacted_args(beam_args or []),
                               "night": night.day if night else None,
                               "rebuild_from": night.rebuild_from if night else None,
                               "devices": registry.record,
                               "dealers": roster.record,
                               lake_reviews.VERSION_KEY: lake_reviews.current_version(lake_path),
                               "inputs_refused": refused,
                               "max_rejects_in_a_row": max_rejects_in_a_row,
                               **(recorded or {})}, sort_keys=True),
    }
    runs.write_run_record(lake_path, runs.run_record(meta, "running"))
    meta["fences"] = delta.fences(lake_path, lake_run.ALL_TABLES)
    meta["pinned"] = lake_run.pinned_versions(lake_path) or {}
    log.info("run %s: %s → %s", run_id, plural(len(files), "input file"), lake_path)
    folder = staging_dir(lake_path, run_id)
    ingest_options = IngestOptions(config, chunk_lines, max_rejects_in_a_row)

    @contextlib.contextmanager
    def pipeline():
        with worker_reports(options), whole_bundle_inputs(), beam.Pipeline(options=options) as p:
            yield p
    try:
        ingest = _ingest(pipeline, files, folder, lake_path, ingest_options)
        log_ingest(ingest)
        staged_days = sorted({entry[0] for entry in ingest.get("staged", [])})
        reject_day = max(staged_days) if staged_days else (night.day if night else meta["fallback_day"])
        plans = lake_run.plan_days(lake_path, run_id, staged_days, frozenset(files), reject_day, night, folder,
                                   input_files=lake_run.input_files_by_day(ingest))
        lake_run.announce(lake_path, plans, night, staged_days)
        plans = lake_run.replay_days(plans, lake_path, meta, ingest_options, registry.registry, pipeline)
        lake_run.commit_run(lake_path, meta, f"{folder}/ingest.json", [plan.result_path for plan in plans],
                            [plan.replay_day for plan in plans],
                            tuple(plan.replay_day for plan in plans if plan.repeats_only))
        return dataclasses.replace(read_summary(lake_path, run_id, started, plans), registry=registry.said,
                                   refused=refused)
    except BaseException as exc:
        status = (f"interrupted: {str(getattr(exc, 'signal_name', '') or 'SIGINT').split()[0]}"
                  if isinstance(exc, KeyboardInterrupt)
                  else f"failed: {failure_text(exc)}"[:2000])
        runs.write_run_record(lake_path, runs.run_record(meta, status, ended=_dt.datetime.now(_dt.timezone.utc)))
        raise
    finally:
        _remove_staging(lake_path, folder)


def _ingest(pipeline, files: list[str], folder: str, lake_path: Lake, options: IngestOptions) -> dict:
    """Read and stage the run's inputs (:func:`pitwatch.pipelines.staging.build_ingest`): its
    ``ingest.json``.  Each large plain file is read in ranges by every worker
    (:mod:`pitwatch.inputs.ranges`, planned here by one read of it); a split file whose ranges
    cannot give what a whole read gives (changed since, or a row of rejected lines that could
    stop it) is read again whole, with every other file, into a fresh staging folder."""
    from pitwatch.inputs.ranges import plan_ranges, splittable, whole_reads_needed
    from pitwatch.pipelines import lake_run
    from pitwatch.pipelines.staging import build_ingest

    ranges = {}
    for path in files:
        if splittable(path):
            planned = plan_ranges(path)
            if planned:
                ranges[path] = planned
                log.info("read %s in %s", path, plural(len(planned), "range"))
    with pipeline() as p:
        build_ingest(p, files, folder, lake_path, options, ranges)
    ingest = lake_run.read_json(lake_path, f"{folder}/ingest.json")
    again = whole_reads_needed(ingest.get("split_reads", []), options.max_rejects_in_a_row)
    if not again:
        return ingest
    log.info("read again whole (its ranges cannot give what a whole read gives): %s", ", ".join(again))
    _remove_staging(lake_path, folder)
    with pipeline() as p:
        build_ingest(p, files, folder, lake_path, options, {k: v for k, v in ranges.items() if k not in again})
    return lake_run.read_json(lake_path, f"{folder}/ingest.json")


def _remove_staging(lake_path: Lake, folder: str) -> None:
    """Remove the run's staging folder, and ``LAKE/_staging`` when no other is left in it.  On an
    object store pyarrow keeps an emptied folder as a marker object (``_staging/``), removed too:
    the run leaves the store's keys as the disk's folders."""
    import pyarrow.fs as pafs

    fs = lake_path.fs
    if fs.get_file_info(folder).type == pafs.FileType.Directory:
        fs.delete_dir(folder)
    parent = folder.rsplit("/", 1)[0]
    if isinstance(fs, pafs.LocalFileSystem):
        if os.path.isdir(parent) and not os.listdir(parent):
            os.rmdir(parent)
    elif (fs.get_file_info(parent).type == pafs.FileType.Directory
          and not fs.get_file_info(pafs.FileSelector(parent))):
        fs.delete_dir(parent)


def log_ingest(ingest: dict) -> None:
    """The read phase in one line (each file's own line is DEBUG: ``--verbose``)."""
    inputs = ingest.get("inputs", [])
    damaged = ingest.get("damaged_files", 0)
    log.info("read %s (%s): %s, %s rejected%s", plural(len(inputs), "input file"),
             plural(sum(i.get("bytes") or 0 for i in inputs), "byte"), plural(ingest.get("read", 0), "line"),
             f"{ingest.get('rejected', 0):,}", f"; {plural(damaged, 'damaged file')} read up to the damage"
             if damaged else "")


def read_summary(lake_path: Lake, run_id: str, started: _dt.datetime, plans=()) -> RunSummary:
    """The run's record, and the rows it wrote to each table by gaming day (from its days' results)."""
    rec = runs.read_run_record(lake_path, run_id)
    days = [d.isoformat() for d in rec["gaming_days"]]
    by_day: dict[str, dict[str, int]] = {}
    incomplete: list[str] = []
    for plan in plans:
        fs = lake_path.fs
        try:
            with fs.open_input_stream(plan.result_path) as f:
                result = json.loads(f.read())
        except FileNotFoundError:
            continue
        incomplete += result.get("input_damaged", [])
        for name, day, rows in result.get("written", []):
            if day is not None and name in COUNTED_TABLES:
                by_day.setdefault(name, {})[day] = by_day.get(name, {}).get(day, 0) + rows
    by_day = {name: dict(sorted(per_day.items())) for name, per_day in sorted(by_day.items())}
    # the rows the run wrote: every replayed day's partitions whole (what the lake holds for those
    # days now), rejects too: the run's rejected lines, a damaged file's row and the day's earlier ones
    rows = {name: sum(by_day.get(name, {}).values()) for name in COUNTED_TABLES}
    ended = rec["ended"] or _dt.datetime.now(_dt.timezone.utc)
    return RunSummary(
        run_id=run_id, lake=str(lake_path), inputs=rec["inputs"], lines_read=rec["lines_read"],
        accepted=rec["accepted"], rejected=rec["rejected"], duplicates=rec["duplicates"],
        gaming_days=days, rows=rows, findings=rec["findings"],
        findings_by_severity=json.loads(rec["findings_by_severity"] or "{}"), status=rec["status"],
        seconds=(ended - started).total_seconds(), rows_by_day=by_day,
        damaged_files=rec.get("damaged_files") or 0, bytes_not_read=rec.get("bytes_not_read") or 0,
        damage=rec.get("damage") or [], incomplete=sorted(incomplete),
    )
