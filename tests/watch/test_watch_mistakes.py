"""Mistakes that looked like a quiet night (issue 41, deliverable 4): now errors, or alerts.

* ``watch --lake`` of a folder that is no pitwatch lake (a mistyped path, a folder of something
  else) is exit 2 with one ``Error:`` line naming it and the way out (``--create-lake``), and the
  bytes on disk are as they were: the mistyped folder is not made, the other folder not touched;
* an input that cannot be reached at the start (a folder that does not exist, Redis down or
  refusing) is exit 2 naming it, and nothing is written;
* an input lost later (Redis gone, the watched folder removed) is a status line and a live-only
  ``SOURCE_LOST`` alert, cleared by ``SOURCE_LOST_CLEARED`` when it is back; the watcher runs on.

Real ``pitwatch watch`` processes, a real Redis server, real folders.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import signal
from pathlib import Path

import pytest

from pitwatch.lake import Lake
from pitwatch.lake import settings as lake_settings
from pitwatch.live.silence import SOURCE_LOST, SOURCE_LOST_CLEARED, SourceWatch
from pitwatch.live.sources import FileFollower, RedisStreamSource
from pitwatch.schemas.decode import GamingDayConfig
from tests.conftest import run_pitwatch_process
from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave
from tests.watch.test_watch_servers import _free_port, _redis_server


def _tree(root: Path) -> dict:
    """Every file and folder under ``root``: its bytes' SHA-256 (a folder: None)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


def _one_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    return lines[0]


def _feed(tmp_path: Path) -> Path:
    feeds = tmp_path / "feeds"
    feeds.mkdir()
    (feeds / "DT-1.jsonl").write_bytes(b"")
    return feeds


# --- --lake of something that is no lake -------------------------------------------------------

@pytest.mark.slow
def test_a_mistyped_lake_path_is_exit_2_and_no_lake_is_made_there(tmp_path):
    feeds = _feed(tmp_path)
    result = run_pitwatch_process("watch", feeds, "--lake", tmp_path / "nolake", "--stop-after-idle", "0.5",
                                  cwd=tmp_path, timeout=120)
    error = _one_error(result)
    assert str(tmp_path / "nolake") in error and "--create-lake" in error
    assert not (tmp_path / "nolake").exists()


@pytest.mark.slow
def test_a_folder_that_is_no_lake_is_exit_2_and_left_as_it_was(tmp_path):
    feeds = _feed(tmp_path)
    other = tmp_path / "photos"
    (other / "2026").mkdir(parents=True)
    (other / "2026" / "pit.jpg").write_bytes(b"\xff\xd8 not a lake")
    before = _tree(other)
    result = run_pitwatch_process("watch", feeds, "--lake", other, "--stop-after-idle", "0.5",
                                  cwd=tmp_path, timeout=120)
    error = _one_error(result)
    assert str(other) in error and "not a pitwatch lake" in error and "--create-lake" in error
    assert _tree(other) == before


@pytest.mark.slow
def test_create_lake_makes_a_lake_with_its_time_zone_and_cutoff_that_the_next_watch_must_match(tmp_path):
    feeds = _feed(tmp_path)
    lake = tmp_path / "newlake"
    made = run_pitwatch_process("watch", feeds, "--lake", lake, "--create-lake", "--timezone", "America/Puerto_Rico",
                                "--cutoff", "07:00", "--stop-after-idle", "0.5", "--quiet", cwd=tmp_path, timeout=120)
    assert made.returncode == 0, made.stderr
    recorded = lake_settings.recorded(Lake.at(lake))
    assert recorded is not None
    assert (recorded["timezone"], recorded["cutoff"]) == ("America/Puerto_Rico", "07:00")
    again = run_pitwatch_process("watch", feeds, "--lake", lake, "--stop-after-idle", "0.5", "--quiet",
                                 cwd=tmp_path, timeout=120)                     # UTC 06:00: not the lake's
    assert "America/Puerto_Rico" in _one_error(again)
    same = run_pitwatch_process("watch", feeds, "--lake", lake, "--timezone", "America/Puerto_Rico", "--cutoff", "07:00",
                                "--stop-after-idle", "0.5", "--quiet", cwd=tmp_path, timeout=120)
    assert same.returncode == 0, same.stderr                                    # a lake now: no --create-lake


