"""Live feed health: a device gone silent while its table plays (``DEVICE_SILENT``, live only).

Unplugging the shoe is what a dealer switching cards would do; the nightly
batch says so with ``SHOE_SILENT`` once the pack is decided.  Live, the
floor should know at once: a dealer terminal or a shoe whose table keeps
playing (another device of the table writes) for more than ``after``
seconds (``--silence-after``, default 120) since its last event — on the
watcher's clock and in the events' time — is announced once — a warning on stderr and an info alert to the sinks (not to the lake's
alerts table: it is a notice of the live service, not a finding of the
engine; the night's run decides ``SHOE_SILENT``).  It is announced again only
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
"""
from __future__ import annotations

import collections
import hashlib
import heapq
import time

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
