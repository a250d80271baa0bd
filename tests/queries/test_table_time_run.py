"""Issue 29 item 2 end to end: a simulated floor whose TBP and COM terminals write ``-04:00``,
through a real ``pitwatch run`` (gaming days in America/Puerto_Rico), then ``pitwatch query`` /
``pitwatch sql`` with ``--local`` (issue 43: every table's times in the lake's zone, whichever
device's offset).

Every finding must carry the offset of the event that completed its evidence and the
earliest evidence time, checked against the lake's own events; the lake's bytes are
unchanged by the queries.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import subprocess

import pytest

from pitwatch.config import display_time
from pitwatch.lake import Lake
from tests.conftest import run_pitwatch_process
from tests.queries.test_read_only import tree

pytestmark = pytest.mark.slow


def pitwatch(*args, check=True) -> subprocess.CompletedProcess:
    done = run_pitwatch_process(*args, timeout=900)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def rows(output: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(output)))


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("pr")
    floor, lake = root / "floor", root / "lake"
    pitwatch("simulate", "--out", str(floor), "--tables", "three_bet_poker=1,combate=1,baccarat=1",
             "--hours", "1", "--faults", "0.05", "--seed", "29", "--quiet")
    pitwatch("run", str(floor), "--lake", str(lake), "--timezone", "America/Puerto_Rico", "--quiet")
    return str(lake)


def test_findings_carry_the_offset_of_the_event_that_completed_their_evidence(lake):
    from pitwatch.queries.lake_views import connect, run_sql

    con = connect(Lake.at(lake))
    try:
        (terminals,), = run_sql(con, "SELECT list(DISTINCT device_id ORDER BY device_id) FROM events "
                                     "WHERE ts_offset = -240")[1]
        assert terminals == ["DT-COM01", "DT-TBP01"]
        (others,), = run_sql(con, "SELECT count(*) FROM events WHERE ts_offset IS DISTINCT FROM 0 "
                                  "AND device_id NOT IN ('DT-COM01', 'DT-TBP01')")[1]
        assert others == 0
        # each finding against its evidence events as the lake holds them
        checked = run_sql(con, """
            WITH cited AS (
                SELECT f.finding_id, f.ts, f.ts_offset, f.evidence_from, e.ts AS event_ts, e.ts_offset AS event_offset
                FROM findings AS f, unnest(f.evidence) AS c(ref)
                JOIN events AS e ON e.device_id = c.ref.device_id AND e.event_id = c.ref.event_id
            )
            SELECT finding_id, any_value(ts_offset) AS ts_offset, any_value(evidence_from) AS evidence_from,
                   min(event_ts) AS first_ts,
                   list(DISTINCT event_offset) FILTER (WHERE event_ts = ts) AS completing_offsets
            FROM cited GROUP BY finding_id""")[1]
    finally:
        con.close()
    assert len(checked) >= 5, "the simulated faults gave too few findings to check"
    for finding_id, offset, evidence_from, first_ts, completing in checked:
        assert evidence_from == first_ts, finding_id
        if len(completing) == 1:       # one offset among the events at the finding's ts: it is that one
            assert offset == completing[0], (finding_id, offset, completing)
    assert any(offset == -240 for _f, offset, *_ in checked), "no finding completed by a -04:00 terminal"


def test_the_video_window_shows_in_the_tables_own_time(lake):
    before = tree(lake)
    listed = pitwatch("sql", "SELECT DISTINCT gaming_day FROM findings ORDER BY 1", "--lake", lake, "--format", "csv")
    days = [r["gaming_day"] for r in rows(listed.stdout)]
    assert days
    local = [r for day in days for r in rows(pitwatch("query", "findings_video", "--lake", lake, "--param",
                                                      f"gaming_day={day}", "--format", "csv", "--local").stdout)]
    utc = [r for day in days for r in rows(pitwatch("query", "findings_video", "--lake", lake, "--param",
                                                    f"gaming_day={day}", "--format", "csv").stdout)]
    assert [r["finding_id"] for r in local] == [r["finding_id"] for r in utc]
    for mine, plain in zip(local, utc):     # the lake's zone at every table, whichever device's offset
        assert all(mine[c] == display_time(dt.datetime.fromisoformat(plain[c]), "America/Puerto_Rico")
                   for c in ("video_from", "video_to", "ts")), (mine, plain)
        assert all(plain[c].endswith("+00:00") for c in ("video_from", "video_to", "ts")), plain
    assert {r["ts_offset"] for r in local} == {"-240", "0"}       # the shoe's Z and the terminals' -04:00
    zoned = rows(pitwatch("query", "findings_video", "--lake", lake, "--param", f"gaming_day={days[0]}",
                          "--format", "csv", "--show-tz", "America/Puerto_Rico").stdout)
    assert zoned and all(r["ts"].endswith("-04:00") for r in zoned)
    refused = pitwatch("sql", "SET TimeZone = 'America/Puerto_Rico'", "--lake", lake, "--show-tz",
                       "America/Puerto_Rico", check=False)
    assert refused.returncode == 2 and refused.stderr.startswith("Error: ") and "Traceback" not in refused.stderr
    assert tree(lake) == before
