"""The game plug-in interface: how a game's written procedure plugs into the replay.

:class:`pitwatch.rules.table.TableReplay` does everything games share (tables, seats,
packs, rounds, the cross-stream card matching, the integrity rules) and calls
the table's :class:`GameProcedure` at fixed points.  A plug-in is one class
per procedure (``rules/baccarat.py`` for document 003, …), registered by name
in :mod:`pitwatch.rules.procedures`.

**State.** A plug-in object holds no replay state, only configuration (the
table's :class:`~pitwatch.rules.reference.TableReference` as ``self.ref``).  Its state
lives in records the engine keeps and checkpoints: ``ctx.table.game_state``
(table), ``pack.game_state`` and ``rnd.game_state``, of the :class:`msgspec.Struct`
types the plug-in names in :attr:`GameProcedure.table_state_type`,
:attr:`~GameProcedure.pack_state_type`, :attr:`~GameProcedure.round_state_type`
(defined in its own module; None: it keeps none), created by :meth:`new_table_state` …
and read back from a saved state by ``msgspec.convert`` — so a record's fields
keep the names (or ``msgspec.field(name=…)`` the keys) a saved state has, and a
field added later has a default.  Keep evidence as refs
(:func:`pitwatch.rules.finding.ref`: a :class:`pitwatch.rules.state.Ref`).

**What the engine keeps for you** (read freely, change only through ``ctx``):

* ``ctx.table`` (:class:`pitwatch.rules.state.Table`): ``game`` (also ``ctx.game``),
  ``decks``, ``seated`` (:class:`~pitwatch.rules.state.Seat`: seat, arrival order),
  ``dealer_id``, ``dealer_pos``; ``ctx.occupied()`` the seats, ascending;
  ``ctx.open_packs()``, ``ctx.pack(pack_id)``, ``ctx.round(round_id)``.
* ``pack`` (:class:`~pitwatch.rules.state.Pack`): ``pack_id``, ``shuffles``,
  ``shuffler`` (the shuffler's report), ``shoe_loaded``, ``alignment`` (``shoe``:
  the shoe's draws, :class:`~pitwatch.rules.state.ShoeDraw`; ``term``: the
  terminal's cards, :class:`~pitwatch.rules.state.TermCard`), ``shoe_rounds``
  (round of each aligned shoe draw), ``rounds``, ``shoe_passed``, ``term_passed``
  (``shoe_passed`` is True from the start on a table without a shoe: the
  class attribute :attr:`GameProcedure.dealt_from_shoe` unless the table's
  reference ``shoe`` says otherwise; shoe events are then never seen).
* ``rnd`` (:class:`~pitwatch.rules.state.Round`): ``round_id``, ``pack_id``,
  ``cards`` (:class:`~pitwatch.rules.state.RoundCard`: target, hand, face, card,
  street, ref, pack_id, term_pos; in dealing order, burns included), ``bets``
  (:class:`~pitwatch.rules.state.Bet`), ``payouts``
  (:class:`~pitwatch.rules.state.Payout`), ``actions``
  (:class:`~pitwatch.rules.state.Action`), ``bets_closed`` (ref or None), ``voided``.

**Hooks** (all optional; ``ev`` is a :class:`pitwatch.schemas.events.Event`):

=========================  ==================================================
``on_table_event``         table_opened/closed, dealer_in, player_seated/left
``on_pack_event``          pack events outside rounds, every stream: shuffle,
                           shuffle_completed, riffle_requested, cut_offered,
                           cut_refused, cut, cut_card_inserted, shoe_loaded,
                           cut_card_drawn, shoe_emptied, last_coup_announced,
                           stub_counted, stub_discarded, a burn outside a round
``on_shoe_card``           a ``card_drawn`` (after the engine recorded it)
``on_round_start``         round_started
``on_bet`` / ``on_bets_closed``
``on_card``                a ``card_dealt`` of the round, after the engine's
                           shared DEAL_ORDER / CARD_FACE checks and recording
``on_round_event``         player_action, player_absent, card_exposed,
                           hand_declared, reshuffle, round_voided
``on_payout``              a payout, after the shared PAYOUT check
``on_round_end``           round_ended (MISDEAL is checked just before)
``settle_pack``            called whenever a pack's facts may have changed
                           (any event of it, on any stream, and alignment
                           progress): decide pending cross-stream checks here
``on_pack_done``           both card streams have passed the pack
``on_close``               end of input: decide what is still pending
=========================  ==================================================

**Shared machinery** — return values the engine turns into findings:

* :meth:`allowed_targets` → DEAL_ORDER (first deviation per round);
* :meth:`expected_face` → CARD_FACE;
* :meth:`expected_holdings` (checked at round end, or when a hook calls
  ``ctx.check_misdeal(rnd, ev)``) → MISDEAL;
* :meth:`payout_candidates` → PAYOUT: the settlements the cards could call
  for (one per value the unreadable cards could take); a payout matching all
  of them is fine, one matching none is a finding, anything else undecided;
* :meth:`round_open` / :meth:`pack_open`: True while a cross-stream check of
  yours is still pending, so the round/pack row is held back until final;
* :meth:`outcome`, :meth:`seats_dealt`: columns of the round row;
  :meth:`pack_columns`: the game's columns of the pack row.

**Findings**: ``ctx.emit(rule_id, key=…, evidence=[refs], expected=…,
actual=…, rnd=…, pack=…, seat=…, spot=…)``; the engine keeps "once per key",
ids, ts and counts.  ``ctx.undecided(rnd, rule_id)`` records a check left
open by an unreadable card.

**Table checks** (:data:`pitwatch.rules.procedures.CHECKS`): rules that hold for
every table whatever its game (:mod:`pitwatch.rules.feed_health`) are classes built
with the table's reference, run beside the game's plug-in.  The engine calls
``on_event(ctx, ev)`` after replaying every event of the table,
``on_pack_done(ctx, pack)``, ``pack_open(ctx, pack)`` (True holds the pack's
row back, as :meth:`GameProcedure.pack_open`) and ``on_close(ctx)`` (after
the game's).  Their state lives in a field of their own of
:class:`~pitwatch.rules.state.Table` and :class:`~pitwatch.rules.state.Pack` (``feed``,
``shoe_silent_decided``).

**Ordering** (see :mod:`pitwatch.rules.table`): each device's events come in ``seq``
order, devices interleaved arbitrarily.  A hook may decide at once from one
stream's events; a decision needing two streams must wait until both sides'
evidence is present, and a decision on an *absence* until the stream has
passed the point (``pack.shoe_passed``, ``pack.term_passed``) or
``on_close``.  Never compare timestamps of different devices.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from pitwatch.rules.reference import DEFAULT_REFERENCE, TableReference
from pitwatch.rules.state import Pack, Round
from pitwatch.schemas.events import Event

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay


def seat_of(target: str | None) -> int | None:
    """The seat number of a ``seat:N`` target, else None."""
    try:
        return _SEATS[target]  # a handful of targets, asked several times per card
    except KeyError:
        pass
    seat = int(target[5:]) if target and target.startswith("seat:") else None
    if len(_SEATS) < 1024:
        _SEATS[target] = seat
    return seat


_SEATS: dict[str | None, int | None] = {}  # seat_of's answers: target -> seat number or None


class GameProcedure:
    """Base plug-in: no game-specific checks (the engine's shared rules still run)."""

    game: str | None = None
    #: The game is dealt from a card-reading shoe (a shoe stream is expected) unless the
    #: table's reference says otherwise (:attr:`pitwatch.rules.reference.TableReference.shoe`).
    dealt_from_shoe: bool = True

    def __init__(self, ref: TableReference = DEFAULT_REFERENCE) -> None:
        self.ref = ref

    # --- state -------------------------------------------------------------
    #: The plug-in's own records (:class:`msgspec.Struct` classes of its module) for a table, a
    #: pack and a round, kept by the engine as ``ctx.table.game_state``, ``pack.game_state`` and
    #: ``rnd.game_state``; None: the game keeps nothing there.  Saved states are read back into
    #: these types (:meth:`pitwatch.rules.table.TableReplay.from_state`).
    table_state_type: type[msgspec.Struct] | None = None
    pack_state_type: type[msgspec.Struct] | None = None
    round_state_type: type[msgspec.Struct] | None = None

    def new_table_state(self) -> msgspec.Struct | None:
        return None if self.table_state_type is None else self.table_state_type()

    def new_pack_state(self) -> msgspec.Struct | None:
        return None if self.pack_state_type is None else self.pack_state_type()

    def new_round_state(self) -> msgspec.Struct | None:
        return None if self.round_state_type is None else self.round_state_type()

    # --- hooks -------------------------------------------------------------
    def on_table_event(self, ctx: TableReplay, ev: Event) -> None: ...

    def on_pack_event(self, ctx: TableReplay, pack: Pack, ev: Event) -> None: ...

    def on_shoe_card(self, ctx: TableReplay, pack: Pack, ev: Event) -> None: ...

    def on_round_start(self, ctx: TableReplay, rnd: Round, ev: Event) -> None: ...

    def on_bet(self, ctx: TableReplay, rnd: Round, ev: Event) -> None: ...

    def on_bets_closed(self, ctx: TableReplay, rnd: Round, ev: Event) -> None: ...

    def on_card(self, ctx: TableReplay, rnd: Round, ev: Event) -> None: ...

    def on_round_event(self, ctx: TableReplay, rnd: Round, ev: Event) -> None: ...

    def on_payout(self, ctx: TableReplay, rnd: Round, ev: Event) -> None: ...

    def on_round_end(self, ctx: TableReplay, rnd: Round, ev: Event) -> None: ...

    def settle_pack(self, ctx: TableReplay, pack: Pack) -> None: ...

    def on_pack_done(self, ctx: TableReplay, pack: Pack) -> None: ...

    def on_close(self, ctx: TableReplay) -> None: ...

    # --- shared machinery --------------------------------------------------
    def allowed_targets(self, ctx: TableReplay, rnd: Round, ev: Event) -> tuple[str, ...] | None:
        """Targets the next card of ``rnd`` may go to (before ``ev`` is recorded); None: no check."""
        return None

    def expected_face(self, ctx: TableReplay, rnd: Round, ev: Event) -> str | None:
        """``up`` / ``down`` for the card ``ev``; None: no check."""
        return None

    def expected_holdings(self, ctx: TableReplay, rnd: Round) -> dict[str, int] | None:
        """Cards each position must hold when the deal is complete (others: none); None: no check."""
        return None

    def holdings(self, ctx: TableReplay, rnd: Round) -> dict[str, int]:
        """Cards each position holds (burns excluded), compared with :meth:`expected_holdings`."""
        out: dict[str, int] = {}
        for c in rnd.cards:
            if c.target != "burn":
                out[c.target] = out.get(c.target, 0) + 1
        return out

    def payout_candidates(self, ctx: TableReplay, rnd: Round, ev: Event) -> list[tuple[str, float]] | None:
        """Correct settlements of payout ``ev`` over the unknown cards' values.

        None: no PAYOUT check; ``[]``: undecided (too many unknown cards).
        """
        return None

    def round_open(self, ctx: TableReplay, rnd: Round) -> bool:
        return False

    def pack_open(self, ctx: TableReplay, pack: Pack) -> bool:
        return False

    def outcome(self, ctx: TableReplay, rnd: Round) -> str | None:
        return None

    def pack_columns(self, ctx: TableReplay, pack: Pack) -> dict[str, Any]:
        """Game columns of the pack row (``pitwatch.schemas.arrow.PACKS``: cut, cutting card, burn …)."""
        return {}

    def seats_dealt(self, ctx: TableReplay, rnd: Round) -> list[int]:
        targets = {c.target for c in rnd.cards}     # a few targets, each dealt many cards
        return sorted({int(t[5:]) for t in targets if t.startswith("seat:")})
