"""Tables without a card-reading shoe (stud, stud8, razz): rows during the feed, bounded state.

See "Tables without a shoe" in :mod:`pitwatch.rules.table`: the shoe side of every pack
counts as passed from the start, so a pack and its rounds are final once the
terminal has passed the pack; shoe events that arrive anyway are ignored.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import random
from pathlib import Path

import pytest

from pitwatch import seeds
from pitwatch.rules.reference import DEFAULT_REFERENCE
from pitwatch.rules.table import TableReplay
from pitwatch.schemas.events import Event
from tests.rules.games.test_004_hand import eight_handed
from tests.rules.stream import Baccarat

WITH_SHOE = dataclasses.replace(DEFAULT_REFERENCE, shoe=True)  # today's engine: waits for a shoe


def _ev(source: str, n: int, ts: int, type_: str, table_id: str, **fields) -> Event:
    dev = {"dealer": "DT-1", "shoe": "SHOE-1", "shuffler": "SHF-1"}[source]
    return Event(event_id=f"{source[:2]}-{n:05d}", ts=ts, source=source, type=type_, table_id=table_id,
                 device_id=dev, seq=n, dealer_id="D-1" if source == "dealer" else None, **fields)


def stud_night(rounds: int, game: str = "stud", table_id: str = "STU-T", shoe: bool = False,
               run_in: int | None = None, shuffle: str = "machine") -> dict[str, list[Event]]:
    """Each device's events of ``rounds`` clean 8-handed hands, one pack each.

    ``shoe``: add a shoe stream that reads every pack wrongly (it must be ignored);
    ``run_in``: the pack of that hand starts with 8 clubs in new-deck order;
    ``shuffle``: ``machine`` (the shuffler reports each pack) or ``hand`` (the dealer shuffles by
    hand: no shuffler report).
    """
    n = {"dealer": 0, "shoe": 0, "shuffler": 0, "clock": 0}
    out = {k: [] for k in n if k != "clock"}

    def add(source, type_, **fields):
        n[source] += 1
        n["clock"] += 1_000_000
        out[source].append(_ev(source, n[source], n["clock"], type_, table_id, **fields))

    add("dealer", "table_opened", game=game, decks=1)
    add("dealer", "dealer_in")
    for s in range(1, 9):
        add("dealer", "player_seated", seat=s)
    for k in range(1, rounds + 1):
        pid, rid = f"P-{k:04d}", f"R-{k:04d}"
        if shuffle == "machine":
            add("shuffler", "shuffle_completed", pack_id=pid, decks=1, card_count=52, missing=[], extra=[],
                preshuffled=False)
        add("dealer", "shuffle", pack_id=pid, method=shuffle)
        hand, _stack, _need = eight_handed(game, folds={3: [2, 5, 7]}, seed=k)
        dealt = 0
        for ev in hand.events:
            row = ev.to_row()
            for name in ("event_id", "ts", "seq", "device_id", "dealer_id", "source", "table_id"):
                row.pop(name, None)
            row.update(pack_id=pid, round_id=rid)
            if row["type"] == "card_dealt":
                dealt += 1
                if k == run_in and dealt <= 8:
                    row["card"] = "A23456789"[dealt - 1] + "c"
            add("dealer", row.pop("type"), **row)
        if shoe:
            add("shoe", "shoe_loaded", pack_id=pid, card_count=51)
            for i in range(1, dealt + 1):
                add("shoe", "card_drawn", pack_id=pid, index=i, card="Kh")
            add("shoe", "shoe_emptied", pack_id=pid, remaining=52 - dealt)
    add("dealer", "table_closed")
    return out


def interleave(streams: dict[str, list[Event]], seed: int | None) -> list[Event]:
    """Any merge keeping each device's order (``seed`` None: by ts, as they happened)."""
    if seed is None:
        return sorted((e for evs in streams.values() for e in evs), key=lambda e: e.ts)
    rng = random.Random(seed)
    queues = [list(reversed(v)) for v in streams.values() if v]
    out = []
    while queues:
        q = rng.choice(queues)
        for _ in range(rng.choice((1, 3, 40))):
            if q:
                out.append(q.pop())
        queues = [q for q in queues if q]
    return out


def run(events, reference=None, replay=None):
    """(findings during the feed, findings at close, rows during the feed, rows at close) as sorted JSON."""
    rp = replay or TableReplay(events[0].table_id, reference)
    during, rows_during = [], []
    for ev in events:
        during += rp.feed(ev)
        rows_during += rp.drain_rounds() + rp.drain_packs() + rp.drain_pack_sequences()
    at_close = rp.close()
    rows_close = rp.drain_rounds() + rp.drain_packs() + rp.drain_pack_sequences()

    def norm(xs):
        return sorted(json.dumps(x, default=str, sort_keys=True) for x in xs)
    return (norm(f.to_row() for f in during), norm(f.to_row() for f in at_close), norm(rows_during),
            norm(rows_close))


