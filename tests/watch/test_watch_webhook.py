"""``watch --webhook`` (issue 30 item 3): JSON POST, retried with backoff, never blocking the replay.

A real HTTP server on a free local port, a real ``pitwatch watch`` process.  The receiver first
hangs (longer than the sink's 5 s timeout), then answers 500, then 200: the alerts of lines
appended while it hangs reach stdout at once, and every alert reaches the receiver in order,
each with its ``Idempotency-Key``.
"""
from __future__ import annotations

import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave


class Receiver:
    """A webhook receiver whose answers follow a script: ``hang`` (sleep, then 503), a status code."""

    def __init__(self, script: list) -> None:
        self.script = list(script)
        self.default = 200
        self.gets = 0
        self._initial = len(script)
        self.requests: list[tuple[float, object, str | None, dict]] = []   # (arrival, answer, key, body)
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    step = outer.script.pop(0) if outer.script else outer.default
                    # recorded as it arrives; a hung request is never an answer the client saw
                    outer.requests.append((time.monotonic(), step, self.headers.get("Idempotency-Key"), body))
                if step == "hang":
                    time.sleep(7)            # beyond the sink's 5 s timeout: the client has given up
                    step = 503
                try:
                    self.send_response(step)
                    if step in (301, 302, 303, 307, 308):
                        self.send_header("Location", "/elsewhere")
                    self.end_headers()
                except OSError:
                    pass

            def do_GET(self):                # where a followed redirect would land: a 200 without the alert
                with outer.lock:
                    outer.gets += 1
                self.send_response(200)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def first_request_arrived(self) -> bool:
        return len(self.script) < self._initial

    def accepted(self) -> list[dict]:
        with self.lock:
            return [body for _t, code, _k, body in self.requests if code in range(200, 300)]

    def arrivals(self) -> list[tuple]:
        """``(time, answer, Idempotency-Key, body)`` of every POST, in the order they arrived."""
        with self.lock:
            return list(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(script):
        r = Receiver(script)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def _feed_until_first_alert(w, feeds, order) -> int:
    """Append ``order`` in chunks until the watcher raised its first alert; the lines appended."""
    n = 0
    while not w.everything:
        assert n < len(order), "the scenario raised no alert"
        append_lines(feeds, order[n:n + 10])
        n = min(n + 10, len(order))
        w.caught_up(n)
    return n


@pytest.mark.slow
def test_webhook_that_hangs_then_fails_delays_no_alert_on_stdout_and_gets_every_alert_in_order(
        tmp_path, scenario, start_watch, receiver):
    hook = receiver(["hang", 500])
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    feeds.mkdir()
    w = start_watch(feeds, "--lake", lake, "--webhook", hook.url, "--finalize-at-stop")
    order = interleave(scenario, seed=5)
    first = _feed_until_first_alert(w, feeds, order)
    w.wait_for(hook.first_request_arrived, "the webhook's first POST")
    # everything else arrives while the receiver hangs on the first alert (7 s; the sink waits 5 s)
    before = len(w.everything)
    t0 = time.monotonic()
    append_lines(feeds, order[first:])
    w.caught_up(len(order))
    took = time.monotonic() - t0
    assert took < 3.0, f"stdout waited {took:.1f} s behind a hanging webhook"
    assert len(w.everything) > before
    assert [r[1] for r in hook.arrivals()] == ["hang"], "the receiver was not hanging all along: proves nothing"
    # the receiver comes back (the hang, then 500, then 200s): every alert, in order
    w.wait_for(lambda: len(hook.accepted()) >= len(w.everything), "every alert at the webhook", timeout=60)
    assert w.stop(signal.SIGTERM) == 0
    accepted = hook.accepted()
    assert [a["finding_id"] for a in accepted] == [a["finding_id"] for a in w.everything]
    assert accepted == w.everything
    keys = [k for _t, code, k, _b in hook.arrivals() if code in range(200, 300)]
    assert keys == [a["finding_id"] for a in w.everything]
    codes = [code for _t, code, _k, _b in hook.arrivals()]
    assert codes[:2] == ["hang", 500] and set(codes[2:]) == {200}
    # the first alert, tried again after the hang and the 500, before any later one
    assert [k for _t, _c, k, _b in hook.arrivals()[:3]] == [w.everything[0]["finding_id"]] * 3
    # quiet: one warning when delivery began failing, one line when it came back
    failing = [e for e in w.errors if "webhook:" in e and "retried with backoff" in e]
    assert len(failing) == 1, w.errors
    assert any("delivering again" in e for e in w.errors)


@pytest.mark.slow
def test_webhook_queue_waits_in_the_checkpoint_across_a_restart_and_is_delivered_once(
        tmp_path, scenario, start_watch, receiver):
    hook = receiver([])
    hook.default = 503                       # the receiver refuses everything for now
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    order = interleave(scenario, seed=6)
    append_lines(feeds, order)
    w = start_watch(feeds, "--lake", lake, "--webhook", hook.url)
    w.caught_up(len(order))
    w.wait_for(lambda: hook.requests, "a refused POST")
    assert w.stop(signal.SIGTERM) == 0
    assert w.everything and not hook.accepted()
    hook.default = 200                       # it is back; the watcher restarts on the same events
    w2 = start_watch(feeds, "--lake", lake, "--webhook", hook.url)
    w2.caught_up(len(order))
    w2.wait_for(lambda: len(hook.accepted()) >= len(w.everything), "the queued alerts at the webhook")
    assert w2.stop(signal.SIGTERM) == 0
    assert not w2.everything                     # nothing read again: nothing raised again
    assert [a["finding_id"] for a in hook.accepted()] == [a["finding_id"] for a in w.everything]
    # and a third start sends nothing more
    n = len(hook.requests)
    w3 = start_watch(feeds, "--lake", lake, "--webhook", hook.url)
    w3.caught_up(len(order))
    time.sleep(1)
    assert w3.stop(signal.SIGTERM) == 0
    assert len(hook.requests) == n


@pytest.mark.parametrize("url", ["ftp://pit/hook", "http://", "http://pit/hook\nX-Forged: 1", "http://pit/ hook",
                                 "pit/hook", "http://pit/\x7f"])
def test_watch_refuses_a_wrong_webhook_url_before_anything_is_written(tmp_path, url):
    import os
    import subprocess
    import sys

    from tests.watch.conftest import ROOT, WATCH_MAIN

    feeds = tmp_path / "feeds"
    feeds.mkdir()
    p = subprocess.run([sys.executable, *WATCH_MAIN, str(feeds), "--lake", str(tmp_path / "lake"), "--webhook", url],
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    err = p.stderr.decode().strip().splitlines()
    assert p.returncode == 2 and len(err) == 1 and err[0].startswith("Error: --webhook: "), err
    assert not (tmp_path / "lake").exists()


def test_a_redirect_is_no_delivery_the_alert_stays_queued(receiver):
    """urllib would follow a 302 with a GET and no body, and a 200 there would count as delivered."""
    from pitwatch.live.sinks import WebhookSink

    hook = receiver([])
    hook.default = 302
    sink = WebhookSink(hook.url, timeout=2)
    alert = {"finding_id": "f" * 32, "gaming_day": "2026-11-28", "rule_id": "PAYOUT"}
    sink.send([alert])
    end = time.monotonic() + 10
    while sink.failing_since is None and time.monotonic() < end:
        time.sleep(0.01)
    assert sink.last_error == "HTTP 302" and sink.queue == [alert] and sink.delivered() == []
    assert hook.gets == 0
    hook.default = 200
    end = time.monotonic() + 10
    while sink.queue and time.monotonic() < end:
        time.sleep(0.01)
    assert sink.delivered() == [("f" * 32, "2026-11-28")]
    assert [code for _t, code, _k, _b in hook.arrivals()][-1] == 200
    sink.close()
