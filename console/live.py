"""The Live page: the watcher's alerts as they arrive, newest first.

Two sources, merged and told apart by their key (``finding_id``, ``rule_id``), since a watcher
writes the same alert to both:

* the lake's ``alerts`` table (:mod:`pitwatch.queries.alerts_view`), at its latest version, read
  through the analysts' connection, only its recent gaming days (:data:`RECENT_DAYS`: what the page
  costs does not grow with the years the lake keeps); the stream looks for a new version every
  :data:`TABLE_POLL` seconds (the watcher commits it every ``--commit-every``, 30 s by default);
* the watcher's alerts files (``pitwatch watch --alerts-file``, given to ``pitwatch serve
  --alerts-file``), JSON lines, followed from their end every :data:`FILE_POLL` seconds, so an
  alert shows within a quarter of a second of the watcher writing it.  A line that is not an alert
  (not JSON, not an object, no ``rule_id``) is skipped and logged, never shown half; a file
  truncated or replaced is read again from its start.

The page is rendered with the recent alerts; a server-sent event stream (``/live/events``) sends
each new one, and the page's script (``static/live.js``) adds it at the top, built with DOM text
nodes (an alert's text is never markup).  A provisional card alert (``CARD_DISAGREEMENT``) is
marked provisional and struck through when its ``CARD_DISAGREEMENT_CLEARED`` (whose
``provisional_id`` names it) arrives; a critical one flashes, and beeps when the operator turned
the sound on (the Web Audio API: no sound file).
"""
from __future__ import annotations

import asyncio
import collections
import datetime as _dt
import json
import logging
import os
import re
from typing import Any, AsyncIterator
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from pitwatch.console.auth import current_user, requires
from pitwatch.console.view import Console, Zones, console_of, local_time, local_window, render, zones
from pitwatch.live import alert_text
from pitwatch.queries import alerts_view

log = logging.getLogger("pitwatch.console")

RECENT_DAYS = 2             # the gaming days of the alerts table the page reads: its newest and the one before
SHOWN = 200                 # the most alerts the page lists
STREAM_MOST = 100_000       # the most rows of the recent days a stream compares with what it sent
REMEMBERED = 200_000        # the most keys a stream remembers having sent
FILE_POLL = 0.1             # seconds between looks at the alerts files
TABLE_POLL = 1.0            # seconds between looks at the alerts table's version
KEEPALIVE = 15.0            # seconds between comments on a quiet stream (a proxy keeps it open)
TAIL_BYTES = 256 << 10      # what the page reads of an alerts file's end when it opens
MAX_LINE = 1 << 20          # a longer "line" is no alert
VIDEO_PAD = 30              # seconds of video around the evidence (queries/findings_video.sql's default)
PROVISIONAL = "CARD_DISAGREEMENT"
CLEARED = "CARD_DISAGREEMENT_CLEARED"


def _text(value: Any) -> str:
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    return "" if value is None else str(value)


def key_of(rec: dict) -> str:
    return f"{rec.get('finding_id')}/{rec.get('rule_id')}"


def shown(console: Console, rec: dict, zoned: Zones) -> dict[str, Any]:
    """An alert record (a row of the table or a line of a file) as the page shows it: every value
    text, its times in its table's zone."""
    rec = {k: _text(v) if isinstance(v, _dt.datetime) else v for k, v in rec.items()}
    zone = zoned.of(rec.get("table_id"))
    try:
        ts = alert_text.parse_time(str(rec["ts"]))
        start, end = alert_text.video_window(rec, VIDEO_PAD) if rec.get("table_id") else (None, None)
    except (KeyError, ValueError, TypeError):
        ts, start, end = None, None, None
    rule_id = alert_text.printable(rec.get("rule_id"))
    live_only = bool(rec.get("live_only")) or rule_id in (PROVISIONAL, CLEARED)
    finding_id = alert_text.printable(rec.get("finding_id"))
    return {
        "key": key_of(rec),
        "finding_id": finding_id,
        "rule_id": rule_id,
        "severity": alert_text.printable(rec.get("severity")).lower() or "info",
        "title": alert_text.title(rec),
        "table": alert_text.printable(rec.get("table_id")) or "-",
        "place": alert_text.where(rec),
        "dealer": alert_text.dealer(rec, console.extra.get("dealers")),
        "time": local_time(ts, zone),
        "sort": ts.timestamp() if ts is not None else 0.0,
        "video": local_window(start, end, zone),
        "expected": alert_text.printable(rec.get("expected")),
        "actual": alert_text.printable(rec.get("actual")),
        "provisional": rule_id == PROVISIONAL,
        "clears": alert_text.printable(rec.get("provisional_id")) if rule_id == CLEARED else "",
        "link": "" if live_only or not finding_id else f"/findings/{finding_id}",
    }


