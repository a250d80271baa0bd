"""The nightly batch, as a library: ``run_batch()`` (``pitwatch run`` only renders it).

The graph is in :mod:`pipelines.graph`.  The embedded default is Beam's
``FnApiRunner``, named explicitly (Beam's ``DirectRunner`` first tries to
download a Prism binary, which hangs behind a silent network).  Any other
Beam option passes through (``--runner=FlinkRunner``, ``--direct_num_workers=2``
…): nothing in the pipeline depends on running embedded — no local side
channels between steps, no global state; the lake may be ``gs://``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import logging
import os
import re
import sys

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from pipelines import __version__, lake, runs
from pipelines.graph import DAY_TABLES, DayMode, build_pipeline
from pipelines.ingest import IngestOptions
from pipelines.inputs import expand_inputs

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


def embedded_runner(options: PipelineOptions, zygote: str | None = None):
    """The runner object for the embedded default (:class:`pipelines.embedded.EmbeddedRunner`: its
    worker processes exit without tearing their interpreter down, forked by ``zygote`` when given);
    None for any other runner."""
    if options.view_as(StandardOptions).runner != DEFAULT_RUNNER:
        return None
    from pipelines.embedded import EmbeddedRunner

    return EmbeddedRunner(zygote=zygote)


@contextlib.contextmanager
def worker_zygote(options: PipelineOptions):
    """The socket of a :class:`pipelines.zygote.WorkerZygote` for a run on the embedded runner with
    worker processes (None otherwise, or where it is switched off), ended with the run."""
    multi = options.view_as(DirectOptions).direct_running_mode == "multi_processing"
    if options.view_as(StandardOptions).runner != DEFAULT_RUNNER or not multi:
        yield None
        return
    from pipelines.zygote import WorkerZygote

    zygote = WorkerZygote.start()
    try:
        yield zygote.path if zygote is not None else None
    finally:
        if zygote is not None:
            zygote.close()


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
    """
    from apache_beam.runners.portability.fn_api_runner import worker_handlers

    before = worker_handlers.DATA_BUFFER_TIME_LIMIT_MS
    worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = 0
    try:
        yield
    finally:
        worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = before


@contextlib.contextmanager
def worker_stderr_silenced(active: bool):
    """While the pipeline runs, send what Beam's worker processes print to /dev/null.

    The embedded runner's worker processes inherit stderr and log every
    bundle there at INFO (Beam configures their logging itself; no option
    reaches them).  This process keeps its own stderr: ``sys.stderr`` and the
    handlers writing to it are pointed at a copy of the original descriptor.
    A worker's failure still reaches this process as the pipeline's error.
    """
    if not active:
        yield
        return
    forwarded = logging.getLogger("apache_beam.runners.portability.local_job_service")
    relay = _WorkerProgress()
    old_level, old_propagate = forwarded.level, forwarded.propagate
    forwarded.addHandler(relay)
    forwarded.setLevel(logging.INFO)
    forwarded.propagate = False
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
        forwarded.removeHandler(relay)
        forwarded.setLevel(old_level)
        forwarded.propagate = old_propagate


class _WorkerProgress(logging.Handler):
    """Pass on pitwatch's own progress lines that Beam relays from its worker processes.

    The runner logs each relayed entry as ``Worker: <LogEntry in protobuf
    text>``; entries logged by pitwatch's pipeline steps are re-logged on the
    ``pitwatch`` logger, the rest (Beam's own chatter) dropped.
    """

    _OURS = re.compile(r'log_location: "[^"]*/pipelines/(?:ingest|replay|graph)\.py:')
    _MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')

    def emit(self, record: logging.LogRecord) -> None:
        text = str(record.args[0]) if record.args else record.getMessage()
        if not self._OURS.search(text):
            return
        found = self._MESSAGE.search(text)
        if found:
            message = found.group(1).encode("latin-1", "backslashreplace").decode("unicode_escape")
            try:    # octal escapes of UTF-8 bytes back to text
                message = message.encode("latin-1").decode("utf-8")
            except (UnicodeEncodeError, UnicodeDecodeError):
                pass    # the text format kept the characters as they were
            log.info("%s", message)


