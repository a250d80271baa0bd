"""Document 004 (RP-10) D, E, H: bring-in, first to act, short stack; pure logic.

Tests are named after the section of document 004 they check.
"""
from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pitwatch.rules.stud_showing import (
    ALL_CARDS,
    COMMUNITY_CARD,
    NORMAL,
    RESHUFFLE_COMMUNITY_CARD,
    RESHUFFLE_WITH_BURNS,
    UNDECIDED,
    bring_in_seat,
    first_to_act_seat,
    next_seat_to_act,
    required_cards,
    short_deck_branch,
    short_deck_followed,
    showing_strength,
)


def hands(**seats):
    """hands(s1="Kh 7c", s4="Ks 7d") -> {1: ["Kh", "7c"], 4: ["Ks", "7d"]}; '??' = unknown."""
    return {int(k[1:]): [None if c == "??" else c for c in v.split()] for k, v in seats.items()}


# --- D, E: bring-in -------------------------------------------------------------

def test_004_D_bring_in_lowest_card_stud():
    assert bring_in_seat("stud", hands(s1="5c", s2="2h", s4="3c", s5="7h")) == 2


def test_004_D_bring_in_ace_is_high_in_stud():
    assert bring_in_seat("stud", hands(s1="Ac", s2="Kd")) == 2


def test_004_D_bring_in_decided_by_suit_stud():
    # two deuces: clubs is the lowest suit, so the 2c brings it in
    assert bring_in_seat("stud", hands(s1="2s", s3="2c", s5="2h", s6="9d")) == 3
    assert bring_in_seat("stud8", hands(s1="2s", s3="2d", s5="2h")) == 3


def test_004_D_bring_in_decided_by_suit_razz():
    # razz: the highest card, a rank tie to the higher suit; the ace is low
    assert bring_in_seat("razz", hands(s1="Qc", s2="Qs", s3="Ah", s4="Qd")) == 2
    assert bring_in_seat("razz", hands(s1="As", s2="2c")) == 2


def test_004_D_razz_tie_between_king_of_hearts_and_king_of_diamonds():
    assert bring_in_seat("razz", hands(s2="Kd", s5="Kh", s7="9s")) == 5
    assert bring_in_seat("razz", hands(s2="Kh", s5="Kd", s7="9s")) == 2


def test_004_E_all_in_bring_in_passes_to_the_left():
    # seat 2 holds the lowest card but went all-in with the ante
    assert bring_in_seat("stud", hands(s1="9c", s2="2c", s4="3d", s6="Kd"), all_in={2}) == 4


def test_004_E_all_in_bring_in_skips_all_in_seats_and_wraps():
    up = hands(s1="9c", s3="Td", s6="2c", s8="Kd")
    assert bring_in_seat("stud", up, all_in={6, 8}) == 1
    assert bring_in_seat("razz", up, all_in={8, 1}) == 3  # razz: Kd brings in


def test_004_E_nobody_to_bring_in_when_everybody_is_all_in():
    assert bring_in_seat("stud", hands(s1="9c", s2="2c"), all_in={1, 2}) is None


def test_004_E_next_seat_to_act_wraps_ascending():
    assert next_seat_to_act(7, {1, 3, 7}, all_in={7}) == 1
    assert next_seat_to_act(3, {1, 3, 7}, all_in=set()) == 3


# --- D: first to act on 4th-7th street --------------------------------------------

def test_004_D_first_to_act_highest_showing_hand_stud():
    up = hands(s1="Kh 7c", s2="4d 4c", s3="As Qd")
    assert first_to_act_seat("stud", up) == 2  # a pair beats A-high
    up = hands(s1="9h 9c 3d 3s", s2="Kd Kc Ks 2c", s3="Ah Ac Kh Qs")
    assert first_to_act_seat("stud", up) == 2  # trips beat two pair
    up = hands(s1="9h 9c Kd", s2="9d 9s Qd")
    assert first_to_act_seat("stud", up) == 1  # same pair: the kicker


def test_004_D_no_straights_or_flushes_on_the_up_cards():
    up = hands(s1="5h 6h 7h 8h", s2="2c 2d 3s 4c")
    assert first_to_act_seat("stud8", up) == 2


def test_004_D_first_to_act_lowest_showing_hand_razz():
    up = hands(s1="7h 3c", s2="8d 2c", s3="As Kd")
    assert first_to_act_seat("razz", up) == 1
    # unpaired beats paired however high
    up = hands(s1="Kh Qc Jd", s2="2c 2d 3s")
    assert first_to_act_seat("razz", up) == 1


