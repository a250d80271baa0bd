"""Events identified per device (contract version 2): forged lines of an invented terminal
reusing genuine event_ids cannot make a genuine event leave the lake, nor change a card-switch finding.

Replays the attack of issue 25: three ``dealer_in`` lines from ``DT-ZZ99`` (a device that does not
exist) reusing the event_ids of the evidence of the floor's card-switch findings.  Keyed by
``event_id`` alone, each pair became a "conflict", every copy was rejected, and the shoe and terminal
events that proved the switch left the lake (2 SHOE_CARD_MISMATCH + 1 UNACCOUNTED_CARD turned into
3 UNACCOUNTED_CARD + 2 MISDEAL + 2 DEAL_ORDER).
"""
from __future__ import annotations

import pytest

from pitwatch.lake import Lake
from tests.watch import equivalence as eq
from tests.watch.scenario import FORGER, forged_dealer_in, write_batch_input

CARD_SWITCH = ("SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD")


def _lake_pairs(lake, name: str) -> set:
    from pitwatch.lake.parquet import read_table

    t = read_table(Lake.at(lake), name, ["device_id", "event_id"])
    return set(zip(t.column("device_id").to_pylist(), t.column("event_id").to_pylist()))


def _card_switch(rows: list[tuple]) -> list[tuple]:
    return [r for r in rows if dict(r)["rule_id"] in CARD_SWITCH]


@pytest.mark.slow
def test_forged_dealer_in_lines_reusing_genuine_ids_leave_every_genuine_event_and_card_switch_finding(
        scenario, tmp_path):
    clean = eq.batch([_written(scenario, tmp_path / "clean")], tmp_path / "clean-lake")
    switches = _card_switch(clean["findings"])
    assert sorted(dict(r)["rule_id"] for r in switches) == ["SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD"]
    # the genuine events the forger aims at: the evidence of the card-switch findings (3 of them)
    aimed = sorted({(e["device_id"], e["event_id"]) for r in switches
                    for e in (dict(x) for x in dict(r)["evidence"])})[:3]
    assert len(aimed) == 3
    table_id = dict(switches[0])["table_id"]
    forged = {**scenario, FORGER: forged_dealer_in(scenario, aimed, table_id)}

    attacked = eq.batch([_written(forged, tmp_path / "forged")], tmp_path / "forged-lake")
    genuine = _lake_pairs(tmp_path / "clean-lake", "events")
    kept = _lake_pairs(tmp_path / "forged-lake", "events")
    assert genuine <= kept                                     # no genuine event left the lake
    assert kept - genuine == {(FORGER, eid) for _dev, eid in aimed}   # the forged lines are events of their own
    assert not _lake_pairs(tmp_path / "forged-lake", "rejects") & genuine
    assert _card_switch(attacked["findings"]) == switches      # every column, finding_id included

    eq.write_device_files(forged, tmp_path / "forged-live")      # and live, line by line
    live = eq.live([tmp_path / "forged-live"], tmp_path / "live-state")
    assert _card_switch(live["findings"]) == switches


def _written(devices, folder):
    write_batch_input(devices, folder)
    return folder
