"""Ids used again are new packs and rounds (events.md 2.1, issue 36).

A shuffler that numbers packs per day and a terminal that numbers coups per
shoe use ids again: a pack id named again after the pack it named left play
is a new pack, a round id started again after its round ended a new round.
The engine merged such a second use into the first (or dropped it as a
straggler): these tests feed a second use and compare the rows, whole, with
the same feed where every use has an id of its own.
"""
from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pitwatch.rules.migrations import MIGRATES_FROM
from pitwatch.rules.state import STATE_VERSION
from pitwatch.schemas.arrow import FINDINGS, PACKS, ROUNDS, rows_to_table
from tests.rules.stream import Baccarat, replay
from tests.rules.test_engine import _merge, faulty_shoe

USE_COLUMNS = ("pack_use", "round_use")


def renamed(events, packs: dict, rounds: dict):
    """The events with pack and round ids renamed (``{old: new}``)."""
    return [ev._replace(**{k: m[getattr(ev, k)] for k, m in (("pack_id", packs), ("round_id", rounds))
                           if getattr(ev, k) in m}) for ev in events]


def as_unique(rows, packs: dict, rounds: dict, drop=()):
    """Rows of a feed that used ids again, with each (id, use) mapped back to the unique id it
    stands for and the use columns set aside: comparable, whole, with the unique feed's rows."""
    out = []
    for r in rows:
        r = dict(r)
        if r.get("pack_id") is not None:
            r["pack_id"] = packs.get((r["pack_id"], r["pack_use"]), r["pack_id"])
        if r.get("round_id") is not None:
            r["round_id"] = rounds.get((r["round_id"], r["round_use"]), r["round_id"])
        for k in USE_COLUMNS + tuple(drop):
            r.pop(k, None)
        out.append(r)
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def finding_rows(findings):
    return [f.to_row() for f in findings]


def two_packs(second: str = "P-1", restart_rounds: bool = False, table_closed: bool = True) -> Baccarat:
    """A baccarat table dealing pack P-1 (three coups, stub taken out), then pack ``second``."""
    b = Baccarat()
    b.prepare("P-1")
    for _ in range(3):
        b.coup()
    b.empty()
    if restart_rounds:
        b.round_no = 0
    b.prepare(second)
    for _ in range(3):
        b.coup()
    b.empty()
    if table_closed:
        b.dealer("table_closed")
    return b


def test_state_version_is_3_and_reads_1_and_2():
    assert STATE_VERSION == 3 and MIGRATES_FROM == (1, 2)


def test_a_pack_id_used_again_after_its_stub_was_taken_out_is_a_new_pack():
    reused = replay(two_packs("P-1").events)
    unique = replay(two_packs("P-2").events)
    f, rounds, packs, rejects = reused
    assert rejects == []
    assert [(p["pack_id"], p["pack_use"]) for p in packs] == [("P-1", 1), ("P-1", 2)]
    assert [(r["round_id"], r["pack_id"], r["pack_use"]) for r in rounds] == [
        ("R-1", "P-1", 1), ("R-2", "P-1", 1), ("R-3", "P-1", 1), ("R-4", "P-1", 2), ("R-5", "P-1", 2),
        ("R-6", "P-1", 2)]
    back = {("P-1", 2): "P-2"}
    assert as_unique(packs, back, {}) == as_unique(unique[2], {}, {})
    assert as_unique(rounds, back, {}) == as_unique(unique[1], {}, {})
    assert as_unique(finding_rows(f), back, {}, ["finding_id"]) == as_unique(finding_rows(unique[0]), {}, {},
                                                                               ["finding_id"])
    assert all(p["findings"] == 0 for p in packs), packs


def test_each_device_of_a_second_use_goes_to_the_new_pack_in_any_interleaving():
    events = two_packs("P-1").events
    base = replay(events)
    for seed in range(25):
        assert replay(_merge(events, random.Random(seed)), checkpoint_every=[0, 13, 57][seed % 3]) == base, seed


