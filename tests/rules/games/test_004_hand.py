"""Document 004 (RP-10): one stud-family hand replayed by ``pitwatch.rules.stud_hand.StudHand``.

Every rule has a stream that must raise it and one that must not.  Streams
are built by :class:`HandStream`; :func:`eight_handed` plays a full 8-handed
hand to 7th street with chosen folds and a chosen 7th-street procedure.
"""
from __future__ import annotations

import random

import msgspec
import pytest

from pitwatch.rules.state import Ref
from pitwatch.rules.stud_hand import Reshuffle, SeventhStreet, StudHand, StudHandState, UpCard
from pitwatch.rules.stud_showing import bring_in_seat, first_to_act_seat, short_deck_branch
from pitwatch.schemas.events import Event


class HandStream:
    """Dealer events of one stud round, built step by step (``ts`` = seq ms)."""

    def __init__(self, game="stud", seats=(1, 2, 3, 4, 5, 6, 7, 8), small_bet=400, big_bet=800,
                 pack_id="P-1", round_id="R-1", table_id="STU-T"):
        self.game, self.seats, self.pack_id, self.round_id, self.table_id = game, list(seats), pack_id, round_id, table_id
        self.small_bet, self.big_bet = small_bet, big_bet
        self.events: list[Event] = []
        self.add("round_started", game=game, pack_id=pack_id, small_bet=small_bet, big_bet=big_bet)

    def add(self, type_, **fields) -> Event:
        n = len(self.events) + 1
        ev = Event(event_id=f"{self.round_id}-{n:04d}", ts=n * 1000, source="dealer", type=type_,
                   table_id=self.table_id, device_id="DT-1", seq=n, dealer_id="D-1",
                   round_id=self.round_id, **fields)
        self.events.append(ev)
        return ev

    def antes(self, seats=None, all_in=()):
        for s in seats or self.seats:
            self.add("bet_placed", seat=s, spot="ante", amount=50, all_in=s in all_in)

    def card(self, street, target, card, face):
        t = target if isinstance(target, str) else f"seat:{target}"
        return self.add("card_dealt", pack_id=self.pack_id, target=t, face=face, card=card, street=street)

    def burn(self, street, card=None):
        return self.card(street, "burn", card, "down")

    def third_street(self, downs1, downs2, ups, burn=True):
        """``downs1``/``downs2``/``ups``: {seat: card}, dealt one pass each in ascending seats."""
        if burn:
            self.burn(3)
        for cards, face in ((downs1, "down"), (downs2, "down"), (ups, "up")):
            for s in sorted(cards):
                self.card(3, s, cards[s], face)

    def street(self, n, cards, face=None, burn=True, order=None):
        if burn:
            self.burn(n)
        for s in order or sorted(cards):
            self.card(n, s, cards[s], face or ("down" if n == 7 else "up"))

    def act(self, street, seat, action="check", amount=None, all_in=False):
        return self.add("player_action", seat=seat, action=action, amount=amount, all_in=all_in, street=street)

    def end(self):
        self.add("round_ended")
        return self


def replay(stream: HandStream, cards_left=52) -> StudHand:
    hand = StudHand.start(stream.game, small_bet=stream.small_bet, big_bet=stream.big_bet,
                          seats=stream.seats, pack_id=stream.events[0].pack_id, cards_left=cards_left)
    for ev in stream.events[1:]:
        hand.feed(ev)
    return hand


def fired(hand: StudHand) -> set[str]:
    return {f["rule_id"] for f in hand.findings}


