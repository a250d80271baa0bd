"""The console's analyst pages: Findings, a finding and its round, a pack, Dealers & tables.

Each page is a function over the analysts' connection (:func:`pitwatch.queries.lake_views.connect`:
pinned tables, no file system) that returns what its template shows.  The pages ask the lake
through the named investigations of ``queries/`` (``round_replay``, ``pack_custody``,
``findings_evidence``, ``dealer_scorecard``, ``table_health``, ``hold``) -- one definition of each
answer, the one ``pitwatch query`` gives -- and through a few statements of their own that only
select and count rows of one table for the filters and the trends.  Every value from a URL is
checked here (:class:`Refused`: a 400 page; :class:`NotFound`: a 404 page) and then bound as a
DuckDB parameter, never formatted into SQL text.

Every page reads a bounded number of gaming days (the day asked for, or the 30 days of the
trends), so its cost does not grow with the lake's age: a link to a finding, a round or a pack
carries its gaming day (``?day=``), and DuckDB hands that filter to the dataset, which opens only
that day's files.

Times are shown in each table's display zone (:class:`pitwatch.console.view.Zones`, read per page), to the second, the zone named.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
import re
from collections import Counter
from typing import Any, Callable, Mapping
from urllib.parse import quote

import duckdb
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from pitwatch.config import SEVERITIES
from pitwatch.console import charts, round_picture
from pitwatch.console.auth import check_csrf, requires
from pitwatch.console.view import Console, Zones, console_of, render, zones
from pitwatch.lake import Lake
from pitwatch.lake.reviews import DISPOSITIONS
from pitwatch.queries.catalog import date_value, get_query, run_query
from pitwatch.queries.errors import LakeQueryError
from pitwatch.queries.lake_views import run_sql

log = logging.getLogger("pitwatch.console")

STATUSES = ("open",) + DISPOSITIONS       # a finding's status: open, or its latest review's disposition
FILTERS = ("day", "table", "game", "rule", "severity", "dealer", "status")
TREND_DAYS = 30                           # the Dealers & tables page: this many gaming days up to the day asked
MOST_SHOWN = 500                          # findings listed on one page; the counts cover every one matched
VIDEO_PAD = 30                            # seconds of video before the first and after the last evidence event
_ID = re.compile(r"[\x21-\x7e]{1,100}\Z")       # a table, round, pack, rule or dealer id: printable ASCII, no space


class Refused(ValueError):
    """A query-string value the page will not take (a 400 page saying which and why)."""


class NotFound(LookupError):
    """An id the lake does not hold (a 404 page naming it)."""


# ---------------------------------------------------------------- checking what a URL says

# The years a page's day may be in: a page reads days around the one asked (a round's pack the day
# before, a 30-day trend), and that arithmetic must not run off the calendar (year 1 or 9999).
FIRST_YEAR, LAST_YEAR = 1900, 9998


def checked_day(text: str | None, name: str = "day") -> _dt.date:
    """A gaming day written ``YYYY-MM-DD`` in :data:`FIRST_YEAR`..:data:`LAST_YEAR`, or :class:`Refused`."""
    if text is None or text == "":
        raise Refused(f"{name}: give a gaming day, YYYY-MM-DD")
    try:
        day = date_value(text)
    except ValueError:
        raise Refused(f"{name}: {text[:40]!r} is not a gaming day YYYY-MM-DD") from None
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        raise Refused(f"{name}: {text} is outside the years a lake holds ({FIRST_YEAR} to {LAST_YEAR})")
    return day


def checked_id(text: str | None, name: str) -> str:
    """An id from a URL: 1 to 100 printable ASCII characters, no space, or :class:`NotFound`
    (no id of the lake has any other form)."""
    if text is None or not _ID.match(text):
        raise NotFound(f"no {name} {str(text)[:40]!r}")
    return text


@dataclasses.dataclass(frozen=True)
class FindingsFilter:
    """The Findings page's filters: one gaming day, and any of table, game, rule, severity, dealer
    and status (None: every one)."""

    day: _dt.date
    table: str | None = None
    game: str | None = None
    rule: str | None = None
    severity: str | None = None
    dealer: str | None = None
    status: str | None = None

    @classmethod
    def of(cls, query: Mapping[str, str], latest_day: _dt.date | None) -> "FindingsFilter":
        """The filters of a query string (``?day=2026-11-28&severity=critical``): an unknown name,
        a day that is no date, a severity or status not in the lists, an id of another form is
        :class:`Refused`.  No day: ``latest_day`` (the last day the lake holds)."""
        unknown = sorted(set(query) - set(FILTERS))
        if unknown:
            raise Refused(f"no filter {unknown[0][:40]!r} (the filters: {', '.join(FILTERS)})")
        given = {k: v for k, v in query.items() if v != ""}
        if "day" in given:
            day = checked_day(given["day"])
        elif latest_day is not None:
            day = latest_day
        else:
            raise Refused("the lake holds no gaming day yet: no run has written it")
        if given.get("severity") not in (None, *SEVERITIES):
            raise Refused(f"severity: {given['severity'][:40]!r} is not one of {', '.join(SEVERITIES)}")
        if given.get("status") not in (None, *STATUSES):
            raise Refused(f"status: {given['status'][:40]!r} is not one of {', '.join(STATUSES)}")
        for name in ("table", "game", "rule", "dealer"):
            if name in given and not _ID.match(given[name]):
                raise Refused(f"{name}: {given[name][:40]!r} is not an id (printable ASCII, no space, at most 100)")
        return cls(day, *(given.get(name) for name in FILTERS[1:]))

    def params(self) -> dict[str, Any]:
        return {"day": self.day, **{name: getattr(self, name) for name in FILTERS[1:]}}

    def query_string(self, **change: str | None) -> dict[str, str]:
        """The filters as a query string's pairs (for links), with ``change`` applied."""
        values = {"day": self.day.isoformat(), **{n: getattr(self, n) for n in FILTERS[1:]}, **change}
        return {k: v for k, v in values.items() if v}


