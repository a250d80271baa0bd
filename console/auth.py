"""Who may use the console, and as what: the users file, passwords, sessions, CSRF, roles, login.

* **The users file** (``pitwatch users add NAME --role viewer|reviewer|admin``): JSON,
  ``{"users": [{"name", "role", "password_hash"}]}``, kept beside the lake (``LAKE.users.json``
  for a lake folder ``LAKE``) or where ``--users FILE`` says; written whole and atomically,
  mode 0600.  A password is kept only as its argon2id hash (argon2-cffi, the reference
  implementation's binding: the hash names its own parameters, so old hashes verify after a
  parameter change).  The console re-reads the file when it changes: a user removed or given a
  new password is logged out at the next request (the session names the hash it logged in with).
* **Roles**, each able to do what the ones before it can: ``viewer`` reads every page,
  ``reviewer`` also records reviews, ``admin`` also runs ``verify`` from the console.
  :func:`requires` guards an endpoint.
* **Sessions**: Starlette's ``SessionMiddleware`` (a cookie signed with itsdangerous, expiring
  after :data:`SESSION_SECONDS`, ``SameSite=strict``, ``HttpOnly``).  The secret is a file kept
  beside the users file (:func:`secret_path`), created 0600 on first use; a secret others can read
  is refused.  The cookie names a random session id the console keeps while the session is open
  (:class:`OpenSessions`): a logout ends it, so a copy of the cookie taken before (a shared pit
  terminal, a proxy's log) opens nothing after; a restart of ``pitwatch serve`` ends every session.
* **CSRF**: every session has a random token; every form carries it (``csrf_token``) and every
  POST is refused (403) without it (:func:`check_csrf`).
* **Failed logins** are logged (user, address) and limited: :data:`MAX_FAILURES` within
  :data:`FAILURE_WINDOW` seconds for one user name from one address, and further attempts of that
  pair are refused (429) until the window has passed, even with the right password; other users,
  and the same user from another address, still log in (:class:`LoginLimiter`).
"""
from __future__ import annotations

import collections
import functools
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

log = logging.getLogger("pitwatch.console")

ROLES = ("viewer", "reviewer", "admin")        # in order: each can do what the ones before it can
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}\Z", re.A)
MIN_PASSWORD = 8
MAX_PASSWORD = 1024                     # argon2 takes any length; a megabyte password is an attack
MAX_USERS_BYTES = 1 << 20
SESSION_SECONDS = 8 * 3600              # a shift
MAX_FAILURES = 5
FAILURE_WINDOW = 15 * 60.0
MAX_COUNTED = 10_000                    # (name, address) pairs counted at most: bounds the limiter's memory
MAX_SESSIONS = 10_000                   # open sessions kept at most (the oldest end first): bounds their memory

_hasher = PasswordHasher()              # argon2id with the library's (RFC 9106) defaults


@functools.cache
def dummy_hash() -> str:
    """A hash of a random password, made once (not at import: a hash costs what a login does),
    verified against for a name that is not in the users file: a login of an unknown name then
    costs what a known one's does, and its answer's timing does not tell which names exist."""
    return _hasher.hash(secrets.token_urlsafe(32))


class UsersError(ValueError):
    """The users file or a user's name, role or password is refused (the CLI prints ``Error: …``, exit 2)."""


@dataclass(frozen=True)
class User:
    name: str
    role: str
    password_hash: str

    def may(self, role: str) -> bool:
        """This user has ``role`` or a role above it."""
        return ROLES.index(self.role) >= ROLES.index(role)

    @property
    def stamp(self) -> str:
        """What a session remembers of the password it was opened with: a new password ends it."""
        return hashlib.sha256(self.password_hash.encode()).hexdigest()[:16]


def default_users_path(lake_root: str) -> str:
    """The users file kept beside a lake folder: ``/data/lake`` → ``/data/lake.users.json``."""
    return os.path.normpath(lake_root) + ".users.json"


def secret_path(users_path: str) -> str:
    """The session secret kept beside the users file: ``lake.users.json`` → ``lake.users.secret``."""
    base = users_path[:-5] if users_path.endswith(".json") else users_path
    return base + ".secret"


def check_name(name: str) -> str:
    if not NAME.match(name or ""):
        raise UsersError(f"user name {name!r}: letters, digits and . _ @ - only, starting with a letter or "
                         "digit, at most 64 characters")
    return name


def check_role(role: str) -> str:
    if role not in ROLES:
        raise UsersError(f"role {role!r}: one of {', '.join(ROLES)}")
    return role


def check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise UsersError(f"the password is {len(password)} characters: at least {MIN_PASSWORD}")
    if len(password) > MAX_PASSWORD:
        raise UsersError(f"the password is {len(password)} characters: at most {MAX_PASSWORD}")
    return password