def eight_handed(game="stud", folds=None, seventh=None, seed=4, first_actor=None, tweak=None):
    """A full 8-handed hand to 7th street.

    ``folds``: {street: [seats folding there]}.  ``seventh``: the 7th-street
    procedure the dealer follows ("normal", "A", "B", "C"); ``None`` = the
    right one.  ``first_actor(street, right) -> seat`` may override who acts
    first; ``tweak(stream, street)`` runs before each street's deal.
    """
    folds = folds or {}
    deck = [r + s for r in "A23456789TJQK" for s in "cdhs"]
    random.Random(seed).shuffle(deck)
    h = HandStream(game)
    h.antes()
    live, up, burns, all_cards = list(h.seats), {}, [], list(deck)

    def draw():
        return deck.pop()

    def bets(street):
        hands = {s: up[s] for s in live}
        right = bring_in_seat(game, hands) if street == 3 else first_to_act_seat(game, hands)
        first = first_actor(street, right) if first_actor else right
        h.act(street, first, "bring_in" if street == 3 else "check", 100 if street == 3 else None)
        for s in live:
            if s != first:
                h.act(street, s, "fold" if s in folds.get(street, ()) else "call")
        if first in folds.get(street, ()):
            h.act(street, first, "fold")
        live[:] = [s for s in live if s not in folds.get(street, ())]

    for street in (3, 4, 5, 6):
        if tweak:
            tweak(h, street)
        burns.append(draw())
        h.burn(street)
        passes = ("down", "down", "up") if street == 3 else ("up",)
        for face in passes:
            for s in live:
                c = draw()
                h.card(street, s, c, face)
                if face == "up":
                    up.setdefault(s, []).append(c)
        bets(street)
    stack, need = len(deck), len(live)
    procedure = seventh or short_deck_branch(stack, need)
    if tweak:
        tweak(h, 7)
    if procedure in ("A", "C"):
        deck = burns[-3:] + deck
        h.pack_id = "P-1-R"
        h.add("reshuffle", pack_id="P-1-R", card_count=len(deck), burns_added=3)
    if len(deck) < 2:
        deck = [c for c in all_cards if c not in sum(up.values(), [])][:2]  # dealer error: cards from nowhere
    h.burn(7)
    deck.pop()
    if procedure in ("B", "C"):
        h.card(7, "community", deck.pop(), "up")
    else:
        for s in live:
            h.card(7, s, deck.pop() if deck else None, "down")
    right = first_to_act_seat(game, {s: up[s] for s in live})
    h.act(7, first_actor(7, right) if first_actor else right)
    return h.end(), stack, need


# --- clean hands ------------------------------------------------------------------------

@pytest.mark.parametrize("game", ["stud", "stud8", "razz"])
def test_004_clean_eight_handed_hand_raises_nothing(game):
    h, stack, need = eight_handed(game, folds={3: [2, 5, 7]})
    assert short_deck_branch(stack, need) == "normal"
    hand = replay(h)
    assert hand.findings == [] and hand.undecided == set()


# --- H: the short-stack procedure, 8-handed to 7th street --------------------------

BRANCH_FOLDS = {
    "A": {3: [8], 4: [7]},  # 5 cards left, 6 live: 5 + 3 >= 8
    "B": {5: [6, 7, 8]},  # 3 cards left, 5 live: 3 + 3 < 7
    "C": {},  # 0 cards left, 8 live
}


@pytest.mark.parametrize("branch", ["A", "B", "C"])
def test_004_H_short_stack_branch_done_right(branch):
    h, stack, need = eight_handed(folds=BRANCH_FOLDS[branch])
    assert short_deck_branch(stack, need) == branch
    hand = replay(h)
    assert hand.findings == []


@pytest.mark.parametrize("branch,done", [("A", "normal"), ("A", "B"), ("A", "C"), ("B", "normal"), ("B", "A"),
                                         ("B", "C"), ("C", "normal"), ("C", "A"), ("C", "B")])
def test_004_H_short_stack_branch_done_wrong(branch, done):
    h, stack, need = eight_handed(folds=BRANCH_FOLDS[branch], seventh=done)
    assert short_deck_branch(stack, need) == branch
    assert "SHORT_DECK_PROCEDURE" in fired(replay(h))


def test_004_H_short_stack_branch_a():
    assert fired(replay(eight_handed(folds=BRANCH_FOLDS["A"])[0])) == set()
    assert fired(replay(eight_handed(folds=BRANCH_FOLDS["A"], seventh="normal")[0])) == {"SHORT_DECK_PROCEDURE"}


