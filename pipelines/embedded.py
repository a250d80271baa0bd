"""The embedded runner's worker processes end at once when their work is done.

Beam's ``FnApiRunner`` in multi-processing mode starts each SDK worker as
``python -m apache_beam.runners.worker.sdk_worker_main`` and, at the end of
the run, stops them one after the other, each time waiting for the process
to exit.  A worker's interpreter then tears down its whole heap (modules,
caches, Beam's state): measured 0.44-0.56 s a worker at 2M events, ~1 s of
every run spent after the lake was written.

:class:`EmbeddedRunner` is that runner with one change: its workers run
``python -m pipelines.embedded``, which is Beam's worker main followed, once
it returned normally (the runner closed the worker's control channel after
the last bundle; every output is written and flushed by then), by flushing
the logs and standard streams and ``os._exit(0)``.  A worker that fails
still raises out of Beam's main and exits with its error as before.
Measured: the end of a 2M-event run 1.04 → 0.1 s.  Other runners (Flink,
Dataflow…) start their workers themselves and are not affected.  With a
zygote (:mod:`pipelines.zygote`, the default on Linux) the workers are
forked ready-made instead and end the same way; this module's command is
the one for workers started afresh.
"""
from __future__ import annotations

import logging
import os
import shlex
import sys

from apache_beam.portability import python_urns
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

BEAM_WORKER = "-m apache_beam.runners.worker.sdk_worker_main"
QUICK_EXIT_WORKER = "-m pipelines.embedded"


def point_workers(pipeline_proto, zygote: str | None = None) -> None:
    """Point the pipeline's Beam subprocess workers at :func:`worker_main`, or, with the socket of a
    :class:`pipelines.zygote.WorkerZygote`, at the shim that has it fork them."""
    from pipelines.zygote import SHIM

    worker = QUICK_EXIT_WORKER if zygote is None else f"{SHIM} {shlex.quote(zygote)}"
    for env in pipeline_proto.components.environments.values():
        command = env.payload.decode("utf-8") if env.urn == python_urns.SUBPROCESS_SDK else ""
        if command.endswith(BEAM_WORKER):
            env.payload = (command[:-len(BEAM_WORKER)] + worker).encode("utf-8")


class EmbeddedRunner(FnApiRunner):
    """Beam's FnApiRunner whose worker processes skip the interpreter's teardown (see the module),
    forked by ``zygote`` (the socket of a :class:`pipelines.zygote.WorkerZygote`) when given."""

    def __init__(self, *args, zygote: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.zygote = zygote

    def run_via_runner_api(self, pipeline_proto, options):
        point_workers(pipeline_proto, self.zygote)
        return super().run_via_runner_api(pipeline_proto, options)


def flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):
            pass


def end_worker(status: int, report=None) -> None:
    """End this worker process without tearing its interpreter down: logs and standard streams
    flushed, ``report(status)`` if given, then ``os._exit(status)``."""
    logging.shutdown()
    flush_streams()
    if report is not None:
        report(status)
    os._exit(status)


def worker_main(argv: list[str]) -> None:
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(argv)      # raises (exit status 1) when the worker fails
    end_worker(0)


if __name__ == "__main__":
    worker_main(sys.argv)
