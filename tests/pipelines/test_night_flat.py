"""The nightly run reads the same on a lake of any age (issue 35): the killed runs it records, the
announcement's estimate, its own summary and the leftovers it removes are decided from the chain's
head, a bounded walk back over the newest ``runs`` records and each table's snapshot at the head —
and give exactly the answers the whole history gives.

The lake is real: a real ``pitwatch run``, the watcher's own commit code
(:class:`pitwatch.live.alerts_table.AlertsTable`, a checkpoint every 10 versions so the log archives in
seconds), and records written through :func:`pitwatch.lake.runs.write_run_record` as the runs that
leave them would (a killed run leaves its ``running`` record and nothing else).  "Does not read the
history" is shown by taking the history away — the old ``runs`` record files and every table's
``_log_archive`` — and getting the same answers: a reader of the whole table fails on a missing file.
"""
from __future__ import annotations

import datetime as _dt
import json
import shutil
from pathlib import Path

import pytest

from pitwatch.lake import Lake, delta, delta_log, runs
from pitwatch.lake import parquet as lake
from pitwatch.pipelines import lake_run
from tests.pipelines.test_verify import _day, _run

PROBE = "20990101T000000Z-probe000"       # the run id of the run that asks (its record is not written yet)

pytestmark = pytest.mark.slow     # its aged lake starts with a real pitwatch run (a Beam pipeline)


def _batch_record(run_id: str, status: str, started: _dt.datetime, ended=None, days=()) -> dict:
    """A record as ``pitwatch run`` writes it (its options name the Beam runner)."""
    meta = {"run_id": run_id, "command": f"pitwatch run --lake L ({run_id})", "started": started.isoformat(),
            "versions": runs.versions(),
            "options": json.dumps({"runner": "FnApiRunner", "beam_args": [], "night": None}, sort_keys=True)}
    return runs.run_record(meta, status, {"replayed_days": list(days)}, ended=ended)


def _watcher_commits(table, first: int, commits: int) -> None:
    for i in range(first, first + commits):
        table.send([{"finding_id": f"f-{i}", "rule_id": "BURN_SKIPPED", "gaming_day": "2026-11-28",
                     "severity": "major", "table_id": "BAC-01", "ts": "2026-11-28T20:00:00Z", "live_only": False}])
        table.flush()


def _whole_table(path: str) -> list[dict]:
    """Every run's latest record, as the functions read it before issue 35 (the whole table)."""
    return runs.latest_records(lake.read_table(Lake.at(path), "runs"))


@pytest.fixture(scope="module")
def aged(tmp_path_factory) -> tuple[Path, dict]:
    """A lake aged by a real run, the watcher (60 commits), a run killed long ago, five successful
    runs and a run killed last, with the watcher's commits in between.  Its run ids by role."""
    from pitwatch.live.alerts_table import AlertsTable

    base = tmp_path_factory.mktemp("night-flat")
    path = base / "lake"
    (base / "a.jsonl").write_text(_day("2026-11-28", [1, 2, 5, 6, 9]))
    _run(path, base / "a.jsonl")
    ids = {"first": _whole_table(str(path))[0]["run_id"]}
    t0 = _dt.datetime.now(_dt.timezone.utc)      # runs start in the order they record (they hold the lock)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(delta_log, "CHECKPOINT_EVERY", 10)
        table = AlertsTable(Lake.at(path), "w1")
        table.recover({})
        _watcher_commits(table, 0, 40)
        ids["killed_long_ago"] = "20261129T050000Z-killed01"
        runs.write_run_record(Lake.at(path), _batch_record(ids["killed_long_ago"], "running", t0))
        _watcher_commits(table, 40, 20)
        ids["closed_by"] = []
        for n in range(5):
            run_id = f"20261130T0{n}0000Z-night00{n}"
            started = t0 + _dt.timedelta(hours=1 + n)
            if n == 0:      # the first of them finds the killed run, as run_batch does before its record
                lake_run.record_killed_runs(Lake.at(path), run_id)
            runs.write_run_record(Lake.at(path), _batch_record(run_id, "running", started))
            _watcher_commits(table, 100 + 10 * n, 3)
            runs.write_run_record(Lake.at(path), _batch_record(run_id, "succeeded", started,
                                                           started + _dt.timedelta(seconds=10 * (n + 1)),
                                                           days=[f"2026-11-{28 - k:02d}" for k in range(n + 1)]))
            ids["closed_by"].append(run_id)
        ids["killed_last"] = "20261206T050000Z-killed02"
        runs.write_run_record(Lake.at(path), _batch_record(ids["killed_last"], "running", t0 + _dt.timedelta(hours=7)))
        _watcher_commits(table, 200, 15)
    return path, ids


