"""The analyst pages through a real ``pitwatch serve`` process, over HTTP: Findings and its filters,
a finding with its round picture and evidence, a round, a pack, Dealers & tables, ids the lake does
not hold (a 404 page, never a traceback), and the review form: a reviewer's review is written
naming them, a viewer sees no form and their POST is 403 with nothing written."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pitwatch.lake import Lake
from tests.console.conftest import add_people

pytestmark = pytest.mark.slow


def logged_in(served, client, name="vera"):
    c = client(served)
    assert c.login(name)[0] == 200
    return c


def finding_ids(body: str) -> list[str]:
    return re.findall(r'href="/findings/([^"?/]+)\?day=', body)


def test_findings_page_lists_what_passes_the_filters_with_its_charts(small_lake, serve, client):
    c = logged_in(serve(small_lake), client)
    status, _url, body, _ = c.get("/findings?day=2026-11-28&severity=critical")
    assert status == 200
    assert finding_ids(body) == ["f-4", "f-13"]
    assert "2 findings" in body and body.count("<svg") == 3          # by rule, by table, by hour
    status, _url, body, _ = c.get("/findings?day=2026-11-28&table=BAC-08")
    assert finding_ids(body) == ["f-11"]


@pytest.mark.parametrize("query, says", [
    ("day=2026-02-30", "is not a gaming day"), ("day=2026-11-28&severity=fatal", "is not one of"),
    ("day=2026-11-28&sql=drop", "no filter"), ("day=2026-11-28&day=2026-11-27", "given twice")])
def test_findings_page_refuses_a_filter_it_does_not_take_with_a_400_page(small_lake, serve, client, query, says):
    c = logged_in(serve(small_lake), client)
    status, _url, body, _ = c.get("/findings?" + query)
    assert status == 400 and says in body and "Traceback" not in body


@pytest.mark.parametrize("day", ["0001-01-01", "9999-12-31"])
@pytest.mark.parametrize("page", ["/findings", "/findings/f-4", "/rounds/BAC-07/r-1", "/packs/BAC-07/p-1", "/dealers"])
def test_a_day_at_the_end_of_the_calendar_is_a_400_page_not_a_server_error(small_lake, serve, client, page, day):
    """A page reads the days around the one asked (a round's pack, a 30-day trend): at the calendar's
    first or last day that arithmetic overflowed into a 500 (issue 43 review)."""
    c = logged_in(serve(small_lake), client)
    status, _url, body, _ = c.get(f"{page}?day={day}")
    assert status == 400 and "outside the years a lake holds" in body and "Traceback" not in body
    assert c.get("/findings?day=2026-11-28")[0] == 200      # the must not: a day of the lake is served


def test_finding_page_shows_the_round_picture_the_evidence_and_no_form_to_a_viewer(small_lake, serve, client):
    served = serve(small_lake)
    viewer = logged_in(served, client)
    status, _url, body, _ = viewer.get("/findings/f-4?day=2026-11-28")
    assert status == 200
    assert 'class="round-picture"' in body and "9c" in body and "8c" in body    # the shoe read 9c, the terminal 8c
    assert "Video" in body and "Not reviewed yet." in body
    assert 'action="/findings/f-4/reviews' not in body
    reviewer = logged_in(served, client, "rita")
    assert 'action="/findings/f-4/reviews' in reviewer.get("/findings/f-4?day=2026-11-28")[2]


def test_round_pack_and_dealers_pages(small_lake, serve, client):
    c = logged_in(serve(small_lake), client)
    status, _url, body, _ = c.get("/rounds/BAC-07/R-1?day=2026-11-28")
    assert status == 200 and "Round R-1 at BAC-07" in body and 'href="/findings/f-4?day=2026-11-28"' in body
    status, _url, body, _ = c.get("/packs/BAC-07/P-1?day=2026-11-28")
    assert status == 200 and "Pack P-1 at BAC-07" in body
    assert [s for s in re.findall(r'class="stage-([a-z-]+)"', body)][:2] == ["shuffle", "cut"]
    status, _url, body, _ = c.get("/dealers?day=2026-11-28")
    assert status == 200 and "D-1" in body and "TBP-02" in body and "<svg" in body


@pytest.mark.parametrize("path", ["/findings/f-4?day=2026-11-27", "/findings/no-such?day=2026-11-28",
                                  "/rounds/BAC-07/R-404?day=2026-11-28", "/packs/BAC-09/P-1?day=2026-11-28",
                                  "/findings/%3Cscript%3E?day=2026-11-28"])
def test_an_id_the_lake_does_not_hold_is_a_404_page(small_lake, serve, client, path):
    c = logged_in(serve(small_lake), client)
    status, _url, body, _ = c.get(path)
    assert status == 404 and "Traceback" not in body and "<script>" not in body


# ---------------------------------------------------------------- the review form, on a lake a run wrote

@pytest.fixture(scope="module")
def run_lake(tmp_path_factory):
    """A simulated hour of one baccarat table with every burn skipped, replayed by pitwatch run."""
    from click.testing import CliRunner

    from pitwatch.cli import main

    root = tmp_path_factory.mktemp("reviewed")
    out, lake = root / "feeds", root / "lake"
    sim = CliRunner().invoke(main, ["simulate", "--out", str(out), "--tables", "baccarat=1", "--hours", "1",
                                    "--fault", "BURN_SKIPPED=1"])
    assert sim.exit_code == 0, sim.output
    run = CliRunner().invoke(main, ["run", str(out), "--lake", str(lake), "--quiet"])
    assert run.exit_code == 0, run.output
    return str(lake)


def _a_finding(lake: str, *more: str) -> tuple:
    """The first finding of the lake: its id and gaming day (text), then its columns ``more`` (a
    ``round_id`` there is the first round of the finding's pack, for a finding about a pack)."""
    from pitwatch.queries.lake_views import connect

    con = connect(Lake.at(lake))
    try:
        more = tuple("coalesce(round_id, (SELECT min(r.round_id) FROM rounds AS r WHERE r.gaming_day = f.gaming_day "
                     "AND r.table_id = f.table_id AND r.pack_id = f.pack_id))" if c == "round_id" else c for c in more)
        row = con.execute(f"SELECT finding_id, gaming_day::VARCHAR {''.join(', ' + c for c in more)} "
                          "FROM findings AS f ORDER BY ts LIMIT 1").fetchone()
    finally:
        con.close()
    return tuple(row)


def test_a_reviewer_records_a_review_and_a_viewer_is_refused_with_nothing_written(run_lake, serve, client, tmp_path):
    from pitwatch.lake.reviews import current_version

    lake = str(tmp_path / "lake")
    shutil.copytree(run_lake, lake)
    add_people(lake)            # the users file beside the lake
    fid, day = _a_finding(lake)
    served = serve(lake)
    viewer = logged_in(served, client)
    status, _url, body, _ = viewer.get("/findings")         # no day: the last night's
    assert status == 200 and f"Findings of {day}" in body and fid in finding_ids(body)
    status, _url, body, _ = viewer.get(f"/findings/{fid}")  # as the Live page links it: no day
    assert status == 200 and f"<dd>{day}</dd>" in body
    viewer.get(f"/findings/{fid}?day={day}")
    status, _url, _body, _ = viewer.post(f"/findings/{fid}/reviews?day={day}", {"disposition": "dismissed"})
    assert status == 403 and current_version(Lake.at(lake)) is None
    reviewer = logged_in(served, client, "rita")
    reviewer.get(f"/findings/{fid}?day={day}")
    status, _url, body, _ = reviewer.post(f"/findings/{fid}/reviews?day={day}", {"disposition": "confirmed"},
                                          token=False)
    assert status == 403 and current_version(Lake.at(lake)) is None       # no CSRF token: nothing written
    reviewer.get(f"/findings/{fid}?day={day}")
    status, url, body, _ = reviewer.post(f"/findings/{fid}/reviews?day={day}",
                                         {"disposition": "confirmed", "reason": "DEALER_ERROR", "note": "on video"})
    assert status == 200 and url == f"/findings/{fid}?day={day}"
    assert re.search(r"<td>rita</td><td>confirmed</td><td>DEALER_ERROR</td>\s*<td>on video</td>", body)
    assert current_version(Lake.at(lake)) == 0
    status, _url, body, _ = reviewer.post(f"/findings/{fid}/reviews?day={day}", {"disposition": "approved"})
    assert status == 400 and "review refused" in body and current_version(Lake.at(lake)) == 0
    assert Path(lake, "reviews").is_dir()


def _reviewer_on_a_copy(run_lake, serve, client, tmp_path):
    """A copy of ``run_lake`` served, rita (a reviewer) logged in on its first finding's page: (lake, client, id, day)."""
    lake = str(tmp_path / "lake")
    shutil.copytree(run_lake, lake)
    add_people(lake)
    fid, day = _a_finding(lake)
    reviewer = logged_in(serve(lake), client, "rita")
    reviewer.get(f"/findings/{fid}?day={day}")
    return lake, reviewer, fid, day


def test_a_review_posted_with_a_day_that_is_no_date_is_a_400_with_nothing_written(run_lake, serve, client, tmp_path):
    from pitwatch.lake.reviews import current_version

    lake, reviewer, fid, day = _reviewer_on_a_copy(run_lake, serve, client, tmp_path)
    status, _url, body, _ = reviewer.post(f"/findings/{fid}/reviews?day=9999-99-99",
                                          {"disposition": "confirmed", "reason": "DEALER_ERROR"})
    assert status == 400 and "is not a gaming day" in body and current_version(Lake.at(lake)) is None
    status, url, _body, _ = reviewer.post(f"/findings/{fid}/reviews?day={day}",      # the must: with a day, written
                                          {"disposition": "confirmed", "reason": "DEALER_ERROR"})
    assert status == 200 and url == f"/findings/{fid}?day={day}" and current_version(Lake.at(lake)) == 0


def test_a_review_form_with_a_file_in_it_is_a_400_with_nothing_written(run_lake, serve, client, tmp_path):
    import urllib.request

    from pitwatch.lake.reviews import current_version

    lake, reviewer, fid, day = _reviewer_on_a_copy(run_lake, serve, client, tmp_path)
    boundary = "pitwatch-test-boundary"
    parts = [("csrf_token", None, reviewer.token), ("disposition", None, "confirmed"),
             ("reason", None, "DEALER_ERROR"), ("note", "note.txt", "on video")]
    body = "".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"'
                   + (f'; filename="{filename}"\r\nContent-Type: text/plain' if filename else "")
                   + f"\r\n\r\n{value}\r\n" for name, filename, value in parts) + f"--{boundary}--\r\n"
    status, _url, answer, _ = reviewer._answer(urllib.request.Request(
        reviewer.base + f"/findings/{fid}/reviews?day={day}", data=body.encode(),
        headers={"Accept": "text/html", "Content-Type": f"multipart/form-data; boundary={boundary}"}))
    assert status == 400 and "the field &#39;note&#39; is a file, not text" in answer
    assert current_version(Lake.at(lake)) is None

def test_findings_page_shows_a_tables_new_display_zone_without_a_restart(run_lake, serve, client, tmp_path):
    """A run that records a new ``[display.tables]`` zone is shown on the next page, not after a
    restart of ``pitwatch serve`` (the zones are read per request)."""
    from pitwatch.lake import settings as lake_settings

    lake = str(tmp_path / "lake")
    shutil.copytree(run_lake, lake)
    add_people(lake)
    fid, day, table = _a_finding(lake, "table_id")
    c = logged_in(serve(lake), client)
    status, _url, before, _ = c.get(f"/findings?day={day}")
    assert status == 200 and fid in finding_ids(before) and " JST" not in before
    assert lake_settings.record_display(Lake.at(lake), {table: "Asia/Tokyo"})
    status, _url, after, _ = c.get(f"/findings?day={day}")
    assert status == 200 and fid in finding_ids(after) and " JST" in after
