"""The console's web application: :func:`create_app` builds it (``pitwatch serve`` runs it in uvicorn).

Starlette, server-rendered Jinja2 templates (autoescaped) and the package's own static files: no
page loads anything from another host (the Content-Security-Policy of every answer says so to the
browser: ``default-src 'self'``), no inline script, no web font.  The pages are the modules of
:data:`PAGES` (how to add one: :mod:`pitwatch.console.view`).
"""
from __future__ import annotations

import logging
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pitwatch.console import auth, health, live, pages
from pitwatch.console.view import Console, render
from pitwatch.lake import Lake

log = logging.getLogger("pitwatch.console")

SESSION_COOKIE = "pitwatch_session"
#: every answer's headers: nothing from another host, no framing, no sniffing, no referrer
SECURITY_HEADERS = (
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                                 b"connect-src 'self'; media-src 'self' data:; frame-ancestors 'none'; "
                                 b"form-action 'self'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
)


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every answer (a plain ASGI middleware: it leaves the live
    page's event stream streaming)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *((k, v) for k, v in SECURITY_HEADERS if k not in names)]
            await send(message)

        await self.app(scope, receive, with_headers)


# ---------------------------------------------------------------- login, logout


async def login_page(request: Request) -> Response:
    if auth.current_user(request) is not None:
        return RedirectResponse(auth.safe_next(request.query_params.get("next")), status_code=303)
    return render(request, "login.html", next=auth.safe_next(request.query_params.get("next")), refused="")


async def login_post(request: Request) -> Response:
    form = await request.form()
    auth.check_csrf(request, form)
    name, password = str(form.get("name") or ""), str(form.get("password") or "")
    target = auth.safe_next(str(form.get("next") or ""))
    user, refused = auth.log_in(request, name, password)
    if user is None:
        status = 429 if refused.startswith("too many") else 401
        return render(request, "login.html", status_code=status, next=target, refused=refused)
    return RedirectResponse(target, status_code=303)


async def logout(request: Request) -> Response:
    form = await request.form()
    auth.check_csrf(request, form)
    name = request.session.get("user")
    request.app.state.console.sessions.end(request.session.get("sid"))     # every copy of the cookie ends here
    request.session.clear()
    if name:
        log.info("console: %s logged out", name)
    return RedirectResponse("/login", status_code=303)


async def home(request: Request) -> Response:
    return RedirectResponse("/live", status_code=303)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if request.url.path.endswith("/events") or request.headers.get("accept", "").startswith("application/json"):
        return Response(exc.detail, status_code=exc.status_code, media_type="text/plain")
    request.state.user = auth.current_user(request)
    return render(request, "error.html", status_code=exc.status_code, status=exc.status_code, detail=exc.detail)


AUTH_ROUTES = [
    Route("/", home, name="home"),
    Route("/login", login_page, methods=["GET"], name="login"),
    Route("/login", login_post, methods=["POST"], name="login_post"),
    Route("/logout", logout, methods=["POST"], name="logout"),
]

#: the pages' routes, module by module (console/view.py: how to add a page)
PAGES = [*live.ROUTES, *health.ROUTES, *pages.ROUTES]


def templates() -> Jinja2Templates:
    """The package's templates (``console/templates``), autoescaped."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("pitwatch.console", "templates"),
                             autoescape=jinja2.select_autoescape(default=True), undefined=jinja2.StrictUndefined)
    return Jinja2Templates(env=env)


def create_app(lake: Lake, users_path: str, secret: bytes, *, alerts_files: tuple[str, ...] = (),
               session_seconds: int = auth.SESSION_SECONDS, sound: bool = True,
               limiter: auth.LoginLimiter | None = None, **extra: Any) -> Starlette:
    """The console of ``lake``: its users in ``users_path`` (:mod:`pitwatch.console.auth`), its
    session cookies signed with ``secret``, the live page also following the watcher's
    ``alerts_files`` (JSONL, ``pitwatch watch --alerts-file``)."""
    console = Console(lake=lake, users=auth.UsersFile(users_path), templates=templates(),
                      alerts_files=tuple(alerts_files), limiter=limiter or auth.LoginLimiter(), sound=sound,
                      sessions=auth.OpenSessions(session_seconds),
                      extra=dict(extra))
    app = Starlette(
        routes=[*AUTH_ROUTES, *PAGES,
                Mount("/static", app=StaticFiles(packages=[("pitwatch.console", "static")]), name="static")],
        middleware=[Middleware(SecurityHeaders),
                    Middleware(SessionMiddleware, secret_key=secret.hex(), session_cookie=SESSION_COOKIE,
                               max_age=session_seconds, same_site="strict", https_only=False)],
        exception_handlers={HTTPException: http_error},
    )
    app.state.console = console
    return app
