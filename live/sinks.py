"""Alert sinks: stdout (JSON lines or text), a JSONL file, an HTTP webhook, the lake's ``alerts/`` table.

(The syslog sink is :mod:`pitwatch.live.syslog`; the text line :mod:`pitwatch.live.alert_text`; the webhook's and
syslog's delivery thread :mod:`pitwatch.live.outbox`.)

An alert is one JSON object per finding with exactly the columns of the
lake's ``findings`` table (``spec/outputs.md``): ``ts`` and ``evidence_from``
as RFC 3339 UTC (``watch --local``: in the finding's ``ts_offset``),
``gaming_day`` as ``YYYY-MM-DD``, ``event_ids`` a list.  (``--with-trigger``
adds ``trigger``: the input line whose arrival raised it.)

Every sink is *at least once* on its own; the service makes delivery exactly
once per sink with its journal (:mod:`pitwatch.live.checkpoint`), and the
sinks that can be read back close the last gap themselves:

* :class:`JsonlFileSink` on restart cuts a half-written last line and reads
  the ids written since the checkpoint (the file is its own journal);
* :class:`pitwatch.live.alerts_committer.LakeSink`: every alert is appended to a batch file of the
  state folder before any other sink gets it; a committer process commits each batch as the
  table's files named by its number; on restart the batch files left and the table's files from the
  checkpoint's counter on say what the lake has;
* :class:`WebhookSink` sends ``Idempotency-Key: <finding_id>`` so a receiver
  can drop the one repeat a crash in the moment between a POST's answer
  and its journal record can cause; undelivered alerts wait in a queue that
  is part of the checkpoint, delivered in order by a thread of the sink's own
  and retried with backoff (:mod:`pitwatch.live.outbox`: a dead or slow receiver never
  holds up the replay or another sink); the syslog sink (:mod:`pitwatch.live.syslog`) too;
* :class:`StdoutSink`: same window, same ``finding_id`` to drop it by.

The lake's ``alerts`` table (a Delta table, committed at most every ``--commit-every`` seconds and
on stop by a process of its own, recorded in the runs chain): :mod:`pitwatch.live.alerts_committer`
and :mod:`pitwatch.live.alerts_table`.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import http.client
import logging
import os
import re
import sys
import urllib.error
import urllib.request
import zoneinfo
from collections.abc import Mapping

import orjson

from pitwatch.live.outbox import DeliveryError, Outbox
from pitwatch.schemas.arrow import FINDINGS, RUN_STAMPS
from pitwatch.schemas.events import micros_to_datetime

log = logging.getLogger("pitwatch")

COLUMNS = tuple(n for n in FINDINGS.names if n not in RUN_STAMPS)   # the findings columns (schemas/arrow.py) but the batch run's


def rfc3339(micros: int, offset: int | None = None) -> str:
    """``micros`` as RFC 3339: UTC (``Z``), or at ``offset`` minutes east of UTC (the table's own time)."""
    dt = micros_to_datetime(micros)
    spec = "milliseconds" if micros % 1000 == 0 else "microseconds"
    if offset is not None:
        return dt.astimezone(_dt.timezone(_dt.timedelta(minutes=offset))).isoformat(timespec=spec)
    return dt.isoformat(timespec=spec).replace("+00:00", "Z")


@dataclasses.dataclass(frozen=True)
class DisplayZones:
    """Where ``watch --local`` shows a table's times (issue 43): the table's display zone, the lake's
    ``[display.tables]`` override (:func:`pitwatch.lake.settings.display_zones`), else the lake's
    time zone; never the offset one device wrote, so a table's shoe and terminal alerts read alike."""

    lake: _dt.tzinfo
    tables: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def offset(self, table_id, micros: int) -> int:
        """Minutes east of UTC of ``table_id``'s display zone at the instant ``micros``."""
        zone = zoneinfo.ZoneInfo(self.tables[table_id]) if table_id in self.tables else self.lake
        shift = micros_to_datetime(micros).astimezone(zone).utcoffset() or _dt.timedelta(0)
        return int(shift.total_seconds()) // 60


def alert_record(f, local: DisplayZones | None = None) -> dict:
    """A finding as an alert: the FINDINGS columns, JSON-ready.  ``local`` (``watch --local``): ``ts``
    and ``evidence_from`` in the table's display zone (:class:`DisplayZones`); UTC without it."""
    rec = {c: getattr(f, c) for c in COLUMNS}
    rec["ts"] = rfc3339(f.ts, None if local is None else local.offset(f.table_id, f.ts))
    rec["evidence_from"] = None if f.evidence_from is None else rfc3339(
        f.evidence_from, None if local is None else local.offset(f.table_id, f.evidence_from))
    rec["gaming_day"] = f.gaming_day.isoformat()
    rec["event_ids"] = list(f.event_ids)
    rec["evidence"] = [{"device_id": d, "event_id": e} for d, e in f.evidence]
    return rec


class StdoutSink:
    """One line per alert on stdout, flushed: JSON, or ``render(record)``'s text (``--format text``)."""

    name = "stdout"

    def __init__(self, stream=None, render=None) -> None:
        self.stream = stream or sys.stdout.buffer
        self.render = render

    def send(self, records: list[dict]) -> list[str]:
        if self.render is None:
            data = b"".join(orjson.dumps(r) + b"\n" for r in records)
        else:
            data = b"".join(self.render(r).encode("utf-8", "backslashreplace") + b"\n" for r in records)
        self.stream.write(data)
        self.stream.flush()
        return [r["finding_id"] for r in records]

    def state(self) -> dict:
        return {}

    def recover(self, state: dict) -> dict:
        return {}


class JsonlFileSink:
    """Append alerts to a JSONL file (flushed per batch of alerts)."""

    def __init__(self, path: str) -> None:
        self.name = f"file:{os.path.abspath(path)}"
        self.path = path
        self._f = None

    def _open(self):
        if self._f is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            self._f = open(self.path, "ab")
        return self._f

    def send(self, records: list[dict]) -> list[str]:
        f = self._open()
        f.write(b"".join(orjson.dumps(r) + b"\n" for r in records))
        f.flush()
        return [r["finding_id"] for r in records]

    def state(self) -> dict:
        return {"size": os.path.getsize(self.path) if os.path.exists(self.path) else 0}

    def recover(self, state: dict) -> dict:
        """Cut a half-written last line; the ids (and days) written after the checkpoint's size."""
        if not os.path.exists(self.path):
            return {}
        with open(self.path, "r+b") as f:
            data = f.read()
            end = data.rfind(b"\n") + 1
            if end < len(data):
                log.warning("%s: removing a half-written last alert (it is sent again)", self.path)
                f.truncate(end)
        ids = {}
        for raw in data[min(state.get("size", 0), end):end].splitlines():
            try:
                rec = orjson.loads(raw)
                ids[rec["finding_id"]] = rec.get("gaming_day") or ""
            except (orjson.JSONDecodeError, KeyError, TypeError):
                continue
        return ids

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is not a delivery: urllib would turn the POST into a GET without the alert."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise urllib.error.HTTPError(req.full_url, code, f"redirect to {newurl!r} not followed", headers, fp)


class WebhookSink(Outbox):
    """POST each alert as JSON to a URL, on a thread of its own (:class:`pitwatch.live.outbox.Outbox`).

    A 2xx answer is delivery.  No answer within ``timeout``, a refused connection, any other
    status (a redirect included: it is not followed) leaves the alert at the head of the queue,
    retried with backoff; the replay and the other sinks never wait for it.
    """

    def __init__(self, url: str, timeout: float = 5.0, max_backoff: float = 30.0) -> None:
        self.check(url)
        super().__init__(max_backoff)
        self.name = f"webhook:{url}"
        self.url = url
        self.timeout = timeout
        self._opener = urllib.request.build_opener(_NoRedirect)

    @staticmethod
    def check(url: str) -> None:
        """ValueError unless ``url`` is an http(s) URL with a host and no space or control character."""
        if not re.match(r"https?://[^/?#\s]+", url) or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
            raise ValueError(f"--webhook: a URL starting with http:// or https:// and a host, got {url[:200]!r}")

    def deliver(self, rec: dict) -> None:
        req = urllib.request.Request(
            self.url, data=orjson.dumps(rec), method="POST",
            headers={"Content-Type": "application/json", "Idempotency-Key": rec["finding_id"],
                     "User-Agent": "pitwatch-watch"})
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                resp.read(1 << 16)
                status = resp.status
        except urllib.error.HTTPError as exc:
            raise DeliveryError(f"HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            raise DeliveryError(str(getattr(exc, "reason", None) or exc) or type(exc).__name__) from None
        if not 200 <= status < 300:
            raise DeliveryError(f"HTTP {status}")

