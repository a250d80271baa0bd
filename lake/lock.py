"""The lake's lock: one writer at a time (``pitwatch run``, ``pitwatch vacuum``), for the whole command:
a file lock on a disk, a lease on an object store.

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
lock; CephFS, Lustre, GPFS) are supported.

**An object store** (``s3://``, ``gs://``, ``az://``) has no such lock: there the lock is a *lease*,
the object ``LAKE/_writer.lease.json`` (issue 44).  It is created only if absent (a conditional put,
``If-None-Match: *``) and names its holder (the same record as the holder file, above), the lease
length and its expiry (UTC).  A thread of the holder renews it every quarter of its length by a
conditional replace on the ETag it last wrote (``If-Match``), so a writer that was killed stops
renewing and its lease runs out: a killed writer keeps the lake for one lease length
(:data:`LEASE_SECONDS`, 60 s; ``PITWATCH_LEASE_SECONDS``).  A second writer waits as on a disk
(the same "waiting for …" line, exit 4 after ``--lock-timeout``) and takes over a dead lease by a
conditional replace on the ETag it read: of two waiters, one wins.  A lease is dead when it has not
changed for one lease length while the waiter watched (the waiter's own monotonic clock: no other
machine's clock involved), or when its written expiry is more than :data:`MAX_SKEW` (30 s) past on
the waiter's clock (a writer killed long ago does not keep the next one waiting a lease length):
two machines' clocks must agree within 30 s, which NTP keeps by orders of magnitude.  Every record
holds a fresh id and a renewal count, so no ETag comes back (no ABA).  A holder whose lease was
taken over (it was paused, or cut off from the store, past the lease) must not commit:
:func:`check_held`, called before every commit (:mod:`pitwatch.lake.delta`), renews the lease
once and raises :class:`LeaseLost` when it is no longer its own (the command ends, exit 3).  On
release the lease is renewed once more (it is still ours), then deleted: obstore offers no
conditional delete, and no waiter takes over a lease that was renewed a moment before.

Why obstore: one API for the conditional put of S3, GCS and Azure (``mode="create"``,
``mode={"e_tag": …}``), from the Rust ``object_store`` crate delta-rs itself commits through, so
the lease and the Delta commits reach the store the same way and read the same AWS variables.
Tested here on the S3 API only (moto's server, ``tests/pipelines/test_lake_lease.py``).

``pitwatch watch`` never takes this lock: it reads the last successful run's
table versions and writes only its own files.

Decisions (the spec is silent):

* the lock is re-entrant within one thread (a nightly run that replays
  several days holds it once; a second :func:`hold` on the same lake from the
  same thread does not wait for itself); another thread of the same process
  waits like another process (the console records two reviews at once in two
  worker threads: one must not commit under the other's lock, nor let go of
  it while the other writes);
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
from pitwatch.lake.files import object_store
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
    """A lake on an object store given where a local folder is needed (:func:`local_root`): exit 2."""


def format_duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:.4g} min"
    return f"{seconds / 3600:.4g} h"


def local_root(lake: Lake) -> str:
    """The lake's local folder, where the file lock is; :class:`LockUnsupported` for an object store
    (whose lock is the lease: :func:`hold` dispatches)."""
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
    """The lock this process holds on one lake: the file lock's folder and descriptor, or the lease."""

    def __init__(self, root: str | None, fd: int | None, holder: dict, lease: _Lease | None = None):
        self.root, self.fd, self.holder, self.depth, self.lease = root, fd, holder, 1, lease


_held: dict[tuple[str, int], _Held] = {}
_guard = threading.Lock()


def _key(lake: Lake) -> tuple[str, int]:
    """What the locks this process holds are kept by: the lake folder's real path, or the URI, and
    the thread holding it (re-entrant in that thread only)."""
    where = lake.address.rstrip("/") if on_object_store(lake) else os.path.realpath(local_root(lake))
    return where, threading.get_ident()


