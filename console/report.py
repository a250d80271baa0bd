"""The day's compliance report (``pitwatch report``): one self-contained HTML file a manager signs
and a regulator can be handed (``docs/report.md``).

Everything is in the file: the style inline, every chart an inline SVG (:mod:`pitwatch.console.charts`),
every round picture inline (:mod:`pitwatch.console.round_picture`); it names no other file, page or
font, so it opens the same on a closed network, years later.  What it holds:

* summary tiles: rounds and hands, findings by severity, open against reviewed, feed health (rejected
  lines, damaged files, shoe-silent packs, silent and unknown devices), and what later runs changed
  in days already reported (the named query ``findings_changed_since``, since ``since``: by default
  the gaming day's own date, midnight UTC — the runs after the day's own);
* charts: findings by rule, table, dealer and hour (stacked by severity), a 7-day trend, hands per
  hour per table (``table_health``), hold against theory per table (``hold``);
* every open critical and major finding with its round picture;
* the run accounting of the runs that wrote the day, and ``pitwatch verify``'s result.

Every query reads the day (the trend its seven days, a round picture three): the report of a day
costs the same in the lake's seventh year as in its first; ``runs`` is read with the day's filter,
and ``verify`` costs what ``pitwatch verify`` costs (``verify_since``: only what came after an
anchor's last entry, as ``pitwatch verify --since``).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any, Callable

import duckdb

from pitwatch.config import SEVERITIES, display_time
from pitwatch.console import charts, round_picture
from pitwatch.lake import Lake
from pitwatch.lake.settings import display_zones
from pitwatch.queries.catalog import run_query
from pitwatch.queries.lake_views import run_sql

TREND_DAYS = 7
PICTURED = ("critical", "major")      # the open findings of these severities are shown with their round

_FINDINGS_SQL = """
select finding_id, rule_id, title, severity, table_id, game, pack_id, round_id, seat, dealer_id,
       (select name from seeds_dealers where id = f.dealer_id) as dealer_name,
       ts, expected, actual, status, reviewed_by
from findings as f
where gaming_day = $day
order by ts, table_id, rule_id, finding_id
"""
_ROUNDS_SQL = """
select table_id, started, coalesce(len(seats_dealt), 0) as hands
from rounds
where gaming_day = $day
"""
_TREND_SQL = """
select gaming_day, severity, count(*) as findings
from findings
where gaming_day between $from_day and $day
group by all
order by gaming_day
"""
_RUNS_SQL = """
select run_id, command, status, started, ended, lines_read, accepted, rejected, duplicates, findings,
       damaged_files, bytes_not_read
