"""One local time per table: ``display_time`` (the text people read) and ``table_zone`` (the zone a
table's times are shown in: its override in the lake's settings, else the lake's zone)."""
from __future__ import annotations

import datetime as _dt
import json

import pytest

from pitwatch.config import check_zone, display_time
from pitwatch.lake import Lake
from pitwatch.lake import parquet as lake_parquet
from pitwatch.lake import settings as lake_settings
from pitwatch.schemas.decode import GamingDayConfig

UTC = _dt.timezone.utc


def test_display_time_is_the_zones_wall_clock_to_the_second_with_its_abbreviation():
    ts = _dt.datetime(2026, 11, 28, 21, 47, 21, 748000, tzinfo=UTC)
    assert display_time(ts, "America/Puerto_Rico") == "2026-11-28 17:47:21 AST"
    assert display_time(ts, "UTC") == "2026-11-28 21:47:21 UTC"


def test_display_time_drops_the_fraction_never_rounding_into_the_next_second():
    ts = _dt.datetime(2026, 11, 28, 23, 59, 59, 999999, tzinfo=UTC)
    assert display_time(ts, "UTC") == "2026-11-28 23:59:59 UTC"


def test_display_time_names_the_offset_where_the_zone_has_no_abbreviation():
    ts = _dt.datetime(2026, 11, 28, 21, 47, 21, tzinfo=UTC)
    assert display_time(ts, "America/Sao_Paulo") == "2026-11-28 18:47:21 -03"


def test_display_time_follows_summer_time():
    summer = _dt.datetime(2026, 7, 1, 16, 0, tzinfo=UTC)
    winter = _dt.datetime(2026, 12, 1, 17, 0, tzinfo=UTC)
    assert display_time(summer, "America/New_York") == "2026-07-01 12:00:00 EDT"
    assert display_time(winter, "America/New_York") == "2026-12-01 12:00:00 EST"


def test_display_time_takes_a_naive_time_as_utc():
    assert display_time(_dt.datetime(2026, 11, 28, 21, 47, 21), "America/Puerto_Rico") == "2026-11-28 17:47:21 AST"


@pytest.mark.parametrize("bad", ["Mars/Olympus_Mons", "", "  ", "../../etc/passwd", "America/", 5, None, "x" * 200])
def test_an_unknown_zone_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match="time zone"):
        check_zone(bad)
    with pytest.raises(ValueError):
        display_time(_dt.datetime(2026, 11, 28, tzinfo=UTC), bad)


def test_a_known_zone_is_accepted():
    assert check_zone("America/Puerto_Rico") == "America/Puerto_Rico"
    assert check_zone("UTC") == "UTC"


def _lake_with_settings(tmp_path, timezone: str, display: dict | None = None) -> Lake:
    lake = Lake.at(tmp_path / "lake")
    lake_settings.record(lake, GamingDayConfig(timezone=timezone), "20261129T070000Z-00000000", display=display)
    return lake


def test_table_zone_is_the_lakes_zone_without_an_override(tmp_path):
    lake = _lake_with_settings(tmp_path, "America/Puerto_Rico")
    assert lake_settings.table_zone(lake, "BAC-01") == "America/Puerto_Rico"


def test_table_zone_is_the_tables_override_and_only_that_tables(tmp_path):
    lake = _lake_with_settings(tmp_path, "America/Puerto_Rico", {"CMB-01": "America/New_York"})
    assert lake_settings.table_zone(lake, "CMB-01") == "America/New_York"
    assert lake_settings.table_zone(lake, "BAC-01") == "America/Puerto_Rico"


def test_table_zone_of_a_lake_never_written_is_utc(tmp_path):
    assert lake_settings.table_zone(Lake.at(tmp_path / "nothing"), "BAC-01") == "UTC"


def test_an_unknown_zone_in_the_lakes_settings_is_a_damaged_file(tmp_path):
    lake = _lake_with_settings(tmp_path, "UTC", {"CMB-01": "America/New_York"})
    path = tmp_path / "lake" / lake_settings.FILE
    body = json.loads(path.read_text())
    body[lake_settings.DISPLAY_KEY] = {"CMB-01": "Mars/Olympus_Mons"}
    path.write_text(json.dumps(body))
    with pytest.raises(lake_parquet.LakeError, match="damaged.*Mars/Olympus_Mons"):
        lake_settings.table_zone(lake, "BAC-01")


