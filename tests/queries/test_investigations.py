"""Every investigation in queries/ over the hand-built lake returns the rows its contents imply."""
from __future__ import annotations

import os

import pytest

from pitwatch.lake import Lake
from pitwatch.queries import load_queries
from pitwatch.queries.catalog import run_query
from tests.queries.lakes import DAY1, DAY2, at

RANGE = {"from_day": "2026-11-27", "to_day": "2026-11-28"}


def run(con, name, **params):
    columns, rows = run_query(con, name, {k: str(v) for k, v in params.items()})
    return [dict(zip(columns, r)) for r in rows]


def pick(rows, *cols):
    return [tuple(r[c] for c in cols) for r in rows]


def test_every_query_is_covered_here():
    tested = {n.removeprefix("test_") for n in globals() if n.startswith("test_")}
    assert set(load_queries()) <= tested


def test_findings_by_rule(con):
    rows = run(con, "findings_by_rule", **RANGE)
    assert pick(rows, "rule_id", "severity", "findings", "tables", "dealers", "first_day", "last_day") == [
        ("SHOE_CARD_MISMATCH", "critical", 1, 1, 1, DAY2, DAY2),
        ("VOID_NOT_DECLARED", "critical", 1, 1, 1, DAY2, DAY2),
        ("BURN_SKIPPED", "major", 3, 2, 2, DAY1, DAY2),
        ("BURN_COUNT", "major", 1, 1, 1, DAY2, DAY2),
        ("CUT_CARD_PLACEMENT", "major", 1, 1, 1, DAY2, DAY2),
        ("CUT_PLACEMENT", "major", 1, 1, 1, DAY2, DAY2),
        ("STUB_COUNT_OVERDUE", "major", 1, 1, 1, DAY2, DAY2),
    ]
    one_day = run(con, "findings_by_rule", from_day="2026-11-27", to_day="2026-11-27")
    assert pick(one_day, "rule_id", "findings") == [("BURN_SKIPPED", 2)]


def test_findings_per_dealer(con):
    rows = run(con, "findings_per_dealer", **RANGE)
    assert pick(rows, "dealer_id", "rounds", "findings", "critical", "major", "per_100_rounds") == [
        ("D-1", 3, 5, 1, 4, 166.67),
        ("D-2", 3, 2, 0, 2, 66.67),
        ("D-3", 8, 2, 1, 1, 25.0),
    ]


def test_table_day_summary(con):
    rows = run(con, "table_day_summary", table_id="BAC-07", **RANGE)
    assert pick(rows, "gaming_day", "games", "rounds", "dealers", "packs", "cards_drawn", "findings", "critical",
                "major") == [
        (DAY1, "baccarat", 1, 1, 1, 120, 1, 0, 1),
        (DAY2, "baccarat", 2, 1, 1, 9, 4, 1, 3),
    ]
    assert rows[1]["first_round_started"] == at(DAY2, 20, 5)
    assert run(con, "table_day_summary", table_id="NO-SUCH", **RANGE) == []


def test_pack_custody(con):
    rows = run(con, "pack_custody", table_id="BAC-07", pack_id="P-1")
    assert pick(rows, "stage", "type", "round_id") == [
        ("shuffle", "shuffle_completed", None),
        ("cut", "cut_offered", None),
        ("cut", "cut", None),
        ("finding", "CUT_PLACEMENT", None),
        ("cutting card", "cut_card_inserted", None),
        ("finding", "CUT_CARD_PLACEMENT", None),
        ("load", "shoe_loaded", None),
        ("burn", "card_dealt", None),
        ("round", "round", "R-1"),
        ("finding", "BURN_COUNT", None),
        ("finding", "SHOE_CARD_MISMATCH", "R-1"),
        ("round", "round", "R-2"),
        ("cutting card surfaced", "cut_card_drawn", None),
        ("last coup", "last_coup_announced", None),
        ("emptied", "shoe_emptied", None),
        ("summary", "pack", None),
    ]
    detail = {r["type"]: r["detail"] for r in rows}
    assert detail["shuffle_completed"] == "8 decks, 416 cards counted"
    assert detail["cut"] == "cut by seat:3 at 30 of 416"
    assert detail["cut_card_inserted"] == "15 cards from the back of 416"
    assert detail["card_dealt"] == "burn Ah face up"
    assert detail["cut_card_drawn"] == "after 5 cards drawn"
    assert detail["shoe_emptied"] == "407 cards left in the shoe"
    assert [r["detail"] for r in rows if r["stage"] == "round"] == [
        "player, 4 cards dealt, 1 finding", "banker, 4 cards dealt, 0 findings"]
    # the summary counts the findings listed above it (issue 29: "2 findings" listed under "1 findings")
    listed = sum(r["stage"] == "finding" for r in rows)
    assert listed == 4
    assert rows[-1]["detail"] == "baccarat, 8 decks: 9 cards drawn, 2 rounds, stub counts [], stub left 407, 4 findings"


