"""Live sources: growing JSONL files (and folders where new files appear), Redis Streams.

A source hands out :class:`Line` records (raw bytes without the line end, a
``file`` label and a 1-based ``line`` number, as the nightly batch numbers
them) and keeps its read position as plain data (``position()`` /
``restore()``) so the checkpoint can resume it exactly.  Reads never block:
the service polls every source in turn and sleeps only when all were quiet.

Files (:class:`FileFollower`)
    INPUT is a file, a folder (every ``*.jsonl`` / ``*.jsonl.gz`` under it,
    hidden files excepted) or a glob; folders and globs are looked at again
    every ``scan_every`` seconds, so a device's new file is picked up.  A
    ``.jsonl`` file is followed: only complete lines (ending in ``\\n``) are
    read, a half-written last line waits for its end.  A ``.jsonl.gz`` file
    is read once, to its end, when it appears (a gzip member is only readable
    once it is finished: write it under another name and rename it); a
    damaged one (bad header or CRC, cut short) gives the lines before the
    damage, is logged and listed in ``damaged`` (the stop summary counts it),
    raises ``INPUT_DAMAGED`` (``take_damaged``: the service's alert, the
    batch's finding) and is not read again unless replaced.  A file whose inode changes or
    that shrinks was replaced: it is read again from the start (its lines
    are new deliveries; duplicates are dropped by event_id).
    Memory is bounded whatever the bytes: a file is read :data:`CHUNK` bytes
    at a time, at most ``max_bytes`` per turn; a line longer than
    :data:`pitwatch.schemas.limits.MAX_LINE_BYTES` is handed on as its first
    ``MAX_LINE_BYTES + 1`` bytes (the decoder rejects it: "line longer than
    …") as soon as that many bytes without a line end are there, and the
    rest of it is skipped up to its line end; the lines after it are read.
    Position: ``{path: [inode, byte offset, physical lines read, state]}``
    (offset: into the decompressed bytes of a gzip file; state: reading,
    skipping the rest of an over-long line, or finished), and the damaged
    gzip files.

Redis Streams (:class:`RedisStreamSource`)
    ``redis://host:port/db?stream=NAME&stream=pit:*``: each stream entry holds
    one event line in its field ``event`` (or its only field).  Names with
    ``*`` are patterns, looked up again every ``scan_every`` seconds like a
    folder.  Position: the last entry id read per stream, so a restart reads
    exactly what follows (Redis keeps the entries; trim them by age with
    ``XADD … MINID``, not by count, so a stopped watcher does not lose any).
    A server that is down, restarting or refusing **at the start** is the
    user's mistake (:meth:`RedisStreamSource.check`: ``watch`` says so in one
    ``Error:`` line, exit 2, before it writes anything).  Later it is not the
    end of the watcher: one warning, tries again after 0.5 s doubling to 30 s
    (the status line shows the error; :class:`pitwatch.live.silence.SourceWatch`
    raises ``SOURCE_LOST``), one info line when it reads again; the entries
    wait in Redis meanwhile.  A password in the URI is never shown: messages,
    alerts and the status line name the server as :attr:`RedisStreamSource.shown`
    (``redis://:***@host:port/db``).
"""
from __future__ import annotations

import dataclasses
import glob
import logging
import os
import time
import urllib.parse
import zlib

from pitwatch.schemas.limits import MAX_LINE_BYTES

log = logging.getLogger("pitwatch")

SUFFIXES = (".jsonl", ".jsonl.gz")
CHUNK = MAX_LINE_BYTES + 1        # bytes read at a time: a chunk without a line end is an over-long line
GZIP_PIECE = 64 << 10             # decompressed bytes read at a time from a gzip file
READING, SKIPPING, FINISHED = 0, 1, 2   # a file's state: lines; the rest of an over-long line; read (gzip)
ANNOUNCE_NAMES = 5                # new files named on stderr per look; more are counted in one line


@dataclasses.dataclass(slots=True)
class Line:
    raw: bytes
    file: str
    line: int


