"""The lake's lock (issue 26, "Conflicts": one writer at a time), with real processes and real locks.

A holder is a real process that holds the lock through :func:`pitwatch.lake.lock.hold` (or a real
``pitwatch run``); the second writer is a real ``pitwatch run``: it waits, says who holds the lake,
exits 4 after ``--lock-timeout`` with every byte of the lake unchanged, proceeds once the holder has
ended, and finds the lock free when the holder was killed with ``kill -9``.  ``pitwatch watch``
never takes the lock.  A lake on an object store takes a lease instead (``test_lake_lease.py``).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pitwatch.cli import exits
from pitwatch.config import parse_duration
from pitwatch.lake import Lake
from pitwatch.lake import lock as lake_lock
from tests.conftest import run_pitwatch_process as pitwatch  # a real process: runs that hold the lake's lock

ROOT = Path(__file__).resolve().parents[2]


def tree(root: Path) -> dict[str, str]:
    """The SHA-256 of every file under the lake (the lock's own files included)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


HOLDER = textwrap.dedent("""
    import logging, sys, time
    from pitwatch.lake import Lake, lock as lake_lock
    holder = lake_lock.new_holder("pitwatch run --day 2026-11-28 (the holder)", run_id=sys.argv[2])
    with lake_lock.hold(Lake.at(sys.argv[1]), holder, 0, logging.getLogger("t")):
        print("held", flush=True)
        sys.stdin.readline() if sys.argv[3] == "until-told" else time.sleep(float(sys.argv[3]))
    print("released", flush=True)
""")


def start_holder(lake: Path, run_id: str = "20261129T061502Z-1a2b3c4d", seconds: float | str = 600) -> subprocess.Popen:
    """A real process holding the lake's lock for ``seconds`` (or ``"until-told"``: until a line on its
    stdin); returns once it holds it."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lake), run_id, str(seconds)], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline()
    assert line == "held\n", proc.stderr.read()
    return proc


@pytest.fixture
def floor(tmp_path) -> Path:
    """A small simulated gaming day's event files."""
    from pitwatch.simulator import simulate

    simulate(tmp_path / "inbox", tables={"baccarat": 1}, hours=0.1, seed=5, workers=1)
    (day,) = [p for p in (tmp_path / "inbox").iterdir() if p.is_dir()]
    return day


def a_lake_with_files(lake: Path) -> None:
    (lake / "events" / "gaming_day=2026-11-28").mkdir(parents=True)
    (lake / "events" / "gaming_day=2026-11-28" / "part-0.parquet").write_bytes(b"PAR1 rows of the held night PAR1")
    (lake / "settings.json").write_text('{"timezone": "UTC", "cutoff": "06:00"}')


# --- a second run waits, names the holder, exits 4, and the lake is unchanged ---------------------

@pytest.mark.slow     # a real run waits out a 2 s lock timeout
def said_locked(result, lake, pid: int) -> str:
    """Assert a refused writer's answer (exit 4, one "waiting …" line, one last ``Error:`` line, each
    naming the holder :func:`start_holder` started as ``pid``); its ``Error:`` line."""
    assert result.returncode == exits.LOCKED, result.stderr
    who = f"run 20261129T061502Z-1a2b3c4d, pid {pid}, on {socket.gethostname()} since "
    waiting = [line for line in result.stderr.splitlines() if "waiting for the lake's lock" in line]
    assert len(waiting) == 1 and f"waiting for the lake's lock, held by {who}" in waiting[0]
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [result.stderr.splitlines()[-1]]
    assert errors[0].startswith(f"Error: the lake {lake} is locked by {who}")
    return errors[0]


def test_a_second_run_on_a_locked_lake_waits_names_the_holder_and_exits_4_with_the_lake_unchanged(tmp_path, floor):
    lake = tmp_path / "lake"
    a_lake_with_files(lake)
    holder = start_holder(lake)
    try:
        before = tree(lake)
        began = time.monotonic()
        result = pitwatch("run", floor, "--lake", lake, "--lock-timeout", "2s")
        waited = time.monotonic() - began
        assert tree(lake) == before                       # not one byte written, renamed or removed
    finally:
        holder.kill()
        holder.wait()
    assert waited >= 2
    error = said_locked(result, lake, holder.pid)
    assert "(pitwatch run --day 2026-11-28 (the holder))" in error and "--lock-timeout" in error
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.slow     # real runs wait out the lock timeout
def test_lock_timeout_from_the_config_file_and_a_bad_value_is_exit_2(tmp_path, floor):
    lake = tmp_path / "lake"
    a_lake_with_files(lake)
    config = tmp_path / "pitwatch.toml"
    config.write_text('lock_timeout = 1\n')
    holder = start_holder(lake)
    try:
        before = tree(lake)
        from_file = pitwatch("run", floor, "--lake", lake, "--config", config, "--quiet")
        bad = pitwatch("run", floor, "--lake", lake, "--lock-timeout", "soon")
        assert tree(lake) == before
    finally:
        holder.kill()
        holder.wait()
    assert from_file.returncode == exits.LOCKED, from_file.stderr
    assert from_file.stderr.startswith("Error: the lake ") and "gave up after 1 s" in from_file.stderr
    assert from_file.stderr.count("\n") == 1              # --quiet: the one Error line, no waiting line
    assert bad.returncode == exits.USAGE and "Error: Invalid value for '--lock-timeout'" in bad.stderr
    config.write_text('lock_timeout = "an hour"\n')
    wrong = pitwatch("run", floor, "--lake", lake, "--config", config)
    assert wrong.returncode == exits.USAGE and wrong.stderr.startswith(f"Error: config file {config}: lock_timeout")


def start_run(*args) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    return subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "run", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**env, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
def test_after_the_holder_ends_the_second_run_proceeds(tmp_path, floor):
    lake = tmp_path / "lake"
    holder = start_holder(lake, seconds="until-told")
    second = start_run(floor, "--lake", lake, "--lock-timeout", "5m")
    try:
        said = ""
        while "waiting for the lake's lock" not in said and second.poll() is None:
            said = second.stderr.readline()               # it waits, and says for whom …
        assert "waiting for the lake's lock, held by run 20261129T061502Z-1a2b3c4d" in said, said
        time.sleep(1)
        assert second.poll() is None and not (lake / "events").exists()   # … and writes nothing meanwhile
        holder.stdin.write("done\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0 and holder.stdout.read() == "released\n"
        out, err = second.communicate(timeout=600)
    finally:
        holder.kill()
        second.kill()
    assert second.returncode == exits.DONE, err
    assert "got the lake's lock after" in err            # … then runs
    assert ": succeeded in " in out
    assert not (lake / lake_lock.HOLDER_FILE).exists()    # and lets go of the lake when it ends


@pytest.mark.slow
def test_a_run_in_progress_holds_the_lake_against_a_second_run(tmp_path, floor):
    """The holder is a real ``pitwatch run``, stopped (SIGSTOP) once it holds the lake so that the
    second run surely finds it there; continued, it completes."""
    lake = tmp_path / "lake"
    first = start_run(floor, "--lake", lake)
    try:
        deadline = time.monotonic() + 120
        while not (lake / lake_lock.HOLDER_FILE).exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(first.pid, signal.SIGSTOP)
        assert first.poll() is None, "the first run ended before the test saw it hold the lake"
        before = tree(lake)
        second = pitwatch("run", floor, "--lake", lake, "--lock-timeout", "0")
        assert tree(lake) == before
    finally:
        os.kill(first.pid, signal.SIGCONT)
        out, err = first.communicate(timeout=600)
    assert second.returncode == exits.LOCKED, second.stderr
    assert f"pid {first.pid}, on {socket.gethostname()}" in second.stderr
    assert f"(pitwatch run {floor} --lake {lake})" in second.stderr
    assert first.returncode == exits.DONE, err


# --- a killed holder frees the lock ---------------------------------------------------------------

def test_a_holder_killed_with_kill_9_frees_the_lock(tmp_path):
    lake = tmp_path / "lake"
    holder = start_holder(lake, run_id="20261129T061502Z-dead0000")
    with pytest.raises(lake_lock.LakeLocked):            # held: not free while it lives
        with lake_lock.hold(Lake.at(lake), lake_lock.new_holder("test"), 0, logging.getLogger("t")):
            pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert holder.returncode == -signal.SIGKILL
    assert json.loads((lake / lake_lock.HOLDER_FILE).read_text())["run_id"] == "20261129T061502Z-dead0000"
    began = time.monotonic()
    with lake_lock.hold(Lake.at(lake), lake_lock.new_holder("the next run"), 0, logging.getLogger("t")) as mine:
        assert time.monotonic() - began < 1
        recorded = json.loads((lake / lake_lock.HOLDER_FILE).read_text())
        assert recorded == mine and recorded["pid"] == os.getpid()   # the dead holder's record replaced
    assert not (lake / lake_lock.HOLDER_FILE).exists()


def test_a_run_after_a_killed_holder_is_not_kept_waiting(tmp_path):
    lake = tmp_path / "lake"
    a_lake_with_files(lake)
    holder = start_holder(lake)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    result = pitwatch("run", tmp_path / "nothing-here.jsonl", "--lake", lake, "--lock-timeout", "0")
    # it got past the lock (no exit 4) to the input, which does not exist: the input's own exit 2
    assert result.returncode == exits.USAGE, result.stderr
    assert "waiting for the lake's lock" not in result.stderr and "nothing-here.jsonl" in result.stderr


@pytest.mark.slow     # a real run stopped by the lock
def test_a_run_that_stops_before_writing_leaves_the_lakes_bytes_as_they_were(tmp_path):
    lake = tmp_path / "lake"
    a_lake_with_files(lake)
    before = tree(lake)
    result = pitwatch("run", tmp_path / "nothing-here.jsonl", "--lake", lake)
    assert result.returncode == exits.USAGE, result.stderr
    assert tree(lake) == before                           # no lock or holder file left behind
    new = tmp_path / "new-lake"
    result = pitwatch("run", tmp_path / "nothing-here.jsonl", "--lake", new)
    assert result.returncode == exits.USAGE, result.stderr
    assert not new.exists()                               # the lake folder it created, empty, removed again


def test_a_waiter_on_the_file_a_holder_removed_takes_the_new_one(tmp_path):
    """The holder removes the lock file as it lets go; one who opened it before must not hold a lock
    on a file no one else can see (two writers at once)."""
    lake = tmp_path / "lake"
    log = logging.getLogger("t")
    with lake_lock.hold(Lake.at(lake), lake_lock.new_holder("first"), 0, log):
        stale = os.open(lake / lake_lock.LOCK_FILE, os.O_RDWR)    # what a waiter had open
    assert not (lake / lake_lock.LOCK_FILE).exists()
    import fcntl

    fcntl.flock(stale, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the removed file is free to lock …
    try:
        with lake_lock.hold(Lake.at(lake), lake_lock.new_holder("second"), 0, log):
            probe = subprocess.run([sys.executable, "-c", textwrap.dedent("""
                import logging, sys
                from pitwatch.lake import Lake, lock as lake_lock
                try:
                    with lake_lock.hold(Lake.at(sys.argv[1]), lake_lock.new_holder("third"), 0, logging.getLogger("t")):
                        print("got it")
                except lake_lock.LakeLocked:
                    print("locked")
            """), str(lake)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert probe.stdout == "locked\n", probe.stderr   # … but the lake's lock is the path's file
    finally:
        os.close(stale)


# --- watch never takes it -------------------------------------------------------------------------

def test_watch_runs_while_the_lock_is_held(tmp_path, floor):
    lake = tmp_path / "lake"
    holder = start_holder(lake)
    try:
        held = (lake / lake_lock.HOLDER_FILE).read_bytes()
        feed = sorted(floor.glob("*.jsonl*"))[0]
        began = time.monotonic()
        result = pitwatch("watch", feed, "--lake", lake, "--stop-after-idle", "0.5", "--no-lake-alerts",
                          "--state-dir", tmp_path / "state", timeout=120)
        assert time.monotonic() - began < 60
        assert (lake / lake_lock.HOLDER_FILE).read_bytes() == held
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == exits.DONE, result.stderr
    assert "waiting for the lake's lock" not in result.stderr and "pitwatch: stopped: " in result.stderr


# --- object stores, planted files, hostile holder records ----------------------------------------

def test_a_lake_on_an_object_store_that_cannot_be_reached_is_one_error_line_exit_2(tmp_path, monkeypatch):
    """An object store's lake takes a lease (tests/pipelines/test_lake_lease.py); one pitwatch cannot
    reach (here: a closed port on the loopback) is said in one line, not waited for."""
    from tests.object_store import free_port

    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    closed = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}", "AWS_ACCESS_KEY_ID": "k",
              "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
              "AWS_EC2_METADATA_DISABLED": "true"}
    result = pitwatch("run", tmp_path / "nothing-here.jsonl", "--lake", "s3://casino/lake", "--lock-timeout", "1h",
                      env=closed, timeout=120)
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("Error: cannot take the lake's lease s3://casino/lake/_writer.lease.json: ")
    assert "waiting for the lake's lock" not in result.stderr and "Debug source" not in result.stderr


def test_a_planted_symlink_as_the_lock_file_is_refused_and_its_target_untouched(tmp_path, floor):
    lake = tmp_path / "lake"
    lake.mkdir()
    target = tmp_path / "elsewhere"
    (lake / lake_lock.LOCK_FILE).symlink_to(target)
    result = pitwatch("run", floor, "--lake", lake)
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr.startswith("Error: the lake's lock file ") and "symbolic link" in result.stderr
    assert not target.exists()


def test_a_folder_planted_as_the_holder_record_is_exit_2_and_the_lock_let_go(tmp_path):
    lake = tmp_path / "lake"
    (lake / lake_lock.HOLDER_FILE).mkdir(parents=True)
    result = pitwatch("run", tmp_path / "nothing-here.jsonl", "--lake", lake)
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr.startswith("Error: cannot write the lake's holder record ") and "Traceback" not in result.stderr
    assert sorted(p.name for p in lake.iterdir()) == [lake_lock.HOLDER_FILE]   # no lock or temporary file left
    (lake / lake_lock.HOLDER_FILE).rmdir()
    with lake_lock.hold(Lake.at(lake), lake_lock.new_holder("t"), 0, logging.getLogger("t")):
        assert (lake / lake_lock.HOLDER_FILE).is_file()   # the lock was let go: free at once

@pytest.mark.parametrize("body, shown", [
    (b"\xff\xfe not json", "holder record is unreadable (not JSON)"),
    (b"[1, 2]", "holder record is unreadable (not a JSON object)"),
    (json.dumps({"run_id": "R\nError: forged line\x1b[2J", "pid": 1, "host": "h", "since": "t"}).encode(),
     "run R\\nError: forged line\\x1b[2J, pid 1, on h since t"),
])
def test_a_hostile_holder_record_is_shown_on_one_line_never_trusted(tmp_path, body, shown):
    lake = tmp_path / "lake"
    holder = start_holder(lake)
    try:
        (lake / lake_lock.HOLDER_FILE).write_bytes(body)
        with pytest.raises(lake_lock.LakeLocked) as caught:
            with lake_lock.hold(Lake.at(lake), lake_lock.new_holder("test"), 0, logging.getLogger("t")):
                pass
    finally:
        holder.kill()
        holder.wait()
    assert shown in str(caught.value) and "\n" not in str(caught.value) and "\x1b" not in str(caught.value)


# --- in one process ------------------------------------------------------------------------------

def test_the_lock_is_reentrant_in_one_process_and_holder_update_names_the_run(tmp_path):
    lake = tmp_path / "lake"
    log = logging.getLogger("t")
    with lake_lock.hold(Lake.at(lake), lake_lock.new_holder("pitwatch run --day 2026-11-29"), 0, log):
        assert lake_lock.holding(Lake.at(lake))
        lake_lock.holder_update(Lake.at(lake), run_id="20261130T061502Z-0000beef")
        with lake_lock.hold(Lake.at(lake), lake_lock.new_holder("inner"), 0, log) as inner:   # does not wait for itself
            assert inner["run_id"] == "20261130T061502Z-0000beef"
        assert lake_lock.holding(Lake.at(lake))              # the inner block did not let go of the lake
        recorded = json.loads((lake / lake_lock.HOLDER_FILE).read_text())
        assert recorded["run_id"] == "20261130T061502Z-0000beef" and recorded["command"] == "pitwatch run --day 2026-11-29"
    assert not lake_lock.holding(Lake.at(lake))
    lake_lock.holder_update(Lake.at(lake), run_id="x")        # holds none: nothing written
    assert not (lake / lake_lock.HOLDER_FILE).exists()


@pytest.mark.slow     # waits 2.5 s of the real clock (hold takes no clock)
def test_waiting_is_said_at_most_every_say_every_seconds(tmp_path, caplog):
    lake = tmp_path / "lake"
    holder = start_holder(lake)
    log = logging.getLogger("pitwatch.test_lake_lock")
    try:
        with caplog.at_level(logging.INFO, logger=log.name), pytest.raises(lake_lock.LakeLocked):
            with lake_lock.hold(Lake.at(lake), lake_lock.new_holder("test"), 2.5, log, say_every=1.0):
                pass
    finally:
        holder.kill()
        holder.wait()
    said = [r.getMessage() for r in caplog.records if "waiting for the lake's lock" in r.getMessage()]
    assert len(said) == 3, said                          # at 0, 1 and 2 s of a 2.5 s wait


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("5m", 300), ("1h", 3600), ("1.5h", 5400), ("2", 2),
                                           (7, 7), ("0", 0), ("2d", 172800)])
def test_lock_timeout_values(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1 hour", "-5s", "5ms", "1e9", True, "367d", "nan"])
def test_lock_timeout_bad_values(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("where", ["disk", "s3"])
def test_another_thread_of_the_holding_process_waits_for_the_lock_as_another_process_would(tmp_path, where, request):
    """The console records reviews in worker threads: a second thread used to "re-enter" the first's
    lock, commit under it and see it let go of while it still wrote (issue 44 review)."""
    import threading

    lake = Lake.at(request.getfixturevalue("s3_lake") if where == "s3" else tmp_path / "lake")
    log = logging.getLogger("pitwatch.test_lake_lock")
    outcome: list = []

    def second() -> None:
        try:
            with lake_lock.hold(lake, lake_lock.new_holder("second thread"), 0.5, log):
                outcome.append("held")
        except lake_lock.LakeLocked:
            outcome.append("waited, then refused")

    with lake_lock.hold(lake, lake_lock.new_holder("first thread"), 0, log):
        t = threading.Thread(target=second)
        t.start()
        t.join()
        assert lake_lock.holding(lake)                 # the first still holds it
    assert outcome == ["waited, then refused"]
    t = threading.Thread(target=second)                # the must not: a free lake, the other thread takes it
    t.start()
    t.join()
    assert outcome[-1] == "held"
