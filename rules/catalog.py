"""The rule catalogue of ``docs/spec/rules.md``, version 2 (with feed health), as data: one definition for all.

The engine (:mod:`pitwatch.rules.table` and the game plug-ins), the CLI (``pitwatch
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

People read findings, so each rule has a plain ``title`` (``Burn skipped``)
beside its ``rule_id``, and a finding cites **one** procedure reference, its
game's (:meth:`Rule.source_for`): ``source`` keeps rules.md's whole source
column for the catalogue (``003 4.7; 004``), ``cites`` names each game's
reference where they differ.  Where rules.md says "per game" or lists one
reference per document, the game's document is cited; decisions where no
document of the game governs the rule:

* ``UNSHUFFLED_PACK`` / ``UNSHUFFLED_SEQUENCE`` in stud, stud8, razz cite
  ``003 4.1`` (document 004 says nothing of the shuffle; 003 4.1 is the
  catalogue's first reference, "shuffle the cards so that they are randomly
  intermixed"); ``UNSHUFFLED_SEQUENCE`` in combate cites ``001 A`` ("luego de
  haber completado el procedimiento de barajeo"), as ``UNSHUFFLED_PACK`` does.
* ``DEAL_ORDER`` cites the punto banco ``tableau`` in baccarat, ``000 C`` in
  three_bet_poker, ``001 A, C, G`` (the three phases' deals) in combate and
  ``004`` in the stud games (rules.md's stud section; 004 has no section of
  its own for the order); ``CARD_FACE`` cites ``000 C``, ``001 A, C, G`` and
  ``004 A, B``; ``MISDEAL`` cites ``000 E2``, ``001 G`` and ``004``; ``PAYOUT``
  the ``tableau`` in baccarat and ``001 B, F, J`` in combate;
  ``BURN_SKIPPED`` ``003 4.7`` in baccarat and ``004`` in the stud games.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from pitwatch.schemas.contract import GAMES as ALL_GAMES
from pitwatch.schemas.contract import SHOE_GAMES, STUD_GAMES


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    rule_id: str
    title: str   # a plain title a person reads ("Burn skipped")
    severity: str
    games: tuple[str, ...]
    source: str  # every reference of rules.md's source column ("003 4.7; 004")
    summary: str
    key: str  # what one finding is keyed by
    cites: tuple[tuple[str, str], ...] = ()  # (game, its one reference) where the games differ

    def source_for(self, game: str | None) -> str:
        """The one procedure reference a finding of ``game`` cites (``003 4.7``): the
        game's own (``cites``), else the rule's only reference, else its first."""
        for g, cite in self.cites:
            if g == game:
                return cite
        return self.source.split(";")[0].strip()

    def to_row(self) -> dict[str, str | list[str]]:
        """A row of the lake's ``rules`` table (pitwatch.schemas.arrow.RULES)."""
        return {"rule_id": self.rule_id, "title": self.title, "severity": self.severity,
                "games": list(self.games), "source": self.source, "summary": self.summary}


def _r(rule_id: str, title: str, severity: str, games: Iterable[str], source: str, key: str, summary: str,
       cites: dict[str | tuple[str, ...], str] | None = None) -> Rule:
    """``cites``: {game or games: their one reference}."""
    flat: list[tuple[str, str]] = []
    for games_of, cite in (cites or {}).items():
        for g in (games_of,) if isinstance(games_of, str) else games_of:
            flat.append((g, cite))
    return Rule(rule_id, title, severity, tuple(games), source, summary, key, tuple(flat))


_NOT_BAC = ("three_bet_poker", "combate") + STUD_GAMES