def test_004_H_short_stack_branch_b():
    assert fired(replay(eight_handed(folds=BRANCH_FOLDS["B"])[0])) == set()
    assert fired(replay(eight_handed(folds=BRANCH_FOLDS["B"], seventh="C")[0])) == {"SHORT_DECK_PROCEDURE"}


def test_004_H_short_stack_branch_c():
    assert fired(replay(eight_handed(folds=BRANCH_FOLDS["C"])[0])) == set()
    assert fired(replay(eight_handed(folds=BRANCH_FOLDS["C"], seventh="B")[0])) == {"SHORT_DECK_PROCEDURE"}


def test_004_H_community_card_from_a_full_stack():
    h, stack, need = eight_handed(folds={3: [2, 5, 7]}, seventh="B")
    assert short_deck_branch(stack, need) == "normal"
    assert fired(replay(h)) == {"SHORT_DECK_PROCEDURE"}


def test_004_H_reshuffle_without_the_three_burns():
    h, _, _ = eight_handed(folds=BRANCH_FOLDS["A"])
    i, reshuffle = next((i, e) for i, e in enumerate(h.events) if e.type == "reshuffle")
    h.events[i] = reshuffle._replace(burns_added=0, card_count=reshuffle.card_count - 3)
    assert fired(replay(h)) == {"SHORT_DECK_PROCEDURE"}


def test_004_H_undecided_when_the_stack_size_is_unknown():
    hand = replay(eight_handed(folds=BRANCH_FOLDS["B"], seventh="normal")[0], cards_left=None)
    assert fired(hand) == set() and hand.undecided == {"SHORT_DECK_PROCEDURE"}


# --- each street starts with a burn ------------------------------------------------------

def test_004_burn_skipped_on_fifth_street():
    def no_fifth_burn(h, street):
        if street == 5:
            h.burn = lambda street, card=None: None
    h, _, _ = eight_handed(folds={3: [2, 5, 7]}, tweak=no_fifth_burn)
    assert fired(replay(h, cards_left=None)) == {"BURN_SKIPPED"}


def test_004_burn_present_on_every_street():
    assert "BURN_SKIPPED" not in fired(replay(eight_handed(folds={3: [2, 5, 7]})[0]))


def test_004_burn_before_a_reshuffle_does_not_count_after_it():
    h = small_hand()
    h.burn(7)
    h.add("reshuffle", pack_id="P-2", card_count=9, burns_added=3)
    h.card(7, 1, "9d", "down")
    assert "BURN_SKIPPED" in fired(replay(h))


# --- small hands for the other rules ------------------------------------------------------

def small_hand(game="stud", ups=None, antes_all_in=()):
    """Seats 1, 3, 5 through 3rd street, seat 1 bringing in unless ``ups`` says otherwise."""
    h = HandStream(game, seats=(1, 3, 5))
    h.antes(all_in=antes_all_in)
    h.third_street({1: "Ac", 3: "Ad", 5: "Ah"}, {1: "Kc", 3: "Kd", 5: "Kh"},
                   ups or {1: "2c", 3: "9d", 5: "Th"})
    return h


def test_004_deal_order_ascending_per_pass():
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.act(3, 3, "call", 100)
    h.act(3, 5, "call", 100)
    h.street(4, {1: "3c", 3: "4d", 5: "5h"}, order=[1, 5, 3])
    assert fired(replay(h.end())) == {"DEAL_ORDER"}


def test_004_deal_order_kept():
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.street(4, {1: "3c", 3: "4d", 5: "Kh"})
    h.act(4, 5)
    assert fired(replay(h.end())) == set()


def test_004_deal_order_third_street_pass_out_of_order():
    h = HandStream(seats=(1, 3, 5))
    h.antes()
    h.burn(3)
    for s, c in ((1, "Ac"), (5, "Ah"), (3, "Ad")):
        h.card(3, s, c, "down")
    assert fired(replay(h.end())) == {"DEAL_ORDER"}


def test_004_C_absent_seat_is_dealt_in_on_third_street_then_dead():
    h = small_hand()
    h.add("player_absent", seat=1)
    h.act(3, 3, "bring_in", 100)  # seat 1's 2c is dead: seat 3's 9d brings in
    h.act(3, 5, "call", 100)
    h.street(4, {3: "4d", 5: "5h"})
    h.act(4, 5)
    assert fired(replay(h.end())) == set()


