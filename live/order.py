"""Per-device order and duplicate drop for the live feed.

The engine needs each device's events in ``seq`` order (devices may
interleave in any way).  A device writes its lines in ``seq`` order, so the
common case costs nothing: an event whose ``seq`` is the next one of its
device is released at once.  An event after a hole is held for at most
``wait`` seconds (``--gap-wait``, default 5): the missing lines may still
come (a day's new file, a re-sent file, a second feed — or, after a forged
``seq`` jump, the device's genuine next lines from the same file, which are
released in order as they come).  Held lines are released in ``seq`` order
as soon as the hole is filled, or, when the wait runs out, the hole is taken
as lost (the engine's ``SEQ_GAP``) and the held events go on.  The hole is
remembered (:class:`pitwatch.engine.driver.DeviceGate`, the one gap rule of live
and Beam streaming): a line of it arriving later is late, replayed at once
and counted, however far below the device's last ``seq``.  The cost of a
hole is at most ``wait`` seconds of delay for that one device.

Duplicates and conflicts are the driver's rule (:class:`pitwatch.engine.driver.DeviceGate`,
per (``device_id``, ``event_id``)): a copy of a remembered pair with the same
content hash is a duplicate delivery and dropped; one with other content is a
conflicting copy and rejected (counted; the service logs the reason).  The
first copy was already replayed: the batch, which sees all copies at once,
rejects every copy (:data:`pitwatch.engine.driver.LIVE_DIFFERENCES`).  A device's
pairs are remembered over its last ``window`` seqs; a line older than that
and in no hole cannot be checked and is dropped as stale; a line inside the
window, or in a hole, that was never seen is a late line and is released
(the engine tolerates it; its hole may already have been reported).

Memory is bounded: per device at most ``2 * window`` remembered pairs plus
its held lines, and a device silent for :data:`FORGET_AFTER` seconds that
holds nothing is forgotten (:meth:`DeviceOrder.forget_silent`, at every
checkpoint): one that speaks again starts afresh, like a new device.

State (``state_json()``/``restore()``) is plain data: per device the last
released ``seq``, the remembered pairs (``{event_id: [hash, seq]}``) and
the held lines (raw text, so a restart decodes them again).

The floor's order (:func:`in_floor_order`): one turn reads each source's
new lines one file after the other, so a terminal's ``round_ended`` could
be taken before the shoe's draws of a moment earlier read from the next
file (a provisional ``CARD_DISAGREEMENT`` cleared a moment later: 445 of
861 in bench/watch.py).  The lines of one turn are taken as a merge by event
time of per-device runs: each device's lines stay in the order read (its
``seq`` order is this module's business, and its clock may go back), a
line without a readable time (rejected) keeps its place in its device's run.
An earlier attempt sorted the whole read by time with rejected lines first:
a device's rejected line taken before its own earlier lines set its ``last``
``seq``, so those became late lines (no gap wait, the ``SEQ_GAP`` tracker fed
out of order), and re-sent lines of an earlier time jumped ahead of their
device's lines — 12 watch tests lost or gained findings (docs/watch.md).
"""
from __future__ import annotations

import heapq
import time

import orjson

from pitwatch.engine.driver import CONFLICT, DUPLICATE, LATE, RECENT_WINDOW, STALE, DeviceGate, line_hash
from pitwatch.schemas.decode import Reject

__all__ = ["CONFLICT", "DUPLICATE", "FORGET_AFTER", "LATE", "STALE", "DeviceOrder", "in_floor_order", "line_hash"]

FORGET_AFTER = 2 * 86400.0    # seconds of silence after which a device holding nothing is forgotten


class _Device:
    __slots__ = ("last", "gate", "held", "origin", "seen")

    def __init__(self, window: int, recent: dict | None = None, holes: list | None = None) -> None:
        self.origin: str | None = None        # the one file/stream its lines came from; "*" several
        self.last: int | None = None
        self.gate = DeviceGate(recent, window, holes)   # {event_id: [hash, seq]}, [[first, last], …]
        self.held: dict[int, tuple] = {}    # seq -> (deadline, event, line)
        self.seen = time.monotonic()


