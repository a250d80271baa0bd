"""Round-level machinery every game shares, and the round's row.

``CARDS_BEFORE_BETS_CLOSED`` (baccarat, three_bet_poker, combate: decided on
the terminal's own order — a shoe draw is never compared with ``bets_closed``
by time) and the shared part of ``DEAL_ORDER``, ``CARD_FACE``, ``MISDEAL``
and ``PAYOUT``: the plug-in says what the procedure wants
(:class:`pitwatch.rules.game.GameProcedure`), this module compares and reports.

Round checks read the terminal's cards.  A card the terminal recorded as
null stays unknown even if the shoe read it (the shoe's reading is checked
against the terminal only by SHOE_CARD_MISMATCH), so every round check is a
single-stream decision, taken at once.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pitwatch.rules.catalog import rule
from pitwatch.rules.finding import ref
from pitwatch.rules.packs import aligned_through
from pitwatch.rules.state import PackReach, Round, RoundCard, RoundTail
from pitwatch.rules.words import cards as n_cards
from pitwatch.rules.words import listing, place, places, settlement
from pitwatch.schemas.events import Event, micros_to_datetime

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay

# Which games each shared round check applies to (the catalogue is constant data).
_BEFORE_BETS_GAMES = frozenset(rule("CARDS_BEFORE_BETS_CLOSED").games)
_DEAL_ORDER_GAMES = frozenset(rule("DEAL_ORDER").games)
_CARD_FACE_GAMES = frozenset(rule("CARD_FACE").games)
_MISDEAL_GAMES = frozenset(rule("MISDEAL").games)
_PAYOUT_GAMES = frozenset(rule("PAYOUT").games)


def on_card(ctx: TableReplay, rnd: Round, ev: Event, pack_id: str | None, tpos: int | None) -> None:
    """Shared checks of a dealt card, then record it in the round."""
    game = ctx.table.game  # ctx.game without the property call (once per card)
    if rnd.bets_closed is None and game in _BEFORE_BETS_GAMES:
        evidence = [r for r in (rnd.start_ref, ref(ev)) if r is not None]
        ctx.emit("CARDS_BEFORE_BETS_CLOSED", rnd=rnd, key=(), evidence=evidence,
                 expected="the dealer calls \"no more bets\" before the first card of the round",
                 actual=f"a card went to {place(ev.target)} before \"no more bets\" was called")
    proc = ctx.proc
    if game in _DEAL_ORDER_GAMES:
        allowed = proc.allowed_targets(ctx, rnd, ev)
        if allowed is not None and ev.target not in allowed:
            n = len(rnd.cards) + 1
            ctx.emit("DEAL_ORDER", rnd=rnd, key=(), evidence=[ref(ev)],
                     expected=(f"card {n} of the round should go to {places(allowed)}" if allowed
                               else f"the deal should be complete after {n_cards(n - 1)}"),
                     actual=f"card {n} went to {place(ev.target)}")
    if game in _CARD_FACE_GAMES:
        face = proc.expected_face(ctx, rnd, ev)
        if face is not None and ev.face != face:
            ctx.emit("CARD_FACE", rnd=rnd, key=(), evidence=[ref(ev)],
                     expected=f"the card to {place(ev.target)} should be dealt face {face}",
                     actual=f"it was dealt face {ev.face}")
    rnd.cards.append(RoundCard(ev.target, ev.hand or 1, ev.face, ev.card, ev.street, ref(ev), pack_id, tpos))


def check_misdeal(ctx: TableReplay, rnd: Round) -> None:
    """MISDEAL: compare the holdings with the plug-in's expectation (once per round)."""
    if rnd.misdeal_checked or ctx.game not in _MISDEAL_GAMES:
        return
    rnd.misdeal_checked = True
    want = ctx.proc.expected_holdings(ctx, rnd)
    if want is None:
        return
    have = ctx.proc.holdings(ctx, rnd)
    wrong = sorted(p for p in set(want) | set(have) if have.get(p, 0) != want.get(p, 0))
    if wrong:
        evidence = [c.ref for c in rnd.cards if c.target in wrong] or [c.ref for c in rnd.cards[-1:]]
        if not evidence:
            return
        ctx.emit("MISDEAL", rnd=rnd, key=(), evidence=evidence,
                 expected=listing(f"{place(p)} should hold {n_cards(want.get(p, 0))}" for p in wrong),
                 actual=listing(f"{place(p)} holds {n_cards(have.get(p, 0))}" for p in wrong))