def test_004_C_absent_seat_left_out_on_third_street():
    h = HandStream(seats=(1, 3, 5))
    h.antes()
    h.add("player_absent", seat=3)
    h.third_street({1: "Ac", 5: "Ah"}, {1: "Kc", 5: "Kh"}, {1: "2c", 5: "Th"})
    assert fired(replay(h.end())) == {"DEAL_ORDER"}


def test_004_C_card_to_dead_hand_on_fourth_street():
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.act(3, 3, "fold")
    h.act(3, 5, "call", 100)
    h.street(4, {1: "3c", 3: "4d", 5: "5h"})
    assert fired(replay(h.end())) == {"CARD_TO_DEAD_HAND"}


def test_004_C_card_to_absent_hand_on_fourth_street():
    h = small_hand()
    h.add("player_absent", seat=5)
    h.act(3, 1, "bring_in", 100)
    h.street(4, {1: "3c", 3: "4d", 5: "5h"})
    assert fired(replay(h.end())) == {"CARD_TO_DEAD_HAND"}


def test_004_card_face_third_street_up_card_dealt_down():
    h = small_hand()
    h.events[-1] = h.events[-1]._replace(face="down")
    assert fired(replay(h.end())) == {"CARD_FACE"}


def test_004_card_face_seventh_street_card_face_up():
    h, _, _ = eight_handed(folds={3: [2, 5, 7]})
    i = next(i for i, e in enumerate(h.events) if e.street == 7 and e.target == "seat:1")
    h.events[i] = h.events[i]._replace(face="up")
    assert fired(replay(h)) == {"CARD_FACE"}


def test_004_A_exposed_down_card_third_card_dealt_down():
    h = HandStream("razz", seats=(1, 3, 5))
    h.antes()
    h.burn(3)
    h.card(3, 1, "Jd", "down"), h.card(3, 3, "Ah", "down"), h.card(3, 5, "Qs", "down")
    h.add("card_exposed", target="seat:5", card="Qs", street=3)
    for s, c in ((1, "7d"), (3, "Ac"), (5, "5d")):
        h.card(3, s, c, "down")
    for s, c, f in ((1, "Jh", "up"), (3, "8h", "up"), (5, "4s", "down")):
        h.card(3, s, c, f)
    h.act(3, 5, "bring_in", 100)  # razz: the exposed Qs is the highest up card
    assert fired(replay(h.end())) == set()


def test_004_A_exposed_down_card_third_card_dealt_up():
    h = HandStream("razz", seats=(1, 3, 5))
    h.antes()
    h.burn(3)
    h.card(3, 1, "Jd", "down"), h.card(3, 3, "Ah", "down"), h.card(3, 5, "Qs", "down")
    h.add("card_exposed", target="seat:5", card="Qs", street=3)
    for s, c in ((1, "7d"), (3, "Ac"), (5, "5d")):
        h.card(3, s, c, "down")
    for s, c in ((1, "Jh"), (3, "8h"), (5, "4s")):
        h.card(3, s, c, "up")
    h.act(3, 5, "bring_in", 100)
    assert fired(replay(h.end())) == {"EXPOSED_CARD"}


def seventh_street_exposure(replace: bool, all_in_seats=()):
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    for street, cards in ((4, {1: "3c", 3: "4d", 5: "Kh"}), (5, {1: "3d", 3: "5d", 5: "Ks"}),
                          (6, {1: "3h", 3: "6d", 5: "Qh"})):
        h.street(street, cards)
        up = {s: [e.card for e in h.events if e.target == f"seat:{s}" and e.face == "up"] for s in (1, 3, 5)}
        first = first_to_act_seat("stud", up)
        h.act(street, first, "check", all_in=first in all_in_seats)
        for s in (1, 3, 5):
            if s != first:
                h.act(street, s, "call", all_in=s in all_in_seats)
    h.street(7, {1: "8c", 3: "8d", 5: "8h"})
    h.add("card_exposed", target="seat:3", card="8d", street=7)
    if replace:
        h.card(7, 3, "9c", "down")
    h.act(7, first)
    return h.end()


