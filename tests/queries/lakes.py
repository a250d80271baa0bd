"""A small hand-built lake whose contents every investigation's expected rows follow from.

Gaming days 2026-11-27 (DAY1) and 2026-11-28 (DAY2).

* BAC-07 (baccarat, dealer D-1, DAY2), pack P-1: cut offered to seat 3, cut at
  30 of 416 (too shallow), cutting card 15 from the back (too close), burn Ah
  face up (no face-down burns after it), coups R-1 and R-2, last coup
  announced.  The shoe drew Ah 7h Kd 9c 2s, the cutting card after 5 draws,
  then 4d 5d 6d Qh: draw 4 read 9c where the terminal recorded 8c (R-1).
* BAC-08 (baccarat, dealer D-2): packs P-8 (DAY1) and P-9 (DAY2), rounds
  R-10 (DAY1), R-11 and R-12 (DAY2); BURN_SKIPPED on both packs.
  D-1 also skipped a burn on DAY1 at BAC-07 (pack P-0, round R-0).
* TBP-02 (three_bet_poker, dealer D-3, DAY2): rounds T-1 … T-8, stub counted
  after T-2 (45 + 7 = 52) and T-8 (30 + 21 = 51); T-3 … T-7 uncounted, so
  STUB_COUNT_OVERDUE at T-7, and VOID_NOT_DECLARED at T-8.
"""
from __future__ import annotations

import datetime as dt

import pyarrow as pa

from pitwatch.lake import Lake
from pitwatch.lake.parquet import file_schema, write_partition
from pitwatch.rules.catalog import RULE_BY_ID
from pitwatch.schemas.arrow import rows_to_table

DAY1 = dt.date(2026, 11, 27)
DAY2 = dt.date(2026, 11, 28)
UTC = dt.timezone.utc


def at(day: dt.date, hour: int, minute: int, second: int = 0) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=UTC)


def _table(name: str, rows: list[dict]) -> pa.Table:
    return rows_to_table(rows, file_schema(name))


# ---------------------------------------------------------------- events of BAC-07 on DAY2

def _dealer(seq, type_, minute, second=0, **kw):
    return {"event_id": f"dt-{seq}", "ts": at(DAY2, 20, minute, second), "source": "dealer", "type": type_,
            "table_id": "BAC-07", "device_id": "DT-07", "seq": seq, "dealer_id": "D-1", **kw}


def _shoe(seq, type_, minute, second=0, **kw):
    return {"event_id": f"sh-{seq}", "ts": at(DAY2, 20, minute, second), "source": "shoe", "type": type_,
            "table_id": "BAC-07", "device_id": "SHOE-1", "seq": seq, "pack_id": "P-1", **kw}


def _card(seq, minute, second, round_id, target, card, face="up"):
    return _dealer(seq, "card_dealt", minute, second, round_id=round_id, target=target, face=face, card=card)


