"""Document 004 through the replay engine: ``pitwatch.rules.stud`` plugged into ``TableReplay``.

Each stream is a whole table (opened, seats, a shuffled pack, one round);
the assertions name the exact set of rules raised, so a stray engine finding
(``MISDEAL``, ``UNSHUFFLED_PACK`` …) fails the test too.
"""
from __future__ import annotations

import json

import pytest

import pitwatch.rules.procedures as procedures
from pitwatch.rules.stud import Razz, Stud, Stud8
from pitwatch.rules.table import TableReplay
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from pitwatch.schemas.events import Event
from tests.data import clean_floor_lines

from .test_004_hand import BRANCH_FOLDS, HandStream, eight_handed, seventh_street_exposure, small_hand

STUD_TABLES = {"STU-01": Stud, "ST8-01": Stud8, "RAZ-01": Razz}


def table_events(hand: HandStream, decks=1) -> list[Event]:
    """The round of ``hand`` on a freshly opened table with a shuffled pack."""
    n = 0

    def dealer(type_, **fields):
        nonlocal n
        n += 1
        return Event(event_id=f"T-{n:04d}", ts=n * 1000, source="dealer", type=type_, table_id=hand.table_id,
                     device_id="DT-1", seq=n, dealer_id="D-1", **fields)

    out = [dealer("table_opened", game=hand.game, decks=decks), dealer("dealer_in")]
    out += [dealer("player_seated", seat=s) for s in hand.seats]
    out.append(dealer("shuffle", pack_id=hand.events[0].pack_id, method="machine"))
    for ev in hand.events:
        row = ev.to_row()
        row.update(event_id=f"T-{n + 1:04d}", ts=(n + 1) * 1000, seq=n + 1)
        n += 1
        out.append(Event.from_row(row))
    return out


def replay(events) -> tuple[TableReplay, list]:
    rp = TableReplay(events[0].table_id)
    found = []
    for ev in events:
        found += rp.feed(ev)
    return rp, found + rp.close()


def rules_raised(hand: HandStream) -> set[str]:
    return {f.rule_id for f in replay(table_events(hand))[1]}


def test_004_plug_ins_serve_the_three_games():
    for game, cls in (("stud", Stud), ("stud8", Stud8), ("razz", Razz)):
        assert type(procedures.procedure_for(game)) is cls


def test_004_clean_example_stud_tables_raise_nothing():
    config = GamingDayConfig()
    replays = {t: TableReplay(t) for t in STUD_TABLES}
    found, rows = [], []
    for number, line in enumerate(clean_floor_lines(), 1):
        table = json.loads(line)["table_id"]
        if table in replays:
            ev, _digest = decode_line(line, "clean-floor-2h.jsonl", number, config)
            found += replays[table].feed(ev)
    for table, rp in replays.items():
        assert type(rp.proc) is STUD_TABLES[table]
        found += rp.close()
        rows += rp.drain_rounds()
    assert [(f.table_id, f.round_id, f.rule_id, f.actual) for f in found] == []
    assert len(rows) == 56 and not any(r["undecided"] for r in rows)


# --- H: 8-handed hands to 7th street ------------------------------------------------------

@pytest.mark.parametrize("branch", ["A", "B", "C"])
def test_004_H_short_stack_branch_done_right_in_the_engine(branch):
    assert rules_raised(eight_handed(folds=BRANCH_FOLDS[branch])[0]) == set()


@pytest.mark.parametrize("branch,done", [("A", "normal"), ("A", "B"), ("B", "A"), ("B", "normal"),
                                         ("C", "A"), ("C", "B"), ("C", "normal")])
def test_004_H_short_stack_branch_done_wrong_in_the_engine(branch, done):
    assert rules_raised(eight_handed(folds=BRANCH_FOLDS[branch], seventh=done)[0]) == {"SHORT_DECK_PROCEDURE"}


def test_004_H_short_stack_branch_a():
    hand, stack, live = eight_handed(folds=BRANCH_FOLDS["A"])
    assert (stack, live) == (5, 6)
    assert rules_raised(hand) == set()
    assert rules_raised(eight_handed(folds=BRANCH_FOLDS["A"], seventh="C")[0]) == {"SHORT_DECK_PROCEDURE"}


def test_004_H_short_stack_branch_b():
    hand, stack, live = eight_handed(folds=BRANCH_FOLDS["B"])
    assert (stack, live) == (3, 5)
    assert rules_raised(hand) == set()
    assert rules_raised(eight_handed(folds=BRANCH_FOLDS["B"], seventh="C")[0]) == {"SHORT_DECK_PROCEDURE"}


def test_004_H_short_stack_branch_c():
    hand, stack, live = eight_handed(folds=BRANCH_FOLDS["C"])
    assert (stack, live) == (0, 8)
    assert rules_raised(hand) == set()
    assert rules_raised(eight_handed(folds=BRANCH_FOLDS["C"], seventh="B")[0]) == {"SHORT_DECK_PROCEDURE"}


