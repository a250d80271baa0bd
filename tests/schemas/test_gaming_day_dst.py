"""Gaming days never go backwards nor skip through daylight-saving changes (issue 37, item 7).

The gaming day is "the local date of ``ts`` minus the cutoff" (outputs.md): read on the wall clock
that goes backwards in a repeated hour when the cutoff falls in it.  pitwatch's day D begins at the
first instant the zone's clock reads the cutoff on date D (the first pass of a repeated hour; at
the jump when spring-forward skips the cutoff): ``GamingDayConfig.gaming_day``.  Every way pitwatch
computes a gaming day (per event, per micros, on Arrow columns, the engine's callable) agrees.
"""
from __future__ import annotations

import datetime as _dt

import pyarrow as pa
import pytest

from pitwatch.rules.finding import gaming_day_from_config
from pitwatch.schemas.arrow import TS
from pitwatch.schemas.columnar import gaming_days
from pitwatch.schemas.decode import GamingDayConfig

UTC = _dt.timezone.utc
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)


def at(text: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def micros(ts: _dt.datetime) -> int:
    return (ts - EPOCH) // _dt.timedelta(microseconds=1)


def test_the_issues_repeated_hour_does_not_go_backwards():
    """America/New_York, cutoff 01:30, 2026-11-01 (clocks 02:00 EDT -> 01:00 EST): 05:45Z is
    01:45 EDT and 06:15Z is 01:15 EST. The issue saw 11-01 then 10-31; both are 11-01, whose day
    began at the first 01:30 (05:30Z) and ends at 01:30 EST on 11-02 (06:30Z)."""
    config = GamingDayConfig(cutoff="01:30", timezone="America/New_York")
    assert config.gaming_day(at("2026-11-01T05:29:59Z")) == _dt.date(2026, 10, 31)
    assert config.gaming_day(at("2026-11-01T05:30:00Z")) == _dt.date(2026, 11, 1)
    assert config.gaming_day(at("2026-11-01T05:45:00Z")) == _dt.date(2026, 11, 1)
    assert config.gaming_day(at("2026-11-01T06:15:00Z")) == _dt.date(2026, 11, 1)
    assert config.gaming_day(at("2026-11-02T06:29:59Z")) == _dt.date(2026, 11, 1)
    assert config.gaming_day(at("2026-11-02T06:30:00Z")) == _dt.date(2026, 11, 2)
    assert config.day_start_micros(_dt.date(2026, 11, 1)) == micros(at("2026-11-01T05:30:00Z"))


def test_a_cutoff_the_clock_skips_begins_the_day_at_the_jump():
    """America/New_York, cutoff 02:30, 2026-03-08 (clocks 02:00 EST -> 03:00 EDT): there is no
    02:30 that night; the day begins at the jump, 07:00Z (03:00 EDT)."""
    config = GamingDayConfig(cutoff="02:30", timezone="America/New_York")
    assert config.day_start_micros(_dt.date(2026, 3, 8)) == micros(at("2026-03-08T07:00:00Z"))
    assert config.gaming_day(at("2026-03-08T06:59:59Z")) == _dt.date(2026, 3, 7)
    assert config.gaming_day(at("2026-03-08T07:00:00Z")) == _dt.date(2026, 3, 8)


# zones with hour and half-hour changes, changes at midnight, southern summers, none at all
ZONES = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Havana",
         "America/Santiago", "Pacific/Chatham", "America/Puerto_Rico", "UTC"]
CUTOFFS = ["00:00", "00:30", "01:00", "01:30", "02:00", "02:30", "03:00", "03:30", "06:00"]


def _transitions_2026(zone: str) -> list[_dt.datetime]:
    """Instants (to the hour) in 2026 where the zone's UTC offset changes."""
    cfg = GamingDayConfig(timezone=zone)
    out, t = [], at("2026-01-01T00:00:00Z")
    prev = t.astimezone(cfg.zone).utcoffset()
    while t.year == 2026:
        t += _dt.timedelta(hours=1)
        off = t.astimezone(cfg.zone).utcoffset()
        if off != prev:
            out.append(t)
        prev = off
    return out


@pytest.mark.parametrize("zone", ZONES)
def test_gaming_days_are_monotonic_and_every_way_agrees(zone):
    """Every 5 minutes over two days around each 2026 change of the zone, for every cutoff: the
    day never goes backwards, moves by at most one, changes exactly at ``day_start_micros`` of the
    new day; and the per-event, per-micros, columnar and engine ways give the same day."""
    transitions = _transitions_2026(zone) or [at("2026-06-01T00:00:00Z")]
    for cutoff in CUTOFFS:
        config = GamingDayConfig(cutoff=cutoff, timezone=zone)
        engine_day = gaming_day_from_config(config)
        for change in transitions:
            stamps = [change - _dt.timedelta(hours=30) + _dt.timedelta(minutes=5 * i) for i in range(12 * 60)]
            days = [config.gaming_day(ts) for ts in stamps]
            column = gaming_days(pa.array(stamps, TS), config).to_pylist()
            assert column == days, (zone, cutoff, change)
            assert [config.day_of_micros(micros(ts)) for ts in stamps] == days
            assert [engine_day(micros(ts)) for ts in stamps] == days
            for (t0, d0), (t1, d1) in zip(zip(stamps, days), zip(stamps[1:], days[1:])):
                assert d1 - d0 in (_dt.timedelta(0), _dt.timedelta(days=1)), (zone, cutoff, t0, d0, t1, d1)
                if d1 != d0:
                    assert micros(t0) < config.day_start_micros(d1) <= micros(t1), (zone, cutoff, t1)
            # a day begins when the wall clock first reads the cutoff (or later, after a jump)
            for day in sorted(set(days)):
                start = EPOCH + _dt.timedelta(microseconds=config.day_start_micros(day))
                wall = start.astimezone(config.zone).replace(tzinfo=None)
                assert wall >= _dt.datetime.combine(day, _dt.time()) + config.cutoff_delta
                assert config.gaming_day(start) == day
                assert config.gaming_day(start - _dt.timedelta(microseconds=1)) == day - _dt.timedelta(days=1)


def test_the_wall_clock_reading_is_kept_away_from_a_change():
    """Outside a change the day is the local date minus the cutoff, as outputs.md defines it."""
    config = GamingDayConfig(cutoff="06:00", timezone="America/Puerto_Rico")
    assert config.gaming_day(at("2026-11-28T09:59:59Z")) == _dt.date(2026, 11, 27)
    assert config.gaming_day(at("2026-11-28T10:00:00Z")) == _dt.date(2026, 11, 28)