BAC07_EVENTS = [
    {"event_id": "sf-1", "ts": at(DAY2, 19, 50), "source": "shuffler", "type": "shuffle_completed",
     "table_id": "BAC-07", "device_id": "SHF-1", "seq": 1, "pack_id": "P-1", "decks": 8, "card_count": 416,
     "missing": [], "extra": [], "preshuffled": False},
    _dealer(1, "cut_offered", 0, to="seat:3"),
    _dealer(2, "cut", 1, by="seat:3", position=30, stack_size=416),
    _dealer(3, "cut_card_inserted", 2, from_back=15, stack_size=416),
    _shoe(1, "shoe_loaded", 3, card_count=416),
    _shoe(2, "card_drawn", 4, index=1, card="Ah"),
    _dealer(4, "card_dealt", 4, 1, target="burn", face="up", card="Ah"),
    _dealer(5, "round_started", 5, round_id="R-1", game="baccarat", pack_id="P-1"),
    _dealer(6, "bets_closed", 5, 30, round_id="R-1"),
    _shoe(3, "card_drawn", 6, 0, index=2, card="7h"),
    _card(7, 6, 1, "R-1", "player", "7h"),
    _shoe(4, "card_drawn", 6, 10, index=3, card="Kd"),
    _card(8, 6, 11, "R-1", "banker", "Kd"),
    _shoe(5, "card_drawn", 6, 20, index=4, card="9c"),
    _card(9, 6, 21, "R-1", "player", "8c"),
    _shoe(6, "card_drawn", 6, 30, index=5, card="2s"),
    _card(10, 6, 31, "R-1", "banker", "2s"),
    _dealer(11, "payout", 7, round_id="R-1", seat=3, spot="banker", result="lose", amount=-100.0),
    _dealer(12, "round_ended", 7, 30, round_id="R-1"),
    _dealer(13, "round_started", 8, round_id="R-2", game="baccarat", pack_id="P-1"),
    _dealer(14, "bets_closed", 8, 30, round_id="R-2"),
    _shoe(7, "cut_card_drawn", 8, 59, index=5),
    _shoe(8, "card_drawn", 9, 0, index=6, card="4d"),
    _card(15, 9, 1, "R-2", "player", "4d"),
    _shoe(9, "card_drawn", 9, 10, index=7, card="5d"),
    _card(16, 9, 11, "R-2", "banker", "5d"),
    _shoe(10, "card_drawn", 9, 20, index=8, card="6d"),
    _card(17, 9, 21, "R-2", "player", "6d"),
    _shoe(11, "card_drawn", 9, 30, index=9, card="Qh"),
    _card(18, 9, 31, "R-2", "banker", "Qh"),
    _dealer(19, "round_ended", 10, round_id="R-2"),
    _dealer(20, "last_coup_announced", 10, 30),
    _shoe(12, "shoe_emptied", 11, remaining=407),
]

TBP_EVENTS = [
    {"event_id": "tbp-s2", "ts": at(DAY2, 21, 2, 50), "source": "dealer", "type": "stub_counted",
     "table_id": "TBP-02", "device_id": "DT-02", "seq": 100, "dealer_id": "D-3", "round_id": "T-2",
     "stub": 45, "layout": 7},
    {"event_id": "tbp-s8", "ts": at(DAY2, 21, 8, 50), "source": "dealer", "type": "stub_counted",
     "table_id": "TBP-02", "device_id": "DT-02", "seq": 200, "dealer_id": "D-3", "round_id": "T-8",
     "stub": 30, "layout": 21},
]

DAY1_EVENTS = [
    {"event_id": "d1-1", "ts": at(DAY1, 22, 0), "source": "dealer", "type": "round_started",
     "table_id": "BAC-08", "device_id": "DT-08", "seq": 1, "dealer_id": "D-2", "round_id": "R-10",
     "game": "baccarat", "pack_id": "P-8"},
]


# ---------------------------------------------------------------- rounds, packs, findings

def _round(table, round_id, pack, dealer, day, minute, game="baccarat", findings=0, voided=False, outcome=None):
    return {"table_id": table, "game": game, "round_id": round_id, "pack_id": pack, "dealer_id": dealer,
            "started": at(day, 21 if table == "TBP-02" else 20, minute),
            "ended": at(day, 21 if table == "TBP-02" else 20, minute, 50),
            "seats_dealt": [3], "outcome": outcome, "voided": voided, "findings": findings, "undecided": [],
            "gaming_day": day}


ROUNDS = [
    _round("BAC-07", "R-0", "P-0", "D-1", DAY1, 1, findings=1, outcome="player"),
    _round("BAC-08", "R-10", "P-8", "D-2", DAY1, 5, findings=1, outcome="banker"),
    _round("BAC-07", "R-1", "P-1", "D-1", DAY2, 5, findings=1, outcome="player"),
    _round("BAC-07", "R-2", "P-1", "D-1", DAY2, 8, outcome="banker"),
    _round("BAC-08", "R-11", "P-9", "D-2", DAY2, 30, findings=1, outcome="tie"),
    _round("BAC-08", "R-12", "P-9", "D-2", DAY2, 31, outcome="banker"),
] + [
    _round("TBP-02", f"T-{i}", f"TP-{i}", "D-3", DAY2, i, game="three_bet_poker",
           findings=1 if i in (7, 8) else 0)
    for i in range(1, 9)
]


