"""Live feed health: a device gone silent while its table plays (``DEVICE_SILENT``, live only).

Unplugging the shoe is what a dealer switching cards would do; the nightly
batch says so with ``SHOE_SILENT`` once the pack is decided.  Live, the
floor should know at once: a dealer terminal or a shoe whose table keeps
playing (another device of the table writes) for more than ``after``
seconds (``--silence-after``, default 120) since its last event — on the
watcher's clock and in the events' time — is announced once — a warning on stderr and an info alert to every
sink, the lake's alerts table included, marked ``live_only`` (a notice of the live service, not a finding
of the engine; the night's run decides ``SHOE_SILENT``).  It is announced again only
after the device spoke again and fell silent again.

Decisions (the spec is silent):

* silent is both: nothing of the device arrived for ``after`` seconds of
  the watcher's clock, and an event of its table arrives more than
  ``after`` later (its ``ts``) than the device's latest.  So a backlog read
  at speed (a mid-shift start, a restart, files read one after the other)
  announces nothing — the night's ``SHOE_SILENT`` judges it — and a table
  that stops altogether (closed, or the whole feed down) announces nothing:
  it does not play;
* shufflers are left out: they write at shuffles only, and a back-room one
  serves many tables;
* a device's table is the table of its latest event;
* past :data:`MAX_DEVICES` devices the one heard from longest ago (the
  watcher's clock) is forgotten.

Cost per event, whatever the number of tables and devices seen (a flood of
new ids is linear, issue 41; before, every event looked at all its table's
devices, and past :data:`MAX_DEVICES` searched all devices for the oldest):
each table keeps its devices still within the watcher's wait in the order
they were heard from (a device past the wait is at the front), and those past
it in a heap by their latest event time; an event of the table moves the
front ones into the heap and takes from the heap only those its time shows
silent.  Each time a device is heard from costs one move and one take.

State (``state()``/``restore()``) is plain data in the checkpoint.

An input lost (``SOURCE_LOST``, live only): :class:`SourceWatch`.  An input
that cannot be reached at the start is ``watch``'s ``Error:`` line, exit 2;
one that goes away later — a Redis server down or refusing, a watched file
or folder that no longer exists — leaves every table it feeds unwatched,
which on the console looks like a quiet night.  So, once it has been
unreadable for :data:`LOST_AFTER` seconds (a server's restart or a file's
rotation, rename then create, is shorter), it is announced once: a warning
on stderr and a **major** alert ``SOURCE_LOST`` (live only, no finding; not
``info`` like ``DEVICE_SILENT``: a whole feed is blind, not one device) to
every sink, the lake's alerts table included (``live_only``); the status
line names it (``lost: …``) while it lasts; and when it is read again, an
info alert ``SOURCE_LOST_CLEARED`` naming the lost alert's ``finding_id``.
While an input is unreadable the watcher is not idle (``--stop-after-idle``
waits: the input did not end, it cannot be read).  Not in the checkpoint:
an input still lost at a restart is the start's exit 2, and an outage that
ends while the watcher is down is cleared by no alert.
"""
from __future__ import annotations

import collections
import hashlib
import heapq
import os
import time

from pitwatch.live.sources import FileFollower, RedisStreamSource

WATCHED_SOURCES = ("dealer", "shoe")
RULE_ID = "DEVICE_SILENT"
MAX_DEVICES = 10_000      # a feed naming ever new devices: the longest-unheard are forgotten past this
TITLE = "A device fell silent while its table played"


