"""Every injectable fault shows in the streams and is listed in the truth with the right rule and key."""
from __future__ import annotations

import collections

import pytest

from pitwatch.simulator.faults import FAULT_NAMES, REGISTRY, SPECS

# the findings a fault may imply besides its own rule (see the module docstrings)
ALSO = {"VOID_NOT_DECLARED": {"MISDEAL"}, "STUB_EXPOSED": {"UNACCOUNTED_CARD"}, "SIX_CARD_RULE": {"PAYOUT"}}
PACK_KEYED = {"UNSHUFFLED_PACK", "PACK_COMPOSITION", "UNSHUFFLED_SEQUENCE", "CUT_OFFER", "CUT_PLACEMENT",
              "CUT_CARD_PLACEMENT", "CUT_CARD_MISMATCH", "RIFFLE_SKIPPED", "BURN_COUNT", "LAST_COUP_NOT_ANNOUNCED",
              "COUPS_AFTER_CUT_CARD", "SHOE_SILENT"}
LONG = {"LAST_COUP_NOT_ANNOUNCED", "COUPS_AFTER_CUT_CARD", "CUT_CARD_MISMATCH", "SHORT_DECK_PROCEDURE"}


def floor_for(factory, name):
    games = {g: 1 for g in SPECS[name].games}
    if name == "SHORT_DECK_PROCEDURE":
        games = {g: 2 for g in games}
    return factory(name, games, hours=2.5 if name in LONG else 1.5)


@pytest.mark.parametrize("name", FAULT_NAMES)
def test_fault_is_listed_in_truth_with_its_rule_and_key(fault_floor_factory, name):
    floor = floor_for(fault_floor_factory, name)
    assert floor.rejects == []
    truth = floor.truth
    assert truth, f"{name} was never injected"
    assert {t["fault"].split("/")[0] for t in truth} == {name}
    rules = {t["rule_id"] for t in truth}
    assert name in rules and rules <= {name} | ALSO.get(name, set())
    games = {t["game"] for t in truth}
    assert games == set(REGISTRY[name]), f"{name} not injected in {set(REGISTRY[name]) - games}"
    rounds = {(e.table_id, e.round_id) for e in floor.events if e.type == "round_started"}
    packs = {(e.table_id, e.pack_id) for e in floor.events if e.pack_id}
    for t in truth:
        rule, table = t["rule_id"], t["table_id"]
        if rule in ("SEQ_GAP", "UNKNOWN_DEVICE"):
            assert t["device_id"] and t["pack_id"] is None and t["round_id"] is None
        elif rule in PACK_KEYED or (rule == "BURN_SKIPPED" and t["game"] == "baccarat"):
            assert (table, t["pack_id"]) in packs and t["round_id"] is None, t
        elif rule == "SHOE_CARD_MISMATCH":
            assert (table, t["round_id"]) in rounds and (table, t["pack_id"]) in packs
        else:
            assert (table, t["round_id"]) in rounds and t["pack_id"] is None, t
        if rule == "PAYOUT":
            assert any(e.type == "payout" and e.round_id == t["round_id"] and e.seat == t["seat"]
                       and e.spot == t["spot"] for e in floor.events) or t["fault"].startswith("SIX_CARD_RULE")
        else:
            assert t["seat"] is None and t["spot"] is None
    groups = collections.Counter(t["fault_id"] for t in truth)
    assert max(groups.values()) <= 2


def _pack_events(floor, table, pack_id):
    return [e for e in floor.table(table) if e.pack_id == pack_id]


def _stub_exposed(floor, t) -> bool:
    """The stub went to the rack exposed, or the shoe drew more of the round's pack than was dealt."""
    pid = next(e.pack_id for e in floor.dealer(t["table_id"]) if e.type == "round_started" and e.round_id == t["round_id"])
    evs = _pack_events(floor, t["table_id"], pid)
    if t["fault"].endswith("stub_shown"):
        return any(e.type == "stub_discarded" and e.exposed for e in evs)
    return sum(e.type == "card_drawn" for e in evs) > sum(e.type == "card_dealt" for e in evs)


