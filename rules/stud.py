"""Document 004 (RP-10): the stud, stud hi-lo and razz plug-ins of the replay.

Thin adapters between :class:`pitwatch.rules.game.GameProcedure` and the hand logic
of :mod:`pitwatch.rules.stud_hand` (one round) and :mod:`pitwatch.rules.stud_showing` (who acts
first, the short-stack branches).  The round's state is ``rnd.game_state``, a
:class:`pitwatch.rules.stud_hand.StudHandState` record made by
:func:`pitwatch.rules.stud_hand.new_hand_state` when the round starts.

Rules raised here, keyed by round: ``BURN_SKIPPED``, ``EXPOSED_CARD``,
``CARD_TO_DEAD_HAND``, ``BRING_IN``, ``FIRST_TO_ACT``,
``FOURTH_STREET_DOUBLE``, ``SHORT_DECK_PROCEDURE``.  ``DEAL_ORDER``,
``CARD_FACE`` and ``MISDEAL`` are the engine's, asked through
:meth:`allowed_targets`, :meth:`expected_face` and :meth:`expected_holdings`.

The stack before 7th street ("die Anzahl der Karten im aktuellen
Kartendeck", 004 H) is counted on the dealer terminal's stream alone, so the
decision never waits on, nor depends on the arrival of, another device's
events: a pack holds ``decks`` x 52 cards (``table_opened``), a rebuilt
stack the ``reshuffle``'s ``card_count``; every ``card_dealt`` the terminal
recorded from it, burns included, is gone.  A shuffler that counted a
different number raises ``PACK_COMPOSITION`` on its own.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pitwatch.rules.game import GameProcedure
from pitwatch.rules.state import Round
from pitwatch.rules.stud_hand import StudHand, StudHandState, new_hand_state

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay
    from pitwatch.schemas.events import Event


class Stud(GameProcedure):
    """Seven-card stud (document 004): low card brings in, high hand acts first."""

    game = "stud"
    dealt_from_shoe = False  # dealt by hand from the deck machine's pack (no shoe stream)

    #: the hand's record; its ``game`` stays None until the hand begins (:meth:`on_round_start`)
    round_state_type = StudHandState

    # --- state ---------------------------------------------------------------------
    def _cards_left(self, ctx: TableReplay, pack_id: str | None) -> int | None:
        decks = ctx.table.decks
        if not decks:
            return None
        pack = ctx.pack(pack_id)
        dealt = len(pack.alignment.term) if pack is not None else 0
        return decks * self.ref.cards_per_deck - dealt

    _view: StudHand | None = None  # the last round's view: a card asks for one up to four times

    def _hand(self, ctx: TableReplay, rnd: Round, ev: Event | None = None) -> StudHand:
        g: StudHandState | None = rnd.game_state
        view = self._view
        if view is not None and view.s is g:  # the view keeps nothing but the record (on_round_start
            return view                       # puts a new one in the round)
        if g is None or g.game is None:  # the round's first event was not its round_started
            pack_id = getattr(ev, "pack_id", None) or rnd.pack_id
            rnd.game_state = g = new_hand_state(rnd.game or ctx.game or self.game, seats=ctx.occupied(),
                                                pack_id=pack_id, cards_left=None, decks=ctx.table.decks)
        self._view = view = StudHand(g)
        return view

    def _feed(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        hand = self._hand(ctx, rnd, ev)
        hand.feed(ev)
        if hand.findings:  # this event's: taken, so that the next event starts with none
            findings, hand.findings = hand.findings, []
            for f in findings:
                ctx.emit(f["rule_id"], rnd=rnd, key=(), evidence=f["evidence"], expected=f["expected"],
                         actual=f["actual"], seat=f["seat"])
        if hand.undecided:
            undecided, hand.undecided = hand.undecided, set()
            for rule_id in sorted(undecided):
                ctx.undecided(rnd, rule_id)

    # --- hooks -----------------------------------------------------------------------
    def on_round_start(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        rnd.game_state = new_hand_state(
            ev.game or ctx.game or self.game, small_bet=ev.small_bet, big_bet=ev.big_bet,
            seats=ctx.occupied(), pack_id=ev.pack_id, cards_left=self._cards_left(ctx, ev.pack_id),
            decks=ctx.table.decks)

    def on_bet(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        self._feed(ctx, rnd, ev)

    def on_card(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        self._feed(ctx, rnd, ev)

    def on_round_event(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        self._feed(ctx, rnd, ev)

    def on_round_end(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        self._feed(ctx, rnd, ev)

    # --- shared machinery ------------------------------------------------------------
    def allowed_targets(self, ctx: TableReplay, rnd: Round, ev: Event) -> tuple[str, ...] | None:
        return self._hand(ctx, rnd, ev).allowed_targets(ev)

    def expected_face(self, ctx: TableReplay, rnd: Round, ev: Event) -> str | None:
        return self._hand(ctx, rnd, ev).expected_face(ev)

    def expected_holdings(self, ctx: TableReplay, rnd: Round) -> dict[str, int]:
        return self._hand(ctx, rnd).expected_holdings()

    def holdings(self, ctx: TableReplay, rnd: Round) -> dict[str, int]:
        """The engine's count less the cards already reported as ``CARD_TO_DEAD_HAND``."""
        have = super().holdings(ctx, rnd)
        for target, n in self._hand(ctx, rnd).holdings_excluded().items():
            have[target] = have.get(target, 0) - n
            if have[target] <= 0:
                del have[target]
        return have


class Stud8(Stud):
    """Seven-card stud hi-lo: dealt and opened exactly as stud (004 D: "Stud (oder Stud-8)")."""

    game = "stud8"


class Razz(Stud):
    """Razz: the highest card brings in (ace low), the lowest showing hand acts first."""

    game = "razz"
