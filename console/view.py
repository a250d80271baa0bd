"""What every console page shares: the console's state, rendering a template, reading the lake, times.

**Registering a page** (the pattern every page module follows; ``console/live.py`` is one):

1. a module ``console/<page>.py`` with its endpoints, each guarded by
   :func:`pitwatch.console.auth.requires` (``"viewer"`` to read, ``"reviewer"`` to write a review,
   ``"admin"``), each answering with :func:`render`, and a list ``ROUTES`` of Starlette ``Route``\\ s
   with names (``url_for`` in templates);
2. its template ``console/templates/<page>.html``, which ``{% extends "base.html" %}`` and fills
   ``{% block content %}`` (and ``{% block scripts %}`` for a script of ``console/static/``);
3. ``console/app.py`` imports the module and adds its ``ROUTES`` to :data:`pitwatch.console.app.PAGES`;
   a page of the navigation is also an entry of :data:`NAVIGATION`.

A form posts with ``<input type="hidden" name="csrf_token" value="{{ csrf_token }}">`` and the
endpoint calls :func:`pitwatch.console.auth.check_csrf` first.

The lake is read only through the analysts' connection (:func:`connect`: pinned tables, no file
access); a query runs in a worker thread (:func:`query`), never on the event loop.
"""
from __future__ import annotations

import datetime as _dt
import zoneinfo
from dataclasses import dataclass, field
from typing import Any, Mapping

import duckdb
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from pitwatch.config import display_time
from pitwatch.console.auth import LoginLimiter, OpenSessions, UsersFile, csrf_token
from pitwatch.lake import Lake
from pitwatch.queries import lake_views

#: the navigation of base.html: (label, path)
NAVIGATION = (("Live", "/live"), ("Findings", "/findings"), ("Dealers & tables", "/dealers"),
              ("Runs & health", "/health"))


@dataclass
class Console:
    """The state of one console: its lake, its users, its templates; ``request.app.state.console``."""

    lake: Lake
    users: UsersFile
    templates: Jinja2Templates
    alerts_files: tuple[str, ...] = ()
    limiter: LoginLimiter = field(default_factory=LoginLimiter)
    sessions: OpenSessions = field(default_factory=OpenSessions)
    sound: bool = True
    extra: dict[str, Any] = field(default_factory=dict)     # a page's cache (verify's last result, …)

    def connect(self, tables: set[str] | None = None) -> duckdb.DuckDBPyConnection:
        """The analysts' connection (:func:`pitwatch.queries.lake_views.connect`), only ``tables`` opened."""
        return lake_views.connect(self.lake, tables=tables)


def console_of(request: Request) -> Console:
    return request.app.state.console


async def query(request: Request, sql: str, params: list | None = None,
                tables: set[str] | None = None) -> list[dict[str, Any]]:
    """Rows of one statement over the analysts' connection, as dicts, run off the event loop."""
    console = console_of(request)

    def run() -> list[dict[str, Any]]:
        con = console.connect(tables)
        try:
            cur = con.execute(sql, params or [])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]
        finally:
            con.close()

    return await run_in_threadpool(run)


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """A page: ``template`` with the context every page has (the user, the CSRF token, the navigation)."""
    user = getattr(request.state, "user", None)
    context.update(user=user, csrf_token=csrf_token(request), navigation=NAVIGATION,
                   here=request.url.path, sound=console_of(request).sound)
    return console_of(request).templates.TemplateResponse(request, template, context, status_code=status_code)


# ---------------------------------------------------------------- times people read


@dataclass(frozen=True)
class Zones:
    """The zones times are shown in: the lake's, and the tables shown in another (``[display.tables]``).
    Read per page or stream (:meth:`read`), never kept: a run may record a new zone while the
    console runs, and the next page shows it."""

    lake: str
    tables: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, lake: Lake) -> "Zones":
        """The lake's display zones (:func:`pitwatch.lake.settings.display_zones`: one small file)."""
        from pitwatch.lake import settings as lake_settings

        return cls(*lake_settings.display_zones(lake))

    def of(self, table_id: str | None) -> str:
        """The IANA zone of ``table_id``'s times (the lake's for a time of no table)."""
        return self.tables.get(table_id or "", self.lake)

    def show(self, ts: _dt.datetime | None, table_id: str | None) -> str:
        """``2026-11-28 17:47:21 AST``: ``ts`` on the table's clock (:func:`local_time`)."""
        return local_time(ts, self.of(table_id))

    def hour(self, ts: _dt.datetime, table_id: str | None) -> int:
        """The hour of the day ``ts`` is in, on the table's clock (the Findings page's hour chart)."""
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=_dt.timezone.utc)
        return ts.astimezone(zoneinfo.ZoneInfo(self.of(table_id))).hour


def zones(console: Console) -> Zones:
    """The lake's display zones, read for this page or stream (:meth:`Zones.read`)."""
    return Zones.read(console.lake)


def local_time(ts: _dt.datetime | None, zone: str) -> str:
    """``2026-11-28 17:47:21 AST`` (:func:`pitwatch.config.display_time`); empty for no time."""
    return "" if ts is None else display_time(ts, zone)


def local_window(start: _dt.datetime | None, end: _dt.datetime | None, zone: str) -> str:
    """A video window, ``2026-11-28 17:46:51 AST to 17:47:51 AST`` (the date once when it is one day)."""
    if start is None or end is None:
        return ""
    first, last = local_time(start, zone), local_time(end, zone)
    return f"{first} to {last[11:] if last[:10] == first[:10] else last}"
