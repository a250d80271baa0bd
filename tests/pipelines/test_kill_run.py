"""``kill -9`` of a real ``pitwatch run`` at several points (issue 26, part 3).

The lake holds a first night (2026-11-28); a second run (a bigger night, 2026-11-29) is started
as a real process in its own process group and killed with SIGKILL (the whole group: Beam's
worker processes too) at a point read from the run itself, never from a hook in pitwatch:

* **during ingest**: its log says it has read an input file (ingest is still going: the staged
  days' ``ingest.json`` does not exist yet, checked after the kill);
* **during a day's replay**: the replay has written a data file into a table's folder
  (``replay-<day>-<run id>.parquet``) and nothing is committed yet (checked);
* **during the commit**: a table's ``_delta_log`` has a commit the run made and the run's final
  ``runs`` record does not exist (checked: some table is committed past the last successful
  run, the run's record still says ``running``): a half-committed lake.

Each time every reader (``pitwatch sql``, ``pitwatch query``, ``pitwatch export-duckdb``, and
:func:`pitwatch.queries.lake_views.connect` under them) gives exactly the rows it gave before the killed
run (SHA-256 of every table's whole rows), no file a reader opens is the killed run's, and the
next run completes, removes the leftovers and gives exactly the lake of the two runs uninterrupted.
A reader polling while a run commits sees only (events, findings) pairs that existed together.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from pitwatch.lake import Lake
from tests import lake_rows
from tests.conftest import process_env
from tests.conftest import run_pitwatch_process as pitwatch  # a real process: runs killed

TABLES = ("events", "rejects", "rounds", "packs", "findings", "rules")
pytestmark = pytest.mark.slow     # real pitwatch runs (Beam pipelines)


def _env() -> dict:
    return process_env()


def start_run(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "run", *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(),
                            start_new_session=True)


def kill_group(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)     # the group this test started: the run and its Beam workers
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def every_row(name: str) -> str:
    """The statement of a table's whole rows but the columns naming the run that wrote them (the findings'
    first_seen_run, last_changed_run: lake_rows.RUN_NAMED): a killed run's retry and the reference lake's run
    are different runs that write the same rows."""
    named = lake_rows.RUN_NAMED.get(name)
    return f"SELECT * EXCLUDE ({', '.join(named)}) FROM {name}" if named else f"FROM {name}"


def table_hashes(lake) -> dict[str, str]:
    """SHA-256 of every table's whole rows (sorted), as the analysts' connection reads them."""
    from pitwatch.queries.lake_views import connect

    con = connect(Lake.at(lake))
    try:
        out = {}
        for name in TABLES:
            rows = con.execute(f"{every_row(name)} ORDER BY ALL").fetchall()
            out[name] = hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()
        return out
    finally:
        con.close()


def reader_answers(lake, tmp: Path) -> dict[str, str]:
    """What every reader of record answers, hashed: the connection, sql, query, export-duckdb."""
    out = {f"connect:{k}": v for k, v in table_hashes(lake).items()}
    sql = pitwatch("sql", f"{every_row('findings')} ORDER BY finding_id", "--lake", lake, "--format", "json")
    assert sql.returncode == 0, sql.stderr
    out["sql"] = hashlib.sha256(sql.stdout.encode()).hexdigest()
    query = pitwatch("query", "findings_by_rule", "--lake", lake, "--param", "from_day=2026-11-01",
                     "--param", "to_day=2026-12-31", "--format", "csv")
    assert query.returncode == 0, query.stderr
    out["query"] = hashlib.sha256(query.stdout.encode()).hexdigest()
    db = tmp / f"export-{time.monotonic_ns()}.duckdb"
    done = pitwatch("export-duckdb", "--lake", lake, "--out", db)
    assert done.returncode == 0, done.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        for name in TABLES:
            rows = con.execute(f"{every_row(name)} ORDER BY ALL").fetchall()
            out[f"export:{name}"] = hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()
    finally:
        con.close()
    return out


def run_records(lake) -> dict[str, str]:
    from pitwatch.lake import parquet as lake_mod
    from pitwatch.lake import runs

    return {r["run_id"]: r["status"] for r in runs.latest_records(lake_mod.read_table(Lake.at(lake), "runs"))}


def log_versions(lake) -> dict[str, int]:
    """How many commits each table's log holds (read from the folder: what a run has written)."""
    out = {}
    for name in TABLES + ("state", "runs"):
        folder = Path(lake) / name / "_delta_log"
        out[name] = len([p for p in folder.glob("*.json") if p.name[:1].isdigit()]) if folder.is_dir() else 0
    return out


