"""Retention that ``pitwatch verify`` understands (issue 35, item 6): after every kind of
``pitwatch vacuum`` (retention 0, legal holds, ``--dry-run``, nothing past the retention, an
interrupted one, one killed before it recorded its end) ``verify`` is intact (exit 0) and says how
many files retention removed and up to which gaming day; a file removed by anything else is still
caught (exit 5); ``--as-of`` a run whose files retention removed is exit 2 naming the vacuum and its
retention day.

One lake written by four real ``pitwatch run`` processes (two days, then each day's file corrected,
so every table holds replaced files of both days), copied for every test; real ``pitwatch vacuum``,
``verify`` and ``sql`` processes; the lake's bytes compared.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pitwatch.cli import exits
from pitwatch.lake import Lake
from tests.pipelines.test_exit_codes import lake_bytes, pitwatch
from tests.pipelines.test_verify import _day, _run, named, verify

pytestmark = pytest.mark.slow          # the lake is written by pitwatch run processes (Beam pipelines)

ROOT = Path(__file__).resolve().parents[2]
DAY1, DAY2 = "2026-11-28", "2026-11-29"


def run_records(lake: Path) -> list[dict]:
    """The latest record of every run (options decoded), in the order the runs started."""
    from tests import lake_rows

    return [{**r, "options": json.loads(r["options"])} for r in lake_rows.run_records(lake)]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, list[str]]:
    """The lake and the run ids of its four runs, in order."""
    base = tmp_path_factory.mktemp("retention")
    feeds, lake = base / "feeds", base / "lake"
    feeds.mkdir()
    a, b = feeds / "a.jsonl", feeds / "b.jsonl"
    a.write_text(_day(DAY1, range(1, 6)))
    b.write_text(_day(DAY2, range(1, 4), device_id="SHOE-2"))
    _run(lake, a)
    _run(lake, b)
    a.write_text(_day(DAY1, [1, 2, 4, 5, 6]))                         # the corrections: each day replaced
    _run(lake, a)
    b.write_text(_day(DAY2, [1, 3], device_id="SHOE-2"))
    _run(lake, b)
    ids = [r["run_id"] for r in run_records(lake)]
    assert len(ids) == 4
    return lake, ids


@pytest.fixture
def lake(written, tmp_path) -> Path:
    shutil.copytree(written[0], tmp_path / "lake")
    return tmp_path / "lake"


def vacuum(lake: Path, *args) -> tuple[subprocess.CompletedProcess, dict | None]:
    """A real ``pitwatch vacuum``, and its run's record (None: it wrote none)."""
    before = {r["run_id"] for r in run_records(lake)}
    result = pitwatch("vacuum", "--lake", lake, "--quiet", *args)
    assert result.returncode == exits.DONE, result.stderr
    new = [r for r in run_records(lake) if r["run_id"] not in before]
    assert len(new) <= 1
    return result, (new[0] if new else None)


def removed_files(record: dict, absent: bool = False) -> dict[str, dict]:
    """The files the vacuum removed (``absent``: and those it found already gone, e.g. an earlier
    vacuum's: delta-rs lists every file the log removed)."""
    return {f["path"]: f for t in record["options"]["tables"].values() for f in t["files"]
            if absent or not f.get("absent")}


def history_files(lake: Path) -> set[str]:
    """The data files on disk that no table's current version reads (what a vacuum may remove)."""
    from pitwatch.lake import delta

    out = set()
    for name in delta.tables_on_disk(Lake.at(lake)):
        current = {Path(p).relative_to(lake).as_posix() for p in delta.files_at(Lake.at(lake), name,
                                                                                delta.current_version(Lake.at(lake), name))}
        out |= {p.relative_to(lake).as_posix() for p in (lake / name).rglob("*.parquet")
                if "_delta_log" not in p.parts} - current
    return out


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pitwatch.toml"
    path.write_text(text)
    return path


