"""Reference data: the seeds give rules.md's defaults, and the engine uses a table's own values."""
from __future__ import annotations

import dataclasses

from pitwatch.rules.reference import DEFAULT_REFERENCE
from pitwatch.seeds import load_reference
from tests.rules.stream import Baccarat, rule_ids


def test_seeds_hold_the_rules_md_defaults():
    ref = load_reference("BAC-01")
    for f in ("player_pays", "banker_pays", "tie_pays", "burn_values", "cut_min_from_end",
              "cut_card_min_from_back", "payout_tolerance"):
        assert getattr(ref, f) == getattr(DEFAULT_REFERENCE, f), f
    assert ref.setting("dealer_hits_soft_17") == "false"  # other games' settings pass through


def test_a_table_paying_tie_nine_to_one():
    b = Baccarat()
    b.prepare()
    b.cards[b.pos:b.pos + 6] = ["9c", "9d", "Th", "Ts", "8c", "4d"]
    b.coup(bets=((3, "tie", 10),), payouts={(3, "tie"): ("win", 90)})
    assert rule_ids(b.replay()) == ["PAYOUT"]
    from pitwatch.rules.table import TableReplay
    rp = TableReplay(b.table_id, dataclasses.replace(DEFAULT_REFERENCE, tie_pays=9.0))
    assert [f for e in b.events for f in rp.feed(e)] + rp.close() == []
