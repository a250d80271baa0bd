"""Combate + blackjack + six-card poker (document 001): the game plug-in.

Document 001 (Puerto Rico, original Spanish), phase by phase:

* A, B — Combate, the ``first`` bet: "una ronda de una carta boca-arriba a
  cada jugador ... comenzando con el primer jugador a su extremo izquierdo",
  then the dealer's; "Pagará o recogerá la primera apuesta de derecha a
  izquierda.  En caso de empate el jugador perderá la mitad de su primera apuesta."
* C–F — blackjack, the ``second`` bet: "una ronda adicional de cartas de
  izquierda a derecha ... el 'Croupier' recibirá su segunda carta
  boca-abajo"; players act in turn from the dealer's left; "doblar su apuesta
  en cualquier dos cartas"; split "de tener (2) dos Ases, en donde se le
  servirá una sola carta adicional para cada 'mano'"; "Si el jugador logra
  recibir seis (6) cartas sin pasarse de veintiuno (21), este no recibirá
  más cartas y ganará automáticamente"; settled right to left.
* G–K — poker, the ``third`` bet: "repartirá boca-abajo de izquierda a
  derecha, las cartas necesarias a cada jugador para completar una 'mano' de
  seis cartas"; best five; "par de Ases o mayor"; "Las cartas hablarán por sí solas".

Settlement logic lives in :mod:`pitwatch.rules.combate_payouts`, :mod:`pitwatch.rules.blackjack`
and :mod:`pitwatch.rules.poker_hands`; this module follows the round.  Interpretations:

* Each phase deals to the seats holding that phase's bet (``first`` /
  ``second`` / ``third``), fixed at ``bets_closed`` (or the first card if it
  comes earlier); a seat with no bet at all must get no card (``MISDEAL``).
* A phase-2 card to a seat answers that seat's pending ``hit`` / ``double``
  (one card) or ``split`` (one card per hand, ``hand`` 1 then 2).  Seats act
  in ascending order: a card to a seat after a higher seat got its card, or
  after the dealer began drawing, is out of the dealing order.  After the
  dealer's hole card, a seat card that answers no action starts phase 3 (face
  down); a DEAL_ORDER deviation is reported once, later cards are then read
  by this same rule.
* A dealer card after the hole card while no player hand is live (every hand
  bust, blackjack or six cards) is out of the dealing order (``DEAL_ORDER``:
  "the dealer draws only while some player hand is live"); with a live hand
  it is judged by ``DEALER_DRAWING``.  "Stands below 17" is judged when phase
  2 ends (first ``second`` payout, first phase-3 card, or ``round_ended``).
* A split of a hand that is already a split hand is an ``ILLEGAL_SPLIT`` (each
  split ace receives one single card); a double on a split hand that then
  receives its second card is ``ILLEGAL_SPLIT`` too.
* ``SIX_CARD_RULE`` also fires when a six-card hand's ``second`` bet is never
  settled by ``round_ended`` (it was "not settled as a win").
* ``MISDEAL``: seats holding a ``third`` bet must hold six cards at
  ``round_ended``, unless the round was voided before the poker deal began.
* ``PAYOUT`` third bet: judged only when the seat holds exactly six cards
  (otherwise ``MISDEAL`` says so).  A payout for a bet never placed is wrong
  ("no bet").  ``SETTLEMENT_ORDER``: per spot, seats never ascending; the hands
  of one seat may come in any order.
* Unreadable cards: every check enumerates them (ranks for blackjack and
  Combate, whole cards for poker) and stays undecided unless all agree.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Hashable, Sequence, TypeVar

import msgspec

from pitwatch.rules.blackjack import dealer_must_hit, describe_hand, is_live, is_six_card_winner, settle_second_bet
from pitwatch.rules.cards import verdicts
from pitwatch.rules.combate_payouts import settle_first_bet, table_rules_from_settings, third_bet_settlement
from pitwatch.rules.finding import ref
from pitwatch.rules.game import GameProcedure, seat_of
from pitwatch.rules.reference import DEFAULT_REFERENCE, TableReference
from pitwatch.rules.rounds import bet_total
from pitwatch.rules.state import Ref, Round
from pitwatch.rules.words import cards as cards_word
from pitwatch.rules.words import ordinal, settlement
from pitwatch.schemas.contract import RANKS, SUITS, THREE_BETS
from pitwatch.schemas.events import Event

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay

RANK_CARDS = tuple(r + "c" for r in RANKS)  # a card per rank: suits never matter in blackjack
ALL_CARDS = tuple(r + s for r in RANKS for s in SUITS)
SPOTS = THREE_BETS
SIX = 6

_Answer = TypeVar("_Answer", bound=Hashable)


# --- the round's record ----------------------------------------------------------
class BetSeats(msgspec.Struct, gc=False):
    """The seats holding each of the three bets, ascending: those dealt each phase
    (``first``: the Combate card, ``second``: blackjack, ``third``: the poker hand)."""

    first: list[int] = msgspec.field(default_factory=list)
    second: list[int] = msgspec.field(default_factory=list)
    third: list[int] = msgspec.field(default_factory=list)


class PhaseCounts(msgspec.Struct, gc=False):
    """Cards dealt so far in each dealing phase: the Combate card round (``p1``, the dealer's
    up card included), the blackjack second card round (``p2``, the hole card included) and the
    poker deal (``p3``)."""

    p1: int = 0
    p2: int = 0
    p3: int = 0


class CombateHand(msgspec.Struct, gc=False):
    """One blackjack hand of a seat (``hand`` 1, or 2 … after a split of aces): its cards as
    dealt (None: unreadable) and their evidence; ``split`` a hand of a split, ``doubled`` the
    player doubled on it, ``after_split`` the cards it received after the split."""

    seat: int
    hand: int
    cards: list[str | None] = msgspec.field(default_factory=list)
    refs: list[Ref] = msgspec.field(default_factory=list)
    split: bool = False
    doubled: bool = False
    after_split: int = 0


class PendingAction(msgspec.Struct, array_like=True, gc=False):
    """A player's ``hit``, ``double`` or ``split`` (one per resulting hand) still waiting for its card."""

    seat: int
    hand: int
    ref: Ref