def check_payout(ctx: TableReplay, rnd: Round, ev: Event) -> None:
    """PAYOUT: one finding for every wrong payout (key: round, seat, spot, hand, the payout)."""
    if ctx.table.game not in _PAYOUT_GAMES or rnd.voided:   # ctx.game, once per payout
        return
    candidates = ctx.proc.payout_candidates(ctx, rnd, ev)
    if candidates is None:
        return
    tol = ctx.ref.payout_tolerance
    verdicts = {ev.result == res and abs(ev.amount - amt) <= tol + 1e-9 for res, amt in candidates}
    if verdicts != {False}:
        if verdicts != {True}:
            ctx.undecided(rnd, "PAYOUT")
        return
    shown = sorted({settlement(res, amt) for res, amt in candidates})
    bet = f"seat {ev.seat}'s {ev.spot} bet" + (f" (hand {ev.hand})" if ev.hand and ev.hand > 1 else "")
    ctx.emit("PAYOUT", rnd=rnd, key=(ev.seat, ev.spot, ev.hand or 1, ev.event_id), evidence=[ref(ev)],
             seat=ev.seat, spot=ev.spot,
             expected=f"{bet} should be settled as {listing(shown, 'or')}",
             actual=f"it was settled as {settlement(ev.result, ev.amount)}")


def bet_total(rnd: Round, seat: int, spot: str) -> float | None:
    amounts = [b.amount for b in rnd.bets if b.seat == seat and b.spot == spot]
    return sum(amounts) if amounts else None


ALIGNING: Literal["aligning"] = "aligning"  # final_status(): the round waits for the card matching of one of its packs


def final(ctx: TableReplay, rnd: Round, closing: bool) -> bool:
    return closing or final_status(ctx, rnd) is True


def final_status(ctx: TableReplay, rnd: Round) -> bool | Literal["aligning"]:
    """True once the round's row is final; :data:`ALIGNING` while the card matching of a pack
    it was dealt from has not decided its cards (it stays so until that matching progresses,
    the pack's streams pass it, or the round gets another card); False otherwise."""
    if not rnd.done:
        return False
    tail = rnd.tail
    cards = rnd.cards
    if tail is None or len(cards) != tail.cards:
        last: dict[str, int] = {}
        for c in cards:
            if c.term_pos is not None and c.pack_id is not None:
                last[c.pack_id] = max(last.get(c.pack_id, -1), c.term_pos)
        tail = rnd.tail = RoundTail(len(cards), [PackReach(pid, pos) for pid, pos in sorted(last.items())])
    packs = ctx.table.packs
    for reach in tail.reach:
        pack = packs.get(reach.pack_id)
        if pack is not None and not aligned_through(pack, reach.term_pos):
            return ALIGNING
    return not ctx.proc.round_open(ctx, rnd)


def row(ctx: TableReplay, rnd: Round) -> dict[str, Any]:
    day_ts = rnd.started if rnd.started is not None else rnd.first_ts
    assert day_ts is not None, "a round's first event sets first_ts"
    round_id, round_use = ctx.id_use(rnd.round_id)
    pack_id, pack_use = ctx.id_use(rnd.pack_id)
    return {
        "table_id": ctx.table_id, "game": rnd.game or ctx.game, "round_id": round_id,
        "pack_id": pack_id, "dealer_id": rnd.dealer_id,
        "started": micros_to_datetime(rnd.started) if rnd.started is not None else None,
        "ended": micros_to_datetime(rnd.ended) if rnd.ended is not None else None,
        "seats_dealt": ctx.proc.seats_dealt(ctx, rnd), "outcome": ctx.proc.outcome(ctx, rnd),
        "voided": rnd.voided, "findings": rnd.findings, "undecided": sorted(rnd.undecided),
        "gaming_day": ctx.gaming_day(day_ts), "round_use": round_use, "pack_use": pack_use,
    }
