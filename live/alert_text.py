"""An alert as one line of text for the people at a surveillance console (``watch --format text``).

The same line is the ``MSG`` of the syslog sink (:mod:`pitwatch.live.syslog`).  It is
made from the alert record alone (the FINDINGS columns, :func:`pitwatch.live.sinks.alert_record`;
a live-only notice such as ``DEVICE_SILENT`` or a provisional alert has the
same columns), the lake's time zone and the dealers' names, so every kind of
alert reads the same way, and a supervisor reads it at a glance (issue 41)::

    2026-11-28 16:10:48 AST (UTC-04:00)  BAC-01  seat 3  dealer Ana Ruiz (D-1007)  MAJOR  Card dealt out of order: expected …; actual …; video 16:10:11.163 to 16:11:18.247; DEAL_ORDER fdba73a4…

* **time**: the alert's ``ts`` as the floor's clocks show it, to the second:
  in its table's display zone (issue 43: the table's ``[display.tables]`` zone of
  ``pitwatch.toml`` as the lake records it, :func:`pitwatch.lake.settings.display_zones`,
  else the lake's time zone, ``GamingDayConfig.timezone``, the zone its gaming
  days are filed in; never the offset one device wrote), the zone
  named by the tz database's abbreviation and its offset (``AST (UTC-04:00)``:
  an abbreviation alone is ambiguous, ``CST`` is both Chicago and Macau), by
  its offset alone where the database has no letters for it (``UTC-03:00``),
  ``UTC`` for UTC.  Every alert of a table prints in that one zone, so a clearing alert
  and the alert it clears print alike; an alert of no table in the lake's;
* **table** and **place**: ``seat 3``, ``the player hand``, … (:func:`pitwatch.rules.words.place`),
  ``table`` when the alert concerns no one place; ``-`` for an alert of no table;
* the **dealer**: the name the roster gives (the lake's kept roster, ``pitwatch dealers import``,
  or ``--dealers FILE`` instead: ``cli/watch.py`` reads it once at start and hands the names in)
  with the id beside it, the id alone when the roster does not list it or there is none,
  ``-`` when the alert names no dealer;
* **severity** and the rule's plain **title** (the ``title`` column, from the
  rule catalogue; the catalogue's title of the ``rule_id`` when an alert has none, the
  ``rule_id`` itself when the catalogue does not know it either);
* the **cards**: ``expected`` and ``actual`` as the engine wrote them, in words, with the
  cards they name (cards the shoe has not dealt yet are already ``??``:
  :mod:`pitwatch.live.redact`);
* the **video window**: ``video_from`` to ``video_to`` exactly as the named query
  ``findings_video`` computes them (:func:`video_window`: the first evidence
  event's time, ``evidence_from`` — ``ts`` when there is none — less the pad,
  to ``ts`` plus the pad), in the same zone, to the millisecond (the instants
  the morning's query gives); the date is written again only where it changes;
* the ``rule_id`` and ``finding_id``, to find the alert again.

Every text taken from the record or the roster is made printable first (:func:`printable`):
a control character, a line end or a bidirectional override in a table id, a name or a text
would otherwise break the one-line form or make the line read other than it is; each
becomes a visible ``\\xNN`` / ``\\uNNNN`` escape.
"""
from __future__ import annotations

import datetime as _dt
import re
import zoneinfo
from collections.abc import Mapping

from pitwatch.rules.words import place

UTC = _dt.timezone.utc

# C0/C1 controls, DEL, line/paragraph separators, bidi embeddings, overrides and isolates, BOM
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\ufeff]")


def printable(text) -> str:
    """``text`` on one line, each control or bidi character shown as an escape (never removed)."""
    s = "" if text is None else str(text)
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                            else f"\\u{ord(m.group()):04x}", s)


def parse_time(text: str) -> _dt.datetime:
    """An alert's RFC 3339 time (``…Z`` or ``…±HH:MM``) as an aware datetime."""
    return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def table_zone(rec: dict) -> _dt.timezone:
    """The table's own offset: the alert's ``ts_offset`` (minutes east of UTC), UTC when it has none."""
    offset = rec.get("ts_offset")
    if not isinstance(offset, int) or isinstance(offset, bool) or not -1440 < offset < 1440:
        return _dt.timezone.utc
    return _dt.timezone(_dt.timedelta(minutes=offset))


