"""The Runs & health page's data: the runs read from the chain's head (no further back than the page
shows), equal to the analysts' runs view's latest records; the last batch run's feeds."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pitwatch.console import health as console_health
from pitwatch.console.app import create_app
from pitwatch.lake import Lake
from pitwatch.lake import runs as lake_runs
from pitwatch.queries.lake_views import connect
from tests.conftest import run_pitwatch_process


def _console(lake: str):
    from pitwatch.console import auth

    users = auth.default_users_path(lake)
    return create_app(Lake.at(lake), users, b"0" * 32).state.console


def _view_runs(lake: str) -> list[dict]:
    """Every run's latest record as the analysts' runs view has it, newest first, watchers' commits left out."""
    con = connect(Lake.at(lake), tables={"runs"})
    try:
        cur = con.execute("SELECT * FROM runs")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()
    return sorted((r for r in rows if not lake_runs.is_watcher(r)), key=lambda r: (r["started"], r["run_id"]),
                  reverse=True)


@pytest.mark.slow
def test_the_runs_shown_are_the_views_latest_records_newest_first_whole_rows(floor_lake):
    runs, batch = console_health.last_runs(_console(floor_lake))
    view = _view_runs(floor_lake)
    assert len(runs) == len(view) >= 4           # the demo's batch run, its roster, its two reviews
    columns = [c for c in view[0] if c in runs[0]]
    assert [{c: r[c] for c in columns} for r in runs] == [{c: r[c] for c in columns} for r in view]
    assert batch is not None and batch["command"].startswith("pitwatch run") and batch["lines_read"] > 0
    page = console_health.health(_console(floor_lake))
    assert page["days"] == list(batch["gaming_days"])
    assert [r["run_id"] for r in page["runs"]] == [r["run_id"] for r in view]


@pytest.mark.slow
def test_the_runs_are_read_no_further_back_than_the_newest_batch_run(demo_run, tmp_path, monkeypatch):  # noqa: F811
    folder, _ = demo_run
    shutil.copytree(Path(folder) / "demo", tmp_path / "demo")
    feeds, lake = tmp_path / "demo" / "feeds", tmp_path / "demo" / "lake"
    days = sorted(str(d) for d in feeds.iterdir() if d.is_dir())
    again = run_pitwatch_process("run", *days, "--devices", feeds / "devices.csv", "--lake", lake, timeout=600)
    assert again.returncode in (0, 1), again.stderr
    monkeypatch.setattr(console_health, "RUNS_SHOWN", 1)
    before = lake_runs.RECORDS_READ[0]
    runs, batch = console_health.last_runs(_console(str(lake)))
    read = lake_runs.RECORDS_READ[0] - before
    assert [r["run_id"] for r in runs] == [batch["run_id"]] == [_view_runs(str(lake))[0]["run_id"]]
    # the new run's own records (its start and its end) and nothing older: not the first run's,
    # the roster's or the reviews' (the whole table holds more)
    assert read <= 3 < len(_view_runs(str(lake))) * 2
