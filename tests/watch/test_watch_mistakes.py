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
from pathlib import Path

import pytest

from pitwatch.lake import Lake
from pitwatch.lake import settings as lake_settings
from pitwatch.schemas.decode import GamingDayConfig
from tests.conftest import run_pitwatch_process
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