def files_read(lake) -> list[str]:
    from pitwatch.lake import versions as lake_versions
    from pitwatch.queries.lake_views import table_files

    versions = lake_versions.pinned_versions(Lake.at(lake)) or {}
    return [f for name in TABLES for f in table_files(Lake.at(lake), name, versions)]


def killed_run_id(lake, before: set[str]) -> str:
    new = set(run_records(lake)) - before
    assert len(new) == 1, new
    return new.pop()


def build_floor(tmp_path_factory):
    """Night one (small) and night two (big enough that each phase lasts), the lake after night one,
    and the reference lake of both runs uninterrupted (with the readers' answers on each)."""
    from pitwatch.simulator import simulate

    base = tmp_path_factory.mktemp("kill")
    faults = {"SHOE_CARD_MISMATCH": 1.0, "BURN_SKIPPED": 0.3}
    simulate(base / "n1", tables={"baccarat": 1}, hours=0.5, seed=3, faults=faults, workers=1)
    simulate(base / "n2", tables={"baccarat": 2, "stud": 1, "three_bet_poker": 1}, hours=3, seed=5, faults=faults,
             workers=1, start=dt.datetime(2026, 11, 29, 20, 0, tzinfo=dt.timezone.utc))
    first = base / "first"
    done = pitwatch("run", base / "n1" / "2026-11-28", "--lake", first)
    assert done.returncode == 0, done.stderr
    reference = base / "reference"
    shutil.copytree(first, reference)
    done = pitwatch("run", base / "n2" / "2026-11-29", "--lake", reference)
    assert done.returncode == 0, done.stderr
    return {"night2": base / "n2" / "2026-11-29", "first": first, "first_answers": reader_answers(first, base),
            "reference_answers": reader_answers(reference, base), "base": base}


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    return build_floor(tmp_path_factory)


def _kill_when(lake: Path, night2: Path, reached) -> set[str]:
    """Start the second run on ``lake`` and SIGKILL it as soon as ``reached(log_line, lake)`` is true
    (checked on every line it logs and every 2 ms); returns the run ids that existed before."""
    before = set(run_records(lake))
    proc = start_run(night2, "--lake", lake, "--verbose")     # each file's line: a point within the ingest
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            if reached(list(lines), lake):
                kill_group(proc)
                return before
            if proc.poll() is not None:
                pytest.fail(f"the run ended (rc {proc.returncode}) before the point was reached:\n" + "".join(lines))
            time.sleep(0.002)
        pytest.fail("the point was not reached in 300 s")
    finally:
        if proc.poll() is None:
            kill_group(proc)
        proc.stderr.close()