def _rows(answer) -> list[dict]:
    columns, rows = answer
    return [dict(zip(columns, row)) for row in rows]


def _sql(con: duckdb.DuckDBPyConnection, sql: str, params: dict) -> list[dict]:
    return _rows(run_sql(con, sql, params))


def latest_day(lake: Lake) -> _dt.date | None:
    """The last gaming day of the newest nightly run that succeeded (None: no run has written the
    lake), read from the runs chain's head back (:func:`pitwatch.lake.runs.records_newest_first`)
    only as far as that run: a day's records, whatever the lake's age.  The analysts' ``runs``
    view would read every record of seven years to sort them."""
    from pitwatch.lake import runs as lake_runs

    for record in lake_runs.records_newest_first(lake, skip_watchers=True):
        if record["status"] == "succeeded" and record["gaming_days"] and record["lines_read"] is not None:
            return max(record["gaming_days"])
    return None


# ---------------------------------------------------------------- Findings

_FINDINGS_WHERE = """
    gaming_day = $day
    AND ($table IS NULL OR table_id = $table)
    AND ($game IS NULL OR game = $game)
    AND ($rule IS NULL OR rule_id = $rule)
    AND ($severity IS NULL OR severity = $severity)
    AND ($dealer IS NULL OR dealer_id = $dealer)
    AND ($status IS NULL OR status = $status)"""

_FINDINGS_LIST = f"""
SELECT f.finding_id, f.ts, f.table_id, f.game, f.rule_id, f.title, f.severity, f.dealer_id,
       (SELECT name FROM seeds_dealers WHERE id = f.dealer_id) AS dealer_name,
       f.seat, f.round_id, f.pack_id, f.status, f.reviewed_by, f.gaming_day
FROM findings AS f
WHERE {_FINDINGS_WHERE}
ORDER BY f.ts, f.table_id, f.rule_id, f.finding_id
LIMIT {MOST_SHOWN}"""

_FINDINGS_COUNTS = f"""
SELECT rule_id, table_id, date_trunc('hour', ts) AS utc_hour, count(*) AS findings
FROM findings
WHERE {_FINDINGS_WHERE}
GROUP BY ALL"""