def read_users(path: str) -> dict[str, User]:
    """The users of the file (an absent file: none); a file that is not one pitwatch wrote is refused whole."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsersError(f"the users file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise UsersError(f"the users file {path} is not a regular file")
        data = f.read(MAX_USERS_BYTES + 1)
    if len(data) > MAX_USERS_BYTES:
        raise UsersError(f"the users file {path} is larger than {MAX_USERS_BYTES} bytes: not a users file")
    try:
        doc = json.loads(data.decode("utf-8"))
        rows = doc["users"]
        users = {}
        for row in rows:
            user = User(check_name(row["name"]), check_role(row["role"]), str(row["password_hash"]))
            if user.name in users:
                raise UsersError(f"user {user.name!r} twice")
            users[user.name] = user
    except UsersError as exc:
        raise UsersError(f"the users file {path} is damaged: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UsersError(f"the users file {path} is not a pitwatch users file ({type(exc).__name__}: {exc})") from None
    return users


def write_users(path: str, users: dict[str, User]) -> None:
    """The whole file, atomically (a temporary file renamed over it), readable by its owner alone."""
    doc = {"users": [{"name": u.name, "role": u.role, "password_hash": u.password_hash}
                     for u in sorted(users.values(), key=lambda u: u.name)]}
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def add_user(path: str, name: str, role: str, password: str, replace: bool = False) -> User:
    """Add (or with ``replace``, change) a user; the password is kept as its argon2id hash."""
    users = read_users(path)
    check_name(name)
    check_role(role)
    check_password(password)
    if name in users and not replace:
        raise UsersError(f"user {name!r} exists in {path}: --replace gives them the new role and password")
    users[name] = User(name, role, _hasher.hash(password))
    write_users(path, users)
    return users[name]


def remove_user(path: str, name: str) -> None:
    users = read_users(path)
    if name not in users:
        raise UsersError(f"no user {name!r} in {path}")
    del users[name]
    write_users(path, users)


def password_matches(user: User, password: str) -> bool:
    try:
        return _hasher.verify(user.password_hash, password[:MAX_PASSWORD + 1])
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def check_login(users: "UsersFile", name: str, password: str) -> User | None:
    """The user whose name and password these are, or None; an unknown name is verified against
    :func:`dummy_hash` so that it takes as long as a wrong password of a known one."""
    user = users.get(name)
    if user is None:
        password_matches(User(name, "viewer", dummy_hash()), password)
        return None
    return user if password_matches(user, password) else None


def load_secret(users_path: str) -> bytes:
    """The session secret beside the users file, created (32 random bytes, mode 0600) on first use."""
    path = secret_path(users_path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
    st = os.stat(path)
    if st.st_mode & 0o077:
        raise UsersError(f"the console's secret {path} can be read by others (mode {stat.S_IMODE(st.st_mode):o}): "
                         f"chmod 600 {path}")
    with open(path, encoding="ascii") as f:
        text = f.read().strip()
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise UsersError(f"the console's secret {path} is damaged: remove it (every session then ends)")
    return bytes.fromhex(text)


class UsersFile:
    """The users file as the console reads it: again whenever it changed (its size and mtime)."""

    def __init__(self, path: str):
        self.path = path
        self._seen: tuple | None = None
        self._users: dict[str, User] = {}
        self._lock = threading.Lock()

    def users(self) -> dict[str, User]:
        try:
            st = os.stat(self.path)
            key: tuple | None = (st.st_size, st.st_mtime_ns, st.st_ino)
        except FileNotFoundError:
            key = None
        with self._lock:
            if key != self._seen:
                self._users = read_users(self.path) if key is not None else {}
                self._seen = key
            return self._users

    def get(self, name: str) -> User | None:
        return self.users().get(name)


class LoginLimiter:
    """Failed logins counted per (user name, address) pair over a sliding window.

    Per pair, not per name nor per address: behind a TLS proxy every client has the proxy's
    address, and a name is known to anyone; counting either alone would let one person lock the
    floor, or a named user, out.  A right password from another address, or another user's from
    the same one, is never refused because of someone else's failures.  At most
    :data:`MAX_COUNTED` pairs are kept (those past the window forgotten first, then the oldest)."""

    def __init__(self, limit: int = MAX_FAILURES, window: float = FAILURE_WINDOW, clock: Callable[[], float] = time.monotonic):
        self.limit, self.window, self.clock = limit, window, clock
        self._failures: dict[tuple[str, str], collections.deque] = {}
        self._lock = threading.Lock()

    def _recent(self, key: tuple[str, str]) -> collections.deque:
        q = self._failures.get(key, collections.deque())
        now = self.clock()
        while q and now - q[0] > self.window:
            q.popleft()
        return q

    def refused(self, name: str, address: str) -> bool:
        """The pair has failed ``limit`` times within the window (asking adds nothing to remember)."""
        with self._lock:
            return len(self._recent((name, address))) >= self.limit

    def failed(self, name: str, address: str) -> None:
        with self._lock:
            key = (name, address)
            if key not in self._failures and len(self._failures) >= MAX_COUNTED:
                for k in [k for k in self._failures if not self._recent(k)]:   # past the window: forgotten
                    del self._failures[k]
                while len(self._failures) >= MAX_COUNTED:                        # still full: the oldest go
                    del self._failures[next(iter(self._failures))]
            q = self._failures[key] = self._recent(key)
            q.append(self.clock())

    def succeeded(self, name: str, address: str) -> None:
        with self._lock:
            self._failures.pop((name, address), None)


class OpenSessions:
    """The sessions this console opened and has not ended: id -> (user name, when it ends).

    A signed cookie alone stays valid until it expires, whatever its user did: kept here, a
    session ends at logout for every copy of its cookie.  Kept in memory (the console is one
    process): a restart ends them all, which a surveillance room accepts (log in again).  At most
    :data:`MAX_SESSIONS` are kept, those past their end forgotten first, then the oldest."""

    def __init__(self, seconds: float = SESSION_SECONDS, clock: Callable[[], float] = time.time,
                 limit: int = MAX_SESSIONS):
        self.seconds, self.clock, self.limit = seconds, clock, limit
        self._open: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def open(self, name: str) -> str:
        """A new session of ``name``: its id (what the cookie carries)."""
        sid = secrets.token_urlsafe(24)
        with self._lock:
            if len(self._open) >= self.limit:
                now = self.clock()
                for k in [k for k, (_n, ends) in self._open.items() if ends <= now]:
                    del self._open[k]
                while len(self._open) >= self.limit:
                    del self._open[next(iter(self._open))]
            self._open[sid] = (name, self.clock() + self.seconds)
        return sid

    def alive(self, sid: Any, name: str) -> bool:
        """``sid`` is an open session of ``name`` that has not ended."""
        if not isinstance(sid, str):
            return False
        with self._lock:
            found = self._open.get(sid)
        return found is not None and found[0] == name and found[1] > self.clock()

    def end(self, sid: Any) -> None:
        if isinstance(sid, str):
            with self._lock:
                self._open.pop(sid, None)


# ---------------------------------------------------------------- requests


def csrf_token(request: Request) -> str:
    """The session's CSRF token (made on first use): every form carries it as ``csrf_token``."""
    token = request.session.get("csrf")
    if not isinstance(token, str) or len(token) != 43:
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


