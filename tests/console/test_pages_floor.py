"""The analyst pages' data on a simulated floor run by the nightly batch (end to end, slow): the
Findings page lists the injected faults' findings and nothing else, and a reviewer's review from
the finding page is recorded through pitwatch review's code path (lake/reviews.py), under the
lake's lock, naming the reviewer; a refused one writes nothing."""
from __future__ import annotations

import logging

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.lake import Lake

pytestmark = pytest.mark.slow

log = logging.getLogger("pitwatch")


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    """One baccarat table, an hour, every pack's burn skipped: (feeds folder, lake folder)."""
    root = tmp_path_factory.mktemp("floor")
    out, lake = root / "feeds", root / "lake"
    sim = CliRunner().invoke(main, ["simulate", "--out", str(out), "--tables", "baccarat=1", "--hours", "1",
                                    "--fault", "BURN_SKIPPED=1"])
    assert sim.exit_code == 0, sim.output
    run = CliRunner().invoke(main, ["run", str(out), "--lake", str(lake), "--quiet"])
    assert run.exit_code == 0, run.output
    return out, lake


def _connect(lake):
    from pitwatch.queries.lake_views import connect

    return connect(Lake.at(lake))


def test_findings_page_lists_the_injected_faults_and_nothing_else(floor):
    from pitwatch.console.pages import FindingsFilter, findings_page, latest_day
    from pitwatch.console.view import Zones
    from pitwatch.simulator.truth import compare, finding_key, lake_findings, read_truth

    out, lake = floor
    truth = read_truth(out / "truth.jsonl")
    assert any(t["rule_id"] == "BURN_SKIPPED" for t in truth), "the simulator injected no BURN_SKIPPED"
    written = lake_findings(Lake.at(lake))
    assert all(c.matches for c in compare(written, truth).values())
    con = _connect(lake)
    try:
        day = latest_day(Lake.at(lake))
        clock = Zones.read(Lake.at(lake))
        listed = findings_page(con, FindingsFilter.of({"day": str(day)}, None), clock)
        by_id = {f["finding_id"]: f for f in written}
        assert sorted(r["finding_id"] for r in listed["rows"]) == sorted(f["finding_id"] for f in written
                                                                         if f["gaming_day"] == day)
        assert {f["gaming_day"] for f in written} == {day}, "an hour's floor is one gaming day"
        assert sorted(finding_key(by_id[r["finding_id"]]) for r in listed["rows"]) == sorted(map(finding_key, truth))
        assert dict(listed["by_rule"]) == {"BURN_SKIPPED": listed["total"]}
        for r in listed["rows"]:         # every time on the lake's clock, to the second, the zone named
            assert r["shown_ts"] == clock.show(by_id[r["finding_id"]]["ts"], r["table_id"])
    finally:
        con.close()


def test_a_reviewer_s_review_is_recorded_naming_the_logged_in_user(floor, tmp_path):
    from pitwatch.console.pages import add_review, finding_page, latest_day
    from pitwatch.console.view import Zones
    from pitwatch.lake.reviews import ReviewRefused, current_version

    _out, lake = floor
    at = Lake.at(lake)
    day = latest_day(at)
    con = _connect(lake)
    try:
        (fid,), = con.execute("SELECT finding_id FROM findings WHERE gaming_day = $d ORDER BY ts LIMIT 1",
                              {"d": day}).fetchall()
    finally:
        con.close()
    before = current_version(at)
    for form, says in (({"disposition": "approved"}, "disposition 'approved' is not one of"),
                       ({"disposition": "confirmed", "reason": "NO_SUCH_REASON"}, "is not a reason code"),
                       ({"disposition": "confirmed", "reviewer": "someone else"}, "has no field 'reviewer'"),
                       ({"disposition": "confirmed", "amount": "1e3"}, "amount '1e3' is not a number")):
        with pytest.raises(ReviewRefused, match=says):
            add_review(at, fid, form, "M.Ortiz", log)
        assert current_version(at) == before, "a refused review wrote to the lake"
    row = add_review(at, fid, {"disposition": "confirmed", "reason": "DEALER_ERROR", "note": "seen on video",
                               "amount": "-25", "csrf_token": "checked by the page"}, "M.Ortiz", log)
    assert (row["finding_id"], row["disposition"], row["reviewer"], row["note"], row["amount"]) == (
        fid, "confirmed", "M.Ortiz", "seen on video", -25.0)
    with pytest.raises(ReviewRefused, match="already has this review"):
        add_review(at, fid, {"disposition": "confirmed", "reason": "DEALER_ERROR", "note": "seen on video",
                             "amount": "-25.0"}, "M.Ortiz", log)
    con = _connect(lake)
    try:
        page = finding_page(con, fid, str(day), Zones.read(at))
    finally:
        con.close()
    assert [(r["reviewer"], r["disposition"], r["reason"]) for r in page["reviews"]] == [
        ("M.Ortiz", "confirmed", "DEALER_ERROR")]
    assert page["finding"]["status"] == "confirmed"
    verify = CliRunner().invoke(main, ["verify", "--lake", str(lake)])
    assert verify.exit_code == 0, verify.output
