"""The faults of combate (registered in :data:`pitwatch.simulator.faults.REGISTRY`).

Each function arms a fault on the pack or round being prepared; the game module
plays it out and records the findings (see its docstring for the readings).
"""
from __future__ import annotations

from pitwatch.simulator.combate import Combate, Round
from pitwatch.simulator.faults import injects


def _key(r: Round) -> dict:
    return {"round_id": r.rid}


@injects("CARDS_BEFORE_BETS_CLOSED", "combate")
def _bets_closed(table: Combate, r: Round) -> bool:
    r.closed = "late" if table.faults.rng.random() < 0.5 else "missing"
    table.faults.fire("CARDS_BEFORE_BETS_CLOSED", r.closed, [("CARDS_BEFORE_BETS_CLOSED", _key(r))])
    return True


@injects("DEAL_ORDER", "combate")
def _deal_order(table: Combate, r: Round) -> bool:
    r.dealer_first = True
    table.faults.fire("DEAL_ORDER", "dealer_before_last_seat", [("DEAL_ORDER", _key(r))])
    return True


@injects("CARD_FACE", "combate")
def _card_face(table: Combate, r: Round) -> bool:
    r.hole_up = True
    table.faults.fire("CARD_FACE", "hole_card_up", [("CARD_FACE", _key(r))])
    return True


@injects("MISDEAL", "combate")
def _misdeal(table: Combate, r: Round) -> bool:
    r.short_last = True
    return True


@injects("PAYOUT", "combate")
def _payout(table: Combate, r: Round) -> bool:
    r.corrupt = 1 + int(table.faults.rng.random() * 3)
    return True


@injects("SETTLEMENT_ORDER", "combate")
def _settlement_order(table: Combate, r: Round) -> bool:
    if len(r.seats) < 2:
        return False
    r.swap_settle = True
    table.faults.fire("SETTLEMENT_ORDER", "combate_payouts_swapped", [("SETTLEMENT_ORDER", _key(r))])
    return True


def _target(table: Combate, r: Round, mode: str) -> bool:
    r.target = r.seats[int(table.faults.rng.random() * len(r.seats))]
    r.mode = mode
    return True


@injects("ILLEGAL_DOUBLE", "combate")
def _illegal_double(table: Combate, r: Round) -> bool:
    return _target(table, r, "illegal_double")


@injects("ILLEGAL_SPLIT", "combate")
def _illegal_split(table: Combate, r: Round) -> bool:
    return _target(table, r, "split_pair" if table.faults.rng.random() < 0.5 else "split_ace_hit")


@injects("SIX_CARD_RULE", "combate")
def _six_card(table: Combate, r: Round) -> bool:
    return _target(table, r, "six_not_paid" if table.faults.rng.random() < 0.5 else "six_collected")


@injects("DEALER_DRAWING", "combate")
def _dealer_drawing(table: Combate, r: Round) -> bool:
    r.dealer_flip = True
    return True


def _spaced(table: Combate) -> bool:
    """Card-stream faults at least 16 cards apart, so that any sound alignment resynchronises between them."""
    if table.pack is None or table.pack.pos - table.last_stream < 16:
        return False
    table.last_stream = table.pack.pos
    return True


@injects("SHOE_CARD_MISMATCH", "combate")
def _mismatch(table: Combate, r: Round) -> bool:
    if not _spaced(table):
        return False
    r.mismatch_at = int(table.faults.rng.random() * (len(r.seats) + 1))
    table.faults.fire("SHOE_CARD_MISMATCH", "switched_card",
                      [("SHOE_CARD_MISMATCH", {"pack_id": table.pid, "round_id": r.rid})])
    return True


@injects("UNACCOUNTED_CARD", "combate")
def _unaccounted(table: Combate, r: Round) -> bool:
    if not _spaced(table):
        return False
    rng = table.faults.rng
    if rng.random() < 0.5:
        r.hidden_after = int(rng.random() * (len(r.seats) + 1))
        return True
    r.unread_at = int(rng.random() * (len(r.seats) + 1))
    table.faults.fire("UNACCOUNTED_CARD", "unread_card", [("UNACCOUNTED_CARD", _key(r))])
    return True
