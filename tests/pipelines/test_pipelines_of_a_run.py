"""How many Beam pipelines a run launches (issue 40, deliverable 1: the commit is no pipeline of one
element; on a cluster each pipeline is a job launched, on the embedded runner a start of its workers).
Counted on a real run: ``beam.Pipeline.run`` wrapped, nothing else changed."""
from __future__ import annotations

import gzip
from pathlib import Path

import apache_beam as beam
import pytest

from pitwatch.lake import Lake
from pitwatch.pipelines.batch import run_batch
from tests import lake_rows

FLOOR = Path(__file__).resolve().parents[1] / "data" / "clean-floor-2h.jsonl.gz"


@pytest.mark.slow
def test_a_run_of_one_new_day_is_the_ingest_and_the_days_replay_and_commits_outside_beam(tmp_path, monkeypatch):
    path = tmp_path / "floor.jsonl"
    path.write_bytes(gzip.decompress(FLOOR.read_bytes()))
    launched = []
    real = beam.Pipeline.run

    def counted(self, *args, **kwargs):
        launched.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(beam.Pipeline, "run", counted)
    summary = run_batch([str(path)], Lake.at(tmp_path / "lake"), beam_args=["--runner=FnApiRunner"])
    assert summary.status == "succeeded" and summary.gaming_days == ["2026-11-28"]
    assert len(launched) == 2           # ingest, the day's replay; before issue 40 a third for the commit
    record = lake_rows.last_run(tmp_path / "lake")
    assert record["status"] == "succeeded" and record["table_versions"]
