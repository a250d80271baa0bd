"""Best five of six for combate's poker bet (document 001 H–J), several decks allowed."""
from __future__ import annotations

from collections import Counter
from itertools import combinations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pitwatch.rules.poker_hands import (
    DEFAULT_PAYTABLE,
    Category,
    Paytable,
    best_five,
    poker_multiplier,
    qualifies,
    rank_five,
)

ALL_CARDS = tuple(r + s for r in "23456789TJQKA" for s in "cdhs")


def hand(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("cards, category", [
    ("2c 7d 9h Js Kc 4d", Category.HIGH_CARD),
    ("Ac Ad 7h 9s Jc 3d", Category.ONE_PAIR),
    ("Kc Kd 7h 7s Jc 3d", Category.TWO_PAIR),
    ("7c 7d 7h 2s Jc 3d", Category.THREE_OF_A_KIND),
    ("As 2d 3c 4h 5s 9d", Category.STRAIGHT),  # the wheel, ace low
    ("Ts Jd Qc Kh As 2d", Category.STRAIGHT),  # ace high
    ("2h 7h 9h Jh Kh 3c", Category.FLUSH),
    ("Qc Qd Qh 5s 5c 2d", Category.FULL_HOUSE),
    ("9c 9d 9h 9s 2c 3d", Category.FOUR_OF_A_KIND),
    ("5d 6d 7d 8d 9d Kc", Category.STRAIGHT_FLUSH),
    ("Td Jd Qd Kd Ad 2c", Category.ROYAL_FLUSH),
])
def test_001_H_best_five_of_six_categories(cards, category):
    assert best_five(hand(cards)).category is category


def test_001_H_the_sixth_card_is_discarded_for_the_best_five():
    best = best_five(hand("2h 7h 9h Jh Kh Kc"))  # a pair of kings is there too; the flush is better
    assert best.category is Category.FLUSH
    assert "Kc" not in best.cards


def test_001_H_duplicate_cards_from_several_decks_count_as_their_rank():
    assert best_five(hand("9h Ks 9h Kh 3c 3s")).category is Category.TWO_PAIR
    assert best_five(hand("Ah Ah 4c 7d 9s Jc")).pair_rank == "A"


def test_001_J_five_of_a_kind_pays_as_four_of_a_kind():
    best = best_five(hand("Ah Ad Ac As Ah 2c"))
    assert best.category is Category.FIVE_OF_A_KIND
    assert poker_multiplier(best) == DEFAULT_PAYTABLE.four_of_a_kind == 20


def test_001_J_five_suited_cards_with_a_repeated_rank_are_a_flush():
    assert best_five(hand("Ah Ah Kh Qh Jh 2c")).category is Category.FLUSH
    assert best_five(hand("Ah Ah Ah Qh Jh 2c")).category is Category.FLUSH  # beats three of a kind
    assert best_five(hand("Ah Ah Ah Kh Kh 2c")).category is Category.FULL_HOUSE  # beats the flush
    assert best_five(hand("Ah Ah Ah Ah Kh 2c")).category is Category.FOUR_OF_A_KIND


def test_001_I_pair_of_aces_or_better_wins():
    assert qualifies(best_five(hand("Ac Ad 7h 9s Jc 3d")))
    assert not qualifies(best_five(hand("Kc Kd 7h 9s Jc 3d")))
    assert not qualifies(best_five(hand("2c 7d 9h Js Kc 4d")))
    assert poker_multiplier(best_five(hand("Kc Kd 7h 9s Jc 3d"))) is None


@pytest.mark.parametrize("cards, pays", [
    ("Ac Ad 7h 9s Jc 3d", 1), ("Kc Kd 7h 7s Jc 3d", 2), ("7c 7d 7h 2s Jc 3d", 3),
    ("As 2d 3c 4h 5s 9d", 4), ("2h 7h 9h Jh Kh 3c", 5), ("Qc Qd Qh 5s 5c 2d", 7),
    ("9c 9d 9h 9s 2c 3d", 20), ("5d 6d 7d 8d 9d Kc", 50), ("Td Jd Qd Kd Ad 2c", 100),
])
def test_001_J_default_paytable(cards, pays):
    assert poker_multiplier(best_five(hand(cards))) == pays


def test_001_J_the_table_paytable_is_used():
    table = Paytable.from_mapping({"royal_flush": 250, "two_pair": 1.5})
    assert poker_multiplier(best_five(hand("Td Jd Qd Kd Ad 2c")), table) == 250
    assert poker_multiplier(best_five(hand("Kc Kd 7h 7s Jc 3d")), table) == 1.5
    assert poker_multiplier(best_five(hand("Qc Qd Qh 5s 5c 2d")), table) == 7
    with pytest.raises(ValueError):
        Paytable.from_mapping({"five_aces": 3})


def test_best_five_orders_hands_within_a_category():
    assert rank_five(hand("Ac Ad 2h 3s 4c")) > rank_five(hand("Kc Kd Qh Js 9c"))
    assert rank_five(hand("Ah Ah Kh Qh Jh")) > rank_five(hand("Ah Kh Qh Jh 9h"))
    assert rank_five(hand("2c 3d 4h 5s 6c")) > rank_five(hand("Ac 2d 3h 4s 5c"))


def test_best_five_needs_five_known_cards():
    with pytest.raises(ValueError):
        best_five(hand("Ac Ad 2h 3s"))
    with pytest.raises(ValueError):
        rank_five(["Ac", "Ad", "2h", "3s", "Xx"])


# --- property: the library-backed evaluation agrees with a brute force -------

def independent_category(five) -> tuple[str, str | None]:
    """A straightforward categorizer, written without the module under test."""
    ranks = [c[0] for c in five]
    counts = sorted(Counter(ranks).values(), reverse=True)
    values = sorted("23456789TJQKA".index(r) for r in ranks)
    flush = len({c[1] for c in five}) == 1
    distinct = len(set(values)) == 5
    straight = distinct and (values[4] - values[0] == 4 or values == [0, 1, 2, 3, 12])
    if counts == [5]:
        return "four_of_a_kind", None  # five of a kind pays as four of a kind
    if straight and flush:
        return ("royal_flush" if values == [8, 9, 10, 11, 12] else "straight_flush"), None
    if counts == [4, 1]:
        return "four_of_a_kind", None
    if counts == [3, 2]:
        return "full_house", None
    if flush:
        return "flush", None
    if straight:
        return "straight", None
    if counts == [3, 1, 1]:
        return "three_of_a_kind", None
    if counts == [2, 2, 1]:
        return "two_pair", None
    if counts == [2, 1, 1, 1]:
        return "pair", next(r for r in ranks if ranks.count(r) == 2)
    return "high_card", None


def independent_pays(cards, paytable: Paytable) -> float | None:
    best = None
    for five in combinations(cards, 5):
        name, pair = independent_category(five)
        if name == "pair":
            pays = paytable.pair_of_aces if pair == "A" else None
        elif name == "high_card":
            pays = None
        else:
            pays = getattr(paytable, name)
        if pays is not None and (best is None or pays > best):
            best = pays
    return best


@st.composite
def six_cards_from_a_shoe(draw):
    decks = draw(st.integers(min_value=1, max_value=6))
    narrow = draw(st.booleans())  # few ranks and suits: flushes, straights, quads come up often
    if narrow:
        ranks = draw(st.lists(st.sampled_from("23456789TJQKA"), min_size=1, max_size=6, unique=True))
        suits = draw(st.lists(st.sampled_from("cdhs"), min_size=1, max_size=2, unique=True))
        shoe = [r + s for r in ranks for s in suits] * 6  # the cards of those ranks and suits in 6 decks
    else:
        shoe = list(ALL_CARDS) * decks
    picks = draw(st.lists(st.integers(0, len(shoe) - 1), min_size=6, max_size=6, unique=True))
    return [shoe[i] for i in picks]


@settings(max_examples=400, deadline=None)
@given(six_cards_from_a_shoe())
@example(["Ah", "Ad", "Ac", "As", "Ah", "2c"])
@example(["Ah", "Ah", "Kh", "Qh", "Jh", "Jh"])
@example(["Th", "Jh", "Qh", "Kh", "Ah", "Ah"])
def test_001_J_payout_agrees_with_brute_force_best_five(cards):
    assert poker_multiplier(best_five(cards), DEFAULT_PAYTABLE) == independent_pays(cards, DEFAULT_PAYTABLE)
