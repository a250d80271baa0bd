"""Expected settlement of combate's three bets (document 001 B, F, J) and the table's paytable seed."""
from __future__ import annotations

import csv
import pathlib

import pytest

from rules.combate_payouts import (
    DEFAULT_TABLE_RULES, settle_first_bet, settle_third_bet, table_rules_from_rows, table_rules_from_settings,
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
