"""INPUT_DAMAGED live: a real ``pitwatch watch`` meeting a truncated gzip raises the batch's finding as an alert.

The same file through ``pitwatch run`` and through the watcher: one alert, the batch's row (same
``finding_id``, table, devices, offset, digest, gaming day, evidence), once only across a restart.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from tests import lake_rows
from tests.pipelines.test_input_damaged import ROOT, truncated

SAME = ("finding_id", "rule_id", "title", "severity", "game", "table_id", "pack_id", "round_id", "seat", "spot",
        "device_id", "dealer_id", "expected", "actual", "event_ids", "source", "ts_offset")


@pytest.mark.slow
def test_the_watcher_raises_the_batchs_finding_for_a_truncated_file(tmp_path, start_watch):
    path, _whole = truncated(tmp_path / "in")
    subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(tmp_path / "in"), "--lake",
                    str(tmp_path / "batch"), "--quiet"], check=True, capture_output=True, timeout=600, cwd=ROOT)
    [batch] = [r for r in lake_rows.dicts(tmp_path / "batch", "findings") if r["rule_id"] == "INPUT_DAMAGED"]

    feeds = tmp_path / "feeds"
    feeds.mkdir()
    alerts_file = tmp_path / "alerts.jsonl"
    args = (feeds, "--lake", tmp_path / "lake", "--alerts-file", alerts_file, "--checkpoint-every", "0.2")
    w = start_watch(*args)
    hidden = feeds / f".{path.name}"          # written whole, then renamed into place (a gzip is read once)
    hidden.write_bytes(path.read_bytes())
    hidden.rename(feeds / path.name)
    w.wait_for(lambda: any(isinstance(a, dict) and a.get("rule_id") == "INPUT_DAMAGED" for a in w.alerts),
               "the INPUT_DAMAGED alert")
    assert w.stop(signal.SIGTERM) == 0
    [alert] = [a for a in w.alerts if isinstance(a, dict) and a.get("rule_id") == "INPUT_DAMAGED"]
    assert {c: alert[c] for c in SAME} == {c: batch[c] for c in SAME}
    assert alert["gaming_day"] == batch["gaming_day"].isoformat() == "2026-11-28"
    assert alert["evidence"] == batch["evidence"] and alert["ts"].startswith("2026-11-28T20:")
    assert any("is damaged" in e for e in w.errors)
    assert [json.loads(x)["finding_id"] for x in alerts_file.read_text().splitlines()
            if json.loads(x)["rule_id"] == "INPUT_DAMAGED"] == [batch["finding_id"]]

    again = start_watch(*args, "--stop-after-idle", "0.5")        # a restart: the file is not raised again
    assert again.proc.wait(60) == 0
    assert not [a for a in again.alerts if isinstance(a, dict) and a.get("rule_id") == "INPUT_DAMAGED"]