from runs
where list_contains(gaming_days, $day)
order by started, run_id
"""
_EVENTS_SQL = "select count(*) from events where gaming_day = $day"


@dataclasses.dataclass(frozen=True)
class Tile:
    label: str
    value: str
    note: str = ""
    alarm: bool = False


@dataclasses.dataclass
class DayReport:
    """What the template draws; every time already in its table's zone (or the lake's)."""
    day: _dt.date
    lake: str
    zone: str
    made_at: str
    tiles: list[Tile]
    charts: list[tuple[str, str]]             # (title, SVG)
    open_findings: list[tuple[dict, Any]]     # (finding, its RoundPicture or None: a finding of no round)
    changed: list[dict]
    since: str
    runs: list[dict]
    verify: dict


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict, timeout: float | None) -> list[dict]:
    answer = run_sql(con, sql, params, timeout=timeout)
    return [dict(zip(answer.columns, r)) for r in answer.rows]


def _query(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, str], timeout: float | None) -> list[dict]:
    answer = run_query(con, name, params, timeout=timeout)
    return [dict(zip(answer.columns, r)) for r in answer.rows]


def has_day(con: duckdb.DuckDBPyConnection, day: _dt.date, timeout: float | None = None) -> bool:
    """The lake holds events of gaming day ``day`` (a run wrote it)."""
    return bool(run_sql(con, _EVENTS_SQL, {"day": day}, timeout=timeout).rows[0][0])


def _counted(rows: list[dict], key: Callable[[dict], Any]) -> list[dict]:
    """Findings counted by ``key`` and severity: the rows a stacked bar draws."""
    counts: dict[tuple[Any, str], int] = {}
    for r in rows:
        k = (key(r), r["severity"])
        counts[k] = counts.get(k, 0) + 1
    return [{"key": k, "severity": s, "findings": n} for (k, s), n in sorted(counts.items(), key=str)]


def _chart(title: str, spec: dict) -> tuple[str, str]:
    return title, charts.svg(spec)


def build(lake: Lake, con: duckdb.DuckDBPyConnection, day: _dt.date, verified: dict, *,
          since: str | None = None, video_pad: int = 30, timeout: float | None = None,
          now: _dt.datetime | None = None) -> DayReport:
    """The report of gaming ``day`` from the analysts' connection ``con`` over ``lake``;
    ``verified``: :meth:`pitwatch.lake.verify.Report.to_dict` of the lake."""
    zone, overrides = display_zones(lake)       # read once: every table's zone

    def zone_of(table_id: str | None) -> str:
        return overrides.get(table_id, zone) if table_id else zone

    findings = _rows(con, _FINDINGS_SQL, {"day": day}, timeout)
    rounds = _rows(con, _ROUNDS_SQL, {"day": day}, timeout)
    trend = _rows(con, _TREND_SQL, {"day": day, "from_day": day - _dt.timedelta(days=TREND_DAYS - 1)}, timeout)
    health = _query(con, "table_health", {"from_day": day.isoformat(), "to_day": day.isoformat()}, timeout)
    hold = _query(con, "hold", {"from_day": day.isoformat(), "to_day": day.isoformat(), "by": "table"}, timeout)
    since = since or day.isoformat()
    changed = _query(con, "findings_changed_since", {"since": since}, timeout)
    runs = _rows(con, _RUNS_SQL, {"day": day}, timeout)

    by_severity = {s: sum(1 for f in findings if f["severity"] == s) for s in SEVERITIES}
    reviewed = sum(1 for f in findings if f["status"] != "open")
    rejected = sum(r["rejected_lines"] for r in health)
    damaged = sum(r["damaged_files"] or 0 for r in runs)
    silent = sum(r["shoe_silent_packs"] + r["devices_silent_live"] for r in health)
    unknown = sum(r["unknown_devices"] for r in health)
    tiles = [
        Tile("rounds", f"{len(rounds):,}", f"{sum(r['hands'] for r in rounds):,} hands"),
        *(Tile(s, f"{by_severity[s]:,}", "findings", alarm=s in PICTURED and by_severity[s] > 0) for s in SEVERITIES),
        Tile("open", f"{len(findings) - reviewed:,}", f"{reviewed:,} reviewed", alarm=len(findings) > reviewed),
        Tile("feed health", "clean" if not (rejected or damaged or silent or unknown) else "attention",
             f"{rejected:,} rejected lines, {damaged:,} damaged files, {silent:,} silent, {unknown:,} unknown devices",
             alarm=bool(rejected or damaged or silent or unknown)),
        Tile("changed since", f"{len(changed):,}", f"findings later runs changed since {since}", alarm=bool(changed)),
    ]

    def hour(f: dict) -> str:
        return display_time(f["ts"], zone_of(f["table_id"]))[11:13]     # the table's local hour

    drawn = [
        _chart("Findings by rule", charts.stacked_bar("Findings by rule", _counted(findings, lambda f: f["rule_id"]),
                                                       "key", "findings", category_title="rule")),
        _chart("Findings by table", charts.stacked_bar("Findings by table", _counted(findings, lambda f: f["table_id"]),
                                                        "key", "findings", category_title="table")),
        _chart("Findings by dealer", charts.stacked_bar(
            "Findings by dealer", _counted(findings, lambda f: _dealer(f["dealer_name"], f["dealer_id"])),
            "key", "findings", category_title="dealer")),
        _chart("Findings by hour", charts.stacked_bar("Findings by hour (local)", _counted(findings, hour),
                                                       "key", "findings", category_title="hour", ordinal=True)),
        _chart("7-day trend", charts.line(f"Findings, {TREND_DAYS} days to {day}",
                                          [{"day": str(r["gaming_day"]), "severity": r["severity"],
                                            "findings": r["findings"]} for r in trend], "day", "findings",
                                          series="severity")),
        _chart("Hands per hour", charts.bar("Hands per hour by table",
                                            [{"table": r["table_id"], "hands per hour": r["hands_per_hour"]}
                                             for r in health if r["hands_per_hour"] is not None],
                                            "table", "hands per hour")),
        _chart("Hold against theory", charts.paired_bar(
            "Hold % against theory by table",
            [{"table": r["table_id"], "hold": which, "hold %": r[col]}
             for r in hold for which, col in (("actual", "hold_pct"), ("theory", "theo_hold_pct"))
             if r[col] is not None], "table", "hold %", "hold")),
    ]

    open_findings = []
    for f in findings:
        if f["status"] != "open" or f["severity"] not in PICTURED:
            continue
        f = {**f, "at": display_time(f["ts"], zone_of(f["table_id"])),
             "dealer": _dealer(f["dealer_name"], f["dealer_id"])}
        picture = None
        if f["round_id"] is not None and f["table_id"] is not None:
            picture = round_picture.load(con, f["table_id"], f["round_id"], day, zone_of(f["table_id"]),
                                         finding_id=f["finding_id"], video_pad=video_pad, timeout=timeout)
        open_findings.append((f, picture))

    for c in changed:
        for key, value in list(c.items()):
            if isinstance(value, _dt.datetime):
                c[key] = display_time(value, zone_of(c.get("table_id")))
    for r in runs:
        for key in ("started", "ended"):
            r[key] = display_time(r[key], zone) if r[key] is not None else ""
    return DayReport(day=day, lake=str(lake), zone=zone,
                     made_at=display_time(now or _dt.datetime.now(_dt.timezone.utc), zone),
                     tiles=tiles, charts=drawn, open_findings=open_findings, changed=changed, since=since,
                     runs=runs, verify=verified)


def _dealer(name: str | None, dealer_id: str | None) -> str:
    return round_picture.dealer_text(name, dealer_id) or "no dealer"


def html(report: DayReport) -> str:
    """The report as one HTML document (``templates/report.html``), self-contained."""
    env = round_picture.environment()
    return env.get_template("report.html").render(report=report)
