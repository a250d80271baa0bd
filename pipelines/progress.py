"""A run's progress, as its own steps report it, printed by the process that runs the pipeline.

pitwatch's steps report what they did on the ``pitwatch`` logger ("read
FILE: N lines", "replayed TABLE: N events, K findings", "wrote
TABLE/gaming_day=D: N rows": DEBUG, shown with ``run --verbose``; the run
itself logs one INFO line per phase).  Where a step runs in the process that runs
the pipeline (the embedded runner in one process, small inputs), that is
the user's terminal already.  The embedded runner's worker processes (inputs
of 32 MB or more, :func:`pitwatch.pipelines.batch.beam_options`) run the steps in
processes of their own, so a run with worker processes reads their reports
from a file of its own:

* :class:`WorkerReports` (the run's side) makes an empty file in a private
  temporary folder and names it, with the run's process id, in the
  environment variable :data:`ENV` (Beam starts its worker processes with
  the run's environment); a thread reads the lines appended to it twice a
  second and logs each on the ``pitwatch`` logger, so ``--quiet`` and the
  CLI's format apply as to any line of the run.  At the end of the run it
  reads what is left, removes the file and unsets the variable.
* A step reports through :func:`step_log`, which calls
  :func:`route_worker_reports` first (importing pitwatch does nothing of the
  kind: no import has a side effect): in a process other than the run's, with :data:`ENV` set, the ``pitwatch`` logger's
  records are appended to that file, one line each, written whole with one
  ``write`` on a file opened for appending (two workers' lines never
  interleave), and no longer passed to Beam's own logging.  (Beam's
  ``--beam_plugin`` would be the other way in, but the embedded runner does
  not hand its workers the pipeline's options.)

No Beam log is read: the lines are pitwatch's own records, in pitwatch's
file.  On other runners (Flink, Dataflow…) the workers are on other
machines and :data:`ENV` is not set there: the steps' lines are in the
workers' logs, where that runner keeps them.  A worker that fails still
fails the run with its error (Beam's), whatever this module does.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading

ENV = "PITWATCH_PROGRESS"
POLL_SECONDS = 0.5

log = logging.getLogger("pitwatch")


class _AppendLines(logging.Handler):
    """A record → one line appended to ``path`` (one ``write`` of the whole line, O_APPEND): its
    level number, a tab, its message (the run logs it again at that level: a step's per-file
    line is DEBUG, shown with ``--verbose`` and kept in ``--log-file``)."""

    def __init__(self, path: str):
        super().__init__(logging.DEBUG)
        self.path = path

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = f"{record.levelno}\t" + record.getMessage().replace("\n", " ") + "\n"
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, text.encode("utf-8", "replace"))
            finally:
                os.close(fd)
        except Exception:   # noqa: BLE001 - a report that cannot be written must not fail the step
            self.handleError(record)


def route_worker_reports(environ=os.environ) -> bool:
    """In a worker process of a run with :data:`ENV` set: send the ``pitwatch`` logger's records to
    the run's file (see the module).  Returns whether it did; a no-op in the run's own process."""
    owner, sep, path = environ.get(ENV, "").partition(":")
    if not sep or not owner.isdigit() or int(owner) == os.getpid() or not os.path.isfile(path):
        return False
    worker_log = logging.getLogger("pitwatch")
    if not any(isinstance(h, _AppendLines) and h.path == path for h in worker_log.handlers):
        worker_log.handlers[:] = [_AppendLines(path)]
    worker_log.setLevel(logging.DEBUG)
    worker_log.propagate = False        # not through Beam's logging as well
    return True


def step_log() -> logging.Logger:
    """The ``pitwatch`` logger, for a step's report: in a worker process of a run, routed to the run's
    file before the first report (:func:`route_worker_reports`, which does it once per process)."""
    route_worker_reports()
    return log


class WorkerReports:
    """The run's side (see the module): ``with WorkerReports(): run the pipeline``."""

    def __init__(self):
        self.folder = self.path = None
        self._offset = 0
        self._partial = b""
        self._stop = threading.Event()
        self._reader: threading.Thread | None = None
        self._before: str | None = None

    def __enter__(self) -> "WorkerReports":
        self.folder = tempfile.mkdtemp(prefix="pitwatch-progress-")
        self.path = os.path.join(self.folder, "reports.txt")
        open(self.path, "wb").close()
        self._before = os.environ.get(ENV)
        os.environ[ENV] = f"{os.getpid()}:{self.path}"
        self._reader = threading.Thread(target=self._follow, name="pitwatch-progress", daemon=True)
        self._reader.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        assert self._reader is not None     # started by __enter__
        self._reader.join()
        self.read_new()
        if self._partial:       # a worker that died in the middle of a line: what it wrote of it
            log.info("%s", self._partial.decode("utf-8", "replace"))
        if self._before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = self._before
        shutil.rmtree(self.folder, ignore_errors=True)

    def _follow(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.read_new()

    def read_new(self) -> int:
        """Log the complete lines appended since the last call; returns how many."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return 0
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            level, tab, text = line.decode("utf-8", "replace").partition("\t")
            if tab and level.isdigit():
                log.log(int(level), "%s", text)
            else:
                log.info("%s", line.decode("utf-8", "replace"))
        return len(lines)