def test_004_B_exposed_seventh_street_card_replaced():
    assert fired(replay(seventh_street_exposure(replace=True))) == set()


def test_004_B_exposed_seventh_street_card_not_replaced():
    assert fired(replay(seventh_street_exposure(replace=False))) == {"EXPOSED_CARD"}


def test_004_B_no_replacement_needed_when_no_betting_is_possible():
    h = seventh_street_exposure(replace=False, all_in_seats=(3, 5))
    assert "EXPOSED_CARD" not in fired(replay(h))


def test_004_D_bring_in_by_the_wrong_seat():
    h = small_hand()
    h.act(3, 3, "bring_in", 100)
    hand = replay(h.end())
    assert fired(hand) == {"BRING_IN"}
    assert "seat 1" in hand.findings[0]["expected"]


def test_004_D_bring_in_decided_by_suit_in_the_stream():
    h = small_hand(ups={1: "2s", 3: "2c", 5: "2h"})
    h.act(3, 3, "bring_in", 100)
    assert fired(replay(h.end())) == set()


def test_004_E_all_in_ante_passes_the_bring_in_left():
    h = small_hand(antes_all_in=(1,))
    h.act(3, 3, "bring_in", 100)
    assert fired(replay(h.end())) == set()
    h = small_hand(antes_all_in=(1,))
    h.act(3, 1, "bring_in", 100)
    assert fired(replay(h.end())) == {"BRING_IN"}


def test_004_D_bring_in_undecided_with_an_unreadable_up_card():
    h = small_hand(ups={1: "5c", 3: None, 5: "Th"})
    h.act(3, 1, "bring_in", 100)
    hand = replay(h.end())
    assert fired(hand) == set() and hand.undecided == {"BRING_IN"}


@pytest.mark.parametrize("game", ["stud", "razz"])
def test_004_D_first_to_act_wrong_seat_on_each_street(game):
    for street in (4, 5, 6, 7):
        def wrong(s, right, street=street):
            return [x for x in (1, 4, 6, 8) if x != right][0] if s == street else right
        h, _, _ = eight_handed(game, folds={3: [2, 3, 5, 7]}, first_actor=wrong)
        assert fired(replay(h)) == {"FIRST_TO_ACT"}, street


def test_004_D_seventh_street_first_to_act_is_sixth_streets():
    h, _, _ = eight_handed(folds={3: [2, 5, 7]})
    sixth = next(e for e in h.events if e.type == "player_action" and e.street == 6)
    seventh = next(e for e in h.events if e.type == "player_action" and e.street == 7)
    assert sixth.seat == seventh.seat and fired(replay(h)) == set()


def test_004_F_fourth_street_double_with_a_pair_showing():
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.street(4, {1: "3c", 3: "9s", 5: "Kh"})  # seat 3 shows 9d 9s
    h.act(4, 3, "bet", 800)
    assert fired(replay(h.end())) == {"FOURTH_STREET_DOUBLE"}


def test_004_F_fourth_street_small_bet_with_a_pair_showing():
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.street(4, {1: "3c", 3: "9s", 5: "Kh"})
    h.act(4, 3, "bet", 400)
    assert fired(replay(h.end())) == set()


def test_004_F_fourth_street_big_bet_without_a_pair_is_no_double():
    h = small_hand()
    h.act(3, 1, "bring_in", 100)
    h.street(4, {1: "3c", 3: "4d", 5: "Kh"})
    h.act(4, 5, "bet", 800)
    assert "FOURTH_STREET_DOUBLE" not in fired(replay(h.end()))


def test_004_hand_state_survives_a_json_checkpoint_mid_hand():
    h, _, _ = eight_handed(folds=BRANCH_FOLDS["A"], seventh="normal")
    hand = StudHand.start("stud", small_bet=400, big_bet=800, seats=h.seats, pack_id="P-1", cards_left=52)
    half = len(h.events) // 2
    for ev in h.events[1:half]:
        hand.feed(ev)
    hand = StudHand(msgspec.json.decode(msgspec.json.encode(hand.s), type=StudHandState), shared_checks=True)
    for ev in h.events[half:]:
        hand.feed(ev)
    assert fired(hand) == {"SHORT_DECK_PROCEDURE"}