def _check_readers_on_the_first_night_then_rerun(floor, lake: Path, killed: str, tmp_path: Path) -> None:
    assert reader_answers(lake, tmp_path) == floor["first_answers"]
    assert not [f for f in files_read(lake) if killed in f], "a reader opens a file of the killed run"
    # the killed run is no night to read: --as-of it is refused, saying it did not succeed
    refused = pitwatch("sql", "FROM findings", "--lake", lake, "--as-of", killed)
    assert refused.returncode == 2 and "did not succeed (status: running)" in refused.stderr, refused.stderr
    again = pitwatch("run", floor["night2"], "--lake", lake)
    assert again.returncode == 0, again.stderr
    assert run_records(lake)[killed].startswith("interrupted: it ended without recording its end"), \
        "the next run records the killed run's end: no run stays running"
    from pitwatch.lake import delta
    from pitwatch.pipelines import lake_run

    assert delta.leftover_files(Lake.at(lake), lake_run.ALL_TABLES) == []
    assert not list((lake / "_staging").glob("*")), "a run's staging was left"   # the empty folder may stay
    for name in TABLES + ("state",):
        current = delta.files_at(Lake.at(lake), name, delta.current_version(Lake.at(lake), name))
        assert not [f for f in current if killed in f], f"{name} still holds the killed run's files"
    assert reader_answers(lake, tmp_path) == floor["reference_answers"]


def test_kill_9_during_ingest_leaves_readers_on_the_previous_run(floor, tmp_path):
    lake = tmp_path / "lake"
    shutil.copytree(floor["first"], lake)
    logs_before = log_versions(lake)

    def reading(lines, _lake):
        return any(": read /" in line for line in lines)       # a file read (--verbose), the ingest not ended

    before = _kill_when(lake, floor["night2"], reading)
    killed = killed_run_id(lake, before)
    assert run_records(lake)[killed] == "running"
    assert not list((lake / "_staging").rglob("ingest.json")), "ingest had ended: the kill came too late"
    after = log_versions(lake)
    assert {k: v for k, v in after.items() if k != "runs"} == {k: v for k, v in logs_before.items() if k != "runs"}
    _check_readers_on_the_first_night_then_rerun(floor, lake, killed, tmp_path)


def test_kill_9_during_a_days_replay_leaves_its_files_unread_and_the_next_run_removes_them(floor, tmp_path):
    from pitwatch.lake import delta
    from pitwatch.pipelines import lake_run

    lake = tmp_path / "lake"
    shutil.copytree(floor["first"], lake)
    logs_before = log_versions(lake)

    def replay_wrote_a_file(_lines, lake_):
        return any(lake_.glob("*/gaming_day=2026-11-29/replay-2026-11-29-*.parquet"))

    before = _kill_when(lake, floor["night2"], replay_wrote_a_file)
    killed = killed_run_id(lake, before)
    assert run_records(lake)[killed] == "running"
    assert {k: v for k, v in log_versions(lake).items() if k != "runs"} == \
        {k: v for k, v in logs_before.items() if k != "runs"}, "the kill came after a commit"
    leftovers = delta.leftover_files(Lake.at(lake), lake_run.ALL_TABLES)
    assert leftovers and all(killed in f for f in leftovers)
    _check_readers_on_the_first_night_then_rerun(floor, lake, killed, tmp_path)
    assert not [f for f in leftovers if os.path.exists(f)], "the next run left the killed run's files"


def _kill_during_commit(floor, lake: Path) -> tuple[str, dict, dict]:
    """Kill the second run between two tables' commits; (run id, pinned versions, current versions)."""
    from pitwatch.lake import delta
    from pitwatch.lake import versions as lake_versions

    logs_before = log_versions(lake)

    def a_table_committed(_lines, lake_):
        now = log_versions(lake_)
        return any(now[t] > logs_before[t] for t in TABLES)

    for _attempt in range(3):
        before = _kill_when(lake, floor["night2"], a_table_committed)
        killed = killed_run_id(lake, before)
        pinned = lake_versions.pinned_versions(Lake.at(lake))
        current = {t: delta.current_version(Lake.at(lake), t) for t in TABLES + ("state",)}
        if run_records(lake)[killed] == "running" and any(current[t] != pinned.get(t) for t in current):
            return killed, pinned, current
        # the whole commit landed before the kill: the lake is the reference; start from night one again
        shutil.rmtree(lake)
        shutil.copytree(floor["first"], lake)
    pytest.fail("could not kill the run between two tables' commits in 3 attempts")


