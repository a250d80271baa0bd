"""``watch --syslog`` (issue 30 item 3): RFC 5424 over UDP and TCP, into a real rsyslog.

The test starts Debian's ``rsyslogd`` (package ``rsyslog``; ``.ci/run`` installs it) in the
foreground with its own configuration: an ``imudp`` and an ``imtcp`` input on free local ports,
every message written to a file in ``tmp_path`` with rsyslog's own parse of it (PRI, TIMESTAMP,
APP-NAME, PROCID, MSGID, STRUCTURED-DATA, MSG, input).  So what is checked is what a collector
understood, not the bytes we meant to send.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from pitwatch.live.alert_text import alert_line
from pitwatch.live.syslog import BOM, MAX_UDP, SEVERITY, message, parse_target
from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave

RSYSLOGD = shutil.which("rsyslogd") or ("/usr/sbin/rsyslogd" if os.path.exists("/usr/sbin/rsyslogd") else None)
FIELDS = ("pri", "timereported", "hostname", "app", "procid", "msgid", "sd", "input", "msg")


def free_port(kind) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rsyslog:
    """rsyslogd -n -f CONF -i PIDFILE, an imudp and an imtcp input, messages to ``out.log``."""

    def __init__(self, folder: Path, udp: int, tcp: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.udp, self.tcp = folder, udp, tcp
        self.out = folder / "out.log"
        template = "\\t".join(["%pri%", "%timereported:::date-rfc3339%", "%hostname%", "%app-name%", "%procid%",
                               "%msgid%", "%structured-data%", "%inputname%", "%msg%"]) + "\\n"
        (folder / "rsyslog.conf").write_text(f'''
global(workDirectory="{folder}" maxMessageSize="64k")
module(load="imudp")
module(load="imtcp")
input(type="imudp" port="{udp}" address="127.0.0.1")
input(type="imtcp" port="{tcp}" address="127.0.0.1")
template(name="fields" type="string" string="{template}")
*.* action(type="omfile" file="{self.out}" template="fields")
''')
        self.proc = subprocess.Popen([RSYSLOGD, "-n", "-f", str(folder / "rsyslog.conf"), "-i", str(folder / "pid")],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        end = time.monotonic() + 10
        while True:              # up when its TCP input takes a connection
            try:
                socket.create_connection(("127.0.0.1", tcp), timeout=0.5).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > end:
                    raise AssertionError(f"rsyslogd did not start: {self.proc.stdout.read().decode()[-2000:]}")
                time.sleep(0.05)

    def messages(self) -> list[dict]:
        if not self.out.exists():
            return []
        rows = []
        for line in self.out.read_bytes().decode("utf-8").splitlines():
            rows.append(dict(zip(FIELDS, line.split("\t", len(FIELDS) - 1))))
        return rows

    def wait_for(self, n: int, timeout: float = 20.0) -> list[dict]:
        end = time.monotonic() + timeout
        while len(self.messages()) < n and time.monotonic() < end:
            time.sleep(0.05)
        return self.messages()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)


@pytest.fixture
def rsyslog(tmp_path):
    if RSYSLOGD is None:
        pytest.skip("rsyslogd is not installed (Debian package rsyslog; .ci/run installs it)")
    started = []

    def start(udp=None, tcp=None) -> Rsyslog:
        r = Rsyslog(tmp_path / f"rsyslog{len(started)}", udp or free_port(socket.SOCK_DGRAM),
                    tcp or free_port(socket.SOCK_STREAM))
        started.append(r)
        return r

    yield start
    for r in started:
        r.stop()


def _check_message(m: dict, alert: dict, transport: str) -> None:
    assert m["input"] == ("imudp" if transport == "udp" else "imtcp")
    assert int(m["pri"]) == 16 * 8 + SEVERITY[alert["severity"]]       # local0, the alert's severity
    assert m["app"] == "pitwatch" and m["msgid"] == alert["rule_id"] and m["procid"].isdigit()
    assert m["hostname"] == socket.gethostname()
    for k in ("finding_id", "rule_id", "table_id", "severity", "gaming_day"):
        assert f'{k}="{alert[k]}"' in m["sd"], (k, m["sd"])
    assert m["sd"].startswith("[pitwatch@32473 ")
    assert m["msg"] == BOM.decode() + alert_line(alert, 30)            # the text line, as --format text
    # TIMESTAMP: the alert's ts in the table's own offset, the same instant
    from pitwatch.live.alert_text import parse_time
    assert parse_time(m["timereported"]) == parse_time(alert["ts"])


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_syslog_sink_delivers_each_alert_to_a_real_rsyslog(tmp_path, scenario, start_watch, rsyslog, transport):
    r = rsyslog()
    port = r.udp if transport == "udp" else r.tcp
    target = f"127.0.0.1:{port}" if transport == "udp" else f"tcp://127.0.0.1:{port}"   # UDP is the default
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    order = interleave(scenario, seed=7)
    append_lines(feeds, order)
    w = start_watch(feeds, "--lake", lake, "--syslog", target, "--finalize-at-stop")
    w.caught_up(len(order))
    assert w.stop(signal.SIGTERM) == 0
    got = r.wait_for(len(w.everything))
    assert len(w.everything) >= 5
    assert sorted(m["sd"].split('finding_id="')[1].split('"')[0] for m in got) == sorted(a["finding_id"] for a in w.everything)
    by_id = {a["finding_id"]: a for a in w.everything}
    for m in got:
        _check_message(m, by_id[m["sd"].split('finding_id="')[1].split('"')[0]], transport)


@pytest.mark.slow
def test_syslog_collector_down_at_start_delays_nothing_and_gets_every_alert_once_it_is_up(
        tmp_path, scenario, start_watch, rsyslog):
    udp, tcp = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    feeds.mkdir()
    w = start_watch(feeds, "--lake", lake, "--syslog", f"tcp://127.0.0.1:{tcp}", "--gap-wait", "0.5")
    order = interleave(scenario, seed=8)
    t0 = time.monotonic()
    append_lines(feeds, order)
    w.caught_up(len(order))
    assert time.monotonic() - t0 < 5 and w.everything       # stdout did not wait for the collector
    w.wait_for(lambda: any("retried with backoff" in e for e in w.errors), "the failure said once")
    r = rsyslog(udp=udp, tcp=tcp)                         # the collector comes up
    got = r.wait_for(len(w.everything), timeout=40)
    assert w.stop(signal.SIGTERM) == 0
    ids = [m["sd"].split('finding_id="')[1].split('"')[0] for m in got]
    assert ids == [a["finding_id"] for a in w.everything]     # in order, each once
    assert sum("retried with backoff" in e for e in w.errors) == 1
    assert any("delivering again" in e for e in w.errors)


def test_syslog_message_escapes_structured_data_and_cuts_only_the_text():
    alert = {"finding_id": "f" * 32, "rule_id": "CUT_PLACEMENT", "severity": "minor", "table_id": 'BAC"]\\01',
             "gaming_day": "2026-11-28", "ts": "2026-11-28T20:10:48.247Z", "ts_offset": -240}
    msg = message(alert, "é" * 5000, facility=16, hostname="pit host", procid=7, limit=MAX_UDP)
    assert len(msg) <= MAX_UDP
    head, _, body = msg.partition(BOM)
    assert head.startswith(b"<132>1 2026-11-28T16:10:48.247000-04:00 pithost pitwatch 7 CUT_PLACEMENT ")
    assert b'table_id="BAC\\"\\]\\\\01"' in head
    assert body.decode("utf-8").endswith("…") and set(body.decode("utf-8")[:-1]) == {"é"}


@pytest.mark.parametrize("text, want", [
    ("siem:514", ("udp", "siem", 514)), ("udp://10.0.0.5:1514", ("udp", "10.0.0.5", 1514)),
    ("tcp://[::1]:6514", ("tcp", "::1", 6514)), ("TCP://siem.pit:601", ("tcp", "siem.pit", 601))])
def test_syslog_targets(text, want):
    assert parse_target(text) == want


@pytest.mark.parametrize("text, says", [
    ("siem", "is not HOST:PORT"), ("siem:0", "port 0"), ("siem:70000", "port 70000"),
    ("tls://siem:6514", "'tls' is not udp or tcp"), ("siem:514\n", "is not HOST:PORT"), ("", "is not HOST:PORT")])
def test_watch_refuses_a_wrong_syslog_target_before_anything_starts(tmp_path, text, says):
    import sys

    from tests.watch.conftest import ROOT, WATCH_MAIN

    feeds = tmp_path / "feeds"
    feeds.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, *WATCH_MAIN, str(feeds), "--lake", str(tmp_path / "lake"), "--syslog", text],
                       capture_output=True, env=env, timeout=60)
    assert p.returncode == 2
    err = p.stderr.decode().strip().splitlines()
    assert len(err) == 1 and err[0].startswith("Error: --syslog: ") and says in err[0], err
    assert not (tmp_path / "lake").exists()          # nothing written
