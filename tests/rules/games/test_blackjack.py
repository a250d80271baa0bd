"""Blackjack of combate's second bet (document 001 C–F; rules.md "combate")."""
from __future__ import annotations

import pytest

from pitwatch.rules.blackjack import (
    BlackjackRules,
    Total,
    dealer_must_hit,
    describe_hand,
    hand_total,
    is_blackjack,
    is_bust,
    is_live,
    is_six_card_winner,
    settle_second_bet,
)


def h(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("cards, total", [
    ("Ah 6s", Total(17, True)),
    ("Ah 6s Qc", Total(17, False)),
    ("Ah Ad", Total(12, True)),
    ("Ah Ad 9c", Total(21, True)),
    ("Ah Ad 9c Kd", Total(21, False)),
    ("Kh Qd", Total(20, False)),
    ("Kh Qd 5c", Total(25, False)),
    ("Ac Ad Ah As 7c", Total(21, True)),
    ("2c 2d 2h 3s 3d 3h", Total(15, False)),
])
def test_blackjack_totals_with_soft_aces(cards, total):
    assert hand_total(h(cards)) == total


def test_blackjack_bust_over_21():
    assert is_bust(h("Kh Qd 5c"))
    assert not is_bust(h("Ah Kd Qc"))  # the ace counts 1


def test_001_F_blackjack_is_two_cards_making_21_not_after_a_split():
    assert is_blackjack(h("Ah Kd"))
    assert not is_blackjack(h("Ah Kd"), split=True)
    assert not is_blackjack(h("7h 7d 7c"))


def test_001_E_six_cards_without_busting_win():
    assert is_six_card_winner(h("2c 2d 2h 3s 3d 3h"))
    assert not is_six_card_winner(h("2c 2d 2h 3s 3d"))
    assert not is_six_card_winner(h("2c 2d 2h 3s Kd Th"))  # 29: bust
    assert not is_live(h("2c 2d 2h 3s 3d 3h"))
    settled = settle_second_bet(h("2c 2d 2h 3s 3d 3h"), h("Kc 9d"), 25)
    assert settled == ("win", 25)


def test_001_E_six_cards_beat_a_dealer_blackjack():
    assert settle_second_bet(h("2c 2d 2h 3s 3d 3h"), h("Ac Kd"), 10) == ("win", 10)


def test_001_E_a_seventh_card_does_not_undo_the_six_card_win():
    assert settle_second_bet(h("2c 2d 2h 3s 3d 3h Kc"), h("Kc 9d"), 10) == ("win", 10)


def test_001_F_dealer_stands_on_all_17s_by_default():
    assert dealer_must_hit(h("Kc 6d"))
    assert not dealer_must_hit(h("Kc 7d"))
    assert not dealer_must_hit(h("Ac 6d"))  # soft 17
    assert dealer_must_hit(h("Ac 6d"), BlackjackRules(dealer_hits_soft_17=True))
    assert not dealer_must_hit(h("Ac 6d Kh"), BlackjackRules(dealer_hits_soft_17=True))  # hard 17
    assert not dealer_must_hit(h("Ac 7d"), BlackjackRules(dealer_hits_soft_17=True))


@pytest.mark.parametrize("player, dealer, kwargs, expected", [
    ("Ah Kd", "9c 8d", {}, ("win", 15.0)),                      # blackjack 3:2
    ("Ah Kd", "Ac Qd", {}, ("push", 0.0)),                      # blackjack against blackjack
    ("Ah Kd", "7c 4d Kh", {}, ("win", 15.0)),                   # a three-card 21 is no blackjack
    ("Ah Kd", "9c 8d", {"split": True}, ("win", 10.0)),         # split ace + ten: 21, 1:1
    ("Tc 9d", "Ac Qd", {}, ("lose", -10.0)),                    # dealer blackjack
    ("5c 6d Kh", "Ac Qd", {}, ("lose", -10.0)),                 # ... beats a three-card 21
    ("5c 6d Kh", "Ac Qd", {"doubled": True}, ("lose", -20.0)),  # ... and takes the whole double
    ("5c 6d 9h", "Tc 7d", {"doubled": True}, ("win", 20.0)),    # doubled bet settles at twice
    ("Tc 7d", "Kc 7h", {}, ("push", 0.0)),                      # equal totals
    ("Tc 8d", "Kc 7h", {}, ("win", 10.0)),
    ("Tc 6d", "Kc 7h", {}, ("lose", -10.0)),
    ("Tc 6d Kh", "Kc 6h 9d", {}, ("lose", -10.0)),              # bust loses even if the dealer busts
    ("Tc 6d", "Kc 6h 9d", {}, ("win", 10.0)),                   # dealer bust
])
def test_001_F_settlement_of_the_second_bet(player, dealer, kwargs, expected):
    assert settle_second_bet(h(player), h(dealer), 10, **kwargs) == expected


def test_001_F_table_blackjack_payout():
    assert settle_second_bet(h("Ah Kd"), h("9c 8d"), 10, rules=BlackjackRules(blackjack_pays=1.2)) == ("win", 12.0)


def test_001_F_live_hands_keep_the_dealer_drawing():
    assert is_live(h("Tc 6d"))
    assert not is_live(h("Tc 6d Kh"))
    assert not is_live(h("Ac Kd"))
    assert is_live(h("Ac Kd"), split=True)


def test_describe_hand_for_findings():
    assert describe_hand(h("Ah 6s Qc")) == "Ah 6s Qc (17)"
    assert describe_hand(h("Ah 6s")) == "Ah 6s (soft 17)"
    assert describe_hand(h("Ah Kd")) == "Ah Kd (blackjack)"
    assert describe_hand(h("Tc 6d Kh")) == "Tc 6d Kh (26, bust)"
    assert describe_hand(h("2c 2d 2h 3s 3d 3h")) == "2c 2d 2h 3s 3d 3h (six cards, 15)"