def test_round_replay(con):
    rows = run(con, "round_replay", table_id="BAC-07", round_id="R-1")
    assert pick(rows, "source", "seq", "type", "place", "card", "findings") == [
        ("dealer", 5, "round_started", None, None, []),
        ("dealer", 6, "bets_closed", None, None, []),
        ("shoe", 3, "card_drawn", 2, "7h", []),
        ("dealer", 7, "card_dealt", 2, "7h", ["BURN_COUNT (major)"]),
        ("shoe", 4, "card_drawn", 3, "Kd", []),
        ("dealer", 8, "card_dealt", 3, "Kd", []),
        ("shoe", 5, "card_drawn", 4, "9c", ["SHOE_CARD_MISMATCH (critical)"]),
        ("dealer", 9, "card_dealt", 4, "8c", ["SHOE_CARD_MISMATCH (critical)"]),
        ("shoe", 6, "card_drawn", 5, "2s", []),
        ("dealer", 10, "card_dealt", 5, "2s", []),
        ("dealer", 11, "payout", None, None, []),
        ("dealer", 12, "round_ended", None, None, []),
    ]
    assert (rows[10]["seat"], rows[10]["spot"], rows[10]["result"], rows[10]["amount"]) == (3, "banker", "lose", -100.0)
    second = run(con, "round_replay", table_id="BAC-07", round_id="R-2")
    # the cutting card surfaced after 5 draws: during R-2, whose cards are draws 6-9
    assert pick(second, "source", "type", "place") == (
        [("dealer", "round_started", None), ("dealer", "bets_closed", None), ("shoe", "cut_card_drawn", 5)]
        + [x for i in range(6, 10) for x in (("shoe", "card_drawn", i), ("dealer", "card_dealt", i))]
        + [("dealer", "round_ended", None)])


def test_round_replay_lists_a_finding_that_cites_none_of_its_events(con):
    rows = run(con, "round_replay", table_id="TBP-02", round_id="T-7")
    assert pick(rows, "source", "type", "findings") == [
        ("pitwatch", "STUB_COUNT_OVERDUE", ["STUB_COUNT_OVERDUE (major)"])]


def test_stub_compliance(con):
    rows = run(con, "stub_compliance", **RANGE)
    assert rows == [{
        "table_id": "TBP-02", "rounds": 8, "rounds_counted": 2, "pct_counted": 25.0, "longest_uncounted_run": 5,
        "counts_not_52": 1, "overdue_findings": 1, "miscount_findings": 0, "exposed_findings": 0,
        "void_not_declared_findings": 1}]


def test_cut_placement(con):
    rows = run(con, "cut_placement", bucket=100, **RANGE)
    assert pick(rows, "measure", "bucket_from", "bucket_to", "packs", "outside_procedure", "pct_of_packs") == [
        ("cut_position", 0, 99, 1, 1, 25.0),       # 30: too shallow
        ("cut_position", 100, 199, 1, 0, 25.0),
        ("cut_position", 200, 299, 1, 0, 25.0),
        ("cut_position", 300, 399, 1, 1, 25.0),    # 380 > 416 - 52
        ("cut_card_from_back", 0, 99, 4, 1, 100.0),  # 15 < 20
    ]
    default = run(con, "cut_placement", **RANGE)
    assert pick(default, "measure", "bucket_from", "packs")[-3:] == [   # 15; 25; 60 and 70
        ("cut_card_from_back", 0, 1), ("cut_card_from_back", 20, 1), ("cut_card_from_back", 60, 2)]


