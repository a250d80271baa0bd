"""Three-bet community poker from a manual shoe, by document 000 (and its faults).

Every round has its own single-deck pack: shuffled (``shuffle_completed`` +
dealer ``shuffle``), loaded, dealt, stub removed.  A seat is eligible when it
placed all three bets (``first``, ``second``, ``third``) before "no more
bets"; seats with one or two bets get no cards.  The deal: three passes, each
one card face down to every eligible seat, ascending, then one to the
community spot (document 000 C).  The stub comes out of the shoe
(``shoe_emptied``), is counted at least once every five rounds against the
face-down cards on the layout (``stub_counted``: ``stub`` + ``layout`` = 52)
and goes to the discard rack unexposed (``stub_discarded``).  When a count
does not come to 52, or the deal was wrong, the dealer voids the round
(``round_voided``, document 000 E2).  Rounds carry no payouts (as in
the user's example floor, ``tests/data/clean-floor-2h.jsonl.gz``: rules.md gives no three-bet paytable).

Readings: a round whose count was skipped because of a fault that makes the
count itself ambiguous (a card dealt face up, a card the shoe did not read,
a card drawn after the deal) is simply not counted; the misdeal fault stops
the deal one card short (the community spot holds two), so the dealt order is
a prefix of the right one and only ``MISDEAL`` (plus ``VOID_NOT_DECLARED``
when not voided) is raised, not ``DEAL_ORDER``.
"""
from __future__ import annotations

from pitwatch.schemas.contract import THREE_BETS
from pitwatch.simulator.cards import Pack, other_card
from pitwatch.simulator.clock import SECOND
from pitwatch.simulator.devices import Port
from pitwatch.simulator.faults import injects
from pitwatch.simulator.packs import PackPrep, emit_shuffle, offer_pack_faults
from pitwatch.simulator.table import TableSim

ROUND_FAULTS = ("CARDS_BEFORE_BETS_CLOSED", "DEAL_ORDER", "CARD_FACE", "MISDEAL", "SHOE_CARD_MISMATCH",
                "UNACCOUNTED_CARD", "STUB_MISCOUNT", "VOID_NOT_DECLARED", "STUB_EXPOSED")
AMOUNTS = (5, 10, 25, 25, 50, 100)


class Deal:
    __slots__ = ("rid", "pid", "targets", "n", "late_close", "face_up_at", "mismatch_at", "hidden_after", "unread_at",
                 "peek", "shown", "misdeal", "no_void", "stub_off", "layout_off", "force_count", "no_count")

    def __init__(self, rid: str, pid: str, targets: list[str]):
        self.rid = rid
        self.pid = pid
        self.targets = targets
        self.n = len(targets)
        self.late_close = False
        self.face_up_at = self.mismatch_at = self.hidden_after = self.unread_at = -1
        self.peek = self.shown = self.misdeal = self.no_void = False
        self.stub_off = self.layout_off = 0
        self.force_count = self.no_count = False


