"""The syslog sink: each alert as one RFC 5424 message over UDP or TCP (``watch --syslog``).

Target: ``HOST:PORT`` or ``udp://HOST:PORT`` (RFC 5426, one message per
datagram) or ``tcp://HOST:PORT`` (RFC 6587 octet counting: ``LEN SP MSG``);
an IPv6 host in brackets (``tcp://[::1]:6514``).  No TLS (RFC 5425): put a
local relay (rsyslog, syslog-ng) in front for that.

The message::

    <PRI>1 TIMESTAMP HOSTNAME pitwatch PROCID RULE_ID [pitwatch@32473 finding_id="…" rule_id="…" table_id="…" severity="…" gaming_day="…"] BOM MSG

* ``PRI`` = facility × 8 + severity; the facility is ``--syslog-facility``
  (``local0`` by default, the facility a casino's collector is usually told to
  route), the severity the alert's: critical → 2 (crit), major → 3 (err),
  minor → 4 (warning), info → 6 (info) — the names match;
* ``TIMESTAMP`` is the alert's ``ts``, in the table's own offset: the moment
  the finding happened, which is what an audit record is dated by (a backlog
  replayed after a restart keeps its real times; the collector records its
  own time of receipt beside it);
* ``HOSTNAME`` this machine's name, ``PROCID`` the watcher's pid, ``MSGID``
  the ``rule_id`` (RFC 5424 ASCII, at most 32 characters);
* structured data ``pitwatch@32473`` (32473 is the private enterprise number
  RFC 5612 sets aside for examples: pitwatch has none of its own) with the
  finding's ``finding_id``, ``rule_id``, ``table_id``, ``severity`` and
  ``gaming_day``; values escaped as RFC 5424 says (``"``, ``\\`` and ``]``);
* ``MSG``: the UTF-8 BOM and the alert's text line, as ``--format text`` writes it (the
  lake's time zone, the dealer's name: :mod:`pitwatch.live.alert_text`).
  A message is cut to :data:`MAX_UDP` octets over UDP (what RFC 5426 says every
  receiver should take) or :data:`MAX_TCP` over TCP (rsyslog's default
  ``maxMessageSize``), the cut made in ``MSG`` only, at a character boundary,
  marked ``…``: the header and the structured data (the ids) are never cut.

Delivery runs on the sink's own thread (:class:`pitwatch.live.outbox.Outbox`): a
collector that is down or slow never holds the replay.  TCP: a failed send
closes the connection; the alert is sent again on a new one (0.5 s backoff
doubling to 30 s), and before each send the connection is checked for a
close by the collector.  Plain syslog has no receipt: an alert is
"delivered" once the kernel took it (TCP) or the datagram left (UDP; a
connected UDP socket reports a collector's port closed on the next send,
which is then retried).  A collector that dies with alerts in its socket
buffer loses them — use the JSONL file, the lake or the webhook where
that matters.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
import socket
from collections.abc import Callable

from pitwatch.live.alert_text import parse_time, table_zone
from pitwatch.live.outbox import DeliveryError, Outbox

SEVERITY = {"critical": 2, "major": 3, "minor": 4, "info": 6}   # pitwatch severity -> RFC 5424 severity
FACILITIES = {"user": 1, **{f"local{i}": 16 + i for i in range(8)}}
SD_ID = "pitwatch@32473"
SD_FIELDS = ("finding_id", "rule_id", "table_id", "severity", "gaming_day")
MAX_UDP = 2048
MAX_TCP = 8096
BOM = b"\xef\xbb\xbf"
_TARGET = re.compile(r"(?:(?P<scheme>[A-Za-z]+)://)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^\s:/\[\]]+)):(?P<port>[0-9]{1,5})")


def parse_target(text: str) -> tuple[str, str, int]:
    """``(transport, host, port)`` of ``--syslog`` (``HOST:PORT``, ``udp://…``, ``tcp://…``); ValueError else."""
    m = _TARGET.fullmatch(text or "")
    if not m:
        raise ValueError(f"--syslog: {text[:200]!r} is not HOST:PORT, udp://HOST:PORT or tcp://HOST:PORT")
    scheme = (m.group("scheme") or "udp").lower()
    if scheme not in ("udp", "tcp"):
        raise ValueError(f"--syslog: {scheme!r} is not udp or tcp (TLS: put a local relay in front)")
    port = int(m.group("port"))
    if not 1 <= port <= 65535:
        raise ValueError(f"--syslog: port {port} is not 1 to 65535")
    return scheme, m.group("v6") or m.group("host"), port


def _ascii(text, limit: int) -> str:
    """RFC 5424 PRINTUSASCII (33-126), at most ``limit`` characters; ``-`` (NILVALUE) when empty."""
    out = "".join(c for c in str(text or "") if 33 <= ord(c) <= 126)[:limit]
    return out or "-"


def _sd_value(value) -> str:
    text = "" if value is None else str(value)
    return re.sub(r'(["\\\]])', r"\\\1", text)


def _timestamp(rec: dict) -> str:
    when = parse_time(rec["ts"]).astimezone(table_zone(rec))
    text = when.isoformat(timespec="microseconds")
    return text[:-6] + "Z" if when.utcoffset() == _dt.timedelta(0) else text


def message(rec: dict, text: str, *, facility: int, hostname: str, procid: int, limit: int) -> bytes:
    """The RFC 5424 message of one alert (its ``MSG`` the text line ``text``), at most ``limit`` octets."""
    pri = facility * 8 + SEVERITY.get(rec.get("severity"), 5)   # an unknown severity: notice
    sd = "[" + SD_ID + "".join(f' {k}="{_sd_value(rec.get(k))}"' for k in SD_FIELDS) + "]"
    head = (f"<{pri}>1 {_timestamp(rec)} {_ascii(hostname, 255)} pitwatch {procid} "
            f"{_ascii(rec.get('rule_id'), 32)} {sd} ").encode("utf-8", "backslashreplace") + BOM
    body = text.encode("utf-8", "backslashreplace")
    if len(head) + len(body) > limit:
        cut = max(limit - len(head) - 3, 0)
        body = body[:cut].decode("utf-8", "ignore").encode("utf-8") + "…".encode("utf-8")
    return head + body


class SyslogSink(Outbox):
    """Alerts to a syslog collector as RFC 5424 messages (see the module doc)."""

    def __init__(self, target: str, render: Callable[[dict], str], facility: str = "local0", timeout: float = 5.0,
                 max_backoff: float = 30.0) -> None:
        """``render``: an alert record's text line (:func:`pitwatch.live.alert_text.alert_line` with the
        watcher's video pad, zone and dealers: the console's line)."""
        self.transport, self.host, self.port = parse_target(target)
        if facility not in FACILITIES:
            raise ValueError(f"--syslog-facility: {facility!r} is not one of {', '.join(FACILITIES)}")
        super().__init__(max_backoff)
        self.name = f"syslog:{self.transport}://{self.host}:{self.port}"
        self.facility = FACILITIES[facility]
        self.render = render
        self.timeout = timeout
        self.hostname = socket.gethostname()
        self.procid = os.getpid()
        self._sock: socket.socket | None = None

    def _connect(self) -> socket.socket:
        if self._sock is None:
            kind = socket.SOCK_STREAM if self.transport == "tcp" else socket.SOCK_DGRAM
            try:
                infos = socket.getaddrinfo(self.host, self.port, type=kind)
                family, _t, proto, _c, addr = infos[0]
                sock = socket.socket(family, kind, proto)
                sock.settimeout(self.timeout)
                sock.connect(addr)
            except OSError as exc:
                raise DeliveryError(f"cannot reach {self.host}:{self.port}: {exc.strerror or exc}") from None
            self._sock = sock
        return self._sock

    def deliver(self, rec: dict) -> None:
        limit = MAX_TCP if self.transport == "tcp" else MAX_UDP
        msg = message(rec, self.render(rec), facility=self.facility, hostname=self.hostname,
                      procid=self.procid, limit=limit)
        sock = self._connect()
        try:
            if self.transport == "tcp":
                _check_open(sock, self.timeout)
                sock.sendall(str(len(msg)).encode() + b" " + msg)
            else:
                sock.send(msg)
        except OSError as exc:
            raise DeliveryError(f"send to {self.host}:{self.port}: {exc.strerror or exc}") from None

    def disconnect(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None


def _check_open(sock: socket.socket, timeout: float) -> None:
    """Raise if the collector closed the connection (a plain syslog collector never writes to it)."""
    sock.setblocking(False)
    try:
        data = sock.recv(1)
    except BlockingIOError:
        return
    except OSError as exc:
        raise DeliveryError(f"connection lost: {exc.strerror or exc}") from None
    finally:
        sock.settimeout(timeout)
    if data == b"":
        raise DeliveryError("the collector closed the connection")
