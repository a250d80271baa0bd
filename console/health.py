"""The Runs & health page: the last runs and their accounting, what the feeds lost, and ``verify``.

* **Runs**: the :data:`RUNS_SHOWN` newest runs of the ``runs`` table (the nightly batch, reviews,
  the roster; not the watchers' alert commits), each with its lines read, accepted, rejected and
  duplicate, damaged files, findings, status and times (the lake's zone), read from the chain's
  head (:func:`last_runs`).
* **Feed health** of the last successful batch run's gaming days: the rejects by reason, the
  damaged files (the run's ``damage`` list), and the devices that were silent or unknown (the
  findings ``SHOE_SILENT``, ``UNKNOWN_DEVICE``, ``SEQ_GAP``, ``INPUT_DAMAGED`` of those days), and
  the watchers' ``DEVICE_SILENT`` notices of the recent days' alerts.  Only those days are read:
  the page costs the same in the lake's seventh year as in its first.
* **verify**: :func:`pitwatch.lake.verify.verify`'s last result and when it was taken; an admin
  runs it again from the page (a POST, off the event loop; one at a time).  It is not run on every
  view: it reads the whole chain.

Everything but the runs and ``verify`` is read through the analysts' connection.
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
from pitwatch.console.live import recent_days_since
from pitwatch.console.view import Console, console_of, local_time, render, zones

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


def last_runs(console: Console) -> tuple[list[dict], dict | None]:
    """The :data:`RUNS_SHOWN` newest runs (each its latest record; the watchers' alert commits left
    out: they commit every 30 s) and the newest batch run that succeeded, read from the runs chain's
    head back (:func:`pitwatch.lake.runs.records_newest_first`, as the device registry and the
    roster are found) and no further than both: a day's records, whatever the lake's age.  The
    analysts' ``runs`` view would read every record of seven years to sort them."""
    from pitwatch.lake import runs as lake_runs

    newest: dict[str, dict] = {}
    batch = None
    for record in lake_runs.records_newest_first(console.lake, skip_watchers=True):
        if record["run_id"] not in newest and len(newest) < RUNS_SHOWN:
            newest[record["run_id"]] = record        # newest first: a run's end before its start
        if batch is None and record["status"] == "succeeded" and record["gaming_days"] \
                and record["lines_read"] is not None:
            batch = record
        if batch is not None and len(newest) >= RUNS_SHOWN:
            break
    return list(newest.values()), batch


def health(console: Console) -> dict[str, Any]:
    """What the page shows: the runs from the chain's head, the rest through the analysts' connection."""
    zoned = zones(console)
    runs, batch = last_runs(console)
    days = list(batch["gaming_days"]) if batch else []
    since = recent_days_since(console)
    con = console.connect({"rejects", "findings", "alerts"})
    try:
        def rows(sql: str, params: list | None = None) -> list[dict]:
            cur = con.execute(sql, params or [])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

        rejects = rows("SELECT reason, count(*) AS n, min(file) AS file FROM rejects WHERE gaming_day IN "
                       "(SELECT unnest(?::DATE[])) GROUP BY reason ORDER BY n DESC, reason", [days]) if days else []
        devices = rows("SELECT rule_id, title, severity, table_id, device_id, count(*) AS n FROM findings "
                       "WHERE gaming_day IN (SELECT unnest(?::DATE[])) AND rule_id IN (SELECT unnest(?::VARCHAR[])) "
                       "GROUP BY ALL ORDER BY rule_id, table_id, device_id",
                       [days, list(FEED_RULES)]) if days else []
        silent = rows("SELECT table_id, device_id, max(ts) AS last_ts, count(*) AS n FROM alerts WHERE gaming_day >= ? "
                      "AND rule_id = 'DEVICE_SILENT' GROUP BY ALL ORDER BY last_ts DESC", [since])
    finally:
        con.close()
    for r in runs:
        r["started_shown"] = local_time(r["started"], zoned.lake)
        r["ended_shown"] = local_time(r["ended"], zoned.lake)
        r["by_severity"] = _json(r["findings_by_severity"])
        r["damage"] = list(r["damage"] or [])
    for s in silent:
        s["last_shown"] = local_time(s["last_ts"], zoned.of(s["table_id"]))
    return {"runs": runs, "batch": batch, "days": days, "rejects": rejects, "devices": devices, "silent": silent}


@requires("viewer")
async def health_page(request: Request) -> Response:
    console = console_of(request)
    page = await run_in_threadpool(health, console)
    checked = console.extra.get(VERIFY_KEY)
    verified = None
    if checked is not None:
        zone = (await run_in_threadpool(zones, console)).lake
        verified = {**checked, "at_shown": local_time(checked["at"], zone)}
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
