"""Three-bet community poker dealt from a manual shoe (document 000): the game plug-in.

Document 000 (Puerto Rico, original Spanish), the parts replayed here:

* C: "Una carta boca abajo a cada jugador que haya colocado tres apuestas
  ...; Una carta boca abajo al espacio designado para colocar las cartas
  comunitarias" — three times.  ``DEAL_ORDER``: three passes, each one card
  to every eligible seat in ascending order, then one to ``community``;
  ``CARD_FACE``: every card down; ``MISDEAL`` (shared, at ``round_ended``):
  every eligible seat and the community spot hold exactly 3, no other seat any.
* D: "... colocará el 'stub' en el anaquel de descarte ... sin enseñar las
  cartas" — ``STUB_EXPOSED``.
* E: "El 'Croupier' contará el 'stub' por lo menos una vez cada cinco
  rondas de juego para determinar que el número correcto de cartas aún está
  presente en el paquete" — ``STUB_COUNT_OVERDUE``, ``STUB_MISCOUNT``.
* E2: "Si las cartas se repartieron mal (un jugador o el espacio designado
  ... tiene más o menos de tres cartas) pero quedan cincuenta y dos (52)
  cartas en el paquete, todas las 'manos' serán nulas" — ``VOID_NOT_DECLARED``.

Interpretations:

* Eligible seats ("tres apuestas", rules.md: all of ``first``, ``second``,
  ``third`` placed before ``bets_closed``) are fixed at ``bets_closed``, or at
  the first card if that comes earlier (``CARDS_BEFORE_BETS_CLOSED`` then
  fires in the engine): bets placed after the deal started cannot make a seat
  eligible.  A burn inside a round is out of the dealing order.
* ``STUB_MISCOUNT``: the true stub is the pack's count (the shoe's
  ``shoe_loaded`` count, else the shuffler's, else ``decks`` × 52) minus the
  cards the deal took out: the shoe's draws up to the one matching the
  terminal's last card at the time of the count when the shoe covers the
  pack, else the terminal's ``card_dealt`` count of the pack at that time.
  Decided once the shoe has passed the pack (``shoe_emptied``), so it waits
  for every draw; without any shoe it is decided at the end of input.
* ``STUB_EXPOSED`` (b): shoe draws after the one matching the terminal's last
  card of the pack ("after the deal was complete"), before ``shoe_emptied``;
  keyed by the pack's last round.  The same draws are also ``UNACCOUNTED_CARD``
  (integrity) in the engine.  A ``stub_discarded`` without ``round_id``
  belongs to the last round dealt from its pack.
* ``VOID_NOT_DECLARED``: the pack holds ``decks`` × 52 = 52 cards; "misdeal"
  is the shared ``MISDEAL`` comparison (a round with no card at all is not a
  misdeal).  A ``round_voided`` before ``round_ended`` (terminal order) is a
  declared void; a stub count recorded after ``round_ended`` is judged at once.
* ``STUB_COUNT_OVERDUE``: the five rounds run on across ``table_closed`` /
  ``table_opened`` ("five consecutive rounds on the table"); a voided round
  is a round.  A stub count recorded after its round ended still counts for
  that round if the finding has not fired yet.
* No ``PAYOUT``: neither document 000 nor rules.md says what the bets pay.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from pitwatch.rules.finding import ref
from pitwatch.rules.game import GameProcedure
from pitwatch.rules.state import Pack, Ref, Round
from pitwatch.rules.words import cards, listing, place
from pitwatch.schemas.contract import THREE_BETS
from pitwatch.schemas.events import Event
from pitwatch.wording import plural

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay

SPOTS = frozenset(THREE_BETS)
PASSES = 3
CARDS_EACH = 3
OVERDUE_AFTER = 5


def _cards_word(n: int) -> str:
    return plural(n, "card")


# --- the game's records ------------------------------------------------------
class UncountedRound(msgspec.Struct, array_like=True, gc=False):
    """A round that ended with no stub count, and the evidence of its ``round_ended``."""

    round_id: str
    ref: Ref


class ThreeBetTable(msgspec.Struct, gc=False):
    """The table's rounds ended in a row since the stub was last counted (E: at least once
    every five rounds)."""

    uncounted: list[UncountedRound] = msgspec.field(default_factory=list)


class PackStubCount(msgspec.Struct, array_like=True, gc=False):
    """A ``stub_counted`` of the pack: the round it was counted in, the dealer's ``stub`` and
    ``layout`` counts, its evidence, the terminal's cards of the pack at the time of the count
    (``term_n``), and whether the count has been judged against the true stub (``decided``)."""

    round_id: str | None
    stub: int
    layout: int
    ref: Ref
    term_n: int
    decided: bool = False


class ThreeBetPack(msgspec.Struct, gc=False):
    """The pack's stub counts (judged once the shoe has passed the pack) and whether the shoe's
    draws after the deal's last card (an exposed stub) have been checked."""

    counts: list[PackStubCount] = msgspec.field(default_factory=list)
    exposure_checked: bool = False