def _pack(table, pack, day, cut, cut_card, cards, rounds, game="baccarat", findings=0):
    return {"table_id": table, "game": game, "pack_id": pack, "decks": 8, "card_count": 416,
            "shuffle_method": "machine", "preshuffled": False, "shuffled_at": at(day, 19, 50),
            "cut_by": "seat:3", "cut_position": cut, "cut_stack_size": 416 if cut is not None else None,
            "cut_card_from_back": cut_card, "cut_card_surfaced_at": 5, "burn_first_card": "Ah",
            "burn_count": 1, "cards_drawn": cards, "rounds_played": rounds, "stub_counts": [],
            "stub_remaining": 407, "findings": findings, "gaming_day": day}


PACKS = [
    _pack("BAC-07", "P-0", DAY1, 100, 60, 120, 20, findings=1),
    _pack("BAC-08", "P-8", DAY1, 200, 70, 300, 50, findings=1),
    # packs.findings is the pack's own count (3: not its round R-1's SHOE_CARD_MISMATCH); pack_custody lists 4
    _pack("BAC-07", "P-1", DAY2, 30, 15, 9, 2, findings=3),
    _pack("BAC-08", "P-9", DAY2, 380, 25, 10, 2, findings=1),
]

_SOURCES = {"CUT_PLACEMENT": "003 4.5", "CUT_CARD_PLACEMENT": "003 4.6", "BURN_COUNT": "003 4.7, 4.8",
            "BURN_SKIPPED": "003 4.7", "SHOE_CARD_MISMATCH": "integrity", "STUB_COUNT_OVERDUE": "000 E",
            "VOID_NOT_DECLARED": "000 E2"}
_SEVERITY = {"SHOE_CARD_MISMATCH": "critical", "VOID_NOT_DECLARED": "critical"}


def _finding(fid, rule, table, day, ts, event_ids, pack=None, round_id=None, dealer=None, game="baccarat",
             expected="by the procedure", actual="not so"):
    return {"finding_id": fid, "rule_id": rule, "title": RULE_BY_ID[rule].title, "severity": _SEVERITY.get(rule, "major"),
            "game": game,
            "table_id": table, "pack_id": pack, "round_id": round_id, "dealer_id": dealer, "ts": ts,
            "gaming_day": day, "expected": expected, "actual": actual, "event_ids": event_ids,
            "source": _SOURCES[rule], "evidence": [{"device_id": _device_of(e), "event_id": e} for e in event_ids]}


def _device_of(event_id: str) -> str | None:
    """The device of a cited event (evidence is per (device_id, event_id)); None for one not in the lake."""
    return next((r["device_id"] for r in DAY1_EVENTS + BAC07_EVENTS + TBP_EVENTS if r["event_id"] == event_id), None)