def test_004_H_two_deck_table_counts_its_stack_from_table_opened():
    hand, _, _ = eight_handed(folds=BRANCH_FOLDS["C"])  # right for 52 cards, not for 104
    found = replay(table_events(hand, decks=2))[1]
    assert [f.rule_id for f in found] == ["SHORT_DECK_PROCEDURE"]
    assert found[0].expected.startswith("with 52 cards left for 8 live seats (10 needed), the dealer should burn")


# --- the other rules, one stream that raises and one that does not --------------------------

def _bring_in(seat):
    h = small_hand()
    h.act(3, seat, "bring_in", 100)
    return h.end()


def _dead_hand(deal_to_folded):
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.act(3, 3, "fold")
    h.act(3, 5, "call", 100)
    h.street(4, {1: "3c", 3: "4d", 5: "5h"} if deal_to_folded else {1: "3c", 5: "5h"})
    h.act(4, 5)
    return h.end()


def _fourth_street_bet(amount):
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.street(4, {1: "3c", 3: "9s", 5: "Kh"})
    h.act(4, 3, "bet", amount)
    return h.end()


def _exposed_third(third_face):
    h = HandStream("razz", seats=(1, 3, 5))
    h.antes()
    h.burn(3)
    for s, c in ((1, "Jd"), (3, "Ah"), (5, "Qs")):
        h.card(3, s, c, "down")
    h.add("card_exposed", target="seat:5", card="Qs", street=3)
    for s, c in ((1, "7d"), (3, "Ac"), (5, "5d")):
        h.card(3, s, c, "down")
    for s, c in ((1, "Jh"), (3, "8h"), (5, "4s")):
        h.card(3, s, c, third_face if s == 5 else "up")
    h.act(3, 5, "bring_in", 100)
    return h.end()


def _first_to_act(wrong_street=None):
    def first(street, right):
        return [x for x in (1, 4, 6, 8) if x != right][0] if street == wrong_street else right
    return eight_handed("razz", folds={3: [2, 3, 5, 7]}, first_actor=first)[0]


def _burn_skipped(skip):
    def drop_fifth_burn(h, street):
        if street == 5 and skip:
            h.burn = lambda street, card=None: None
    return eight_handed(folds={3: [2, 5, 7]}, tweak=drop_fifth_burn)[0]


CASES = {
    "BRING_IN": (lambda: _bring_in(3), lambda: _bring_in(1)),
    "FIRST_TO_ACT": (lambda: _first_to_act(wrong_street=5), lambda: _first_to_act()),
    "CARD_TO_DEAD_HAND": (lambda: _dead_hand(True), lambda: _dead_hand(False)),
    "FOURTH_STREET_DOUBLE": (lambda: _fourth_street_bet(800), lambda: _fourth_street_bet(400)),
    "EXPOSED_CARD": (lambda: _exposed_third("up"), lambda: _exposed_third("down")),
    "BURN_SKIPPED": (lambda: _burn_skipped(True), lambda: _burn_skipped(False)),
    "EXPOSED_CARD (B)": (lambda: seventh_street_exposure(replace=False),
                         lambda: seventh_street_exposure(replace=True)),
}


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_004_rule_raised_in_the_engine(rule_id):
    assert rules_raised(CASES[rule_id][0]()) == {rule_id.split()[0]}


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_004_rule_not_raised_in_the_engine(rule_id):
    assert rules_raised(CASES[rule_id][1]()) == set()


def test_004_deal_order_and_card_face_come_through_the_engine():
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.street(4, {1: "3c", 3: "4d", 5: "5h"}, order=[1, 5, 3])
    assert rules_raised(h.end()) == {"DEAL_ORDER"}
    h = small_hand()
    h.events[-1] = h.events[-1]._replace(face="down")
    h.act(3, 1, "bring_in", 100)
    assert rules_raised(h.end()) == {"CARD_FACE"}


def test_004_misdeal_when_a_live_seat_misses_its_fourth_street_card():
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.street(4, {1: "3c", 3: "4d"})
    h.act(4, 5)  # seat 5's Th shows the best hand whatever its missing card
    assert rules_raised(h.end()) == {"MISDEAL"}


def test_004_undecided_bring_in_is_recorded_on_the_round_row():
    h = small_hand(ups={1: "5c", 3: None, 5: "Th"})
    h.act(3, 1, "bring_in", 100)
    rp, found = replay(table_events(h.end()))
    rows = rp.drain_rounds()
    assert found == [] and rows[0]["undecided"] == ["BRING_IN"]


def test_004_replay_state_checkpoints_as_json_mid_hand():
    events = table_events(eight_handed(folds=BRANCH_FOLDS["A"], seventh="B")[0])
    half = len(events) // 2
    rp = TableReplay(events[0].table_id)
    found = [f for ev in events[:half] for f in rp.feed(ev)]
    rp = TableReplay.from_state(json.loads(json.dumps(rp.state())))
    found += [f for ev in events[half:] for f in rp.feed(ev)] + rp.close()
    assert {f.rule_id for f in found} == {"SHORT_DECK_PROCEDURE"}