def test_dealer_rule_repeats(con):
    # "which dealers skipped burns this week"
    rows = run(con, "dealer_rule_repeats", rule_id="BURN_SKIPPED", to_day="2026-11-28")
    assert pick(rows, "dealer_id", "rule_id", "findings", "days_with_findings", "tables") == [
        ("D-2", "BURN_SKIPPED", 2, 2, "BAC-08"), ("D-1", "BURN_SKIPPED", 1, 1, "BAC-07")]
    assert pick(run(con, "dealer_rule_repeats", rule_id="BURN_SKIPPED", to_day="2026-11-28", min_count=2),
                "dealer_id") == [("D-2",)]
    assert pick(run(con, "dealer_rule_repeats", rule_id="BURN_SKIPPED", to_day="2026-11-28", days=1),
                "dealer_id", "findings") == [("D-2", 1)]
    every_rule = run(con, "dealer_rule_repeats", to_day="2026-11-28")
    assert len(every_rule) == 8 and every_rule[0]["findings"] == 2


def test_findings_evidence(con):
    rows = run(con, "findings_evidence", gaming_day="2026-11-28")
    assert pick(rows, "finding_id", "rule_id", "evidence_no", "event_id", "type", "card", "seq") == [
        ("f-4", "SHOE_CARD_MISMATCH", 1, "sh-5", "card_drawn", "9c", 5),
        ("f-4", "SHOE_CARD_MISMATCH", 2, "dt-9", "card_dealt", "8c", 9),
        ("f-13", "VOID_NOT_DECLARED", 1, "tbp-s8", "stub_counted", None, 200),
    ]
    major = run(con, "findings_evidence", gaming_day="2026-11-28", severity="major")
    # evidence the lake does not hold (x-…) still shows, with empty event columns
    assert pick(major, "finding_id", "event_id", "type") == [
        ("f-1", "dt-2", "cut"), ("f-2", "dt-3", "cut_card_inserted"), ("f-3", "dt-4", "card_dealt"),
        ("f-3", "dt-7", "card_dealt"), ("f-11", "x-11", None), ("f-12", "x-t7", None)]
    assert len(run(con, "findings_evidence", gaming_day="2026-11-28", severity="*")) == 9


def test_findings_video(con):
    """The video window of each finding of the day (this lake's findings predate evidence_from: around ts)."""
    import datetime as dt

    rows = run(con, "findings_video", gaming_day="2026-11-28")
    assert len(rows) == 7 and [r["video_from"] for r in rows] == sorted(r["video_from"] for r in rows)
    pad = dt.timedelta(seconds=30)
    assert all((r["video_from"], r["video_to"]) == (r["ts"] - pad, r["ts"] + pad) for r in rows)
    wide = run(con, "findings_video", gaming_day="2026-11-28", severity="critical", video_pad=600)
    assert pick(wide, "table_id", "rule_id") == [("BAC-07", "SHOE_CARD_MISMATCH"), ("TBP-02", "VOID_NOT_DECLARED")]
    assert all(r["video_to"] - r["video_from"] == dt.timedelta(minutes=20) for r in wide)


def test_a_parameter_value_holding_sql_is_data(con):
    evil = "'; drop view findings; --"
    assert run(con, "pack_custody", table_id="BAC-07", pack_id=evil) == []
    assert run(con, "dealer_rule_repeats", rule_id=evil, to_day="2026-11-28") == []
    assert run(con, "round_replay", table_id=evil, round_id="R-1") == []
    assert len(run(con, "findings_evidence", gaming_day="2026-11-28", severity="*")) == 9  # the view is still there
    with pytest.raises(ValueError, match="not a date"):
        run(con, "findings_evidence", gaming_day="2026-11-28' or true --")


