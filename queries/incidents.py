"""Incident records: one per finding of a gaming day that a reviewer confirmed or escalated,
in the shape a casino's incident system (iTrak-style) imports (``pitwatch incidents``,
``docs/incidents.md``).

A finding is a row; an incident is what a surveillance department files about it: a number
that never changes, what happened in sentences, where and when at the table's own clock,
who dealt, which lines of which files prove it, which video to pull, and what the reviewer
decided.  Everything is read through the analysts' connection
(:func:`pitwatch.queries.lake_views.connect`), so it sees the lake as the last successful run
left it and the reviews as they are now (the ``findings`` view's ``status`` is the latest
review's disposition), and no file but the lake's.

* **Incident number** (:func:`incident_number`): ``PW-<gaming day YYYYMMDD>-<the first 12 hex
  digits of the finding_id>``.  The ``finding_id`` is a hash of the rule, the table, the rule's
  key and the evidence (:func:`pitwatch.rules.finding.finding_id`), so the same finding has the
  same number on every call, every machine, after a re-replay that keeps it, after new reviews
  and after late findings join its day: the number depends on the finding alone.  Two findings
  of one day sharing 12 hex digits (48 bits: for a day of 10,000 findings about 1 chance in 5.6
  million, :func:`same_numbers`) would share a number; ``pitwatch incidents`` then says so on
  stderr, naming both findings, and each record still carries its whole ``finding_id``.
* **The video window** is the ``findings_video`` investigation's (``queries/findings_video.sql``:
  the first evidence event's time less the pad, to the last's plus the pad), run here, not
  written again.
* **Times** are the table's (issue 43): each finding's ``ts``, its video window and its review's
  time in the table's display zone (:func:`pitwatch.lake.settings.display_zones`: the lake's zone,
  or the table's ``[display.tables]`` override), as ``--local`` shows them, whichever device wrote
  the evidence; to the second (the window widened to whole seconds: it never loses a frame), with
  the zone named (``time_zone``, ``utc_offset``, and the abbreviation in the description).
"""
from __future__ import annotations

import datetime as _dt
import zoneinfo
from typing import Any, Iterable, Mapping

import duckdb

from pitwatch.lake.reviews import LATEST_SQL
from pitwatch.queries.catalog import get_query, run_query
from pitwatch.queries.lake_views import run_sql

__all__ = ["FIELDS", "INCIDENT_DISPOSITIONS", "incident_number", "same_numbers", "description",
           "incident_record", "day_incidents", "statements"]

NUMBER_PREFIX = "PW"
NUMBER_DIGITS = 12                       # hex digits of the finding_id in a number (48 bits; docs/incidents.md)
INCIDENT_DISPOSITIONS = ("confirmed", "escalated")   # a finding with one of these as its status is an incident
EVIDENCE_DAYS_BEFORE = 1                 # evidence events are looked for on the day and the day before

# every field of a record, in the order csv and json write them (docs/incidents.md maps each one)
FIELDS = (
    "incident_number", "type", "rule_id", "severity", "table_id", "game", "gaming_day",
    "local_date", "local_time", "utc_offset", "time_zone", "dealer_id", "dealer_name", "seat", "round_id", "pack_id",
    "procedure", "description", "evidence", "video_from", "video_to",
    "disposition", "reviewer", "reviewed_at", "reason", "reason_title", "error_type", "note", "video", "amount",
    "finding_id",
)

