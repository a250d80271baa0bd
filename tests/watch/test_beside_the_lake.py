"""The live service beside the lake (issue 26, part 4).

``pitwatch watch`` writes only its own files in the lake: its checkpoint ``LAKE/_watch/<id>/``
and its alerts ``LAKE/alerts/gaming_day=D/<id>-<n>.parquet`` (the Delta table ``alerts``, whose
only writer is the watcher, outside the run lock: :mod:`pitwatch.live.alerts_table`; each commit recorded
in the runs chain).  A run commits only its tables' folders and removes leftovers only
there (:func:`pitwatch.lake.delta.remove_leftovers`), so a run, a run after a killed one, and a run
replaying the very gaming day the alerts are of leave ``alerts/`` and ``_watch/`` byte-identical.
The watcher reads no batch table (only the lake's gaming-day settings, ``settings.json``), so it
needs no pinned version; it never waits for a run: it starts and ends while a run is going.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pitwatch.lake import Lake
from tests.pipelines.test_kill_run import _env, pitwatch  # noqa: F401  (the real command, a clean environment)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow     # real pitwatch runs (Beam pipelines) beside the watcher


def tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``root``: SHA-256 and mode."""
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mode)
            for p in sorted(root.rglob("*")) if p.is_file()}


def watch(feed_dir: Path, lake: Path) -> subprocess.CompletedProcess:
    return pitwatch("watch", *sorted(feed_dir.glob("*.jsonl")), "--lake", lake, "--no-stdout", "--quiet",
                    "--stop-after-idle", "1", "--finalize-at-stop")


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    import datetime as dt

    from pitwatch.simulator import simulate

    base = tmp_path_factory.mktemp("beside")
    faults = {"SHOE_CARD_MISMATCH": 1.0, "BURN_SKIPPED": 0.3}
    simulate(base / "n1", tables={"baccarat": 1}, hours=0.5, seed=3, faults=faults, workers=1)
    simulate(base / "n2", tables={"baccarat": 2, "stud": 1, "three_bet_poker": 1}, hours=3, seed=5, faults=faults,
             workers=1, start=dt.datetime(2026, 11, 29, 20, 0, tzinfo=dt.timezone.utc))
    return {"n1": base / "n1" / "2026-11-28", "n2": base / "n2" / "2026-11-29"}


def test_runs_leave_the_watchers_alerts_and_checkpoint_byte_identical(floor, tmp_path):
    from pitwatch.lake import delta
    from pitwatch.pipelines import lake_run

    lake = tmp_path / "lake"
    first = pitwatch("run", floor["n1"], "--lake", lake)
    assert first.returncode == 0, first.stderr
    live = watch(floor["n1"], lake)                       # the same gaming day, live
    assert live.returncode == 0, live.stderr
    alerts, checkpoint = tree(lake / "alerts"), tree(lake / "_watch")
    assert alerts and checkpoint, "the watcher wrote alerts and a checkpoint"
    assert (lake / "alerts" / "_delta_log").is_dir()     # a Delta table, not one of the run's
    # a half-written alert batch of a killed watcher is the watcher's to clean (on its restart), not a run's
    partial = lake / "alerts" / "gaming_day=2026-11-28" / "_default-00000099-deadbeef.partial"
    partial.write_bytes(b"half an alert batch")
    alerts = tree(lake / "alerts")
    # a killed run's file in a table folder: the next run removes it (so its clean-up does run)
    stray = lake / "findings" / "gaming_day=2026-11-28" / "replay-2026-11-28-20261128T070000Z-0badc0de.parquet"
    stray.write_bytes(b"left by a killed run")
    assert str(stray) in delta.leftover_files(Lake.at(lake), lake_run.ALL_TABLES)

    again = pitwatch("run", floor["n1"], "--lake", lake)  # replays 2026-11-28: the alerts' own day
    assert again.returncode == 0, again.stderr
    assert not stray.exists()
    assert tree(lake / "alerts") == alerts
    assert tree(lake / "_watch") == checkpoint
    later = pitwatch("run", floor["n2"], "--lake", lake)  # a new night
    assert later.returncode == 0, later.stderr
    assert tree(lake / "alerts") == alerts
    assert tree(lake / "_watch") == checkpoint
    partial.unlink()                                      # (a watcher's restart removes it)
    intact = pitwatch("verify", "--lake", lake)           # runs and watcher records chained as one
    assert intact.returncode == 0, intact.stdout + intact.stderr


def test_the_watcher_starts_and_ends_while_a_run_is_going(floor, tmp_path):
    lake = tmp_path / "lake"
    first = pitwatch("run", floor["n1"], "--lake", lake)
    assert first.returncode == 0, first.stderr
    run = subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "run", str(floor["n2"]), "--lake", str(lake)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        deadline = time.monotonic() + 120
        while not list((lake / "_staging").glob("*")) and time.monotonic() < deadline:   # the run is under way
            assert run.poll() is None, run.stderr.read()
            time.sleep(0.01)
        live = watch(floor["n1"], lake)
        still_running = run.poll() is None
        assert live.returncode == 0, live.stderr
        assert still_running, "the run ended before the watcher: nothing was shown (make night two bigger)"
    finally:
        rc = run.wait(timeout=600)
        err = run.stderr.read()
        run.stderr.close()
    assert rc == 0, err
    assert tree(lake / "alerts")