class SilenceWatch:
    def __init__(self, after: float = 120.0) -> None:
        self.after = after
        self.after_micros = int(after * 1_000_000)
        self.devices: dict[str, list] = {}   # device_id -> [table_id, last ts, source, announced]
        # device_id -> the watcher's clock at its latest event, the longest-unheard first
        self.arrived: collections.OrderedDict[str, float] = collections.OrderedDict()
        # table_id -> its devices still within the watcher's wait, the longest-unheard first
        self.tables: dict[str, collections.OrderedDict] = {}
        self.past: dict[str, list] = {}      # table_id -> heap of (last ts, device_id) past the watcher's wait
        self._entries = 0                     # in all the heaps, stale ones included (bounded: _compact)

    def observe(self, ev, now: float | None = None) -> list[dict]:
        """One accepted event: the devices of its table it shows silent (announced now, once).

        A device is silent when nothing of it arrived for more than ``after`` seconds (the
        watcher's clock) and an event of its table arrives that is more than ``after`` later
        than the device's latest (event time): the table plays.  A backlog read at speed (a
        mid-shift start, files read one after the other) shows no silence; the night's
        ``SHOE_SILENT`` judges it."""
        if ev.ts is None or ev.table_id is None:
            return []
        now = time.monotonic() if now is None else now
        tid = ev.table_id
        waiting = self.tables.get(tid)
        while waiting:                          # past the watcher's wait: into the heap by event time
            dev = next(iter(waiting))
            if now - self.arrived[dev] <= self.after:
                break
            del waiting[dev]
            heapq.heappush(self.past.setdefault(tid, []), (self.devices[dev][1], dev))
            self._entries += 1
        out, speaking = [], None
        past = self.past.get(tid)
        while past and ev.ts - past[0][0] > self.after_micros:
            since, dev = heapq.heappop(past)
            self._entries -= 1
            if not self._silent(tid, since, dev):
                continue
            if dev == ev.device_id:             # it speaks: kept, unless this event is its latest
                speaking = (since, dev)
                continue
            d = self.devices[dev]
            d[3] = True
            out.append(self._notice(dev, d, ev.ts, ev))
        if speaking is not None:
            heapq.heappush(past, speaking)
            self._entries += 1
        if self._entries > 4 * MAX_DEVICES:
            self._compact()
        if ev.source in WATCHED_SOURCES and ev.device_id is not None:
            d = self.devices.get(ev.device_id)
            if d is None or ev.ts >= d[1]:
                self._heard(ev.device_id, d, tid, ev.ts, ev.source, now)
        return out

    def _heard(self, dev: str, d: list | None, tid: str, ts: int, source: str, now: float) -> None:
        if d is not None and d[0] != tid:
            self._leave(dev, d[0])
        self.devices[dev] = [tid, ts, source, False]
        self.arrived[dev] = now
        self.arrived.move_to_end(dev)
        waiting = self.tables.setdefault(tid, collections.OrderedDict())
        waiting[dev] = None
        waiting.move_to_end(dev)
        if len(self.devices) > MAX_DEVICES:
            oldest, _at = self.arrived.popitem(last=False)
            self._leave(oldest, self.devices.pop(oldest)[0])

    def _silent(self, tid: str, since: int, dev: str) -> bool:
        """A heap entry still stands: its device not heard from since, still of the table, not announced
        (else it is stale: heard from again, moved, forgotten or announced)."""
        d = self.devices.get(dev)
        return (d is not None and d[0] == tid and d[1] == since and not d[3]
                and dev not in self.tables.get(tid, ()))

    def _compact(self) -> None:
        """Drop the heaps' stale entries (at most MAX_DEVICES stand: one rebuild per 3 * MAX_DEVICES
        entries pushed, so each costs O(1) in the long run and memory stays bounded)."""
        for tid in list(self.past):
            kept = [e for e in self.past[tid] if self._silent(tid, *e)]
            if kept:
                heapq.heapify(kept)
                self.past[tid] = kept
            else:
                del self.past[tid]
        self._entries = sum(map(len, self.past.values()))

    def _leave(self, device_id: str, table_id: str) -> None:
        """The device is no longer of ``table_id`` (its entry in the table's heap goes stale)."""
        waiting = self.tables.get(table_id)
        if waiting is not None:
            waiting.pop(device_id, None)
            if not waiting:
                del self.tables[table_id]

    def _notice(self, device_id: str, d: list, latest: int, ev) -> dict:
        table_id, since, source, _ = d
        seconds = (latest - since) // 1_000_000
        fid = hashlib.blake2b(f"{RULE_ID}\x00{device_id}\x00{since}".encode(), digest_size=12).hexdigest()
        return {
            "finding_id": f"live-{fid}", "rule_id": RULE_ID, "title": TITLE, "severity": "info",
            "table_id": table_id, "device_id": device_id, "source": source, "since_us": since,
            "latest_us": latest, "seconds": seconds,
            "expected": f"the {source} device {device_id} writes while table {table_id} plays",
            "actual": f"nothing from {device_id} for {seconds} s while table {table_id} played "
                      f"(latest event of the table: {ev.event_id})",
        }

    def state(self) -> dict:
        return {"devices": self.devices}

    def restore(self, state: dict) -> None:
        self.devices = {k: list(v) for k, v in state.get("devices", {}).items()}
        now = time.monotonic()        # a restart starts every device's wait afresh
        self.arrived = collections.OrderedDict((dev, now) for dev in self.devices)
        self.tables, self.past, self._entries = {}, {}, 0
        for dev, d in self.devices.items():
            self.tables.setdefault(d[0], collections.OrderedDict())[dev] = None