def findings_page(con: duckdb.DuckDBPyConnection, chosen: FindingsFilter, zoned: Zones) -> dict:
    """The findings of one day that pass the filters (the first :data:`MOST_SHOWN`, by time), and
    every one of them counted by rule, by table and by hour of the table's clock."""
    params = chosen.params()
    rows = _sql(con, _FINDINGS_LIST, params)
    for r in rows:
        r["shown_ts"] = zoned.show(r["ts"], r["table_id"])
    by_rule: Counter[str] = Counter()
    by_table: Counter[str] = Counter()
    by_hour: Counter[int] = Counter()
    by_hour_table: Counter[tuple[int, str]] = Counter()
    for c in _sql(con, _FINDINGS_COUNTS, params):
        hour = zoned.hour(c["utc_hour"], c["table_id"])
        by_rule[c["rule_id"]] += c["findings"]
        by_table[c["table_id"] or ""] += c["findings"]
        by_hour[hour] += c["findings"]
        by_hour_table[hour, c["table_id"] or ""] += c["findings"]
    total = sum(by_rule.values())
    return {"filter": chosen, "rows": rows, "total": total, "cut": total > len(rows),
            "by_rule": sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0])),
            "by_table": sorted(by_table.items(), key=lambda kv: (-kv[1], kv[0])),
            "by_hour": [(h, by_hour.get(h, 0)) for h in range(24)],
            "by_hour_table": sorted(by_hour_table.items()),
            "severities": SEVERITIES, "statuses": STATUSES}


# ---------------------------------------------------------------- a finding, its round

RECENT_DAYS = 3       # a finding linked without its day (the Live page's alerts) is looked for in the lake's last days


def finding_page(con: duckdb.DuckDBPyConnection, finding_id: str, day_text: str | None, zoned: Zones,
                 latest: _dt.date | None = None) -> dict:
    """One finding of the day ``day_text``: its row, its evidence events (file, line) and video
    window (``findings_evidence``), its round replayed (``round_replay``) and its reviews, oldest
    first.  No day (a live alert's link): the finding is looked for in the :data:`RECENT_DAYS`
    gaming days up to ``latest`` (the lake's last), never in the lake's whole history.  An id that
    is not a finding's, or no finding of those days: :class:`NotFound`."""
    finding_id = checked_id(finding_id, "finding")
    if day_text or latest is None:
        first = last = checked_day(day_text)
        where = f"on gaming day {last}"
    else:
        first, last = latest - _dt.timedelta(days=RECENT_DAYS - 1), latest
        where = f"in the gaming days {first} to {last} (give the day: ?day=YYYY-MM-DD)"
    found = _sql(con, "SELECT *, (SELECT name FROM seeds_dealers WHERE id = f.dealer_id) AS dealer_name "
                      "FROM findings AS f WHERE gaming_day BETWEEN $first AND $last AND finding_id = $id "
                      "ORDER BY gaming_day DESC", {"first": first, "last": last, "id": finding_id})
    if not found:
        raise NotFound(f"no finding {finding_id} {where}")
    day = found[0]["gaming_day"]
    finding = found[0]
    table = finding["table_id"]
    evidence = [r for r in _rows(run_query(con, "findings_evidence", {
        "gaming_day": day.isoformat(), "severity": "*", "video_pad": str(VIDEO_PAD)})) if r["finding_id"] == finding_id]
    for r in evidence:
        r["shown_ts"] = zoned.show(r["event_ts"], table)
    video = (evidence[0]["video_from"], evidence[0]["video_to"]) if evidence else (
        (finding.get("evidence_from") or finding["ts"]) - _dt.timedelta(seconds=VIDEO_PAD),
        finding["ts"] + _dt.timedelta(seconds=VIDEO_PAD))
    replay = round_replay(con, table, finding["round_id"], day, zoned) if table and finding["round_id"] else []
    return {"finding": finding, "shown_ts": zoned.show(finding["ts"], table), "zone": zoned.of(table),
            "video_from": zoned.show(video[0], table), "video_to": zoned.show(video[1], table),
            "evidence": evidence, "replay": replay, "reviews": review_history(con, finding_id, zoned, table),
            "dispositions": DISPOSITIONS}


def review_history(con: duckdb.DuckDBPyConnection, finding_id: str, zoned: Zones, table_id: str | None) -> list[dict]:
    """Every review of the finding, oldest first (the last is its status), times on the table's clock."""
    rows = _sql(con, "SELECT review_id, reviewed_at, reviewer, disposition, reason, note, video, amount "
                     "FROM reviews WHERE finding_id = $id ORDER BY reviewed_at, review_id", {"id": finding_id})
    for r in rows:
        r["shown_at"] = zoned.show(r["reviewed_at"], table_id)
    return rows