def assert_intact(lake: Path, removed: int, through: str | None, vacuum_run: str | None = None) -> dict:
    result, report = verify(lake)                 # verify itself changed no byte (checked by the helper)
    assert result.returncode == exits.DONE, report["problems"]
    assert report["intact"] is True and report["problems"] == [] and report["leftovers"] == []
    assert report["checked"]["retention_removed"] == removed
    assert report["checked"]["retention_removed_through"] == through
    notes = [n for n in report["notes"] if n.startswith("retention:")]
    if removed:
        (note,) = notes
        assert note.startswith(f"retention: {removed:,} file{'s' if removed != 1 else ''} of the tables' history "
                               f"removed by pitwatch vacuum, gaming days up to {through}: run {vacuum_run} (")
        text = pitwatch("verify", "--lake", lake)
        assert text.returncode == exits.DONE and text.stdout.startswith(f"lake {lake}: intact\n")
        assert f"; {removed:,} files removed by retention (gaming days up to {through})\n" in text.stdout
    else:
        assert notes == []
    return report


# -- every vacuum leaves a lake verify calls intact ---------------------------------------------------

def test_retention_0_then_verify_is_intact_and_says_how_many_files_and_up_to_which_day(lake):
    history = history_files(lake)
    hashes = {p: __import__("hashlib").sha256(b).hexdigest() for p, b in lake_bytes(lake).items()}
    _result, record = vacuum(lake, "--retention-days", "0", "--no-config-holds")
    gone = removed_files(record)
    assert record["status"] == "succeeded" and set(gone) == history       # every replaced file, both days
    assert {f["gaming_day"] for f in gone.values()} >= {DAY1, DAY2}
    assert all(not (lake / p).exists() and f["sha256"] == hashes[p] for p, f in gone.items())
    assert_intact(lake, len(gone), DAY2, record["run_id"])


def test_legal_holds_then_verify_is_intact_and_counts_only_what_was_removed(lake, tmp_path):
    history = history_files(lake)
    cfg = config(tmp_path, f'retention_days = 0\nlegal_holds = ["{DAY2}"]\n')
    _result, record = vacuum(lake, "--config", cfg)
    gone = removed_files(record)
    kept = {f["path"] for t in record["options"]["tables"].values() for f in t["kept_files"]}
    assert gone and kept and set(gone) | kept == history and not set(gone) & kept
    assert {f["gaming_day"] for f in gone.values()} == {DAY1}            # the held day's files all stay
    assert all((lake / p).exists() for p in kept)
    assert_intact(lake, len(gone), DAY1, record["run_id"])


def test_a_range_hold_over_every_day_removes_nothing_and_verify_is_intact(lake, tmp_path):
    before = lake_bytes(lake)
    cfg = config(tmp_path, f'retention_days = 0\nlegal_holds = ["{DAY1}..{DAY2}"]\n')
    _result, record = vacuum(lake, "--config", cfg)
    assert removed_files(record) == {}
    assert {p: b for p, b in lake_bytes(lake).items() if not p.startswith("runs/")} == \
        {p: b for p, b in before.items() if not p.startswith("runs/")}
    assert_intact(lake, 0, None)


def test_a_dry_run_changes_nothing_and_verify_is_intact(lake):
    before = lake_bytes(lake)
    result, record = vacuum(lake, "--dry-run", "--retention-days", "0", "--hold", DAY2)
    assert record is None and lake_bytes(lake) == before
    assert "would remove" in result.stdout
    assert_intact(lake, 0, None)


def test_nothing_past_the_retention_then_verify_is_intact(lake):
    before = {p: b for p, b in lake_bytes(lake).items() if not p.startswith("runs/")}
    _result, record = vacuum(lake, "--retention-days", "1", "--no-config-holds")
    assert record["status"] == "succeeded" and removed_files(record) == {}
    assert {p: b for p, b in lake_bytes(lake).items() if not p.startswith("runs/")} == before
    assert_intact(lake, 0, None)


