"""rules.md "Feed health (version 2)": SHOE_SILENT and UNKNOWN_DEVICE, raised and not raised
(rules/feed_health.py), whatever the order the devices' events arrive in."""
from __future__ import annotations

import datetime as _dt
import json

import pytest

from pitwatch.rules.reference import TableReference
from pitwatch.rules.state import STATE_VERSION
from pitwatch.rules.table import TableReplay
from tests.rules.stream import Baccarat, rule_ids

DAY = _dt.date(2026, 11, 28)          # the gaming day of tests.rules.stream.T0
FULL = (("DT-1", "dealer", "BAC-T", None, None), ("SHOE-1", "shoe", "BAC-T", None, None),
        ("SHF-1", "shuffler", "BAC-T", None, None))


def replay(events, devices=None, state=None):
    ref = TableReference(devices=devices)
    rp = TableReplay.from_state(state, reference=ref) if state else TableReplay("BAC-T", reference=ref)
    out = []
    for ev in events:
        out += rp.feed(ev)
    return out + rp.close(), rp


def by_device_first(events, first: str):
    """The same events with ``first``'s stream fed first (each device's order kept)."""
    return [e for e in events if e.source == first] + [e for e in events if e.source != first]


def two_packs(silent_second: bool = True):
    """A table dealing two packs; the shoe reads the first and, if ``silent_second``, goes quiet for the second."""
    b = Baccarat()
    b.prepare("P-1")
    for _ in range(3):
        b.coup()
    b.empty()
    mark = len(b.events)
    b.prepare("P-2")
    for _ in range(3):
        b.coup()
    b.empty()
    events = b.events
    if silent_second:
        events = events[:mark] + [e for e in events[mark:] if e.source != "shoe"]
    return b, events


# --- SHOE_SILENT -------------------------------------------------------------------------------

def test_shoe_silent_a_shoe_that_goes_quiet_half_way_through_the_day():
    _b, events = two_packs()
    found, _ = replay(events)
    assert rule_ids(found) == ["SHOE_SILENT"]
    f = found[0]
    assert (f.pack_id, f.severity, f.game, f.round_id) == ("P-2", "major", "baccarat", None)
    assert "no shoe drew any" in f.actual and len(f.event_ids) == 2


def test_shoe_silent_does_not_depend_on_the_order_the_streams_arrive_in():
    _b, events = two_packs()
    ids = [f.finding_id for f in replay(events)[0]]
    for first in ("shoe", "dealer", "shuffler"):
        assert [f.finding_id for f in replay(by_device_first(events, first))[0]] == ids


def test_a_clean_day_raises_neither_rule():
    _b, events = two_packs(silent_second=False)
    assert replay(events)[0] == []
    assert replay(events, devices=FULL)[0] == []


def test_shoe_silent_not_raised_on_a_table_that_never_had_a_shoe_and_no_registry():
    _b, events = two_packs()
    no_shoe = [e for e in events if e.source != "shoe"]
    assert replay(no_shoe)[0] == []


def test_shoe_silent_not_raised_when_the_shoe_first_wrote_after_the_pack_began():
    b = Baccarat()
    b.prepare("P-1")
    b.coup()
    b.empty()
    b.prepare("P-2")
    b.coup()
    b.empty()
    first_p1_card = next(e for e in b.events if e.type == "card_dealt")
    p2 = next(i for i, e in enumerate(b.events) if e.pack_id == "P-2")
    # the shoe is plugged in after P-1 was dealt: its first event (of P-2) is later than P-1's cards
    events = [e for e in b.events[:p2] if e.source != "shoe"] + b.events[p2:]
    assert min(e.ts for e in events if e.source == "shoe") > first_p1_card.ts
    assert rule_ids(replay(events)[0]) == []


def test_shoe_silent_with_a_registry_listing_a_shoe_that_never_wrote():
    _b, events = two_packs()
    no_shoe = [e for e in events if e.source != "shoe"]
    listed = (("DT-1", "dealer", "BAC-T", None, None), ("SHOE-1", "shoe", "BAC-T", DAY, DAY),
              ("SHF-1", "shuffler", "*", None, None))
    found, _ = replay(no_shoe, devices=listed)
    assert rule_ids(found) == ["SHOE_SILENT", "SHOE_SILENT"]
    assert sorted(f.pack_id for f in found) == ["P-1", "P-2"]
    assert all("the registry lists shoe SHOE-1 for BAC-T on gaming day 2026-11-28" in f.expected for f in found)


def test_shoe_silent_with_a_registry_whose_shoe_is_listed_on_other_days_only():
    _b, events = two_packs()
    no_shoe = [e for e in events if e.source != "shoe"]
    later = (("DT-1", "dealer", "BAC-T", None, None), ("SHOE-1", "shoe", "BAC-T", DAY + _dt.timedelta(days=1), None),
             ("SHF-1", "shuffler", "BAC-T", None, None))
    assert replay(no_shoe, devices=later)[0] == []


def test_shoe_silent_not_raised_for_a_shoeless_stud_like_table():
    _b, events = two_packs()
    ref = TableReference(shoe=False)
    rp = TableReplay("BAC-T", reference=ref)
    out = [f for e in events for f in rp.feed(e)] + rp.close()
    assert "SHOE_SILENT" not in rule_ids(out)