def test_004_D_razz_paired_hands_compare_the_pair_first():
    # "Low-Hands bei Razz": the pair of fives is the lower hand than nines
    up = hands(s1="9h 9c 2d", s2="5d 5s Kd")
    assert first_to_act_seat("razz", up) == 2
    # two pair is a lower razz hand than trips (standard ace-to-five order)
    up = hands(s1="2h 2c 2d 3s", s2="Kh Kc Qd Qs")
    assert first_to_act_seat("razz", up) == 2


def test_004_D_first_to_act_tie_goes_to_highest_card_by_suit_stud():
    # Kh7c and Ks7d show equal hands: the Ks is the higher card by suit
    up = hands(s2="Kh 7c", s5="Ks 7d")
    assert first_to_act_seat("stud", up) == 5
    up = hands(s2="Ks 7c", s5="Kh 7d")
    assert first_to_act_seat("stud", up) == 2
    # the highest card can be one of the pair
    up = hands(s1="Qc Qs 4d", s6="Qd Qh 4s")
    assert first_to_act_seat("stud", up) == 1


def test_004_D_first_to_act_tie_by_suit_razz_with_ace_low():
    up = hands(s3="Ad 5c", s4="As 5d")
    assert first_to_act_seat("razz", up) == 4  # 5d beats 5c: the ace does not count high
    up = hands(s3="7s 2c", s4="7h 2s")
    assert first_to_act_seat("razz", up) == 3


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_004_D_tie_by_suit_where_pokerkit_would_take_the_first_seat():
    """pokerkit 0.7.7 breaks the tie by seat position; document 004 D by suit."""
    from pokerkit import Automation, FixedLimitSevenCardStud

    state = FixedLimitSevenCardStud.create_state(
        (Automation.ANTE_POSTING, Automation.BET_COLLECTION,
         Automation.BLIND_OR_STRADDLE_POSTING, Automation.CARD_BURNING,
         Automation.HOLE_CARDS_SHOWING_OR_MUCKING, Automation.HAND_KILLING,
         Automation.CHIPS_PUSHING, Automation.CHIPS_PULLING),
        True, 1, 2, 4, 8, (200, 200), 2,
    )
    state.deal_hole("2c3cKh")
    state.deal_hole("2d3dKs")
    state.post_bring_in()  # player 0: Kh is the lower king
    state.check_or_call()
    state.deal_hole("7c")
    state.deal_hole("7d")
    assert state.actor_index == 0  # pokerkit: position
    assert first_to_act_seat("stud", hands(s1="Kh 7c", s2="Ks 7d")) == 2  # 004 D: suit


def test_004_D_first_to_act_all_in_passes_left():
    up = hands(s1="Ah Ac", s3="Kd 2c", s5="Qs 3d")
    assert first_to_act_seat("stud", up, all_in={1}) == 3
    assert first_to_act_seat("stud", up, all_in={1, 3}) == 5


def test_004_D_seventh_street_follows_sixth():
    # up cards as on 6th street; a 7th-street card (down, or exposed) never counts
    sixth = hands(s1="Ah 9c 5d 2s", s4="Kh Kd 3c 4c", s7="Qs Jd Tc 8h")
    assert first_to_act_seat("stud", sixth) == 4
    with_exposed_seventh = {s: c + (["As"] if s == 1 else []) for s, c in sixth.items()}
    assert first_to_act_seat("stud", with_exposed_seventh) == 1  # why 7th must use 6th


# --- ranking agrees with pokerkit's stud/razz opening lookups ------------------------

def _rank_multisets(size):
    for ranks in itertools.combinations_with_replacement("A23456789TJQK", size):
        if max(ranks.count(r) for r in ranks) <= 4:
            yield "".join(r + "cdhs"[ranks[:i].count(r)] for i, r in enumerate(ranks))