# ---------------------------------------------------------------- the sources


_DAY = re.compile(r"/gaming_day=(\d{4}-\d{2}-\d{2})/")


def recent_days_since(console: Console) -> _dt.date:
    """The first of the alerts table's :data:`RECENT_DAYS` newest gaming days: the newest day a file
    of its latest version is filed under (the paths its log names; no file opened), not the
    machine's date, so a floor replayed from the past shows its alerts too."""
    days = [m.group(1) for m in map(_DAY.search, alerts_view.files(console.lake)) if m]
    newest = _dt.date.fromisoformat(max(days)) if days else _dt.date.today()
    return newest - _dt.timedelta(days=RECENT_DAYS - 1)


def table_alerts(console: Console, most: int = SHOWN) -> list[dict]:
    """The alerts table's rows of the recent gaming days (newest first, ``most`` of them), through
    the analysts' connection."""
    since = recent_days_since(console)
    con = console.connect({"alerts"})
    try:
        cur = con.execute("SELECT * FROM alerts WHERE gaming_day >= ? ORDER BY ts DESC LIMIT ?", [since, most])
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        # the roster as this connection has it (a roster imported since the last look shows at once)
        console.extra["dealers"] = {i: n for i, n in con.execute("SELECT id, name FROM seeds_dealers").fetchall() if n}
    finally:
        con.close()
    return rows


def table_version(console: Console) -> int | None:
    """The alerts table's latest version, looked up at most every :data:`TABLE_POLL` seconds for all the
    console's streams together (each open Live page asks every second)."""
    import time

    from pitwatch.lake import delta

    cached = console.extra.get("alerts_version")
    now = time.monotonic()
    if cached is None or now - cached[0] >= TABLE_POLL:
        cached = console.extra["alerts_version"] = (now, delta.current_version(console.lake, "alerts"))
    return cached[1]


class Sent:
    """The keys a stream has sent, the :data:`REMEMBERED` newest: a page left open for months holds no more."""

    def __init__(self, keys=()):
        self._order: collections.deque[str] = collections.deque()
        self._keys: set[str] = set()
        for k in keys:
            self.add(k)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def add(self, key: str) -> None:
        if key in self._keys:
            return
        self._keys.add(key)
        self._order.append(key)
        if len(self._order) > REMEMBERED:
            self._keys.discard(self._order.popleft())


