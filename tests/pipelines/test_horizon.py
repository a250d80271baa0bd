"""The run's horizon (events.md version 2): a gaming day more than 2 days after the run's last day is rejected.

The last day is the nightly ``--day`` (each replayed day's own, so that a
replay of it on a later night decides the same) or ``--not-after DAY``; it is
recorded in ``runs`` (``options.not_after``).  A run without a last day has
no horizon.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from tests import lake_rows
from tests.conftest import line

LINES = [line(seq=1), line(seq=2, ts="2026-11-30T12:00:00Z"), line(seq=3, ts="2026-12-01T06:00:00Z"),
         line(seq=4, ts="2027-01-01T12:00:00Z")]


def _run_record(lake):
    return lake_rows.last_run(lake)


def _rejected_seqs(lake):
    return sorted(r["seq"] for r in lake_rows.dicts(lake, "rejects"))


@pytest.mark.slow
def test_the_nightly_day_is_the_horizon_and_is_recorded(tmp_path):
    inbox = tmp_path / "inbox"
    (inbox / "2026-11-28").mkdir(parents=True)
    (inbox / "2026-11-28" / "SHOE-1.jsonl").write_text("\n".join(LINES) + "\n")
    lake = tmp_path / "lake"
    result = CliRunner().invoke(main, ["run", "--day", "2026-11-28", "--inbox", str(inbox), "--lake", str(lake),
                                       "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert _rejected_seqs(lake) == [3, 4]
    reasons = sorted(r["reason"] for r in lake_rows.dicts(lake, "rejects"))
    assert reasons[0].startswith("field 'ts' falls in gaming day 2026-12-01, more than 2 days after the run's "
                                 "last day 2026-11-28")
    assert json.loads(_run_record(lake)["options"])["not_after"] == "2026-11-28"


@pytest.mark.slow
def test_not_after_sets_the_horizon_of_a_one_off_run(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(LINES) + "\n")
    lake = tmp_path / "lake"
    result = CliRunner().invoke(main, ["run", str(path), "--lake", str(lake), "--not-after", "2026-11-29",
                                       "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert _rejected_seqs(lake) == [4]
    assert json.loads(_run_record(lake)["options"])["not_after"] == "2026-11-29"


@pytest.mark.slow
def test_without_a_last_day_there_is_no_horizon(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(LINES) + "\n")
    lake = tmp_path / "lake"
    assert CliRunner().invoke(main, ["run", str(path), "--lake", str(lake), "--quiet"]).exit_code == 0
    assert not (lake / "rejects").exists() or _rejected_seqs(lake) == []
    assert json.loads(_run_record(lake)["options"])["not_after"] is None


@pytest.mark.parametrize("args,message", [
    (["--not-after", "2026-13-01"], "Error: --not-after must be a date YYYY-MM-DD, got '2026-13-01'\n"),
    (["--not-after", "2026-11-28", "--day", "2026-11-28", "--inbox", "x"],
     "Error: --not-after goes without --day (a nightly run's last day is its --day)\n"),
])
def test_a_bad_not_after_is_one_error_line(tmp_path, args, message):
    path = tmp_path / "in.jsonl"
    path.write_text(LINES[0] + "\n")
    inputs = [] if "--day" in args else [str(path)]
    result = CliRunner().invoke(main, ["run", *inputs, "--lake", str(tmp_path / "lake"), *args])
    assert result.exit_code == 2 and result.output == message
    assert not (tmp_path / "lake").exists()
