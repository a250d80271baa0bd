"""The Runs & health page: the last runs and their accounting, what the feeds lost, and ``verify``.

* **Runs**: the :data:`RUNS_SHOWN` newest records of the ``runs`` table (every writer: the nightly
  batch, reviews, the roster, the watchers' alert commits), each with its lines read, accepted,
  rejected and duplicate, damaged files, findings, status and times (the lake's zone).
* **Feed health** of the last successful batch run's gaming days: the rejects by reason, the
  damaged files (the run's ``damage`` list), and the devices that were silent or unknown (the
  findings ``SHOE_SILENT``, ``UNKNOWN_DEVICE``, ``SEQ_GAP``, ``INPUT_DAMAGED`` of those days), and
  the watchers' ``DEVICE_SILENT`` notices of the recent days' alerts.  Only those days are read:
  the page costs the same in the lake's seventh year as in its first.
* **verify**: :func:`pitwatch.lake.verify.verify`'s last result and when it was taken; an admin
  runs it again from the page (a POST, off the event loop; one at a time).  It is not run on every
  view: it reads the whole chain.

Everything but ``verify`` is read through the analysts' connection.
"""
from __future__ import annotations

import asyncio
import datetime as _dt
import json
import logging
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from pitwatch.console.auth import check_csrf, requires
from pitwatch.console.view import Console, console_of, render, shown_time, zone_of

log = logging.getLogger("pitwatch.console")

RUNS_SHOWN = 20
FEED_RULES = ("SHOE_SILENT", "UNKNOWN_DEVICE", "SEQ_GAP", "INPUT_DAMAGED")
VERIFY_KEY = "verify"           # Console.extra: {"at": datetime, "report": dict, "by": user}
_verify_lock = asyncio.Lock()


def _json(text: Any) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def health(console: Console) -> dict[str, Any]:
    """What the page shows, read in one connection."""
    zone = zone_of(console, None)
    con = console.connect({"runs", "rejects", "findings", "alerts"})
    try:
        def rows(sql: str, params: list | None = None) -> list[dict]:
            cur = con.execute(sql, params or [])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

        runs = rows("SELECT run_id, command, status, started, ended, lines_read, accepted, rejected, duplicates, "
                    "damaged_files, bytes_not_read, damage, findings, findings_by_severity, gaming_days "
                    "FROM runs ORDER BY started DESC NULLS LAST LIMIT ?", [RUNS_SHOWN])
        batch = next((r for r in runs if r["status"] == "succeeded" and r["gaming_days"]
                      and r["lines_read"] is not None), None)
        days = list(batch["gaming_days"]) if batch else []
        rejects = rows("SELECT reason, count(*) AS n, min(file) AS file FROM rejects WHERE gaming_day IN "
                       "(SELECT unnest(?::DATE[])) GROUP BY reason ORDER BY n DESC, reason", [days]) if days else []
        devices = rows("SELECT rule_id, title, severity, table_id, device_id, count(*) AS n FROM findings "
                       "WHERE gaming_day IN (SELECT unnest(?::DATE[])) AND rule_id IN (SELECT unnest(?::VARCHAR[])) "
                       "GROUP BY ALL ORDER BY rule_id, table_id, device_id",
                       [days, list(FEED_RULES)]) if days else []
        since = _dt.date.today() - _dt.timedelta(days=2)
        silent = rows("SELECT table_id, device_id, max(ts) AS last_ts, count(*) AS n FROM alerts WHERE gaming_day >= ? "
                      "AND rule_id = 'DEVICE_SILENT' GROUP BY ALL ORDER BY last_ts DESC", [since])
    finally:
        con.close()
    for r in runs:
        r["started_shown"] = shown_time(r["started"], zone)
        r["ended_shown"] = shown_time(r["ended"], zone)
        r["by_severity"] = _json(r["findings_by_severity"])
        r["damage"] = list(r["damage"] or [])
    for s in silent:
        s["last_shown"] = shown_time(s["last_ts"], zone)
    return {"runs": runs, "batch": batch, "days": days, "rejects": rejects, "devices": devices, "silent": silent}


@requires("viewer")
async def health_page(request: Request) -> Response:
    console = console_of(request)
    page = await run_in_threadpool(health, console)
    checked = console.extra.get(VERIFY_KEY)
    verified = None
    if checked is not None:
        verified = {**checked, "at_shown": shown_time(checked["at"], zone_of(console, None))}
    return render(request, "health.html", verified=verified, verifying=_verify_lock.locked(), **page)


def run_verify(console: Console) -> dict:
    from pitwatch.lake import verify

    return verify.verify(console.lake).to_dict()


@requires("admin")
async def verify_post(request: Request) -> Response:
    """Run ``verify`` now (an admin); the page then shows its result and when it ran."""
    check_csrf(request, await request.form())
    console = console_of(request)
    user = request.state.user
    if not _verify_lock.locked():
        async with _verify_lock:
            at = _dt.datetime.now(_dt.timezone.utc)
            log.info("console: %s runs verify", user.name)
            try:
                report = await run_in_threadpool(run_verify, console)
            except ValueError as exc:           # no lake (LakeError): said on the page
                report = {"intact": False, "problems": [{"kind": "no lake", "what": "", "detail": str(exc)}],
                          "leftovers": [], "checked": {}}
            console.extra[VERIFY_KEY] = {"at": at, "report": report, "by": user.name}
    return RedirectResponse("/health", status_code=303)


ROUTES = [
    Route("/health", health_page, name="health"),
    Route("/health/verify", verify_post, methods=["POST"], name="health_verify"),
]
