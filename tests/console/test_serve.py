"""``pitwatch serve`` as a real process over HTTP: logins, roles, CSRF, headers, the event stream, stopping."""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request

import pytest

from tests.console.conftest import PEOPLE, add_people
from tests.queries.lakes import build_lake


@pytest.mark.slow
def test_a_page_needs_a_login_and_the_right_password(small_lake, serve, client):
    c = client(serve(small_lake))
    status, url, body, _ = c.get("/health")
    assert status == 200 and url == "/login?next=/health" and 'id="password"' in body
    status, url, body, _ = c.login("vera", "not-her-password")
    assert status == 401 and "wrong user name or password" in body
    status, url, body, _ = c.get("/health")
    assert url.startswith("/login")                   # still not logged in
    status, url, body, _ = c.login("vera")
    assert status == 200 and url == "/live" and "vera <small>(viewer)</small>" in body


@pytest.mark.slow
def test_failed_logins_of_a_name_from_an_address_are_refused_after_five_and_logged_and_others_still_log_in(
        small_lake, serve, client):
    served = serve(small_lake)
    c = client(served)
    for _ in range(5):
        assert c.login("rita", "guess-guess")[0] == 401
    status, _url, body, _ = c.login("rita")           # the 6th try of the pair, the right password, too late
    assert status == 429 and "too many failed logins" in body
    status, url, _body, _ = client(served).login("vera")   # the same address, another user: not locked out
    assert status == 200 and url == "/live"
    served.stop()
    assert sum("failed login of 'rita' from 127.0.0.1" in e for e in served.errors) == 5
    assert any("refused: too many failed logins" in e for e in served.errors)


@pytest.mark.slow
def test_a_form_without_the_sessions_csrf_token_is_refused(small_lake, serve, client):
    c = client(serve(small_lake))
    c.get("/login")
    status, _url, body, _ = c.post("/login", {"name": "vera", "password": PEOPLE["vera"][1]}, token=False)
    assert status == 403 and "CSRF" in body
    assert c.get("/live")[1].startswith("/login")     # and no session was opened
    c.login("adam")
    status, _url, _body, _ = c.post("/health/verify", {"csrf_token": "forged"}, token=False)
    assert status == 403


@pytest.mark.slow
def test_a_viewer_may_not_run_verify_and_an_admin_may(small_lake, serve, client):
    served = serve(small_lake)
    viewer = client(served)
    viewer.login("vera")
    status, _url, body, _ = viewer.get("/health")
    assert status == 200 and "Run verify now" not in body
    status, _url, body, _ = viewer.post("/health/verify", {})
    assert status == 403 and "vera is a viewer" in body
    admin = client(served)
    admin.login("adam")
    status, url, body, _ = admin.post("/health/verify", {})
    assert status == 200 and url == "/health"
    assert "checked " in body and "by adam" in body


@pytest.mark.slow
def test_every_answer_forbids_other_hosts_and_framing(small_lake, serve, client):
    c = client(serve(small_lake))
    for path in ("/login", "/static/console.css", "/static/live.js"):
        status, _url, _body, headers = c.get(path)
        assert status == 200, path
        assert "default-src 'self'" in headers["content-security-policy"] and headers["x-frame-options"] == "DENY"


@pytest.mark.slow
def test_a_user_removed_or_given_a_new_password_is_logged_out(small_lake, serve, client, tmp_path):
    from pitwatch.console import auth

    served = serve(small_lake)
    c = client(served)
    c.login("vera")
    assert c.get("/live")[1] == "/live"
    path = auth.default_users_path(small_lake)
    try:
        auth.add_user(path, "vera", "viewer", "a-new-password", replace=True)
        assert c.get("/live")[1].startswith("/login")
    finally:
        auth.add_user(path, "vera", "viewer", PEOPLE["vera"][1], replace=True)


