"""Time on the simulated floor: integer milliseconds since the Unix epoch (UTC).

Every table keeps its own clock (the true time of what happens at it).  A
device writes ``ts`` from its own clock: true time plus a fixed skew of up to
±1 s (so two devices disagree by up to 2 s), shown in UTC (``Z``) or, for the
dealer terminals of the Puerto Rico games, in local time with ``-04:00``,
exactly as in the user's example floor (``tests/data/clean-floor-2h.jsonl.gz``).  Stream-internal order is
never disturbed: a device's skew is constant, so its ``ts`` grows with ``seq``.

Gaming day: the local date of ``ts`` minus the cutoff (default 06:00, UTC),
as ``pitwatch.schemas.decode.GamingDayConfig`` computes it for the lake.
"""
from __future__ import annotations

import datetime as _dt
import time

from pitwatch.schemas.decode import GamingDayConfig

MS = 1
SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def to_ms(when: _dt.datetime) -> int:
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def from_ms(ms: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=ms)


def minute_prefix(local_minute: int) -> str:
    """'YYYY-MM-DDTHH:MM:' of a minute count since the epoch (already shifted to local time)."""
    return time.strftime("%Y-%m-%dT%H:%M:", time.gmtime(local_minute * 60))


def tz_suffix(offset_minutes: int) -> str:
    if offset_minutes == 0:
        return "Z"
    sign = "-" if offset_minutes < 0 else "+"
    m = abs(offset_minutes)
    return f"{sign}{m // 60:02d}:{m % 60:02d}"


class GamingDays:
    """Gaming day of a UTC instant, with the day's end cached (cheap per event)."""

    def __init__(self, config: GamingDayConfig | None = None):
        self.config = config or GamingDayConfig()
        self._cache: dict[str, int] = {}

    def day(self, ms: int) -> tuple[str, int]:
        """(gaming day 'YYYY-MM-DD', UTC ms at which the next gaming day starts)."""
        when = from_ms(ms)
        label = self.config.gaming_day(when)
        key = label.isoformat()
        end = self._cache.get(key)
        if end is None:
            zone = self.config.zone
            local_next = _dt.datetime.combine(label + _dt.timedelta(days=1), _dt.time()) + self.config.cutoff_delta
            if zone is _dt.timezone.utc:
                end = to_ms(local_next.replace(tzinfo=_dt.timezone.utc))
            else:
                end = to_ms(local_next.replace(tzinfo=zone).astimezone(_dt.timezone.utc))
            self._cache[key] = end
        return key, end
