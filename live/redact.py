"""Live alerts never show a shoe card the dealer terminal has not dealt.

Which engine texts can name a shoe card (``rules/packs.py``): the within-pack
``UNSHUFFLED_SEQUENCE`` found in the shoe's draws ("shoe draws 1-8 run in
new-deck order: Ah 2h …"), ``SHOE_CARD_MISMATCH`` ("the shoe read 7h at draw
45") and ``UNACCOUNTED_CARD`` ("shoe draw 45 (7h) was never recorded").  The
card-reading shoe reports a card as it leaves the shoe, and its stream may
run seconds (a mid-shift start: a whole file) ahead of the terminal's: a card
drawn face down and not yet turned, or a card never dealt at all (the rest of
the pack, the stub), would be revealed by an alert raised from the shoe's
side.  The nightly batch writes the engine's texts whole; the live path masks.

Rule: a shoe ``card_drawn`` of index *i* of pack *P* is **undealt** while the
terminal has recorded fewer than *i* cards (burns included) of *P*: *i* is
beyond the last place of *P* the terminal has recorded.  Nothing the shoe
says changes that — not ``shoe_emptied``, not the shoe moving to another
pack, not the order the files are read in (a shoe file read before the
terminal's, so that the terminal's ``table_opened`` releases the shoe's
held draws into findings): only the terminal recording place *i* does.

An alert whose evidence holds an undealt draw shows **no card at all** in
its ``expected`` and ``actual`` (every card code becomes ``??``): masking
only the undealt cards of a run "in new-deck order" would still tell the
rest (2h 3h 4h ?? … is 5h 6h …).  The same when the alert is about a pack
this guard no longer remembers (or never saw): it cannot tell which of its
cards are dealt, so it shows none.  Everything else of the alert
(``finding_id``, evidence ids, rule, ts …) is unchanged, so it is still the
finding the batch writes; only its two texts may say less.

Terminal cards are given to a pack as the engine does: the event's own
``pack_id``, else its round's pack (``round_started``, changed by
``reshuffle``), else the last pack the terminal named.  Packs and rounds are
those of the engine: :class:`pitwatch.live.engine.LiveEngine` observes each event after
the replay, with its ids as the use keys the engine gave them (ids used again,
events.md 2.1: a second use of a pack id counts its own dealt places).

State is bounded: per table the last ``KEEP_PACKS`` packs touched, each with
the terminal's count and its undealt draws (at most ``MAX_UNDEALT``; a pack
with more — no real shoe — is masked whole from then on); a pack let go
counts as unknown (masked whole).  It is part of the checkpoint
(``state()``/``restore()``; a state of the earlier format is read, the packs
it had let go count as unknown).
"""
from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict

from pitwatch.rules.uses import use_key

KEEP_PACKS = 32
KEEP_ROUNDS = 64
MAX_UNDEALT = 1024
MASK = "??"
STATE_VERSION = 2
_CARD = re.compile(r"(?<![A-Za-z0-9])[A2-9TJQK][cdhs](?![A-Za-z0-9])")


class _Pack:
    __slots__ = ("term", "undealt", "overflow")

    def __init__(self, term: int = 0, undealt=None, overflow: bool = False) -> None:
        self.term = term                                  # cards of the pack the terminal recorded
        self.undealt: dict[str, tuple[int, str]] = undealt or {}  # event_id -> (index, card), index > term
        self.overflow = overflow                          # more undealt draws than MAX_UNDEALT were seen


class _Table:
    __slots__ = ("round_pack", "term_pack", "packs")

    def __init__(self) -> None:
        self.round_pack: dict[str, str] = {}
        self.term_pack: str | None = None        # last pack the terminal named
        self.packs: OrderedDict[str, _Pack] = OrderedDict()

    def pack(self, pack_id: str) -> _Pack:
        p = self.packs.get(pack_id)
        if p is None:
            p = self.packs[pack_id] = _Pack()
            while len(self.packs) > KEEP_PACKS:
                self.packs.popitem(last=False)   # let go: its alerts are masked whole from now on
        else:
            self.packs.move_to_end(pack_id)
        return p