@pytest.mark.slow
def test_a_session_cookie_copied_before_logout_is_worth_nothing_after_it(small_lake, serve, client):
    """The session cookie is signed, not secret-free: one copied from a browser (a shared pit
    terminal, a proxy's log) used to keep working after its user logged out, until it expired."""
    served = serve(small_lake)
    c = client(served)
    c.login("vera")
    copied = "; ".join(f"{k.name}={k.value}" for k in c.jar)
    other = client(served)
    other.login("vera")                               # vera on a second terminal: her own session

    def with_cookie(path: str) -> str:
        request = urllib.request.Request(served.url + path, headers={"Accept": "text/html", "Cookie": copied})
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.url[len(served.url):]

    assert with_cookie("/live") == "/live"            # the must: before logout the copy is a session
    c.get("/live")
    assert c.post("/logout", {})[1] == "/login"
    assert with_cookie("/live").startswith("/login")  # after it, the copy opens nothing
    assert other.get("/live")[1] == "/live"           # and her other session goes on


@pytest.mark.slow
def test_the_live_stream_ends_when_its_user_is_removed(small_lake, serve, client, tmp_path):
    from pitwatch.console import auth

    served = serve(small_lake)
    c = client(served)
    c.login("vera")
    cookie = "; ".join(f"{k.name}={k.value}" for k in c.jar)
    path = auth.default_users_path(small_lake)
    request = urllib.request.Request(served.url + "/live/events", headers={"Accept": "text/event-stream",
                                                                            "Cookie": cookie})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            assert r.readline().startswith(b"retry:")          # the stream is open
            auth.add_user(path, "vera", "viewer", "a-new-password", replace=True)
            started = time.monotonic()
            rest = r.read()                                   # returns once the server ends the stream
        assert time.monotonic() - started < 10 and b"event: alert" not in rest
    finally:
        auth.add_user(path, "vera", "viewer", PEOPLE["vera"][1], replace=True)


def _events(url: str, cookie: str, into: list, stop: threading.Event) -> None:
    request = urllib.request.Request(url, headers={"Accept": "text/event-stream", "Cookie": cookie})
    with urllib.request.urlopen(request, timeout=30) as r:
        for raw in r:
            if stop.is_set():
                return
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                into.append((time.monotonic(), json.loads(line[6:])))


def _alert(finding_id: str, table_id: str, ts: str) -> dict:
    return {"finding_id": finding_id, "rule_id": "BURN_SKIPPED", "title": "Burn card not burned",
            "severity": "critical", "table_id": table_id, "seat": 3, "dealer_id": "D-1", "ts": ts,
            "evidence_from": "2026-11-28T20:02:10Z", "expected": "a burn", "actual": "a card dealt",
            "live_only": False}


@pytest.fixture
def zoned_lake(tmp_path) -> str:
    """The hand-built lake (its zone UTC) with BAC-07's times shown in Puerto Rico's (AST, UTC-4)."""
    from pitwatch.lake import Lake
    from pitwatch.lake import settings as lake_settings
    from pitwatch.schemas.decode import GamingDayConfig

    lake = build_lake(str(tmp_path / "lake"))
    lake_settings.record(Lake.at(lake), GamingDayConfig(timezone="UTC"), "20261129T070000Z-00000000",
                         display={"BAC-07": "America/Puerto_Rico"})
    add_people(lake)
    return lake


