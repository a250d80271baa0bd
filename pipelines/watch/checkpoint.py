"""The state folder of a watcher: an atomic checkpoint and a delivery journal.

``STATE/checkpoint.json``
    Everything needed to go on exactly where the last checkpoint was taken:
    source positions (file inode/offset/line, Redis entry ids), the per-device
    order state (held lines, duplicate window), every table's
    ``TableReplay.state()``, the ``SeqTracker`` state, the alert guard, the
    sinks' own state (file size, lake batch counter, webhook queue) and, per
    sink, the ids of the alerts delivered (last two gaming days).  Written to
    ``checkpoint.json.partial-<pid>``, fsync'd, renamed over the old one
    (atomic on POSIX), the folder fsync'd: a reader or a restart sees the old
    checkpoint or the new one, never a mix.

``STATE/journal.log``
    One line ``<sink>\\t<finding_id>\\t<gaming day>`` appended (and flushed to
    the OS) right after a sink accepted an alert; emptied after each
    checkpoint, which then holds those ids.  A ``kill -9`` loses nothing the
    OS has (page cache survives a killed process; ``--fsync`` also survives a
    power cut, at a cost per alert).

``STATE/lock``
    ``flock``'d while a watcher runs: two watchers on one state folder refuse.

On restart: the checkpoint, plus the journal's ids, plus the ids the
readable sinks find in their own output since the checkpoint, is the set of
alerts already delivered; the sources resume at the checkpoint's positions,
so every event after it is replayed and every finding after it regenerated
(same ``finding_id``: the engine is deterministic) and dropped per sink if
already delivered.  See docs/watch.md for the full argument.
"""
from __future__ import annotations

import fcntl
import os

import orjson

VERSION = 1


class StateDir:
    def __init__(self, path: str, fsync: bool = False) -> None:
        self.path = os.path.abspath(path)
        self.fsync = fsync
        os.makedirs(self.path, exist_ok=True)
        self._lock = open(os.path.join(self.path, "lock"), "a+")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise ValueError(f"another pitwatch watch is using the state folder {self.path}") from None
        self.file = os.path.join(self.path, "checkpoint.json")
        self.journal_path = os.path.join(self.path, "journal.log")
        for name in os.listdir(self.path):
            if name.startswith("checkpoint.json.partial-"):
                os.unlink(os.path.join(self.path, name))   # a checkpoint killed half-written
        self._journal = None

    # --- checkpoint ----------------------------------------------------------
    def load(self) -> dict | None:
        if not os.path.exists(self.file):
            return None
        with open(self.file, "rb") as f:
            state = orjson.loads(f.read())
        if state.get("v") != VERSION:
            raise ValueError(f"{self.file}: checkpoint version {state.get('v')!r}, expected {VERSION}")
        return state

    def save(self, tables: dict[str, bytes], rest: dict) -> int:
        """Write the checkpoint atomically (tables as pre-serialised JSON). Returns its size."""
        parts = [b'{"v":%d,"tables":{' % VERSION,
                 b",".join(orjson.dumps(t) + b":" + blob for t, blob in sorted(tables.items())),
                 b'},"rest":', orjson.dumps(rest), b"}"]
        data = b"".join(parts)
        tmp = f"{self.file}.partial-{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.file)
        dfd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        self._truncate_journal()
        return len(data)

    # --- journal -------------------------------------------------------------
    def record(self, sink: str, items: list[tuple[str, str]]) -> None:
        """Journal that ``sink`` accepted these (finding_id, gaming day) alerts."""
        if not items:
            return
        if self._journal is None:
            self._journal = open(self.journal_path, "ab")
        self._journal.write(b"".join(f"{sink}\t{fid}\t{day}\n".encode() for fid, day in items))
        self._journal.flush()
        if self.fsync:
            os.fsync(self._journal.fileno())

    def read_journal(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        if not os.path.exists(self.journal_path):
            return out
        with open(self.journal_path, "rb") as f:
            for raw in f.read().decode("utf-8", "replace").splitlines():
                parts = raw.split("\t")
                if len(parts) == 3:        # a half-written last line is not a record
                    out.setdefault(parts[0], {})[parts[1]] = parts[2]
        return out

    def _truncate_journal(self) -> None:
        if self._journal is None:
            self._journal = open(self.journal_path, "ab")
        self._journal.truncate(0)
        self._journal.flush()

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
        self._lock.close()