@pytest.fixture
def lake_copy(aged, tmp_path) -> tuple[Lake, dict]:
    path, ids = aged
    shutil.copytree(path, tmp_path / "lake")
    delta_log.forget()
    return Lake.at(tmp_path / "lake"), ids


def _killed(records: list[dict], run_id: str) -> list[str]:
    return [r["run_id"] for r in records
            if r["status"] == "running" and r["run_id"] != run_id and not runs.is_watcher(r)]


def _seconds_per_day(records: list[dict]) -> float:
    import statistics

    rates = [(r["ended"] - r["started"]).total_seconds() / len(r["gaming_days"]) for r in records
             if r["status"] == "succeeded" and r.get("gaming_days") and r.get("ended") and r.get("started")
             and not runs.is_watcher(r)]
    return statistics.median(rates[-5:])


def _take_the_history_away(path: str, before_run: str) -> int:
    """Delete every ``runs`` record file committed before ``before_run``'s first record and move
    away the archived log files of ``runs`` before it and every other table's whole
    ``_log_archive``: what a reader of the head must not need.  The files gone."""
    root = Path(path)
    versions = delta_log.history_versions(Lake.at(path), "runs")
    first = next(v for v in versions if any(p.startswith(f"run-{before_run}-")
                                            for p in delta.added_paths(delta.read_commit(Lake.at(path), "runs", v)[1])))
    gone = 0
    for v in versions:
        if v < first:
            for rel in delta.added_paths(delta.read_commit(Lake.at(path), "runs", v)[1]):
                (root / "runs" / rel).unlink()
                gone += 1
    history = root.parent / "history"
    history.mkdir()
    for archive in root.glob("*/_log_archive"):
        for f in archive.iterdir():       # runs: the commits before that record; the others: all
            if archive.parent.name != "runs" or int(f.name[:20]) < first:
                shutil.move(f, history / f"{archive.parent.name}-{f.name}")
                gone += 1
    delta_log.forget()
    return gone


def test_the_aged_lake_archived_its_log_and_has_history_before_the_nights(aged):
    path, ids = aged
    assert (path / "runs" / "_log_archive").is_dir() and (path / "alerts" / "_log_archive").is_dir()
    records = _whole_table(str(path))
    assert len(records) > 80          # the watcher's, the runs'
    by_id = {r["run_id"]: r for r in records}
    assert by_id[ids["killed_long_ago"]]["status"].startswith("interrupted: it ended without recording its end")
    assert by_id[ids["first"]]["status"] == "succeeded"


def test_killed_runs_are_the_ones_the_whole_table_names_and_get_their_end(lake_copy):
    path, ids = lake_copy
    assert _killed(_whole_table(path), PROBE) == [ids["killed_last"]]
    assert lake_run.record_killed_runs(path, PROBE) == [ids["killed_last"]]
    after = {r["run_id"]: r for r in _whole_table(path)}
    assert after[ids["killed_last"]]["status"] == (
        f"interrupted: it ended without recording its end (killed?); found by run {PROBE}")
    assert _killed(list(after.values()), PROBE) == [] and lake_run.record_killed_runs(path, PROBE) == []


