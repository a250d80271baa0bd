"""Times shown to people, until the display-zone work lands (issue 43, deliverable 1): the names of
the shared contract, ``display_time`` and ``table_zone``, with the lake's own zone for every table.
When ``pitwatch.config.display_time`` and ``table_zone`` exist this module goes and its callers
import those (one definition)."""
from __future__ import annotations

import datetime as _dt
from zoneinfo import ZoneInfo

from pitwatch.lake import Lake
from pitwatch.lake import settings as lake_settings


def display_time(ts: _dt.datetime, zone: str) -> str:
    """``2026-11-28 17:47:21 AST``: ``ts`` in ``zone``, to the second, the zone's abbreviation named."""
    local = ts.astimezone(ZoneInfo(zone))
    return local.strftime("%Y-%m-%d %H:%M:%S ") + (local.tzname() or local.strftime("%z"))


def table_zone(lake: Lake, table_id: str) -> str:
    """The IANA zone a table's times are shown in: the lake's (its recorded settings), else UTC."""
    recorded = lake_settings.recorded(lake)
    return (recorded or {}).get("timezone") or "UTC"