def _write_holder(held: _Held) -> None:
    if held.lease is not None:
        held.lease.holder = held.holder
        if not held.lease.renew():
            raise LeaseLost(f"the lake {held.lease.lake}'s lease is no longer this writer's ({held.lease.lost})")
        return
    assert held.root is not None
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
    run has one; a nightly run calls it for each day it replays; on an object store the lease object
    is rewritten).  Does nothing if it holds none."""
    with _guard:
        held = _held.get(_key(lake))
    if held is None:
        return
    held.holder.update(fields)
    _write_holder(held)


def holding(lake: Lake) -> bool:
    """Whether this process holds the lake's lock."""
    with _guard:
        return _key(lake) in _held


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
def hold(lake: Lake, holder: dict, timeout: float, log, say_every: float = SAY_EVERY, lease: float | None = None):
    """Hold the lake's lock for the ``with`` block, waiting up to ``timeout`` seconds for another writer.

    ``holder`` (:func:`new_holder`) is written beside the lock.  While waiting, ``log.info`` says who
    holds it, at most every ``say_every`` seconds (``--quiet`` leaves it to the log file).  Raises
    :class:`LakeLocked` after ``timeout``, :class:`pitwatch.lake.parquet.LakeError` for a lake folder
    pitwatch cannot lock or a store that cannot be reached.  Yields the holder record (a dict;
    :func:`holder_update` changes it).

    On an object store the lock is a lease (the module doc): ``lease`` seconds long (default
    :func:`lease_seconds`), renewed by a thread every quarter of it while the block runs.

    On release the lock and holder files are removed (while still locked; a waiter that had the old
    file open sees it is no longer the lock's path and opens it again), and a lake folder this call
    created is removed again if it is still empty: a run that stops before writing leaves the lake's
    bytes as they were.  A killed holder leaves both files; they mean nothing once it is dead."""
    key = _key(lake)
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
    if on_object_store(lake):
        yield from _hold_lease(lake, key, holder, timeout, log, say_every, lease_seconds(lease))
        return
    root = local_root(lake)
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


def _hold_lease(lake: Lake, key: tuple[str, int], holder: dict, timeout: float, log, say_every: float, seconds: float):
    """:func:`hold`'s body on an object store: take the lease, renew it while the block runs, let go."""
    lease = _take_lease(lake, dict(holder), timeout, log, say_every, seconds)
    held = _Held(None, None, lease.holder, lease)
    lease.thread = threading.Thread(target=lease.renew_forever, args=(log,), name="pitwatch-lease", daemon=True)
    lease.thread.start()
    with _guard:
        _held[key] = held
    try:
        yield held.holder
    finally:
        with _guard:
            _held.pop(key, None)
        _let_go(lease)


def _remove_if_empty(root: str, created: bool) -> None:
    if created:
        with contextlib.suppress(OSError):
            os.rmdir(root)     # only if nothing was written in it


# ------------------------------------------------------------ the lease: a lake on an object store

LEASE_OBJECT = "_writer.lease.json"
LEASE_SECONDS = 60.0       # how long a lease holds without a renewal: a killed writer keeps the lake this long
LEASE_ENV = "PITWATCH_LEASE_SECONDS"
MAX_SKEW = 30.0            # seconds two machines' clocks may differ by (a lease this long past its expiry is dead)
LEASE_POLL = 1.0           # seconds between two looks at another writer's lease


class LeaseLost(RuntimeError):
    """This process's lease on an object-store lake ran out or was taken over (the process was paused,
    or could not reach the store, for longer than the lease): it must not commit (the command ends,
    exit 3)."""


def lease_seconds(seconds: float | None = None) -> float:
    """The lease length: ``seconds``, else ``PITWATCH_LEASE_SECONDS``, else :data:`LEASE_SECONDS`
    (1 s to 1 h; anything else a :class:`LakeError` naming the value)."""
    if seconds is None:
        text = os.environ.get(LEASE_ENV, "").strip()
        if not text:
            return LEASE_SECONDS
        try:
            seconds = float(text)
        except ValueError:
            raise LakeError(f"{LEASE_ENV} must be seconds from 1 to 3600, got {text[:40]!r}") from None
    if not (1 <= seconds <= 3600):            # nan included
        raise LakeError(f"{LEASE_ENV} must be seconds from 1 to 3600, got {seconds!r}")
    return float(seconds)


def on_object_store(lake: Lake) -> bool:
    """The lake is on an object store (``s3://``, ``gs://``, ``az://``, …): its lock is a lease."""
    return lake.is_uri and not lake.local


def _utc(seconds: float) -> str:
    return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _parse_utc(text) -> float | None:
    try:
        return _dt.datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=_dt.timezone.utc).timestamp()
    except ValueError:
        return None


def _tag(meta) -> dict:
    """What a conditional replace of the object names: its ETag and, where the store has one, its
    version (GCS's generation: object_store's GCS backend replaces on the version, S3's on the
    ETag), as obstore's ``mode={"e_tag": …, "version": …}`` takes them."""
    return {k: meta[k] for k in ("e_tag", "version") if meta.get(k) is not None}