# the day's reviewed findings, each with its latest review (the one its status is) and its evidence
# events' files and lines; ``reviews`` is read for these findings only
_DAY_SQL = """
with
day as (
    select * from findings
    where gaming_day = $gaming_day and status in ('confirmed', 'escalated')
),
latest as (      -- the review the finding's status is (lake/reviews.py LATEST_SQL, as the findings view's)
    select r.finding_id, r.disposition, r.reason, r.reviewer, r.note, r.video, r.amount, r.reviewed_at
    from (""" + LATEST_SQL + """) r where r.finding_id in (select finding_id from day)
),
cited as (
    select finding_id, unnest(evidence) as e from day
),
found as (       -- an event read twice (two files): the first file's line, file and line of one row
    select finding_id, device_id, event_id, seen.file as file, seen.line as line, seen.ts as ts from (
    select c.finding_id, c.e.device_id as device_id, c.e.event_id as event_id,
           min({'file': v.file, 'line': v.line, 'ts': v.ts}) as seen
    from cited c left join (
        select device_id, event_id, file, line, ts from events
        where gaming_day between $from_day and $gaming_day
    ) v on v.device_id is not distinct from c.e.device_id and v.event_id = c.e.event_id
    group by all)
),
evidence as (
    select finding_id,
           list({'device_id': device_id, 'event_id': event_id, 'file': file, 'line': line}
                order by ts nulls last, device_id, event_id) as evidence_events
    from found group by finding_id
)
select
    d.finding_id, d.rule_id, d.title, d.severity, d.game, d.table_id, d.pack_id, d.round_id, d.seat, d.spot,
    d.dealer_id, dl.name as dealer_name, d.ts, d.ts_offset, d.gaming_day, d.expected, d.actual, d.source,
    l.disposition, l.reviewer, l.reviewed_at, l.reason, rr.title as reason_title, rr.error_type,
    l.note, l.video, l.amount, ev.evidence_events
from day d
left join latest l using (finding_id)
left join evidence ev using (finding_id)
left join (select id, any_value(name) as name from seeds_dealers group by id) dl on dl.id = d.dealer_id
left join seeds_review_reasons rr on rr.code = l.reason
order by d.ts, d.table_id, d.rule_id, d.finding_id
"""


def incident_number(gaming_day: _dt.date, finding_id: str) -> str:
    """``PW-20261128-1a2b3c4d5e6f``: the gaming day and the first :data:`NUMBER_DIGITS` hex digits
    of the finding's id, and nothing else: a finding's number never changes."""
    return f"{NUMBER_PREFIX}-{gaming_day:%Y%m%d}-{finding_id[:NUMBER_DIGITS]}"