def test_kill_9_between_two_tables_commits_leaves_readers_on_the_previous_run(floor, tmp_path):
    lake = tmp_path / "lake"
    shutil.copytree(floor["first"], lake)
    killed, pinned, current = _kill_during_commit(floor, lake)
    assert any(current[t] is not None and current[t] > pinned.get(t, -1) for t in current)   # half committed
    _check_readers_on_the_first_night_then_rerun(floor, lake, killed, tmp_path)


def test_the_next_commit_drops_what_a_half_committed_run_committed(floor, tmp_path):
    """A table committed by the killed run holds its files at the current version (never read:
    readers are pinned); the next run's commit of that table removes them (``keep_only``: the
    last successful run's files) and nothing of the killed run is in any table then."""
    from pitwatch.lake import delta

    lake = tmp_path / "lake"
    shutil.copytree(floor["first"], lake)
    killed, pinned, current = _kill_during_commit(floor, lake)
    half = [t for t in current if current[t] != pinned.get(t)]
    assert half
    for t in half:
        assert [f for f in delta.files_at(Lake.at(lake), t, current[t]) if killed in f], t
        assert not [f for f in delta.files_at(Lake.at(lake), t, pinned[t]) if killed in f], t
    again = pitwatch("run", floor["base"] / "n1" / "2026-11-28", "--lake", lake)   # night one again: no new day
    assert again.returncode == 0, again.stderr
    for t in TABLES + ("state",):
        now = delta.files_at(Lake.at(lake), t, delta.current_version(Lake.at(lake), t))
        assert not [f for f in now if killed in f], f"{t} kept the killed run's files"
    assert reader_answers(lake, tmp_path) == floor["first_answers"]     # night two was never committed


def test_a_killed_first_run_leaves_nothing_for_the_next_run(floor, tmp_path):
    """No successful run yet: a run killed during its commit must not leave its rows to the next."""
    from pitwatch.lake import delta

    lake = tmp_path / "lake"
    lake.mkdir()

    def a_table_committed(_lines, lake_):
        return any(v > 0 for t, v in log_versions(lake_).items() if t != "runs")

    for _attempt in range(3):
        _kill_when(lake, floor["night2"], a_table_committed)
        if not [r for r, s in run_records(lake).items() if s == "succeeded"]:
            break
        shutil.rmtree(lake)
        lake.mkdir()
    else:
        pytest.fail("could not kill the first run during its commit in 3 attempts")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert table_hashes(lake) == table_hashes(empty)        # readers: nothing yet, as before the run
    done = pitwatch("run", floor["base"] / "n1" / "2026-11-28", "--lake", lake)
    assert done.returncode == 0, done.stderr
    # the lake is exactly the lake of that one run: the killed run's night is nowhere
    assert reader_answers(lake, tmp_path) == floor["first_answers"]
    assert delta.files_at(Lake.at(lake), "events", delta.current_version(Lake.at(lake), "events"))


def test_a_reader_polling_while_a_run_commits_sees_only_pairs_that_existed(floor, tmp_path):
    from pitwatch.queries.lake_views import connect

    lake = tmp_path / "lake"
    shutil.copytree(floor["first"], lake)

    def pair() -> tuple[str, str]:
        con = connect(Lake.at(lake))
        try:
            return tuple(hashlib.sha256(json.dumps(con.execute(f"FROM {t} ORDER BY ALL").fetchall(),
                                                   default=str).encode()).hexdigest()
                         for t in ("events", "findings"))
        finally:
            con.close()

    start = pair()
    seen: list[tuple[str, str]] = []
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            seen.append(pair())

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        done = pitwatch("run", floor["night2"], "--lake", lake)
    finally:
        stop.set()
        poller.join(timeout=120)
    assert done.returncode == 0, done.stderr
    end = pair()
    assert start != end
    assert len(seen) > 10, "the reader polled too rarely to say anything"
    assert set(seen) <= {start, end}, "a reader saw events and findings that never existed together"