@pytest.mark.slow
def test_the_live_stream_sends_an_alert_appended_to_a_followed_file_in_its_tables_time_and_skips_a_line_that_is_none(
        zoned_lake, serve, client, tmp_path):
    alerts_file = tmp_path / "alerts.jsonl"
    alerts_file.write_text("")
    served = serve(zoned_lake, "--alerts-file", alerts_file)
    c = client(served)
    c.login("vera")
    cookie = "; ".join(f"{k.name}={k.value}" for k in c.jar)
    got: list = []
    stop = threading.Event()
    reader = threading.Thread(target=_events, args=(served.url + "/live/events", cookie, got, stop), daemon=True)
    reader.start()
    time.sleep(1.0)                 # the stream is open and has taken the file's end
    with open(alerts_file, "a") as f:
        f.write('{"not": "an alert"}\nnot json at all\n')
        f.write(json.dumps(_alert("f-1", "BAC-07", "2026-11-28T20:03:00Z")) + "\n")
        f.write(json.dumps(_alert("f-2", "BAC-08", "2026-11-28T20:04:00Z")) + "\n")
        f.flush()
        written = time.monotonic()
    end = time.monotonic() + 10
    while len(got) < 2 and time.monotonic() < end:
        time.sleep(0.02)
    stop.set()
    assert len(got) == 2, got
    (at, first), (_, second) = got
    assert at - written < 1.0                   # a liveness bound, not the benchmark's 250 ms
    assert (first["finding_id"], first["severity"], first["table"], first["place"]) == \
        ("f-1", "critical", "BAC-07", "seat 3")
    assert first["link"] == "/findings/f-1" and first["title"] == "Burn card not burned"
    # BAC-07's own zone, to the second and named; the video window's end without its date again
    assert first["time"] == "2026-11-28 16:03:00 AST"
    assert first["video"] == "2026-11-28 16:01:40 AST to 16:03:30 AST"
    assert second["time"] == "2026-11-28 20:04:00 UTC"          # BAC-08: the lake's zone
    served.stop()
    assert sum("a line that is no alert skipped" in e for e in served.errors) == 2


@pytest.mark.slow
def test_the_event_stream_needs_a_login(small_lake, serve):
    served = serve(small_lake)
    request = urllib.request.Request(served.url + "/live/events", headers={"Accept": "text/event-stream"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401


@pytest.mark.slow
def test_sigterm_stops_serve_with_exit_0(small_lake, serve):
    served = serve(small_lake)
    assert served.stop() == 0
    assert any("stopped" in e for e in served.errors)


def test_serve_refuses_a_port_in_use_a_lake_without_users_and_a_folder_that_is_no_lake(small_lake, tmp_path, pitwatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = pitwatch("serve", "--lake", small_lake, "--port", port)
        assert r.returncode == 2 and r.stderr == f"Error: 127.0.0.1:{port} is in use: give another --port\n"
    r = pitwatch("serve", "--lake", small_lake, "--users", tmp_path / "nobody.json")
    assert r.returncode == 2 and "no users in" in r.stderr and "pitwatch users add" in r.stderr
    (tmp_path / "inbox").mkdir()
    r = pitwatch("serve", "--lake", tmp_path / "inbox", "--users", tmp_path / "nobody.json")
    assert r.returncode == 2 and "is not a pitwatch lake" in r.stderr


@pytest.mark.slow
def test_an_alert_appended_between_the_page_and_its_stream_is_not_missed(small_lake, serve, client, tmp_path):
    import html
    import re

    alerts_file = tmp_path / "alerts.jsonl"
    alerts_file.write_text(json.dumps(_alert("before", "BAC-07", "2026-11-28T20:00:00Z")) + "\n")
    served = serve(small_lake, "--alerts-file", alerts_file)
    c = client(served)
    c.login("vera")
    _status, _url, body, _ = c.get("/live")
    assert 'data-finding="before"' in body
    events = html.unescape(re.search(r'data-events="([^"]+)"', body).group(1))
    with open(alerts_file, "a") as f:                   # after the page, before its stream opens
        f.write(json.dumps(_alert("gap", "BAC-07", "2026-11-28T20:01:00Z")) + "\n")
    cookie = "; ".join(f"{k.name}={k.value}" for k in c.jar)
    for url, wanted in ((events, ["gap"]), ("/live/events", [])):       # with the page's mark, and without
        got: list = []
        stop = threading.Event()
        threading.Thread(target=_events, args=(served.url + url, cookie, got, stop), daemon=True).start()
        time.sleep(2.0)
        stop.set()
        assert [g["finding_id"] for _, g in got] == wanted