def test_shoe_silent_the_earlier_shoe_comes_from_the_state_carried_from_the_night_before():
    b, events = two_packs()
    cut = next(i for i, e in enumerate(events) if e.pack_id == "P-2")
    night_1, night_2 = events[:cut], events[cut:]
    rp = TableReplay("BAC-T")
    first = [f for e in night_1 for f in rp.feed(e)]
    state = json.loads(rp.state_json())
    assert state["v"] == STATE_VERSION and state["feed"]["shoe_ts"] is not None
    second, _ = replay(night_2, state=state)
    whole, _ = replay(events)
    assert [f.finding_id for f in first + second] == [f.finding_id for f in whole]
    assert rule_ids(second) == ["SHOE_SILENT"]
    # without the carried state the second night alone has no shoe: nothing says one was expected
    assert "SHOE_SILENT" not in rule_ids(replay(night_2)[0])


def test_shoe_silent_a_damaged_feed_record_in_a_state_is_refused():
    """A state whose feed-health record is not one (a hand-edited or damaged checkpoint) is refused
    with the field named, never half-loaded."""
    _b, events = two_packs()
    rp = TableReplay("BAC-T")
    for e in events[:20]:
        rp.feed(e)
    state = rp.state()
    state["feed"]["shoe_ts"] = "yesterday"
    with pytest.raises(ValueError, match=r"feed\.shoe_ts"):
        replay(events[20:], state=state)


# --- UNKNOWN_DEVICE --------------------------------------------------------------------------

def test_unknown_device_a_shoe_missing_from_the_registry_one_finding_and_still_replayed():
    b, events = two_packs(silent_second=False)
    i = next(i for i, e in enumerate(events) if e.type == "card_dealt" and e.round_id == "R-2")
    events[i] = events[i]._replace(card="Ks" if events[i].card != "Ks" else "Kh")   # a switched card
    found, _ = replay(events, devices=FULL[:1] + FULL[2:])
    assert rule_ids(found) == ["SHOE_CARD_MISMATCH", "UNKNOWN_DEVICE"]      # its events are still replayed
    f = next(f for f in found if f.rule_id == "UNKNOWN_DEVICE")
    first_shoe = next(e for e in events if e.source == "shoe")
    assert (f.device_id, f.severity, f.event_ids, f.game, f.pack_id) == (
        "SHOE-1", "critical", (first_shoe.event_id,), "baccarat", None)
    assert "does not list it" in f.actual


def test_unknown_device_not_raised_without_a_registry():
    b, events = two_packs(silent_second=False)
    assert replay(events, devices=None)[0] == []


def test_unknown_device_a_backroom_shuffler_listed_for_any_table():
    _b, events = two_packs(silent_second=False)
    star = FULL[:2] + (("SHF-1", "shuffler", "*", None, None),)
    assert replay(events, devices=star)[0] == []


def test_unknown_device_a_shuffler_listed_for_another_table_only():
    _b, events = two_packs(silent_second=False)
    # the engine gets the rows of its own table and "*": a row for BAC-X never reaches BAC-T
    found, _ = replay(events, devices=FULL[:2])
    assert rule_ids(found) == ["UNKNOWN_DEVICE"] and found[0].device_id == "SHF-1"


@pytest.mark.parametrize("first, last, raised", [
    (None, None, False), (DAY, DAY, False), (None, DAY - _dt.timedelta(days=1), True),
    (DAY + _dt.timedelta(days=1), None, True), (DAY - _dt.timedelta(days=3), DAY, False)])
def test_unknown_device_day_ranges_are_inclusive_and_open_when_empty(first, last, raised):
    _b, events = two_packs(silent_second=False)
    rows = FULL[:1] + (("SHOE-1", "shoe", "BAC-T", first, last),) + FULL[2:]
    found = replay(events, devices=rows)[0]
    assert rule_ids(found) == (["UNKNOWN_DEVICE"] if raised else [])


def test_unknown_device_listed_under_another_source():
    _b, events = two_packs(silent_second=False)
    rows = FULL[:1] + (("SHOE-1", "shuffler", "BAC-T", None, None),) + FULL[2:]
    found = replay(events, devices=rows)[0]
    assert rule_ids(found) == ["UNKNOWN_DEVICE"] and "only as shuffler" in found[0].actual


def test_unknown_device_the_same_finding_whatever_arrives_first():
    _b, events = two_packs(silent_second=False)
    rows = FULL[:2]      # SHF-1 unknown; its first event comes before the game is known if fed first
    ids = {f.finding_id: f for f in replay(events, devices=rows)[0]}
    for first in ("shuffler", "shoe"):
        again = {f.finding_id: f for f in replay(by_device_first(events, first), devices=rows)[0]}
        assert again == ids
    assert [f.game for f in ids.values()] == ["baccarat"]


def test_unknown_device_reported_once_across_nights():
    _b, events = two_packs(silent_second=False)
    rows = FULL[:2]
    cut = next(i for i, e in enumerate(events) if e.pack_id == "P-2")
    rp = TableReplay("BAC-T", reference=TableReference(devices=rows))
    first = [f for e in events[:cut] for f in rp.feed(e)]
    second, _ = replay(events[cut:], devices=rows, state=json.loads(rp.state_json()))
    assert rule_ids(first) == ["UNKNOWN_DEVICE"] and second == []