def round_replay(con: duckdb.DuckDBPyConnection, table_id: str, round_id: str, day: _dt.date,
                 zoned: Zones) -> list[dict]:
    """``round_replay``'s rows (both streams in time order, each with the findings citing it), read
    from the round's gaming day and the days either side only (:func:`pitwatch.console.round_picture.replay_sql`),
    never from the table's whole history."""
    around = _dt.timedelta(days=round_picture.DAYS_AROUND)
    rows = _rows(run_sql(con, round_picture.replay_sql(), {
        "table_id": table_id, "round_id": round_id, "first_day": day - around, "last_day": day + around}))
    for r in rows:
        r["shown_ts"] = zoned.show(r["ts"], table_id)
    return rows


def round_page(con: duckdb.DuckDBPyConnection, table_id: str, round_id: str, day_text: str | None,
               zoned: Zones) -> dict:
    """A round of ``table_id`` on gaming day ``day_text``: its ``rounds`` row, its replay and the
    findings of the round.  A round the lake does not hold that day: :class:`NotFound`."""
    table_id, round_id = checked_id(table_id, "table"), checked_id(round_id, "round")
    day = checked_day(day_text)
    found = _sql(con, "SELECT *, (SELECT name FROM seeds_dealers WHERE id = r.dealer_id) AS dealer_name "
                      "FROM rounds AS r WHERE gaming_day = $day AND table_id = $table AND round_id = $round "
                      "ORDER BY round_use", {"day": day, "table": table_id, "round": round_id})
    if not found:
        raise NotFound(f"no round {round_id} of table {table_id} on gaming day {day}")
    findings = _sql(con, "SELECT finding_id, rule_id, title, severity, seat, status, ts FROM findings "
                         "WHERE gaming_day = $day AND table_id = $table AND round_id = $round ORDER BY ts, finding_id",
                    {"day": day, "table": table_id, "round": round_id})
    for f in findings:
        f["shown_ts"] = zoned.show(f["ts"], table_id)
    return {"round": found[0], "day": day, "zone": zoned.of(table_id),
            "started": zoned.show(found[0]["started"], table_id), "ended": zoned.show(found[0]["ended"], table_id),
            "replay": round_replay(con, table_id, round_id, day, zoned), "findings": findings}


# ---------------------------------------------------------------- a pack

_WITH = re.compile(r"^with\s*$", re.M)


def _days_bound(name: str, tables: tuple[str, ...]) -> str:
    """Named query ``name``'s statement with each of ``tables`` bound to ``$table_id`` and the gaming
    days ``$first_day`` to ``$last_day`` (CTEs of the same names shadow the tables), as
    :func:`pitwatch.console.round_picture.replay_sql` binds ``round_replay``: the query reads a
    few days' files, not the table's whole history."""
    sql = get_query(name).sql
    found = _WITH.search(sql)
    if found is None:        # the query's shape is this module's contract: say so, never guess
        raise LakeQueryError(f"queries/{name}.sql no longer begins its statement with a 'with' line")
    bound = "".join(f"{t} as (select * from {t} where gaming_day between $first_day and $last_day "
                    f"and table_id = $table_id),\n" for t in tables)
    return sql[:found.start()] + "with\n" + bound + sql[found.end():].lstrip("\n")


def pack_page(con: duckdb.DuckDBPyConnection, table_id: str, pack_id: str, day_text: str | None,
              zoned: Zones) -> dict:
    """A pack's custody from shuffle to stub (``pack_custody``: shuffle, cut, cutting card, burns,
    rounds, stub counts, findings, then its summary row), read from the pack's gaming day and the
    days either side, and its ``packs`` row of that day."""
    table_id, pack_id = checked_id(table_id, "table"), checked_id(pack_id, "pack")
    day = checked_day(day_text)
    found = _sql(con, "SELECT * FROM packs WHERE gaming_day = $day AND table_id = $table AND pack_id = $pack "
                      "ORDER BY pack_use", {"day": day, "table": table_id, "pack": pack_id})
    if not found:
        raise NotFound(f"no pack {pack_id} of table {table_id} on gaming day {day}")
    around = _dt.timedelta(days=round_picture.DAYS_AROUND)
    custody = _rows(run_sql(con, _days_bound("pack_custody", ("events", "rounds", "packs", "findings")), {
        "table_id": table_id, "pack_id": pack_id, "first_day": day - around, "last_day": day + around}))
    for r in custody:
        r["shown_ts"] = zoned.show(r.get("ts"), table_id)
    return {"pack": found[0], "day": day, "zone": zoned.of(table_id), "custody": custody}


