"""Document 000 (three-bet community poker) through the replay engine: each rule raised, and not raised.

Each test builds one table's three streams (dealer terminal, shoe, shuffler);
the assertions name the exact set of rules raised, so a stray finding fails
the test too.
"""
from __future__ import annotations

import collections
import random

import msgspec
import pytest

from pitwatch.rules.state import Ref
from pitwatch.rules.table import TableReplay
from pitwatch.rules.three_bet_poker import (
    PackStubCount,
    RoundStubCount,
    ThreeBetPack,
    ThreeBetPoker,
    ThreeBetRound,
    ThreeBetTable,
    UncountedRound,
)
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from tests.data import CLEAN_FLOOR, clean_floor_lines
from tests.rules.stream import Floor, rule_ids

DECK = [r + s for r in "A23456789TJQK" for s in "cdhs"]


class ThreeBet(Floor):
    """A three_bet_poker table that follows document 000 unless told otherwise."""

    def __init__(self, seats=(1, 3, 5)) -> None:
        super().__init__(table_id="TBP-T")
        self.dealer("table_opened", game="three_bet_poker", decks=1)
        for s in seats:
            self.dealer("player_seated", seat=s)
        self.n = 0

    def round(self, bettors=(1, 3, 5), partial=(), *, targets=None, up=(), count=False, stub=None,
              layout=None, exposed=False, void=False, drawn_after=0, unrecorded_at=None, shoe=True) -> str:
        """One pack, one round.  ``partial`` seats place only two bets; ``up``: card numbers dealt face up;
        ``unrecorded_at``: the shoe draws a card there that the terminal never records."""
        self.n += 1
        rid, pid = f"R-{self.n}", f"P-{self.n}"
        deck = DECK[:]
        random.Random(self.n).shuffle(deck)
        self.shuffler("shuffle_completed", pack_id=pid, decks=1, card_count=52, missing=[], extra=[])
        self.dealer("shuffle", pack_id=pid, method="machine")
        if shoe:
            self.shoe("shoe_loaded", pack_id=pid, card_count=52)
        self.dealer("round_started", round_id=rid, game="three_bet_poker", pack_id=pid)
        for seat in bettors:
            for spot in ("first", "second", "third"):
                self.dealer("bet_placed", round_id=rid, seat=seat, spot=spot, amount=10)
        for seat in partial:
            for spot in ("first", "second"):
                self.dealer("bet_placed", round_id=rid, seat=seat, spot=spot, amount=10)
        self.dealer("bets_closed", round_id=rid)
        if targets is None:
            targets = ([f"seat:{s}" for s in sorted(bettors)] + ["community"]) * 3
        index = 0
        for k, target in enumerate(targets, start=1):
            if shoe and unrecorded_at == k:
                index += 1
                self.shoe("card_drawn", pack_id=pid, index=index, card=deck.pop())
            card = deck.pop()
            if shoe:
                index += 1
                self.shoe("card_drawn", pack_id=pid, index=index, card=card)
            self.dealer("card_dealt", pack_id=pid, round_id=rid, target=target,
                        face="up" if k in up else "down", card=card)
        for _ in range(drawn_after if shoe else 0):
            index += 1
            self.shoe("card_drawn", pack_id=pid, index=index, card=deck.pop())
        if shoe:
            self.shoe("shoe_emptied", pack_id=pid, remaining=52 - index)
        if count:
            self.dealer("stub_counted", pack_id=pid, round_id=rid,
                        stub=52 - len(targets) if stub is None else stub,
                        layout=len(targets) if layout is None else layout)
        self.dealer("stub_discarded", pack_id=pid, exposed=exposed)
        if void:
            self.dealer("round_voided", round_id=rid, reason="misdeal")
        self.dealer("round_ended", round_id=rid)
        return rid


def replay(t: ThreeBet) -> list:
    return t.replay()


def test_000_a_round_by_the_book_raises_nothing():
    t = ThreeBet()
    t.round(count=True)
    t.round(partial=(7,))
    assert replay(t) == []


def test_000_C_deal_order_three_passes_seats_ascending_then_community():
    t = ThreeBet()
    order = ["seat:1", "seat:3", "community", "seat:5"] + ["seat:1", "seat:3", "seat:5", "community"] * 2
    t.round(targets=order, count=True)
    found = replay(t)
    assert rule_ids(found) == ["DEAL_ORDER"]
    assert found[0].expected == "card 3 of the round should go to seat 5"
    assert found[0].actual == "card 3 went to the community spot"


