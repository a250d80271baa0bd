"""The state folder of a watcher: an atomic checkpoint and a delivery journal.

``STATE/checkpoint.json``
    Everything needed to go on exactly where the last checkpoint was taken:
    source positions (file inode/offset/line, Redis entry ids), the per-device
    order state (held lines, duplicate window), every table's
    ``TableReplay`` state, the ``SeqTracker`` state, the alert guard, the
    sinks' own state (file size, the lake's open batch, webhook queue) and, per
    sink, the ids of the alerts delivered (last two gaming days).  Written to
    ``checkpoint.json.partial-<pid>``, fsync'd, renamed over the old one
    (atomic on POSIX), the folder fsync'd: a reader or a restart sees the old
    checkpoint or the new one, never a mix.  Mode 0600 (a new state
    folder 0700): it holds the cards of the shoes not dealt yet.

``STATE/journal-<gen>.log``
    One line ``<sink>\t<finding_id>\t<gaming day>`` appended (and flushed to
    the OS) right after a sink accepted an alert.  The journal is *rotated*
    at each checkpoint's snapshot (:meth:`StateDir.rotate`: later records go
    to the next generation), so the snapshot holds every id of the older
    generations; once that checkpoint is renamed into place they are deleted
    (:meth:`StateDir.save`).  A restart reads every journal still there
    (older ones only repeat what the checkpoint has).  A ``kill -9`` loses
    nothing the OS has (page cache survives a killed process; ``--fsync``
    also survives a power cut, at a cost per alert).

``STATE/lock``
    ``flock``'d while a watcher runs: two watchers on one state folder refuse.

Snapshot and write are split (:class:`CheckpointWriter`): the service takes
the snapshot's instant on its loop, between two lines; a forked child
serialises that instant's state and writes it (:mod:`pitwatch.live.fork_snapshot`),
and a background thread waits for the child, renames and fsyncs — while
alerts go on.  One write at a time.  (The lake's alerts are not in the
checkpoint: they are in batch files of this folder, ``alerts-<n>.jsonl``,
committed by a process of their own: :mod:`pitwatch.live.alerts_committer`.)

On restart: the checkpoint, plus the journals' ids, plus the ids the
readable sinks find in their own output since the checkpoint, is the set of
alerts already delivered; the sources resume at the checkpoint's positions,
so every event after it is replayed and every finding after it regenerated
(same ``finding_id``: the engine is deterministic) and dropped per sink if
already delivered.  See docs/watch.md for the full argument.
"""
from __future__ import annotations

import fcntl
import logging
import os
import re
import threading
import time

import orjson

log = logging.getLogger("pitwatch")

VERSION = 1
# The checkpoint holds the shoes' cards not dealt yet (the alerts mask them): owner only.
PRIVATE_MODE = 0o600
_JOURNAL = re.compile(r"journal-(\d+)\.log$")