class DeviceOrder:
    def __init__(self, wait: float = 2.0, window: int = RECENT_WINDOW) -> None:
        self.wait = wait
        self.window = window
        self.devices: dict[str, _Device] = {}
        self.counts = {DUPLICATE: 0, CONFLICT: 0, STALE: 0, LATE: 0}
        self.held = 0
        self.holding: dict[str, _Device] = {}   # the devices holding lines: all a turn's due() looks at

    def offer(self, ev, digest: str, line, now: float | None = None) -> tuple[list, str | None]:
        """One decoded event: returns (events released now, in order, and a drop/late reason or None)."""
        d = self.devices.get(ev.device_id)
        if d is None:
            d = self.devices[ev.device_id] = _Device(self.window)
        seq = ev.seq
        d.seen = time.monotonic() if now is None else now
        origin = line.file.split("#", 1)[0]
        if d.origin != origin:
            d.origin = origin if d.origin is None else "*"
        why = d.gate.admit(ev.event_id, seq, line_hash(str(ev.event_id), digest), d.last)
        if why is not None:
            self.counts[why] += 1
            return [], why
        if d.last is None or seq == d.last + 1:
            d.last = seq
            out = [(ev, line)]
            if d.held:
                self._chain(d, out)
            return out, None
        if seq <= d.last:
            self.counts[LATE] += 1
            d.gate.fill(seq)
            return [(ev, line)], LATE
        if self.wait <= 0:
            d.gate.advance(d.last, seq)
            d.last = seq
            return [(ev, line)], None
        d.held[seq] = ((now if now is not None else time.monotonic()) + self.wait, ev, line)
        self.held += 1
        self.holding[ev.device_id] = d
        return [], None

    def _chain(self, d: _Device, out: list) -> None:
        while d.last + 1 in d.held:
            d.last += 1
            _deadline, ev, line = d.held.pop(d.last)
            self.held -= 1
            out.append((ev, line))

    def due(self, now: float | None = None, everything: bool = False) -> list:
        """Held events whose wait ran out (all of them with ``everything``), in seq order per device.

        Only the devices holding lines are looked at: a turn costs what is held, not how many
        devices were ever seen."""
        if not self.held:
            return []
        now = time.monotonic() if now is None else now
        out: list = []
        for key, d in list(self.holding.items()):
            if not d.held:                      # released meanwhile (its hole filled)
                del self.holding[key]
                continue
            while d.held:
                first = min(d.held)
                if not everything and d.held[first][0] > now:
                    break
                d.gate.advance(d.last, first)   # the wait ran out: the seqs before it are a hole
                d.last = first - 1
                self._chain(d, out)
            if not d.held:
                del self.holding[key]
        return out

    def forget_silent(self, now: float | None = None, after: float = FORGET_AFTER) -> int:
        """Forget the devices silent for ``after`` seconds that hold nothing; how many."""
        now = time.monotonic() if now is None else now
        gone = [k for k, d in self.devices.items() if not d.held and now - d.seen >= after]
        for k in gone:
            del self.devices[k]
        return len(gone)

    def state(self) -> dict:
        return orjson.loads(self.state_json())

    def state_json(self) -> bytes:
        """The state as JSON bytes, serialised straight from the live dicts (no per-entry copies:
        a checkpoint's snapshot of ~128 entries per device costs a few ms, not tens)."""
        return orjson.dumps({
            "counts": self.counts,
            "devices": {
                k: {"last": d.last, "origin": d.origin, "recent": d.gate.recent, "holes": d.gate.holes,
                    "held": [[s, line.raw.decode("utf-8", "replace"), line.file, line.line]
                             for s, (_dl, _ev, line) in sorted(d.held.items())] if d.held else []}
                for k, d in self.devices.items()
            },
        }, option=orjson.OPT_NON_STR_KEYS)

    def restore(self, state: dict, decode) -> None:
        """``decode(raw, file, line) -> (event, line)``: held lines are decoded again."""
        self.counts.update(state.get("counts", {}))
        deadline = time.monotonic() + self.wait
        for k, s in state.get("devices", {}).items():
            d = self.devices[k] = _Device(self.window, _recent_pairs(s["recent"]), s.get("holes", []))
            d.last = s["last"]
            d.origin = s.get("origin")
            for seq, raw, file, number in s["held"]:
                ev, line = decode(raw.encode(), file, number)
                d.held[seq] = (deadline, ev, line)
                self.held += 1
                self.holding[k] = d


def in_floor_order(taken: list[tuple]) -> list[tuple]:
    """One turn's ``(line, decoded)`` pairs (``decoded``: ``(event, digest)`` or a
    :class:`pitwatch.schemas.decode.Reject`) in the floor's order: per-device runs, each in the order
    read, merged by event time (ties: the order read).  A line without a time (rejected) takes the
    time of the line before it in its run (or of the first one after it); a rejected line naming no
    device is in the run of its file, and a run without any time goes first (it reaches no engine)."""
    if len(taken) < 2:
        return taken
    runs: dict[object, list] = {}
    for k, pair in enumerate(taken):
        out = pair[1]
        if isinstance(out, Reject):
            device, ts = out.device_id, None
        else:
            device, ts = out[0].device_id, out[0].ts
        runs.setdefault(device if device is not None else ("file", pair[0].file), []).append([ts, k, pair])
    if len(runs) == 1:
        return taken
    for run in runs.values():
        known = next((r[0] for r in run if r[0] is not None), float("-inf"))
        for r in run:
            if r[0] is None:
                r[0] = known
            else:
                known = r[0]
    return [r[2] for r in heapq.merge(*runs.values())]   # [ts, k, pair]: k is unique, pairs never compared


def _recent_pairs(recent) -> dict:
    """``{event_id: [hash, seq]}`` from a checkpoint, of this version or an older one."""
    if isinstance(recent, dict):
        items = list(recent.items())
        if items and isinstance(items[0][1][1], str):   # before version 2: {"seq": [hash, event_id]}
            return {r[1]: [r[0], int(q)] for q, r in items}
        return {e: list(r) for e, r in items}
    return {r[2]: [r[1], r[0]] for r in recent}        # older still: [[seq, hash, event_id], …]
