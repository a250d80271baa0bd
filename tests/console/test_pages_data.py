"""The analyst pages' data (console/pages.py) over the hand-built lake of tests/queries/lakes.py,
whose every row is known: the filters, the counts, a finding with its evidence and round, a
round, a pack, the dealers' and tables' page, and the ids and values a URL may not carry."""
from __future__ import annotations

import datetime as dt

import pytest

from pitwatch.console.view import Zones
from pitwatch.lake import Lake
from tests.queries.lakes import DAY1, DAY2, FINDINGS, build_lake

PUERTO_RICO = "America/Puerto_Rico"     # AST, UTC-4 all year


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    return build_lake(str(tmp_path_factory.mktemp("lake")))


@pytest.fixture(scope="module")
def con(lake):
    from pitwatch.queries.lake_views import connect

    con = connect(Lake.at(lake))
    yield con
    con.close()


def pages():
    from pitwatch.console import pages

    return pages


def utc_clock():
    return Zones("UTC")


def listed(page) -> list[str]:
    return [r["finding_id"] for r in page["rows"]]


def truth(day, **where) -> list[str]:
    """The hand-built findings of ``day`` whose fields equal ``where``, in time order."""
    rows = [f for f in FINDINGS if f["gaming_day"] == day and all(f.get(k) == v for k, v in where.items())]
    return [f["finding_id"] for f in sorted(rows, key=lambda f: (f["ts"], f["table_id"], f["rule_id"], f["finding_id"]))]


# ---------------------------------------------------------------- Findings

@pytest.mark.parametrize("query, where", [
    ({"day": "2026-11-28"}, {}),
    ({"day": "2026-11-28", "severity": "critical"}, {"severity": "critical"}),
    ({"day": "2026-11-28", "table": "TBP-02"}, {"table_id": "TBP-02"}),
    ({"day": "2026-11-28", "game": "three_bet_poker"}, {"game": "three_bet_poker"}),
    ({"day": "2026-11-28", "rule": "BURN_SKIPPED"}, {"rule_id": "BURN_SKIPPED"}),
    ({"day": "2026-11-28", "dealer": "D-1", "severity": "major"}, {"dealer_id": "D-1", "severity": "major"}),
    ({"day": "2026-11-27"}, {}),
])
def test_findings_listed_are_the_day_s_findings_that_pass_every_filter(con, query, where):
    chosen = pages().FindingsFilter.of(query, None)
    page = pages().findings_page(con, chosen, utc_clock())
    expected = truth(chosen.day, **where)
    assert expected, "the filter must match some finding of the hand-built lake"
    assert listed(page) == expected
    assert page["total"] == len(expected) and not page["cut"]


def test_findings_filtered_by_status_open_list_every_unreviewed_finding_and_no_reviewed_one(con):
    page = pages().findings_page(con, pages().FindingsFilter.of({"day": "2026-11-28", "status": "open"}, None),
                                 utc_clock())
    assert listed(page) == truth(DAY2)      # the hand-built lake has no review: all open
    page = pages().findings_page(con, pages().FindingsFilter.of({"day": "2026-11-28", "status": "confirmed"}, None),
                                 utc_clock())
    assert listed(page) == [] and page["total"] == 0


def test_findings_rows_carry_the_dealer_s_name_and_the_time_on_the_table_s_clock(con, lake):
    pg = pages()
    page = pg.findings_page(con, pg.FindingsFilter.of({"day": "2026-11-28", "rule": "SHOE_CARD_MISMATCH"}, None),
                            Zones(PUERTO_RICO))
    (row,) = page["rows"]
    assert (row["finding_id"], row["table_id"], row["dealer_id"], row["status"], row["shown_ts"]) == (
        "f-4", "BAC-07", "D-1", "open", "2026-11-28 16:06:21 AST")    # 20:06:21 UTC


def test_findings_counts_by_rule_table_and_hour_of_the_table_s_clock(con):
    pg = pages()
    chosen = pg.FindingsFilter.of({"day": "2026-11-28"}, None)
    utc = pg.findings_page(con, chosen, utc_clock())
    assert utc["by_rule"] == [("BURN_COUNT", 1), ("BURN_SKIPPED", 1), ("CUT_CARD_PLACEMENT", 1),
                              ("CUT_PLACEMENT", 1), ("SHOE_CARD_MISMATCH", 1), ("STUB_COUNT_OVERDUE", 1),
                              ("VOID_NOT_DECLARED", 1)]
    assert utc["by_table"] == [("BAC-07", 4), ("TBP-02", 2), ("BAC-08", 1)]
    assert [h for h in utc["by_hour"] if h[1]] == [(20, 5), (21, 2)]
    # BAC-08 on its own clock (four hours behind): its finding moves to 16:00, the others stay UTC
    own = pg.findings_page(con, chosen, Zones("UTC", {"BAC-08": PUERTO_RICO}))
    assert [h for h in own["by_hour"] if h[1]] == [(16, 1), (20, 4), (21, 2)]
    assert len(utc["by_hour"]) == 24


