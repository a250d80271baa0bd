"""Issue 43 item 1 end to end: one local time per table on a real ``pitwatch run``.

A simulated floor whose TBP and COM terminals write ``-04:00`` while every shoe and the baccarat
terminal write ``Z`` (so one table's rows carry two offsets), played 09:30-10:30 UTC: 05:30-06:30 in
America/Puerto_Rico, across the lake's 06:00 cutoff.  ``pitwatch.toml`` files gaming days in
America/Puerto_Rico and shows the combate table in America/New_York, where the same hour is 04:30-05:30,
before the cutoff: filed by the display zone, its late rows would fall a day earlier.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import subprocess
import zoneinfo

import pytest

from pitwatch.lake import Lake
from pitwatch.lake import settings as lake_settings
from tests.conftest import run_pitwatch_process

pytestmark = pytest.mark.slow

LAKE_ZONE, COMBATE_ZONE = "America/Puerto_Rico", "America/New_York"


def pitwatch(*args) -> subprocess.CompletedProcess:
    done = run_pitwatch_process(*args, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def rows(output: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(output)))


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    root = tmp_path_factory.mktemp("zones")
    pitwatch("simulate", "--out", root / "floor", "--tables", "three_bet_poker=1,combate=1,baccarat=1",
             "--start", "2026-11-28T09:30:00Z", "--hours", "1", "--faults", "0.05", "--seed", "43", "--quiet")
    return root


def sql(lake, statement: str, *more: str) -> list[dict]:
    return rows(pitwatch("sql", statement, "--lake", lake, "--format", "csv", *more).stdout)


@pytest.fixture(scope="module")
def lake(floor) -> str:
    config = floor / "pitwatch.toml"
    config.write_text(f'timezone = "{LAKE_ZONE}"\ncutoff = "06:00"\n\n[display.tables]\n"COM-01" = "{COMBATE_ZONE}"\n')
    done = pitwatch("run", floor / "floor", "--lake", floor / "lake", "--config", config)
    assert "display zones recorded: COM-01 America/New_York" in done.stderr, done.stderr[-2000:]
    return str(floor / "lake")


def test_the_floor_has_the_tables_and_offsets_the_test_needs(lake):
    got = sql(lake, "SELECT table_id, list(DISTINCT ts_offset ORDER BY ts_offset) AS offsets FROM events "
                    "WHERE table_id IS NOT NULL GROUP BY table_id ORDER BY table_id")
    offsets = {r["table_id"]: r["offsets"] for r in got}
    assert offsets["COM-01"] == "[-240, 0]" and offsets["TBP-01"] == "[-240, 0]", offsets


def test_the_run_records_the_tables_display_zone_in_the_lake(lake):
    assert lake_settings.table_zone(Lake.at(lake), "COM-01") == COMBATE_ZONE
    assert lake_settings.table_zone(Lake.at(lake), "TBP-01") == LAKE_ZONE
    assert lake_settings.recorded(Lake.at(lake))["timezone"] == LAKE_ZONE
    (run,) = sql(lake, "SELECT options->>'display_tables' AS display FROM runs")
    assert json.loads(run["display"]) == {"COM-01": COMBATE_ZONE}       # what the run was given, in its record


def test_local_shows_one_zone_per_table_whichever_device_wrote(lake):
    got = sql(lake, "SELECT table_id, ts, ts_offset FROM events WHERE table_id IS NOT NULL", "--local")
    zones: dict[str, set] = {}
    for r in got:
        zones.setdefault(r["table_id"], set()).add(r["ts"].rsplit(" ", 1)[1])
    assert zones == {"BAC-01": {"AST"}, "TBP-01": {"AST"}, "COM-01": {"EST"}}, zones


def test_gaming_days_stay_the_lakes_zone_and_cutoff(lake):
    got = sql(lake, "SELECT table_id, ts, gaming_day FROM events WHERE table_id = 'COM-01'")
    here = zoneinfo.ZoneInfo(LAKE_ZONE)

    def day(ts: str, zone) -> str:
        return str((dt.datetime.fromisoformat(ts).astimezone(zone) - dt.timedelta(hours=6)).date())

    assert got and all(r["gaming_day"] == day(r["ts"], here) for r in got)
    # the display zone would have filed the rows after 06:00 AST (05:00 EST) a day earlier
    assert {r["gaming_day"] for r in got} == {"2026-11-27", "2026-11-28"}
    assert any(day(r["ts"], zoneinfo.ZoneInfo(COMBATE_ZONE)) != r["gaming_day"] for r in got)


def test_round_replay_and_pack_custody_answer_with_local_in_the_tables_zone(lake):
    (first,) = sql(lake, "SELECT round_id, pack_id FROM rounds WHERE table_id = 'COM-01' ORDER BY round_id LIMIT 1")
    replay = pitwatch("query", "round_replay", "--lake", lake, "--param", "table_id=COM-01",
                      "--param", f"round_id={first['round_id']}", "--format", "csv", "--local")
    custody = pitwatch("query", "pack_custody", "--lake", lake, "--param", "table_id=COM-01",
                       "--param", f"pack_id={first['pack_id']}", "--format", "csv", "--local")
    for done in (replay, custody):
        times = [r["ts"] for r in rows(done.stdout) if r["ts"]]
        assert times and all(t.endswith(" EST") for t in times), done.stdout[:2000]