@pytest.mark.parametrize("game", ["stud", "razz"])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_004_D_showing_hand_order_matches_pokerkit(game, size):
    from pokerkit.state import _HighHandOpeningLookup, _LowHandOpeningLookup

    lookup = _LowHandOpeningLookup() if game == "razz" else _HighHandOpeningLookup()
    sign = -1 if game == "razz" else 1  # pokerkit: a lower razz entry is the better low
    hands_ = list(_rank_multisets(size))
    ours = sorted(hands_, key=lambda h: showing_strength(game, [h[i:i + 2] for i in range(0, len(h), 2)]))
    theirs = sorted(hands_, key=lambda h: sign * lookup.get_entry(h).index)
    assert [showing_strength(game, [h[i:i + 2] for i in range(0, len(h), 2)]) for h in theirs] == sorted(
        showing_strength(game, [h[i:i + 2] for i in range(0, len(h), 2)]) for h in ours)


# --- H: the 7th-street short-stack procedure ------------------------------------------

def test_004_H_required_is_live_players_plus_burn_plus_last_card():
    assert required_cards(5) == 7


def test_004_H_enough_cards_deal_normally():
    assert short_deck_branch(stack=7, live_seats=5) == NORMAL
    assert short_deck_branch(stack=30, live_seats=8) == NORMAL


def test_004_H_short_stack_branch_a():
    # 6 + 3 burns = 9 >= 7 required: reshuffle with the burns, burn, one card each
    assert short_deck_branch(stack=6, live_seats=5) == RESHUFFLE_WITH_BURNS
    assert short_deck_branch(stack=7, live_seats=8) == RESHUFFLE_WITH_BURNS  # 10 >= 10


def test_004_H_short_stack_branch_b():
    # 3 cards, 3 + 3 = 6 < 8 required: burn and one community card, no reshuffle
    assert short_deck_branch(stack=3, live_seats=6) == COMMUNITY_CARD
    assert short_deck_branch(stack=6, live_seats=8) == COMMUNITY_CARD  # 9 < 10


def test_004_H_short_stack_branch_c():
    # fewer than 3 cards: reshuffle with the burns, burn, one community card
    assert short_deck_branch(stack=2, live_seats=6) == RESHUFFLE_COMMUNITY_CARD
    assert short_deck_branch(stack=0, live_seats=8) == RESHUFFLE_COMMUNITY_CARD


def test_004_H_clean_example_stacks():
    # the clean example's reshuffles: card_count 9 = 6 + 3 burns with 5 live, and
    # card_count 5 = 2 + 3 burns with 6 live
    assert short_deck_branch(6, 5) == RESHUFFLE_WITH_BURNS
    assert short_deck_branch(2, 6) == RESHUFFLE_COMMUNITY_CARD


# --- unknown cards are never guessed ------------------------------------------------

def test_004_unknown_card_that_cannot_change_the_bring_in_is_decided():
    # the 2c is the lowest card in the deck: nothing unknown can beat it
    up = hands(s1="9c", s2="2c", s3="??", s4="Kd", s5="Ts")
    assert bring_in_seat("stud", up) == 2


def test_004_unknown_card_that_could_change_the_bring_in_is_undecided():
    up = hands(s1="9c", s2="4d", s3="??", s4="Kd", s5="Ts")
    assert bring_in_seat("stud", up) is UNDECIDED


def test_004_unknown_card_when_its_seat_would_pass_the_bring_in_on():
    # seat 3 is all-in with its ante: if its unknown card is lowest, seat 4 brings in;
    # otherwise seat 4 holds the lowest known card: seat 4 either way
    up = hands(s1="9c", s3="??", s4="3c", s5="Ts")
    assert bring_in_seat("stud", up, all_in={3}) == 4


def test_004_unknown_first_to_act_card_decided_and_undecided():
    # a pair of aces showing: an unknown card beside a 2 cannot beat it
    assert first_to_act_seat("stud", hands(s1="Ah Ad", s2="2c ??")) == 1
    # the unknown card beside a K could pair it
    assert first_to_act_seat("stud", hands(s1="Qh Qd", s2="Kc ??")) is UNDECIDED
    # the unknown card can at best make Qc-Jh, equal to Qs-Jd: the Qs goes first
    up = hands(s1="Qs Jd", s2="Qc ??")
    assert first_to_act_seat("stud", up) is UNDECIDED  # it could be a queen
    no_queen_king_ace = ALL_CARDS - {r + s for r in "QKA" for s in "cdhs"} - {"Jc", "Js"}
    assert first_to_act_seat("stud", up, unseen=no_queen_king_ace) == 1


_seat_hands = st.integers(min_value=2, max_value=7).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from(range(1, 9)), min_size=n, max_size=n, unique=True),
        st.integers(min_value=1, max_value=4),
        st.permutations(sorted(ALL_CARDS)),
        st.sets(st.integers(min_value=1, max_value=8), max_size=3),
    ))