def test_two_vacuums_then_verify_counts_both(lake, tmp_path):
    _r, first = vacuum(lake, "--config", config(tmp_path, f'retention_days = 0\nlegal_holds = ["{DAY2}"]\n'))
    _r, second = vacuum(lake, "--retention-days", "0", "--no-config-holds")
    n1, n2 = len(removed_files(first)), len(removed_files(second))
    assert n1 and n2
    report = assert_intact(lake, n1 + n2, DAY2, first["run_id"])
    (note,) = [n for n in report["notes"] if n.startswith("retention:")]
    assert f"run {first['run_id']} ({n1} files, retention 0 days, legal holds: {DAY2})" in note
    assert f"run {second['run_id']} ({n2} files, retention 0 days, legal holds: none)" in note


def test_an_interrupted_vacuum_then_verify_is_intact(lake):
    """SIGTERM as the first table is done (pitwatch.cli.common turns it into KeyboardInterrupt): the
    record says interrupted and lists what was removed; verify accepts exactly those."""
    script = ("import sys\nfrom pitwatch.lake import Lake, vacuum\n"
              "class Stop:\n    def info(self, *a):\n        raise KeyboardInterrupt('SIGTERM')\n"
              "try:\n    vacuum.vacuum(Lake.at(sys.argv[1]), 0, vacuum.LegalHolds(), 'pitwatch vacuum (test)', Stop())\n"
              "except KeyboardInterrupt:\n    sys.exit(3)\n")
    result = _python(script, lake)
    assert result.returncode == 3, result.stderr
    (record,) = [r for r in run_records(lake) if r["options"].get("command") == "vacuum"]
    gone = removed_files(record)
    assert record["status"] == "interrupted" and gone
    assert_intact(lake, len(gone), max(f["gaming_day"] for f in gone.values()), record["run_id"])


def test_a_vacuum_killed_before_its_end_then_verify_is_intact_by_its_chained_plan(lake):
    """A vacuum killed (``os._exit``, as ``kill -9``) after its first table: its plan is chained (written
    before its first removal), its end is not; the files it removed are retention, named by that plan.
    The next vacuum finds them already gone: that does not make them tampering."""
    script = ("import os, sys\nfrom pitwatch.lake import Lake, vacuum\n"
              "class Kill:\n    def info(self, *a):\n        os._exit(9)\n"
              "vacuum.vacuum(Lake.at(sys.argv[1]), 0, vacuum.LegalHolds(), 'pitwatch vacuum (test)', Kill())\n")
    history = history_files(lake)
    assert _python(script, lake).returncode == 9
    gone = sorted(p for p in history if not (lake / p).exists())
    assert gone and all(p.startswith("events/") for p in gone)          # the first table (sorted) only
    (killed,) = [r for r in run_records(lake) if r["options"].get("command") == "vacuum"]
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report["problems"]
    assert report["problems"] == [] and [p["kind"] for p in report["leftovers"]] == ["run with no end"]
    assert report["checked"]["retention_removed"] == len(gone)
    (note,) = [n for n in report["notes"] if n.startswith("retention:")]
    assert f"run {killed['run_id']} ({len(gone)} files" in note and "killed before it recorded its end" in note
    _r, record = vacuum(lake, "--retention-days", "0", "--no-config-holds")
    files = removed_files(record, absent=True)
    assert sorted(p for p, f in files.items() if f.get("absent")) == gone
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report["problems"]
    assert report["checked"]["retention_removed"] == len(history)


# -- a file removed by anything else is still caught --------------------------------------------------

def test_a_file_deleted_by_hand_after_a_vacuum_is_named(lake, tmp_path):
    _r, record = vacuum(lake, "--config", config(tmp_path, f'retention_days = 0\nlegal_holds = ["{DAY2}"]\n'))
    kept = sorted(f["path"] for t in record["options"]["tables"].values() for f in t["kept_files"]
                  if f["path"].startswith("events/"))
    (lake / kept[0]).unlink()                                            # a held day's history, by hand
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report) == [kept[0]]
    assert report["problems"][0]["kind"] == "removed" and "the file is gone, and a version of the table's history names it" in report["problems"][0]["detail"]
    assert report["checked"]["retention_removed"] == len(removed_files(record))      # the vacuum's still counted


