"""The rule catalogue of ``docs/spec/rules.md``, version 1, as data: one definition for all.

The engine (:mod:`rules.table` and the game plug-ins), the CLI (``pitwatch
rules``) and the lake's ``rules`` table all read :data:`RULES`.  A ``rule_id``
is never renamed (compliance staff query by it).  ``games`` lists the games a
rule applies to; ``key`` names what one finding is keyed by (a rule fires at
most once per key unless rules.md says otherwise).

Catalogue decisions where rules.md leaves room (see docs/engine.md):

* ``CARD_FACE`` does not apply to baccarat ("Baccarat has no CARD_FACE check").
* ``MISDEAL`` applies to the games whose section defines the holdings
  (three_bet_poker, combate, stud games); the baccarat section defines none
  and the rule's sources (000 E2, 001 G, 004) do not cite document 003.
* ``PAYOUT`` applies to baccarat and combate, the two games whose paytable
  rules.md gives; three_bet_poker's section defines none, stud has no payouts.
* ``BURN_SKIPPED`` serves baccarat (keyed by pack) and the stud games (keyed
  by round), as rules.md says.
"""
from __future__ import annotations

import dataclasses

from schemas.contract import GAMES as ALL_GAMES, STUD_GAMES

SEVERITIES = ("critical", "major", "minor", "info")     # most severe first; the one list, derived everywhere


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    rule_id: str
    severity: str
    games: tuple[str, ...]
    source: str
    summary: str
    key: str  # what one finding is keyed by

    def to_row(self) -> dict:
        """A row of the lake's ``rules`` table (schemas.arrow.RULES)."""
        return {"rule_id": self.rule_id, "severity": self.severity, "games": list(self.games),
                "source": self.source, "summary": self.summary}


def _r(rule_id, severity, games, source, key, summary) -> Rule:
    return Rule(rule_id, severity, tuple(games), source, summary, key)


_BCT = ("baccarat", "three_bet_poker", "combate")
_NOT_BAC = ("three_bet_poker", "combate") + STUD_GAMES

