"""simulator/truth.py keys a pack or round by its id and its use (contract 2.1, issue 36): a truth line
or finding without ``pack_use`` / ``round_use`` (files and lakes from before ids were reused) is use 1."""
from __future__ import annotations

from pitwatch.simulator.truth import compare, finding_key


def _line(rule_id, game="baccarat", **kw):
    return {"rule_id": rule_id, "game": game, "table_id": "BAC-01", **kw}


def test_the_key_holds_the_use_of_each_id():
    assert finding_key(_line("BURN_COUNT", pack_id="P-BAC01-01", pack_use=2)) == (
        "BURN_COUNT", "BAC-01", "P-BAC01-01", 2)
    assert finding_key(_line("SHOE_CARD_MISMATCH", pack_id="P-BAC01-01", pack_use=3, round_id="BAC-01-0004",
                             round_use=2)) == ("SHOE_CARD_MISMATCH", "BAC-01", "P-BAC01-01", 3, "BAC-01-0004", 2)
    assert finding_key(_line("PAYOUT", round_id="BAC-01-0004", seat=3, spot="banker", round_use=2)) == (
        "PAYOUT", "BAC-01", "BAC-01-0004", 2, 3, "banker")
    assert finding_key(_line("SEQ_GAP", device_id="DT-BAC01", pack_use=None, round_use=None)) == (
        "SEQ_GAP", "BAC-01", "DT-BAC01")


def test_a_missing_or_null_use_is_use_1():
    old = _line("BURN_COUNT", pack_id="P-BAC01-01")     # a truth line or lake row from before 2.1
    assert finding_key(old) == finding_key(_line("BURN_COUNT", pack_id="P-BAC01-01", pack_use=1)) == finding_key(
        _line("BURN_COUNT", pack_id="P-BAC01-01", pack_use=None))


def test_two_uses_of_one_id_are_two_keys():
    truth = [_line("BURN_COUNT", pack_id="P-BAC01-01", pack_use=1),
             _line("BURN_COUNT", pack_id="P-BAC01-01", pack_use=2)]
    merged = [_line("BURN_COUNT", pack_id="P-BAC01-01")]           # a lake that merged the two packs
    c = compare(merged, truth)["BURN_COUNT"]
    assert not c.matches and c.missed == [("BURN_COUNT", "BAC-01", "P-BAC01-01", 2)] and c.extra == []
    assert compare([dict(t) for t in truth], truth)["BURN_COUNT"].matches