def test_the_shoe_setting_defaults_by_game():
    ref = seeds.load_reference("STU-01")
    assert ref.shoe is None  # seeds/tables.csv: auto
    for game, shoe in (("baccarat", True), ("three_bet_poker", True), ("combate", True),
                       ("stud", False), ("stud8", False), ("razz", False), ("blackjack", True)):
        rp = TableReplay("T")
        rp.set_game(game)
        assert rp.shoeless is not shoe, game
    assert not TableReplay("T").shoeless  # game unknown: as today
    assert TableReplay("T", dataclasses.replace(ref, shoe=False)).shoeless


def test_a_seeds_row_overrides_the_game_default(monkeypatch):
    for text, want in (("false", False), ("TRUE", True), ("auto", None), ("", None)):
        monkeypatch.setattr(seeds, "settings_for", lambda _t, text=text: {"shoe": text})
        ref = seeds.load_reference("BAC-09")
        assert ref.shoe is want and "shoe" not in dict(ref.settings)
    monkeypatch.setattr(seeds, "settings_for", lambda _t: {"shoe": "maybe"})
    with pytest.raises(ValueError, match="BAC-09"):
        seeds.load_reference("BAC-09")


@pytest.mark.parametrize("game", ["stud", "stud8", "razz"])
def test_stud_rows_come_out_during_the_feed_and_equal_the_rows_at_close(game):
    events = interleave(stud_night(12, game), None)
    f_during, f_close, rows_during, rows_close = run(events)
    assert f_during == f_close == []
    assert len(rows_during) == 3 * 12 and rows_close == []  # 12 rounds, packs and pack sequences
    # today's engine (waiting for a shoe that never comes) hands the same rows out at close()
    old = run(events, WITH_SHOE)
    assert old[2] == [] and old[3] == rows_during and old[0] + old[1] == []


def test_stud_terminal_new_deck_run_is_decided_when_the_terminal_passes_the_pack():
    events = interleave(stud_night(4, run_in=2), None)
    f_during, f_close, _rows, _ = run(events)
    assert [json.loads(f)["rule_id"] for f in f_during].count("UNSHUFFLED_SEQUENCE") == 1
    old = run(events, WITH_SHOE)
    assert sorted(old[0] + old[1]) == sorted(f_during + f_close)


def test_shoe_events_on_a_stud_table_are_ignored_in_any_interleaving():
    streams = stud_night(6, shoe=True)
    assert streams["shoe"]
    plain = run(interleave({k: v for k, v in streams.items() if k != "shoe"}, None))
    early_shoe = streams["shoe"] + streams["shuffler"] + streams["dealer"]  # before the game is known
    for events in [interleave(streams, None), early_shoe] + [interleave(streams, s) for s in range(5)]:
        assert run(events) == plain


def test_stud_state_stays_bounded_over_a_long_night():
    events = interleave(stud_night(500), None)
    rp = TableReplay(events[0].table_id)
    sizes, started = {}, 0
    for ev in events:
        rp.feed(ev)
        rp.drain_rounds(), rp.drain_packs(), rp.drain_pack_sequences()
        if ev.type == "round_started":
            started += 1
            if started in (10, 300, 500):
                sizes[started] = len(rp.state_json())
                assert len(rp.open_rounds()) == 1 and len(rp.open_packs()) == 1  # the hand being dealt
    # ~2 KB for the hand being dealt, + ~1 KB once the remembered finished ids (64) are full, + ~10 KB
    # once the use counters of the last 256 ids per stream are (pitwatch.rules.uses.KEEP_USES): full by hand 300
    assert sizes[500] <= 1.05 * sizes[300] and max(sizes.values()) < 20000, sizes
    assert rp.close() == [] and rp.drain_rounds() == []  # table_closed passed the last pack


def test_a_checkpoint_from_before_the_setting_releases_its_stud_rows():
    events = interleave(stud_night(8), None)
    cut = next(k for k, e in enumerate(events) if e.round_id == "R-0006")
    old = TableReplay(events[0].table_id, WITH_SHOE)  # a state saved by the engine before `shoe`
    for ev in events[:cut]:
        old.feed(ev)
    assert old.drain_rounds() == [] and not any(p.shoe_passed for p in old.open_packs())
    resumed = TableReplay.from_state(json.loads(json.dumps(old.state())))
    resumed.feed(events[cut])
    assert len(resumed.drain_rounds()) == 5 and len(resumed.drain_packs()) == 5
    everything = run(events, WITH_SHOE)
    rest = run(events[cut:], replay=TableReplay.from_state(old.state()))
    assert sorted(rest[2] + rest[3]) == everything[3] and rest[:2] == everything[:2] == ([], [])


