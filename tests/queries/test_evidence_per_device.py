"""The investigations join a finding's evidence to the events per (device_id, event_id): an event_id
reused by another device (contract version 2) is not cited, nor does it double a row."""
from __future__ import annotations

import datetime as _dt

from pitwatch.lake import Lake
from pitwatch.lake.parquet import write_partition
from pitwatch.queries.catalog import run_query
from pitwatch.queries.lake_views import connect
from pitwatch.rules.catalog import rule
from pitwatch.schemas.arrow import EVENTS, FINDINGS, rows_to_table

DAY = _dt.date(2026, 11, 28)
TS = _dt.datetime(2026, 11, 28, 20, 0, tzinfo=_dt.timezone.utc)


def _event(device, seq, card):
    return {"event_id": "E-1", "ts": TS, "source": "shoe", "type": "card_drawn", "table_id": "BAC-1",
            "device_id": device, "seq": seq, "pack_id": "P-1", "index": 1, "card": card, "gaming_day": DAY,
            "file": f"{device}.jsonl", "line": 1}


def test_findings_evidence_cites_only_the_device_the_finding_names(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    write_partition(lake, "events", DAY, [rows_to_table([_event("SHOE-1", 1, "7h"), _event("DT-ZZ99", 1, "As")],
                                                        EVENTS)])
    finding = {"finding_id": "f-1", "rule_id": "UNACCOUNTED_CARD", "title": rule("UNACCOUNTED_CARD").title,
               "severity": "critical", "game": "baccarat",
               "table_id": "BAC-1", "pack_id": "P-1", "ts": TS, "gaming_day": DAY, "expected": "x", "actual": "y",
               "event_ids": ["E-1"], "source": "integrity", "evidence": [{"device_id": "SHOE-1", "event_id": "E-1"}]}
    write_partition(lake, "findings", DAY, [rows_to_table([finding], FINDINGS)])
    columns, rows = run_query(connect(lake), "findings_evidence", {"gaming_day": "2026-11-28"})
    got = [dict(zip(columns, r)) for r in rows]
    assert [(r["finding_id"], r["device_id"], r["event_id"], r["card"]) for r in got] == [
        ("f-1", "SHOE-1", "E-1", "7h")]