class FileFollower:
    """Follow files, folders and globs (see the module doc)."""

    def __init__(self, inputs: list[str], scan_every: float = 0.5, max_bytes: int = 4 << 20) -> None:
        self.inputs = list(inputs)
        self.scan_every = scan_every
        self.max_bytes = max(max_bytes, CHUNK)   # read per file per turn (a turn stays short)
        self.pos: dict[str, list] = {}      # path -> [inode, offset, lines, state]
        self.damaged: dict[str, str] = {}   # gzip files that could not be read to their end: why
        self.newly_damaged: list[str] = []  # found damaged since the service last took them (take_damaged)
        self._next_scan = 0.0
        self._handles: dict[str, tuple] = {}  # path -> (inode, file object)
        self._scanned = False               # the first look is announced as "watching N file(s)"
        self.new = 0                        # files that appeared after the first look (announced once each)
        self.gone: set[str] = set()         # files that went away (announced once; position kept)
        for p in self.inputs:
            if not any(ch in p for ch in "*?[") and not os.path.exists(p):
                raise FileNotFoundError(2, "no such file or folder", p)

    def describe(self) -> str:
        self._scan()
        return f"{len(self.pos)} file(s) now under {', '.join(self.inputs)}"

    def position(self) -> dict:
        return {"files": {p: list(v) for p, v in self.pos.items()}, "damaged": dict(self.damaged)}

    def restore(self, position: dict) -> None:
        self.pos = {p: _position(p, v) for p, v in position.get("files", {}).items()}
        self.damaged = dict(position.get("damaged", {}))

    def _scan(self) -> None:
        new: list[str] = []
        for p in self.inputs:
            if any(ch in p for ch in "*?["):
                found = [m for m in glob.glob(p, recursive=True) if os.path.isfile(m)]
            elif os.path.isdir(p):
                found = [os.path.join(root, f) for root, _d, names in os.walk(p) for f in names
                         if not f.startswith(".")]
            else:
                found = [p]
            for f in found:
                if f.endswith(SUFFIXES):
                    f = os.path.abspath(f)
                    if f not in self.pos:
                        self.pos[f] = [None, 0, 0, READING]
                        new.append(f)
        if self._scanned and new:
            self._announce_new(new)
        self._scanned = True

    def _announce_new(self, new: list[str]) -> None:
        """Each new file once, by name (at most :data:`ANNOUNCE_NAMES` a look; the rest counted)."""
        self.new += len(new)
        for f in new[:ANNOUNCE_NAMES]:
            log.info("new file: %s", f)
        if len(new) > ANNOUNCE_NAMES:
            log.info("… and %d more new file(s) under %s", len(new) - ANNOUNCE_NAMES, ", ".join(self.inputs))

    def status(self) -> dict:
        """For the status line: files, new, damaged, gone; bytes not read yet and since when they wait."""
        unread, since = 0, None
        for path, pos in self.pos.items():
            if pos[3] == FINISHED or path in self.gone:
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            left = st.st_size - pos[1] if not path.endswith(".gz") else (st.st_size if pos[1] == 0 else 0)
            if left > 0:
                unread += left
                since = st.st_mtime if since is None else min(since, st.st_mtime)
        return {"what": "files", "files": len(self.pos), "new": self.new, "damaged": len(self.damaged),
                "gone": len(self.gone), "unread": unread, "unread_unit": "B", "since": since}

    def read(self) -> list[Line]:
        now = time.monotonic()
        if now >= self._next_scan:
            self._scan()
            self._next_scan = now + self.scan_every
        out: list[Line] = []
        for path in sorted(self.pos):
            try:
                self._read_file(path, out)
            except FileNotFoundError:
                self._close(path)  # gone for now (rotated away): keep its position
                if path not in self.gone:
                    self.gone.add(path)
                    log.warning("%s is gone: its position is kept, it is read on if it comes back", path)
                continue
            if path in self.gone:
                self.gone.discard(path)
                log.info("%s is back", path)
        return out

    def take_damaged(self) -> list[str]:
        """The files found damaged since the last call (the service raises INPUT_DAMAGED for each,
        after the lines read before the damage)."""
        found, self.newly_damaged = self.newly_damaged, []
        return found

    def _close(self, path: str) -> None:
        h = self._handles.pop(path, None)
        if h is not None:
            h[1].close()

    def _read_file(self, path: str, out: list[Line]) -> None:
        pos = self.pos[path]
        st = os.stat(path)
        gz = path.endswith(".gz")
        if pos[0] is not None and (st.st_ino != pos[0] or (not gz and st.st_size < pos[1])):
            log.warning("%s was replaced or truncated: reading it again from the start", path)
            self._close(path)
            self.damaged.pop(path, None)
            pos[:] = [st.st_ino, 0, 0, READING]
        pos[0] = st.st_ino
        if pos[3] == FINISHED or (not gz and st.st_size <= pos[1]) or st.st_size == 0:
            return
        h = self._handles.get(path)
        if h is None or h[0] != st.st_ino:
            self._close(path)
            h = (st.st_ino, GzipLines(path) if gz else open(path, "rb"))
            self._handles[path] = h
        try:
            self._read_lines(path, pos, h[1], None if gz else st.st_size, out)
        except FileNotFoundError:
            raise
        except (OSError, EOFError, zlib.error) as exc:
            if not gz:
                raise
            # a damaged gzip file (bad header, bad CRC, cut short): the lines before the damage
            # were read; the rest cannot be, and the file is not read again unless it is replaced
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            log.warning("%s is damaged (%s): read up to line %d, the rest cannot be read", path, why, pos[2])
            self.damaged[path] = why
            self.newly_damaged.append(path)
            pos[3] = FINISHED
            self._close(path)

    def _read_lines(self, path: str, pos: list, f, size: int | None, out: list[Line]) -> None:
        """Read complete lines from ``pos`` on, at most ``max_bytes`` this turn, in bounded memory.

        A line longer than :data:`pitwatch.schemas.limits.MAX_LINE_BYTES` is handed on as its first
        ``MAX_LINE_BYTES + 1`` bytes (the decoder rejects it: too long) as soon as that many bytes
        without a line end are there; the rest of it is skipped up to its line end (state
        ``SKIPPING``, kept in the position: a restart goes on skipping).  ``size`` None: a gzip
        file, read to its end (its last line needs no line end)."""
        budget = self.max_bytes
        while budget > 0:
            want = CHUNK if size is None else min(size - pos[1], CHUNK)
            if want <= 0:
                return
            if f.tell() != pos[1]:
                f.seek(pos[1])
            data = f.read(want)
            if not data:
                if size is None:           # the end of a gzip file: its last line without '\n'
                    pos[3] = FINISHED
                    self._close(path)
                return
            budget -= len(data)
            if pos[3] == SKIPPING:          # the rest of an over-long line: up to its line end
                nl = data.find(b"\n")
                pos[1] += len(data) if nl < 0 else nl + 1
                if nl >= 0:
                    pos[3] = READING
                continue
            end = data.rfind(b"\n")
            if end >= 0:
                self._split(path, pos, data[:end + 1], out)
                pos[1] += end + 1
                continue
            if len(data) > MAX_LINE_BYTES:  # no line end in more than a line may hold
                pos[2] += 1
                out.append(Line(data[:MAX_LINE_BYTES + 1], path, pos[2]))
                log.warning("%s line %d is longer than %d bytes: rejected, the rest of it skipped",
                            path, pos[2], MAX_LINE_BYTES)
                pos[1] += len(data)
                pos[3] = SKIPPING
                continue
            if size is None and len(data) < want:   # gzip: the file ends in a line without '\n'
                if f.damage is not None:
                    raise f.damage                  # … or the damage cut that line: it is lost
                self._split(path, pos, data + b"\n", out)
                pos[1] += len(data)
                continue
            return  # an incomplete line: it waits for its end

    @staticmethod
    def _split(path: str, pos: list, data: bytes, out: list[Line]) -> None:
        parts = data.split(b"\n")
        parts.pop()  # after the last '\n'
        n = pos[2]
        for raw in parts:
            n += 1
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if raw.strip():
                out.append(Line(raw[:MAX_LINE_BYTES + 1], path, n))
        pos[2] = n

    def close(self) -> None:
        for path in list(self._handles):
            self._close(path)


