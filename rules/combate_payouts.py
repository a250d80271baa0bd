"""What each of the three bets of combate should be settled as (document 001 B, F, J).

    "B. ... Pagará o recogerá la primera apuesta de derecha a izquierda. En
    caso de empate el jugador perderá la mitad de su primera apuesta."
    "J. Toda 'mano' ganadora será pagada a la proporción de pago establecida
    en la mesa y autorizada por la División de Juegos de Azar."

* ``first`` (Combate): the player's card against the dealer's, higher rank
  wins, ace high, suits do not count; win +1:1, loss −1, tie ``half_lose`` −½.
* ``second`` (blackjack): :func:`pitwatch.rules.blackjack.settle_second_bet`.
* ``third`` (poker): the best five of the seat's six cards, pair of aces or
  better wins at the table's paytable, anything less loses the bet; there is
  no push.

three_bet_poker (document 000) has no settlement here: neither document 000
nor rules.md says what its bets pay, so it has no ``PAYOUT`` check.

A table's options are a :class:`CombateTableRules`, read from
``seeds/combate_paytable.csv`` (:func:`table_rules_from_rows`), one row per
setting::

    table_id,setting,value
    *,pair_of_aces,1          <- default for every table
    COM-07,royal_flush,250    <- this table only, this setting only

``setting`` is a paytable hand (``pair_of_aces`` … ``royal_flush``, what it
pays to 1), ``blackjack_pays`` (to 1, default 1.5) or
``dealer_hits_soft_17`` (``true``/``false``, default false).

Every function here needs known cards; the plug-in (:mod:`pitwatch.rules.combate`)
tries every value of an unreadable card (:func:`pitwatch.rules.cards.verdicts`) and
keeps an answer only if all agree (rules.md: "never guessed").
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence

from pitwatch.rules.blackjack import DEFAULT_RULES, BlackjackRules, Settlement, settle_second_bet
from pitwatch.rules.poker_hands import (
    DEFAULT_PAYTABLE,
    PAYTABLE_HANDS,
    RANK_VALUE,
    Paytable,
    PokerHand,
    best_category,
    best_five,
    category_qualifies,
    poker_multiplier,
)

__all__ = [
    "Settlement", "CombateTableRules", "DEFAULT_TABLE_RULES", "table_rules_from_rows", "table_rules_from_settings",
    "settle_first_bet", "settle_third_bet", "third_bet_settlement", "settle_second_bet",
]



@dataclasses.dataclass(frozen=True)
class CombateTableRules:
    """One combate table's paytable and blackjack options."""

    paytable: Paytable = DEFAULT_PAYTABLE
    blackjack: BlackjackRules = DEFAULT_RULES


DEFAULT_TABLE_RULES = CombateTableRules()
_PAYTABLE_NAMES = {name for name, _ in PAYTABLE_HANDS}


def table_rules_from_rows(rows: Iterable[Mapping[str, str]]) -> dict[str, CombateTableRules]:
    """Build every table's rules from the CSV rows; key ``"*"`` holds the default.

    A table's own row overrides the ``*`` row of the same setting only.
    """
    settings: dict[str, dict[str, str]] = {}
    for row in rows:
        table = (row.get("table_id") or "*").strip()
        setting = (row.get("setting") or "").strip()
        value = (row.get("value") or "").strip()
        if setting not in _PAYTABLE_NAMES | {"blackjack_pays", "dealer_hits_soft_17"}:
            raise ValueError(f"combate_paytable: unknown setting {setting!r} for table {table}")
        settings.setdefault(table, {})[setting] = value
    base = settings.get("*", {})
    return {table: _rules(base | own) for table, own in (settings | {"*": base}).items()}


def table_rules_from_settings(settings: Mapping[str, str]) -> CombateTableRules:
    """One table's rules from its ``(setting, value)`` pairs (``TableReference.settings``).

    Settings of other games are ignored; a missing setting keeps rules.md's default.
    """
    known = _PAYTABLE_NAMES | {"blackjack_pays", "dealer_hits_soft_17"}
    return _rules({k: str(v) for k, v in settings.items() if k in known})


def _rules(values: Mapping[str, str]) -> CombateTableRules:
    paytable = Paytable.from_mapping({k: float(v) for k, v in values.items() if k in _PAYTABLE_NAMES})
    soft = values.get("dealer_hits_soft_17", "false").lower()
    if soft not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError(f"combate_paytable: dealer_hits_soft_17 must be true or false, got {soft!r}")
    blackjack = BlackjackRules(
        blackjack_pays=float(values.get("blackjack_pays", DEFAULT_RULES.blackjack_pays)),
        dealer_hits_soft_17=soft in ("true", "1", "yes"),
    )
    return CombateTableRules(paytable, blackjack)


def combate_rank(card: str) -> int:
    """Rank for the Combate card: 2 lowest, ace highest; suits do not count."""
    return RANK_VALUE[card[0]]


def settle_first_bet(player_card: str, dealer_card: str, bet: float) -> Settlement:
    """Document 001 B: higher card wins 1:1; a tie loses half the first bet."""
    mine, theirs = combate_rank(player_card), combate_rank(dealer_card)
    if mine > theirs:
        return Settlement("win", bet)
    if mine < theirs:
        return Settlement("lose", -bet)
    return Settlement("half_lose", -bet / 2)


def settle_third_bet(
    cards: Sequence[str], bet: float, paytable: Paytable = DEFAULT_PAYTABLE,
) -> tuple[Settlement, PokerHand]:
    """Document 001 H–J: best five of the seat's (six) cards; pair of aces or better wins."""
    hand = best_five(cards)
    pays = poker_multiplier(hand, paytable)
    if pays is None:
        return Settlement("lose", -bet), hand
    return Settlement("win", bet * pays), hand


def third_bet_settlement(cards: Sequence[str], bet: float, paytable: Paytable = DEFAULT_PAYTABLE) -> Settlement:
    """``settle_third_bet(cards, bet, paytable)[0]`` without ranking every five of the cards."""
    category, pair_rank = best_category(cards)
    if not category_qualifies(category, pair_rank):
        return Settlement("lose", -bet)
    return Settlement("win", bet * paytable.pays(category))