def _old_hand_state() -> dict:
    """A hand's state on 7th street as the dict version 2 kept (what ``new_hand_state`` and the
    events made of it): refs as lists, up cards as ``[street, card, ref]``, reshuffles as
    ``[burns_added, card_count]``; one ref from before version 2 (three items)."""
    r = ["E-1", 1000, "D-1", "DT-1", None]
    return {
        "game": "stud", "small_bet": 400.0, "big_bet": 800, "occupied": [1, 3, 5],
        "decks": 1, "pack_id": "P-1", "cards_left": 30,
        "antes": [1, 3, 5], "all_in": [], "ante_all_in": [], "absent": [], "folded": [5], "dealt_in": [1, 3, 5],
        "count": {"3": {"1": 3, "3": 3, "5": 3}, "4": {"1": 1, "3": 1}},
        "up": {"1": [[3, "2c", r], [4, None, ["E-2", 2000, "D-1"]]], "3": [[3, "9d", r]]},
        "exposed_third": [], "known": ["2c", "9d"], "street": 7, "burned": False, "expected": [3],
        "acted": [3, 4], "replacement_due": None, "replaced": {}, "dead_cards": {"5": 1},
        "seventh": {"stack": 6, "live": 2, "reshuffles": [[3, 9]], "judged": False, "events": [r]},
        "street_live": {"3": [1, 3, 5], "4": [1, 3]}, "community": 0, "ended": False, "fired": ["BURN_SKIPPED"],
        "dead_refs": {"5": r}, "exposed_refs": {},
    }


def test_004_a_hand_state_saved_as_a_dict_reads_into_the_record():
    state = msgspec.convert(_old_hand_state(), StudHandState)
    r = Ref("E-1", 1000, "D-1", "DT-1", None)
    assert state.game == "stud" and state.small_bet == 400.0 and state.big_bet == 800.0
    assert state.up["1"] == [UpCard(3, "2c", r), UpCard(4, None, Ref("E-2", 2000, "D-1"))]
    assert state.seventh == SeventhStreet(stack=6, live=2, reshuffles=[Reshuffle(3, 9)], judged=False, events=[r])
    assert state.count["4"] == {"1": 1, "3": 1} and state.dead_cards == {"5": 1} and state.dead_refs == {"5": r}
    assert state.street == 7 and state.expected == [3] and state.fired == ["BURN_SKIPPED"]
    # what the record writes is the dict it was read from (refs written in full)
    again = msgspec.json.decode(msgspec.json.encode(state))
    old = _old_hand_state()
    old["big_bet"] = 800.0
    old["up"]["1"][1][2] = ["E-2", 2000, "D-1", None, None]
    assert again == old
    # the view reads it: seat 1's shown cards through 4th street, the dead hand left out
    hand = StudHand(state)
    assert hand.live_seats() == [1, 3] and hand.dealt(4, 1) == 1
    assert hand.holdings_excluded() == {"seat:5": 1}


def test_004_a_round_state_saved_before_its_round_started_reads_as_a_hand_not_begun():
    assert msgspec.convert({}, StudHandState) == StudHandState()
    assert StudHandState().game is None


def test_004_no_ante_and_no_seat_known_leaves_third_street_unjudged():
    h = HandStream(seats=(1, 3, 5))
    h.third_street({1: "Ac", 3: "Ad", 5: "Ah"}, {1: "Kc", 3: "Kd", 5: "Kh"}, {1: "2c", 3: "9d", 5: "Th"})
    h.act(3, 1, "bring_in", 100)
    hand = StudHand.start("stud", pack_id="P-1", cards_left=52)
    for ev in h.end().events[1:]:
        hand.feed(ev)
    assert fired(hand) == set()
    assert hand.expected_holdings() == {"seat:1": 3, "seat:3": 3, "seat:5": 3}
