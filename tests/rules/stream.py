"""Terse builders of contract event streams for the rule tests.

``Floor`` writes the three devices of one table (dealer terminal, shoe,
shuffler), each with its own ``seq``; ``Baccarat`` adds the steps of
document 003 (prepare a pack, burn, deal a coup with correct payouts) so a
test states only what it breaks.  Every event is a :class:`pitwatch.schemas.events.Event`
as the decoder would produce it.
"""
from __future__ import annotations

import json
import random

from pitwatch.rules.cards import baccarat_total
from pitwatch.rules.cards import coup as deal_coup
from pitwatch.rules.table import TableReplay
from pitwatch.schemas.events import Event

T0 = 1_795_892_400_000_000  # 2026-11-28T16:00:00Z in micros
DEVICES = {"dealer": "DT-1", "shoe": "SHOE-1", "shuffler": "SHF-1"}


def eight_decks(seed: int = 7) -> list[str]:
    cards = [r + s for _ in range(8) for r in "A23456789TJQK" for s in "cdhs"]
    random.Random(seed).shuffle(cards)
    return cards


class Floor:
    def __init__(self, table_id: str = "BAC-T", dealer_id: str = "D-1") -> None:
        self.table_id = table_id
        self.dealer_id = dealer_id
        self.events: list[Event] = []
        self.seq = {k: 0 for k in DEVICES}
        self.ts = T0

    def _ev(self, source: str, type_: str, **fields) -> Event:
        self.seq[source] += 1
        self.ts += 1_000_000
        n = self.seq[source]
        base = dict(event_id=f"{source[:2]}-{n}", ts=self.ts, source=source, type=type_,
                    table_id=self.table_id, device_id=DEVICES[source], seq=n)
        if source == "dealer":
            base["dealer_id"] = self.dealer_id
        base.update(fields)
        ev = Event(**base)
        self.events.append(ev)
        return ev

    def dealer(self, type_: str, **f) -> Event:
        return self._ev("dealer", type_, **f)

    def shoe(self, type_: str, **f) -> Event:
        return self._ev("shoe", type_, **f)

    def shuffler(self, type_: str, **f) -> Event:
        return self._ev("shuffler", type_, **f)

    def replay(self, events=None, close: bool = True) -> list:
        rp = TableReplay(self.table_id)
        out = []
        for ev in self.events if events is None else events:
            out += rp.feed(ev)
        if close:
            out += rp.close()
        self.last_replay = rp
        return out