def test_hold(con):
    """The hand-built lake's baccarat rounds hold no bet_placed; R-1's payout collects 100 from seat 3 (a win
    of the casino's on a bet the lake does not hold): priced at 0 with no spread, so no z.  The hold's own
    figures: tests/queries/test_hold.py."""
    rows = run(con, "hold", **RANGE)
    assert pick(rows, "table_id", "game", "dealer_id", "rounds", "handle", "win", "hold_pct", "priced_rounds",
                "theo_win", "sd", "z") == [
        ("BAC-07", "baccarat", "D-1", 2, 0.0, 100.0, None, 2, 0.0, None, None),
        ("BAC-08", "baccarat", "D-2", 1, 0.0, 0.0, None, 1, 0.0, None, None),
    ]


def test_queries_answer_on_a_young_lake(tmp_path):
    """Only events written (no rounds, packs, findings yet): every query runs; only the event timelines and
    the hold (read from the events alone) have rows."""
    from pitwatch.queries.lake_views import connect
    from tests.queries.lakes import build_lake

    con = connect(Lake.at(build_lake(str(tmp_path / "young"), with_findings=False, with_replay=False)))
    params = {"from_day": "2026-11-27", "to_day": "2026-11-28", "gaming_day": "2026-11-28", "table_id": "BAC-07",
              "pack_id": "P-1", "round_id": "R-1", "since": "2026-11-27"}
    for q in load_queries().values():
        given = {p.name: params[p.name] for p in q.params if not p.has_default}
        columns, rows = run_query(con, q.name, given)
        assert columns, q.name
        if q.name not in ("pack_custody", "round_replay", "hold"):
            assert rows == [], q.name
    assert run(con, "hold", from_day="2026-11-27", to_day="2026-11-28") == run(
        connect(Lake.at(build_lake(str(tmp_path / "grown")))), "hold", from_day="2026-11-27", to_day="2026-11-28")
    custody = run(con, "pack_custody", table_id="BAC-07", pack_id="P-1")
    assert [r["stage"] for r in custody] == [
        "shuffle", "cut", "cut", "cutting card", "load", "burn", "cutting card surfaced", "last coup", "emptied"]
    replay = run(con, "round_replay", table_id="BAC-07", round_id="R-1")
    assert [r["source"] for r in replay] == ["dealer"] * 8  # no round row, so no pack: the terminal's events only


@pytest.fixture(scope="module")
def late_nights(tmp_path_factory):
    from tests.pipelines.late_nights import build

    return build(tmp_path_factory.mktemp("changes"))


@pytest.mark.slow
def test_findings_changed_since(late_nights):
    """On a lake of two nights, the second bringing late files of the first's day
    (``tests/pipelines/late_nights.py``; ``tests/pipelines/test_finding_changes.py`` checks the changes against the findings before
    and after): the answer after night 1 is every row of ``finding_changes``, whole, with night 2's start;
    after night 2, nothing."""
    from pitwatch.queries.lake_views import connect
    from tests import lake_rows

    _base, _inbox, lake, _night1, _night2, run1, run2 = late_nights
    changes = lake_rows.dicts(lake, "finding_changes")
    assert changes and {c["run_id"] for c in changes} == {run2}
    # the run's start to the second: the head of its id, never read from runs (lake/runs.py new_run_id)
    started = lake_rows.run_records(lake)[1]["started"].replace(microsecond=0)
    con = connect(Lake.at(lake))
    rows = run(con, "findings_changed_since", since=run1)
    assert sorted((sorted(r.items()) for r in rows), key=str) == sorted(
        (sorted({**c, "run_started": started}.items()) for c in changes), key=str)
    assert run(con, "findings_changed_since", since=run2) == []


# runs that changed 2026-11-27 after it was first written, named as lake/runs.py new_run_id names them
CHANGE_RUNS = ("20261128T070000Z-aaaaaaaa", "20261129T070005Z-bbbbbbbb", "20261130T070010Z-cccccccc")


