"""Per-device order and duplicate drop for the live feed.

The engine needs each device's events in ``seq`` order (devices may
interleave in any way).  A device writes its lines in ``seq`` order, and one
file (or one Redis stream) keeps that order, so the common case costs
nothing: an event whose ``seq`` is the next one of its device is released at
once, and so is one after a hole while all the device's lines came through
one file or stream (the missing lines cannot come later from elsewhere: the
hole is lost, and the engine's ``SEQ_GAP`` says so at once).  Only a device
seen in more than one file or stream (a day's new file, a re-sent file, a
second feed) may have a hole filled later: its event after a hole is held,
for at most ``wait`` seconds; held lines are released in ``seq`` order as
soon as the hole is filled, or, when the wait runs out, the hole is taken as
lost and the held events go on.  Nothing else is ever held: the cost of a
hole is at most ``wait`` seconds of delay for that one device.

Duplicates: every released or held ``seq`` of the last ``window`` of a device
is remembered with a short hash of (event_id, content digest).  A line with
a remembered ``seq`` and the same hash is a duplicate delivery and dropped;
one with the same ``event_id`` but other content is a conflicting copy and
dropped too (the first copy was already used: see docs/watch.md on how this
differs from the batch, which rejects every copy).  A line whose ``seq`` is
older than the window cannot be checked and is dropped as a stale
re-delivery; a line inside the window that was never seen is a late line and
is released (the engine tolerates it; its hole may already have been
reported).

State (``state_json()``/``restore()``) is plain data: per device the last
released ``seq``, the remembered hashes (``{"seq": [hash, event_id]}``) and
the held lines (raw text, so a restart decodes them again).
"""
from __future__ import annotations

import hashlib
import time

import orjson

DUPLICATE, CONFLICT, STALE, LATE = "duplicate", "conflict", "stale", "late"


def line_hash(event_id: str, digest: str) -> str:
    return hashlib.blake2b(f"{event_id}\x00{digest}".encode(), digest_size=8).hexdigest()


class _Device:
    __slots__ = ("last", "recent", "held", "origin")

    def __init__(self) -> None:
        self.origin: str | None = None        # the one file/stream its lines came from; "*" several
        self.last: int | None = None
        self.recent: dict[int, list] = {}   # seq -> [hash, event_id]
        self.held: dict[int, tuple] = {}    # seq -> (deadline, event, line)


class DeviceOrder:
    def __init__(self, wait: float = 2.0, window: int = 128) -> None:
        self.wait = wait
        self.window = window
        self.devices: dict[str, _Device] = {}
        self.counts = {DUPLICATE: 0, CONFLICT: 0, STALE: 0, LATE: 0}
        self.held = 0

    def offer(self, ev, digest: str, line, now: float | None = None) -> tuple[list, str | None]:
        """One decoded event: returns (events released now, in order, and a drop/late reason or None)."""
        d = self.devices.get(ev.device_id)
        if d is None:
            d = self.devices[ev.device_id] = _Device()
        seq = ev.seq
        origin = line.file.split("#", 1)[0]
        if d.origin != origin:
            d.origin = origin if d.origin is None else "*"
        h = line_hash(ev.event_id, digest)
        rec = d.recent.get(seq)
        if rec is not None:
            if rec[0] == h:
                self.counts[DUPLICATE] += 1
                return [], DUPLICATE
            if rec[1] == ev.event_id:
                self.counts[CONFLICT] += 1
                return [], CONFLICT
        if d.last is not None and seq <= d.last - self.window:
            self.counts[STALE] += 1
            return [], STALE
        d.recent[seq] = [h, ev.event_id]
        d.recent.pop(seq - self.window, None)
        if d.last is None or seq == d.last + 1:
            d.last = seq
            out = [(ev, line)]
            if d.held:
                self._chain(d, out)
            return out, None
        if seq <= d.last:
            self.counts[LATE] += 1
            return [(ev, line)], LATE
        if self.wait <= 0 or d.origin != "*":
            d.last = seq
            return [(ev, line)], None
        d.held[seq] = ((now if now is not None else time.monotonic()) + self.wait, ev, line)
        self.held += 1
        return [], None

    def _chain(self, d: _Device, out: list) -> None:
        while d.last + 1 in d.held:
            d.last += 1
            _deadline, ev, line = d.held.pop(d.last)
            self.held -= 1
            out.append((ev, line))

    def due(self, now: float | None = None, everything: bool = False) -> list:
        """Held events whose wait ran out (all of them with ``everything``), in seq order per device."""
        if not self.held:
            return []
        now = time.monotonic() if now is None else now
        out: list = []
        for d in self.devices.values():
            while d.held:
                first = min(d.held)
                if not everything and d.held[first][0] > now:
                    break
                d.last = first - 1
                self._chain(d, out)
        return out

    def prune(self, keep: set) -> None:
        """Forget devices not in ``keep`` that hold nothing (bounded memory over days)."""
        for dev in [k for k, d in self.devices.items() if k not in keep and not d.held]:
            del self.devices[dev]

    def state(self) -> dict:
        return orjson.loads(self.state_json())

    def state_json(self) -> bytes:
        """The state as JSON bytes, serialised straight from the live dicts (no per-entry copies:
        a checkpoint's snapshot of ~128 entries per device costs a few ms, not tens)."""
        return orjson.dumps({
            "counts": self.counts,
            "devices": {
                k: {"last": d.last, "origin": d.origin, "recent": d.recent,
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
            d = self.devices[k] = _Device()
            d.last = s["last"]
            d.origin = s.get("origin")
            recent = s["recent"]
            if isinstance(recent, dict):   # {"seq": [hash, event_id]}
                d.recent = {int(q): list(r) for q, r in recent.items()}
            else:                          # older checkpoints: [[seq, hash, event_id], …]
                d.recent = {r[0]: [r[1], r[2]] for r in recent}
            for seq, raw, file, number in s["held"]:
                ev, line = decode(raw.encode(), file, number)
                d.held[seq] = (deadline, ev, line)
                self.held += 1