def test_a_runs_record_and_the_estimate_are_the_whole_tables(lake_copy):
    path, ids = lake_copy
    records = _whole_table(path)
    for run_id in (ids["first"], ids["killed_long_ago"], ids["closed_by"][2], ids["closed_by"][-1], ids["killed_last"]):
        assert runs.read_run_record(path, run_id) == next(r for r in records if r["run_id"] == run_id)
    with pytest.raises(KeyError):
        runs.read_run_record(path, PROBE)
    assert lake_run._seconds_per_day(path) == _seconds_per_day(records) == 10.0


def test_the_nights_reads_need_no_history_and_read_the_same_records_however_old(lake_copy):
    path, ids = lake_copy
    records = _whole_table(path)
    expected = {run_id: next(r for r in records if r["run_id"] == run_id) for run_id in ids["closed_by"]}
    estimate = _seconds_per_day(records)
    assert _take_the_history_away(path, ids["closed_by"][0]) > 100
    with pytest.raises(FileNotFoundError):
        lake.read_table(path, "runs")         # the whole table is gone: a reader of it fails here
    counted = runs.RECORDS_READ[0]
    assert runs.read_run_record(path, ids["closed_by"][-1]) == expected[ids["closed_by"][-1]]
    assert lake_run._seconds_per_day(path) == estimate
    assert lake_run.record_killed_runs(path, PROBE) == [ids["killed_last"]]
    read = runs.RECORDS_READ[0] - counted
    # what was read: the records since the last successful runs began (their 10, the watcher's 27,
    # the killed run's), three times over, never the lake's 60 watcher records before them
    assert read <= 3 * (5 * 2 + 5 * 3 + 1 + 15 + 1)
    assert delta.leftover_files(path, lake_run.ALL_TABLES + ("alerts",)) == []


def test_leftovers_are_the_files_no_commit_added_even_files_removed_long_ago_are_kept(lake_copy, tmp_path):
    path, ids = lake_copy
    root = Path(path)
    day = next((root / "events").glob("gaming_day=*"))
    left = day / "part-00000-left-by-a-killed-run.parquet"
    shutil.copy(next(day.glob("*.parquet")), left)
    left_runs = root / "runs" / "run-20261207T000000Z-killed03-20261207T000000000000Z-0.parquet"
    shutil.copy(next((root / "runs").glob("run-*.parquet")), left_runs)
    names = lake_run.ALL_TABLES + ("alerts",)
    whole = sorted(str(Path(path) / n / f) for n in names if (Path(path) / n).is_dir()
                   for f in _on_disk(Path(path) / n) if f not in delta.committed_paths(path, n))
    assert delta.leftover_files(path, names) == whole == sorted([str(left), str(left_runs)])
    # a watcher's first alerts file, committed 200 versions ago, is known without the history
    first_alerts = sorted(delta.committed_paths(path, "alerts"))[:1]
    assert delta.committed_among(path, "alerts", first_alerts + ["gaming_day=2026-11-28/never.parquet"]) == \
        set(first_alerts)


def _on_disk(folder: Path) -> list[str]:
    return [str(p.relative_to(folder)) for p in folder.rglob("*")
            if p.is_file() and not str(p.relative_to(folder)).startswith(("_delta_log", "_log_archive"))]


def _watcher_record_files(path: str) -> list[Path]:
    """The ``runs`` record files whose record is the watcher's (command ``watch``), found by reading
    every one of them."""
    from pitwatch.lake import chain

    out = []
    for version in delta_log.history_versions(Lake.at(path), "runs"):
        for rel in delta.added_paths(delta.read_commit(Lake.at(path), "runs", version)[1]):
            file = Path(path) / "runs" / rel
            if all(runs.is_watcher(r) for r in chain.parquet_rows(file.read_bytes())):
                out.append(file)
    return out


def test_every_runs_commit_says_whether_its_record_is_the_watchers(lake_copy):
    path, _ids = lake_copy
    watcher_files = {str(f.relative_to(Path(path) / "runs")) for f in _watcher_record_files(path)}
    assert len(watcher_files) > 60
    said = {}
    for version in delta_log.history_versions(path, "runs"):
        actions = delta.read_commit(path, "runs", version)[1]
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        for rel in delta.added_paths(actions):
            said[rel] = info.get(runs.WATCHER_KEY)
    assert {rel for rel, v in said.items() if v == "true"} == watcher_files
    assert {v for rel, v in said.items() if rel not in watcher_files} == {"false"}