def _read_lease(store) -> tuple[dict, dict] | None:
    """The lease object now: (its tag, :func:`_tag`; its record: ``{"unreadable": why}`` when it is
    not a lease pitwatch wrote), or None when there is none."""
    import obstore

    try:
        got = obstore.get(store, LEASE_OBJECT, options={"range": (0, 64 * 1024)})   # a lease is < 1 KB
        body = bytes(got.bytes())
    except FileNotFoundError:
        return None
    etag = _tag(got.meta)
    try:
        record = json.loads(body)
    except ValueError:
        return etag, {"unreadable": "not JSON"}
    if not isinstance(record, dict) or not isinstance(record.get("holder"), dict):
        return etag, {"unreadable": "not a pitwatch lease"}
    return etag, record


class _Lease:
    """This process's lease on one lake: the record it last wrote and its ETag, renewed by a thread."""

    def __init__(self, lake: Lake, store, holder: dict, seconds: float):
        self.lake, self.store, self.holder, self.seconds = lake, store, holder, seconds
        self.lease_id = uuid.uuid4().hex          # every record differs: an ETag never comes back (ABA)
        self.renewal = 0
        self.etag: dict = {}                      # the tag (ETag, version) of the record it last wrote
        self.renewed_at = 0.0                     # monotonic, taken before the put that succeeded
        self.lost: str | None = None              # why the lease is no longer ours
        self.put_lock = threading.Lock()          # one put at a time: renewal, holder update, release
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def body(self) -> bytes:
        now = time.time()
        return json.dumps({"holder": self.holder, "lease_id": self.lease_id, "renewal": self.renewal,
                           "lease_seconds": self.seconds, "written": _utc(now),
                           "expires": _utc(now + self.seconds)}, sort_keys=True).encode()

    def put(self, mode) -> None:
        """Write the lease with ``mode`` (``"create"`` or a tag, :func:`_tag`); obstore's errors pass."""
        import obstore

        sent = time.monotonic()
        self.renewal += 1
        result = obstore.put(self.store, LEASE_OBJECT, self.body(), mode=mode, use_multipart=False)
        self.etag, self.renewed_at = _tag(result), sent

    def wrote_it(self, sent: float) -> bool:
        """After a conditional put refused: is the lease object the record this process just sent?
        The store's client retries a put whose answer was lost, and the retry is refused against
        the very object the first attempt wrote; read back, it is ours (its ``lease_id`` and
        ``renewal``), and the lease is kept rather than called lost."""
        current = _read_lease(self.store)
        if current is None:
            return False
        tag, record = current
        if record.get("lease_id") != self.lease_id or record.get("renewal") != self.renewal:
            return False
        self.etag, self.renewed_at = tag, sent
        return True

    def renew(self) -> bool:
        """Replace the lease if it is still the one this process wrote; False (and :attr:`lost` said)
        when it is gone or another's."""
        from obstore.exceptions import PreconditionError

        with self.put_lock:
            if self.lost:
                return False
            sent = time.monotonic()
            try:
                self.put(self.etag)
                return True
            except (PreconditionError, FileNotFoundError):
                if self.wrote_it(sent):
                    return True
                self.lost = "the lease object was replaced or removed by another writer"
                return False

    def renew_forever(self, log) -> None:
        while not self.stop.wait(self.seconds / 4):
            try:
                if not self.renew():
                    log.error("the lake's lease was lost (%s): this writer commits nothing more", self.lost)
                    return
            except Exception as exc:      # noqa: BLE001 - the store unreachable: tried again, check_held judges
                log.warning("could not renew the lake's lease (%s: %s); trying again", type(exc).__name__,
                            _clean(exc, 200))

    def valid_for(self) -> float:
        """Seconds the lease surely holds from now (by this machine's monotonic clock)."""
        return self.renewed_at + self.seconds - time.monotonic()


def _expired(record: dict, seconds: float, seen_since: float) -> bool:
    """Whether a lease is dead: its expiry is :data:`MAX_SKEW` past on this machine's clock, or it has not
    changed for a whole lease length while this writer watched (``seen_since``, monotonic: no clock
    of another machine involved)."""
    length = record.get("lease_seconds")
    if isinstance(length, bool) or not isinstance(length, (int, float)) or not 1 <= length <= 3600:
        length = seconds           # an unreadable lease: judged by this writer's length
    if time.monotonic() - seen_since >= length:
        return True
    expires = _parse_utc(record.get("expires"))
    return expires is not None and time.time() > expires + MAX_SKEW


