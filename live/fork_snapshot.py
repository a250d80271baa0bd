"""A checkpoint's state serialised by a forked child: the service's loop stops only for the fork.

A checkpoint must hold every table's and every device's state as of one instant (the input
positions it records).  Serialising it on the loop — 400 busy tables and 1,300 devices, ~13 MB of
JSON — stalled the loop 170-300 ms every checkpoint at 5,000 lines/s (``bench/watch.py``), and
every line arriving meanwhile waited: most of the alert latency's p99.  Serialising it a little at
a time, copy-before-write, did not help: with every table busy, each table was serialised at its
next line anyway, in the first turns after the instant.

So the loop forks at the instant (``os.fork``: ~15 ms for a 600 MB process here; the child gets the
parent's memory copy-on-write, exactly as it was at the instant — what Redis does for its
snapshots) and goes on at once; the child serialises and writes ``checkpoint.json.partial-<pid>``
(fsync'd) and exits; the service's checkpoint thread waits for it and renames the file into place
(:meth:`pitwatch.live.checkpoint.StateDir.publish`).  The child does nothing else: it ignores SIGTERM/SIGINT
(a stop signal sent to the whole process group must not cut its write short: the parent's last
checkpoint comes after it), closes its copy of the state folder's lock (a watcher restarted after a
``kill -9`` of the parent must not find the lock held by an orphaned child), never logs, turns the
cyclic collector off (it would touch every object: copies of every page) and leaves with
``os._exit`` (no exit handlers, no flush of the parent's buffered stdout).

Where ``os.fork`` does not exist, and for the checkpoint at stop, the same bytes are made on the
loop.
"""
from __future__ import annotations

import gc
import os
import signal
import traceback
from collections.abc import Callable

CAN_FORK = hasattr(os, "fork")


class ChildFailed(RuntimeError):
    pass


class Child:
    """A forked child writing one checkpoint file."""

    def __init__(self, pid: int, path: str) -> None:
        self.pid = pid
        self.path = path

    def wait(self) -> str:
        """Wait for the child; the file it wrote, or ChildFailed."""
        _pid, status = os.waitpid(self.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise ChildFailed(f"the process writing the checkpoint ({self.pid}) ended with {code}")
        return self.path


def fork_and_write(serialise: Callable[[], tuple[dict, bytes]], write: Callable[[dict, bytes, str], object],
                   path_of: Callable[[int], str], close_fds: tuple[int, ...] = ()) -> Child:
    """Fork; in the child ``write(*serialise(), path_of(own pid))`` and exit; the parent returns at once."""
    pid = os.fork()
    if pid == 0:                        # the child: the instant's state, written, then gone
        code = 1
        try:
            gc.disable()
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            for fd in close_fds:
                os.close(fd)
            tables, rest = serialise()
            write(tables, rest, path_of(os.getpid()))
            code = 0
        except BaseException:           # noqa: BLE001 - reported on stderr; the parent sees the code
            try:
                os.write(2, ("pitwatch: the checkpoint's writer failed:\n" + traceback.format_exc()).encode())
            except OSError:
                pass
        finally:
            os._exit(code)
    return Child(pid, path_of(pid))
