"""console/report.py on the hand-built lake of tests/queries/lakes.py (no Beam): which findings are
pictured, a finding of a pack (no round) shown by its text, the tiles' counts, a reviewed finding
left out, and a hostile text from the lake shown as text, never markup."""
from __future__ import annotations

import datetime as dt

import pytest

from pitwatch.console import report as day_report
from pitwatch.lake import Lake
from pitwatch.queries.lake_views import connect
from tests.queries.lakes import DAY2, RUN_ID, add_reviews, at, build_lake


def _html(lake: str) -> str:
    from pitwatch.lake.verify import Report

    con = connect(Lake.at(lake))
    try:      # verify's report of a lake with nothing to say (this lake has no runs chain to verify)
        built = day_report.build(Lake.at(lake), con, DAY2, Report(lake).to_dict(), now=at(DAY2, 23, 0))
    finally:
        con.close()
    return day_report.html(built)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    return _html(build_lake(str(tmp_path_factory.mktemp("lake"))))


def test_open_critical_and_major_findings_are_listed_a_rounds_pictured_a_packs_by_its_text(page):
    listed = [part.split('"', 1)[0] for part in page.split('data-finding="')[1:]]
    # DAY2's critical and major findings in time order; BURN_SKIPPED f-11, f-12 (major) included
    assert listed == ["f-1", "f-2", "f-3", "f-4", "f-11", "f-12", "f-13"]
    assert 'id="round-f-4"' in page and 'id="round-f-12"' in page and 'id="round-f-13"' in page
    assert 'id="finding-f-1"' in page and "no round: the finding is of the pack" in page
    assert 'id="round-f-1"' not in page


def test_the_tiles_count_the_days_rounds_and_findings(page):
    def tile(label: str) -> str:
        return page.split(f'data-tile="{label}"', 1)[1].split('class="value">', 1)[1].split("<", 1)[0]

    assert (tile("rounds"), tile("critical"), tile("major"), tile("minor"), tile("open")) == ("12", "2", "5", "0", "7")


def test_a_reviewed_finding_is_not_listed_open(tmp_path):
    lake = build_lake(str(tmp_path / "lake"))
    add_reviews(lake, [{"review_id": "r-1", "finding_id": "f-4", "disposition": "confirmed", "reason": "DEALER_ERROR",
                        "reviewer": "A. Ortiz", "reviewed_at": dt.datetime(2026, 11, 29, 8, tzinfo=dt.timezone.utc)}],
                run_id=RUN_ID)
    page = _html(lake)
    assert 'data-finding="f-4"' not in page and 'data-finding="f-13"' in page


def test_a_hostile_text_in_the_lake_is_shown_as_text(tmp_path, monkeypatch):
    from tests.queries import lakes

    hostile = [dict(f) for f in lakes.FINDINGS]
    hostile[2] = {**hostile[2], "actual": "<script>alert(1)</script>"}       # f-1, CUT_PLACEMENT
    monkeypatch.setattr(lakes, "FINDINGS", hostile)
    page = _html(lakes.build_lake(str(tmp_path / "lake")))
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
