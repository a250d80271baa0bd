"""Live alerts never show a card the dealer terminal has not dealt yet.

Which engine texts can name a shoe card (``rules/packs.py``): the within-pack
``UNSHUFFLED_SEQUENCE`` found in the shoe's draws ("shoe draws 1-8 run in
new-deck order: Ah 2h …"), ``SHOE_CARD_MISMATCH`` ("the shoe read 7h at draw
45") and ``UNACCOUNTED_CARD`` ("shoe draw 45 (7h) was never recorded").  The
card-reading shoe reports a card as it leaves the shoe, and its stream may
run seconds ahead of the terminal's: a baccarat card drawn face down and not
yet turned (or squeezed) would be revealed by an alert raised from the shoe's
side alone.  The nightly batch has no such issue (the coup is over), so the
engine's texts are right as they are; the live path masks.

Rule: a card of an evidence event that is a shoe ``card_drawn`` of index *i*
of pack *P* is masked (``??``) in ``expected``/``actual`` while the terminal
has recorded fewer than *i* cards (burns included) of *P* and *P* is still in
play (no ``shoe_emptied``, the terminal has not moved to another pack).  The
terminal's own cards are dealt by definition and never masked.  Everything
else of the alert (``finding_id``, evidence ids, rule, ts …) is unchanged, so
it is still the finding the batch writes; only its two texts may say less.
(A card code can occur more than once in a text with several decks: every
occurrence is masked, erring on the side of saying less.)

State is small and bounded: only the shoe draws not yet dealt are kept (a
handful: the skew between the streams), of the last ``KEEP_PACKS`` packs per
table; it is part of the checkpoint (``state()``/``restore()``).
"""
from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict

KEEP_PACKS = 4
KEEP_ROUNDS = 64
MASK = "??"


class _Table:
    __slots__ = ("round_pack", "term_pack", "term_last", "term_count", "draws", "done")

    def __init__(self) -> None:
        self.round_pack: dict[str, str] = {}
        self.term_pack: str | None = None     # last pack the terminal named
        self.term_last: str | None = None     # pack of the terminal's last card
        self.term_count: dict[str, int] = {}
        self.draws: dict[str, OrderedDict] = {}  # pack -> {event_id: (index, card)} not yet dealt
        self.done: list[str] = []


class DealtGuard:
    def __init__(self) -> None:
        self.tables: dict[str, _Table] = {}
        self.masked = 0

    def observe(self, ev) -> None:
        t = self.tables.get(ev.table_id)
        if t is None:
            t = self.tables[ev.table_id] = _Table()
        typ = ev.type
        if ev.source == "shoe":
            if typ == "card_drawn" and ev.card is not None:
                if ev.pack_id in t.done or ev.index <= t.term_count.get(ev.pack_id, 0):
                    return
                draws = t.draws.get(ev.pack_id)
                if draws is None:
                    draws = t.draws[ev.pack_id] = OrderedDict()
                    while len(t.draws) > KEEP_PACKS:
                        del t.draws[next(iter(t.draws))]
                draws[ev.event_id] = (ev.index, ev.card)
            elif typ == "shoe_emptied":
                self._done(t, ev.pack_id)
            return
        if ev.source != "dealer":
            return
        if typ == "round_started" and ev.pack_id:
            t.round_pack[ev.round_id] = ev.pack_id
            if len(t.round_pack) > KEEP_ROUNDS:
                del t.round_pack[next(iter(t.round_pack))]
        elif typ == "reshuffle" and ev.round_id and ev.pack_id:
            t.round_pack[ev.round_id] = ev.pack_id
        if ev.pack_id and typ != "round_started":
            t.term_pack = ev.pack_id
        if typ == "card_dealt":
            pack = ev.pack_id or t.round_pack.get(ev.round_id) or t.term_pack
            if pack is None:
                return
            if t.term_last not in (None, pack):
                self._done(t, t.term_last)
            t.term_last = pack
            n = t.term_count[pack] = t.term_count.get(pack, 0) + 1
            draws = t.draws.get(pack)
            while draws and next(iter(draws.values()))[0] <= n:
                draws.popitem(last=False)

    @staticmethod
    def _done(t: _Table, pack: str | None) -> None:
        if pack is not None and pack not in t.done:
            t.done = (t.done + [pack])[-KEEP_PACKS:]
            t.draws.pop(pack, None)
            for k in [k for k in t.term_count if k not in t.draws and k != t.term_last]:
                del t.term_count[k]

    def apply(self, f):
        """The finding as a live alert may show it (the same object when nothing is masked)."""
        t = self.tables.get(f.table_id)
        if t is None or not t.draws:
            return f
        hidden = [d[1] for draws in t.draws.values() for eid in f.event_ids
                  if (d := draws.get(eid)) is not None]
        if not hidden:
            return f
        self.masked += 1
        pattern = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(sorted(set(map(re.escape, hidden)))) + r")(?![A-Za-z0-9])")
        return dataclasses.replace(f, expected=pattern.sub(MASK, f.expected), actual=pattern.sub(MASK, f.actual))

    def state(self) -> dict:
        return {tid: {"round_pack": list(t.round_pack.items()), "term_pack": t.term_pack,
                      "term_last": t.term_last, "term_count": t.term_count, "done": t.done,
                      "draws": {p: [[e, i, c] for e, (i, c) in d.items()] for p, d in t.draws.items()}}
                for tid, t in self.tables.items()}

    def restore(self, state: dict) -> None:
        for tid, s in state.items():
            t = self.tables[tid] = _Table()
            t.round_pack = dict(map(tuple, s["round_pack"]))
            t.term_pack, t.term_last, t.done = s["term_pack"], s["term_last"], list(s["done"])
            t.term_count = dict(s["term_count"])
            t.draws = {p: OrderedDict((e, (i, c)) for e, i, c in d) for p, d in s["draws"].items()}