def test_state_json_is_the_state_as_json():
    b = Baccarat()
    b.prepare()
    for _ in range(3):
        b.coup()
    rp = TableReplay(b.table_id)
    for ev in b.events[: len(b.events) // 2]:
        rp.feed(ev)
    text = rp.state_json()
    assert json.loads(text) == rp.state() == json.loads(json.dumps(rp.state()))
    a, c = TableReplay.from_state(json.loads(text)), TableReplay.from_state(rp.state())
    rest = b.events[len(b.events) // 2:]
    assert run(rest, replay=a) == run(rest, replay=c)


@pytest.mark.parametrize("game", ["stud", "stud8", "razz"])
def test_stud_state_of_hand_1000_is_no_bigger_than_hand_100s(game):
    """Issue 30 item 6: a long live night keeps each hand's state only while it is dealt.

    Bounds the whole saved state (``state_json``), not only the rounds and packs:
    only counters' digits may grow (dealer_pos, packs_since_open, ids in the text).
    """
    events = interleave(stud_night(1000, game=game), None)
    rp = TableReplay(events[0].table_id)
    sizes, started = {}, 0
    for ev in events:
        rp.feed(ev)
        rp.drain_rounds(), rp.drain_packs(), rp.drain_pack_sequences()
        if ev.type == "round_started":
            started += 1
            if started in (300, 1000):     # by hand 300 the use counters (pitwatch.rules.uses.KEEP_USES: 256) are full
                sizes[started] = len(rp.state_json())
                assert len(rp.open_rounds()) == 1 and len(rp.open_packs()) == 1
    assert started == 1000 and sizes[1000] <= sizes[300] + 64 * 4, sizes


# --- who checks a pack's composition (issue 30 item 6: a long live night must not keep every pack) ---

CLEAN_FLOOR = Path(__file__).resolve().parents[1] / "data" / "clean-floor-2h.jsonl.gz"


def _open_packs_at_each_hand(events) -> list[int]:
    rp = TableReplay(events[0].table_id)
    out = []
    for ev in events:
        rp.feed(ev)
        rp.drain_rounds(), rp.drain_packs(), rp.drain_pack_sequences()
        if ev.type == "round_started":
            out.append(len(rp.open_packs()))
    return out


@pytest.mark.parametrize("game", ["stud", "stud8", "razz"])
def test_a_pack_shuffled_by_hand_is_final_once_the_terminal_passed_it(game):
    """events.md: only a machine shuffle is also seen by the shuffler; a pack the dealer shuffled by
    hand has no shuffler check to wait for, so it does not stay open until close()."""
    events = interleave(stud_night(40, game=game, shuffle="hand"), None)
    assert _open_packs_at_each_hand(events) == [1] * 40
    during, at_close, rows_during, rows_close = run(events)
    assert at_close == [] and rows_close == [] and len(rows_during) == 3 * 40
    for seed in range(3):            # any merge of the devices: the same findings and rows
        got = run(interleave(stud_night(40, game=game, shuffle="hand"), seed))
        assert sorted(got[0] + got[1]) == sorted(during) and sorted(got[2] + got[3]) == sorted(rows_during)


def test_a_machine_shuffled_pack_still_waits_for_the_shufflers_report():
    """Must not: a machine shuffle is the shuffler's to report (a back-room report may lag any amount):
    with no report in, the pack waits for it until close()."""
    streams = stud_night(5, shuffle="machine")
    streams["shuffler"] = []
    events = interleave(streams, None)
    assert _open_packs_at_each_hand(events) == [1, 2, 3, 4, 5]


def test_a_bad_shuffler_report_for_a_hand_shuffled_pack_is_still_a_finding():
    """Must not: a report that is in before the terminal passed the pack counts as before."""
    streams = stud_night(3, shuffle="hand")
    streams["shuffler"] = [_ev("shuffler", 1, 1, "shuffle_completed", "STU-T", pack_id="P-0002", decks=1,
                               card_count=51, missing=["Ks"], extra=[], preshuffled=False)]
    during, at_close, _rows, _rows_close = run(interleave(streams, None))
    assert [json.loads(f)["rule_id"] for f in during + at_close] == ["PACK_COMPOSITION"]
    assert json.loads(during[0])["pack_id"] == "P-0002"


def _clean_floor_table(prefix: str) -> list[Event]:
    from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line

    cfg, out = GamingDayConfig(), []
    with gzip.open(CLEAN_FLOOR, "rt") as f:
        for n, line in enumerate(f, 1):
            if f'"table_id":"{prefix}' in line:
                res = decode_line(line.rstrip("\n"), "floor", n, cfg)
                assert not isinstance(res, Reject), res
                out.append(res[0])
    return sorted(out, key=lambda e: (e.ts, e.device_id, e.seq))


@pytest.mark.parametrize("prefix", ["STU-", "ST8-", "RAZ-"])
def test_the_examples_stud_tables_keep_only_the_hand_being_dealt(prefix):
    """The simulator's night: packs shuffled by hand, by machine (reported), and stacks rebuilt by
    ``reshuffle`` (004 H: mixed at the table with the three burns, no shuffler).  At every hand's
    start only the hand's pack is open (or two: the old stack and the stack rebuilt from it)."""
    events = _clean_floor_table(prefix)
    opened = [e for e in events if e.type == "reshuffle"]
    assert opened and any(e.type == "shuffle" and e.method == "hand" for e in events)
    counts = _open_packs_at_each_hand(events)
    assert len(counts) > 10 and max(counts) <= 2, counts
    during, at_close, rows_during, rows_close = run(events)
    assert during == at_close == [] and rows_close == []