class LastPaid(msgspec.Struct, array_like=True, gc=False):
    """The latest seat paid or collected on a spot (settled right to left) and its payout."""

    seat: int
    ref: Ref


class CombateRound(msgspec.Struct, gc=False):
    """One coup of combate as the dealing goes.

    ``stage``: ``p1`` (the Combate card round), ``p2`` (the blackjack second card round, to the
    dealer's hole card), ``play`` (players act), ``draw`` (the dealer draws), ``settled`` (second
    bets being paid), ``p3`` (the poker deal).  ``seats``: the seats of each bet, fixed when bets
    close (None before); ``n``: cards dealt per phase; ``p3``: the poker deal's order of seat
    targets, fixed at its first card (None before); ``hands``: the blackjack hands by
    ``"SSS/H"`` (seat, hand); ``dealer``/``dealer_refs``: the dealer's cards and their evidence;
    ``pending``: actions waiting for their card; ``last_paid``: per spot, the latest seat settled;
    ``stand_checked``: "stands below 17" judged; ``turn``: the highest seat served an action."""

    stage: str = "p1"
    seats: BetSeats | None = None
    n: PhaseCounts = msgspec.field(default_factory=PhaseCounts)
    p3: list[str] | None = None
    hands: dict[str, CombateHand] = msgspec.field(default_factory=dict)
    dealer: list[str | None] = msgspec.field(default_factory=list)
    dealer_refs: list[Ref] = msgspec.field(default_factory=list)
    pending: list[PendingAction] = msgspec.field(default_factory=list)
    last_paid: dict[str, LastPaid] = msgspec.field(default_factory=dict)
    stand_checked: bool = False
    turn: int = 0


# expected_face by what the card is (Combate._kind)
_FACE_OF_KIND = {"p1": "up", "p2": "up", "hole": "down", "hit": "up", "draw": "up", "p3": "down"}