def _deal(seats, per_seat, deck):
    return {s: list(deck[i * per_seat:(i + 1) * per_seat]) for i, s in enumerate(sorted(seats))}


def _decision(game, street_cards, all_in, unseen=None):
    if len(next(iter(street_cards.values()))) == 1:
        return bring_in_seat(game, street_cards, all_in, unseen)
    return first_to_act_seat(game, street_cards, all_in, unseen)


@settings(max_examples=150, deadline=None)
@given(_seat_hands, st.sampled_from(["stud", "stud8", "razz"]), st.data())
def test_004_one_unknown_card_is_decided_exactly_when_it_cannot_matter(drawn, game, data):
    seats, per_seat, deck, all_in = drawn
    full = _deal(seats, per_seat, deck)
    seat = data.draw(st.sampled_from(sorted(full)))
    slot = data.draw(st.integers(0, per_seat - 1))
    masked = {s: [None if (s == seat and i == slot) else c for i, c in enumerate(cs)]
              for s, cs in full.items()}
    answer = _decision(game, masked, all_in)
    known = {c for cs in masked.values() for c in cs if c}
    outcomes = set()
    for card in ALL_CARDS - known:
        filled = {s: [card if c is None else c for c in cs] for s, cs in masked.items()}
        outcomes.add(_decision(game, filled, all_in))
    if answer is UNDECIDED:
        assert len(outcomes) > 1
    else:
        assert outcomes == {answer}


@settings(max_examples=40, deadline=None)
@given(_seat_hands, st.sampled_from(["stud", "razz"]), st.randoms(use_true_random=False))
def test_004_two_unknown_cards_never_give_a_guessed_answer(drawn, game, rnd):
    seats, per_seat, deck, all_in = drawn
    full = _deal(seats, per_seat, deck)
    slots = [(s, i) for s in full for i in range(per_seat)]
    hidden = set(rnd.sample(slots, 2))
    masked = {s: [None if (s, i) in hidden else c for i, c in enumerate(cs)] for s, cs in full.items()}
    answer = _decision(game, masked, all_in)
    if answer is UNDECIDED:
        return
    known = {c for cs in masked.values() for c in cs if c}
    pairs = list(itertools.permutations(sorted(ALL_CARDS - known), 2))
    for a, b in random.Random(rnd.random()).sample(pairs, 300):
        it = iter((a, b))
        filled = {s: [next(it) if c is None else c for c in cs] for s, cs in masked.items()}
        assert _decision(game, filled, all_in) == answer


@pytest.mark.parametrize("branch,stack,reshuffles,community,seat_cards,followed", [
    ("normal", 9, [], 0, 5, True),
    ("normal", 9, [[3, 12]], 0, 5, False),  # a reshuffle nobody needed
    ("A", 6, [[3, 9]], 0, 5, True),
    ("A", 6, [], 0, 5, False),  # dealt on from a short stack
    ("A", 6, [[0, 6]], 0, 5, False),  # reshuffled without the three burns
    ("A", 6, [[3, 8]], 0, 5, False),  # the rebuilt stack is not stack + 3
    ("B", 3, [], 1, 0, True),
    ("B", 3, [[3, 6]], 1, 0, False),
    ("B", 3, [], 1, 2, False),  # community card and cards to seats
    ("C", 2, [[3, 5]], 1, 0, True),
    ("C", 2, [], 1, 0, False),  # community card without the reshuffle
    ("C", 2, [[3, None]], 1, 0, True),  # no card_count given: not held against the dealer
])
def test_004_H_what_the_dealer_did_against_the_branch(branch, stack, reshuffles, community, seat_cards, followed):
    assert short_deck_followed(branch, stack, reshuffles, community, seat_cards) is followed


@pytest.mark.parametrize("game", ["stud", "stud8", "razz"])
def test_004_d_a_card_code_with_more_after_it_ranks_by_its_code(game):
    """The per-line decoder accepts ``"As\\n"`` as a card; the showing hand ranks it as ``As``,
    as the engine always did, and does not fail the table's replay."""
    from pitwatch.rules.stud_showing import first_to_act_priority, showing_strength

    assert first_to_act_priority(game, ["As\n", "Kd"]) == first_to_act_priority(game, ["As", "Kd"])
    assert showing_strength(game, ["7c", "As\n"]) == showing_strength(game, ["7c", "As"])