class ThreeBetPoker(TableSim):
    shoe_port: Port     # every table of this game deals from a shoe (floor.py)
    game = "three_bet_poker"
    decks = 1
    max_seat = 7
    min_players = 1
    max_players = 7
    rounds_per_hour = 50.0
    speed = 0.6

    def __init__(self, cfg):
        super().__init__(cfg)
        assert self.shoe_port is not None
        self.shuffler = cfg.shuffler
        self.since = 0          # rounds ended since the last stub count
        self.skip = False       # STUB_COUNT_OVERDUE in progress
        self.prev_order: list | None = None
        self.prev_drawn = 0

    def play_round(self) -> None:
        rng = self.rng
        self.faults.begin_pack()
        self.maybe_seq_gap()
        if self.faults and not self.skip:
            self.faults.inject(["STUB_COUNT_OVERDUE"])
        bets = []
        eligible = []
        for seat in self.seated:
            amount = AMOUNTS[int(rng.random() * len(AMOUNTS))]
            n = 3 if rng.random() < 0.9 else 1 + int(rng.random() * 2)
            bets.append((seat, n, amount))
            if n == 3:
                eligible.append(seat)
        if not eligible:
            seat, _, amount = bets[0]
            bets[0] = (seat, 3, amount)
            eligible.append(seat)
        rng.shuffle(bets)
        eligible.sort()
        targets = ([f"seat:{s}" for s in eligible] + ["community"]) * 3
        pid = self.new_pack_id(4)
        rid = self.start_round_ids(4, "R")   # after its pack: with reuse_ids, rounds are numbered per pack
        pack = Pack.shuffled(1, rng)
        copy = self.prev_order if (self.prev_order and self.prev_drawn >= 10 and len(targets) >= 10) else None
        prep = PackPrep(pid, pack, 1, run_at=0 if len(targets) >= 8 else None, copy_from=copy)
        d = Deal(rid, pid, targets)
        if self.faults:
            offer_pack_faults(self, prep)
            self.faults.inject(ROUND_FAULTS, d)
        pack = prep.pack
        emit_shuffle(self, prep, self.shuffler, "machine", lead=(3000, 12000))
        self.device(self.shoe_port, "shoe_loaded", f'"pack_id":"{pid}","card_count":{len(pack)}', 4 * SECOND, 10 * SECOND)
        self.dealer("round_started", f',"pack_id":"{pid}","round_id":"{rid}","game":"three_bet_poker"', 3 * SECOND, 8 * SECOND)
        for seat, n, amount in bets:
            for spot in THREE_BETS[:n]:
                self.dealer("bet_placed", f',"round_id":"{rid}","seat":{seat},"spot":"{spot}","amount":{amount}', 1000, 3000)
        if not d.late_close:
            self.dealer("bets_closed", f',"round_id":"{rid}"', 1500, 4000)
        shoe_seen = self.deal(pid, pack, d)
        face_down = d.n - (1 if d.face_up_at >= 0 else 0)
        self.device(self.shoe_port, "shoe_emptied", f'"pack_id":"{pid}","remaining":{len(pack) - shoe_seen}',
                    1500, 4000)
        count = d.force_count or (not d.no_count and not self.skip and (self.since >= 4 or rng.random() < 0.3))
        void = d.misdeal
        if count:
            stub = pack.remaining() + d.stub_off
            layout = face_down + d.layout_off
            self.dealer("stub_counted", f',"pack_id":"{pid}","round_id":"{rid}","stub":{stub},"layout":{layout}',
                        8 * SECOND, 20 * SECOND)
            void = void or stub + layout != 52
        if void and not d.no_void:
            self.dealer("round_voided", f',"round_id":"{rid}","reason":"' +
                        ("misdeal" if d.misdeal else "stub count does not come to 52") + '"', 2 * SECOND, 6 * SECOND)
        self.dealer("stub_discarded", f',"pack_id":"{pid}","exposed":{"true" if d.shown else "false"}', 2 * SECOND, 5 * SECOND)
        self.dealer("round_ended", f',"round_id":"{rid}"', 5 * SECOND, 20 * SECOND)
        self.since = 0 if count else self.since + 1
        if self.since == 5:
            self.faults.fire("STUB_COUNT_OVERDUE", "five_rounds_uncounted", [("STUB_COUNT_OVERDUE", {"round_id": rid})])
            self.since = 0
            self.skip = False
        clean = len(pack) == 52 and d.hidden_after < 0 and d.unread_at < 0 and d.mismatch_at < 0 and not d.peek
        self.prev_order, self.prev_drawn = (pack.cards, pack.pos) if clean else (None, 0)

    def deal(self, pid: str, pack: Pack, d: Deal) -> int:
        """Deal the round; returns how many cards the shoe reported drawn."""
        shoe_seen = 0
        rid = d.rid
        prev = None
        for k, target in enumerate(d.targets):
            card = pack.draw()
            if k != d.unread_at:
                shoe_seen += 1
                self.device(self.shoe_port, "card_drawn", f'"pack_id":"{pid}","index":{shoe_seen},"card":"{card}"',
                            1000, 2200)
            else:
                self.wait(1000, 2200)
            shown = card
            if k == d.mismatch_at:
                shown = other_card(self.faults.rng, {card, prev, pack.peek(0), pack.peek(1)})
            face = "up" if k == d.face_up_at else "down"
            self.dealer("card_dealt", f',"pack_id":"{pid}","round_id":"{rid}","target":"{target}","face":"{face}",'
                        f'"card":"{shown}"', 200, 1200)
            if k == 0 and d.late_close:
                self.dealer("bets_closed", f',"round_id":"{rid}"', 300, 1200)
            if k == d.hidden_after:
                pack.draw()
                shoe_seen += 1
                self.device(self.shoe_port, "card_drawn",
                            f'"pack_id":"{pid}","index":{shoe_seen},"card":"{pack.cards[pack.pos - 1]}"', 600, 1500)
            prev = card
        if d.peek:
            card = pack.draw()
            shoe_seen += 1
            self.device(self.shoe_port, "card_drawn", f'"pack_id":"{pid}","index":{shoe_seen},"card":"{card}"',
                        1500, 3000)
        return shoe_seen


# ------------------------------------------------------------------ faults
def _key(d: Deal) -> dict:
    return {"round_id": d.rid}