RULES: tuple[Rule, ...] = (
    # every game
    _r("SEQ_GAP", "Events lost from a device", "info", ALL_GAMES, "contract", "table, device",
       "a device's seq skips numbers: events were lost upstream"),
    _r("UNSHUFFLED_PACK", "Pack played without a shuffle", "major", ALL_GAMES, "003 4.1; 000 A; 001 A", "pack",
       "a card is drawn or dealt from a pack for which no shuffle was recorded",
       cites={"baccarat": "003 4.1", "three_bet_poker": "000 A", "combate": "001 A", STUD_GAMES: "003 4.1"}),
    _r("PACK_COMPOSITION", "Pack with missing or extra cards", "critical", ALL_GAMES, "000 E", "pack",
       "play uses a pack the shuffler found missing/extra cards in, or whose counted cards are not decks x 52"),
    _r("SHOE_CARD_MISMATCH", "Card switched between shoe and table", "critical", ALL_GAMES, "integrity", "pack, round",
       "the shoe read a different card than the dealer terminal recorded at the same place"),
    _r("UNACCOUNTED_CARD", "Card unaccounted for", "critical", ALL_GAMES, "integrity", "round",
       "a card drawn by the shoe but never recorded by the terminal, or recorded but never drawn"),
    _r("UNSHUFFLED_SEQUENCE", "Cards in unshuffled order", "critical", ALL_GAMES, "003 4.1; 000 A", "pack",
       "8 cards in new-deck order, or a 10-card run repeating an earlier pack's",
       cites={"baccarat": "003 4.1", "three_bet_poker": "000 A", "combate": "001 A", STUD_GAMES: "003 4.1"}),
    _r("CARDS_BEFORE_BETS_CLOSED", "Card dealt before no more bets", "major", SHOE_GAMES, "000 B", "round",
       "a card of the round is dealt before its bets_closed, or without one"),
    _r("DEAL_ORDER", "Card dealt out of order", "major", ALL_GAMES, "per game", "round",
       "a card goes to a position out of the game's dealing order",
       cites={"baccarat": "tableau", "three_bet_poker": "000 C", "combate": "001 A, C, G", STUD_GAMES: "004"}),
    _r("CARD_FACE", "Card dealt face up or down wrongly", "major", _NOT_BAC, "per game", "round",
       "a card is dealt face up where the game wants it down, or the reverse",
       cites={"three_bet_poker": "000 C", "combate": "001 A, C, G", STUD_GAMES: "004 A, B"}),
    _r("MISDEAL", "Misdeal", "critical", _NOT_BAC, "000 E2; 001 G; 004", "round",
       "when the deal is complete a position holds the wrong number of cards",
       cites={"three_bet_poker": "000 E2", "combate": "001 G", STUD_GAMES: "004"}),
    _r("PAYOUT", "Wrong payout", "major", ("baccarat", "combate"), "001 B, F, J; baccarat tableau", "round, seat, spot",
       "a payout has the wrong result or amount for the cards and the paytable",
       cites={"baccarat": "tableau", "combate": "001 B, F, J"}),
    # three_bet_poker (000)
    _r("STUB_COUNT_OVERDUE", "Stub count overdue", "major", ("three_bet_poker",), "000 E", "round",
       "five consecutive rounds end without a stub count"),
    _r("STUB_MISCOUNT", "Stub miscounted", "major", ("three_bet_poker",), "000 E", "round",
       "a stub count differs from the cards left in the pack"),
    _r("VOID_NOT_DECLARED", "Misdealt round not voided", "critical", ("three_bet_poker",), "000 E2", "round",
       "a misdealt or miscounted round ends without being voided"),
    _r("STUB_EXPOSED", "Stub exposed", "major", ("three_bet_poker",), "000 D", "round",
       "the stub was exposed, or a card was drawn after the deal was complete"),
    # combate (001)
    _r("SETTLEMENT_ORDER", "Bets settled out of order", "minor", ("combate",), "001 B, F, K", "round",
       "within a phase, payouts are not in descending seat order"),
    _r("ILLEGAL_DOUBLE", "Illegal double", "major", ("combate",), "001 D", "round",
       "a double on a hand that does not hold exactly two cards"),
    _r("ILLEGAL_SPLIT", "Illegal split", "major", ("combate",), "001 D", "round",
       "a split of anything but two aces, or a split ace hand drawing more than one card"),
    _r("SIX_CARD_RULE", "Six-card rule broken", "major", ("combate",), "001 E", "round",
       "a card to a six-card hand of 21 or less, or such a hand not paid as a win"),
    _r("DEALER_DRAWING", "Dealer drew against the rule", "major", ("combate",), "001 F", "round",
       "the dealer hits or stands against the dealer's drawing rule"),
    # baccarat (003)
    _r("CUT_OFFER", "Cut offered to the wrong person", "minor", ("baccarat",), "003 4.3, 4.4", "pack",
       "the cut is offered to, or made by, the wrong person"),
    _r("CUT_PLACEMENT", "Cut too near an end of the stack", "major", ("baccarat",), "003 4.5", "pack",
       "the cut is less than one deck from either end of the stack"),
    _r("CUT_CARD_PLACEMENT", "Cutting card too near the back", "major", ("baccarat",), "003 4.6", "pack",
       "the cutting card is inserted fewer than 20 cards from the back"),
    _r("CUT_CARD_MISMATCH", "Cutting card not where it was put", "critical", ("baccarat",), "003 4.6", "pack",
       "the cutting card surfaced elsewhere than where it was recorded inserted"),
    _r("RIFFLE_SKIPPED", "Requested riffle skipped", "minor", ("baccarat",), "003 4.2", "pack",
       "a requested riffle of pre-shuffled cards was not done before the cut"),
    _r("BURN_SKIPPED", "Burn skipped", "major", ("baccarat",) + STUD_GAMES, "003 4.7; 004", "pack (baccarat), round (stud)",
       "play starts (baccarat pack, stud street) without a burn",
       cites={"baccarat": "003 4.7", STUD_GAMES: "004"}),
    _r("BURN_COUNT", "Wrong burn", "major", ("baccarat",), "003 4.7, 4.8", "pack",
       "the first burn card is not face up, or the face-down burns are not its value"),
    _r("LAST_COUP_NOT_ANNOUNCED", "Last coup not announced", "major", ("baccarat",), "003 4.9", "pack",
       "the coup after the cutting card surfaced starts without \"last coup\""),
    _r("COUPS_AFTER_CUT_CARD", "Too many coups after the cutting card", "major", ("baccarat",), "003 4.9", "pack",
       "more than one coup is dealt after the coup in which the cutting card surfaced"),
    _r("DRAWING_RULE", "Third card against the tableau", "major", ("baccarat",), "tableau", "round",
       "a third card is dealt, or not dealt, against the punto banco tableau"),
    # stud, stud8, razz (004)
    _r("EXPOSED_CARD", "Exposed card mishandled", "major", STUD_GAMES, "004 A, B", "round",
       "an exposed card is not handled as the procedure says"),
    _r("CARD_TO_DEAD_HAND", "Card to a dead hand", "major", STUD_GAMES, "004 C", "round",
       "a card on 4th street or later goes to a dead hand"),
    _r("BRING_IN", "Bring-in by the wrong seat", "major", STUD_GAMES, "004 D, E", "round",
       "the first 3rd-street action is not by the bring-in seat"),
    _r("FIRST_TO_ACT", "Wrong seat acted first", "major", STUD_GAMES, "004 D", "round",
       "on 4th to 7th street the first action is not by the best showing hand"),
    _r("FOURTH_STREET_DOUBLE", "Double bet on 4th street", "minor", STUD_GAMES, "004 F", "round",
       "a big bet on 4th street although an up pair shows"),
    _r("SHORT_DECK_PROCEDURE", "Short-stack procedure not followed", "major", STUD_GAMES, "004 H", "round",
       "the 7th-street short-stack procedure was not followed"),
    # feed health (version 2): pitwatch.rules.feed_health
    _r("SHOE_SILENT", "Cards dealt with the shoe silent", "major", SHOE_GAMES, "integrity", "pack",
       "the terminal records cards of a pack no shoe drew, on a table expected to have a shoe"),
    _r("UNKNOWN_DEVICE", "Device not in the registry", "critical", ALL_GAMES, "integrity", "table, device",
       "an event from a device the registry does not list for that source, table and gaming day"),
    # feed health (version 2.1): pitwatch.rules.input_damage
    _r("INPUT_DAMAGED", "Input file damaged: audit incomplete", "major", ALL_GAMES, "integrity", "file",
       "an input file could not be read to its end: the lines after the damage are not audited"),
)

RULE_BY_ID: dict[str, Rule] = {r.rule_id: r for r in RULES}
assert len(RULE_BY_ID) == len(RULES), "duplicate rule_id"
for _rule in RULES:  # a finding cites one reference: a rule citing several names each game's
    assert all(g in _rule.games for g, _c in _rule.cites), f"{_rule.rule_id}: a citation for a game it skips"
    assert ";" not in _rule.source and _rule.source != "per game" or \
        {g for g, _c in _rule.cites} == set(_rule.games), f"{_rule.rule_id}: a game without its own reference"


def rule(rule_id: str) -> Rule:
    """The rule of ``rule_id``; KeyError names the unknown id."""
    try:
        return RULE_BY_ID[rule_id]
    except KeyError:
        raise KeyError(f"unknown rule_id {rule_id!r}") from None


def rule_rows() -> list[dict[str, str | list[str]]]:
    """Every rule as rows of the lake's ``rules`` table."""
    return [r.to_row() for r in RULES]
