"""Combate's blackjack phase (document 001 C-F): hands, totals, player choices, settlement.

Dealer stands on all 17s (the default of ``seeds/combate_paytable.csv``),
draws only while some player hand is live (not bust, not a blackjack, not six
cards).  A blackjack is a two-card 21 not after a split and pays 3:2; a
six-card hand of 21 or less wins at once; a dealer blackjack beats every hand
but a player blackjack (push) and a six-card hand; a doubled bet settles at
twice its amount (also when the double itself was illegal: the chips are on
the layout).
"""
from __future__ import annotations

from pitwatch.simulator.cards import BJ_VALUE


def total(cards) -> tuple[int, bool]:
    """(best total, soft) of a blackjack hand."""
    t = 0
    ace = False
    for c in cards:
        v = BJ_VALUE[c]
        t += v
        if v == 1:
            ace = True
    if ace and t + 10 <= 21:
        return t + 10, True
    return t, False


class Hand:
    __slots__ = ("seat", "no", "cards", "doubled", "split", "done")

    def __init__(self, seat: int, cards: list[str], no: int = 1, split: bool = False):
        self.seat = seat
        self.no = no
        self.cards = cards
        self.doubled = False
        self.split = split
        self.done = False

    @property
    def value(self) -> int:
        return total(self.cards)[0]

    @property
    def bust(self) -> bool:
        return self.value > 21

    @property
    def blackjack(self) -> bool:
        return len(self.cards) == 2 and not self.split and self.value == 21

    @property
    def six(self) -> bool:
        return len(self.cards) == 6 and self.value <= 21

    @property
    def live(self) -> bool:
        return not (self.bust or self.blackjack or self.six)


def wants_hit(hand: Hand, dealer_up: str, r: float) -> bool:
    """A plausible player: basic-strategy-ish, chasing the six-card win with small totals."""
    t, soft = total(hand.cards)
    up = BJ_VALUE[dealer_up]
    up = 11 if up == 1 else up
    if len(hand.cards) >= 4 and t <= 14:
        return True
    if soft:
        return t <= 17
    if t <= 11:
        return True
    if t >= 17:
        return False
    if t == 12:
        return up in (2, 3) or up >= 7
    return up >= 7 or r < 0.1


def wants_double(hand: Hand, dealer_up: str, r: float) -> bool:
    t, soft = total(hand.cards)
    up = BJ_VALUE[dealer_up]
    return len(hand.cards) == 2 and not soft and t in (10, 11) and 2 <= up <= 9 and r < 0.8


def dealer_should_hit(cards) -> bool:
    return total(cards)[0] < 17  # stands on all 17s


def half(amount):
    return amount // 2 if amount % 2 == 0 else amount / 2


def settle(hand: Hand, bet, dealer_cards) -> tuple[str, float]:
    """(result, net amount) of the ``second`` bet of ``hand``."""
    stake = bet * 2 if hand.doubled else bet
    dealer_bj = len(dealer_cards) == 2 and total(dealer_cards)[0] == 21
    if hand.bust:
        return "lose", -stake
    if hand.six:
        return "win", stake
    if hand.blackjack:
        return ("push", 0) if dealer_bj else ("win", bet + half(bet))
    if dealer_bj:
        return "lose", -stake
    d = total(dealer_cards)[0]
    p = hand.value
    if d > 21 or p > d:
        return "win", stake
    if p < d:
        return "lose", -stake
    return "push", 0