# ---------------------------------------------------------------- Dealers & tables

_TREND_ROUNDS = """
SELECT gaming_day, {key} AS id, count(*) AS n FROM rounds
WHERE gaming_day BETWEEN $from_day AND $to_day AND {key} IS NOT NULL GROUP BY ALL"""
_TREND_FINDINGS = """
SELECT gaming_day, {key} AS id, count(*) AS n FROM findings
WHERE gaming_day BETWEEN $from_day AND $to_day AND {key} IS NOT NULL GROUP BY ALL"""


def _trend(con, key: str, first: _dt.date, last: _dt.date) -> dict[str, list[dict]]:
    """Per dealer or table (``key``): its rounds dealt and its findings on each day it has either
    (a finding about a pack counts too, not only one about a round), oldest first."""
    days = {"from_day": first, "to_day": last}
    counts: dict[tuple[str, _dt.date], dict] = {}
    for what, sql in (("rounds", _TREND_ROUNDS), ("findings", _TREND_FINDINGS)):
        for r in _sql(con, sql.format(key=key), days):
            counts.setdefault((r["id"], r["gaming_day"]), {"day": r["gaming_day"], "rounds": 0, "findings": 0})[what] = r["n"]
    out: dict[str, list[dict]] = {}
    for (ident, _day), row in sorted(counts.items()):
        out.setdefault(ident, []).append(row)
    return out


def dealers_tables_page(con: duckdb.DuckDBPyConnection, day_text: str | None, latest: _dt.date | None) -> dict:
    """The dealers' scorecards (``dealer_scorecard``), the tables' health (``table_health``) and the
    hold against theory per table (``hold``) over the :data:`TREND_DAYS` gaming days up to the day
    asked (default: the lake's last), and each dealer's and table's rounds and findings per day."""
    if day_text:
        last = checked_day(day_text)
    elif latest is not None:
        last = latest
    else:
        raise Refused("the lake holds no gaming day yet: no run has written it")
    first = last - _dt.timedelta(days=TREND_DAYS - 1)
    days = {"from_day": first.isoformat(), "to_day": last.isoformat()}
    return {"from_day": first, "to_day": last,
            "dealers": _rows(run_query(con, "dealer_scorecard", days)),
            "tables": _rows(run_query(con, "table_health", days)),
            "hold": _rows(run_query(con, "hold", {**days, "by": "table"})),
            "dealer_trends": _trend(con, "dealer_id", first, last),
            "table_trends": _trend(con, "table_id", first, last)}


# ---------------------------------------------------------------- a review, by a reviewer

LOCK_TIMEOUT = 30.0         # seconds a review from the console waits for the lake's lock (a nightly run)


class LakeBusy(RuntimeError):
    """Another writer held the lake's lock for longer than :data:`LOCK_TIMEOUT` (a 503 page)."""


def add_review(lake: Lake, finding_id: str, form: Mapping[str, str], reviewer: str, log,
               timeout: float = LOCK_TIMEOUT) -> dict:
    """Record the review a reviewer's form asks for, as ``pitwatch review`` does (the same code
    path: :func:`pitwatch.lake.reviews.check` before the lock, then :func:`~pitwatch.lake.reviews.record`
    under the lake's lock, which checks again): ``reviewer`` is the logged-in user, never a field
    of the form.  A review pitwatch refuses (unknown disposition or reason, a review identical to
    the latest, a finding not in the lake, an amount that is no plain decimal) is
    :class:`pitwatch.lake.reviews.ReviewRefused` and nothing is written.  The row written."""
    from pitwatch.lake.lock import LakeLocked, hold, holder_update, new_holder
    from pitwatch.lake.reviews import Asked, ReviewRefused, amount_of, check, record

    finding_id = checked_id(finding_id, "finding")
    unknown = sorted(set(form) - {"disposition", "reason", "note", "video", "amount", "csrf_token"})
    if unknown:
        raise ReviewRefused(f"the review form has no field {unknown[0][:40]!r}")

    def given(name: str) -> str | None:
        value = (form.get(name) or "").strip()
        return value or None

    asked = [Asked(finding_id, given("disposition") or "", reviewer, given("reason"), given("note"), given("video"),
                   amount_of(given("amount"), ""))]
    check(lake, asked)           # refused before the lock: a refused review leaves the lake's bytes as they were
    command = f"pitwatch serve (review by {reviewer})"
    try:
        with hold(lake, new_holder(command), timeout, log):
            rows = record(lake, asked, command, holder_update=lambda **kw: holder_update(lake, **kw))
    except LakeLocked as exc:
        raise LakeBusy(str(exc)) from None
    return rows[0]