@pytest.fixture(scope="module")
def changed_lake(tmp_path_factory):
    """The hand-built lake with two changes to 2026-11-27 by the later two runs, and no runs table at all:
    the answer cannot come from it."""
    import datetime as dt

    from pitwatch.lake.parquet import write_partition
    from pitwatch.schemas.arrow import FINDING_CHANGES, rows_to_table
    from tests.queries.lakes import build_lake

    lake = Lake.at(build_lake(str(tmp_path_factory.mktemp("changed") / "lake")))
    day = dt.date(2026, 11, 27)
    rows = [{"run_id": run_id, "change": change, "changed_columns": None, "finding_id": f"f-{n}",
             "rule_id": "BURN_SKIPPED", "severity": "major", "table_id": "BAC-07", "round_id": f"R-{n}",
             "dealer_id": "D-1", "ts": dt.datetime(2026, 11, 27, 20, n, tzinfo=dt.timezone.utc), "gaming_day": day}
            for n, (run_id, change) in enumerate(zip(CHANGE_RUNS[1:], ("added", "removed")), start=1)]
    file_rows = [{k: v for k, v in r.items() if k != "gaming_day"} for r in rows]
    file_schema = FINDING_CHANGES.remove(FINDING_CHANGES.get_field_index("gaming_day"))
    write_partition(lake, "finding_changes", day.isoformat(), [rows_to_table(file_rows, file_schema)], run_id="hand")
    assert not os.path.exists(os.path.join(lake.location, "runs"))
    return lake, rows


def _changes_since(lake, since):
    from pitwatch.queries.catalog import get_query
    from pitwatch.queries.lake_views import connect, referenced_tables

    con = connect(lake, tables=referenced_tables(get_query("findings_changed_since").sql))
    try:
        return run(con, "findings_changed_since", since=since)
    finally:
        con.close()


def test_findings_changed_since_reads_no_runs_record():
    from pitwatch.queries.catalog import get_query
    from pitwatch.queries.lake_views import referenced_tables

    assert referenced_tables(get_query("findings_changed_since").sql) == {"finding_changes"}


def test_findings_changed_since_a_run_id_takes_the_run_s_start_from_its_id(changed_lake):
    import datetime as dt

    lake, rows = changed_lake
    started = [dt.datetime(2026, 11, 29, 7, 0, 5, tzinfo=dt.timezone.utc),
               dt.datetime(2026, 11, 30, 7, 0, 10, tzinfo=dt.timezone.utc)]
    whole = [{"run_id": r["run_id"], "run_started": t, "change": r["change"], "gaming_day": r["gaming_day"],
              "finding_id": r["finding_id"], "rule_id": r["rule_id"], "severity": r["severity"],
              "table_id": r["table_id"], "round_id": r["round_id"], "dealer_id": r["dealer_id"], "ts": r["ts"],
              "changed_columns": r["changed_columns"]} for r, t in zip(rows, started)]
    assert _changes_since(lake, CHANGE_RUNS[0]) == whole
    assert _changes_since(lake, CHANGE_RUNS[1]) == whole[1:]
    assert _changes_since(lake, CHANGE_RUNS[2]) == []


@pytest.mark.parametrize(("since", "shown"), [
    ("2026-11-29", 2), ("2026-11-29T07:00:05", 2), ("2026-11-29T07:00:05.5Z", 2),   # its second counts
    ("2026-11-29T07:00:06", 1), ("2026-11-30", 1), ("2026-11-30T07:00:11+00:00", 0), ("2026-12-01", 0),
])
def test_findings_changed_since_a_time(changed_lake, since, shown):
    lake, rows = changed_lake
    assert [r["finding_id"] for r in _changes_since(lake, since)] == [r["finding_id"] for r in rows][2 - shown:]


@pytest.mark.parametrize("since", ["last tuesday", "20261399T070000Z-aaaaaaaa"])
def test_findings_changed_since_neither_a_run_id_nor_a_time_is_an_error(changed_lake, since):
    from pitwatch.queries.errors import LakeQueryError

    with pytest.raises(LakeQueryError, match="is neither a run id"):
        _changes_since(changed_lake[0], since)


