"""The faults of baccarat (registered in :data:`pitwatch.simulator.faults.REGISTRY`).

Each function arms a fault on the pack or round being prepared; the game module
plays it out and records the findings (see its docstring for the readings).
"""
from __future__ import annotations

from pitwatch.simulator.baccarat import Baccarat, Coup
from pitwatch.simulator.faults import injects
from pitwatch.simulator.packs import PackPrep


@injects("CUT_OFFER", "baccarat")
def _cut_offer(table: Baccarat, prep: PackPrep) -> bool:
    if len(table.seated) < 2:
        return False
    variants = ["wrong_first", "wrong_cutter", "supervisor_early"]
    v = variants[int(table.faults.rng.random() * 3)]
    prep.flags["offer"] = v
    table.faults.fire("CUT_OFFER", v, [("CUT_OFFER", prep.key())])
    return True


@injects("CUT_PLACEMENT", "baccarat")
def _cut_placement(table: Baccarat, prep: PackPrep) -> bool:
    rng, n = table.faults.rng, prep.card_count
    k = 1 + int(rng.random() * 51)
    prep.flags["cut_pos"] = k if rng.random() < 0.5 else n - k
    table.faults.fire("CUT_PLACEMENT", "less_than_a_deck", [("CUT_PLACEMENT", prep.key())])
    return True


@injects("CUT_CARD_PLACEMENT", "baccarat")
def _cut_card_placement(table: Baccarat, prep: PackPrep) -> bool:
    prep.flags["from_back"] = prep.flags["from_back_recorded"] = 12 + int(table.faults.rng.random() * 8)
    table.faults.fire("CUT_CARD_PLACEMENT", "too_close_to_back", [("CUT_CARD_PLACEMENT", prep.key())])
    return True


@injects("CUT_CARD_MISMATCH", "baccarat")
def _cut_card_mismatch(table: Baccarat, prep: PackPrep) -> bool:
    rng, f = table.faults.rng, prep.flags
    k = 2 + int(rng.random() * 9)
    f["from_back_recorded"] = f["from_back"] + k if (f["from_back"] - k < 20 or rng.random() < 0.5) else f["from_back"] - k
    f["mismatch"] = True  # recorded when the shoe reports the cutting card (draw)
    return True


@injects("RIFFLE_SKIPPED", "baccarat")
def _riffle_skipped(table: Baccarat, prep: PackPrep) -> bool:
    if table.backroom is None:
        return False
    prep.flags["preshuffled"] = True
    prep.flags["riffle"] = "skip"
    table.faults.fire("RIFFLE_SKIPPED", "not_riffled", [("RIFFLE_SKIPPED", prep.key())])
    return True


@injects("BURN_SKIPPED", "baccarat")
def _burn_skipped(table: Baccarat, prep: PackPrep) -> bool:
    prep.flags["burn"] = "skip"
    table.faults.fire("BURN_SKIPPED", "no_burn", [("BURN_SKIPPED", prep.key())])
    return True


@injects("BURN_COUNT", "baccarat")
def _burn_count(table: Baccarat, prep: PackPrep) -> bool:
    v = "count_off" if table.faults.rng.random() < 0.7 else "face_down"
    prep.flags["burn"] = v
    table.faults.fire("BURN_COUNT", v, [("BURN_COUNT", prep.key())])
    return True


@injects("LAST_COUP_NOT_ANNOUNCED", "baccarat")
def _last_coup(table: Baccarat, prep: PackPrep) -> bool:
    prep.flags["end"] = "no_announce"
    return True


@injects("COUPS_AFTER_CUT_CARD", "baccarat")
def _coups_after(table: Baccarat, prep: PackPrep) -> bool:
    prep.flags["end"] = "extra_coup"
    return True


@injects("CARDS_BEFORE_BETS_CLOSED", "baccarat")
def _bets_closed(table: Baccarat, c: Coup) -> bool:
    c.closed = "late" if table.faults.rng.random() < 0.5 else "missing"
    table.faults.fire("CARDS_BEFORE_BETS_CLOSED", c.closed, [("CARDS_BEFORE_BETS_CLOSED", {"round_id": c.rid})])
    return True


@injects("DEAL_ORDER", "baccarat")
def _deal_order(table: Baccarat, c: Coup) -> bool:
    c.swap = True
    table.faults.fire("DEAL_ORDER", "banker_first", [("DEAL_ORDER", {"round_id": c.rid})])
    return True


@injects("DRAWING_RULE", "baccarat")
def _drawing_rule(table: Baccarat, c: Coup) -> bool:
    c.flip = True
    return True


@injects("PAYOUT", "baccarat")
def _payout(table: Baccarat, c: Coup) -> bool:
    c.corrupt = True
    return True


def _spaced(table: Baccarat) -> bool:
    """Card-stream faults at least 16 cards apart, so that any sound alignment resynchronises between them."""
    assert table.pack is not None       # a card-stream fault is played on the pack in the shoe
    if table.pack.pos - table.last_stream < 16:
        return False
    table.last_stream = table.pack.pos
    return True


@injects("SHOE_CARD_MISMATCH", "baccarat")
def _mismatch(table: Baccarat, c: Coup) -> bool:
    if not _spaced(table):
        return False
    c.mismatch_at = int(table.faults.rng.random() * 4)
    return True


@injects("UNACCOUNTED_CARD", "baccarat")
def _unaccounted(table: Baccarat, c: Coup) -> bool:
    if not _spaced(table):
        return False
    c.hidden_after = int(table.faults.rng.random() * 3)
    return True
