"""The lake's lock: one writer at a time (``pitwatch run``, ``pitwatch vacuum``), for the whole command.

Delta Lake does not see a conflict between two blind appends, nor between a
stale partition overwrite and an append (issue 26): two runs writing one lake
at once would each commit and one would lose the other's rows.  So a writer
holds an operating-system lock on ``LAKE/_writer.lock`` from before it reads
the lake until after its ``runs`` record, and a second writer waits.

Who holds it is written beside the lock, in ``LAKE/_writer.holder.json``
(run id once known, pid, host, start time, command), so that the one
waiting can say whom it waits for::

    waiting for the lake's lock, held by run 20261129T061502Z-1a2b3c4d, pid 4121, on pit-01 since
    2026-11-29T06:15:02Z (pitwatch run --day 2026-11-28 …)

(repeated at most every 30 s) until ``--lock-timeout``; then :class:`LakeLocked`
(the commands exit 4, naming the holder).

The lock is ``fcntl.flock`` (the standard library), not ``filelock``
(py-filelock): its ``UnixFileLock`` is this same call, and what we need on top
of it — the holder record, the "waiting for …" line every 30 s, re-entrance
within one process — is ours either way; its other locks (``SoftFileLock``,
a file's mere existence) are exactly what must not be used here, since a
killed run would leave the lake locked.  An ``flock`` belongs to the open file
and the kernel releases it when the process ends, however it ends (``kill
-9`` included): a lock whose holder died is free, and its stale holder file
is overwritten by the next holder.  Local disks and POSIX file systems that
implement ``flock`` across machines (NFS v4, where Linux maps it to a POSIX
lock; CephFS, Lustre, GPFS) are supported.  An object store (``gs://``,
``s3://``, …) has no such lock: :func:`hold` refuses it (:class:`LockUnsupported`,
exit 2) — ``docs/lake.md``, "Supported stores", says what to do instead.

``pitwatch watch`` never takes this lock: it reads the last successful run's
table versions and writes only its own files.

Decisions (the spec is silent):

* the lock is re-entrant within one process (a nightly run that replays
  several days holds it once; a second :func:`hold` on the same lake from the
  same process does not wait for itself);
* a lake given as ``file://…`` is the local path it names;
* the lock and holder files are refused if they are symbolic links or not
  regular files (a planted link must not make pitwatch create or lock another
  file); the holder is written to a temporary file and renamed, so a waiting
  run never reads half a record; anything unreadable in it is reported as
  such, never trusted, and printed on one line with control characters
  escaped.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import json
import os
import socket
import stat
import threading
import time
import uuid

from pitwatch.lake import Lake
from pitwatch.lake.parquet import LakeError

LOCK_FILE = "_writer.lock"
HOLDER_FILE = "_writer.holder.json"
SAY_EVERY = 30.0          # seconds between two "waiting for the lake's lock" lines
POLL = 0.2                # seconds between two tries
SUPPORTED = ("local disks", "POSIX file systems with flock (NFS v4, CephFS, Lustre, GPFS)")


class LakeLocked(Exception):
    """Another writer held the lake's lock for longer than the timeout (the commands exit 4)."""

    def __init__(self, lake: Lake, holder: dict | None, waited: float):
        self.lake, self.holder, self.waited = lake, holder, waited     # waited: the timeout it gave up at
        super().__init__(f"the lake {lake} is locked by {describe(holder)}; gave up after "
                         f"{format_duration(waited)} (--lock-timeout); run again when that one has ended")


class LockUnsupported(LakeError):
    """The lake is on a store with no operating-system lock (an object store): exit 2."""


def format_duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:.4g} min"
    return f"{seconds / 3600:.4g} h"


def local_root(lake: Lake) -> str:
    """The lake's local folder; :class:`LockUnsupported` for an object store."""
    location = lake.location
    if location.startswith("file://"):
        location = location[len("file://"):]
    elif "://" in location:
        scheme = location.split("://", 1)[0]
        raise LockUnsupported(
            f"the lake {lake} is on an object store ({scheme}://), where pitwatch has no lock that keeps "
            f"two writers apart: a lake is written only on {' or '.join(SUPPORTED)}; for object stores "
            "see docs/lake.md, \"Supported stores\"")
    return os.path.abspath(location)


def new_holder(command: str, run_id: str | None = None) -> dict:
    """The record of this process as the lock's holder (run id later, with :func:`holder_update`)."""
    return {"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(),
            "since": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "command": command}


def describe(holder: dict | None) -> str:
    """``run R, pid P, on HOST since T (COMMAND)`` on one line, whatever the holder file held."""
    if holder is None:
        return "a writer that has not said who it is yet (no holder record)"
    if not isinstance(holder, dict) or "unreadable" in holder:
        return f"a writer whose holder record is unreadable ({_clean((holder or {}).get('unreadable', holder))})"
    run = f"run {_clean(holder['run_id'])}, " if holder.get("run_id") else "a run (no run id yet), "
    command = f" ({_clean(holder['command'], 400)})" if holder.get("command") else ""
    return (f"{run}pid {_clean(holder.get('pid'))}, on {_clean(holder.get('host'))} "
            f"since {_clean(holder.get('since'))}{command}")


def _clean(value, limit: int = 80) -> str:
    text = str(value)
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return text if len(text) <= limit else text[:limit] + "…"


