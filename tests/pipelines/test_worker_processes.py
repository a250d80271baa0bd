"""With Beam's worker processes, `pitwatch run` still prints its own progress and nothing of Beam's."""
from __future__ import annotations

import logging
import subprocess
import sys

from apache_beam.portability.api import beam_fn_api_pb2

from pipelines.batch import _WorkerProgress
from pipelines.simulate import simulate


def test_worker_progress_is_relayed_and_beam_chatter_dropped(caplog):
    ours = beam_fn_api_pb2.LogEntry(message='wrote events/gaming_day=2026-11-28: 1,204 rows → "ok"',
                                    log_location="/site-packages/pipelines/graph.py:104")
    theirs = beam_fn_api_pb2.LogEntry(message="Data channel established.",
                                      log_location="/site-packages/apache_beam/runners/worker/data_plane.py:7")
    relay = _WorkerProgress()
    with caplog.at_level(logging.INFO, logger="pitwatch"):
        for entry in (ours, theirs):
            relay.emit(logging.LogRecord("x", logging.INFO, "f", 1, "Worker: %s",
                                         (str(entry).replace("\n", " "),), None))
    assert [r.getMessage() for r in caplog.records if r.name == "pitwatch"] == [
        'wrote events/gaming_day=2026-11-28: 1,204 rows → "ok"']


def test_cli_run_with_worker_processes_prints_only_pitwatch_lines(tmp_path):
    feeds = tmp_path / "feeds"
    simulate(feeds, tables={"baccarat": 1, "stud": 1}, hours=1, seed=5, faults={})
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "run", str(feeds / "2026-11-28"), "--lake", str(tmp_path / "lake"),
         "--direct_num_workers=2", "--direct_running_mode=multi_processing"],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert "pitwatch: embedded runner: 2 worker processes" in lines
    assert any(l.startswith("pitwatch: replayed BAC-") for l in lines)     # progress from the workers
    assert [l for l in lines if not l.startswith("pitwatch: ")] == []       # and nothing else
    assert "succeeded" in out.stdout
