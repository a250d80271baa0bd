"""The lake's alerts, handed over by the loop in batch files and committed by a process of its own.

Why a process: the alerts commit (Parquet files, a Delta commit, a chained ``runs`` record, now and
then a compaction of a closed day) is Python and Arrow work of 20-60 ms, seconds for a compaction;
in a thread of the watcher it held the interpreter lock the loop needs, and the loop's longest
gap between two lines grew with it (``bench/alerts_commit.py``, ``docs/watch.md``, "Performance").
So the loop only hands over, and :func:`main` — ``python -m pitwatch.live.alerts_committer``,
started once by the watcher (:class:`Committer`) — commits, on another core.

**The hand-over** (:class:`LakeSink`, the watcher's sink of the table): every alert the loop sends
to the lake is appended, as one JSON line, to ``STATE/alerts-<n>.jsonl`` and flushed to the OS
*before* any other sink gets it (the service sends to the lake first), so an alert that reached
stdout or the alerts file is on disk for the lake even if the process is killed the next instant
(page cache survives a ``kill -9``; ``--fsync`` a power cut).  At most every ``--commit-every``
seconds, and at stop, the loop *seals* batch ``n`` (it never writes to it again; the next alert
opens ``n + 1``) and writes one line to the committer's pipe; the committer writes
``LAKE/alerts/gaming_day=D/<watch-id>-<n>.parquet`` and commits it
(:class:`pitwatch.live.alerts_table.AlertsTable`), then deletes the batch file and answers.

**Exactly once across kill -9.**  Batch ``n`` becomes the table's files named ``n`` and nothing
else, in one Delta commit: a batch is either committed (its names are in the log) or not (files of
that name not in the log are a killed commit's: deleted and written again).  At a restart the
committer, before anything else: waits for the state folder's ``commit.lock`` (a committer whose
watcher was killed finishes the commit in hand and exits at the end of its pipe), then
:meth:`pitwatch.live.alerts_table.AlertsTable.recover` from the lowest of the checkpoint's counter
and the batch files left: the ids its committed files hold (delivered), its uncommitted files
deleted; a batch file whose files are committed is deleted, every other one is committed again, in
order.  The watcher counts as delivered to the lake every id in the checkpoint, in the journal, in
a batch file left and in a committed file from that counter on: a regenerated alert is never
handed over twice, and a live-only one (provisional, cleared, silence) that the replay does not
raise again is still in its batch file.

The pipe: one JSON object a line.  Watcher → committer: the start (lake, watch id, state folder,
the checkpoint's counter and any alerts an older checkpoint kept pending, the device registry to
record), then ``{"commit": n, "clock_day": D}`` per sealed batch (``"last": true`` at stop: no compaction
after it), ``{"stop": true}``.  Committer →
watcher: ``{"ready": next n, "ids": {...}, "pending": [...], "batches": [...]}``, then
``{"committed": n, "rows": r, "seconds": s}`` per batch, or ``{"error": text}`` (it then exits 1:
the watcher stops with that error, as a failed checkpoint does).
"""
from __future__ import annotations

import fcntl
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import orjson

from pitwatch.lake import Lake

log = logging.getLogger("pitwatch")

BATCH = re.compile(r"alerts-(\d{8,})\.jsonl$")
LOCK = "commit.lock"
READY_TIMEOUT = 600.0     # the committer's start: a restart on a lake whose recovery reads many files
STOP_WAIT = 10.0          # at stop, the longest wait for the last commits, then for the committer to end


def batch_path(state_dir: str, n: int) -> str:
    return os.path.join(state_dir, f"alerts-{n:08d}.jsonl")


def batches_in(state_dir: str) -> list[int]:
    """The batch numbers whose files are in the state folder, in order."""
    return sorted(int(m.group(1)) for name in os.listdir(state_dir) if (m := BATCH.fullmatch(name)))


