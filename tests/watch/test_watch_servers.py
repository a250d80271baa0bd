"""A real Redis server as the source, a real HTTP server as the webhook sink; the alert guard."""
from __future__ import annotations

import http.server
import json
import shutil
import socket
import subprocess
import threading
import time

import pytest

from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave


def _findings(received: list) -> list:
    """The webhook's posts of findings (the provisional card alerts are live-only, posted too)."""
    return [r for r in received if not r[2].get("live_only")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis_server(folder, port: int | None = None, appendonly: bool = False):
    """A real redis-server on 127.0.0.1 (its files in ``folder``; ``appendonly``: its entries survive
    a restart), once it answers: (process, client, port); skips where Redis is not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    redis = pytest.importorskip("redis", reason="the 'redis' Python package is not installed")
    port = port or _free_port()
    durable = ["--appendonly", "yes", "--appendfsync", "always"] if appendonly else ["--appendonly", "no"]
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *durable,
                             "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    end = time.monotonic() + 20
    while True:
        try:
            client.ping()
            return proc, client, port
        except (redis.ConnectionError, redis.BusyLoadingError):
            if time.monotonic() > end or proc.poll() is not None:
                proc.kill()
                raise
            time.sleep(0.05)


@pytest.fixture
def redis_url(tmp_path):
    proc, client, port = _redis_server(tmp_path)
    yield f"redis://127.0.0.1:{port}/0", client
    client.close()
    proc.terminate()
    proc.wait(10)


@pytest.mark.slow
def test_redis_streams_source_resumes_at_its_offsets(tmp_path, scenario, batch_ids, redis_url, start_watch):
    url, client = redis_url
    order = interleave(scenario, seed=5)
    half = len(order) // 2
    for dev, line in order[:half]:
        client.xadd(f"pit:{dev}", {"event": line})      # one stream per device, found by pattern
    args = [f"{url}?stream=pit:*", "--lake", tmp_path / "lake"]
    w = start_watch(*args)
    w.caught_up(half)
    assert w.stop() == 0                                  # SIGTERM: checkpoint, exit 0
    first = list(w.alerts)
    for dev, line in order[half:]:
        client.xadd(f"pit:{dev}", {"event": line})
    client.xadd("pit:" + order[0][0], {"event": order[0][1]})   # a re-delivery: dropped
    w = start_watch(*args, "--finalize-at-stop")         # end of input after this run
    w.caught_up(len(order) + 1)
    assert w.stop() == 0
    ids = sorted(a["finding_id"] for a in first + w.alerts)
    assert first and ids == batch_ids                     # each entry read once: none lost, none twice


class _Hook(http.server.BaseHTTPRequestHandler):
    received: list = []
    fail_first = 1

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if _Hook.fail_first > 0:
            _Hook.fail_first -= 1
            self.send_response(503)
            self.end_headers()
            return
        _Hook.received.append((self.headers["Idempotency-Key"], self.headers["Content-Type"], json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.slow
def test_webhook_sink_posts_every_alert_once_and_retries(tmp_path, scenario, batch_ids, start_watch):
    _Hook.received, _Hook.fail_first = [], 1
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        feeds = tmp_path / "feeds"
        w = start_watch(feeds, "--lake", tmp_path / "lake", "--no-stdout", "--finalize-at-stop",
                        "--webhook", f"http://127.0.0.1:{server.server_address[1]}/alerts")
        order = interleave(scenario, seed=6)
        append_lines(feeds, order)
        w.caught_up(len(order))
        w.wait_for(lambda: len(_findings(_Hook.received)) >= len(batch_ids) - 1, "the webhook's retries")
        assert w.stop() == 0
    finally:
        server.shutdown()
    assert w.alerts == [] == w.provisional                 # --no-stdout
    keys = [k for k, _ct, _body in _findings(_Hook.received)]
    assert sorted(keys) == batch_ids                       # the refused one was retried; none twice
    assert all(ct == "application/json" and body["finding_id"] == k for k, ct, body in _Hook.received)
    assert any("webhook" in e and "503" in e for e in w.errors)


@pytest.mark.slow
def test_a_redis_restart_is_waited_out_and_nothing_is_lost(tmp_path, scenario, batch_ids, start_watch):
    """The owed mend: an error of ``xread`` (the server restarting) ended the watcher with a
    traceback.  Now: a warning, tries again, reads on when the server is back — every entry once."""
    proc, client, port = _redis_server(tmp_path, appendonly=True)
    order = interleave(scenario, seed=8)
    half = len(order) // 2
    for dev, line in order[:half]:
        client.xadd(f"pit:{dev}", {"event": line})
    w = start_watch(f"redis://127.0.0.1:{port}/0?stream=pit:*", "--lake", tmp_path / "lake", "--finalize-at-stop")
    try:
        w.caught_up(half)
        client.close()
        proc.terminate()                                  # the server goes away ...
        proc.wait(10)
        w.wait_for(lambda: any("cannot be read" in e for e in w.errors), "the warning")
        time.sleep(1.5)
        assert w.proc.poll() is None                      # ... and the watcher waits
        proc, client, _port = _redis_server(tmp_path, port, appendonly=True)   # back, with its entries
        for dev, line in order[half:]:
            client.xadd(f"pit:{dev}", {"event": line})
        w.caught_up(len(order))
        w.wait_for(lambda: any("is read again" in e for e in w.errors), "the info line")
        assert w.stop() == 0
    finally:
        client.close()
        proc.terminate()
        proc.wait(10)
    assert sum("cannot be read" in e for e in w.errors) == 1
    # every finding once; a restart slower than the SOURCE_LOST wait may add that live-only notice and its clearing
    assert sorted(a["finding_id"] for a in w.alerts if not a.get("live_only")) == batch_ids