def test_alerts_vs_findings(tmp_path):
    """Two of the day's findings alerted by two watchers (one of them by both), one alert the batch did not
    confirm (a provisional one): confirmed, not confirmed, never alerted — each alert and finding once."""
    from pitwatch.lake.parquet import read_table
    from pitwatch.live.alerts_table import AlertsTable
    from pitwatch.queries.lake_views import connect
    from tests.queries.lakes import build_lake

    lake = Lake.at(build_lake(str(tmp_path / "lake")))
    day = [f for f in read_table(lake, "findings").to_pylist() if f["gaming_day"].isoformat() == "2026-11-28"]
    assert len(day) >= 4

    def alert(f, **extra):
        return {**f, "ts": f["ts"].isoformat(), "evidence_from": None, "gaming_day": "2026-11-28", **extra}
    first, second = AlertsTable(lake, "pit-1"), AlertsTable(lake, "pit-2")
    for s in (first, second):
        s.recover({})
    first.send([alert(day[0]), alert(day[1])])
    first.flush()
    second.send([alert(day[1]), alert(day[0], finding_id="p" * 64, rule_id="CARD_DISAGREEMENT", provisional_id="P-1")])
    second.flush()
    con = connect(lake)
    rows = run(con, "alerts_vs_findings", gaming_day="2026-11-28")
    assert [r["outcome"] for r in rows] == ["confirmed"] * 2 + ["not confirmed"] + ["never alerted"] * (len(day) - 2)
    assert {r["finding_id"] for r in rows[:2]} == {day[0]["finding_id"], day[1]["finding_id"]}
    both = next(r for r in rows if r["finding_id"] == day[1]["finding_id"])
    assert both["watch_ids"] == "pit-1,pit-2"
    assert pick(rows[2:3], "finding_id", "rule_id", "provisional_id", "finding_ts") == [
        ("p" * 64, "CARD_DISAGREEMENT", "P-1", None)]
    assert {r["finding_id"] for r in rows[3:]} == {f["finding_id"] for f in day[2:]}
    assert all(r["alerted_ts"] is None and r["watch_ids"] is None for r in rows[3:])
    assert run(con, "alerts_vs_findings", gaming_day="2026-11-26") == []


def test_dealer_scorecard(con):
    # DAY2 against DAY1. D-1 dealt R-1 (20:05:00-20:05:50) and R-2 (20:08:00-20:08:50) at BAC-07: one
    # stint of 230 s (2 rounds, 2 hands: 31.3 an hour); on DAY1 R-0 alone, 50 s (72 an hour). D-3's
    # T-1 ... T-8 (21:01:00-21:08:50, 470 s) are all on DAY2. Rules tied on count: the most severe first.
    rows = run(con, "dealer_scorecard", from_day="2026-11-28", to_day="2026-11-28")
    assert pick(rows, "dealer_id", "rounds", "hands", "hours", "rounds_per_hour", "findings", "critical", "major",
                "findings_per_100_rounds", "top_rules") == [
        ("D-1", 2, 2, 0.06, 31.3, 4, 1, 3, 200.0, "SHOE_CARD_MISMATCH (1), BURN_COUNT (1), CUT_CARD_PLACEMENT (1)"),
        ("D-2", 2, 2, 0.03, 65.5, 1, 0, 1, 50.0, "BURN_SKIPPED (1)"),
        ("D-3", 8, 8, 0.13, 61.3, 2, 1, 1, 25.0, "VOID_NOT_DECLARED (1), STUB_COUNT_OVERDUE (1)")]
    assert pick(rows, "dealer_id", "previous_rounds", "previous_rounds_per_hour", "previous_findings",
                "change_rounds_per_hour", "change_findings_per_100_rounds") == [
        ("D-1", 1, 72.0, 1, -40.7, 100.0), ("D-2", 1, 72.0, 1, -6.5, -50.0), ("D-3", None, None, None, None, None)]
    assert pick(run(con, "dealer_scorecard", from_day="2026-11-28", to_day="2026-11-28", dealer_id="D-2"),
                "dealer_id", "rounds") == [("D-2", 2)]


def test_table_health(con):
    rows = run(con, "table_health", **RANGE)
    assert pick(rows, "table_id", "days", "rounds", "hands", "rounds_per_hour", "findings", "critical", "major",
                "shoe_silent_packs", "unknown_devices", "rejected_lines") == [
        ("BAC-07", 2, 3, 3, 38.6, 5, 1, 4, 0, 0, 0),       # 50 s on DAY1 + 230 s on DAY2
        ("TBP-02", 1, 8, 8, 61.3, 2, 1, 1, 0, 0, 0),
        ("BAC-08", 2, 3, 3, 67.5, 2, 0, 2, 0, 0, 0)]       # 50 s + 110 s
    assert pick(run(con, "table_health", **RANGE, table_id="BAC-08"), "table_id", "rounds") == [("BAC-08", 3)]


