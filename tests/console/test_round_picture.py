"""console/round_picture.py on the hand-built lake of tests/queries/lakes.py: BAC-07's round R-1,
where the shoe read 9c at draw 4 and the terminal recorded 8c (finding f-4), and round R-2, clean."""
from __future__ import annotations

import datetime as dt

import pytest

from pitwatch.console import round_picture
from pitwatch.console.round_picture import Card, Draw
from pitwatch.lake import Lake
from pitwatch.queries.lake_views import connect
from tests.queries.lakes import DAY2, build_lake

ZONE = "America/Puerto_Rico"      # UTC-4 all year: 20:06:20Z is 16:06:20 AST


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    con = connect(Lake.at(build_lake(str(tmp_path_factory.mktemp("lake")))))
    yield con
    con.close()


def test_the_mismatched_draw_is_highlighted_side_by_side_and_the_others_are_not(con):
    picture = round_picture.load(con, "BAC-07", "R-1", DAY2, ZONE, finding_id="f-4")
    day = "2026-11-28 16:06:"
    assert picture.draws == (
        Draw(2, Card("7h", day + "00 AST", False), Card("7h", day + "01 AST", False, "player up")),
        Draw(3, Card("Kd", day + "10 AST", False), Card("Kd", day + "11 AST", False, "banker up")),
        Draw(4, Card("9c", day + "20 AST", True), Card("8c", day + "21 AST", True, "player up")),
        Draw(5, Card("2s", day + "30 AST", False), Card("2s", day + "31 AST", False, "banker up")),
    )
    assert [d.place for d in picture.draws if d.differs] == [4]
    html = round_picture.render(picture).split("</style>", 1)[1]
    assert html.count("cited-row") == 1 and 'class="differs cited-row" data-place="4"' in html


def test_bets_and_payouts_sit_beside_their_seat(con):
    picture = round_picture.load(con, "BAC-07", "R-1", DAY2, ZONE, finding_id="f-4")
    assert [(s.seat, [(w.kind, w.spot, w.amount, w.result, w.at, w.cited) for w in s.wagers])
            for s in picture.seats] == [(3, [("payout", "banker", -100.0, "lose", "2026-11-28 16:07:00 AST", False)])]
    assert "seat 3" in round_picture.render(picture)


def test_the_video_window_and_times_are_the_zones_to_the_second(con):
    picture = round_picture.load(con, "BAC-07", "R-1", DAY2, ZONE, finding_id="f-4", video_pad=30)
    assert (picture.video_from, picture.video_to) == ("2026-11-28 16:05:51 AST", "2026-11-28 16:06:51 AST")
    assert (picture.started, picture.ended) == ("2026-11-28 16:05:00 AST", "2026-11-28 16:05:50 AST")
    assert picture.finding["rule_id"] == "SHOE_CARD_MISMATCH" and picture.dealer == "D-1"


def test_a_round_without_a_finding_highlights_nothing(con):
    picture = round_picture.load(con, "BAC-07", "R-2", DAY2, ZONE)
    assert [(d.place, d.shoe.card, d.terminal.card, d.differs, d.cited) for d in picture.draws] == [
        (6, "4d", "4d", False, False), (7, "5d", "5d", False, False),
        (8, "6d", "6d", False, False), (9, "Qh", "Qh", False, False)]
    assert [(s.type, s.detail, s.cited) for s in picture.steps if s.source == "shoe"] == [
        ("cut_card_drawn", "after 5 cards", False)]
    assert "cited" not in round_picture.render(picture).split("</style>", 1)[1]
    # the window around the round itself
    assert (picture.video_from, picture.video_to) == ("2026-11-28 16:07:30 AST", "2026-11-28 16:09:20 AST")


def test_a_round_is_read_from_its_days_alone(con):
    """The same round asked for a week later: its events are not in those days' files, so nothing."""
    picture = round_picture.load(con, "BAC-07", "R-1", DAY2 + dt.timedelta(days=7), ZONE)
    assert picture.draws == () and picture.seats == () and picture.started is None


def test_a_finding_of_another_day_is_refused(con):
    from pitwatch.queries.errors import LakeQueryError

    with pytest.raises(LakeQueryError, match="no finding f-4 on gaming day 2026-11-27"):
        round_picture.load(con, "BAC-07", "R-1", DAY2 - dt.timedelta(days=1), ZONE, finding_id="f-4")