def video_window(rec: dict, pad_seconds: int) -> tuple[_dt.datetime, _dt.datetime]:
    """``(video_from, video_to)`` of an alert, the named query ``findings_video``'s window:
    ``coalesce(evidence_from, ts) - video_pad`` to ``ts + video_pad`` (queries/findings_video.sql)."""
    ts = parse_time(rec["ts"])
    start = parse_time(rec["evidence_from"]) if rec.get("evidence_from") else ts
    pad = _dt.timedelta(seconds=pad_seconds)
    return start - pad, ts + pad


def _clock(when: _dt.datetime) -> str:
    return when.strftime("%H:%M:%S.") + f"{when.microsecond // 1000:03d}"


def zone_label(when: _dt.datetime) -> str:
    """``AST (UTC-04:00)``, ``UTC-03:00`` (no letters in the tz database), ``UTC``: the zone of an aware datetime."""
    offset = when.utcoffset() or _dt.timedelta(0)
    name = when.tzname() or ""
    if offset == _dt.timedelta(0) and name in ("UTC", "GMT", "Z", ""):
        return "UTC" if name != "GMT" else "GMT (UTC+00:00)"
    minutes = int(offset.total_seconds()) // 60
    numeric = f"UTC{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return f"{name} ({numeric})" if name.isalpha() else numeric


def where(rec: dict) -> str:
    """The place at the table the alert is about: ``seat 3``, ``the banker hand``, or ``table``; ``-`` for an
    alert about no table (``SOURCE_LOST``)."""
    if not rec.get("table_id"):
        return "-"
    seat = rec.get("seat")
    if isinstance(seat, int) and not isinstance(seat, bool):
        return place(f"seat:{seat}")
    if rec.get("spot"):
        return printable(place(str(rec["spot"])))
    return "table"


def dealer(rec: dict, dealers: Mapping[str, str] | None) -> str:
    """``Ana Ruiz (D-1007)`` from the roster, ``D-1007`` when it does not list the id, ``-`` for no dealer."""
    dealer_id = rec.get("dealer_id")
    if not dealer_id:
        return "-"
    name = (dealers or {}).get(dealer_id)
    return f"{printable(name)} ({printable(dealer_id)})" if name else printable(dealer_id)


def title(rec: dict) -> str:
    """The rule's plain title: the record's, else the catalogue's, else the ``rule_id``."""
    if rec.get("title"):
        return printable(rec["title"])
    from pitwatch.rules.catalog import rule

    try:
        return rule(str(rec.get("rule_id"))).title
    except KeyError:
        return printable(rec.get("rule_id"))


def alert_line(rec: dict, video_pad: int, zone: _dt.tzinfo = UTC, dealers: Mapping[str, str] | None = None,
               tables: Mapping[str, str] | None = None) -> str:
    """The one line of text of an alert record (see the module doc): its times in its table's zone
    (``tables``: table id -> IANA zone, the lake's display overrides; else ``zone``, the lake's),
    its dealer named from ``dealers`` (id -> name)."""
    table = rec.get("table_id")
    if tables and isinstance(table, str) and table in tables:
        zone = zoneinfo.ZoneInfo(tables[table])
    ts = parse_time(rec["ts"]).astimezone(zone)
    video = ""
    if rec.get("table_id"):      # an alert about no table (an input lost) has no camera to look at
        start, end = (w.astimezone(zone) for w in video_window(rec, video_pad))
        video_from = _clock(start) if start.date() == ts.date() else f"{start.date()} {_clock(start)}"
        video_to = _clock(end) if end.date() == start.date() else f"{end.date()} {_clock(end)}"
        video = f"video {video_from} to {video_to}; "
    return (f"{ts.date()} {ts.strftime('%H:%M:%S')} {zone_label(ts)}  {printable(rec.get('table_id')) or '-'}  "
            f"{where(rec)}  dealer {dealer(rec, dealers)}  {printable(rec.get('severity')).upper()}  {title(rec)}: "
            f"expected {printable(rec.get('expected'))}; actual {printable(rec.get('actual'))}; "
            f"{video}{printable(rec.get('rule_id'))} {printable(rec.get('finding_id'))}")