EVIDENCE = {
    "UNSHUFFLED_PACK": lambda f, t: not any(e.type in ("shuffle", "shuffle_completed")
                                            for e in _pack_events(f, t["table_id"], t["pack_id"])),
    "PACK_COMPOSITION": lambda f, t: any(e.type == "shuffle_completed" and (e.missing or e.extra)
                                         for e in _pack_events(f, t["table_id"], t["pack_id"])),
    "CUT_PLACEMENT": lambda f, t: any(e.type == "cut" and not 52 <= e.position <= e.stack_size - 52
                                      for e in _pack_events(f, t["table_id"], t["pack_id"])),
    "CUT_CARD_PLACEMENT": lambda f, t: any(e.type == "cut_card_inserted" and e.from_back < 20
                                           for e in _pack_events(f, t["table_id"], t["pack_id"])),
    "CUT_CARD_MISMATCH": lambda f, t: (lambda evs: next(e.stack_size - e.from_back for e in evs if e.type == "cut_card_inserted")
                                       != next(e.index for e in evs if e.type == "cut_card_drawn"))(
        _pack_events(f, t["table_id"], t["pack_id"])),
    "RIFFLE_SKIPPED": lambda f, t: (lambda evs: any(e.type == "riffle_requested" for e in evs)
                                    and not any(e.type == "shuffle" and e.method == "riffle" for e in evs))(
        _pack_events(f, t["table_id"], t["pack_id"])),
    "LAST_COUP_NOT_ANNOUNCED": lambda f, t: not any(e.type == "last_coup_announced"
                                                    for e in _pack_events(f, t["table_id"], t["pack_id"])),
    "STUB_EXPOSED": lambda f, t: _stub_exposed(f, t),
    # the terminal dealt the pack, the shoe wrote nothing of it
    "SHOE_SILENT": lambda f, t: (lambda evs: any(e.type == "card_dealt" for e in evs)
                                 and not any(e.source == "shoe" for e in evs))(
        _pack_events(f, t["table_id"], t["pack_id"])),
    "UNKNOWN_DEVICE": lambda f, t: _unknown_device(f, t),
}


def _unknown_device(floor, t) -> bool:
    """The rogue device wrote a pack's shuffler report for the table, and OUT/devices.csv does not list it."""
    from pitwatch.inputs.devices import load_registry

    listed = {r[0] for r in load_registry(str(floor.out / "devices.csv")).rows}
    wrote = [e for e in floor.table(t["table_id"]) if e.device_id == t["device_id"]]
    return t["device_id"] not in listed and bool(wrote) and all(e.type == "shuffle_completed" for e in wrote)


def test_the_registry_lists_every_device_of_a_clean_floor(clean_floor):
    from pitwatch.inputs.devices import load_registry

    reg = load_registry(str(clean_floor.out / "devices.csv"))
    for e in clean_floor.events:
        assert any(r[0] == e.device_id and r[1] == e.source and r[2] in (e.table_id, "*") for r in reg.rows), e
    assert {r[2] for r in reg.rows if r[2] == "*"} == {"*"}                 # the back-room baccarat shuffler
    assert all(r[1] == "shuffler" for r in reg.rows if r[2] == "*")


@pytest.mark.parametrize("name", sorted(EVIDENCE))
def test_fault_shows_in_the_event_streams(fault_floor_factory, name):
    floor = floor_for(fault_floor_factory, name)
    for t in floor.truth:
        if t["rule_id"] == name:
            assert EVIDENCE[name](floor, t), t


def test_seq_gaps_in_the_files_are_exactly_the_truth(fault_floor_factory):
    floor = floor_for(fault_floor_factory, "SEQ_GAP")
    gaps = collections.Counter()
    for device, evs in floor.by_device().items():
        gaps[device] += sum(1 for a, b in zip(evs, evs[1:]) if b.seq != a.seq + 1)
    truth = collections.Counter(t["device_id"] for t in floor.truth)
    assert +gaps == truth


def test_burn_skipped_leaves_no_burn(fault_floor_factory):
    floor = floor_for(fault_floor_factory, "BURN_SKIPPED")
    for t in floor.truth:
        if t["game"] == "baccarat":
            evs = _pack_events(floor, t["table_id"], t["pack_id"])
            assert not any(e.type == "card_dealt" and e.target == "burn" for e in evs)
        else:
            first = next(e for e in floor.dealer(t["table_id"]) if e.type == "card_dealt" and e.round_id == t["round_id"])
            assert first.target != "burn"


def test_cards_before_bets_closed(fault_floor_factory):
    floor = floor_for(fault_floor_factory, "CARDS_BEFORE_BETS_CLOSED")
    for t in floor.truth:
        evs = [e for e in floor.dealer(t["table_id"]) if e.round_id == t["round_id"]]
        types = [e.type for e in evs]
        assert "bets_closed" not in types or types.index("bets_closed") > types.index("card_dealt")


def test_a_clean_floor_has_an_empty_truth(clean_floor):
    assert clean_floor.truth == [] and clean_floor.summary.findings == 0