def read_batch(path: str) -> list[dict]:
    """The alerts of a batch file; a line that is not a JSON object (never written whole) is skipped."""
    out = []
    with open(path, "rb") as f:
        for raw in f.read().splitlines():
            try:
                rec = orjson.loads(raw)
            except orjson.JSONDecodeError:
                log.warning("alerts: %s: a line that is not a whole alert skipped (written when the watcher "
                            "was killed: its alert is raised again)", path)
                continue
            if isinstance(rec, dict) and isinstance(rec.get("finding_id"), str):
                out.append(rec)
    return out


def cut_partial_line(path: str) -> None:
    """Cut a half-written last line (a kill in the middle of an append)."""
    with open(path, "r+b") as f:
        data = f.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            log.warning("alerts: %s: removing a half-written last alert (it is raised again)", path)
            f.truncate(end)


class Committer:
    """The committer process, as the watcher sees it: a pipe to write to, the answers read by a thread."""

    def __init__(self, start: dict) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "pitwatch.live.alerts_committer"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.answers: queue.SimpleQueue = queue.SimpleQueue()
        self._reader = threading.Thread(target=self._read, name="pitwatch-committer", daemon=True)
        self._reader.start()
        self._relay = threading.Thread(target=self._relay_log, name="pitwatch-committer-log", daemon=True)
        self._relay.start()
        self.tell(start)

    def _relay_log(self) -> None:
        """The committer's log records, through the watcher's own ``pitwatch`` logger: its ``--quiet``,
        ``--log-file`` and format, as if the watcher had logged them (the committer writes each record
        as one JSON line on its stderr: :class:`_RecordLines`).  Anything else it prints (a crash
        before its logging is set up) is logged at INFO, a line at a time."""
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            try:
                rec = orjson.loads(raw)
                level, message = int(rec["level"]), str(rec["message"])
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                log.info("alerts committer: %s", raw.decode("utf-8", "replace").rstrip())
                continue
            log.log(level, "%s", message)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                self.answers.put(orjson.loads(raw))
            except orjson.JSONDecodeError:
                self.answers.put({"error": f"the alerts committer said {raw[:200]!r}"})
        self.answers.put(None)          # its end

    def tell(self, message: dict) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(orjson.dumps(message) + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass                        # it ended: its answers say why

    def answer(self, timeout: float | None) -> dict | None:
        """The next answer (``{"gone": code}`` once it ended); None when none came within ``timeout``."""
        try:
            got = self.answers.get(timeout=timeout) if timeout is None or timeout > 0 else self.answers.get_nowait()
        except queue.Empty:
            return None
        if got is None:
            self.answers.put(None)      # every later call says it too
            return {"gone": self.proc.wait()}
        return got

    def stop(self, timeout: float) -> None:
        self.tell({"stop": True})
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("alerts: the committer (%d) did not end within %.0f s of the stop: killed (a commit it "
                        "was making is made at the next start, a compaction at a later commit)", self.proc.pid,
                        timeout)
            self.proc.kill()
            self.proc.wait()


class LakeSink:
    """The watcher's sink of the lake's ``alerts`` table: batch files in the state folder, committed by
    the committer process (see the module doc).  ``send`` appends (never waits for the lake);
    :meth:`seal` hands a batch over; :meth:`poll` collects the answers and raises a failure."""

    def __init__(self, lake: Lake, watch_id: str, state_dir: str, registry: dict | None = None,
                 fsync: bool = False, compaction: bool = True) -> None:
        self.name = f"lake:{watch_id}"
        self.lake, self.watch_id, self.state_dir = lake, watch_id, state_dir
        self.registry, self.fsync, self.compaction = registry, fsync, compaction
        self.n = 0                      # the open batch
        self.size = 0                   # alerts in the open batch
        self.in_flight: list[int] = []  # batches handed over, not committed yet
        self.commits = 0                # batches committed by this process's committer
        self.last_seconds = 0.0
        self.clock_day = None           # () -> the gaming day the clock is in (compaction: only days the clock left)
        self.committer: Committer | None = None
        self._file = None

    # --- the sink ------------------------------------------------------------------
    def send(self, records: list[dict]) -> list[str]:
        if self._file is None:
            self._file = open(os.open(batch_path(self.state_dir, self.n), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                                      0o600), "ab")
            if self.fsync:          # the new file's name too: the journal may say "sent" after a power cut
                folder = os.open(self.state_dir, os.O_RDONLY)
                try:
                    os.fsync(folder)
                finally:
                    os.close(folder)
        self._file.write(b"".join(orjson.dumps(r) + b"\n" for r in records))
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
        self.size += len(records)
        return [r["finding_id"] for r in records]

    def state(self) -> dict:
        """The open batch's number: a restart reads the table's files from there on (and the batch files)."""
        return {"n": self.n}

    def recover(self, state: dict) -> dict:
        """Start the committer; the ids (and days) the lake holds or will hold beyond the checkpoint:
        in its files from the checkpoint's counter on, and in the batch files left (their commits are
        handed over now).  Alerts an older checkpoint kept pending are put in the open batch."""
        self.committer = Committer({"lake": self.lake.location, "watch_id": self.watch_id,
                                    "state_dir": self.state_dir, "n": state.get("n"),
                                    "pending": state.get("pending", []), "registry": self.registry,
                                    "compaction": self.compaction})
        self.registry = None
        ready = self._wait_for("ready", READY_TIMEOUT)
        ids: dict[str, str] = dict(ready["ids"])
        for k in ready["batches"]:      # not committed: committed now, in order
            path = batch_path(self.state_dir, k)
            cut_partial_line(path)
            ids.update({r["finding_id"]: r.get("gaming_day") or "" for r in read_batch(path)})
            self._hand_over(k)
        self.n = max(ready["ready"], self.n)
        pending = [r for r in ready["pending"] if r.get("finding_id") not in ids]
        if pending:
            self.send(pending)
            ids.update({r["finding_id"]: r.get("gaming_day") or "" for r in pending})
        return ids

    # --- the hand-over ---------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return bool(self.in_flight)

    def seal(self, force: bool = False) -> bool:
        """Hand the open batch over (when it holds an alert, and no commit is in flight unless
        ``force``: at stop).  True when one was handed over."""
        self.poll()
        if self.size == 0 or (self.busy and not force):
            return False
        if self._file is not None:
            self._file.close()
            self._file = None
        self._hand_over(self.n, last=force)
        self.n += 1
        self.size = 0
        return True

    def _hand_over(self, n: int, last: bool = False) -> None:
        """``last``: the commit at stop, which the committer makes without compacting after it (the
        stop waits for its answer; the next commit's compaction does it)."""
        assert self.committer is not None
        self.in_flight.append(n)
        day = self.clock_day() if self.clock_day is not None else None
        self.committer.tell({"commit": n, "clock_day": day, **({"last": True} if last else {})})

    def poll(self, timeout: float | None = 0) -> None:
        """Collect the committer's answers (waiting up to ``timeout`` for one); RuntimeError if it failed."""
        if self.committer is None:
            return
        while (got := self.committer.answer(timeout)) is not None:
            self._take(got)
            timeout = 0

    def _take(self, got: dict) -> None:
        if "committed" in got:
            if got["committed"] in self.in_flight:
                self.in_flight.remove(got["committed"])
            self.commits += 1
            self.last_seconds = float(got.get("seconds") or 0.0)
        elif "error" in got:
            raise RuntimeError(f"the alerts commit failed: {got['error']}")
        elif "gone" in got:
            raise RuntimeError(f"the alerts committer ended ({got['gone']}) with batches to commit: "
                               f"{self.in_flight}" if self.in_flight else
                               f"the alerts committer ended ({got['gone']})")

    def _wait_for(self, key: str, timeout: float) -> dict:
        assert self.committer is not None
        end = time.monotonic() + timeout
        while True:
            got = self.committer.answer(max(0.001, end - time.monotonic()))
            if got is None:
                raise RuntimeError(f"the alerts committer did not start within {timeout:.0f} s")
            if key in got:
                return got
            if "error" in got:
                raise RuntimeError(f"the alerts table cannot be opened: {got['error']}")
            self._take(got)

    def wait(self, timeout: float = STOP_WAIT) -> bool:
        """Until every batch handed over is committed (at stop), for at most ``timeout`` seconds;
        False (warned) when some are not: their batch files wait for the next start."""
        end = time.monotonic() + timeout
        while self.in_flight and time.monotonic() < end:
            self.poll(timeout=min(0.5, max(0.001, end - time.monotonic())))
        if self.in_flight:
            log.warning("alerts: batch(es) %s not committed within %.0f s of the stop: committed at the next "
                        "start", ", ".join(map(str, self.in_flight)), timeout)
        return not self.in_flight

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.committer is not None:
            self.committer.stop(STOP_WAIT)
            self.committer = None


# --- the committer process ----------------------------------------------------------------------

def _answer(message: dict) -> None:
    sys.stdout.buffer.write(orjson.dumps(message) + b"\n")
    sys.stdout.buffer.flush()


def _start(start: dict):
    """Lock, recover, and the ready answer (see the module doc)."""
    from pitwatch.live.alerts_table import AlertsTable

    state_dir = start["state_dir"]
    lock = open(os.path.join(state_dir, LOCK), "a+")
    fcntl.flock(lock, fcntl.LOCK_EX)            # a committer left by a killed watcher finishes first
    table = AlertsTable(Lake.at(start["lake"]), start["watch_id"], compaction=bool(start.get("compaction", True)))
    table.registry = start.get("registry")
    left = batches_in(state_dir)
    low = 0 if start.get("n") is None else min([int(start["n"]), *left])
    ids = table.recover({"n": low, "pending": start.get("pending") or []})
    todo = []
    for k in left:
        if k in table.recovered:                # committed before the kill: delivered
            os.unlink(batch_path(state_dir, k))
        else:
            todo.append(k)
    _answer({"ready": max([table.n, *(k + 1 for k in left)]), "ids": ids, "pending": table.buffer,
             "batches": todo})
    table.buffer = []
    return table, lock


def _commit(table, state_dir: str, n: int, clock_day: str | None) -> dict:
    """Batch ``n`` committed (its file deleted then); the answer.  The compaction comes after the
    answer (:func:`main`): the watcher's stop waits for the commit only."""
    t0 = time.perf_counter()
    path = batch_path(state_dir, n)
    records = read_batch(path)
    if clock_day is not None:
        table.clock_day = lambda: clock_day
    if records:
        table.n, table.buffer = n, records
        table.write(table.take()[0], compact=False)
    os.unlink(path)
    return {"committed": n, "rows": len(records), "seconds": round(time.perf_counter() - t0, 4)}


class _RecordLines(logging.Formatter):
    """A log record as one JSON line (level, message with its traceback) for the watcher to log again
    (:meth:`Committer._relay_log`)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        return orjson.dumps({"level": record.levelno, "message": message}).decode()


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the watcher stops it (a stop signal to the
    signal.signal(signal.SIGTERM, signal.SIG_IGN)    # process group must not cut a commit short)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RecordLines())
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)                      # the watcher's logger decides what is shown
    first = sys.stdin.buffer.readline()
    if not first:
        return 0
    start = orjson.loads(first)
    try:
        table, _lock = _start(start)
        for raw in sys.stdin.buffer:            # its end: the watcher is gone (stopped or killed)
            message = orjson.loads(raw)
            if message.get("stop"):
                break
            _answer(_commit(table, start["state_dir"], int(message["commit"]), message.get("clock_day")))
            if table.compaction and not message.get("last"):    # at stop: the next start's commits do it
                table.compact()                 # a kill in the middle: the restart deletes its file
    except Exception as exc:   # noqa: BLE001 - told to the watcher, which stops with it
        log.exception("alerts: the commit failed")
        _answer({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