class FileFollower:
    """One alerts file, read from where the last look left it: its complete new lines as alert records."""

    def __init__(self, path: str, from_end: bool = True, tail: int = 0, resume: tuple[int, int] | None = None):
        self.path = path
        self.ino: int | None = None
        self.offset = 0
        self.partial = b""
        if resume is not None:
            self._resume(*resume)
        else:
            self._open(from_end, tail)

    def _resume(self, ino: int, offset: int) -> None:
        """Go on where another follower's :meth:`mark` was: the same file not shorter than that, from
        there; a file replaced or truncated since, from its start (all of it is new)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return
        self.ino = st.st_ino
        self.offset = offset if st.st_ino == ino and 0 <= offset <= st.st_size else 0

    def mark(self) -> tuple[int, int]:
        """Where this follower is: (inode, offset of the first line it has not given whole)."""
        held = 0 if self.partial.startswith(b"\x00") else len(self.partial)
        return (self.ino or 0, self.offset - held)

    def _open(self, from_end: bool, tail: int = 0) -> None:
        try:
            st = os.stat(self.path)
        except OSError:
            self.ino, self.offset = None, 0
            return
        self.ino = st.st_ino
        self.offset = max(0, st.st_size - tail) if from_end else 0
        self.partial = b""
        if self.offset and not self._at_line_start():     # mid-line: the rest of that line is not read
            self.partial = b"\x00"

    def _at_line_start(self) -> bool:
        with open(self.path, "rb") as f:
            f.seek(self.offset - 1)
            return f.read(1) == b"\n"

    def read(self) -> list[dict]:
        try:
            st = os.stat(self.path)
        except OSError:
            return []
        if st.st_ino != self.ino or st.st_size < self.offset:      # replaced or truncated: from its start
            log.info("console: alerts file %s was replaced or truncated; reading it from its start", self.path)
            self.ino, self.offset, self.partial = st.st_ino, 0, b""
        if st.st_size == self.offset:
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read(min(st.st_size - self.offset, 16 << 20))
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        if len(self.partial) > MAX_LINE:
            log.warning("console: alerts file %s: a line longer than %d bytes skipped", self.path, MAX_LINE)
            self.partial = b"\x00"
        out = []
        for line in lines:
            if line.startswith(b"\x00") or not line.strip():
                continue
            rec = parse_line(line)
            if rec is None:
                log.warning("console: alerts file %s: a line that is no alert skipped: %r", self.path, line[:120])
            else:
                out.append(rec)
        return out


def parse_line(line: bytes) -> dict | None:
    """An alert record of a JSON line, or None when the line is none (not JSON, not an object, no rule)."""
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("rule_id"), str) or not isinstance(rec.get("ts"), str):
        return None
    return rec


def recent(console: Console) -> tuple[list[dict], str]:
    """The page's alerts when it opens (the table's recent ones and the files' tails, newest first),
    and where its stream goes on in the files (:func:`resume_marks`' text): nothing appended
    between the page and its stream is missed."""
    found: dict[str, dict] = {}
    for rec in table_alerts(console):
        found.setdefault(key_of(rec), rec)
    marks = []
    for path in console.alerts_files:
        follower = FileFollower(path, from_end=True, tail=TAIL_BYTES)
        for rec in follower.read():
            found.setdefault(key_of(rec), rec)
        marks.append("%d:%d" % follower.mark())
    zoned = zones(console)
    alerts = sorted((shown(console, r, zoned) for r in found.values()), key=lambda a: a["sort"], reverse=True)[:SHOWN]
    cleared = {a["clears"] for a in alerts if a["clears"]}
    for a in alerts:
        a["cleared"] = a["provisional"] and a["finding_id"] in cleared
    return alerts, ",".join(marks)


def resume_marks(text: str | None, files: int) -> list[tuple[int, int] | None]:
    """The page's marks (``inode:offset`` per followed file, in order) as the stream reads them from its
    address; anything else (absent, another count of files, not numbers) is no mark: from the end."""
    parts = (text or "").split(",") if text else []
    if len(parts) != files:
        return [None] * files
    marks: list[tuple[int, int] | None] = []
    for part in parts:
        ino, _, offset = part.partition(":")
        if not (ino.isdigit() and offset.isdigit()) or len(part) > 48:
            return [None] * files
        marks.append((int(ino), int(offset)))
    return marks


# ---------------------------------------------------------------- the endpoints


@requires("viewer")
async def live_page(request: Request) -> Response:
    console = console_of(request)
    alerts, marks = await run_in_threadpool(recent, console)
    return render(request, "live.html", alerts=alerts, events="/live/events?" + urlencode({"files": marks}))


def _event(alert: dict) -> bytes:
    return f"event: alert\ndata: {json.dumps(alert, separators=(',', ':'))}\n\n".encode()


async def _stream(request: Request) -> AsyncIterator[bytes]:
    console = console_of(request)
    marks = resume_marks(request.query_params.get("files"), len(console.alerts_files))
    followers = [FileFollower(p, from_end=True, resume=m) for p, m in zip(console.alerts_files, marks)]
    version = await run_in_threadpool(table_version, console)
    rows = await run_in_threadpool(table_alerts, console, STREAM_MOST)
    zoned = await run_in_threadpool(zones, console)
    sent = Sent(key_of(r) for r in rows)
    yield b"retry: 1000\n: following\n\n"
    # the table's newest again: what was committed between the page and this stream is among them
    # (the page's script drops an alert it already shows)
    for rec in reversed(rows[:SHOWN]):
        yield _event(shown(console, rec, zoned))
    loop = asyncio.get_running_loop()
    last_table = last_word = loop.time()
    while not await request.is_disconnected():
        # the files are read in a worker thread: a slow disk must not stall every other page
        new: list[dict] = await run_in_threadpool(lambda: [r for f in followers for r in f.read()])
        if loop.time() - last_table >= TABLE_POLL:
            last_table = loop.time()
            if await run_in_threadpool(current_user, request) is None:
                return      # the user was removed, given a new password or logged out: the stream ends
            now = await run_in_threadpool(table_version, console)
            if now != version:
                version = now
                new.extend(reversed(await run_in_threadpool(table_alerts, console, STREAM_MOST)))
        for rec in new:
            k = key_of(rec)
            if k in sent:
                continue
            sent.add(k)
            yield _event(shown(console, rec, zoned))
            last_word = loop.time()
        if loop.time() - last_word >= KEEPALIVE:
            last_word = loop.time()
            yield b": keepalive\n\n"
        await asyncio.sleep(FILE_POLL)


@requires("viewer")
async def live_events(request: Request) -> Response:
    return StreamingResponse(_stream(request), media_type="text/event-stream",
                             headers={"X-Accel-Buffering": "no"})


ROUTES = [
    Route("/live", live_page, name="live"),
    Route("/live/events", live_events, name="live_events"),
]