SOURCE_LOST = "SOURCE_LOST"
SOURCE_LOST_CLEARED = "SOURCE_LOST_CLEARED"
LOST_TITLE = "An input of the watcher cannot be read"
CLEARED_TITLE = "An input of the watcher is read again"
LOST_AFTER = 5.0      # seconds unreadable before it is announced: a Redis restart (its retries included), a rotation, are shorter
LOOK_EVERY = 0.5      # seconds between looks at the inputs (a stat per file or folder named)


class SourceWatch:
    """The inputs of the watcher that cannot be read (see the module doc): ``look()`` each turn of the loop."""

    def __init__(self, sources: list, after: float = LOST_AFTER, every: float = LOOK_EVERY) -> None:
        self.sources = sources
        self.after = after
        self.every = every
        self.lost: dict[str, tuple[float, str, str]] = {}   # announced: name -> (since, why, its finding_id)
        self._gone: dict[str, float] = {}                   # a file or folder named, missing: since (time.time())
        self._next = 0.0

    @property
    def failing(self) -> bool:
        """Some input cannot be read now (announced or not yet): the watcher is not idle."""
        return bool(self._gone) or any(isinstance(s, RedisStreamSource) and s.failing_since is not None
                                       for s in self.sources)

    def _unreadable(self, now: float) -> dict[str, tuple[float, str]]:
        """name -> (since, why) of every input that cannot be read now."""
        out = {}
        for src in self.sources:
            if isinstance(src, RedisStreamSource):
                if src.failing_since is not None:
                    out[src.shown] = (src.failing_since, src.error or "it does not answer")
            elif isinstance(src, FileFollower):
                for path in src.inputs:
                    if any(ch in path for ch in "*?["):
                        continue        # a glob matching nothing for now is no loss
                    if os.path.exists(path) or src.rotating(path):
                        self._gone.pop(path, None)
                    else:
                        out[path] = (self._gone.setdefault(path, now), "no such file or folder any more")
        return out

    def look(self, now: float | None = None) -> list[dict]:
        """The notices of this look: inputs unreadable for ``after`` seconds (once each), and the
        announced ones read again.  At most one look every ``every`` seconds."""
        tick = time.monotonic()
        if tick < self._next:
            return []
        self._next = tick + self.every
        now = time.time() if now is None else now
        unreadable = self._unreadable(now)
        out = []
        for name, (since, why) in unreadable.items():
            if name not in self.lost and now - since >= self.after:
                fid = "live-" + hashlib.blake2b(f"{SOURCE_LOST}\x00{name}\x00{since}".encode(),
                                                digest_size=12).hexdigest()
                self.lost[name] = (since, why, fid)
                out.append(_source_notice(fid, SOURCE_LOST, LOST_TITLE, "major", since,
                                          f"the watcher reads {name}",
                                          f"{name} unreadable for {now - since:.0f} s ({why}): the tables "
                                          f"it feeds are not watched until it is back"))
        for name in [n for n in self.lost if n not in unreadable]:
            since, _why, lost_id = self.lost.pop(name)
            fid = "live-" + hashlib.blake2b(f"{SOURCE_LOST_CLEARED}\x00{lost_id}".encode(),
                                            digest_size=12).hexdigest()
            out.append(_source_notice(fid, SOURCE_LOST_CLEARED, CLEARED_TITLE, "info", now,
                                      f"the watcher reads {name}",
                                      f"{name} is read again after {now - since:.0f} s (the {SOURCE_LOST} "
                                      f"alert {lost_id})"))
        return out

    def status(self, now: float | None = None) -> list[tuple[str, float, str]]:
        """For the status line: ``(name, seconds lost, why)`` of each announced input."""
        now = time.time() if now is None else now
        return [(name, now - since, why) for name, (since, why, _fid) in self.lost.items()]


def _source_notice(fid: str, rule_id: str, title: str, severity: str, when: float, expected: str,
                   actual: str) -> dict:
    """A live-only notice (:meth:`pitwatch.live.delivery.Delivery.announce`) about no table: dated ``when``."""
    return {"finding_id": fid, "rule_id": rule_id, "title": title, "severity": severity, "table_id": None,
            "device_id": None, "source": None, "latest_us": int(when * 1_000_000),
            "expected": expected, "actual": actual}