def test_findings_filter_with_no_day_takes_the_lake_s_last_day():
    assert pages().FindingsFilter.of({}, DAY1).day == DAY1


@pytest.mark.parametrize("query, says", [
    ({"day": "2026-13-01"}, "is not a gaming day"),
    ({"day": "28/11/2026"}, "is not a gaming day"),
    ({"day": "2026-11-28", "severity": "fatal"}, "is not one of critical, major, minor, info"),
    ({"day": "2026-11-28", "status": "closed"}, "is not one of open, confirmed, dismissed, escalated"),
    ({"day": "2026-11-28", "table": "BAC-07' OR 1=1 --"}, "table: "),
    ({"day": "2026-11-28", "rule": "x" * 101}, "rule: "),
    ({"day": "2026-11-28", "sql": "select 1"}, "no filter 'sql'"),
    ({}, "no run has written it"),
])
def test_findings_filter_refuses_what_is_no_filter_value(query, says):
    with pytest.raises(pages().Refused, match=says.replace("(", r"\(")):
        pages().FindingsFilter.of(query, None)


# ---------------------------------------------------------------- a finding, a round, a pack

def test_finding_page_shows_its_evidence_events_with_file_and_line_its_round_and_video(con):
    from pitwatch.queries.catalog import run_query

    pg = pages()
    page = pg.finding_page(con, "f-4", "2026-11-28", Zones(PUERTO_RICO))
    assert page["finding"]["rule_id"] == "SHOE_CARD_MISMATCH" and page["finding"]["dealer_name"] is None
    columns, rows = run_query(con, "findings_evidence", {"gaming_day": "2026-11-28", "severity": "*"})
    expected = [dict(zip(columns, r)) for r in rows if r[0] == "f-4"]
    assert [{k: v for k, v in e.items() if k != "shown_ts"} for e in page["evidence"]] == expected
    assert [(e["event_id"], e["file"] is not None or e["line"] is None) for e in page["evidence"]] == [
        ("sh-5", True), ("dt-9", True)]
    columns, rows = run_query(con, "round_replay", {"table_id": "BAC-07", "round_id": "R-1"})
    assert [{k: v for k, v in e.items() if k != "shown_ts"} for e in page["replay"]] == [
        dict(zip(columns, r)) for r in rows]
    assert page["video_to"] == "2026-11-28 16:06:51 AST"          # 20:06:21 UTC + 30 s, on the table's clock
    assert page["reviews"] == []


def test_finding_page_of_a_finding_on_another_day_is_not_found(con):
    with pytest.raises(pages().NotFound, match="no finding f-4 on gaming day 2026-11-27"):
        pages().finding_page(con, "f-4", "2026-11-27", utc_clock())


@pytest.mark.parametrize("finding_id", ["no-such", "f 4", "", "f-4\x00", "é"])
def test_finding_page_of_an_id_the_lake_does_not_hold_is_not_found(con, finding_id):
    with pytest.raises(pages().NotFound):
        pages().finding_page(con, finding_id, "2026-11-28", utc_clock())


def test_round_page_shows_the_round_its_findings_and_its_replay(con):
    pg = pages()
    page = pg.round_page(con, "BAC-07", "R-1", "2026-11-28", Zones(PUERTO_RICO))
    assert (page["round"]["round_id"], page["round"]["dealer_id"]) == ("R-1", "D-1")
    assert [f["finding_id"] for f in page["findings"]] == ["f-4"]
    assert [e["type"] for e in page["replay"]][:2] == ["round_started", "bets_closed"]
    assert page["started"].endswith(" AST")


@pytest.mark.parametrize("table, round_id, day", [("BAC-07", "R-1", "2026-11-27"), ("BAC-08", "R-1", "2026-11-28"),
                                                   ("BAC-07", "R-404", "2026-11-28"), ("BAC 07", "R-1", "2026-11-28")])
def test_round_page_of_a_round_not_held_that_day_is_not_found(con, table, round_id, day):
    with pytest.raises(pages().NotFound):
        pages().round_page(con, table, round_id, day, utc_clock())


def test_pack_page_shows_its_custody_as_pack_custody_answers(con):
    from pitwatch.queries.catalog import run_query

    page = pages().pack_page(con, "BAC-07", "P-1", "2026-11-28", utc_clock())
    columns, rows = run_query(con, "pack_custody", {"table_id": "BAC-07", "pack_id": "P-1"})
    assert [{k: v for k, v in c.items() if k != "shown_ts"} for c in page["custody"]] == [
        dict(zip(columns, r)) for r in rows]
    stages = [c["stage"] for c in page["custody"]]
    assert stages[0] == "shuffle" and stages[-1] == "summary" and "burn" in stages and "cutting card" in stages
    assert page["pack"]["pack_id"] == "P-1"


def test_pack_page_of_a_pack_of_another_day_is_not_found(con):
    with pytest.raises(pages().NotFound, match="no pack P-1 of table BAC-07 on gaming day 2026-11-27"):
        pages().pack_page(con, "BAC-07", "P-1", "2026-11-27", utc_clock())