def test_a_straggler_for_a_finished_pack_is_not_a_new_pack():
    """A late note of the terminal about the finished P-1 (while P-2 is dealt), and the shuffler's
    first report of P-1, which the terminal says it shuffled by machine, arriving after the pack
    finished: neither is a second P-1 — the note is detached, the report is of that first use (a
    machine shuffle is reported by the shuffler) and gives it what only the report knows."""
    def table() -> Baccarat:
        b = Baccarat()
        b.shuffle("P-1", shuffler=False, dealer=False)
        b.dealer("shuffle", pack_id="P-1", method="machine")
        b.cut()
        b.load()
        b.burn()
        for _ in range(3):
            b.coup()
        b.empty()
        b.prepare("P-2")
        b.coup()
        b.dealer("stub_discarded", pack_id="P-1", exposed=False)
        b.shuffler("shuffle_completed", pack_id="P-1", decks=8, card_count=416, missing=[], extra=[],
                   preshuffled=False)
        b.coup()
        b.empty()
        return b

    events = table().events
    with_straggler = replay(events)
    without = replay([e for e in events if not (e.pack_id == "P-1" and e.type in ("stub_discarded",
                                                                                 "shuffle_completed"))])
    assert [(p["pack_id"], p["pack_use"]) for p in with_straggler[2]] == [("P-1", 1), ("P-2", 1)]
    assert with_straggler[1] == without[1]
    assert [p["preshuffled"] for p in with_straggler[2]] == [False, False]
    assert [{**p, "preshuffled": None} if p["pack_id"] == "P-1" else p for p in with_straggler[2]] == without[2]
    assert [f.rule_id for f in with_straggler[0]] == [f.rule_id for f in without[0]] == []


def _hand_then_machine(second: str) -> Baccarat:
    """P-1 shuffled by hand at the table (the shuffler never sees it, events.md), dealt and taken
    out; then pack ``second`` shuffled by the machine (its report first) and dealt."""
    b = Baccarat()
    b.shuffle("P-1", shuffler=False, dealer=False)
    b.dealer("shuffle", pack_id="P-1", method="hand")
    b.cut()
    b.load()
    b.burn()
    for _ in range(3):
        b.coup()
    b.empty()
    b.prepare(second)
    for _ in range(3):
        b.coup()
    b.empty()
    b.dealer("table_closed")
    return b


def test_the_shufflers_report_of_an_id_after_a_hand_shuffled_use_is_the_next_use():
    """Issue 36's reuse matrix (razz PACK_COMPOSITION): a pack shuffled by hand is never reported
    by the shuffler, so its first report of the id after that use is of the next use, not a late
    report of the hand-shuffled one; its deck count is checked on the pack it came with."""
    reused = replay(_hand_then_machine("P-1").events)
    unique = replay(_hand_then_machine("P-2").events)
    assert [(p["pack_id"], p["pack_use"], p["shuffle_method"]) for p in reused[2]] == [
        ("P-1", 1, "hand"), ("P-1", 2, "machine")]
    back = {("P-1", 2): "P-2"}
    assert as_unique(reused[2], back, {}) == as_unique(unique[2], {}, {})
    assert as_unique(reused[1], back, {}) == as_unique(unique[1], {}, {})
    assert as_unique(finding_rows(reused[0]), back, {}, ["finding_id"]) == as_unique(
        finding_rows(unique[0]), {}, {}, ["finding_id"])


def test_a_use_shuffled_by_hand_and_by_the_machine_keeps_the_shufflers_report():
    """The terminal shuffled P-1 by hand and then by machine: the shuffler's report is of that use
    (a machine shuffle is also seen by the shuffler), even when it comes after the hand shuffle."""
    b = Baccarat()
    b.shuffle("P-1", shuffler=False, dealer=False)
    b.dealer("shuffle", pack_id="P-1", method="hand")
    b.dealer("shuffle", pack_id="P-1", method="machine")
    b.shuffler("shuffle_completed", pack_id="P-1", decks=8, card_count=416, missing=[], extra=[],
               preshuffled=False)
    b.cut()
    b.load()
    b.burn()
    for _ in range(3):
        b.coup()
    b.empty()
    b.dealer("table_closed")
    f, _rounds, packs, _rejects = replay(b.events)
    assert [(p["pack_id"], p["pack_use"], p["shuffle_method"]) for p in packs] == [("P-1", 1, "hand")]
    assert (packs[0]["decks"], packs[0]["card_count"]) == (8, 416), packs[0]
    assert [x.rule_id for x in f] == []


def test_a_round_id_started_again_after_its_round_ended_is_a_new_round():
    f, rounds, packs, rejects = replay(two_packs("P-2", restart_rounds=True).events)
    unique = replay(two_packs("P-2").events)
    assert rejects == []
    assert [(r["round_id"], r["round_use"], r["pack_id"]) for r in rounds] == [
        ("R-1", 1, "P-1"), ("R-1", 2, "P-2"), ("R-2", 1, "P-1"), ("R-2", 2, "P-2"), ("R-3", 1, "P-1"),
        ("R-3", 2, "P-2")]
    back = {("R-1", 2): "R-4", ("R-2", 2): "R-5", ("R-3", 2): "R-6"}
    assert as_unique(rounds, {}, back) == as_unique(unique[1], {}, {})
    assert as_unique(packs, {}, back) == as_unique(unique[2], {}, {})