def check_csrf(request: Request, form: Any) -> None:
    """A posted form without the session's token is refused (403): it came from another site's page."""
    sent = form.get("csrf_token")
    token = request.session.get("csrf")
    if not isinstance(sent, str) or not isinstance(token, str) or not hmac.compare_digest(sent, token):
        raise HTTPException(403, "the form's CSRF token is missing or not this session's: reload the page")


def current_user(request: Request) -> User | None:
    """The logged-in user: the session's name, still in the users file with the same password."""
    name = request.session.get("user")
    if not isinstance(name, str):
        return None
    console = request.app.state.console
    user = console.users.get(name)
    if user is None or request.session.get("stamp") != user.stamp or not console.sessions.alive(
            request.session.get("sid"), name):
        request.session.pop("user", None)
        return None
    return user


Endpoint = Callable[[Request], Awaitable[Response]]


def requires(role: str) -> Callable[[Endpoint], Endpoint]:
    """Guard an endpoint: not logged in, a page redirects to the login (an event stream or a POST is
    401); logged in below ``role``, 403.  The endpoint finds the user in ``request.state.user``."""
    check_role(role)

    def wrap(endpoint: Endpoint) -> Endpoint:
        @functools.wraps(endpoint)
        async def guarded(request: Request) -> Response:
            user = current_user(request)
            if user is None:
                if request.method == "GET" and "text/html" in request.headers.get("accept", "text/html"):
                    return RedirectResponse(f"/login?next={request.url.path}", status_code=303)
                raise HTTPException(401, "log in first")
            if not user.may(role):
                log.warning("console: %s (%s) refused %s %s: needs role %s", user.name, user.role,
                            request.method, request.url.path, role)
                raise HTTPException(403, f"{user.name} is a {user.role}: this needs a {role}")
            request.state.user = user
            return await endpoint(request)
        return guarded
    return wrap


def client_address(request: Request) -> str:
    return request.client.host if request.client is not None else "unknown"


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path of this console only (never another site)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/live"
    return target


def log_in(request: Request, name: str, password: str) -> tuple[User | None, str]:
    """Check a login: (the user, "") or (None, why refused), logging and counting every failure."""
    console = request.app.state.console
    address = client_address(request)
    name = name[:64]
    if console.limiter.refused(name, address):
        log.warning("console: login of %r from %s refused: too many failed logins", name, address)
        return None, "too many failed logins: wait 15 minutes"
    user = check_login(console.users, name, password)
    if user is None:
        console.limiter.failed(name, address)
        log.warning("console: failed login of %r from %s", name, address)
        return None, "wrong user name or password"
    console.limiter.succeeded(name, address)
    request.session.clear()                 # a new session: no token of the one before survives
    request.session.update({"user": user.name, "stamp": user.stamp, "since": int(time.time()),
                            "sid": console.sessions.open(user.name)})
    csrf_token(request)
    log.info("console: %s (%s) logged in from %s", user.name, user.role, address)
    return user, ""
