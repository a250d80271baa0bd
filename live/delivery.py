"""Alerts to the sinks, each once: the part of :class:`pitwatch.live.service.WatchService` that delivers.

Findings (``emit``), the live-only provisional card alerts (``provisional``, :mod:`pitwatch.live.provisional`)
and the silence notices (``announce``, :mod:`pitwatch.live.silence`) go to every sink that has not taken
them yet (``sent``: per sink, the ids delivered, kept two gaming days); what a sink took is
journalled at once (:meth:`pitwatch.live.checkpoint.StateDir.record`), what a remote sink's thread
delivered when the loop collects it (:meth:`Delivery.delivered`).  Every sink gets every alert, the lake's
``alerts`` table too (issue 30: "the live service's alerts, provisional ones included"; a
live-only alert is marked ``live_only`` there).  The service owns one :class:`Delivery` and hands it
the state it shares (the sinks, what each took, the journal, the engine, the counters, the options).
"""
from __future__ import annotations

import logging

from pitwatch.live.provisional import CLEARED_ID, alert_records
from pitwatch.live.sinks import COLUMNS as ALERT_COLUMNS
from pitwatch.live.sinks import DisplayZones, alert_record, rfc3339
from pitwatch.live.sources import Line

log = logging.getLogger("pitwatch")


def _trigger(trigger: Line | None, ev) -> dict | None:
    """``--with-trigger``: the input line whose arrival raised the alert."""
    if trigger is None:
        return None
    return {"file": trigger.file, "line": trigger.line, "event_id": getattr(ev, "event_id", None)}


class Delivery:
    """The service's alerts on their way to the sinks: what each sink took (``sent``) and the journal
    that keeps it across restarts (``state``)."""

    def __init__(self, sinks: list, sent: dict[str, dict[str, str]], state, engine, counts: dict[str, int],
                 opts) -> None:
        self.sinks, self.sent, self.state = sinks, sent, state
        self.engine, self.counts, self.opts = engine, counts, opts
        # --local: each table's display zone (the lake's [display.tables] override, else its time zone)
        self.local = DisplayZones(opts.config.zone, opts.display_zones) if opts.local else None

    def _mark(self, sink, ids: list[str], days: dict) -> None:
        if not ids:
            return
        sent = self.sent[sink.name]
        items = []
        for fid in ids:
            day = days.get(fid, "")
            sent[fid] = day
            items.append((fid, day))
        self.state.record(sink.name, items)

    def delivered(self, sink, done: list[tuple[str, str]]) -> None:
        """Record what a remote sink's thread delivered (pitwatch.live.outbox)."""
        if done:
            self._mark(sink, [fid for fid, _d in done], dict(done))

    def emit(self, findings: list, trigger: Line | None = None, ev=None) -> None:
        if not findings:
            return
        self.counts["findings"] += len(findings)
        recs, days = [], {}
        for f in findings:
            if f.finding_id in days:
                continue
            rec = alert_record(self.engine.alert_view(f), local=self.local)
            rec["provisional_id"] = self.engine.provisional_of.pop(f.finding_id, None)   # pitwatch.live.provisional
            if self.opts.with_trigger:
                rec["trigger"] = _trigger(trigger, ev)
            recs.append(rec)
            days[f.finding_id] = rec["gaming_day"]
        self._send(recs, days)

    def provisional(self, alerts: list[dict], trigger: Line | None = None, ev=None) -> None:
        """CARD_DISAGREEMENT / CARD_DISAGREEMENT_CLEARED (pitwatch.live.provisional): live-only alerts (no
        findings) to every sink, journalled like alerts (never twice)."""
        if not alerts:
            return
        recs = alert_records(alerts, self.engine.gaming_day, self.local)
        for rec in recs:
            if self.opts.with_trigger:
                rec["trigger"] = _trigger(trigger, ev)
            self.counts["provisional_cleared" if rec["rule_id"] == CLEARED_ID else "provisional"] += 1
        days = {r["finding_id"]: r["gaming_day"] for r in recs}
        self._send(recs, days)

    def _send(self, recs: list[dict], days: dict) -> None:
        """Alerts to every sink that has not taken them yet, journalled (never twice).  The lake's
        sink comes first (:class:`pitwatch.live.alerts_committer.LakeSink`: its batch file), so an
        alert another sink took is on disk for the lake too."""
        for sink in self.sinks:
            todo = [r for r in recs if r["finding_id"] not in self.sent[sink.name]]
            if todo:
                self._mark(sink, sink.send(todo), days)

    def announce(self, notices: list[dict]) -> None:
        """DEVICE_SILENT notices (pitwatch.live.silence): a warning on stderr and a live-only info alert to every
        sink, journalled like alerts (never twice)."""
        if not notices:
            return
        recs, days = [], {}
        for n in notices:
            rec = {c: None for c in ALERT_COLUMNS}
            rec.update({k: v for k, v in n.items() if k in ALERT_COLUMNS})
            rec["ts"] = rfc3339(n["latest_us"])
            rec["gaming_day"] = self.engine.gaming_day(n["latest_us"]).isoformat()
            rec["event_ids"], rec["evidence"], rec["live_only"] = [], [], True
            recs.append(rec)
            days[rec["finding_id"]] = rec["gaming_day"]
            self.counts["notices"] += 1
            log.warning("%s: %s", n["rule_id"], n["actual"])
        self._send(recs, days)
