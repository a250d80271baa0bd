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
    batch's finding) and is not read again unless replaced.
    Rotation, as log shippers follow it: a followed file renamed away (a new
    one created at its name, or not) is found by its inode in its folder and
    read to its end under its new name, before the new file at the old name
    (its position goes with it: a rotated name the inputs match is not read
    again from its start); renamed out of the folder or deleted, it is read
    to its end through the handle still open, labelled with its old name and
    :data:`DETACHED`.  A rotated file the inputs do not match is followed
    until read to its end and unchanged for ``rotate_wait`` seconds.  A file
    that shrinks or whose first bytes change (its fingerprint: the digest of
    its first :data:`FINGERPRINT_BYTES`) was truncated or rewritten
    (``copytruncate``): its copy beside it, found by those first bytes, is
    read on from the position; with no copy, what was seen and never read is
    a lost span (``take_lost``: the service rejects it, labelled with
    :data:`LOST`), and the new content is read from its first line.
    Memory and turns are bounded whatever the bytes: a file is read
    :data:`CHUNK` bytes at a time, at most ``max_bytes``, ``max_lines`` and
    ``max_seconds`` per turn (a flood in one file does not starve the
    others); a line longer than
    :data:`pitwatch.schemas.limits.MAX_LINE_BYTES` is handed on as its first
    ``MAX_LINE_BYTES + 1`` bytes (the decoder rejects it: "line longer than
    …") as soon as that many bytes without a line end are there, and the
    rest of it is skipped up to its line end; the lines after it are read.
    Position: ``{path: [inode, byte offset, physical lines read, state,
    fingerprint bytes, fingerprint digest, largest size seen]}`` (offset: into
    the decompressed bytes of a gzip file; state: reading, skipping the rest
    of an over-long line, or finished), the damaged gzip files, the rotated
    and detached files and which file waits for which.

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
import errno
import glob
import hashlib
import logging
import os
import stat
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
TURN_LINES = 500                  # lines read per file per turn (a turn of the loop ~40 ms at most per file) …
TURN_SECONDS = 0.02               # … and seconds of reading: no file starves the others
FINGERPRINT_BYTES = 256           # a file's first bytes, kept as a digest: content replaced in place shows
ROTATE_WAIT = 30.0                # a rotated file is followed until read to its end and unchanged this long
DETACHED = "(renamed away)"       # the label's mark of a file read through its handle: it has no name here
LOST = "(truncated)"              # the label's mark of a span of a file that was never read


@dataclasses.dataclass(slots=True)
class Line:
    raw: bytes
    file: str
    line: int


class FileFollower:
    """Follow files, folders and globs (see the module doc)."""

    def __init__(self, inputs: list[str], scan_every: float = 0.5, max_bytes: int = 4 << 20,
                 max_lines: int = TURN_LINES, max_seconds: float = TURN_SECONDS,
                 rotate_wait: float = ROTATE_WAIT) -> None:
        self.inputs = list(inputs)
        self.scan_every = scan_every
        self.max_bytes = max(max_bytes, CHUNK)   # read per file per turn (a turn stays short) …
        self.max_lines = max(max_lines, 1)       # … and at most this many lines …
        self.max_seconds = max_seconds           # … and this long: no file starves the others
        self.rotate_wait = rotate_wait
        self.pos: dict[str, list] = {}      # path -> [inode, offset, lines, state, fp bytes, fp digest, size seen]
        self.damaged: dict[str, str] = {}   # gzip files that could not be read to their end: why
        self.newly_damaged: list[str] = []  # found damaged since the service last took them (take_damaged)
        self.lost: list[tuple[Line, str]] = []   # spans never read (truncated, replaced): take_lost
        self.rotated: set[str] = set()      # followed only because a followed file was renamed there
        self.detached: set[str] = set()     # renamed out of reach: read through the handle still open
        self.after: dict[str, str] = {}     # a rotated name -> the renamed file read to its end before it
        self._next_scan = 0.0
        self._handles: dict[str, tuple] = {}  # path -> (inode, file object)
        self._scanned = False               # the first look is announced as "watching N file(s)"
        self.new = 0                        # files that appeared after the first look (announced once each)
        self.gone: set[str] = set()         # files that went away (announced once; position kept)
        self.unreadable: dict[str, str] = {}  # files that exist but cannot be read now: why (announced once)
        for p in self.inputs:
            if not any(ch in p for ch in "*?[") and not os.path.exists(p):
                raise FileNotFoundError(2, "no such file or folder", p)

    def describe(self) -> str:
        self._scan()
        return f"{len(self.pos)} file(s) now under {', '.join(self.inputs)}"

    def position(self) -> dict:
        return {"files": {p: list(v) for p, v in self.pos.items()}, "damaged": dict(self.damaged),
                "rotated": sorted(self.rotated), "detached": sorted(self.detached), "after": dict(self.after)}

    def restore(self, position: dict) -> None:
        self.pos = {p: _position(p, v) for p, v in position.get("files", {}).items()}
        self.damaged = dict(position.get("damaged", {}))
        for label in position.get("detached", []):  # its handle died with the last run: what it held is lost
            pos = self.pos.pop(label, None)
            if pos is not None:
                self._lost(label, pos, "the file was renamed out of its folder or deleted before it was read "
                                       "to its end, and the watcher stopped meanwhile")
        self.rotated = set(position.get("rotated", [])) & set(self.pos)
        self.after = {p: old for p, old in position.get("after", {}).items() if old in self.pos}

    def _scan(self) -> None:
        new: list[str] = []
        followed: dict | None = None    # inode -> path of the files followed, made when a new name shows
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
                    if f in self.rotated and f not in self.detached:
                        self.rotated.discard(f)     # a rotated name the inputs match: followed as any file
                    if f in self.pos:
                        continue
                    if followed is None:
                        followed = {v[0]: path for path, v in self.pos.items()
                                    if v[0] is not None and path not in self.detached and not path.endswith(".gz")}
                    if not self._renamed_here(f, followed):
                        self.pos[f] = _fresh()
                        new.append(f)
        if self._scanned and new:
            self._announce_new(new)
        self._scanned = True

    def _renamed_here(self, f: str, followed: dict) -> bool:
        """A new name holding a followed file (rotated to a name the inputs match, e.g. logrotate's
        ``dateext``): its position goes with it, so it is not read again from its start."""
        try:
            path = followed.get(os.stat(f).st_ino)
            if path is None or path == f or path not in self.pos:
                return False
            if os.stat(path).st_ino == self.pos[path][0]:
                return False            # the same file under two names (a hard link): read as a new one
        except FileNotFoundError:
            pass                        # renamed, and nothing created at its name yet
        except OSError:
            return False
        self._renamed_away(path, to=f)
        return f in self.pos

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
                st = self._stat(path)
            except OSError:
                continue
            if st.st_ino == pos[0] and not path.endswith(".gz"):
                pos[6] = max(pos[6], st.st_size)      # seen: what a truncation would lose is known
            left = st.st_size - pos[1] if not path.endswith(".gz") else (st.st_size if pos[1] == 0 else 0)
            if left > 0:
                unread += left
                since = st.st_mtime if since is None else min(since, st.st_mtime)
        return {"what": "files", "files": len(self.pos), "new": self.new, "damaged": len(self.damaged),
                "gone": len(self.gone), "unread": unread, "unread_unit": "B", "since": since}

    def read(self) -> list[Line]:
        """One turn: every file's new complete lines, at most ``max_bytes``, ``max_lines`` and
        ``max_seconds`` of reading per file (a flood in one file does not hold the others back)."""
        now = time.monotonic()
        if now >= self._next_scan:
            self._scan()
            self._next_scan = now + self.scan_every
        out: list[Line] = []
        for path in sorted(self.pos):
            if path not in self.pos or self._waits(path):
                continue    # moved on this turn (its new name is read next turn), or waits for its old file
            try:
                self._read_file(path, out)
            except FileNotFoundError:
                self._close(path)  # gone for now (rotated away): keep its position
                if path in self.pos and path not in self.gone:
                    self.gone.add(path)
                    log.warning("%s is gone: its position is kept, it is read on if it comes back", path)
                continue
            except OSError as exc:      # not readable (permissions taken away, an I/O error): said once,
                self._close(path)       # its position kept, tried again at every turn
                if path not in self.unreadable:
                    self.unreadable[path] = f"{type(exc).__name__}: {exc.strerror or exc}"
                    log.warning("%s cannot be read (%s): its position is kept, it is tried again at every turn",
                                path, self.unreadable[path])
                continue
            if path in self.unreadable:
                del self.unreadable[path]
                log.info("%s can be read again", path)
            if path in self.gone:
                self.gone.discard(path)
                log.info("%s is back", path)
        return out

    def take_damaged(self) -> list[str]:
        """The files found damaged since the last call (the service raises INPUT_DAMAGED for each,
        after the lines read before the damage)."""
        found, self.newly_damaged = self.newly_damaged, []
        return found

    def take_lost(self) -> list[tuple[Line, str]]:
        """The spans of files lost since the last call, each as the place of its first line not read
        and the reason (the service rejects it: counted, said once, journalled)."""
        found, self.lost = self.lost, []
        return found

    def _close(self, path: str) -> None:
        h = self._handles.pop(path, None)
        if h is not None:
            h[1].close()

    def _stat(self, path: str) -> os.stat_result:
        """A followed file's stat: through its open handle if it has no name any more."""
        if path in self.detached:
            h = self._handles.get(path)
            if h is None:
                raise FileNotFoundError(2, "no longer open", path)
            return os.fstat(h[1].fileno())
        return os.stat(path)

    def rotating(self, path: str) -> bool:
        """``path`` was renamed away and its file, read on under its new name, was written to within the
        last ``rotate_wait`` seconds: a rotation under way (logrotate's ``nocreate``, or a device that
        makes its new file at its next line), not an input lost (:class:`pitwatch.live.silence.SourceWatch`)."""
        old = self.after.get(os.path.abspath(path))
        if old is None or old not in self.pos:
            return False
        try:
            return time.time() - self._stat(old).st_mtime < self.rotate_wait
        except OSError:
            return False

    def _waits(self, path: str) -> bool:
        """A new file at a rotated name waits while the file renamed away from that name has lines
        not read yet, and until that one is quiet (its writer may still add its last lines)."""
        old = self.after.get(path)
        if old is None:
            return False
        pos = self.pos.get(old)
        try:
            st = self._stat(old) if pos is not None else None
        except OSError:
            st = None
        if st is None or (st.st_size <= pos[1] and time.time() - st.st_mtime >= self.rotate_wait):
            del self.after[path]
            return False
        return st.st_size > pos[1]

    def _lost(self, label: str, pos: list, why: str, mark: str = LOST) -> None:
        """Bytes seen and never read (from the position to the largest size seen): a lost span."""
        missed = pos[6] - pos[1]
        if missed <= 0 or pos[3] == FINISHED:
            log.warning("%s: %s; nothing seen there was left unread", label, why)
            return
        reason = (f"not read: {why}; {missed:,} byte(s) or more after line {pos[2]:,} (from byte {pos[1]:,}) "
                  f"were never read (events lost with them show as SEQ_GAP)")
        self.lost.append((Line(b"", f"{label} {mark}" if mark not in label else label, pos[2] + 1), reason))

    def _renamed_away(self, path: str, to: str | None = None, depth: int = 0) -> None:
        """The file followed at ``path`` is no longer there (renamed: a log rotation; or deleted).

        Its position (and open handle) goes to its new name in the same folder, found by inode, and
        ``path`` starts afresh; the new file at ``path`` is taken once the old one is read to its end.
        With no new name but an open handle (moved to another folder, or deleted), the handle is
        read to its end under ``path`` + :data:`DETACHED`; with neither, what was seen and not
        read is a lost span."""
        pos = self.pos[path]
        h = self._handles.get(path)
        new = to if to is not None else self._find_inode(path, pos[0])
        if new is not None and not (h is not None or self._same_start(new, pos)):
            new = None                       # the inode number was used again by another file
        if new is not None:
            held = self.pos.get(new)
            if held is not None and held[0] not in (None, pos[0]) and depth < 8:
                self._renamed_away(new, depth=depth + 1)   # the file there moved on too (numbered rotation)
            self._close(new)
            self.pos[new] = pos
            self.rotated.add(new)            # a name the inputs match is adopted by the next look
            if h is not None:
                self._handles[new] = self._handles.pop(path)
            self.after[path] = new
            log.info("%s was renamed to %s: read to its end there, then the new %s", path, new,
                     os.path.basename(path))
        elif h is not None:
            label = f"{path} {DETACHED}"
            if label in self.pos:
                label = f"{path} {DETACHED[:-1]}, inode {pos[0]})"
            self.pos[label] = pos
            self._handles[label] = self._handles.pop(path)
            self.detached.add(label)
            self.rotated.add(label)
            self.after[path] = label
            log.warning("%s was renamed out of its folder or deleted: read to its end through the file "
                        "still open, as %s", path, label)
        else:
            self._lost(path, pos, "the file was renamed away or replaced while the watcher did not hold it",
                       DETACHED)
        self.pos[path] = _fresh()
        self.gone.discard(path)

    @staticmethod
    def _find_inode(path: str, ino: int) -> str | None:
        """The name in ``path``'s folder of the file with inode ``ino`` (not ``path``), if any."""
        try:
            with os.scandir(os.path.dirname(path)) as entries:
                for e in entries:
                    if e.inode() == ino and e.path != path and e.is_file(follow_symlinks=False):
                        return os.path.abspath(e.path)
        except OSError:
            pass
        return None

    def _copied(self, path: str, pos: list) -> bool:
        """A truncated file's copy (logrotate's ``copytruncate``) in its folder, found by its first
        bytes, is read on from the position (under its name), before the file's new content; True
        if there is one (nothing of the old content is lost then, short of what was written between
        the copy and the truncation: logrotate's own gap, a SEQ_GAP)."""
        if not pos[4]:
            return False
        stem = os.path.basename(path).split(".")[0]
        try:
            with os.scandir(os.path.dirname(path)) as entries:
                found = [os.path.abspath(e.path) for e in entries
                         if e.name.startswith(stem) and e.path != path and not e.name.endswith(".gz")
                         and e.is_file(follow_symlinks=False) and e.stat().st_size >= pos[1]]
        except OSError:
            return False
        for copy in sorted(found):
            if not self._same_start(copy, pos):
                continue
            held = self.pos.get(copy)
            if held is not None and held[0] is not None:
                log.info("%s was copied to %s, followed already: nothing lost", path, copy)
                return True
            try:
                st = os.stat(copy)
            except OSError:
                continue        # gone since the folder was listed
            self.pos[copy] = [st.st_ino, *pos[1:4], pos[4], pos[5], st.st_size]
            self.rotated.add(copy)
            self.after[path] = copy
            log.info("%s was copied to %s and truncated: read on there from byte %d, then the new %s",
                     path, copy, pos[1], os.path.basename(path))
            return True
        return False

    @staticmethod
    def _same_start(path: str, pos: list) -> bool:
        """``path`` begins with the bytes a position's fingerprint was taken from."""
        if not pos[4]:
            return True
        try:
            with open(path, "rb") as f:
                return _fingerprint(f, pos[4]) == pos[5]
        except OSError:
            return False

    def _drop(self, path: str) -> None:
        """A rotated file read to its end and quiet: no longer followed."""
        self._close(path)
        self.pos.pop(path, None)
        self.rotated.discard(path)
        self.detached.discard(path)
        self.gone.discard(path)
        for new in [n for n, old in self.after.items() if old == path]:
            del self.after[new]

    def _read_file(self, path: str, out: list[Line]) -> None:
        pos = self.pos[path]
        if path.endswith(".gz"):
            self._read_gzip(path, pos, out)
            return
        h = self._handles.get(path)
        try:
            st = self._stat(path)
        except FileNotFoundError:
            if h is None or pos[0] is None:     # nothing held open: gone for now, its position kept
                if path in self.rotated:
                    self._lost(path, pos, "the rotated file was gone before it was read to its end", DETACHED)
                    self._drop(path)
                raise
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):     # a folder, a FIFO, a device at the file's name:
            raise OSError(errno.EINVAL, "not a regular file")    # never opened (a FIFO would block the loop)
        if pos[0] is not None and (st is None or st.st_ino != pos[0]):
            self._renamed_away(path)
            if st is None:
                raise FileNotFoundError(2, "renamed away", path)
            if self._waits(path):
                return
            pos, h = self.pos[path], None
        if pos[0] is None:
            pos[0] = st.st_ino
        if st.st_size == 0 and pos[1] == 0:
            return
        if h is None or h[0] != st.st_ino:
            self._close(path)
            f = open(path, "rb")
            h = self._handles[path] = (os.fstat(f.fileno()).st_ino, f)
        f = h[1]
        if st.st_size < pos[1] or (st.st_size > pos[1] and pos[4] and _fingerprint(f, pos[4]) != pos[5]):
            # copytruncate, or a file written again in place: the new content is read from its start
            what = "shrank" if st.st_size < pos[1] else "begins with other bytes"
            log.warning("%s was truncated or replaced (it %s): reading it again from the start", path, what)
            if not self._copied(path, pos):
                self._lost(path, pos, f"the file was truncated or replaced (it {what}, copytruncate?)")
            pos = self.pos[path] = [st.st_ino, 0, 0, READING, 0, "", 0]
            if self._waits(path):
                return
        pos[6] = max(pos[6], st.st_size)
        if st.st_size > pos[1]:
            self._read_lines(path, pos, f, st.st_size, out)
            if pos[4] < FINGERPRINT_BYTES and pos[1] > pos[4]:
                pos[4] = min(FINGERPRINT_BYTES, pos[1])
                pos[5] = _fingerprint(f, pos[4])
        elif path in self.rotated and time.time() - st.st_mtime >= self.rotate_wait:
            self._drop(path)

    def _read_gzip(self, path: str, pos: list, out: list[Line]) -> None:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if pos[0] is not None and st.st_ino != pos[0]:
            log.warning("%s was replaced: reading it again from the start", path)
            self._close(path)
            self.damaged.pop(path, None)
            pos[:] = _fresh()
        pos[0] = st.st_ino
        if pos[3] == FINISHED or st.st_size == 0:
            return
        h = self._handles.get(path)
        if h is None or h[0] != st.st_ino:
            self._close(path)
            h = (st.st_ino, GzipLines(path))
            self._handles[path] = h
        try:
            self._read_lines(path, pos, h[1], None, out)
        except FileNotFoundError:
            raise
        except (OSError, EOFError, zlib.error) as exc:
            # a damaged gzip file (bad header, bad CRC, cut short): the lines before the damage
            # were read; the rest cannot be, and the file is not read again unless it is replaced
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            log.warning("%s is damaged (%s): read up to line %d, the rest cannot be read", path, why, pos[2])
            self.damaged[path] = why
            self.newly_damaged.append(path)
            pos[3] = FINISHED
            self._close(path)

    def _read_lines(self, path: str, pos: list, f, size: int | None, out: list[Line]) -> None:
        """Read complete lines from ``pos`` on, at most ``max_bytes``, ``max_lines`` and
        ``max_seconds`` this turn, in bounded memory.

        A line longer than :data:`pitwatch.schemas.limits.MAX_LINE_BYTES` is handed on as its first
        ``MAX_LINE_BYTES + 1`` bytes (the decoder rejects it: too long) as soon as that many bytes
        without a line end are there; the rest of it is skipped up to its line end (state
        ``SKIPPING``, kept in the position: a restart goes on skipping).  ``size`` None: a gzip
        file, read to its end (its last line needs no line end)."""
        budget, lines = self.max_bytes, self.max_lines
        until = time.monotonic() + self.max_seconds
        while budget > 0 and lines > 0:
            want = CHUNK if size is None else min(size - pos[1], CHUNK)
            if want <= 0:
                return
            if budget < self.max_bytes and time.monotonic() >= until:
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
            end = _line_end(data, lines)
            if end >= 0:
                lines -= self._split(path, pos, data[:end + 1], out)
                pos[1] += end + 1
                continue
            if len(data) > MAX_LINE_BYTES:  # no line end in more than a line may hold
                pos[2] += 1
                lines -= 1
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
    def _split(path: str, pos: list, data: bytes, out: list[Line]) -> int:
        """Hand out the lines of ``data`` (complete lines); how many physical lines it held."""
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
        return len(parts)

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
    """A file's position from a checkpoint (older ones had no state: a gzip file read was finished;
    nor a fingerprint: it is taken again, the size seen is the offset)."""
    v = list(v)
    if len(v) == 3:
        v.append(FINISHED if path.endswith(".gz") and v[1] > 0 else READING)
    if len(v) == 4:
        v += [0, "", v[1]]
    return v


def _fresh() -> list:
    """The position of a file not read yet."""
    return [None, 0, 0, READING, 0, "", 0]


def _fingerprint(f, n: int) -> str:
    """The digest of a file's first ``n`` bytes (read with ``pread``: the handle's offset is kept)."""
    return hashlib.blake2b(os.pread(f.fileno(), n, 0), digest_size=16).hexdigest()


def _line_end(data: bytes, lines: int) -> int:
    """The offset of the last line end in ``data`` within its first ``lines`` lines (-1: none)."""
    if data.count(b"\n") <= lines:
        return data.rfind(b"\n")
    end = -1
    for _ in range(lines):
        end = data.index(b"\n", end + 1)
    return end


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