def test_000_C_every_card_face_down():
    t = ThreeBet()
    t.round(up=(6,), count=True)
    assert rule_ids(replay(t)) == ["CARD_FACE"]


def test_000_E2_misdeal_a_seat_with_four_cards_and_no_void():
    t = ThreeBet()
    targets = (["seat:1", "seat:3", "seat:5", "community"] * 3) + ["seat:3"]
    t.round(targets=targets, count=True, stub=39, layout=13)
    found = replay(t)
    assert rule_ids(found) == ["DEAL_ORDER", "MISDEAL", "VOID_NOT_DECLARED"]
    void = next(f for f in found if f.rule_id == "VOID_NOT_DECLARED")
    assert "the cards were misdealt (seat 3 holds 4 cards instead of 3)" in void.expected
    assert void.actual == "round R-1 ended without being voided"


def test_000_E2_misdeal_declared_void_is_no_void_finding():
    t = ThreeBet()
    targets = (["seat:1", "seat:3", "seat:5", "community"] * 3) + ["seat:3"]
    t.round(targets=targets, count=True, stub=39, layout=13, void=True)
    assert rule_ids(replay(t)) == ["DEAL_ORDER", "MISDEAL"]


def test_000_C_a_seat_with_two_bets_gets_no_card():
    t = ThreeBet()
    targets = ["seat:1", "seat:3", "seat:5", "community"] * 3
    t.round(bettors=(1, 3), partial=(5,), targets=targets, count=True, void=True)
    found = replay(t)
    assert rule_ids(found) == ["DEAL_ORDER", "MISDEAL"]
    misdeal = next(f for f in found if f.rule_id == "MISDEAL")
    assert (misdeal.expected, misdeal.actual) == ("seat 5 should hold no cards", "seat 5 holds 3 cards")


def test_000_E_stub_count_overdue_fires_on_the_fifth_round_and_restarts():
    t = ThreeBet()
    rounds = [t.round() for _ in range(10)]
    found = replay(t)
    assert rule_ids(found) == ["STUB_COUNT_OVERDUE", "STUB_COUNT_OVERDUE"]
    assert sorted(f.round_id for f in found) == sorted([rounds[4], rounds[9]])
    assert found[0].actual == "5 rounds in a row ended with no stub count: R-1, R-2, R-3, R-4 and R-5"


def test_000_E_a_count_within_five_rounds_is_on_time():
    t = ThreeBet()
    for k in range(9):
        t.round(count=(k % 5 == 4))
    assert replay(t) == []


def test_000_E_stub_miscount_against_the_shoe():
    t = ThreeBet()
    t.round(count=True, stub=41, layout=11)  # 52 between them, but the shoe left 40
    found = replay(t)
    assert rule_ids(found) == ["STUB_MISCOUNT"]
    f = found[0]
    assert f.expected == ("40 cards in the stub of pack P-1: the shoe counted 52 cards loaded and the shoe drew "
                          "12 cards for the deal (draws 1 to 12)")
    assert f.actual == "the dealer counted 41 cards in the stub, and 11 face down on the layout: 1 more than were left"


def test_000_E_stub_miscount_when_the_shoe_drew_a_card_the_terminal_never_recorded():
    t = ThreeBet()
    t.round(count=True, unrecorded_at=4)  # the dealer counts 40 + 12; the shoe drew 13
    found = replay(t)
    assert rule_ids(found) == ["STUB_MISCOUNT", "UNACCOUNTED_CARD"]
    f = next(f for f in found if f.rule_id == "STUB_MISCOUNT")
    assert f.expected.startswith("39 cards in the stub") and "drew 13 cards for the deal" in f.expected


def test_000_E_stub_miscount_without_a_shoe_uses_the_terminal_count():
    t = ThreeBet()
    t.round(count=True, stub=41, layout=11, shoe=False)
    found = replay(t)
    assert rule_ids(found) == ["STUB_MISCOUNT"]
    assert "the dealer terminal recorded 12 cards dealt" in found[0].expected
    assert "the shuffler counted 52 cards" in found[0].expected


def test_000_E_a_right_count_without_a_shoe_raises_nothing():
    t = ThreeBet()
    t.round(count=True, shoe=False)
    assert replay(t) == []


def test_000_E2_stub_plus_layout_not_52_must_be_voided():
    t = ThreeBet()
    t.round(count=True, stub=40, layout=13)
    found = replay(t)
    assert rule_ids(found) == ["VOID_NOT_DECLARED"]
    assert "make 53, not 52" in found[0].expected