class RoundStubCount(msgspec.Struct, array_like=True, gc=False):
    """A stub count recorded for the round: the ``stub``, the cards on the ``layout``, its evidence."""

    stub: int
    layout: int
    ref: Ref


class ThreeBetRound(msgspec.Struct, gc=False):
    """One coup: the seats that placed all three bets (``eligible``, fixed when bets close or at
    the first card; None before), the stub counts recorded for it, the evidence of its end."""

    eligible: list[int] | None = None
    counts: list[RoundStubCount] = msgspec.field(default_factory=list)
    ended_ref: Ref | None = None


class ThreeBetPoker(GameProcedure):
    game = "three_bet_poker"

    # --- state -------------------------------------------------------------
    table_state_type = ThreeBetTable
    pack_state_type = ThreeBetPack
    round_state_type = ThreeBetRound

    # --- eligibility and the deal -----------------------------------------
    def _eligible(self, rnd: Round) -> list[int]:
        g: ThreeBetRound = rnd.game_state
        if g.eligible is None:
            spots: dict[int, set[str]] = {}
            for bet in rnd.bets:
                if bet.seat is not None:
                    spots.setdefault(bet.seat, set()).add(bet.spot)
            g.eligible = sorted(s for s, placed in spots.items() if SPOTS <= placed)
        return g.eligible

    def on_bets_closed(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        self._eligible(rnd)

    def allowed_targets(self, ctx: TableReplay, rnd: Round, ev: Event) -> tuple[str, ...]:
        seats = self._eligible(rnd)
        k, one_pass = len(rnd.cards), len(seats) + 1  # a pass: every eligible seat, then community
        if k >= one_pass * PASSES:
            return ()
        k %= one_pass  # the card's place in its pass
        return (f"seat:{seats[k]}",) if k < len(seats) else ("community",)

    def expected_face(self, ctx: TableReplay, rnd: Round, ev: Event) -> str:
        return "down"

    def expected_holdings(self, ctx: TableReplay, rnd: Round) -> dict[str, int]:
        want = {f"seat:{s}": CARDS_EACH for s in self._eligible(rnd)}
        want["community"] = CARDS_EACH
        return want

    def _misdealt(self, ctx: TableReplay, rnd: Round) -> list[str]:
        if not any(c.target != "burn" for c in rnd.cards):
            return []
        want, have = self.expected_holdings(ctx, rnd), self.holdings(ctx, rnd)
        return [f"{place(p)} holds {cards(have.get(p, 0))} instead of {want.get(p, 0)}"
                for p in sorted(set(want) | set(have)) if have.get(p, 0) != want.get(p, 0)]

    # --- stub events --------------------------------------------------------
    def _pack_size(self, ctx: TableReplay, pack: Pack) -> int:
        sh = pack.shuffler
        decks = (sh.decks if sh else None) or ctx.table.decks or 1
        return decks * ctx.ref.cards_per_deck

    def on_pack_event(self, ctx: TableReplay, pack: Pack, ev: Event) -> None:
        if ev.type == "stub_counted":
            pack.game_state.counts.append(
                PackStubCount(ev.round_id, ev.stub, ev.layout, ref(ev), len(pack.alignment.term), False))
            rnd = ctx.round(ev.round_id)
            if rnd is not None:
                rnd.game_state.counts.append(RoundStubCount(ev.stub, ev.layout, ref(ev)))
                if rnd.done:
                    self._check_void(ctx, rnd, late=True)
            table: ThreeBetTable = ctx.table.game_state
            ids = [r.round_id for r in table.uncounted]
            if ev.round_id in ids:  # a count recorded after its round ended
                table.uncounted = table.uncounted[ids.index(ev.round_id) + 1:]
        elif ev.type == "stub_discarded" and ev.exposed:
            rid = ev.round_id or (pack.rounds[-1] if pack.rounds else None)
            ctx.emit("STUB_EXPOSED", round_id=rid, pack=pack, key=(), evidence=[ref(ev)],
                     expected="the stub taken from the shoe and put in the discard rack without showing its cards",
                     actual=f"the dealer terminal recorded the stub of pack {ctx.label(pack.pack_id)} "
                            "discarded exposed")

    # --- round end: void, count overdue -----------------------------------
    def on_round_end(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        rnd.game_state.ended_ref = ref(ev)
        self._check_void(ctx, rnd, late=False)
        table: ThreeBetTable = ctx.table.game_state
        runs = table.uncounted
        if rnd.game_state.counts:
            table.uncounted = []
            return
        runs.append(UncountedRound(rnd.round_id, ref(ev)))
        if len(runs) >= OVERDUE_AFTER:
            table.uncounted = []
            ctx.emit("STUB_COUNT_OVERDUE", rnd=rnd, key=(), evidence=[r.ref for r in runs],
                     expected=f"the stub counted at least once every {plural(OVERDUE_AFTER, 'round')}",
                     actual=f"{plural(len(runs), 'round')} in a row ended with no stub count: "
                            + listing(r.round_id for r in runs))

    def _check_void(self, ctx: TableReplay, rnd: Round, late: bool) -> None:
        if rnd.voided:
            return
        pack = ctx.pack(rnd.pack_id)
        size = self._pack_size(ctx, pack) if pack is not None else ctx.ref.cards_per_deck
        reasons, evidence = [], []
        if not late:
            wrong = self._misdealt(ctx, rnd)
            if wrong:
                reasons.append("the cards were misdealt (" + listing(wrong) + ")")
                evidence += [c.ref for c in rnd.cards][-1:]
        g: ThreeBetRound = rnd.game_state
        for count in g.counts[-1:] if late else g.counts:
            stub, layout = count.stub, count.layout
            if stub + layout != size:
                reasons.append(f"the stub count ({stub}) and the cards on the layout ({layout}) "
                               f"make {stub + layout}, not {size}")
                evidence.append(count.ref)
        if not reasons:
            return
        end = g.ended_ref
        ctx.emit("VOID_NOT_DECLARED", rnd=rnd, key=(), evidence=evidence + ([end] if end else []),
                 expected="all hands declared void before the round ends, because " + listing(reasons),
                 actual=f"round {ctx.label(rnd.round_id)} ended without being voided")

    # --- pack-level decisions: the true stub, draws after the deal ---------
    def settle_pack(self, ctx: TableReplay, pack: Pack) -> None:
        if pack.shoe_passed:  # else _decide waits for the shoe
            self._decide(ctx, pack, closing=False)

    def on_close(self, ctx: TableReplay) -> None:
        for pack in list(ctx.open_packs()):
            self._decide(ctx, pack, closing=True)

    def pack_open(self, ctx: TableReplay, pack: Pack) -> bool:
        g: ThreeBetPack = pack.game_state
        return not g.exposure_checked or any(not c.decided for c in g.counts)

    def round_open(self, ctx: TableReplay, rnd: Round) -> bool:
        pack = ctx.pack(rnd.pack_id)
        return pack is not None and self.pack_open(ctx, pack)

    def _card_count(self, ctx: TableReplay, pack: Pack, closing: bool) -> tuple[int, str, Ref | None] | None:
        """(cards in the pack, how that is known, evidence ref) or None while unknown."""
        if pack.shoe_loaded is not None:
            n = pack.shoe_loaded.card_count
            return n, f"the shoe counted {_cards_word(n)} loaded", pack.shoe_loaded.ref
        if pack.shuffler is not None:
            n = pack.shuffler.card_count
            return n, f"the shuffler counted {_cards_word(n)}", pack.shuffler.ref
        if closing:
            n = self._pack_size(ctx, pack)
            decks = plural(n // ctx.ref.cards_per_deck, "deck")
            return n, f"no count was recorded, so the pack holds {_cards_word(n)} ({decks} of {ctx.ref.cards_per_deck})", None
        return None

    @staticmethod
    def _deal_end(pack: Pack, term_n: int) -> int | None:
        """Shoe draws the deal took out, given the terminal's first ``term_n`` cards; None: no shoe."""
        s, t = pack.alignment.shoe, pack.alignment.term
        if not s:
            return None
        if term_n == 0 or len(s) < term_n:
            return min(len(s), term_n)
        last = t[term_n - 1].card
        end = next((q for q in range(term_n - 1, len(s))
                    if s[q].card is None or last is None or s[q].card == last), term_n - 1)
        return end + 1

    def _decide(self, ctx: TableReplay, pack: Pack, closing: bool) -> None:
        shoe_passed = pack.shoe_passed or closing
        if not shoe_passed:
            return
        g: ThreeBetPack = pack.game_state
        for count in g.counts:
            if not count.decided:
                self._check_count(ctx, pack, count, closing)
        rounds = [ctx.round(r) for r in pack.rounds]
        dealt_out = bool(rounds) and all(r is None or r.done for r in rounds)
        if not g.exposure_checked and (closing or pack.term_passed or dealt_out):
            g.exposure_checked = True
            self._check_exposure(ctx, pack)

    def _check_count(self, ctx: TableReplay, pack: Pack, count: PackStubCount, closing: bool) -> None:
        round_id, stub, layout, count_ref, term_n = count.round_id, count.stub, count.layout, count.ref, count.term_n
        known = self._card_count(ctx, pack, closing)
        if known is None:
            return
        count.decided = True
        size, size_words, size_ref = known
        drawn = self._deal_end(pack, term_n)
        if drawn is not None:
            s = pack.alignment.shoe
            how = f"the shoe drew {_cards_word(drawn)} for the deal" + (
                f" (draws 1 to {s[drawn - 1].index})" if drawn > 1 else "")
            if drawn != term_n:
                how += f", while the dealer terminal recorded {_cards_word(term_n)} dealt"
            last = s[drawn - 1] if drawn else None
            last_ref = last.ref() if last and last.event_id else None
        else:
            how = f"the dealer terminal recorded {_cards_word(term_n)} dealt (the shoe read none of this pack)"
            t = pack.alignment.term
            last_ref = t[term_n - 1].ref() if term_n else None
            drawn = term_n
        left = size - drawn
        if stub == left:
            return
        evidence = [count_ref] + [r for r in (size_ref, last_ref) if r is not None]
        ctx.emit("STUB_MISCOUNT", round_id=round_id, pack=pack, key=(), evidence=evidence,
                 expected=(f"{_cards_word(left)} in the stub of pack {ctx.label(pack.pack_id)}: "
                           f"{size_words} and {how}"),
                 actual=f"the dealer counted {_cards_word(stub)} in the stub, and {layout} face down "
                        f"on the layout: {abs(stub - left)} {'more' if stub > left else 'fewer'} than were left")

    def _check_exposure(self, ctx: TableReplay, pack: Pack) -> None:
        t = pack.alignment.term
        end = self._deal_end(pack, len(t))
        if not t or end is None:
            return
        after = [c for c in pack.alignment.shoe[end:] if c.event_id is not None]
        if not after or not pack.rounds:
            return
        shown = ", ".join(f"draw {c.index} ({c.card or 'unreadable'})" for c in after)
        ctx.emit("STUB_EXPOSED", round_id=pack.rounds[-1], pack=pack, key=(),
                 evidence=[c.ref() for c in after],
                 expected=f"no card drawn from pack {ctx.label(pack.pack_id)} after the deal's last card "
                          f"({t[-1].card or 'unreadable'}, the shoe's draw {end}) until the stub is removed",
                 actual=f"the shoe drew {_cards_word(len(after))} after the deal was complete: {shown}")

    # --- the round row ------------------------------------------------------
    def outcome(self, ctx: TableReplay, rnd: Round) -> str | None:
        return "voided" if rnd.voided else None