# -- reviews (issue 42): the hand-built lake with reviews committed by hand, chained ------------------

def _review(fid, disposition, reviewer, when, reason=None, rule="BURN_SKIPPED", table="BAC-07", day=DAY1):
    import datetime as dt

    return {"review_id": f"rv-{when:%m%d}", "finding_id": fid, "disposition": disposition, "reason": reason,
            "reviewer": reviewer, "reviewed_at": dt.datetime(when.year, when.month, when.day, 8, tzinfo=dt.timezone.utc),
            "rule_id": rule, "table_id": table, "gaming_day": day}


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """The hand-built lake with five reviews, a day apart from 2026-11-29: f-0 confirmed then dismissed
    (DEVICE_FAULT), f-4 confirmed, f-13 escalated, and a review of f-gone, a finding the lake does not hold."""
    import datetime as dt

    from pitwatch.queries.lake_views import connect
    from tests.queries.lakes import add_reviews, build_lake

    lake = build_lake(str(tmp_path_factory.mktemp("reviewed")))
    day = [dt.date(2026, 11, 29) + dt.timedelta(days=i) for i in range(5)]
    add_reviews(lake, [_review("f-0", "confirmed", "A", day[0], "DEALER_ERROR"),
                       _review("f-4", "confirmed", "A", day[1], rule="SHOE_CARD_MISMATCH", day=DAY2)])
    add_reviews(lake, [_review("f-13", "escalated", "B", day[2], rule="VOID_NOT_DECLARED", table="TBP-02", day=DAY2),
                       _review("f-0", "dismissed", "A", day[3], "DEVICE_FAULT"),
                       _review("f-gone", "confirmed", "B", day[4])], run_id="by-hand-2")
    con = connect(Lake.at(lake))
    yield con
    con.close()


def test_open_findings(reviewed):
    rows = run(reviewed, "open_findings")
    assert pick(rows, "finding_id", "status", "severity") == [
        ("f-13", "escalated", "critical"),           # critical first; f-4 (critical) was confirmed
        ("f-10", "open", "major"), ("f-1", "open", "major"), ("f-2", "open", "major"),   # then by time;
        ("f-3", "open", "major"), ("f-11", "open", "major"), ("f-12", "open", "major")]   # f-0 dismissed
    assert rows[0]["reviewed_by"] == "B" and rows[1]["reviewed_by"] is None
    assert [r["finding_id"] for r in run(reviewed, "open_findings", table_id="BAC-08")] == ["f-10", "f-11"]
    assert [r["finding_id"] for r in run(reviewed, "open_findings", from_day=DAY2, to_day=DAY2,
                                         table_id="TBP-02")] == ["f-13", "f-12"]


def test_review_log(reviewed):
    rows = run(reviewed, "review_log")
    assert pick(rows, "finding_id", "disposition", "reviewer", "finding_exists") == [
        ("f-gone", "confirmed", "B", False), ("f-0", "dismissed", "A", True), ("f-13", "escalated", "B", True),
        ("f-4", "confirmed", "A", True), ("f-0", "confirmed", "A", True)]
    assert pick(rows[1:2], "reason", "reason_title", "error_type") == [
        ("DEVICE_FAULT", "A shoe or terminal misread or missed the card", "none")]
    assert [r["finding_id"] for r in run(reviewed, "review_log", reviewer="B")] == ["f-gone", "f-13"]
    assert [r["finding_id"] for r in run(reviewed, "review_log", since="2026-12-02")] == ["f-gone", "f-0"]


def test_orphan_reviews(reviewed, con):
    rows = run(reviewed, "orphan_reviews")
    assert pick(rows, "finding_id", "rule_id", "table_id", "gaming_day", "reviewer") == [
        ("f-gone", "BURN_SKIPPED", "BAC-07", DAY1, "B")]
    assert run(con, "orphan_reviews") == []          # a lake with no review has none