def _take_lease(lake: Lake, holder: dict, timeout: float, log, say_every: float, seconds: float) -> _Lease:
    """Create the lease object if absent, or replace a dead one (conditionally on the ETag read: of two
    waiters, one wins); wait for a live one, saying who holds it; :class:`LakeLocked` after ``timeout``."""
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    lease = _Lease(lake, object_store(lake.address), holder, seconds)
    start = time.monotonic()
    said = None
    seen: tuple[dict, float] | None = None        # the ETag watched, since when (monotonic)
    reached = False                               # the store answered once: a later fault is waited out
    try:
        while True:
            sent = time.monotonic()
            try:
                lease.put("create")
                break
            except AlreadyExistsError:
                reached = True
                if lease.wrote_it(sent):          # our own create, retried after its answer was lost
                    break
            except Exception:                     # noqa: BLE001 - a 409 of two racing creates, a passing fault
                if not reached:
                    raise                         # the store never answered: said at once (below)
            current = _read_lease(lease.store)
            reached = True
            etag, record = current if current is not None else ({}, {})
            shown = record.get("holder", record) if current is not None else None   # None: let go of meanwhile
            if seen is None or seen[0] != etag:
                seen = (etag, time.monotonic())
            if current is not None and _expired(record, seconds, seen[1]):
                try:
                    lease.put(etag)
                    log.warning("took over the lake's lease from %s: it was not renewed (expires %s)",
                                describe(shown), _clean(record.get("expires")))
                    break
                except (PreconditionError, FileNotFoundError):
                    continue                       # another writer renewed it, took it or let it go
                except Exception:                 # noqa: BLE001 - a passing fault: looked at again
                    pass
            waited = time.monotonic() - start
            if said is None or time.monotonic() - said >= say_every:
                log.info("waiting for the lake's lock, held by %s (gives up after %s: --lock-timeout)",
                         describe(shown), format_duration(timeout))
                said = time.monotonic()
            if waited >= timeout:
                raise LakeLocked(lake, shown, timeout)
            time.sleep(max(0.0, min(LEASE_POLL, timeout - waited)))
    except (LakeLocked, LakeError):
        raise
    except Exception as exc:                      # obstore's own errors (credentials, bucket, network)
        first_line = str(exc).split("\n", 1)[0]         # its first line: the rest is a Rust debug dump
        raise LakeError(f"cannot take the lake's lease {lake.address.rstrip('/')}/{LEASE_OBJECT}: "
                        f"{type(exc).__name__}: {_clean(first_line, 300)}") from None
    if said is not None:
        log.info("got the lake's lock after %s", format_duration(time.monotonic() - start))
    return lease


def _let_go(lease: _Lease) -> None:
    """Stop renewing and remove the lease object.  S3 has no conditional delete obstore offers, so
    the object is removed only after a renewal shows it is still ours: the delete follows within
    the lease's length, and no waiter takes over a lease before it has gone unrenewed for that long,
    so the delete cannot remove another writer's lease."""
    import obstore

    lease.stop.set()
    if lease.thread is not None:
        lease.thread.join()
    with contextlib.suppress(Exception):
        if lease.renew():
            with lease.put_lock:
                obstore.delete(lease.store, LEASE_OBJECT)


def check_held(lake: Lake) -> None:
    """Before a commit: :class:`LeaseLost` if this process took the lease of ``lake`` (an object store)
    and it is lost, or holds for less than half its length.  The lease is renewed here (a conditional
    replace on the ETag this process last wrote: one request a commit), so a lease taken over by
    another writer is found now, not at the next renewal, and the commit that follows has a whole
    lease length before any waiter may take it.  Nothing for a
    local lake (an ``flock`` is not lost while its process lives) nor for a process that holds no
    lease on it (a watcher, a Beam worker: the command's own process checks)."""
    if not on_object_store(lake):
        return
    with _guard:
        held = _held.get(_key(lake))
    lease = held.lease if held is not None else None
    if lease is None:
        return
    with contextlib.suppress(Exception):          # the store unreachable: judged below by the time left
        lease.renew()                             # one conditional put: still ours now, and for a lease length
    if lease.lost or lease.valid_for() < lease.seconds / 2:
        raise LeaseLost(f"the lake {lake}'s lease is no longer this writer's "
                        f"({lease.lost or 'not renewed for half its length: the store could not be reached'}); "
                        "nothing more was committed: run the command again")