def _decide(groups: Sequence[Sequence[str | None]], check: Callable[..., _Answer],
            alphabet: Sequence[str] = RANK_CARDS, limit: int = 2) -> _Answer | None:
    """``check(*groups)`` over every value of the unknown cards: the answer, or None if undecided."""
    for g in groups:
        if None in g:
            break
    else:  # every card known: the one answer, no enumeration
        return check(*[list(g) for g in groups])
    sizes = [len(g) for g in groups]

    def run(flat: list[str]) -> _Answer:
        out: list[list[str]] = []
        k = 0
        for n in sizes:
            out.append(flat[k:k + n])
            k += n
        return check(*out)

    answers = verdicts([c for g in groups for c in g], run, alphabet, limit)
    return next(iter(answers)) if answers is not None and len(answers) == 1 else None


class Combate(GameProcedure):
    game = "combate"
    round_state_type = CombateRound

    def __init__(self, reference: TableReference = DEFAULT_REFERENCE) -> None:
        super().__init__(reference)
        self.rules = table_rules_from_settings(dict(self.ref.settings))

    # --- who plays which phase -------------------------------------------
    def _seats(self, rnd: Round) -> BetSeats:
        g: CombateRound = rnd.game_state
        if g.seats is None:
            g.seats = BetSeats(**{spot: sorted({b.seat for b in rnd.bets if b.spot == spot}) for spot in SPOTS})
        return g.seats

    def on_bets_closed(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        self._seats(rnd)

    def _hands(self, g: CombateRound) -> list[CombateHand]:
        """The blackjack hands: those of seats holding a ``second`` bet."""
        playing = set(g.seats.second) if g.seats else set()
        return [g.hands[k] for k in sorted(g.hands) if g.hands[k].seat in playing]

    def _live(self, g: CombateRound) -> bool | None:
        """Whether some player hand is live (None: an unreadable card decides it)."""
        hands = self._hands(g)
        return _decide([h.cards for h in hands],
                       lambda *cs: any(is_live(c, split=h.split) for c, h in zip(cs, hands)))

    def _seat_count(self, rnd: Round, seat: int) -> int:
        return [c.target for c in rnd.cards].count(f"seat:{seat}")  # no generator: asked per card

    def _p3_order(self, rnd: Round) -> list[str]:
        g: CombateRound = rnd.game_state
        if g.p3 is None:
            return [f"seat:{s}" for s in self._seats(rnd).third for _ in range(SIX - self._seat_count(rnd, s))]
        return g.p3

    def _p3_first(self, rnd: Round) -> tuple[str, ...]:
        """``tuple(self._p3_order(rnd)[:1])``: the first third-bet seat short of six cards."""
        g: CombateRound = rnd.game_state
        if g.p3 is not None:
            return tuple(g.p3[:1])
        for s in self._seats(rnd).third:
            if self._seat_count(rnd, s) < SIX:
                return (f"seat:{s}",)
        return ()

    # --- the dealing order and faces --------------------------------------
    def allowed_targets(self, ctx: TableReplay, rnd: Round, ev: Event) -> tuple[str, ...]:
        g: CombateRound = rnd.game_state
        seats = self._seats(rnd)
        stage = g.stage
        if stage in ("p1", "p2"):  # the phase's seats in order, then the dealer
            order, k = (seats.first, g.n.p1) if stage == "p1" else (seats.second, g.n.p2)
            return (f"seat:{order[k]}",) if k < len(order) else ("dealer",) if k == len(order) else ()
        if stage == "p3":
            p3 = self._p3_order(rnd)
            k = g.n.p3
            return (p3[k],) if k < len(p3) else ()
        if g.pending and stage != "draw":
            seat = g.pending[0].seat
            if seat >= g.turn:
                return (f"seat:{seat}",)
            return tuple(f"seat:{s}" for s in seats.second if s >= g.turn) + ("dealer",)
        allowed = self._p3_first(rnd)
        if stage in ("play", "draw") and self._live(g) is not False:
            allowed = ("dealer",) + allowed
        return allowed

    def _kind(self, g: CombateRound, ev: Event) -> str:
        """What the card ``ev`` is, in the round's current stage."""
        stage, seat = g.stage, seat_of(ev.target)
        if stage == "p1":
            return "p1"
        if stage == "p2":
            return "hole" if ev.target == "dealer" else "p2"
        if ev.target == "dealer":
            return "draw" if stage in ("play", "draw", "settled") else "extra"
        if stage in ("play", "draw") and self._pending_for(g, seat, ev.hand) is not None:
            return "hit"
        return "p3" if seat is not None else "extra"

    def expected_face(self, ctx: TableReplay, rnd: Round, ev: Event) -> str | None:
        return _FACE_OF_KIND.get(self._kind(rnd.game_state, ev))

    @staticmethod
    def _pending_for(g: CombateRound, seat: int | None, hand: int | None) -> int | None:
        for i, p in enumerate(g.pending):
            if p.seat == seat and (hand is None or p.hand == hand):
                return i
        return None

    # --- following the cards ----------------------------------------------
    def on_card(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        g: CombateRound = rnd.game_state
        kind, seat = self._kind(g, ev), seat_of(ev.target)
        if kind in ("p1", "p2", "hole"):
            if kind == "p1":
                g.n.p1 += 1
            else:
                g.n.p2 += 1
            if ev.target == "dealer":
                g.dealer.append(ev.card)
                g.dealer_refs.append(ref(ev))
                g.stage = "p2" if kind == "p1" else "play"
            elif seat is not None:
                hand = self._hand(g, seat, 1)
                hand.cards.append(ev.card)
                hand.refs.append(ref(ev))
        elif kind == "hit":
            i = self._pending_for(g, seat, ev.hand)
            assert i is not None  # _kind said "hit": an action is pending for this card
            p = g.pending.pop(i)
            g.turn = max(g.turn, p.seat)
            self._deal_to_hand(ctx, rnd, self._hand(g, p.seat, p.hand), ev)
        elif kind == "draw":
            self._dealer_draw(ctx, rnd, ev)
        elif kind == "p3":
            if g.stage != "p3":
                self._end_of_phase_2(ctx, rnd, ref(ev))
                g.p3 = [f"seat:{s}" for s in self._seats(rnd).third
                        for _ in range(SIX - self._seat_count(rnd, s) + (1 if s == seat else 0))]
                g.stage = "p3"
            g.n.p3 += 1

    @staticmethod
    def _hand(g: CombateRound, seat: int, hand: int) -> CombateHand:
        key = f"{seat:03d}/{hand}"
        if key not in g.hands:
            g.hands[key] = CombateHand(seat, hand)
        return g.hands[key]

    def _deal_to_hand(self, ctx: TableReplay, rnd: Round, hand: CombateHand, ev: Event) -> None:
        who = f"seat {hand.seat}" + (f"'s {ordinal(hand.hand)} hand" if hand.split else "")
        if _decide([hand.cards], lambda cs: len(cs) >= SIX and is_six_card_winner(cs)):
            ctx.emit("SIX_CARD_RULE", rnd=rnd, key=(), evidence=hand.refs[:SIX] + [ref(ev)],
                     expected=f"no more cards to {who}: six cards without going over 21 win automatically",
                     actual=f"{who} received {ev.card or 'a card'} holding {describe_hand(hand.cards)}"
                     if None not in hand.cards else f"{who} received a seventh card")
        if hand.split:
            hand.after_split += 1
            if hand.after_split > 1:
                ctx.emit("ILLEGAL_SPLIT", rnd=rnd, key=(), evidence=hand.refs + [ref(ev)],
                         expected=f"one single card to each split ace hand, {who} included",
                         actual=f"{who} received {ev.card or 'a card'}, its {ordinal(hand.after_split)} card "
                                "after the split")
        hand.cards.append(ev.card)
        hand.refs.append(ref(ev))

    def _dealer_draw(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        g: CombateRound = rnd.game_state
        g.stage = "draw"
        live = self._live(g)
        must = _decide([g.dealer], lambda d: dealer_must_hit(d, self.rules.blackjack)) if live else None
        if live is None or (live and must is None):
            ctx.undecided(rnd, "DEALER_DRAWING")
        elif live and must is False:
            ctx.emit("DEALER_DRAWING", rnd=rnd, key=(), evidence=g.dealer_refs + [ref(ev)],
                     expected=self._drawing_rule(),
                     actual=f"the dealer drew {ev.card or 'a card'} holding {describe_hand(g.dealer)}")
        g.dealer.append(ev.card)
        g.dealer_refs.append(ref(ev))

    def _drawing_rule(self) -> str:
        soft = "hits" if self.rules.blackjack.dealer_hits_soft_17 else "stands on"
        return f"while a player hand is live the dealer draws below 17 and stands on 17 or more, and {soft} soft 17"

    def _end_of_phase_2(self, ctx: TableReplay, rnd: Round, end_ref: Ref) -> None:
        """The dealer's last chance to draw has passed: DEALER_DRAWING "stands below 17"."""
        g: CombateRound = rnd.game_state
        if g.stand_checked or g.stage not in ("play", "draw"):
            return
        g.stand_checked = True
        live = self._live(g)
        must = _decide([g.dealer], lambda d: dealer_must_hit(d, self.rules.blackjack)) if live else None
        if live is None or (live and must is None):
            ctx.undecided(rnd, "DEALER_DRAWING")
        elif live and must:
            ctx.emit("DEALER_DRAWING", rnd=rnd, key=(), evidence=g.dealer_refs + [end_ref],
                     expected=self._drawing_rule(),
                     actual=f"the dealer stood on {describe_hand(g.dealer)}")

    # --- player actions -----------------------------------------------------
    def on_round_event(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        if ev.type != "player_action" or ev.action not in ("hit", "double", "split"):
            return
        g: CombateRound = rnd.game_state
        hand = self._hand(g, ev.seat, ev.hand or 1)
        who = f"seat {ev.seat}" + (f"'s {ordinal(hand.hand)} hand" if hand.split else "")
        if ev.action == "double":
            if len(hand.cards) != 2:
                ctx.emit("ILLEGAL_DOUBLE", rnd=rnd, key=(), evidence=hand.refs + [ref(ev)],
                         expected="a double only on a hand of exactly two cards (\"en cualquier dos cartas\")",
                         actual=f"{who} doubled holding {cards_word(len(hand.cards))}: {describe_hand(hand.cards)}"
                         if None not in hand.cards else f"{who} doubled holding {cards_word(len(hand.cards))}")
            hand.doubled = True
        elif ev.action == "split":
            self._split(ctx, rnd, g, hand, who, ev)
            return
        g.pending.append(PendingAction(ev.seat, hand.hand, ref(ev)))

    def _split(self, ctx: TableReplay, rnd: Round, g: CombateRound, hand: CombateHand, who: str, ev: Event) -> None:
        cards = hand.cards
        aces = _decide([cards], lambda cs: len(cs) == 2 and all(c[0] == "A" for c in cs), ("Ac", "2c"))
        wrong = "a hand that was already split" if hand.split else None
        if wrong is None and aces is False:
            wrong = f"{' '.join(c or '??' for c in cards) or 'no cards'}"
        if wrong is not None:
            ctx.emit("ILLEGAL_SPLIT", rnd=rnd, key=(), evidence=hand.refs + [ref(ev)],
                     expected="a split only of two aces, each receiving one single card",
                     actual=f"{who} split {wrong}")
        elif aces is None:
            ctx.undecided(rnd, "ILLEGAL_SPLIT")
        second = self._hand(g, ev.seat, 1 + max(h.hand for h in g.hands.values() if h.seat == ev.seat))
        if cards:
            second.cards, second.refs = cards[1:], hand.refs[1:]
            hand.cards, hand.refs = cards[:1], hand.refs[:1]
        hand.split = second.split = True
        g.pending += [PendingAction(ev.seat, hand.hand, ref(ev)), PendingAction(ev.seat, second.hand, ref(ev))]

    # --- settlement ---------------------------------------------------------
    def payout_candidates(self, ctx: TableReplay, rnd: Round, ev: Event) -> list[tuple[str, float]]:
        g: CombateRound = rnd.game_state
        amount = bet_total(rnd, ev.seat, ev.spot)
        if ev.spot not in SPOTS or amount is None:
            return [("no bet", 0.0)]
        target = f"seat:{ev.seat}"
        if ev.spot == "first":
            combate_card = next(([c.card] for c in rnd.cards if c.target == target), None)  # the seat's first card
            if combate_card is None or not g.dealer:
                return []
            got = _decide([combate_card, g.dealer[:1]], lambda p, d: settle_first_bet(p[0], d[0], amount))
        elif ev.spot == "second":
            hand = g.hands.get(f"{ev.seat:03d}/{ev.hand or 1}")
            if hand is None or len(g.dealer) < 2:
                return []
            got = _decide([hand.cards, g.dealer], lambda p, d: settle_second_bet(
                p, d, amount, doubled=hand.doubled, split=hand.split, rules=self.rules.blackjack))
        else:
            seat_cards = [c.card for c in rnd.cards if c.target == target]
            if len(seat_cards) != SIX:
                return []
            got = _decide([seat_cards], lambda cs: third_bet_settlement(cs, amount, self.rules.paytable),
                          ALL_CARDS, limit=1)  # the settlement needs the best hand's category only
        return [] if got is None else [(got.result, got.amount)]

    def on_payout(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        g: CombateRound = rnd.game_state
        if ev.spot == "second":
            self._end_of_phase_2(ctx, rnd, ref(ev))
            if g.stage in ("play", "draw"):
                g.stage = "settled"
            hand = g.hands.get(f"{ev.seat:03d}/{ev.hand or 1}")
            if hand is not None and ev.result != "win" and not rnd.voided and \
                    _decide([hand.cards], is_six_card_winner):
                ctx.emit("SIX_CARD_RULE", rnd=rnd, key=(), evidence=hand.refs[:SIX] + [ref(ev)], seat=ev.seat,
                         expected=f"seat {ev.seat}'s second bet paid as a win: six cards without going over 21 win",
                         actual=f"it was settled as {settlement(ev.result, ev.amount)} on {describe_hand(hand.cards)}")
        last = g.last_paid.get(ev.spot)
        if last is not None and ev.seat > last.seat:
            ctx.emit("SETTLEMENT_ORDER", rnd=rnd, key=(), evidence=[last.ref, ref(ev)],
                     expected=f"{ev.spot} bets settled right to left, in descending seat order",
                     actual=f"seat {ev.seat}'s {ev.spot} bet was settled after seat {last.seat}'s")
        g.last_paid[ev.spot] = LastPaid(ev.seat, ref(ev))

    def on_round_end(self, ctx: TableReplay, rnd: Round, ev: Event) -> None:
        g: CombateRound = rnd.game_state
        self._end_of_phase_2(ctx, rnd, ref(ev))
        if rnd.voided:
            return
        paid = {(p.seat, p.hand) for p in rnd.payouts if p.spot == "second"}
        for hand in self._hands(g):
            if (hand.seat, hand.hand) not in paid and bet_total(rnd, hand.seat, "second") is not None \
                    and _decide([hand.cards], is_six_card_winner):
                ctx.emit("SIX_CARD_RULE", rnd=rnd, key=(), evidence=hand.refs[:SIX] + [ref(ev)],
                         seat=hand.seat,
                         expected=f"seat {hand.seat}'s second bet paid as a win: six cards without going over 21 win",
                         actual=f"the round ended with that bet never settled, the hand being {describe_hand(hand.cards)}")

    # --- misdeal and the round row ------------------------------------------
    def expected_holdings(self, ctx: TableReplay, rnd: Round) -> dict[str, int] | None:
        if rnd.voided and rnd.game_state.stage != "p3":
            return None  # voided before the poker deal: the deal was never completed
        seats = self._seats(rnd)
        want = dict(self.holdings(ctx, rnd))
        betting = set(seats.first) | set(seats.second) | set(seats.third)
        for position in list(want):
            if seat_of(position) is not None and seat_of(position) not in betting:
                want[position] = 0
        for s in seats.third:
            want[f"seat:{s}"] = SIX
        return want

    def outcome(self, ctx: TableReplay, rnd: Round) -> str | None:
        dealer = rnd.game_state.dealer
        if rnd.voided or len(dealer) < 2 or None in dealer:
            return None
        return f"dealer {describe_hand(dealer)}; combate card {dealer[0][0]}"