def test_a_round_started_naming_a_round_still_open_is_rejected_with_the_reason():
    b = two_packs("P-2")
    events = list(b.events)
    at = next(i for i, e in enumerate(events) if e.type == "bets_closed" and e.round_id == "R-2")
    again = events[at]._replace(event_id="dt-again", type="round_started", game="baccarat", pack_id="P-1")
    fed = events[:at] + [again] + events[at:]
    f, rounds, packs, rejects = replay(fed)
    assert len(rejects) == 1 and rejects[0][0] == "dt-again"
    assert "still open" in rejects[0][1] and "'R-2'" in rejects[0][1], rejects
    assert (f, rounds, packs) == replay(events)[:3]   # as if it never came


def test_a_second_day_that_restarts_every_number_gives_the_unique_days_rows():
    """The faulty two-pack table, its second pack named like the first and its round numbers
    restarting with it: row for row (whole rows, findings included) the rows of the same feed with
    unique ids once (id, use) is mapped back, in any interleaving, with checkpoints."""
    b = faulty_shoe()
    first = {e.round_id for e in b.events if e.pack_id == "P-1" and e.type == "round_started"}
    later = sorted({e.round_id for e in b.events if e.round_id and e.round_id not in first},
                   key=lambda r: int(r[2:]))
    rename_rounds = {r: f"R-{k}" for k, r in enumerate(later, 1)}
    events = renamed(b.events, {"P-2": "P-1"}, rename_rounds)
    unique = replay(b.events)
    packs_back = {("P-1", 2): "P-2"}
    rounds_back = {(new, 2): old for old, new in rename_rounds.items()}
    reused = replay(events)
    assert [(p["pack_id"], p["pack_use"]) for p in reused[2]] == [("P-1", 1), ("P-1", 2)]
    assert reused[3] == []
    assert as_unique(reused[1], packs_back, rounds_back) == as_unique(unique[1], {}, {})
    assert as_unique(reused[2], packs_back, rounds_back) == as_unique(unique[2], {}, {})
    assert as_unique(finding_rows(reused[0]), packs_back, rounds_back, ["finding_id"]) == \
        as_unique(finding_rows(unique[0]), {}, {}, ["finding_id"])
    # a feed that never uses an id again keeps its finding ids; the first uses' findings keep theirs
    firsts = {f.finding_id for f in reused[0] if f.pack_use in (1, None) and f.round_use in (1, None)}
    assert firsts and firsts <= {f.finding_id for f in unique[0]}
    for rows, schema in ((finding_rows(reused[0]), FINDINGS), (reused[1], ROUNDS), (reused[2], PACKS)):
        assert rows_to_table(rows, schema).num_rows == len(rows)
    REUSED.append((events, reused))


REUSED: list = []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), every=st.sampled_from([0, 37, 101]))
def test_any_interleaving_of_a_feed_using_ids_again_gives_the_same_rows(seed, every):
    if not REUSED:
        test_a_second_day_that_restarts_every_number_gives_the_unique_days_rows()
    events, base = REUSED[0]
    assert replay(_merge(events, random.Random(seed)), checkpoint_every=every) == base


def test_an_id_named_again_after_the_streams_memory_is_still_a_round_of_its_own():
    """Each stream remembers the use numbers of its last KEEP_USES ids: a round id started again
    after more than that many others starts over at use 1, but is a round of its own (not merged,
    not dropped as a straggler)."""
    from pitwatch.rules.uses import KEEP_USES

    b = Baccarat()
    packs = 0
    while b.round_no < KEEP_USES + 8:       # packs of 60 coups until the stream has named more ids
        packs += 1
        b.prepare(f"P-{packs}")
        for _ in range(60):
            b.coup(bets=())
        b.empty()
    total = b.round_no
    b.round_no = 0
    last = f"P-{packs + 1}"
    b.prepare(last)
    for _ in range(3):
        b.coup(bets=())
    b.empty()
    _f, rounds, _packs, rejects = replay(b.events)
    assert rejects == [] and len(rounds) == total + 3
    again = [r for r in rounds if r["round_id"] == "R-1"]
    assert [(r["pack_id"], r["round_use"]) for r in again] == [("P-1", 1), (last, 1)]


def test_a_feed_that_never_uses_an_id_again_keeps_its_finding_ids():
    """The faulty two-pack table's 11 findings have the ids main at 5470725 (engine state 1) gave
    them, and every use is the first."""
    import hashlib

    b = faulty_shoe()
    findings, rounds, packs, rejects = replay(b.events)
    ids = sorted(f.finding_id for f in findings)
    assert len(ids) == 11 and rejects == []
    assert hashlib.sha256(json.dumps(ids).encode()).hexdigest() == \
        "8a1d1f03749c3e906ce816a0691252d36df0572f53fdfda4e1417d00577dbec1"
    assert {r["round_use"] for r in rounds} == {1} and {p["pack_use"] for p in packs} == {1}
    assert {(f.pack_use, f.round_use) for f in findings} <= {(1, 1), (1, None), (None, None), (None, 1)}