def read_holder(root: str) -> dict | None:
    """The holder record beside the lock (None if there is none; ``{"unreadable": why}`` if it is bad)."""
    path = os.path.join(root, HOLDER_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return {"unreadable": exc.strerror or str(exc)}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {"unreadable": "not a regular file"}
        body = os.read(fd, 64 * 1024)
    finally:
        os.close(fd)
    try:
        data = json.loads(body)
    except ValueError:
        return {"unreadable": "not JSON"}
    return data if isinstance(data, dict) else {"unreadable": "not a JSON object"}


class _Held:
    def __init__(self, root: str, fd: int, holder: dict):
        self.root, self.fd, self.holder, self.depth = root, fd, holder, 1


_held: dict[str, _Held] = {}
_guard = threading.Lock()


def _write_holder(held: _Held) -> None:
    tmp = os.path.join(held.root, f".{HOLDER_FILE}.tmp-{uuid.uuid4().hex}")   # lake.py's temporary-file convention
    path = os.path.join(held.root, HOLDER_FILE)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            os.write(fd, json.dumps(held.holder, sort_keys=True).encode())
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise LakeError(f"cannot write the lake's holder record {path}: {exc.strerror or exc} (pitwatch "
                        "writes it; remove what is there)") from None


def holder_update(lake: Lake, **fields) -> None:
    """Add to the holder record of the lock this process holds on ``lake`` (e.g. ``run_id=…`` once the
    run has one; a nightly run calls it for each day it replays).  Does nothing if it holds none."""
    try:
        root = local_root(lake)
    except LockUnsupported:
        return
    with _guard:
        held = _held.get(os.path.realpath(root))
    if held is None:
        return
    held.holder.update(fields)
    _write_holder(held)


def holding(lake: Lake) -> bool:
    """Whether this process holds the lake's lock."""
    try:
        root = local_root(lake)
    except LockUnsupported:
        return False
    with _guard:
        return os.path.realpath(root) in _held


def _open_lock(root: str) -> int:
    path = os.path.join(root, LOCK_FILE)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:      # an empty lake folder its last holder created, removed as it let go
            _lake_folder(root)
            fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LakeError(f"the lake's lock file {path} is a symbolic link: remove it (pitwatch "
                            "creates it)") from None
        raise LakeError(f"cannot open the lake's lock file {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LakeError(f"the lake's lock file {path} is not a regular file: remove it (pitwatch creates it)")
    return fd


def _still_the_lock_file(fd: int, path: str) -> bool:
    """Whether the file we locked is still the one at the lock's path (a holder removes it on release:
    one who locked the removed file must open the path again)."""
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)


def _lake_folder(root: str) -> bool:
    """Create the lake's folder if need be; True if this call created it."""
    if os.path.isdir(root):
        return False
    try:
        os.makedirs(root)
        return True
    except FileExistsError:
        if os.path.isdir(root):
            return False
        raise LakeError(f"lake {root} is a file, not a folder") from None
    except OSError as exc:
        raise LakeError(f"cannot write to lake {root}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def hold(lake: Lake, holder: dict, timeout: float, log, say_every: float = SAY_EVERY):
    """Hold the lake's lock for the ``with`` block, waiting up to ``timeout`` seconds for another writer.

    ``holder`` (:func:`new_holder`) is written beside the lock.  While waiting, ``log.info`` says who
    holds it, at most every ``say_every`` seconds (``--quiet`` leaves it to the log file).  Raises
    :class:`LakeLocked` after ``timeout``, :class:`LockUnsupported` for an object store,
    :class:`pitwatch.lake.parquet.LakeError` for a lake folder pitwatch cannot lock.  Yields the holder
    record (a dict; :func:`holder_update` changes it).

    On release the lock and holder files are removed (while still locked; a waiter that had the old
    file open sees it is no longer the lock's path and opens it again), and a lake folder this call
    created is removed again if it is still empty: a run that stops before writing leaves the lake's
    bytes as they were.  A killed holder leaves both files; they mean nothing once it is dead."""
    root = local_root(lake)
    key = os.path.realpath(root)
    with _guard:
        held = _held.get(key)
        if held is not None:
            held.depth += 1
    if held is not None:
        try:
            yield held.holder
        finally:
            with _guard:
                held.depth -= 1
        return
    created = _lake_folder(root)
    path = os.path.join(root, LOCK_FILE)
    start = time.monotonic()
    said = None
    fd = None
    try:
        while True:
            if fd is None:
                fd = _open_lock(root)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if _still_the_lock_file(fd, path):
                    break
                os.close(fd)          # the file a holder removed on release: take the path's new one
                fd = None
                continue
            except BlockingIOError:
                pass
            except OSError as exc:
                raise LakeError(f"cannot lock the lake {lake} ({exc.strerror or exc}): its file system has no "
                                f"flock; a lake is written only on {' or '.join(SUPPORTED)}") from None
            waited = time.monotonic() - start
            if said is None or time.monotonic() - said >= say_every:
                log.info("waiting for the lake's lock, held by %s (gives up after %s: --lock-timeout)",
                         describe(read_holder(root)), format_duration(timeout))
                said = time.monotonic()
            if waited >= timeout:
                raise LakeLocked(lake, read_holder(root), timeout)
            time.sleep(max(0.0, min(POLL, timeout - waited)))
    except BaseException:
        if fd is not None:
            os.close(fd)
        _remove_if_empty(root, created)
        raise
    held = _Held(root, fd, dict(holder))
    with _guard:
        _held[key] = held
    try:
        _write_holder(held)
        if said is not None:
            log.info("got the lake's lock after %s", format_duration(time.monotonic() - start))
        yield held.holder
    finally:
        with _guard:
            _held.pop(key, None)
        for name in (HOLDER_FILE, LOCK_FILE):     # ours: no one else writes them while we hold the lock
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(root, name))
        os.close(fd)      # releases the flock
        _remove_if_empty(root, created)


def _remove_if_empty(root: str, created: bool) -> None:
    if created:
        with contextlib.suppress(OSError):
            os.rmdir(root)     # only if nothing was written in it