@injects("STUB_COUNT_OVERDUE", "three_bet_poker")
def _overdue(table: ThreeBetPoker) -> bool:
    table.skip = True  # the finding is recorded on the fifth uncounted round (play_round)
    return True


@injects("CARDS_BEFORE_BETS_CLOSED", "three_bet_poker")
def _late_close(table: ThreeBetPoker, d: Deal) -> bool:
    d.late_close = True
    table.faults.fire("CARDS_BEFORE_BETS_CLOSED", "late", [("CARDS_BEFORE_BETS_CLOSED", _key(d))])
    return True


@injects("DEAL_ORDER", "three_bet_poker")
def _deal_order(table: ThreeBetPoker, d: Deal) -> bool:
    per_pass = d.n // 3
    p = int(table.faults.rng.random() * 3)
    i = p * per_pass + per_pass - 1  # the community card of pass p
    d.targets[i - 1], d.targets[i] = d.targets[i], d.targets[i - 1]
    table.faults.fire("DEAL_ORDER", "community_before_last_seat", [("DEAL_ORDER", _key(d))])
    return True


@injects("CARD_FACE", "three_bet_poker")
def _card_face(table: ThreeBetPoker, d: Deal) -> bool:
    if table.since >= 4 and not table.skip:
        return False  # this round must be counted, and a face-up card makes the layout count ambiguous
    d.face_up_at = int(table.faults.rng.random() * d.n)
    d.no_count = True
    table.faults.fire("CARD_FACE", "dealt_face_up", [("CARD_FACE", _key(d))])
    return True


@injects("MISDEAL", "three_bet_poker")
def _misdeal(table: ThreeBetPoker, d: Deal) -> bool:
    d.targets.pop()
    d.n -= 1
    d.misdeal = True
    table.faults.fire("MISDEAL", "community_short", [("MISDEAL", _key(d))])
    return True


@injects("SHOE_CARD_MISMATCH", "three_bet_poker")
def _mismatch(table: ThreeBetPoker, d: Deal) -> bool:
    d.mismatch_at = int(table.faults.rng.random() * d.n)
    table.faults.fire("SHOE_CARD_MISMATCH", "switched_card",
                      [("SHOE_CARD_MISMATCH", {"pack_id": d.pid, "round_id": d.rid})])
    return True


@injects("UNACCOUNTED_CARD", "three_bet_poker")
def _unaccounted(table: ThreeBetPoker, d: Deal) -> bool:
    rng = table.faults.rng
    if rng.random() < 0.5:
        d.hidden_after = int(rng.random() * (d.n - 1))
        variant = "hidden_card"
    else:
        if table.since >= 4 and not table.skip:
            return False
        d.unread_at = int(rng.random() * d.n)
        d.no_count = True
        variant = "unread_card"
    table.faults.fire("UNACCOUNTED_CARD", variant, [("UNACCOUNTED_CARD", _key(d))])
    return True


@injects("STUB_MISCOUNT", "three_bet_poker")
def _miscount(table: ThreeBetPoker, d: Deal) -> bool:
    if table.skip:
        return False
    d.force_count = True
    d.stub_off = 1 if table.faults.rng.random() < 0.5 else -1
    table.faults.fire("STUB_MISCOUNT", "stub_one_off_voided", [("STUB_MISCOUNT", _key(d))])
    return True


@injects("VOID_NOT_DECLARED", "three_bet_poker")
def _no_void(table: ThreeBetPoker, d: Deal) -> bool:
    d.no_void = True
    if table.faults.rng.random() < 0.5 or table.skip:
        d.targets.pop()
        d.n -= 1
        d.misdeal = True
        table.faults.fire("VOID_NOT_DECLARED", "misdeal_not_voided", [("MISDEAL", _key(d)), ("VOID_NOT_DECLARED", _key(d))])
    else:
        d.force_count = True
        d.layout_off = 1 if table.faults.rng.random() < 0.5 else -1
        table.faults.fire("VOID_NOT_DECLARED", "layout_miscount_not_voided", [("VOID_NOT_DECLARED", _key(d))])
    return True


@injects("STUB_EXPOSED", "three_bet_poker")
def _stub_exposed(table: ThreeBetPoker, d: Deal) -> bool:
    if table.faults.rng.random() < 0.5:
        d.shown = True
        table.faults.fire("STUB_EXPOSED", "stub_shown", [("STUB_EXPOSED", _key(d))])
        return True
    if table.since >= 4 and not table.skip:
        return False
    d.peek = True
    d.no_count = True
    table.faults.fire("STUB_EXPOSED", "card_drawn_after_deal",
                      [("STUB_EXPOSED", _key(d)), ("UNACCOUNTED_CARD", _key(d))])
    return True