RULES: tuple[Rule, ...] = (
    # every game
    _r("SEQ_GAP", "info", ALL_GAMES, "contract", "table, device",
       "a device's seq skips numbers: events were lost upstream"),
    _r("UNSHUFFLED_PACK", "major", ALL_GAMES, "003 4.1; 000 A; 001 A", "pack",
       "a card is drawn or dealt from a pack for which no shuffle was recorded"),
    _r("PACK_COMPOSITION", "critical", ALL_GAMES, "000 E", "pack",
       "play uses a pack the shuffler found missing/extra cards in, or whose counted cards are not decks x 52"),
    _r("SHOE_CARD_MISMATCH", "critical", ALL_GAMES, "integrity", "pack, round",
       "the shoe read a different card than the dealer terminal recorded at the same place"),
    _r("UNACCOUNTED_CARD", "critical", ALL_GAMES, "integrity", "round",
       "a card drawn by the shoe but never recorded by the terminal, or recorded but never drawn"),
    _r("UNSHUFFLED_SEQUENCE", "critical", ALL_GAMES, "003 4.1; 000 A", "pack",
       "8 cards in new-deck order, or a 10-card run repeating an earlier pack's"),
    _r("CARDS_BEFORE_BETS_CLOSED", "major", _BCT, "000 B", "round",
       "a card of the round is dealt before its bets_closed, or without one"),
    _r("DEAL_ORDER", "major", ALL_GAMES, "per game", "round",
       "a card goes to a position out of the game's dealing order"),
    _r("CARD_FACE", "major", _NOT_BAC, "per game", "round",
       "a card is dealt face up where the game wants it down, or the reverse"),
    _r("MISDEAL", "critical", _NOT_BAC, "000 E2; 001 G; 004", "round",
       "when the deal is complete a position holds the wrong number of cards"),
    _r("PAYOUT", "major", ("baccarat", "combate"), "001 B, F, J; baccarat tableau", "round, seat, spot",
       "a payout has the wrong result or amount for the cards and the paytable"),
    # three_bet_poker (000)
    _r("STUB_COUNT_OVERDUE", "major", ("three_bet_poker",), "000 E", "round",
       "five consecutive rounds end without a stub count"),
    _r("STUB_MISCOUNT", "major", ("three_bet_poker",), "000 E", "round",
       "a stub count differs from the cards left in the pack"),
    _r("VOID_NOT_DECLARED", "critical", ("three_bet_poker",), "000 E2", "round",
       "a misdealt or miscounted round ends without being voided"),
    _r("STUB_EXPOSED", "major", ("three_bet_poker",), "000 D", "round",
       "the stub was exposed, or a card was drawn after the deal was complete"),
    # combate (001)
    _r("SETTLEMENT_ORDER", "minor", ("combate",), "001 B, F, K", "round",
       "within a phase, payouts are not in descending seat order"),
    _r("ILLEGAL_DOUBLE", "major", ("combate",), "001 D", "round",
       "a double on a hand that does not hold exactly two cards"),
    _r("ILLEGAL_SPLIT", "major", ("combate",), "001 D", "round",
       "a split of anything but two aces, or a split ace hand drawing more than one card"),
    _r("SIX_CARD_RULE", "major", ("combate",), "001 E", "round",
       "a card to a six-card hand of 21 or less, or such a hand not paid as a win"),
    _r("DEALER_DRAWING", "major", ("combate",), "001 F", "round",
       "the dealer hits or stands against the dealer's drawing rule"),
    # baccarat (003)
    _r("CUT_OFFER", "minor", ("baccarat",), "003 4.3, 4.4", "pack",
       "the cut is offered to, or made by, the wrong person"),
    _r("CUT_PLACEMENT", "major", ("baccarat",), "003 4.5", "pack",
       "the cut is less than one deck from either end of the stack"),
    _r("CUT_CARD_PLACEMENT", "major", ("baccarat",), "003 4.6", "pack",
       "the cutting card is inserted fewer than 20 cards from the back"),
    _r("CUT_CARD_MISMATCH", "critical", ("baccarat",), "003 4.6", "pack",
       "the cutting card surfaced elsewhere than where it was recorded inserted"),
    _r("RIFFLE_SKIPPED", "minor", ("baccarat",), "003 4.2", "pack",
       "a requested riffle of pre-shuffled cards was not done before the cut"),
    _r("BURN_SKIPPED", "major", ("baccarat",) + STUD_GAMES, "003 4.7; 004", "pack (baccarat), round (stud)",
       "play starts (baccarat pack, stud street) without a burn"),
    _r("BURN_COUNT", "major", ("baccarat",), "003 4.7, 4.8", "pack",
       "the first burn card is not face up, or the face-down burns are not its value"),
    _r("LAST_COUP_NOT_ANNOUNCED", "major", ("baccarat",), "003 4.9", "pack",
       "the coup after the cutting card surfaced starts without \"last coup\""),
    _r("COUPS_AFTER_CUT_CARD", "major", ("baccarat",), "003 4.9", "pack",
       "more than one coup is dealt after the coup in which the cutting card surfaced"),
    _r("DRAWING_RULE", "major", ("baccarat",), "tableau", "round",
       "a third card is dealt, or not dealt, against the punto banco tableau"),
    # stud, stud8, razz (004)
    _r("EXPOSED_CARD", "major", STUD_GAMES, "004 A, B", "round",
       "an exposed card is not handled as the procedure says"),
    _r("CARD_TO_DEAD_HAND", "major", STUD_GAMES, "004 C", "round",
       "a card on 4th street or later goes to a dead hand"),
    _r("BRING_IN", "major", STUD_GAMES, "004 D, E", "round",
       "the first 3rd-street action is not by the bring-in seat"),
    _r("FIRST_TO_ACT", "major", STUD_GAMES, "004 D", "round",
       "on 4th to 7th street the first action is not by the best showing hand"),
    _r("FOURTH_STREET_DOUBLE", "minor", STUD_GAMES, "004 F", "round",
       "a big bet on 4th street although an up pair shows"),
    _r("SHORT_DECK_PROCEDURE", "major", STUD_GAMES, "004 H", "round",
       "the 7th-street short-stack procedure was not followed"),
    # feed health (version 2): rules.feed_health
    _r("SHOE_SILENT", "major", _BCT, "integrity", "pack",
       "the terminal records cards of a pack no shoe drew, on a table expected to have a shoe"),
    _r("UNKNOWN_DEVICE", "critical", ALL_GAMES, "integrity", "table, device",
       "an event from a device the registry does not list for that source, table and gaming day"),
)

RULE_BY_ID: dict[str, Rule] = {r.rule_id: r for r in RULES}
assert len(RULE_BY_ID) == len(RULES), "duplicate rule_id"


def rule(rule_id: str) -> Rule:
    """The rule of ``rule_id``; KeyError names the unknown id."""
    try:
        return RULE_BY_ID[rule_id]
    except KeyError:
        raise KeyError(f"unknown rule_id {rule_id!r}") from None


def rule_rows() -> list[dict]:
    """Every rule as rows of the lake's ``rules`` table."""
    return [r.to_row() for r in RULES]