def test_a_file_deleted_by_hand_before_a_vacuum_is_still_named(lake):
    """The vacuum finds it already gone and lists it as absent: that is no removal by retention."""
    target = sorted(p for p in history_files(lake) if p.startswith("findings/"))[0]
    (lake / target).unlink()
    _r, record = vacuum(lake, "--retention-days", "0", "--no-config-holds")
    assert removed_files(record, absent=True)[target].get("absent") is True
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "removed") == [target]
    assert "found it already gone: no vacuum removed it" in report["problems"][0]["detail"]
    assert report["checked"]["retention_removed"] == len(removed_files(record))


def test_a_current_file_deleted_after_a_vacuum_is_named(lake):
    from pitwatch.lake import delta

    vacuum(lake, "--retention-days", "0", "--no-config-holds")
    target = Path(delta.files_at(Lake.at(lake), "events", delta.current_version(Lake.at(lake), "events"))[0])
    target.unlink()
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report) == [target.relative_to(lake).as_posix()]
    assert "the file is gone, and the table's current version still names it" in report["problems"][0]["detail"]


# -- --as-of a run whose files retention removed ------------------------------------------------------

def test_as_of_a_vacuumed_run_is_exit_2_naming_the_vacuum_and_its_retention_day(written, lake):
    _lake, ids = written
    before = lake_bytes(lake)
    answer = pitwatch("sql", "SELECT count(*) AS n FROM events", "--lake", lake, "--as-of", ids[0], "--format", "json")
    assert answer.returncode == exits.DONE, answer.stderr              # before the vacuum: it reads
    _r, record = vacuum(lake, "--retention-days", "0", "--no-config-holds")
    day = record["started"].date().isoformat()
    for as_of in (ids[0], ids[2]):                                     # both days' first versions are gone
        refused = pitwatch("sql", "SELECT count(*) FROM events", "--lake", lake, "--as-of", as_of)
        assert refused.returncode == exits.USAGE, refused.stderr
        (line,) = refused.stderr.splitlines()
        assert line.startswith(f"Error: --as-of {as_of}: the files of run {as_of}'s tables were removed by "
                               f"retention: pitwatch vacuum run {record['run_id']} (retention 0 days, retention "
                               f"day {day}")
        assert "cannot open the lake" not in line
    latest = pitwatch("sql", "SELECT count(*) AS n FROM events", "--lake", lake, "--as-of", ids[3], "--format", "json")
    assert latest.returncode == exits.DONE, latest.stderr              # the last run's versions read as before
    assert {p: b for p, b in lake_bytes(lake).items() if p in before} == \
        {p: b for p, b in before.items() if (lake / p).exists()}


def test_as_of_a_run_of_a_held_day_still_reads(written, lake, tmp_path):
    _lake, ids = written
    query = ("SELECT count(*) AS n FROM events", "--lake", lake, "--as-of", ids[0], "--format", "json")
    expected = pitwatch("sql", *query)
    assert expected.returncode == exits.DONE
    vacuum(lake, "--config", config(tmp_path, f'retention_days = 0\nlegal_holds = ["{DAY1}"]\n'))
    held = pitwatch("sql", *query)
    assert held.returncode == exits.DONE, held.stderr
    assert json.loads(held.stdout) == json.loads(expected.stdout)
    refused = pitwatch("sql", "SELECT 1", "--lake", lake, "--as-of", ids[1])    # DAY2's first version: removed
    assert refused.returncode == exits.USAGE and "removed by retention: pitwatch vacuum run" in refused.stderr


def _python(script: str, lake: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", script, str(lake)], capture_output=True, text=True, env=env,
                          timeout=300)
