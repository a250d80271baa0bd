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