# ---------------------------------------------------------------- the pages' endpoints (console/view.py)

def _query(request: Request) -> dict[str, str]:
    """The query string, each name once (a name given twice is :class:`Refused`: which one counts
    would be a guess)."""
    pairs = request.query_params.multi_items()
    names = [k for k, _ in pairs]
    twice = sorted({k for k in names if names.count(k) > 1})
    if twice:
        raise Refused(f"{twice[0][:40]!r} is given twice in the address")
    return dict(pairs)


async def _answer(request: Request, template: str, build: Callable[[Console, duckdb.DuckDBPyConnection], dict],
                  tables: set[str] | None = None) -> Response:
    """Build a page's context off the event loop in one analysts' connection and render it;
    :class:`NotFound` is a 404 page, :class:`Refused` a 400 page, a lake that cannot be read 503."""
    console = console_of(request)

    def run() -> dict:
        con = console.connect(tables)
        try:
            return build(console, con)
        finally:
            con.close()

    try:
        context = await run_in_threadpool(run)
    except NotFound as exc:
        raise HTTPException(404, str(exc)) from None
    except Refused as exc:
        raise HTTPException(400, str(exc)) from None
    except LakeQueryError as exc:
        raise HTTPException(503, f"the lake cannot be read: {exc}") from None
    return render(request, template, **context)


def _chart(spec: dict) -> Markup:
    """A chart's SVG (:func:`pitwatch.console.charts.svg`, drawn offline), as markup the page keeps."""
    return Markup(charts.svg(spec))


@requires("viewer")
async def findings_endpoint(request: Request) -> Response:
    query = _query_or_400(request)

    def build(console: Console, con: duckdb.DuckDBPyConnection) -> dict:
        chosen = FindingsFilter.of(query, None if query.get("day") else latest_day(console.lake))
        page = findings_page(con, chosen, zones(console))
        return {"page": page, "charts": {
            "by_rule": _chart(charts.bar("Findings by rule", [{"rule": k, "findings": n} for k, n in page["by_rule"]],
                                         "rule", "findings")) if page["by_rule"] else None,
            "by_table": _chart(charts.bar("Findings by table", [{"table": k, "findings": n} for k, n in page["by_table"]],
                                          "table", "findings")) if page["by_table"] else None,
            "by_hour": _chart(charts.stacked_bar(
                "Findings by hour of the table's clock",
                [{"hour": h, "table": t, "findings": n} for (h, t), n in page["by_hour_table"]],
                "hour", "findings", stack="table", ordinal=True)) if page["total"] else None}}

    return await _answer(request, "findings.html", build, {"findings"})


def _finding_context(console: Console, con: duckdb.DuckDBPyConnection, finding_id: str, day: str | None,
                     user) -> dict:
    from pitwatch.lake.reviews import reason_codes

    zoned = zones(console)
    page = finding_page(con, finding_id, day, zoned, None if day else latest_day(console.lake))
    f = page["finding"]
    picture = None
    if f["table_id"] and f["round_id"]:
        picture = round_picture.load(con, f["table_id"], f["round_id"], f["gaming_day"], zoned.of(f["table_id"]),
                                     finding_id=f["finding_id"], video_pad=VIDEO_PAD)
    return {"page": page, "picture": picture, "can_review": user is not None and user.may("reviewer"),
            "reasons": reason_codes(), "refused": ""}


@requires("viewer")
async def finding_endpoint(request: Request) -> Response:
    finding_id, query = request.path_params["finding_id"], _query_or_400(request)
    user = request.state.user
    return await _answer(request, "finding.html",
                         lambda console, con: _finding_context(console, con, finding_id, query.get("day"), user))


def _query_or_400(request: Request) -> dict[str, str]:
    try:
        return _query(request)
    except Refused as exc:
        raise HTTPException(400, str(exc)) from None


