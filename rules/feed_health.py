"""Feed health (rules.md "Feed health (version 2)"): ``SHOE_SILENT`` and ``UNKNOWN_DEVICE``.

A table whose card-reading shoe goes quiet must never look like a clean
table: every card-integrity check needs the shoe, so unplugging it would
hide a card switch.  And a device that is not the casino's must not write
for a table unnoticed (the 2023 shuffler hijack).

This is a *table check*: it runs on every table beside the game's plug-in
(registered in :data:`pitwatch.rules.procedures.CHECKS`, see "Table checks" in
:mod:`pitwatch.rules.game`).  It does no I/O: the optional **device registry**
(``devices.csv``, loaded by ``inputs/devices.py``) reaches it as the
table's :attr:`pitwatch.rules.reference.TableReference.devices`: the registry rows
for that table and for ``*`` (a back-room shuffler serving any table), as
:data:`DeviceRow` tuples; ``None`` means the run has no registry.

``SHOE_SILENT`` (major; baccarat, three_bet_poker, combate; key: pack)
    The terminal recorded cards of a pack (``card_dealt``, burns included)
    that no shoe drew (no ``card_drawn`` of that pack), on a table that is
    expected to have a shoe:

    * with a registry: it lists a shoe for the table on the gaming day of
      the pack's first terminal card;
    * without one: a shoe wrote (any shoe event) for the table at a ``ts``
      earlier than the pack's first terminal card, in the input or in the
      state carried from earlier nights (the table state keeps the earliest
      shoe ``ts`` it has seen).

    When: an absence, so once both card streams have passed the pack (a
    silent shoe never passes it: that is ``close()``).  A pack the shoe
    drew any card of never fires.  Without a registry, "a shoe wrote
    earlier" can only become true as events arrive (the earliest ``ts``
    only goes down): it fires as soon as it is true, and a pack for which
    it is still false is held open (its row waits) and decided at
    ``close()``, when the whole input has been seen.  So the answer
    depends on ``ts`` only, never on arrival order or on how the input is
    split into files.  Readings: the seeds' ``shoe`` setting wins over the
    registry (a table the seeds say deals by hand ignores shoe events, so
    it never raises ``SHOE_SILENT``); a shoe that drew some cards of the
    pack and then stopped is ``UNACCOUNTED_CARD``'s, not this rule's.
    Evidence: the pack's first and last terminal cards (the texts never
    name the shoe event that made the shoe expected: it may not have
    arrived yet when the rule fires, and the finding must not change).

``UNKNOWN_DEVICE`` (critical; every game; only with a registry; key: table, device)
    An event whose ``device_id`` the registry does not list for that
    event's ``source`` and ``table_id`` on the gaming day of its ``ts`` (a
    device not listed at all counts too).  One finding per table and
    device (ever: the state carries which were reported); evidence: the
    device's first such event for the table (its ``seq`` order, the same in
    any interleaving).  The events are still replayed.  The finding's
    ``game`` is the table's game: an unknown device's event that comes
    before the table's game is known waits (in the state) for it, or for
    ``close()``, so the row does not depend on arrival order.  The texts
    name the event's type and id, never its card.

State: one record in the table's state, ``ctx.table.feed``
(:class:`pitwatch.rules.state.FeedRecord`); whether a pack's SHOE_SILENT is
decided is kept in the pack (``pack.shoe_silent_decided``).
"""
from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

from pitwatch.rules.finding import ref
from pitwatch.rules.reference import TableReference
from pitwatch.rules.state import FeedRecord, Pack, UnknownDevice
from pitwatch.schemas.contract import SHOE_GAMES
from pitwatch.schemas.events import Event

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay

#: a registry row: (device_id, source, table_id or "*", from_day or None, to_day or None), days inclusive
DeviceRow = tuple[str, str, str, _dt.date | None, _dt.date | None]

_MINUTE = 60_000_000  # a gaming day changes at most on a minute (HH:MM cutoff, whole-minute zone offsets)


def _on(day: _dt.date, first: _dt.date | None, last: _dt.date | None) -> bool:
    return (first is None or first <= day) and (last is None or day <= last)