@pytest.mark.slow
def test_a_lake_a_run_started_is_a_lake_without_create_lake(tmp_path):
    feeds = _feed(tmp_path)
    lake = tmp_path / "lake"
    lake_settings.record(Lake.at(lake), GamingDayConfig("06:00", "UTC"), "r-1")   # what a run records first
    result = run_pitwatch_process("watch", feeds, "--lake", lake, "--stop-after-idle", "0.5", "--quiet",
                                  cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr


# --- inputs that cannot be reached at the start ------------------------------------------------

@pytest.mark.slow
def test_a_folder_that_does_not_exist_is_exit_2_naming_it_and_nothing_is_written(tmp_path):
    result = run_pitwatch_process("watch", tmp_path / "feedz", "--lake", tmp_path / "lake", "--create-lake",
                                  "--stop-after-idle", "0.5", cwd=tmp_path, timeout=120)
    error = _one_error(result)
    assert str(tmp_path / "feedz") in error
    assert not (tmp_path / "lake").exists()


@pytest.mark.slow
def test_redis_down_at_the_start_is_exit_2_naming_it_not_0_lines(tmp_path):
    url = f"redis://127.0.0.1:{_free_port()}/0"                       # nothing listens there
    result = run_pitwatch_process("watch", f"{url}?stream=pit:*", "--lake", tmp_path / "lake", "--create-lake",
                                  "--stop-after-idle", "0.5", cwd=tmp_path, timeout=120)
    error = _one_error(result)
    assert url in error and "cannot reach" in error
    assert not (tmp_path / "lake").exists()


@pytest.mark.slow
def test_redis_refusing_at_the_start_is_exit_2_and_redis_that_answers_starts(tmp_path):
    proc, client, port = _redis_server(tmp_path)
    try:
        url = f"redis://127.0.0.1:{port}/0?stream=pit:*"
        answers = run_pitwatch_process("watch", url, "--lake", tmp_path / "lake1", "--create-lake",
                                       "--stop-after-idle", "0.5", "--quiet", cwd=tmp_path, timeout=120)
        assert answers.returncode == 0, answers.stderr
        client.config_set("requirepass", "s3cret")                     # now it refuses who gives no password
        refused = run_pitwatch_process("watch", url, "--lake", tmp_path / "lake2", "--create-lake",
                                       "--stop-after-idle", "0.5", cwd=tmp_path, timeout=120)
        assert f"redis://127.0.0.1:{port}/0" in _one_error(refused)
        wrong = run_pitwatch_process("watch", f"redis://:wrong-pw@127.0.0.1:{port}/0?stream=pit:*", "--lake",
                                     tmp_path / "lake2", "--create-lake", "--stop-after-idle", "0.5", cwd=tmp_path,
                                     timeout=120)
        error = _one_error(wrong)
        assert f"redis://:***@127.0.0.1:{port}/0" in error and "wrong-pw" not in error   # never shown
        assert not (tmp_path / "lake2").exists()
    finally:
        client.close()
        proc.terminate()
        proc.wait(10)


# --- inputs lost later -------------------------------------------------------------------------

def test_a_watched_folder_removed_is_lost_and_back_when_it_is_made_again(tmp_path):
    feeds = _feed(tmp_path)
    files = FileFollower([str(feeds)])
    watch = SourceWatch([files], after=0, every=0)
    assert watch.look() == [] and watch.lost == {}
    shutil.rmtree(feeds)
    files.read()
    [lost] = watch.look()
    assert lost["rule_id"] == SOURCE_LOST and str(feeds) in lost["actual"] and lost["severity"] == "major"
    assert watch.look() == []                                          # said once
    assert list(watch.lost) == [str(feeds)]
    feeds.mkdir()
    [back] = watch.look()
    assert back["rule_id"] == SOURCE_LOST_CLEARED and lost["finding_id"] in back["actual"]
    assert watch.lost == {} and watch.look() == []


def test_a_moment_without_the_folder_is_no_loss(tmp_path):
    feeds = _feed(tmp_path)
    watch = SourceWatch([FileFollower([str(feeds)])], after=60, every=0)
    shutil.rmtree(feeds)
    assert watch.look() == []                                          # not yet 60 s
    feeds.mkdir()
    assert watch.look() == [] and watch.lost == {}                     # back before it counted: nothing to clear


def test_redis_refusing_after_the_start_is_lost(tmp_path):
    source = RedisStreamSource(f"redis://127.0.0.1:{_free_port()}/0?stream=pit:x")
    watch = SourceWatch([source], after=0, every=0)
    assert source.read() == []                                         # the failure: retried later
    [lost] = watch.look()
    assert lost["rule_id"] == SOURCE_LOST and source.label in lost["actual"] and "Connection" in lost["actual"]


@pytest.mark.slow
def test_redis_gone_after_the_start_is_a_status_line_and_an_alert_and_the_watcher_runs_on(tmp_path, scenario,
                                                                                         start_watch):
    proc, client, port = _redis_server(tmp_path, appendonly=True)
    order = interleave(scenario, seed=8)
    half = len(order) // 2
    try:
        for dev, line in order[:half]:
            client.xadd(f"pit:{dev}", {"event": line})
        w = start_watch(f"redis://127.0.0.1:{port}/0?stream=pit:*", "--lake", tmp_path / "lake",
                        "--alerts-file", tmp_path / "alerts.jsonl", "--stop-after-idle", "5",
                        "--gap-wait", "0.5")
        w.caught_up(half)
        client.close()
        proc.terminate()                                               # Redis goes away
        proc.wait(10)
        w.wait_for(lambda: any(isinstance(a, dict) and a.get("rule_id") == SOURCE_LOST for a in w.alerts),
                   "the SOURCE_LOST alert")
        w.wait_for(lambda: any("status:" in e and "lost: " in e for e in w.errors), "the status line")
        assert w.proc.poll() is None                                   # no quiet exit 0 (--stop-after-idle 5)
        proc, client, _port = _redis_server(tmp_path, port, appendonly=True)   # back, with its entries
        for dev, line in order[half:]:
            client.xadd(f"pit:{dev}", {"event": line})
        w.wait_for(lambda: any(isinstance(a, dict) and a.get("rule_id") == SOURCE_LOST_CLEARED for a in w.alerts),
                   "the SOURCE_LOST_CLEARED alert")
        w.caught_up(len(order))
        assert w.proc.wait(60) == 0                                    # idle once it reads again: it stops
    finally:
        client.close()
        proc.terminate()
        proc.wait(10)
    lost = [a for a in w.alerts if a["rule_id"] == SOURCE_LOST]
    assert len(lost) == 1 and lost[0]["live_only"] and f"redis://127.0.0.1:{port}/0" in lost[0]["actual"]
    in_file = [json.loads(x) for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert [a["rule_id"] for a in in_file].count(SOURCE_LOST) == 1     # every sink, once
    assert any(f"{SOURCE_LOST}: " in e for e in w.errors)              # and said on stderr


@pytest.mark.slow
def test_a_watched_folder_removed_is_an_alert_and_the_watcher_runs_on(tmp_path, scenario, start_watch):
    feeds = tmp_path / "feeds"
    order = interleave(scenario, seed=9)
    append_lines(feeds, order)
    w = start_watch(feeds, "--lake", tmp_path / "lake")
    w.caught_up(len(order))
    shutil.rmtree(feeds)
    w.wait_for(lambda: any(a.get("rule_id") == SOURCE_LOST for a in w.alerts if isinstance(a, dict)),
               "the SOURCE_LOST alert")
    w.wait_for(lambda: any("status:" in e and f"lost: {feeds}" in e for e in w.errors), "the status line")
    feeds.mkdir()
    w.wait_for(lambda: any(a.get("rule_id") == SOURCE_LOST_CLEARED for a in w.alerts if isinstance(a, dict)),
               "the SOURCE_LOST_CLEARED alert")
    assert w.stop(signal.SIGTERM) == 0