class Baccarat(Floor):
    """A baccarat table that follows document 003 unless told otherwise."""

    def __init__(self, seats=(2, 3), seed: int = 7, **kw) -> None:
        super().__init__(**kw)
        self.pack_id = None
        self.cards: list[str] = []
        self.index = 0
        self.round_no = 0
        self.dealer("table_opened", game="baccarat", decks=8)
        for s in seats:
            self.dealer("player_seated", seat=s)
        self.seed = seed

    # --- pack preparation (003 4.1-4.6) ------------------------------------
    def shuffle(self, pack_id: str = "P-1", cards=None, *, shuffler=True, dealer=True,
                preshuffled=False, decks=8, card_count=416, missing=(), extra=(), first="5h") -> None:
        self.pack_id, self.index, self.pos, self.cut_at, self.shoe_misses = pack_id, 0, 0, None, 0
        self.cards = list(cards) if cards is not None else eight_decks(self.seed)
        self.seed += 1
        if first is not None:
            k = self.cards.index(first)
            self.cards[0], self.cards[k] = self.cards[k], self.cards[0]
        if shuffler:
            self.shuffler("shuffle_completed", pack_id=pack_id, decks=decks, card_count=card_count,
                          missing=list(missing), extra=list(extra), preshuffled=preshuffled)
        if dealer:
            self.dealer("shuffle", pack_id=pack_id, method="machine")

    def cut(self, by: str = "seat:2", offers=("seat:2",), position: int = 100, from_back: int = 28,
            refusals=()) -> None:
        for to in offers:
            self.dealer("cut_offered", pack_id=self.pack_id, to=to)
            if to in refusals:
                self.dealer("cut_refused", pack_id=self.pack_id, by=to)
        self.dealer("cut", pack_id=self.pack_id, by=by, position=position, stack_size=416)
        self.dealer("cut_card_inserted", pack_id=self.pack_id, from_back=from_back, stack_size=416)
        self.cut_at = 416 - from_back

    def load(self, card_count: int = 416) -> None:
        self.shoe("shoe_loaded", pack_id=self.pack_id, card_count=card_count)

    def prepare(self, pack_id: str = "P-1", cards=None, **cut) -> None:
        """Shuffle, offer and cut, insert the cutting card, load, burn: all by the book."""
        self.shuffle(pack_id, cards)
        self.cut(**cut)
        self.load()
        self.burn()

    # --- cards ------------------------------------------------------------------
    def draw(self, card: str | None = "next") -> str:
        """The shoe draws the next card of the pack (returns it); the cutting card surfaces on time."""
        if self.cut_at is not None and self.index == self.cut_at:
            self.cut_card()
            self.cut_at = None
        real = self.cards[self.pos]
        self.pos += 1
        if self.shoe_misses:
            self.shoe_misses -= 1  # the shoe does not see this card at all
            return real
        self.index += 1
        self.shoe("card_drawn", pack_id=self.pack_id, index=self.index, card=real if card == "next" else card)
        return real

    def deal(self, target: str, card: str | None, face: str = "up", round_id: str | None = None) -> Event:
        return self.dealer("card_dealt", pack_id=self.pack_id, round_id=round_id, target=target,
                           face=face, card=card)

    def burn(self, face_down: int | None = None, first_face: str = "up") -> None:
        first = self.draw()
        self.deal("burn", first if first_face == "up" else None, first_face)
        value = min(10, "A23456789TJQK".index(first[0]) + 1)
        for _ in range(value if face_down is None else face_down):
            self.draw()
            self.deal("burn", None, "down")

    def cut_card(self) -> None:
        self.shoe("cut_card_drawn", pack_id=self.pack_id, index=self.index)

    # --- a coup -----------------------------------------------------------------
    def coup(self, bets=((2, "player", 100), (3, "banker", 100)), *, targets=None, payouts=None,
             bets_closed: bool = True, announce: bool = False) -> str:
        self.round_no += 1
        rid = f"R-{self.round_no}"
        self.dealer("round_started", round_id=rid, game="baccarat", pack_id=self.pack_id)
        for seat, spot, amount in bets:
            self.dealer("bet_placed", round_id=rid, seat=seat, spot=spot, amount=amount)
        if bets_closed:
            self.dealer("bets_closed", round_id=rid)
        upcoming = self.cards[self.pos:self.pos + 6]
        player, banker = deal_coup(upcoming)
        if targets is None:
            targets = ["player", "banker", "player", "banker"] + ["player"] * (len(player) - 2) \
                + ["banker"] * (len(banker) - 2)
        dealt = {"player": [], "banker": []}
        for target in targets:
            card = self.draw()
            self.deal(target, card, "up", rid)
            dealt.setdefault(target, []).append(card)
        pt, bt = baccarat_total(dealt["player"]), baccarat_total(dealt["banker"])
        winner = "player" if pt > bt else "banker" if bt > pt else "tie"
        for seat, spot, amount in bets:
            result, net = (payouts or {}).get((seat, spot)) or settle(winner, spot, amount)
            self.dealer("payout", round_id=rid, seat=seat, spot=spot, result=result, amount=net)
        self.dealer("round_ended", round_id=rid)
        if announce:
            self.dealer("last_coup_announced", pack_id=self.pack_id)
        return rid

    def empty(self) -> None:
        self.shoe("shoe_emptied", pack_id=self.pack_id, remaining=len(self.cards) - self.pos)


def settle(winner: str, spot: str, amount: float) -> tuple[str, float]:
    if winner == "tie":
        return ("win", amount * 8) if spot == "tie" else ("push", 0.0) if spot in ("player", "banker") \
            else ("lose", -amount)
    if spot == winner:
        return ("win", amount * (1 if spot == "player" else 0.95))
    return ("lose", -amount)


def rule_ids(findings) -> list[str]:
    return sorted(f.rule_id for f in findings)


def new_deck_pack(run: list[str]) -> "Baccarat":
    """A baccarat pack whose cards 21-28 are ``run`` (e.g. eight cards in new-deck order), dealt to card 40."""
    b = Baccarat()
    b.shuffle()
    cards = b.cards
    for c in run:
        cards.remove(c)
    b.cards = cards[:20] + run + cards[20:]
    b.cut()
    b.load()
    b.burn()
    while b.pos < 40:
        b.coup(bets=())
    return b


def replay(events, table_id="BAC-T", checkpoint_every=0):
    """(findings, rounds, packs, rejects) of one replay, sorted; rejects as (event_id, reason); with
    ``checkpoint_every``, the replay is saved and loaded again (JSON) every that many events."""
    rp = TableReplay(table_id)
    findings, rounds, packs, rejects = [], [], [], []
    for i, ev in enumerate(events, 1):
        findings += rp.feed(ev)
        rejects += [(e.event_id, why) for e, why in rp.drain_rejects()]
        if checkpoint_every and i % checkpoint_every == 0:
            rounds += rp.drain_rounds()
            packs += rp.drain_packs()
            rp = TableReplay.from_state(json.loads(json.dumps(rp.state())))
    findings += rp.close()
    rounds += rp.drain_rounds()
    packs += rp.drain_packs()
    key = lambda r: (r.get("round_id") or "", r.get("round_use") or 0, r.get("pack_id") or "",  # noqa: E731
                     r.get("pack_use") or 0)
    return (sorted(findings, key=lambda f: f.finding_id), sorted(rounds, key=key), sorted(packs, key=key),
            rejects)