class GzipLines:
    """A gzip file's decompressed bytes (members one after the other) that hands out every byte
    decompressed before a damage, and only then raises it (``gzip.GzipFile`` loses the bytes of the
    read that meets the damage).  CRC and length of each member are checked (zlib)."""

    def __init__(self, path: str) -> None:
        self._raw = open(path, "rb")
        self._z = zlib.decompressobj(wbits=31)
        self._buf = bytearray()
        self._last = b""               # the last bytes handed out (a seek back stays inside them)
        self._offset = 0               # decompressed bytes handed out
        self._damage: BaseException | None = None
        self._started = False          # bytes of the current member seen
        self._done = False

    def tell(self) -> int:
        return self._offset

    @property
    def damage(self) -> BaseException | None:
        """The damage met after the bytes still to hand out, if any."""
        return self._damage

    def seek(self, offset: int) -> None:
        """Back into the last read (its incomplete last line is read again), or forward (a restart:
        read and drop up to ``offset``)."""
        start = self._offset - len(self._last)
        if start <= offset < self._offset:
            self._buf[:0] = self._last[offset - start:]
            self._last = self._last[:offset - start]
            self._offset = offset
            return
        while self._offset < offset:
            if not self.read(min(CHUNK, offset - self._offset)):
                return

    def _fill(self, want: int) -> None:
        while len(self._buf) < want and not self._done and self._damage is None:
            raw = self._z.unused_data if self._z.eof else self._raw.read(GZIP_PIECE)
            if self._z.eof:
                if not raw:
                    raw = self._raw.read(GZIP_PIECE)
                    if not raw:
                        self._done = True
                        return
                self._z = zlib.decompressobj(wbits=31)   # the next member
            elif not raw:
                if self._started:
                    self._damage = EOFError("the file ends inside a gzip member (cut short)")
                else:
                    self._done = True
                return
            try:
                self._buf += self._z.decompress(raw)
                self._started = True
            except zlib.error as exc:
                self._damage = exc

    def read(self, n: int) -> bytes:
        self._fill(n)
        if not self._buf and self._damage is not None:
            raise self._damage
        out = bytes(self._buf[:n])
        del self._buf[:n]
        self._offset += len(out)
        self._last = out
        return out

    def close(self) -> None:
        self._raw.close()


