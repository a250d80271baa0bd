"""Rules every game shares (rules.md "Every game"): pack and card integrity, raised and not raised."""
from __future__ import annotations

from pitwatch.rules.repeated_runs import PackCards, one_per_key, repeated_runs
from pitwatch.rules.sequence import SeqTracker
from pitwatch.rules.state import PackCard
from pitwatch.schemas.decode import Reject
from tests.rules.stream import Baccarat, new_deck_pack, rule_ids


def test_integrity_shoe_card_mismatch_at_an_aligned_place():
    b = Baccarat()
    b.prepare()
    b.coup()
    b.coup()
    i, card = next((i, e) for i, e in enumerate(b.events) if e.type == "card_dealt" and e.round_id == "R-2")
    b.events[i] = card._replace(card="Ks" if card.card != "Ks" else "Kh")
    f = [x for x in b.replay() if x.rule_id == "SHOE_CARD_MISMATCH"]
    assert len(f) == 1 and (f[0].round_id, f[0].pack_id) == ("R-2", "P-1")
    assert len(f[0].event_ids) == 2


def test_integrity_unaccounted_shoe_card_resynchronises():
    b = Baccarat()
    b.prepare()
    b.coup()
    b.draw()  # drawn by the shoe, never recorded by the terminal
    b.coup()
    b.coup()
    f = b.replay()
    assert rule_ids(f) == ["UNACCOUNTED_CARD"]  # one lost card, no cascade of mismatches
    assert f[0].round_id == "R-1"  # the round of the terminal card just before it


def test_integrity_terminal_card_never_drawn_by_the_shoe():
    b = Baccarat()
    b.prepare()
    b.coup()
    b.shoe_misses = 1  # the next card reaches the layout without the shoe reading it
    b.coup()
    b.coup()
    f = b.replay()
    assert rule_ids(f) == ["UNACCOUNTED_CARD"] and f[0].round_id == "R-2"


def test_integrity_no_unaccounted_card_without_a_shoe_stream():
    b = Baccarat()
    b.prepare()
    b.coup()
    events = [e for e in b.events if e.source != "shoe"]
    assert b.replay(events) == []


def test_000_E_pack_composition_shuffler_found_missing_cards():
    b = Baccarat()
    b.shuffle(missing=["As"], card_count=415)
    b.cut()
    b.load(415)
    b.burn()
    b.coup()
    f = b.replay()
    assert rule_ids(f) == ["PACK_COMPOSITION"] and f[0].event_ids == ("sh-1",)


def test_000_E_pack_composition_shoe_count_against_decks():
    b = Baccarat()
    b.shuffle()
    b.cut()
    b.load(417)
    b.burn()
    b.coup()
    assert rule_ids(b.replay()) == ["PACK_COMPOSITION"]
    never_played = Baccarat()
    never_played.shuffle(missing=["As"], card_count=415)
    assert never_played.replay() == []


def test_003_4_1_unshuffled_sequence_eight_cards_in_new_deck_order():
    b = new_deck_pack(["2h", "3h", "4h", "5h", "6h", "7h", "8h", "9h"])
    assert "UNSHUFFLED_SEQUENCE" in rule_ids(b.replay())
    down = new_deck_pack(["Ks", "Qs", "Js", "Ts", "9s", "8s", "7s", "6s"])
    assert "UNSHUFFLED_SEQUENCE" in rule_ids(down.replay())
    seven = new_deck_pack(["2h", "3h", "4h", "5h", "6h", "7h", "8h", "Kc"])
    assert "UNSHUFFLED_SEQUENCE" not in rule_ids(seven.replay())
    wrapped = new_deck_pack(["Jd", "Qd", "Kd", "Ad", "2d", "3d", "4d", "5d"])
    assert "UNSHUFFLED_SEQUENCE" not in rule_ids(wrapped.replay())


def test_003_4_1_unshuffled_sequence_found_on_the_terminal_without_a_shoe():
    b = new_deck_pack(["2h", "3h", "4h", "5h", "6h", "7h", "8h", "9h"])
    f = b.replay([e for e in b.events if e.source != "shoe"])
    assert "UNSHUFFLED_SEQUENCE" in rule_ids(f)


def _pack(table, pack, cards, t0):
    return PackCards(table, pack, "baccarat", t0,
                     tuple(PackCard(i + 1, c, f"{table}-{pack}-{i}", t0 + i) for i, c in enumerate(cards)))


def test_000_A_repeated_ten_card_run_across_packs_and_tables():
    run = ["As", "7d", "Kc", "2h", "9s", "Td", "3c", "3h", "Qs", "6d"]
    early = _pack("BAC-1", "P-1", ["5c"] + run + ["4h"], 1_000)
    late = _pack("BAC-2", "P-9", ["8c", "8d"] + run, 5_000)
    f = repeated_runs([late, early])
    assert len(f) == 1 and (f[0].table_id, f[0].pack_id) == ("BAC-2", "P-9")
    assert repeated_runs([early, late]) == f  # input order does not matter
    nine = _pack("BAC-2", "P-9", run[:9] + ["Kd"], 5_000)
    assert repeated_runs([early, nine]) == []
    broken = _pack("BAC-2", "P-9", run[:5] + [None] + run[6:], 5_000)
    assert repeated_runs([early, broken]) == []
    assert len(one_per_key(f + f)) == 1


def test_contract_seq_gap_one_finding_per_gap():
    t = SeqTracker()
    out = []
    for seq in (1, 2, 5, 6, 9):
        out += t.feed("SHOE-1", seq, "BAC-1", f"e{seq}", seq * 1_000_000)
    assert [f.rule_id for f in out] == ["SEQ_GAP", "SEQ_GAP"]
    assert out[0].device_id == "SHOE-1" and out[0].actual == "the next event was numbered 5: 2 events lost (number 3 to 4)"
    t2 = SeqTracker.from_state(t.state())
    assert t2.feed("SHOE-1", 10, "BAC-1", "e10", 10) == []


def test_contract_seq_gap_rejected_line_is_no_gap_and_one_seq_across_tables():
    t = SeqTracker()
    assert t.feed("DT-9", 1, "BAC-1", "a", 1) == []
    assert t.feed_reject(Reject("f", 2, "{}", "bad", device_id="DT-9", seq=2)) == []
    assert t.feed("DT-9", 3, "BAC-2", "b", 3) == []  # same device, another table: no gap
    assert len(t.feed("DT-9", 5, "BAC-2", "c", 5)) == 1


def test_000_B_cards_before_bets_closed_only_on_the_terminals_order():
    b = Baccarat()
    b.prepare()
    b.coup()
    # the shoe's draw precedes bets_closed in time (clock skew): not a finding
    i, closed = next((i, e) for i, e in enumerate(b.events) if e.type == "bets_closed")
    first_draw = next(e for e in b.events if e.type == "card_drawn" and e.seq > 6)
    b.events[i] = closed._replace(ts=first_draw.ts + 5_000_000)
    assert b.replay() == []


def test_floor_builder_is_contract_valid():
    import json

    from pitwatch.schemas.decode import GamingDayConfig, decode_line
    b = Baccarat()
    b.prepare()
    b.coup()
    for ev in b.events:
        row = {k: v for k, v in ev.to_row().items() if v is not None and k not in ("gaming_day", "file", "line")}
        row["ts"] = ev.ts_datetime.isoformat().replace("+00:00", "Z")
        assert isinstance(decode_line(json.dumps(row), "t", 1, GamingDayConfig()), tuple), row