class StateDir:
    def __init__(self, path: str, fsync: bool = False) -> None:
        self.path = os.path.abspath(path)
        self.fsync = fsync
        os.makedirs(self.path, mode=0o700, exist_ok=True)
        self._lock = open(os.path.join(self.path, "lock"), "a+")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise ValueError(f"another pitwatch watch is using the state folder {self.path}") from None
        self.file = os.path.join(self.path, "checkpoint.json")
        gens = [-1]
        for name in os.listdir(self.path):
            if name.startswith("checkpoint.json.partial-"):
                os.unlink(os.path.join(self.path, name))   # a checkpoint killed half-written
            elif (m := _JOURNAL.fullmatch(name)):
                gens.append(int(m.group(1)))
        self.gen = max(gens) + 1       # this run's journal is a new generation
        self._journal = None

    @property
    def lock_fd(self) -> int:
        return self._lock.fileno()

    # --- checkpoint ----------------------------------------------------------
    def load(self) -> dict | None:
        if not os.path.exists(self.file):
            return None
        with open(self.file, "rb") as f:
            state = orjson.loads(f.read())
        if state.get("v") != VERSION:
            raise ValueError(f"{self.file}: checkpoint version {state.get('v')!r}, expected {VERSION}")
        return state

    def save(self, tables: dict[str, bytes], rest: bytes, gen: int | None = None) -> int:
        """Write the checkpoint atomically (pre-serialised JSON), then drop journals older than ``gen``.

        ``gen`` is the journal generation :meth:`rotate` started at the snapshot (default: rotate now).
        Safe to call from a thread other than the one journalling.  Returns the checkpoint's size.
        """
        if gen is None:
            gen = self.rotate()
        path = self.partial_path()
        size = self.write_partial(tables, rest, path)
        self.publish(path, gen)
        return size

    def partial_path(self, pid: int | None = None) -> str:
        """Where a checkpoint is written before it is renamed into place (by process ``pid``)."""
        return f"{self.file}.partial-{os.getpid() if pid is None else pid}"

    def write_partial(self, tables: dict[str, bytes], rest: bytes, path: str) -> int:
        """The checkpoint's bytes to ``path``, fsync'd (also from a forked child: no lock, no log)."""
        data = b"".join([b'{"v":%d,"tables":{' % VERSION,
                         b",".join(orjson.dumps(t) + b":" + blob for t, blob in sorted(tables.items())),
                         b'},"rest":', rest, b"}"])
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_MODE), "wb") as f:
            os.fchmod(f.fileno(), PRIVATE_MODE)   # also if a partial file of that name was there
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return len(data)

    def publish(self, path: str, gen: int) -> None:
        """Rename a written checkpoint into place (atomic), fsync the folder, drop the older journals."""
        os.replace(path, self.file)
        self._fsync_dir()
        for old, journal in self._journals():
            if old < gen:
                os.unlink(journal)   # every id in it is in the checkpoint just renamed

    def _fsync_dir(self) -> None:
        dfd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    # --- journal -------------------------------------------------------------
    def _journals(self) -> list[tuple[int, str]]:
        out = []
        for name in os.listdir(self.path):
            if name == "journal.log":
                out.append((-1, os.path.join(self.path, name)))   # written by an older version
            elif (m := _JOURNAL.fullmatch(name)):
                out.append((int(m.group(1)), os.path.join(self.path, name)))
        return sorted(out)

    def rotate(self) -> int:
        """Start a new journal generation (at a snapshot); returns it.  Called by the journalling thread."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        self.gen += 1
        return self.gen

    def record(self, sink: str, items: list[tuple[str, str]]) -> None:
        """Journal that ``sink`` accepted these (finding_id, gaming day) alerts."""
        if not items:
            return
        if self._journal is None:
            self._journal = open(os.open(os.path.join(self.path, f"journal-{self.gen:08d}.log"),
                                         os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_MODE), "ab")
            if self.fsync:
                self._fsync_dir()     # the new generation's name survives a power cut too
        self._journal.write(b"".join(f"{sink}\t{fid}\t{day}\n".encode() for fid, day in items))
        self._journal.flush()
        if self.fsync:
            os.fsync(self._journal.fileno())

    def read_journal(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for _gen, path in self._journals():
            with open(path, "rb") as f:
                for raw in f.read().decode("utf-8", "replace").splitlines():
                    parts = raw.split("\t")
                    if len(parts) == 3:        # a half-written last line is not a record
                        out.setdefault(parts[0], {})[parts[1]] = parts[2]
        return out

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
        self._lock.close()


class CheckpointWriter:
    """Writes snapshots in a background thread, one at a time (see the module doc).

    ``submit(job)`` runs ``job()`` (the slow part: wait for the child, fsync, rename) in a new
    thread; ``busy`` says one is running; ``wait()`` joins it and re-raises its error, as does
    ``check()`` once it is over — a failed checkpoint stops the service as it did when inline.
    """

    def __init__(self) -> None:
        # Tests only: a folder where write k waits for ``go-<k>`` (after creating ``waiting-<k>``)
        # and then creates ``done-<k>``, so a test can hold a checkpoint in flight deterministically.
        self.gate = os.environ.get("PITWATCH_CHECKPOINT_GATE")
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.last_seconds = 0.0
        self.written = 0

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def submit(self, job) -> None:
        self.wait()
        self._thread = threading.Thread(target=self._run, args=(job,), name="pitwatch-checkpoint", daemon=True)
        self._thread.start()

    def _run(self, job) -> None:
        k = self.written + 1
        if self.gate:
            open(os.path.join(self.gate, f"waiting-{k}"), "w").close()
            while not os.path.exists(os.path.join(self.gate, f"go-{k}")):
                time.sleep(0.01)
        t0 = time.perf_counter()
        try:
            job()
        except BaseException as exc:   # noqa: BLE001 - handed to the service's thread
            self._error = exc
        self.last_seconds = time.perf_counter() - t0
        self.written = k
        if self.gate:
            open(os.path.join(self.gate, f"done-{k}"), "w").close()

    def check(self) -> None:
        if self._error is not None:
            exc, self._error = self._error, None
            raise RuntimeError(f"checkpoint failed: {exc}") from exc

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.check()
