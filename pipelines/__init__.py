"""Beam pipelines, the lake, and the ``pitwatch`` command line: all I/O lives here."""

__version__ = "0.1.0"

# In a worker process of the embedded runner, pitwatch's progress lines go to the run that started it
# (pipelines.progress; a no-op anywhere else).  Here because a worker imports this package before
# any of pitwatch's steps runs in it.
from pipelines.progress import route_worker_reports as _route_worker_reports  # noqa: E402

_route_worker_reports()