# --- [display.tables] in pitwatch.toml: checked, then recorded in the lake by a run ---------------------
def _toml(tmp_path, text: str):
    path = tmp_path / "pitwatch.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_display_tables_of_the_config_file_are_read_as_table_and_zone(tmp_path):
    from pitwatch.config import load

    path = _toml(tmp_path, 'timezone = "America/Puerto_Rico"\n\n[display.tables]\n"CMB-01" = "America/New_York"\n')
    assert load(str(path)).values["display"] == {"CMB-01": "America/New_York"}
    assert "display" not in load(str(_toml(tmp_path, 'timezone = "UTC"\n'))).values


@pytest.mark.parametrize("text, says", [
    ('[display.tables]\n"CMB-01" = "Mars/Olympus_Mons"\n', "display.tables.CMB-01: unknown time zone 'Mars/Olympus_Mons'"),
    ('[display.tables]\n"CMB-01" = 5\n', "display.tables.CMB-01: a time zone must be an IANA name"),
    ('display = "America/New_York"\n', "display must hold one table, [display.tables]"),
    ('[display.zones]\n"CMB-01" = "UTC"\n', "display must hold one table, [display.tables]"),
    ('[display.tables]\n"" = "UTC"\n', "is not a table id"),
])
def test_a_bad_display_zone_is_one_error_line_and_exit_2_before_anything_runs(tmp_path, text, says):
    from tests.conftest import run_pitwatch

    path = _toml(tmp_path, text)
    lake = tmp_path / "lake"
    got = run_pitwatch("run", tmp_path / "nothing.jsonl", "--lake", lake, "--config", path)
    assert got.returncode == 2, got.stderr
    assert got.stderr.startswith("Error: config file ") and says in got.stderr, got.stderr
    assert got.stderr.count("\n") == 1 and not lake.exists()


def test_config_show_lists_the_display_zones_as_from_the_file(tmp_path):
    from tests.conftest import run_pitwatch

    path = _toml(tmp_path, '[display.tables]\n"CMB-01" = "America/New_York"\n"BAC-01" = "UTC"\n')
    got = run_pitwatch("config", "show", "--config", path)
    assert got.returncode == 0, got.stderr
    assert [line.split(None, 1)[1] for line in got.stdout.splitlines() if line.startswith("display ")] == [
        "CMB-01 America/New_York, BAC-01 UTC  [file]"]


def test_recording_display_zones_keeps_the_gaming_days_settings_and_says_when_they_changed(tmp_path):
    lake = _lake_with_settings(tmp_path, "America/Puerto_Rico")
    before = lake_settings.read_file(lake)
    assert lake_settings.record_display(lake, {"CMB-01": "America/New_York"}) is True
    assert lake_settings.record_display(lake, {"CMB-01": "America/New_York"}) is False      # the same: no write
    after = lake_settings.read_file(lake)
    assert {k: after[k] for k in ("timezone", "cutoff", "recorded_by")} == \
        {k: before[k] for k in ("timezone", "cutoff", "recorded_by")}
    assert lake_settings.recorded(lake)["timezone"] == "America/Puerto_Rico"
    assert lake_settings.table_zone(lake, "CMB-01") == "America/New_York"
    assert lake_settings.record_display(lake, {}) is True                               # an empty table clears
    assert lake_settings.table_zone(lake, "CMB-01") == "America/Puerto_Rico"


def test_settings_recorded_again_keep_the_display_zones(tmp_path):
    """A rebuild (or a watcher making the lake) records the gaming day's settings: the overrides stay."""
    lake = _lake_with_settings(tmp_path, "UTC", {"CMB-01": "America/New_York"})
    lake_settings.record(lake, GamingDayConfig(timezone="America/Puerto_Rico"), "20261130T070000Z-00000000")
    assert lake_settings.display_zones(lake) == ("America/Puerto_Rico", {"CMB-01": "America/New_York"})


def test_no_display_zones_are_recorded_on_a_lake_never_written(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    assert lake_settings.record_display(lake, {"CMB-01": "America/New_York"}) is False
    assert not (tmp_path / "lake").exists()