def test_a_day_that_is_no_date_is_refused_on_every_page(con):
    pg = pages()
    for call in (lambda: pg.finding_page(con, "f-4", "yesterday", utc_clock()),
                 lambda: pg.round_page(con, "BAC-07", "R-1", None, utc_clock()),
                 lambda: pg.pack_page(con, "BAC-07", "P-1", "2026-02-30", utc_clock()),
                 lambda: pg.dealers_tables_page(con, "2026-11", None)):
        with pytest.raises(pg.Refused):
            call()


# ---------------------------------------------------------------- Dealers & tables

def test_dealers_tables_page_answers_as_the_named_queries_over_thirty_days(con):
    from pitwatch.queries.catalog import run_query

    page = pages().dealers_tables_page(con, "2026-11-28", None)
    days = {"from_day": "2026-10-30", "to_day": "2026-11-28"}
    assert (page["from_day"], page["to_day"]) == (dt.date(2026, 10, 30), DAY2)
    for key, name, extra in (("dealers", "dealer_scorecard", {}), ("tables", "table_health", {}),
                             ("hold", "hold", {"by": "table"})):
        columns, rows = run_query(con, name, {**days, **extra})
        assert page[key] == [dict(zip(columns, r)) for r in rows], name
    assert [d["dealer_id"] for d in page["dealers"]] == ["D-1", "D-2", "D-3"]
    # a finding about a pack (CUT_PLACEMENT, BURN_SKIPPED: no round) counts on its day too
    assert [(t["day"], t["rounds"], t["findings"]) for t in page["dealer_trends"]["D-1"]] == [(DAY1, 1, 1), (DAY2, 2, 4)]
    assert [(t["day"], t["rounds"]) for t in page["table_trends"]["TBP-02"]] == [(DAY2, 8)]


def test_dealers_tables_page_leaves_out_days_after_the_day_asked(con):
    page = pages().dealers_tables_page(con, "2026-11-27", None)
    assert [(t["day"], t["rounds"]) for t in page["table_trends"]["BAC-07"]] == [(DAY1, 1)]
    assert "TBP-02" not in page["table_trends"]


# ---------------------------------------------------------------- the table's clock

def test_clock_shows_a_time_to_the_second_with_the_zone_named():
    ts = dt.datetime(2026, 11, 28, 21, 47, 21, 748000, tzinfo=dt.timezone.utc)
    assert Zones(PUERTO_RICO).show(ts, "BAC-07") == "2026-11-28 17:47:21 AST"
    assert Zones("UTC").show(ts, "BAC-07") == "2026-11-28 21:47:21 UTC"
    assert Zones("UTC", {"BAC-07": PUERTO_RICO}).show(ts, "BAC-08") == "2026-11-28 21:47:21 UTC"


def test_clock_of_a_lake_no_run_has_written_is_utc(lake):
    clock = Zones.read(Lake.at(lake))
    assert (clock.lake, dict(clock.tables)) == ("UTC", {})


def test_the_lake_s_last_day_is_none_before_any_run(lake):
    assert pages().latest_day(Lake.at(lake)) is None        # the hand-built lake: no runs table


def test_a_round_s_replay_reads_its_day_and_the_days_either_side_only(con):
    pg = pages()
    near = pg.round_replay(con, "BAC-07", "R-1", DAY2 + dt.timedelta(days=1), utc_clock())
    far = pg.round_replay(con, "BAC-07", "R-1", DAY2 + dt.timedelta(days=2), utc_clock())
    assert len(near) == 12 and near[0]["type"] == "round_started" and far == []


def test_a_pack_s_custody_reads_its_day_and_the_days_either_side_only(con):
    from pitwatch.queries.lake_views import run_sql

    sql = pages()._days_bound("pack_custody", ("events", "rounds", "packs", "findings"))
    args = {"table_id": "BAC-07", "pack_id": "P-1"}
    near = run_sql(con, sql, {**args, "first_day": DAY2, "last_day": DAY2}).rows
    far = run_sql(con, sql, {**args, "first_day": DAY2 + dt.timedelta(days=1), "last_day": DAY2 + dt.timedelta(days=3)}).rows
    assert len(near) == 16 and all(r[1] == "summary" for r in far)


def test_a_finding_linked_without_its_day_is_found_in_the_lake_s_last_days_only(con):
    pg = pages()
    assert pg.finding_page(con, "f-4", None, utc_clock(), latest=DAY2 + dt.timedelta(days=2))["finding"]["gaming_day"] == DAY2
    with pytest.raises(pg.NotFound, match=r"no finding f-4 in the gaming days 2026-11-29 to 2026-12-01 \(give the day"):
        pg.finding_page(con, "f-4", None, utc_clock(), latest=DAY2 + dt.timedelta(days=3))
    with pytest.raises(pg.Refused):          # no day and no run yet: nothing to look in
        pg.finding_page(con, "f-4", None, utc_clock())