FINDINGS = [
    _finding("f-0", "BURN_SKIPPED", "BAC-07", DAY1, at(DAY1, 20, 1), ["d0-x"], pack="P-0", dealer="D-1"),
    _finding("f-10", "BURN_SKIPPED", "BAC-08", DAY1, at(DAY1, 22, 0), ["d1-1"], pack="P-8", dealer="D-2"),
    _finding("f-1", "CUT_PLACEMENT", "BAC-07", DAY2, at(DAY2, 20, 1), ["dt-2"], pack="P-1", dealer="D-1",
             expected="cut between 52 and 364", actual="cut at 30"),
    _finding("f-2", "CUT_CARD_PLACEMENT", "BAC-07", DAY2, at(DAY2, 20, 2), ["dt-3"], pack="P-1", dealer="D-1",
             expected="cutting card at least 20 from the back", actual="15 from the back"),
    _finding("f-3", "BURN_COUNT", "BAC-07", DAY2, at(DAY2, 20, 6, 1), ["dt-4", "dt-7"], pack="P-1",
             dealer="D-1", expected="1 face-down burn after Ah", actual="0 face-down burns"),
    _finding("f-4", "SHOE_CARD_MISMATCH", "BAC-07", DAY2, at(DAY2, 20, 6, 21), ["sh-5", "dt-9"], pack="P-1",
             round_id="R-1", dealer="D-1", expected="the terminal's card 8c (shoe draw 4)",
             actual="the shoe read 9c at draw 4"),
    _finding("f-11", "BURN_SKIPPED", "BAC-08", DAY2, at(DAY2, 20, 30), ["x-11"], pack="P-9", dealer="D-2"),
    _finding("f-12", "STUB_COUNT_OVERDUE", "TBP-02", DAY2, at(DAY2, 21, 7, 50), ["x-t7"], round_id="T-7",
             dealer="D-3", game="three_bet_poker"),
    _finding("f-13", "VOID_NOT_DECLARED", "TBP-02", DAY2, at(DAY2, 21, 8, 50), ["tbp-s8"], round_id="T-8",
             dealer="D-3", game="three_bet_poker", expected="round voided", actual="stub + layout = 51"),
]


def _by_day(rows):
    out: dict[dt.date, list[dict]] = {}
    for r in rows:
        out.setdefault(r["gaming_day"], []).append(r)
    return out


RUN_ID = "hand-built"     # the data files are replay-<day>-hand-built.parquet


def build_lake(lake: str, *, with_findings: bool = True, with_replay: bool = True) -> str:
    """Write the lake described above under ``lake``; return it.  Without findings (and, unless
    ``with_replay``, without rounds and packs) it is a young lake: those tables have no files."""
    at = Lake.at(lake)
    events = {DAY1: DAY1_EVENTS, DAY2: BAC07_EVENTS + TBP_EVENTS}
    for day, rows in events.items():
        write_partition(at, "events", day, [_table("events", rows)], run_id=RUN_ID)
    tables = ((("rounds", ROUNDS), ("packs", PACKS)) if with_replay else ()) + (
        (("findings", FINDINGS),) if with_findings else ())
    for name, rows in tables:
        for day, day_rows in _by_day(rows).items():
            write_partition(at, name, day, [_table(name, day_rows)], run_id=RUN_ID)
    return lake


def add_reviews(lake: str, reviews: list[dict], run_id: str = RUN_ID) -> None:
    """Commit ``reviews`` (REVIEWS rows, without their chain columns) to the lake's ``reviews`` table by
    hand, chained as :mod:`pitwatch.lake.reviews` chains them, in one commit (``pitwatch review`` refuses
    a lake no run wrote, as this one)."""
    from pitwatch.lake import chain, delta
    from pitwatch.lake import parquet as lake_files
    from pitwatch.lake import reviews as lake_reviews
    from pitwatch.schemas.arrow import REVIEWS, rows_to_table

    at = Lake.at(lake)
    previous = lake_reviews.head(at)
    rows = []
    for r in reviews:
        row = rows_to_table([r], REVIEWS).to_pylist()[0]
        previous = chain.link(previous, row, lake_reviews.HASH_FIELD, lake_reviews.PREV_FIELD)
        rows.append(previous)
    version = delta.current_version(at, "reviews")
    written = lake_files.write_data_file(at, "reviews", None, f"review-{run_id}-{version}.parquet",
                                         rows_to_table(rows, REVIEWS))
    delta.commit_replays(at, "reviews", [written], None, run_id=run_id, fence_at_start=delta.fence(at, "reviews"),
                         schema=REVIEWS, partitioned=False)