def test_the_nights_walks_back_read_no_watcher_record(lake_copy):
    """The killed runs and the estimate are decided without one of the watcher's record files (a
    day's thousands at the default): the runs commit's info says whose record it adds."""
    path, ids = lake_copy
    records = _whole_table(path)
    estimate = _seconds_per_day(records)
    head = Path(path) / "runs" / runs.runs_head(path)["record_path"]    # the chain's head: what a record links to
    gone = [f for f in _watcher_record_files(path) if f != head]
    for f in gone:
        f.unlink()
    assert len(gone) > 60
    counted = runs.RECORDS_READ[0]
    assert lake_run._seconds_per_day(path) == estimate
    assert lake_run.record_killed_runs(path, PROBE) == [ids["killed_last"]]
    # the runs' records only: the first run's 2, the long-ago killed run's 1 and its end, the five
    # runs' 10, the last killed run's 1 (and the records the two walks wrote or re-read)
    assert runs.RECORDS_READ[0] - counted <= 2 * (2 + 2 + 10 + 1)


def test_the_leftover_check_walks_no_log_folder(lake_copy, monkeypatch):
    """A table's ``_delta_log`` and ``_log_archive`` (every commit of its history) are not walked to
    find the leftovers among its data files."""
    import os

    path, _ids = lake_copy
    scanned = []
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda p=".": scanned.append(str(p)) or real(p))
    assert delta.leftover_files(path, lake_run.ALL_TABLES) == []
    assert scanned and not [p for p in scanned if "_delta_log" in p or "_log_archive" in p]
    assert any(p.endswith("/runs") for p in scanned) and any("gaming_day=" in p for p in scanned)


def test_a_record_the_watcher_is_writing_is_no_leftover(lake_copy, monkeypatch):
    """The watcher appends its runs records outside the lake's lock: a night's leftover check meeting
    a record file written but not committed yet waits for the append (``runs_append_lock``) and
    does not remove it."""
    import threading
    import time

    path, _ids = lake_copy
    real = delta.commit_replays
    written = threading.Event()

    def slow_commit(lake_path, name, files, *args, **kwargs):
        if name == "runs":
            written.set()
            time.sleep(0.5)        # the record file is on disk, not committed yet
        return real(lake_path, name, files, *args, **kwargs)

    monkeypatch.setattr(delta, "commit_replays", slow_commit)
    record = _batch_record("20261207T010000Z-watch001", "succeeded", _dt.datetime.now(_dt.timezone.utc),
                           _dt.datetime.now(_dt.timezone.utc))
    record["command"] = "watch"
    appending = threading.Thread(target=runs.write_run_record, args=(path, record))
    appending.start()
    assert written.wait(10)
    assert lake_run.remove_leftovers(path) == []
    appending.join()
    assert runs.read_run_record(path, record["run_id"])["status"] == "succeeded"
    assert record["run_id"] in {r["run_id"] for r in _whole_table(path)}     # every record file is there


def test_a_runs_record_reads_no_snapshot_of_a_table_its_writer_did_not_commit(lake_copy):
    """A record chains its writer's commits: the last commit of each other table is read to see
    whose it is, not that table's snapshot (the watcher's ``alerts``: its checkpoint holds a file a
    commit).  Shown with the alerts table's checkpoints taken away."""
    path, _ids = lake_copy
    gone = list((Path(path) / "alerts" / "_delta_log").glob("*.checkpoint*.parquet"))
    for f in gone:
        f.unlink()
    assert gone
    run_id = "20261207T020000Z-night099"
    runs.write_run_record(path, _batch_record(run_id, "running", _dt.datetime.now(_dt.timezone.utc)))
    assert runs.read_run_record(path, run_id)["status"] == "running"
