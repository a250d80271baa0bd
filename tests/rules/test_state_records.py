"""The typed state keeps what the dicts kept, when they kept it (found by a second reading of issue 39).

* a finished pack's card sequence carries the game and use of the moment it finished, even when the
  batch drains it at the end of a night on which the table changed game;
* a replay read from a caller's state shares nothing with it (the held events' rows included);
* a round or pack begun under one game gets the new game's own record when the table changes game
  (another plug-in's record is no use to it; stud's used to be ``{}`` and was replaced).
"""
from __future__ import annotations

import msgspec

from pitwatch.engine.driver import TableDriver
from pitwatch.rules.state import STATE_VERSION
from pitwatch.rules.table import TableReplay
from pitwatch.rules.three_bet_poker import ThreeBetRound
from tests.rules.stream import Baccarat, Floor


def test_a_pack_sequence_keeps_the_game_of_when_the_pack_finished():
    b = Baccarat()
    b.prepare("P-1")
    for _ in range(3):
        b.coup()
    b.empty()
    b.dealer("table_closed")
    b.dealer("table_opened", game="three_bet_poker", decks=1)
    driver = TableDriver(b.table_id, None)
    driver.feed_all(b.events)                           # the batch: rows taken at the end only
    sequences = driver.take_rows().sequences
    assert [(s["pack_id"], s["game"], s["pack_use"], s["source"]) for s in sequences] == [
        ("P-1", "baccarat", 1, "shoe")]
    assert sequences[0]["cards"][0][:2] == [1, b.events[[e.type for e in b.events].index("card_drawn")].card]


def test_a_replay_read_from_a_callers_state_shares_nothing_with_it():
    f = Floor()
    f.shuffler("shuffle_completed", pack_id="P-1", decks=8, card_count=415, missing=["As"], extra=[])
    rp = TableReplay(f.table_id)
    for ev in f.events:
        rp.feed(ev)                     # held: the game is not known yet
    state = rp.state()
    assert state["v"] == STATE_VERSION and state["early"][0]["missing"] == ["As"]
    restored = TableReplay.from_state(state)
    state["early"][0]["missing"].append("Kd")           # the caller goes on with its dict
    restored.feed(f.dealer("table_opened", game="baccarat", decks=8))
    report = restored.open_packs()[0].shuffler
    assert report is not None and report.missing == ["As"]


def test_a_round_begun_under_stud_gets_the_new_games_record_when_the_table_changes_game():
    f = Floor()
    f.dealer("table_opened", game="stud", decks=1)
    f.dealer("bets_closed", round_id="R-1")             # stud keeps no record for it: the hand never began
    f.dealer("table_opened", game="three_bet_poker", decks=1)
    f.dealer("bets_closed", round_id="R-1")
    f.dealer("round_ended", round_id="R-1")
    rp = TableReplay(f.table_id)
    for ev in f.events[:3]:
        rp.feed(ev)
    assert isinstance(rp.round("R-1").game_state, ThreeBetRound)
    for ev in f.events[3:]:
        rp.feed(ev)
    rp.close()
    assert [r["round_id"] for r in rp.drain_rounds()] == ["R-1"]


def test_a_version_2_state_holding_undrained_pack_sequences_keeps_them():
    """Every saver takes the rows before saving, but a version 2 state with sequences left still reads:
    the same records (version 3 writes them with the same keys)."""
    from tests.pipelines.test_states_saved_by_main import _saved

    state = dict(_saved("555ec7e")["states"]["BAC-01"])
    seq = {"table_id": "BAC-01", "pack_id": "P-X", "pack_use": 1, "game": "baccarat", "first_ts": 1,
           "source": "shoe", "cards": [[1, "As", "E-1", 1, "SHOE-1", 0], [2, None, "E-2", 2]]}
    state["out_seqs"] = [seq]
    rp = TableReplay.from_state(state)
    assert rp.drain_pack_sequences() == [{**seq, "cards": [[1, "As", "E-1", 1, "SHOE-1", 0],
                                                            [2, None, "E-2", 2, None, None]]}]
    assert msgspec.json.decode(rp.state_json())["out_seqs"] == []
