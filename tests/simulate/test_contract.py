"""What the devices write follows the event contract and looks like real feeds."""
from __future__ import annotations

import collections
import datetime as _dt

import orjson

from pitwatch.schemas.contract import TYPES
from pitwatch.simulator import simulate
from tests.simulate.conftest import Floor

EXAMPLE_FIELDS = {  # field sets per type in tests/data/clean-floor-2h.jsonl.gz (envelope left out)
    "shuffle_completed": {"pack_id", "decks", "card_count", "missing", "extra", "preshuffled"},
    "shoe_loaded": {"pack_id", "card_count"},
    "card_drawn": {"pack_id", "index", "card"},
    "cut_card_drawn": {"pack_id", "index"},
    "shoe_emptied": {"pack_id", "remaining"},
    "stub_discarded": {"pack_id", "exposed"},
    "stub_counted": {"pack_id", "round_id", "stub", "layout"},
    "bet_placed": {"round_id", "seat", "spot", "amount"},
    "round_started": {"pack_id", "round_id", "game"},
}


def test_every_line_of_every_game_decodes_without_reject(clean_floor):
    assert clean_floor.rejects == []
    games = {e.game for e in clean_floor.events if e.type == "table_opened"}
    assert games == {"baccarat", "three_bet_poker", "combate", "stud", "stud8", "razz"}
    assert len(clean_floor.events) == clean_floor.summary.events


def test_per_device_seq_increases_by_exactly_one_without_faults(clean_floor):
    for device, evs in clean_floor.by_device().items():
        seqs = [e.seq for e in evs]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), device


def test_per_device_timestamps_follow_seq_and_clocks_disagree_by_at_most_two_seconds(clean_floor):
    by_dev = clean_floor.by_device()
    for evs in by_dev.values():
        ts = [e.ts for e in evs]
        assert ts == sorted(ts)
    # a shoe card is drawn just before the terminal records it: the gap is the skew plus a second at most
    for table in clean_floor.tables("baccarat"):
        drawn = [e for e in clean_floor.table(table, "shoe") if e.type == "card_drawn"]
        dealt = [e for e in clean_floor.dealer(table) if e.type == "card_dealt"]
        assert len(drawn) == len(dealt)
        diffs = [(d.ts - s.ts) / 1e6 for s, d in zip(drawn, dealt)]
        assert -2.0 <= min(diffs) and max(diffs) <= 3.5


def test_one_file_per_device_per_gaming_day_split_at_six(tmp_path):
    start = _dt.datetime(2026, 11, 29, 3, 0, tzinfo=_dt.timezone.utc)
    simulate(tmp_path, tables={"three_bet_poker": 1}, hours=5, start=start, seed=3)
    floor = Floor(tmp_path, None)
    days = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert days == ["2026-11-28", "2026-11-29"]
    for path in tmp_path.glob("*/*.jsonl"):
        lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
        assert {x["device_id"] for x in lines} == {path.stem}
    for e in floor.events:
        local = (e.ts_datetime - _dt.timedelta(hours=6)).date()
        assert str(e.gaming_day) == str(local)


def test_field_sets_per_type_mimic_the_example(clean_floor):
    seen = collections.defaultdict(set)
    for path in clean_floor.out.glob("*/*.jsonl"):
        for raw in path.read_bytes().splitlines():
            obj = orjson.loads(raw)
            seen[obj["type"]].add(frozenset(obj) - {"event_id", "ts", "source", "type", "table_id", "device_id",
                                                    "seq", "dealer_id"})
    for typ, fields in EXAMPLE_FIELDS.items():
        assert frozenset(fields) in seen[typ], typ
        optional = {"bet_placed": {frozenset(fields | {"all_in"})},  # an all-in ante
                    "round_started": {frozenset(fields | {"small_bet", "big_bet"})}}.get(typ, set())  # stud
        assert seen[typ] <= {frozenset(fields)} | optional, typ
    assert set(seen) <= set(TYPES)
    burns = [e for e in clean_floor.events if e.type == "card_dealt" and e.target == "burn"]
    assert {e.round_id is None for e in burns if e.table_id.startswith("BAC")} == {True}
    assert {e.street is not None for e in burns if e.table_id.startswith(("STU", "ST8", "RAZ"))} == {True}


def test_shared_shuffler_has_one_seq_across_its_tables(clean_floor):
    shufflers = collections.defaultdict(set)
    for e in clean_floor.events:
        if e.source == "shuffler":
            shufflers[e.device_id].add(e.table_id)
    shared = [d for d, tables in shufflers.items() if len(tables) > 1]
    assert shared, "the default floor has shared shufflers"
    by_dev = clean_floor.by_device()
    for d in shared:
        seqs = [e.seq for e in by_dev[d]]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