class DealtGuard:
    def __init__(self) -> None:
        self.tables: dict[str, _Table] = {}
        self.masked = 0

    def observe(self, ev) -> None:
        """Every accepted event, before the engine replays it."""
        t = self.tables.get(ev.table_id)
        if t is None:
            t = self.tables[ev.table_id] = _Table()
        typ = ev.type
        if ev.source != "dealer":
            if ev.pack_id is None:
                return
            p = t.pack(ev.pack_id)
            if ev.source == "shoe" and typ == "card_drawn" and ev.card is not None and ev.index > p.term:
                if len(p.undealt) >= MAX_UNDEALT:
                    p.overflow = True
                else:
                    p.undealt[ev.event_id] = (ev.index, ev.card)
            return
        if typ in ("round_started", "reshuffle") and ev.round_id and ev.pack_id:
            t.round_pack[ev.round_id] = ev.pack_id
            if len(t.round_pack) > KEEP_ROUNDS:
                del t.round_pack[next(iter(t.round_pack))]
        if ev.pack_id:
            t.term_pack = ev.pack_id
        if typ != "card_dealt":
            if ev.pack_id:
                t.pack(ev.pack_id)
            return
        pid = ev.pack_id or (t.round_pack.get(ev.round_id) if ev.round_id else None) or t.term_pack
        if pid is None:
            return
        p = t.pack(pid)
        p.term += 1
        if p.undealt:
            n = p.term
            for eid in [e for e, (i, _c) in p.undealt.items() if i <= n]:
                del p.undealt[eid]

    def apply(self, f):
        """The finding as a live alert may show it (the same object when nothing is masked)."""
        if not (_CARD.search(f.expected) or _CARD.search(f.actual)):
            return f
        t = self.tables.get(f.table_id)
        # packs are kept by use key: a finding's id and use; a provisional text's pack_id is the key already
        pid = None if f.pack_id is None else use_key(f.pack_id, getattr(f, "pack_use", None) or 1)
        if pid is not None and (t is None or pid not in t.packs or t.packs[pid].overflow):
            hide = True            # a pack let go (or never seen): which of its cards are dealt is unknown
        elif t is None:
            hide = False
        else:
            ids = f.event_ids
            hide = any(eid in p.undealt for p in t.packs.values() if p.undealt for eid in ids)
        if not hide:
            return f
        self.masked += 1
        return dataclasses.replace(f, expected=_CARD.sub(MASK, f.expected), actual=_CARD.sub(MASK, f.actual))

    def state(self) -> dict:
        return {"v": STATE_VERSION, "tables": {
            tid: {"round_pack": list(t.round_pack.items()), "term_pack": t.term_pack,
                  "packs": [[pid, p.term, [[e, i, c] for e, (i, c) in p.undealt.items()], p.overflow]
                            for pid, p in t.packs.items()]}
            for tid, t in self.tables.items()}}

    def restore(self, state: dict) -> None:
        if state.get("v") != STATE_VERSION:
            return self._restore_v1(state)
        for tid, s in state["tables"].items():
            t = self.tables[tid] = _Table()
            t.round_pack = dict(map(tuple, s["round_pack"]))
            t.term_pack = s["term_pack"]
            for pid, term, undealt, overflow in s["packs"]:
                t.packs[pid] = _Pack(term, {e: (i, c) for e, i, c in undealt}, overflow)

    def _restore_v1(self, state: dict) -> None:
        """The first format (draws kept only while the pack was in play): packs it had let go are unknown."""
        for tid, s in state.items():
            t = self.tables[tid] = _Table()
            t.round_pack = dict(map(tuple, s["round_pack"]))
            t.term_pack = s["term_pack"]
            done = set(s.get("done", []))
            for pid, n in s["term_count"].items():
                if pid not in done:
                    t.packs[pid] = _Pack(n)
            for pid, draws in s["draws"].items():
                if pid not in done:
                    p = t.packs.get(pid) or t.packs.setdefault(pid, _Pack())
                    p.undealt.update({e: (i, c) for e, i, c in draws})
