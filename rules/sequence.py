"""``SEQ_GAP``: a device's ``seq`` skips numbers (events were lost upstream).

:class:`SeqTracker` is a pure tracker, fed per device in ``seq`` order (the
pipeline sorts each device's events by ``seq``; different devices may be
interleaved in any way).  It is keyed by device, not by table: a device
serving several tables has one ``seq`` across them, so the pipeline runs it
over a device's events of every table (accepted events *and* rejected lines
whose ``device_id`` and ``seq`` could be read: those arrived, they are no
gap — feed them with :meth:`SeqTracker.feed_reject`).

Decisions:

* the first ``seq`` seen of a device starts it (no baseline, no gap);
* a ``seq`` not greater than the last one seen (a duplicate or a late line)
  is ignored;
* one finding per gap, keyed by table, device and the missing range; its
  ``table_id`` is the table of the event after the gap (else the one before),
  its evidence the events either side of the gap (rejected lines have no
  ``ts`` and are left out of the evidence; a gap with no evidence event
  having a ``ts`` raises nothing, since a finding needs one).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import msgspec

from pitwatch.rules.finding import Finding, GamingDay, default_gaming_day, make_finding
from pitwatch.rules.state import DeviceSeq, Ref
from pitwatch.wording import plural

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pitwatch.schemas.decode import Reject
    from pitwatch.schemas.events import Event

#: an arrival as :meth:`SeqTracker.feed_sorted` reads it: (table_id, event_id, ts, ts_offset)
_Arrival = tuple[str | None, str | None, int | None, int | None]


class SeqTracker:
    def __init__(self, gaming_day: GamingDay = default_gaming_day) -> None:
        self._gaming_day = gaming_day
        self._last: dict[str, DeviceSeq] = {}   # device_id -> its last event

    def feed(self, device_id: str | None, seq: int | None, table_id: str | None = None, event_id: str | None = None,
             ts: int | None = None, game: str | None = None, ts_offset: int | None = None) -> list[Finding]:
        """One event (or readable rejected line) of ``device_id``; returns the gap it closes, if any."""
        if device_id is None or seq is None:
            return []
        last = self._last.get(device_id)
        if last is not None and seq <= last.seq:
            return []
        self._last[device_id] = DeviceSeq(seq, table_id, event_id, ts, ts_offset)
        if last is None or seq == last.seq + 1:
            return []
        before_seq = last.seq
        evidence = [Ref(i, t, None, device_id, o) for i, t, o in ((last.event_id, last.ts, last.ts_offset),
                                                                  (event_id, ts, ts_offset))
                    if i is not None and t is not None]
        table = table_id or last.table_id
        if not evidence or table is None:
            return []
        first, final = before_seq + 1, seq - 1
        lost = final - first + 1
        return [make_finding(
            "SEQ_GAP", table_id=table, game=game, key=(device_id, first, final), evidence=evidence,
            expected=f"after event {before_seq}, the device's next event numbered {first}",
            actual=f"the next event was numbered {seq}: {plural(lost, 'event')} lost (number {first}"
                   + (f" to {final})" if lost > 1 else ")"),
            gaming_day=self._gaming_day, device_id=device_id,
        )]

    def feed_sorted(self, device_id: str, seqs: npt.NDArray[np.int64],
                    row: Callable[[int], Sequence[str | int | None]],
                    game_of: Mapping[str | None, str | None]) -> list[Finding]:
        """Every arrival of ``device_id`` at once: the same findings and state as :meth:`feed`
        called on each in turn, visiting only the rows either side of a gap.

        ``seqs``: a NumPy integer array sorted ascending with no repeats (of
        several arrivals of one ``seq`` only the first in feed order is
        passed; :meth:`feed` ignores the others).  ``row(i)``: ``(table_id,
        event_id, ts, ts_offset)`` of arrival ``i``.  ``game_of``: table_id → game.

        Between two gaps the seqs run consecutively, and feeding such a run
        one by one only moves ``last`` along it; so ``last`` is set to the
        row before each gap and the row after it is fed.
        """
        import numpy as np

        n = len(seqs)
        last = self._last.get(device_id)
        start = 0 if last is None else int(np.searchsorted(seqs, last.seq, side="right"))
        if start >= n:
            return []

        def arrival(i: int) -> _Arrival:
            return cast("_Arrival", tuple(row(i)))  # row(i)'s values in that order

        def fed(i: int) -> list[Finding]:
            table_id, event_id, ts, ts_offset = arrival(i)
            return self.feed(device_id, int(seqs[i]), table_id, event_id, ts, game_of.get(table_id), ts_offset)

        findings = fed(start)
        for i in (np.flatnonzero(np.diff(seqs[start:]) != 1) + start + 1).tolist():
            self._last[device_id] = DeviceSeq(int(seqs[i - 1]), *arrival(i - 1))
            findings.extend(fed(i))
        self._last[device_id] = DeviceSeq(int(seqs[n - 1]), *arrival(n - 1))
        return findings

    def feed_event(self, ev: Event, game: str | None = None) -> list[Finding]:
        return self.feed(ev.device_id, ev.seq, ev.table_id, ev.event_id, ev.ts, game, ev.ts_offset)

    def feed_reject(self, reject: Reject) -> list[Finding]:
        """A rejected line (``pitwatch.schemas.decode.Reject``) whose device_id and seq were readable."""
        return self.feed(reject.device_id, reject.seq, reject.table_id, reject.event_id, None)

    def state(self) -> dict[str, Any]:
        """Plain data (each device's last event as ``[seq, table_id, event_id, ts, ts_offset]``)."""
        return {"last": msgspec.to_builtins(dict(sorted(self._last.items())))}

    @classmethod
    def from_state(cls, state: dict[str, Any], gaming_day: GamingDay = default_gaming_day) -> "SeqTracker":
        t = cls(gaming_day)
        t._last = msgspec.convert(state["last"], dict[str, DeviceSeq])
        return t