def same_numbers(records: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Incident numbers two or more of ``records`` share (a 48-bit prefix of two finding ids the
    same), each with its findings' ids: what ``pitwatch incidents`` warns of."""
    by_number: dict[str, list[str]] = {}
    for r in records:
        by_number.setdefault(r["incident_number"], []).append(r["finding_id"])
    return {n: ids for n, ids in by_number.items() if len(ids) > 1}


def _words(identifier: str | None) -> str:
    return (identifier or "unknown").replace("_", " ")


def _sentence(text: str) -> str:
    text = " ".join(str(text).split())
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _local(ts: _dt.datetime, zone: str) -> _dt.datetime:
    """``ts`` at the table's clock: the wall clock of its display zone ``zone`` (IANA)."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=_dt.timezone.utc)
    return ts.astimezone(zoneinfo.ZoneInfo(zone))


def _offset_text(at: _dt.datetime) -> str:
    text = at.isoformat()[-6:]
    return "+00:00" if text in ("+00:00", "-00:00") else text


def _to_second(at: _dt.datetime, up: bool = False) -> str:
    """ISO 8601 to the second at ``at``'s offset: the fraction dropped, or with ``up`` carried into
    the next second (a video window's end, so that the window still holds its last event)."""
    whole = at.replace(microsecond=0)
    if up and at.microsecond:
        whole = (whole.astimezone(_dt.timezone.utc) + _dt.timedelta(seconds=1)).astimezone(at.tzinfo)
    return whole.isoformat()


def description(f: Mapping[str, Any], zone: str = "UTC") -> str:
    """What happened, in sentences a person reads: the rule's title, where (table, game, pack,
    round, seat), who dealt and when at the table's clock (its display ``zone``, named), then what
    the procedure expects and what was seen (the finding's ``expected`` and ``actual``, written by
    the rules in words)."""
    at = _local(f["ts"], zone)
    where = [f"table {f.get('table_id') or 'unknown'} ({_words(f.get('game'))})"]
    if f.get("pack_id"):
        where.append(f"pack {f['pack_id']}")
    if f.get("round_id"):
        where.append(f"round {f['round_id']}")
    if f.get("seat") is not None:
        where.append(f"seat {f['seat']}")
    who = ""
    if f.get("dealer_id"):
        who = f" Dealer {f['dealer_id']}" + (f" ({f['dealer_name']})" if f.get("dealer_name") else "") + " was dealing."
    when = f"at {at:%H:%M:%S} {at.tzname()} on {at:%Y-%m-%d}"
    return (f"{_sentence(f.get('title') or f.get('rule_id') or 'A finding')[:-1]} at {', '.join(where)}, {when}."
            f"{who} Expected: {_sentence(f['expected'])} Seen: {_sentence(f['actual'])}")


def _evidence_text(e: Mapping[str, Any]) -> str:
    if e.get("file") is not None:
        return f"{e['file']}:{e['line']}" if e.get("line") is not None else str(e["file"])
    device = e.get("device_id") or "unknown device"
    return f"{device} event {e['event_id']} (not among the lake's events)"


def incident_record(f: Mapping[str, Any], number: str, window: tuple[_dt.datetime, _dt.datetime] | None,
                    zone: str = "UTC") -> dict:
    """One incident record (the :data:`FIELDS`) from one reviewed finding row of :data:`_DAY_SQL`,
    its incident number and its video window (UTC), every time shown at the table's clock: its
    display ``zone`` (IANA), to the second."""
    at = _local(f["ts"], zone)
    video_from = video_to = None
    if window is not None:
        video_from = _to_second(_local(window[0], zone))
        video_to = _to_second(_local(window[1], zone), up=True)
    reviewed_at = f.get("reviewed_at")
    amount = f.get("amount")
    return {
        "incident_number": number,
        "type": f.get("title"),
        "rule_id": f.get("rule_id"),
        "severity": f.get("severity"),
        "table_id": f.get("table_id"),
        "game": f.get("game"),
        "gaming_day": f["gaming_day"].isoformat(),
        "local_date": f"{at:%Y-%m-%d}",
        "local_time": f"{at:%H:%M:%S}",
        "utc_offset": _offset_text(at),
        "time_zone": zone,
        "dealer_id": f.get("dealer_id"),
        "dealer_name": f.get("dealer_name"),
        "seat": f.get("seat"),
        "round_id": f.get("round_id"),
        "pack_id": f.get("pack_id"),
        "procedure": f.get("source"),
        "description": description(f, zone),
        "evidence": [_evidence_text(e) for e in (f.get("evidence_events") or [])],
        "video_from": video_from,
        "video_to": video_to,
        "disposition": f.get("disposition"),
        "reviewer": f.get("reviewer"),
        "reviewed_at": None if reviewed_at is None else _to_second(_local(reviewed_at, zone)),
        "reason": f.get("reason"),
        "reason_title": f.get("reason_title"),
        "error_type": f.get("error_type"),
        "note": f.get("note"),
        "video": f.get("video"),
        "amount": None if amount is None else float(amount),
        "finding_id": f["finding_id"],
    }


def statements() -> tuple[str, ...]:
    """Every statement :func:`day_incidents` runs: what :func:`pitwatch.queries.lake_views.referenced_tables`
    reads to open only the tables they name (not ``runs``, whose records grow with the lake's age)."""
    return (_DAY_SQL, get_query("findings_video").sql)


def evidence_from(gaming_day: _dt.date) -> _dt.date:
    """The first day evidence events are looked for on: ``EVIDENCE_DAYS_BEFORE`` before the gaming
    day, or the first day there is (``0001-01-01`` has none before it)."""
    return gaming_day - _dt.timedelta(days=min(EVIDENCE_DAYS_BEFORE, gaming_day.toordinal() - 1))


def day_incidents(con: duckdb.DuckDBPyConnection, gaming_day: _dt.date, video_pad: int = 30,
                  timeout: float | None = None, lake_zone: str = "UTC",
                  zones: Mapping[str, str] | None = None) -> list[dict]:
    """The incident records of ``gaming_day`` (one per finding whose status is confirmed or
    escalated), in time order, read through the analysts' connection ``con``; each at its table's
    display zone: ``zones[table_id]``, else ``lake_zone`` (:func:`pitwatch.lake.settings.display_zones`)."""
    zones = zones or {}
    day = {"gaming_day": gaming_day}
    answer = run_sql(con, _DAY_SQL, {**day, "from_day": evidence_from(gaming_day)}, timeout=timeout)
    rows = [dict(zip(answer.columns, r)) for r in answer.rows]
    if not rows:
        return []
    video = run_query(con, "findings_video", {"gaming_day": gaming_day.isoformat(), "video_pad": str(video_pad)},
                      timeout=timeout)
    at = {c: video.columns.index(c) for c in ("finding_id", "video_from", "video_to")}
    windows = {r[at["finding_id"]]: (r[at["video_from"]], r[at["video_to"]]) for r in video.rows}
    return [incident_record(f, incident_number(gaming_day, f["finding_id"]), windows.get(f["finding_id"]),
                            zones.get(f.get("table_id") or "", lake_zone)) for f in rows]