def _position(path: str, v: list) -> list:
    """A file's position from a checkpoint (older ones had no state: a gzip file read was finished)."""
    v = list(v)
    if len(v) == 3:
        v.append(FINISHED if path.endswith(".gz") and v[1] > 0 else READING)
    return v


RETRY_FIRST, RETRY_MAX = 0.5, 30.0    # seconds between tries to read a Redis server that is down


class InputUnreachable(ValueError):
    """An input cannot be read at the start (a Redis server down or refusing): the user's mistake, exit 2."""


class RedisStreamSource:
    """Read Redis Streams from a ``redis://…?stream=NAME`` URI (see the module doc)."""

    def __init__(self, uri: str, scan_every: float = 0.5, count: int = 2000) -> None:
        import redis
        parts = urllib.parse.urlsplit(uri)
        query = urllib.parse.parse_qs(parts.query)
        self.names = query.pop("stream", [])
        if not self.names:
            raise ValueError(f"{uri}: name the stream(s) to read, e.g. {uri.split('?')[0]}?stream=pit:events")
        self.field = (query.pop("field", [None]))[0]
        base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        self.label = base                   # the checkpoint's key of its position (as given)
        self.shown = _without_password(parts)   # what messages, alerts and the status line name
        self.client = redis.Redis.from_url(base, socket_timeout=10)
        self._errors = redis.RedisError     # a server down, restarting, loading, refusing: retried
        self.scan_every = scan_every
        self.count = count
        self.last: dict[str, list] = {}     # stream -> [last id, entries read]
        self._next_scan = 0.0
        self._scanned = False               # streams found at the first look are not announced
        self.new = 0
        self.failing_since: float | None = None   # time.time() of the first failure of this outage
        self.error: str | None = None       # why the last look failed (None: it read)
        self._retry_at = 0.0
        self._backoff = RETRY_FIRST

    def describe(self) -> str:
        return f"{len(self.last)} Redis stream(s) at {self.shown}"

    def check(self) -> None:
        """:class:`InputUnreachable` naming the server when it does not answer now (down, refusing the
        connection or the password, still loading): at the start that is a mistake to say at once, not
        an outage to wait out (issue 41: ``watch`` exited 0 with ``0 lines``)."""
        try:
            self.client.ping()
        except self._errors as exc:
            raise InputUnreachable(f"cannot reach {self.shown}: {_why(exc)}; start it, or correct the "
                                   "address, database or password") from None

    def position(self) -> dict:
        return {"streams": {s: list(v) for s, v in self.last.items()}}

    def restore(self, position: dict) -> None:
        self.last = {s: list(v) for s, v in position.get("streams", {}).items()}

    def _scan(self) -> None:
        new = []
        for name in self.names:
            if "*" in name or "?" in name:
                for key in self.client.scan_iter(match=name, _type="STREAM"):
                    if key.decode() not in self.last:
                        self.last[key.decode()] = ["0-0", 0]
                        new.append(key.decode())
            elif name not in self.last:
                self.last[name] = ["0-0", 0]
        if self._scanned and new:
            self.new += len(new)
            for name in new[:ANNOUNCE_NAMES]:
                log.info("new stream: %s/%s", self.shown, name)
            if len(new) > ANNOUNCE_NAMES:
                log.info("… and %d more new stream(s) at %s", len(new) - ANNOUNCE_NAMES, self.shown)
        self._scanned = True

    def status(self) -> dict:
        """For the status line: streams, new; entries not read yet (counted to 1,000) and since when
        the first of them waits (its entry id is its time)."""
        unread, since = 0, None
        try:
            for name, (last, _n) in self.last.items():
                ms, _, sq = str(last).partition("-")
                after = f"{ms}-{int(sq or 0) + 1}"
                entries = self.client.xrange(name, min=after, max="+", count=1000)
                if entries:
                    unread += len(entries)
                    first = entries[0][0]
                    first = first.decode() if isinstance(first, bytes) else first
                    t = int(first.partition("-")[0]) / 1000
                    since = t if since is None else min(since, t)
            error = None
        except Exception as exc:   # the status line reports it; the read says what it does
            error = f"{type(exc).__name__}: {exc}"[:200]
        return {"what": self.shown, "streams": len(self.last), "new": self.new, "unread": unread,
                "unread_unit": "entries", "since": since, "error": error}

    def read(self) -> list[Line]:
        """The entries added since the last read; [] while the server cannot be read (an outage is
        a warning, then one info line when it is back: the entries wait in Redis meanwhile)."""
        now = time.monotonic()
        if now < self._retry_at:
            return []
        try:
            out = self._read(now)
        except self._errors as exc:
            why = self.error = _why(exc)
            if self.failing_since is None:
                self.failing_since = time.time()
                log.warning("%s cannot be read (%s): trying again, every %.0f s at most", self.shown, why,
                            RETRY_MAX)
            self._retry_at = now + self._backoff
            self._backoff = min(self._backoff * 2, RETRY_MAX)
            return []
        if self.failing_since is not None:
            log.info("%s is read again after %.0f s", self.shown, time.time() - self.failing_since)
            self.failing_since = self.error = None
            self._backoff = RETRY_FIRST
        return out

    def _read(self, now: float) -> list[Line]:
        if now >= self._next_scan:
            self._scan()
            self._next_scan = now + self.scan_every
        if not self.last:
            return []
        reply = self.client.xread({s: v[0] for s, v in self.last.items()}, count=self.count)
        out: list[Line] = []
        for stream, entries in reply or []:
            name = stream.decode() if isinstance(stream, bytes) else stream
            pos = self.last[name]
            for entry_id, fields in entries:
                pos[0] = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                pos[1] += 1
                raw = fields.get(self.field.encode()) if self.field else fields.get(b"event")
                if raw is None and len(fields) == 1:
                    raw = next(iter(fields.values()))
                out.append(Line(raw[:MAX_LINE_BYTES + 1] if raw is not None else b"",
                                f"{self.label}/{name}#{pos[0]}", pos[1]))
        return out

    def close(self) -> None:
        self.client.close()


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:200]


def _without_password(parts: urllib.parse.SplitResult) -> str:
    """The URI's scheme, host, port and database, a password in it shown as ``***``."""
    netloc = parts.netloc
    if parts.password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def open_sources(inputs: list[str], scan_every: float = 0.5) -> list:
    """One source per ``redis://`` URI, one :class:`FileFollower` for all paths."""
    redis_uris = [i for i in inputs if i.startswith(("redis://", "rediss://", "unix://"))]
    paths = [i for i in inputs if i not in redis_uris]
    sources: list = [RedisStreamSource(u, scan_every) for u in redis_uris]
    if paths:
        sources.insert(0, FileFollower(paths, scan_every))
    return sources