@requires("reviewer")
async def review_endpoint(request: Request) -> Response:
    """A reviewer's review from the finding page: CSRF checked, recorded as ``pitwatch review`` does
    (:func:`add_review`) naming the logged-in user, then back to the finding."""
    from pitwatch.lake.reviews import ReviewRefused

    form = await request.form()
    check_csrf(request, form)
    finding_id, query = request.path_params["finding_id"], _query_or_400(request)
    day = query.get("day")
    if day is not None:                     # every parameter checked before anything is written
        try:
            checked_day(day)
        except Refused as exc:
            raise HTTPException(400, str(exc)) from None
    user = request.state.user
    console = console_of(request)
    texts = [(k, v) for k, v in form.multi_items() if isinstance(v, str)]
    if len(texts) != len(form.multi_items()):   # a file: refused whole, never saved as its repr
        sent = next(k for k, v in form.multi_items() if not isinstance(v, str))
        raise HTTPException(400, f"review refused: the field {sent[:40]!r} is a file, not text")
    fields = dict(texts)
    try:
        row = await run_in_threadpool(add_review, console.lake, finding_id, fields, user.name, log)
    except NotFound as exc:
        raise HTTPException(404, str(exc)) from None
    except ReviewRefused as exc:
        raise HTTPException(400, f"review refused: {exc}") from None
    except LakeBusy as exc:
        raise HTTPException(503, f"the lake is busy, try again: {exc}") from None
    log.info("console: %s reviewed finding %s: %s", user.name, finding_id, row["disposition"])
    return RedirectResponse(f"/findings/{quote(finding_id, safe='')}?day={quote(str(day or row['gaming_day']))}",
                            status_code=303)


@requires("viewer")
async def round_endpoint(request: Request) -> Response:
    table_id, round_id = request.path_params["table_id"], request.path_params["round_id"]
    day = _query_or_400(request).get("day")

    def build(console: Console, con: duckdb.DuckDBPyConnection) -> dict:
        zoned = zones(console)
        page = round_page(con, table_id, round_id, day, zoned)
        return {"page": page, "picture": round_picture.load(con, table_id, round_id, page["day"], zoned.of(table_id))}

    return await _answer(request, "round.html", build)


@requires("viewer")
async def pack_endpoint(request: Request) -> Response:
    table_id, pack_id = request.path_params["table_id"], request.path_params["pack_id"]
    day = _query_or_400(request).get("day")
    return await _answer(request, "pack.html",
                         lambda console, con: {"page": pack_page(con, table_id, pack_id, day, zones(console))})


@requires("viewer")
async def dealers_endpoint(request: Request) -> Response:
    query = _query_or_400(request)
    unknown = sorted(set(query) - {"day"})
    if unknown:
        raise HTTPException(400, f"no filter {unknown[0][:40]!r} (the page takes day)")

    def build(console: Console, con: duckdb.DuckDBPyConnection) -> dict:
        page = dealers_tables_page(con, query.get("day"), latest_day(console.lake) if not query.get("day") else None)

        def trend(trends: dict[str, list[dict]], who: str) -> Markup | None:
            rows = [{"day": str(r["day"]), who: ident, "findings": r["findings"]}
                    for ident, days in trends.items() for r in days]
            return _chart(charts.line(f"Findings per day, by {who}", rows, "day", "findings", series=who)) if rows else None

        return {"page": page, "trend_charts": {"dealers": trend(page["dealer_trends"], "dealer"),
                                               "tables": trend(page["table_trends"], "table")}}

    return await _answer(request, "dealers.html", build)


async def round_picture_css(request: Request) -> Response:
    """The round picture's style (``_round_picture_style.html``, the report's) as a stylesheet of
    this host: the console's Content-Security-Policy allows no inline style."""
    text = round_picture.environment().get_template("_round_picture_style.html").render()
    return Response(re.sub(r"</?style>", "", text), media_type="text/css")


ROUTES = [
    Route("/findings", findings_endpoint, name="findings"),
    Route("/findings/{finding_id}", finding_endpoint, name="finding"),
    Route("/findings/{finding_id}/reviews", review_endpoint, methods=["POST"], name="finding_review"),
    Route("/rounds/{table_id}/{round_id}", round_endpoint, name="round"),
    Route("/packs/{table_id}/{pack_id}", pack_endpoint, name="pack"),
    Route("/dealers", dealers_endpoint, name="dealers"),
    Route("/round_picture.css", round_picture_css, name="round_picture_css"),
]