class FeedHealth:
    """The feed-health table check of one table (configuration only; state in ``ctx.table.feed``)."""

    def __init__(self, ref: TableReference) -> None:
        rows = getattr(ref, "devices", None)
        self.registry = rows is not None
        self.allowed: dict[tuple[str, str], list[tuple[_dt.date | None, _dt.date | None]]] = {}
        self.shoes: list[tuple[str, _dt.date | None, _dt.date | None]] = []
        for device_id, source, _table, first, last in rows or ():
            self.allowed.setdefault((device_id, source), []).append((first, last))
            if source == "shoe":
                self.shoes.append((device_id, first, last))
        self._seen: dict[tuple[str, str], tuple[int, bool]] = {}  # (device, source) -> (minute, listed): a cache

    # --- state ----------------------------------------------------------------
    @staticmethod
    def record(ctx: TableReplay) -> FeedRecord:
        rec = ctx.table.feed
        if rec is None:
            rec = ctx.table.feed = FeedRecord()
        return rec

    # --- hooks ----------------------------------------------------------------
    def on_event(self, ctx: TableReplay, ev: Event) -> None:
        """Every event of the table, after the engine replayed it."""
        if ev.source == "shoe":
            rec = self.record(ctx)
            if rec.shoe_ts is None or ev.ts < rec.shoe_ts:
                rec.shoe_ts = ev.ts
        if not self.registry:
            return
        if not self._listed(ctx, ev):
            rec = self.record(ctx)
            if ev.device_id not in rec.reported:
                rec.reported.append(ev.device_id)
                rec.pending.append(UnknownDevice(ev.device_id, ev.source, ev.type, ref(ev)))
        if ctx.game is not None:
            feed = ctx.table.feed
            if feed is not None and feed.pending:
                self._report(ctx, feed)

    def on_pack_done(self, ctx: TableReplay, pack: Pack) -> None:
        self._decide(ctx, pack, closing=False)

    def pack_open(self, ctx: TableReplay, pack: Pack) -> bool:
        """True while the pack's SHOE_SILENT is undecided (its row waits)."""
        if not pack.shoe_silent_decided:
            self._decide(ctx, pack, closing=False)
        return not pack.shoe_silent_decided

    def on_close(self, ctx: TableReplay) -> None:
        for pack in ctx.open_packs():
            self._decide(ctx, pack, closing=True)
        rec = ctx.table.feed
        if rec is not None and rec.pending:
            self._report(ctx, rec)

    # --- UNKNOWN_DEVICE -------------------------------------------------------------
    def _listed(self, ctx: TableReplay, ev: Event) -> bool:
        key = (ev.device_id, ev.source)
        minute = ev.ts // _MINUTE
        seen = self._seen.get(key)
        if seen is not None and seen[0] == minute:
            return seen[1]
        spans = self.allowed.get(key)
        listed = False
        if spans:
            day = ctx.gaming_day(ev.ts)
            listed = any(_on(day, first, last) for first, last in spans)
        if len(self._seen) >= 4096:   # a feed naming ever new devices: the cache stays small
            self._seen.clear()
        self._seen[key] = (minute, listed)
        return listed

    def _report(self, ctx: TableReplay, rec: FeedRecord) -> None:
        pending, rec.pending = rec.pending, []
        for unknown in pending:
            device_id, source, typ, evidence = unknown.device_id, unknown.source, unknown.type, unknown.ref
            day = ctx.gaming_day(evidence.ts)
            listed = sorted({s for (d, s) in self.allowed if d == device_id})
            why = (f"the registry lists it for this table only as {', '.join(listed)}" if listed and source not in listed
                   else "the registry lists it for this table on other days" if listed
                   else "the registry does not list it for this table")
            ctx.emit("UNKNOWN_DEVICE", key=(device_id,), evidence=[evidence], device_id=device_id,
                     expected=f"every device writing for {ctx.table_id} is in devices.csv for its source "
                              f"and that table on gaming day {day}",
                     actual=f"{source} {device_id} wrote a {typ.replace('_', ' ')} event ({evidence.event_id}) for {ctx.table_id} "
                            f"on gaming day {day}: {why}")

    # --- SHOE_SILENT --------------------------------------------------------------
    def _decide(self, ctx: TableReplay, pack: Pack, closing: bool) -> None:
        if pack.shoe_silent_decided:
            return
        al = pack.alignment
        # called once both card streams passed the pack (on_pack_done, pack_open) or at close()
        if ctx.game not in SHOE_GAMES or ctx.shoeless or al.shoe or not al.term:
            pack.shoe_silent_decided = True   # a shoe drew from it, nothing was dealt, or no shoe at this game
            return
        t = al.term
        first = min(t, key=lambda c: (c.ts, c.dealer_pos))
        why = self._shoe_expected(ctx, first.ts)
        if why is None and not closing and not self.registry:
            return                          # a shoe event with an earlier ts may still arrive
        pack.shoe_silent_decided = True
        if why is None:
            return
        last = max(t, key=lambda c: (c.ts, c.dealer_pos))
        ctx.emit("SHOE_SILENT", pack=pack, key=(),
                 evidence=[first.ref(), last.ref()],
                 expected=f"the shoe draws every card of the pack: {why}",
                 actual=f"the terminal recorded {len(t)} card{'s' if len(t) != 1 else ''} of pack "
                        f"{ctx.label(pack.pack_id)} and no shoe drew any")

    def _shoe_expected(self, ctx: TableReplay, first_ts: int) -> str | None:
        """Why the table is expected to have a shoe when the pack's first card was dealt; None: not (yet)."""
        if self.registry:
            day = ctx.gaming_day(first_ts)
            listed = sorted({d for d, first, last in self.shoes if _on(day, first, last)})
            if not listed:
                return None
            return f"the registry lists shoe {', '.join(listed)} for {ctx.table_id} on gaming day {day}"
        shoe_ts = ctx.table.feed.shoe_ts if ctx.table.feed is not None else None
        if shoe_ts is not None and shoe_ts < first_ts:
            return f"a shoe wrote for {ctx.table_id} before the pack's first card"
        return None