def local_input_bytes(files: list[str]) -> int:
    return sum(os.path.getsize(f) for f in files if "://" not in f and os.path.exists(f))


def run_batch(inputs: list[str], lake_path: str, beam_args: list[str] | None = None,
              gaming_day=None, chunk_lines: int = 20_000, command: str = "pitwatch run",
              day_mode: DayMode | None = None, inbox_listing: list | None = None, devices=None) -> RunSummary:
    """Ingest, validate, replay and write every table of the lake. Raises InputError/LakeError.

    With ``day_mode`` the run is one night's replay (see :mod:`pipelines.nightly`);
    ``inputs`` may then be empty (a gaming day with no file).  ``devices``: the device
    registry (:class:`pipelines.devices.DeviceRegistry`, recorded in the run's options) or None.
    """
    from schemas.decode import GamingDayConfig

    config = gaming_day or GamingDayConfig()
    files = expand_inputs(inputs) if (inputs or day_mode is None) else []
    lake.check_writable(lake_path)
    stale = lake.remove_stale_temp_files(lake_path)
    if stale:
        log.info("removed %d temporary file(s) left by an interrupted run", stale)
    started = _dt.datetime.now(_dt.timezone.utc)
    options = beam_options(list(beam_args or []), local_input_bytes(files))
    workers = options.view_as(DirectOptions).direct_num_workers
    if workers > 1:
        log.info("embedded runner: %d worker processes", workers)
    meta = {
        "run_id": runs.new_run_id(started), "command": command, "started": started.isoformat(),
        "fallback_day": config.gaming_day(started).isoformat(), "versions": runs.versions(),
        "pitwatch": __version__, "inbox": inbox_listing or [],
        "options": json.dumps({"cutoff": config.cutoff, "timezone": config.timezone,
                               "runner": str(options.view_as(StandardOptions).runner),
                               "direct_num_workers": workers,
                               "beam_args": list(beam_args or []),
                               "replay_day": day_mode.replay_day if day_mode else None,
                               "prior_day": day_mode.prior_day if day_mode else None,
                               "devices": devices.describe() if devices is not None else None}, sort_keys=True),
    }
    runs.write_run_record(lake_path, runs.run_record(meta, "running"))
    what = f"gaming day {day_mode.replay_day}" if day_mode else f"{len(files)} input file(s)"
    log.info("run %s: %s → %s", meta["run_id"], what, lake_path)
    try:
        with worker_zygote(options) as zygote, worker_stderr_silenced(workers > 1), whole_bundle_inputs(), \
                beam.Pipeline(runner=embedded_runner(options, zygote), options=options) as p:
            build_pipeline(p, files, lake_path, meta, IngestOptions(config, chunk_lines), day_mode, devices)
    except BaseException as exc:
        runs.write_run_record(lake_path, runs.run_record(
            meta, f"failed: {type(exc).__name__}: {exc}"[:2000], ended=_dt.datetime.now(_dt.timezone.utc)))
        raise
    summary = read_summary(lake_path, meta["run_id"], started)
    summary.replay_day = day_mode.replay_day if day_mode else None
    return summary


def read_summary(lake_path: str, run_id: str, started: _dt.datetime) -> RunSummary:
    rec = runs.read_run_record(lake_path, run_id)
    days = [d.isoformat() for d in rec["gaming_days"]]
    rows = {"rejects": rec["rejected"]}
    wanted = pa.array([_dt.date.fromisoformat(d) for d in days], pa.date32())
    for name in DAY_TABLES:
        t = lake.read_table(lake_path, name, columns=["gaming_day"])
        rows[name] = t.filter(pc.is_in(t.column("gaming_day"), wanted)).num_rows if t.num_rows else 0
    ended = rec["ended"] or _dt.datetime.now(_dt.timezone.utc)
    return RunSummary(
        run_id=run_id, lake=lake_path, inputs=rec["inputs"], lines_read=rec["lines_read"],
        accepted=rec["accepted"], rejected=rec["rejected"], duplicates=rec["duplicates"],
        gaming_days=days, rows=rows, findings=rec["findings"],
        findings_by_severity=json.loads(rec["findings_by_severity"] or "{}"), status=rec["status"],
        seconds=(ended - started).total_seconds(),
    )
