"""Blackjack for the second bet of combate (document 001 C–F).

    "D. ... Todo jugador tendrá la opción de doblar su apuesta en cualquier
    dos cartas, y tendrá la opción de abrir su 'mano' de tener (2) dos Ases,
    en donde se le servirá una sola carta adicional para cada 'mano'.
    E. Si el jugador logra recibir seis (6) cartas sin pasarse de veintiuno
    (21), este no recibirá más cartas y ganará automáticamente.
    F. Siguiendo los procedimientos establecidos para el juego de Black Jack,
    el 'Croupier' procederá a pagar o recoger la segunda apuesta ..."

Hands are sequences of card codes (``"Ah"``, ``"Td"``); every function here
needs them all known.  The table's own rules (:class:`BlackjackRules`: what a
blackjack pays, whether the dealer hits a soft 17) come from
``seeds/combate_paytable.csv``; the defaults are rules.md's.

Decisions (rules.md and document 001 read together):

* A blackjack is a two-card 21 on a hand that was not split (split aces
  that draw a ten make 21, not a blackjack).
* A hand that reached six cards without busting wins 1:1 whatever the
  dealer holds, a dealer blackjack included (document 001 E).  If the
  dealer wrongly gave it more cards, it is still settled as it stood at six
  cards: the procedure had already made it a winner.
* A dealer blackjack (the dealer's first two cards, the Combate card and the
  hole card, making 21) beats every hand except a player blackjack (push)
  and a six-card hand (win).  The dealer does not peek: doubled and split
  hands lose their whole stake to it.
* A doubled bet wins or loses twice the bet; a bust loses even when the
  dealer busts too.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple, Sequence

POINTS = {"A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9,
          "T": 10, "J": 10, "Q": 10, "K": 10}
SIX_CARDS = 6


class Total(NamedTuple):
    """A hand's best total; ``soft`` when an ace in it counts 11."""

    points: int
    soft: bool

    def __str__(self) -> str:
        return f"soft {self.points}" if self.soft else str(self.points)


class Settlement(NamedTuple):
    """The result a bet should be settled with and its net amount to the player."""

    result: str  # win | lose | push | half_lose
    amount: float


@dataclasses.dataclass(frozen=True)
class BlackjackRules:
    """A table's blackjack options (rules.md defaults)."""

    blackjack_pays: float = 1.5  # 3:2
    dealer_hits_soft_17: bool = False  # "Dealer stands on all 17s"


DEFAULT_RULES = BlackjackRules()


def hand_total(cards: Sequence[str]) -> Total:
    hard, ace = 0, False
    for c in cards:
        hard += POINTS[c[0]]
        ace = ace or c[0] == "A"
    if ace and hard + 10 <= 21:
        return Total(hard + 10, True)
    return Total(hard, False)


def is_bust(cards: Sequence[str]) -> bool:
    return hand_total(cards).points > 21


def is_blackjack(cards: Sequence[str], *, split: bool = False) -> bool:
    """A two-card 21 on a hand that was not split."""
    return not split and len(cards) == 2 and hand_total(cards).points == 21


def is_six_card_winner(cards: Sequence[str]) -> bool:
    """Document 001 E: six cards received without going over 21 (judged at the sixth card)."""
    return len(cards) >= SIX_CARDS and hand_total(cards[:SIX_CARDS]).points <= 21


def is_live(cards: Sequence[str], *, split: bool = False) -> bool:
    """A hand the dealer still has to beat: not bust, not a blackjack, not six cards."""
    points = hand_total(cards).points  # is_bust's and is_blackjack's total, counted once
    if points > 21 or not split and len(cards) == 2 and points == 21:
        return False
    return not is_six_card_winner(cards)


def dealer_must_hit(cards: Sequence[str], rules: BlackjackRules = DEFAULT_RULES) -> bool:
    """The dealer draws below 17, stands on 17 or more; a soft 17 is hit only where the table says so."""
    total = hand_total(cards)
    if total.points < 17:
        return True
    return total.points == 17 and total.soft and rules.dealer_hits_soft_17


def settle_second_bet(
    player: Sequence[str],
    dealer: Sequence[str],
    bet: float,
    *,
    doubled: bool = False,
    split: bool = False,
    rules: BlackjackRules = DEFAULT_RULES,
) -> Settlement:
    """What the ``second`` bet of one hand should be settled as.

    ``player`` is the hand's cards (for the first hand: the Combate card
    first), ``dealer`` every card the dealer holds (first two: the Combate
    card and the hole card), ``bet`` the hand's stake before any double.
    """
    stake = bet * 2 if doubled else bet
    if is_six_card_winner(player):
        return Settlement("win", stake)
    if is_bust(player):
        return Settlement("lose", -stake)
    dealer_blackjack = is_blackjack(dealer[:2])
    if is_blackjack(player, split=split):
        if dealer_blackjack:
            return Settlement("push", 0.0)
        return Settlement("win", stake * rules.blackjack_pays)
    if dealer_blackjack:
        return Settlement("lose", -stake)
    mine = hand_total(player).points
    theirs = hand_total(dealer).points
    if theirs > 21 or mine > theirs:
        return Settlement("win", stake)
    if mine == theirs:
        return Settlement("push", 0.0)
    return Settlement("lose", -stake)


def describe_hand(cards: Sequence[str | None], *, split: bool = False) -> str:
    """Cards and total in words, for findings: ``"Ah 6s Qc (17)"``; a hand holding a card the
    terminal could not read has no total: ``"Kc 6d and a card not read"``."""
    if not cards:
        return "no cards"
    known = [c for c in cards if c is not None]
    if len(known) < len(cards):
        unread = len(cards) - len(known)
        return " ".join(known + [f"and {'a card' if unread == 1 else f'{unread} cards'} not read"])
    if is_blackjack(known, split=split):
        what = "blackjack"
    elif is_six_card_winner(known):
        what = f"six cards, {hand_total(known[:SIX_CARDS])}"
    else:
        total = hand_total(known)
        what = f"{total}, bust" if total.points > 21 else str(total)
    return f"{' '.join(known)} ({what})"
