"""Expected settlement of combate's three bets (document 001 B, F, J) and the table's paytable seed."""
from __future__ import annotations

import csv
import pathlib

import pytest

from pitwatch.rules.combate_payouts import (
    DEFAULT_TABLE_RULES,
    settle_first_bet,
    settle_third_bet,
    table_rules_from_rows,
    table_rules_from_settings,
)

SEED = pathlib.Path(__file__).resolve().parents[3] / "seeds" / "combate_paytable.csv"


@pytest.mark.parametrize("player, dealer, expected", [
    ("Ah", "Kd", ("win", 20)),         # ace high
    ("2c", "Ad", ("lose", -20)),
    ("9c", "9d", ("half_lose", -10)),  # "el jugador perderá la mitad de su primera apuesta"
    ("Qs", "Qh", ("half_lose", -10)),  # suits do not count
])
def test_001_B_first_bet_higher_card_wins_tie_loses_half(player, dealer, expected):
    assert settle_first_bet(player, dealer, 20) == expected


def test_001_B_tie_on_an_odd_bet_loses_exactly_half():
    assert settle_first_bet("5c", "5d", 25) == ("half_lose", -12.5)


def test_001_J_third_bet_pays_the_best_five_whatever_is_declared():
    settled, best = settle_third_bet("2s 2h 2d 3s 3d 3h".split(), 10)
    assert settled == ("win", 70)  # full house 7:1, not the declared hand
    assert best.category.words == "full house"


def test_001_I_third_bet_below_a_pair_of_aces_loses():
    settled, _ = settle_third_bet("Kc Kd 7h 9s Jc 3d".split(), 25)
    assert settled == ("lose", -25)


def test_001_J_table_paytable_from_the_seed_file():
    with SEED.open(newline="") as f:
        rows = list(csv.DictReader(f))
    rules = table_rules_from_rows(rows)
    assert rules["*"] == DEFAULT_TABLE_RULES
    own = table_rules_from_rows(rows + [
        {"table_id": "COM-07", "setting": "royal_flush", "value": "250"},
        {"table_id": "COM-07", "setting": "dealer_hits_soft_17", "value": "true"},
    ])["COM-07"]
    assert own.paytable.royal_flush == 250
    assert own.paytable.two_pair == 2  # the default row still applies
    assert own.blackjack.dealer_hits_soft_17 is True
    assert own.blackjack.blackjack_pays == 1.5


def test_001_J_seed_rejects_unknown_settings():
    with pytest.raises(ValueError, match="unknown setting"):
        table_rules_from_rows([{"table_id": "*", "setting": "pair_of_kings", "value": "1"}])
    with pytest.raises(ValueError, match="true or false"):
        table_rules_from_rows([{"table_id": "*", "setting": "dealer_hits_soft_17", "value": "maybe"}])


def test_001_J_table_rules_from_the_engine_settings_ignore_other_games():
    rules = table_rules_from_settings({"flush": "6", "blackjack_pays": "1.2", "player_pays": "1"})
    assert rules.paytable.flush == 6 and rules.blackjack.blackjack_pays == 1.2
    assert table_rules_from_settings({}) == DEFAULT_TABLE_RULES


def test_001_H_third_bet_settled_from_rank_and_suit_counts_equals_best_five_ranking():
    """The third bet is settled from the six cards' counts (no five-card subset ranked):
    the same category, pair rank and settlement as ranking the best five through pokerkit,
    on random one- and several-deck hands and forced flushes and straights."""
    import random

    from pitwatch.rules.combate_payouts import Paytable, settle_third_bet, third_bet_settlement
    from pitwatch.rules.poker_hands import Category, best_category, best_five

    ranks, suits = "23456789TJQKA", "cdhs"
    deck = [r + s for r in ranks for s in suits]
    rnd = random.Random(7)
    paytables = (Paytable(), Paytable(pair_of_aces=1.5, royal_flush=300))

    def same(cards):
        hand = best_five(cards)
        assert best_category(cards) == (hand.category, hand.pair_rank if hand.category is Category.ONE_PAIR else None)
        for paytable in paytables:
            assert third_bet_settlement(cards, 5.0, paytable) == settle_third_bet(cards, 5.0, paytable)[0]

    for _ in range(1500):
        same(rnd.sample(deck, 6))
        same([rnd.choice(deck) for _ in range(6)])                      # several decks
        suit = rnd.choice(suits)
        same(rnd.sample([r + suit for r in ranks], 5) + [rnd.choice(deck)])   # a flush
        low = rnd.randrange(-1, 9)
        run = [ranks[(low + k) % 13] for k in range(5)]                  # a straight (ace low or high)
        same([r + rnd.choice(suits) for r in run] + [rnd.choice(deck)])
        same([r + suit for r in run] + [rnd.choice(deck)])                 # a straight flush