def test_000_E2_stub_plus_layout_not_52_voided():
    t = ThreeBet()
    t.round(count=True, stub=40, layout=13, void=True)
    assert replay(t) == []


def test_000_D_stub_discarded_exposed():
    t = ThreeBet()
    t.round(count=True, exposed=True)
    found = replay(t)
    assert rule_ids(found) == ["STUB_EXPOSED"]
    assert found[0].round_id == "R-1"


def test_000_D_card_drawn_after_the_deal_exposes_the_stub():
    t = ThreeBet()
    t.round(count=True, drawn_after=1)
    found = replay(t)
    assert rule_ids(found) == ["STUB_EXPOSED", "UNACCOUNTED_CARD"]
    exposed = next(f for f in found if f.rule_id == "STUB_EXPOSED")
    assert exposed.actual.startswith("the shoe drew 1 card after the deal was complete: draw 13")


def test_000_findings_do_not_depend_on_how_the_devices_interleave():
    t = ThreeBet()
    t.round(count=True, stub=41, layout=11)
    t.round(drawn_after=1)
    t.round(exposed=True)
    baseline = sorted(f.finding_id for f in t.replay())
    for seed in range(5):
        rng = random.Random(seed)
        queues = collections.defaultdict(list)
        for ev in t.events:
            queues[ev.device_id].append(ev)
        lists, order = list(queues.values()), []
        while any(lists):
            order.append(rng.choice([q for q in lists if q]).pop(0))
        assert sorted(f.finding_id for f in t.replay(order)) == baseline


@pytest.mark.parametrize("table_id", ["TBP-01", "COM-01"])
def test_000_001_clean_example_tables_raise_nothing(table_id):
    config = GamingDayConfig()
    rp = TableReplay(table_id)
    found = []
    for n, line in enumerate(clean_floor_lines(), 1):
        if table_id.encode() not in line:
            continue
        ev, _digest = decode_line(line, CLEAN_FLOOR.name, n, config)
        if ev.table_id == table_id:
            found += rp.feed(ev)
    found += rp.close()
    assert found == []
    rows = rp.drain_rounds()
    assert len(rows) == {"TBP-01": 30, "COM-01": 35}[table_id]
    assert not any(r["undecided"] for r in rows)


def test_000_states_saved_as_dicts_read_into_the_records():
    """The table, pack and round states as version 2 kept them (dicts, positional lists, refs as
    lists; one ref of a state before version 2, three items) read into the game's records."""
    r = ["E-9", 9000, "D-1", "DT-1", 12]
    old_ref = ["E-8", 8000, "D-1"]
    table = msgspec.convert({"uncounted": [["R-1", r], ["R-2", old_ref]]}, ThreeBetTable)
    assert table == ThreeBetTable([UncountedRound("R-1", Ref("E-9", 9000, "D-1", "DT-1", 12)),
                                   UncountedRound("R-2", Ref("E-8", 8000, "D-1"))])
    pack = msgspec.convert({"counts": [["R-1", 40, 12, r, 12, False], ["R-2", 41, 11, r, 23, True]],
                            "exposure_checked": True}, ThreeBetPack)
    assert pack.exposure_checked and [c.decided for c in pack.counts] == [False, True]
    assert pack.counts[0] == PackStubCount("R-1", 40, 12, Ref("E-9", 9000, "D-1", "DT-1", 12), 12, False)
    rnd = msgspec.convert({"eligible": [1, 3], "counts": [[40, 12, r]], "ended_ref": old_ref}, ThreeBetRound)
    assert rnd == ThreeBetRound([1, 3], [RoundStubCount(40, 12, Ref("E-9", 9000, "D-1", "DT-1", 12))],
                                Ref("E-8", 8000, "D-1"))
    fresh = msgspec.convert({"eligible": None, "counts": [], "ended_ref": None}, ThreeBetRound)
    assert fresh == ThreeBetPoker().new_round_state()
    assert msgspec.convert({"counts": [], "exposure_checked": False}, ThreeBetPack) == ThreeBetPoker().new_pack_state()
    assert msgspec.convert({"uncounted": []}, ThreeBetTable) == ThreeBetPoker().new_table_state()
    # written back, the records are the dicts they were read from (refs in full)
    assert msgspec.json.decode(msgspec.json.encode(pack))["counts"][1] == ["R-2", 41, 11, r, 23, True]
