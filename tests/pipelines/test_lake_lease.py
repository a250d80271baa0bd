"""The lake's lock on an object store: a lease object (issue 44), against a real S3 API (moto's server on
127.0.0.1, ``s3_lake``), with real processes where a process is the point.

As on a disk (``tests/pipelines/test_lake_lock.py``): a second writer waits, names the holder and exits 4
after ``--lock-timeout`` with the lake's bytes unchanged; a killed holder does not keep the lake for ever
(here: for one lease length).  Beyond a disk: the lease is renewed while its holder works, two waiters
for a dead lease cannot both take it, and a holder whose lease was taken over commits nothing more.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from pitwatch.cli import exits
from pitwatch.lake import Lake
from pitwatch.lake import lock as lake_lock
from tests.conftest import ROOT, run_pitwatch
from tests.pipelines.test_lake_lock import said_locked, start_holder

LOG = logging.getLogger("pitwatch.test_lake_lease")


def bucket_of(s3_lake: str) -> str:
    return s3_lake.split("/")[2]


def lease_key(s3_lake: str) -> str:
    return s3_lake.split("/", 3)[3] + "/" + lake_lock.LEASE_OBJECT


def lease_record(s3_server, s3_lake: str) -> dict | None:
    body = s3_server.keys(bucket_of(s3_lake)).get(lease_key(s3_lake))
    return None if body is None else json.loads(body)


# A writer in a process of its own: takes the lake's lock (timeout argv[3]) when told "go" on its stdin,
# says "held" (or "locked"), then on each further line says whether it may still commit (check_held).
WRITER = textwrap.dedent("""
    import logging, sys
    from pitwatch.lake import Lake, lock as lake_lock
    sys.stdin.readline()
    lake = Lake.at(sys.argv[1])
    try:
        with lake_lock.hold(lake, lake_lock.new_holder(sys.argv[2]), float(sys.argv[3]), logging.getLogger("w")):
            print("held", flush=True)
            for line in sys.stdin:
                try:
                    lake_lock.check_held(lake)
                    print("may commit", flush=True)
                except lake_lock.LeaseLost as exc:
                    print("lost:", exc, flush=True)
    except lake_lock.LakeLocked:
        print("locked", flush=True)
""")


def start_writer(s3_lake: str, name: str, timeout: float = 0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, s3_lake, name, str(timeout)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def tell(proc: subprocess.Popen, line: str = "go") -> str:
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return proc.stdout.readline()


# --- hold and let go ----------------------------------------------------------------------------

def test_a_lease_names_its_holder_while_held_and_letting_go_leaves_no_object(s3_lake, s3_server):
    lake = Lake.at(s3_lake)
    assert s3_server.keys(bucket_of(s3_lake)) == {}
    with lake_lock.hold(lake, lake_lock.new_holder("pitwatch run --day 2026-11-28"), 0, LOG) as mine:
        record = lease_record(s3_server, s3_lake)
        assert record["holder"] == mine and mine["pid"] == os.getpid()
        assert lake_lock.holding(lake)
        lake_lock.holder_update(lake, run_id="20261129T061502Z-0000beef")
        with lake_lock.hold(lake, lake_lock.new_holder("inner"), 0, LOG) as inner:     # re-entrant: no wait
            assert inner["run_id"] == "20261129T061502Z-0000beef"
        assert lease_record(s3_server, s3_lake)["holder"]["run_id"] == "20261129T061502Z-0000beef"
        assert lake_lock.holding(lake)                   # the inner block did not let go
    assert not lake_lock.holding(lake)
    assert s3_server.keys(bucket_of(s3_lake)) == {}


# --- a second writer waits, names the holder, exits 4, the lake's bytes unchanged ------------------

def test_a_second_run_on_a_leased_lake_waits_names_the_holder_and_exits_4_with_the_bytes_unchanged(
        s3_lake, s3_server, tmp_path):
    holder = start_holder(s3_lake)         # a real process; the default lease (60 s): no renewal in the wait
    try:
        before = s3_server.keys(bucket_of(s3_lake))
        began = time.monotonic()
        result = run_pitwatch("run", tmp_path / "nothing-here.jsonl", "--lake", s3_lake, "--lock-timeout", "2s")
        waited = time.monotonic() - began
        assert s3_server.keys(bucket_of(s3_lake)) == before     # not one byte written or removed
    finally:
        holder.kill()
        holder.wait()
    assert waited >= 2
    assert "--lock-timeout" in said_locked(result, s3_lake, holder.pid)
    assert "Traceback" not in result.stderr


def test_a_free_lake_on_s3_is_not_waited_for(s3_lake, tmp_path):
    result = run_pitwatch("run", tmp_path / "nothing-here.jsonl", "--lake", s3_lake, "--lock-timeout", "0")
    # past the lock (no exit 4) to the input, which does not exist: the input's own exit 2
    assert result.returncode == exits.USAGE, result.stderr
    assert "waiting for the lake's lock" not in result.stderr and "nothing-here.jsonl" in result.stderr


# --- a killed holder, renewal, a lost lease ------------------------------------------------------

@pytest.mark.slow      # kills a process and waits out its lease
def test_a_holder_killed_with_kill_9_keeps_the_lake_one_lease_length_then_a_waiter_takes_it(
        s3_lake, s3_server, monkeypatch):
    monkeypatch.setenv(lake_lock.LEASE_ENV, "3")
    holder = start_holder(s3_lake, run_id="20261129T061502Z-dead0000")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert lease_record(s3_server, s3_lake)["holder"]["run_id"] == "20261129T061502Z-dead0000"
    with pytest.raises(lake_lock.LakeLocked) as caught:          # its lease has not run out yet
        with lake_lock.hold(Lake.at(s3_lake), lake_lock.new_holder("too early"), 0, LOG):
            pass
    assert "run 20261129T061502Z-dead0000" in str(caught.value)
    began = time.monotonic()
    with lake_lock.hold(Lake.at(s3_lake), lake_lock.new_holder("the next run"), 30, LOG) as mine:
        took = time.monotonic() - began
        assert lease_record(s3_server, s3_lake)["holder"] == mine
    assert 1.5 <= took <= 10, took                               # about one lease length (3 s), not the timeout
    assert lease_record(s3_server, s3_lake) is None


def test_a_lease_long_expired_is_taken_over_at_once(s3_lake, s3_server):
    """A lease whose expiry is long past (a writer killed last night) does not keep the next one waiting
    even one lease length."""
    s3_server.client().put_object(Bucket=bucket_of(s3_lake), Key=lease_key(s3_lake), Body=json.dumps({
        "holder": {"run_id": "R-last-night", "pid": 1, "host": "pit-01", "since": "2026-11-28T06:00:00Z"},
        "lease_id": "x", "renewal": 1, "lease_seconds": 60, "written": "2026-11-28T06:00:00.000Z",
        "expires": "2026-11-28T06:01:00.000Z"}).encode())
    with lake_lock.hold(Lake.at(s3_lake), lake_lock.new_holder("the next run"), 0, LOG) as mine:
        assert lease_record(s3_server, s3_lake)["holder"] == mine


def test_a_lease_that_is_not_pitwatchs_is_shown_as_unreadable_and_waited_for(s3_lake, s3_server):
    s3_server.client().put_object(Bucket=bucket_of(s3_lake), Key=lease_key(s3_lake), Body=b"\xff\x1b[2J junk")
    with pytest.raises(lake_lock.LakeLocked) as caught:
        with lake_lock.hold(Lake.at(s3_lake), lake_lock.new_holder("t"), 0, LOG):
            pass
    assert "holder record is unreadable (not JSON)" in str(caught.value) and "\x1b" not in str(caught.value)


@pytest.mark.slow      # waits 3.5 s of the real clock while a real process renews
def test_renewal_keeps_a_long_holders_lease_past_several_lease_lengths(s3_lake, s3_server, monkeypatch):
    monkeypatch.setenv(lake_lock.LEASE_ENV, "1")
    writer = start_writer(s3_lake, "the long holder")
    try:
        assert tell(writer) == "held\n", writer.stderr.read()
        first = lease_record(s3_server, s3_lake)
        time.sleep(3.5)                                          # 3.5 lease lengths
        with pytest.raises(lake_lock.LakeLocked):
            with lake_lock.hold(Lake.at(s3_lake), lake_lock.new_holder("t"), 0, LOG):
                pass
        now = lease_record(s3_server, s3_lake)
        assert now["lease_id"] == first["lease_id"] and now["renewal"] >= first["renewal"] + 4
        assert tell(writer, "check") == "may commit\n"
    finally:
        writer.kill()
        writer.wait()


@pytest.mark.slow      # stops a process past its lease
def test_a_holder_paused_past_its_lease_finds_it_taken_and_may_not_commit(s3_lake, s3_server, monkeypatch):
    monkeypatch.setenv(lake_lock.LEASE_ENV, "2")
    writer = start_writer(s3_lake, "the paused one")
    try:
        assert tell(writer) == "held\n", writer.stderr.read()
        assert tell(writer, "check") == "may commit\n"
        os.kill(writer.pid, signal.SIGSTOP)                      # a writer paused (a VM frozen, a long GC)
        with lake_lock.hold(Lake.at(s3_lake), lake_lock.new_holder("the next run"), 30, LOG) as mine:
            os.kill(writer.pid, signal.SIGCONT)
            said = tell(writer, "check")
            assert said.startswith("lost: ") and "nothing more was committed" in said, said
            assert lease_record(s3_server, s3_lake)["holder"] == mine     # the paused one did not take it back
    finally:
        os.kill(writer.pid, signal.SIGCONT)
        writer.kill()
        writer.wait()


def test_a_lost_lease_makes_check_held_refuse_and_is_not_removed_as_the_holder_lets_go(s3_lake, s3_server):
    lake = Lake.at(s3_lake)
    other = json.dumps({"holder": {"run_id": "R-other", "pid": 2, "host": "h2", "since": "t"}, "lease_id": "o",
                        "renewal": 1, "lease_seconds": 60, "written": "t", "expires": "t"}).encode()
    with lake_lock.hold(lake, lake_lock.new_holder("me"), 0, LOG):
        lake_lock.check_held(lake)                               # held: may commit
        s3_server.client().put_object(Bucket=bucket_of(s3_lake), Key=lease_key(s3_lake), Body=other)
        with pytest.raises(lake_lock.LeaseLost):
            lake_lock.check_held(lake)
        with pytest.raises(lake_lock.LeaseLost):                 # and so does a commit
            from pitwatch.lake import parquet
            from tests.pipelines.test_lake_object import NAME, _rejects

            parquet.write_partition(lake, NAME, "2024-01-02", [_rejects(3, "one")], run_id="run-one")
    assert s3_server.keys(bucket_of(s3_lake)).get(lease_key(s3_lake)) == other     # the other's lease stands
    assert not any("_delta_log" in k for k in s3_server.keys(bucket_of(s3_lake)))


def test_a_lake_on_disk_is_never_refused_by_check_held(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    with lake_lock.hold(lake, lake_lock.new_holder("me"), 0, LOG):
        lake_lock.check_held(lake)
    lake_lock.check_held(lake)                                   # holds none: a watcher, a worker


# --- two waiters for one dead lease ----------------------------------------------------------------

@pytest.mark.parametrize("threads", [True, False], ids=["threads", "processes"])
def test_two_waiters_racing_for_an_expired_lease_exactly_one_wins(s3_lake, s3_server, threads):
    s3_server.client().put_object(Bucket=bucket_of(s3_lake), Key=lease_key(s3_lake), Body=json.dumps({
        "holder": {"run_id": "R-dead", "pid": 1, "host": "h", "since": "t"}, "lease_id": "d", "renewal": 1,
        "lease_seconds": 60, "written": "2026-11-28T06:00:00.000Z", "expires": "2026-11-28T06:01:00.000Z"}).encode())
    if threads:
        # two threads of one process share its re-entrance: each takes the lease itself (_take_lease)
        barrier, got = threading.Barrier(2), []

        def wait(name):
            barrier.wait()
            try:
                got.append(lake_lock._take_lease(Lake.at(s3_lake), lake_lock.new_holder(name), 0, LOG,
                                                 lake_lock.SAY_EVERY, 60).holder["command"])
            except lake_lock.LakeLocked:
                got.append("locked")

        both = [threading.Thread(target=wait, args=(n,)) for n in ("one", "two")]
        for t in both:
            t.start()
        for t in both:
            t.join()
        assert sorted(got) in (["locked", "one"], ["locked", "two"]), got
        assert lease_record(s3_server, s3_lake)["holder"]["command"] == [g for g in got if g != "locked"][0]
        return
    one, two = start_writer(s3_lake, "one"), start_writer(s3_lake, "two")
    try:
        for w in (one, two):
            w.stdin.write("go\n")
        for w in (one, two):
            w.stdin.flush()
        said = sorted([one.stdout.readline(), two.stdout.readline()])
        assert said == ["held\n", "locked\n"], (said, one.stderr.read() if one.poll() is not None else "")
        assert lease_record(s3_server, s3_lake)["holder"]["command"] in ("one", "two")
    finally:
        for w in (one, two):
            w.kill()
            w.wait()


# --- bad lease settings ------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "soon", "nan", "7200"])
def test_a_bad_lease_length_is_one_error_line(s3_lake, tmp_path, value):
    result = run_pitwatch("run", tmp_path / "nothing-here.jsonl", "--lake", s3_lake,
                          env={lake_lock.LEASE_ENV: value})
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"Error: {lake_lock.LEASE_ENV} must be seconds from 1 to 3600, got ")


def test_a_command_whose_lease_is_lost_ends_with_exit_3_naming_it(s3_lake, s3_server):
    """What ``cli/locking.py`` makes of :class:`LeaseLost` raised in the command's block: one ``Error:``
    line and exit 3 (did not complete); a lease still held ends the block normally."""
    from pitwatch.cli.locking import LeaseLost, lake_lock

    lake = Lake.at(s3_lake)
    with lake_lock(lake, 0, "pitwatch run (kept)", LOG):
        lake.check_held()
    assert lease_record(s3_server, s3_lake) is None
    with pytest.raises(LeaseLost) as caught:
        with lake_lock(lake, 0, "pitwatch run (taken over)", LOG):
            s3_server.client().delete_object(Bucket=bucket_of(s3_lake), Key=lease_key(s3_lake))
            lake.check_held()
    assert caught.value.exit_code == exits.INCOMPLETE
    assert f"the lake {s3_lake}'s lease is no longer this writer's" in caught.value.format_message()


def test_a_renewal_refused_against_the_record_it_wrote_itself_keeps_the_lease(s3_lake):
    """The store's client retries a put whose answer was lost; the retry is refused (412) against
    the object the first attempt wrote.  That used to be taken for another writer's, so the holder
    stopped with exit 3 (review of issue 44)."""
    import obstore

    from pitwatch.lake import Lake
    from pitwatch.lake.files import object_store
    from pitwatch.lake.lock import LEASE_OBJECT, _Lease

    lake = Lake.at(s3_lake)
    lease = _Lease(lake, object_store(lake.address), {"command": "test"}, 60)
    lease.put("create")
    written_before = lease.etag
    lease.renewal += 1                               # the first attempt of a renewal lands, its answer is lost
    obstore.put(lease.store, LEASE_OBJECT, lease.body(), mode=written_before, use_multipart=False)
    lease.renewal -= 1                               # renew() sends that same renewal again: refused, yet ours
    assert lease.renew() and lease.lost is None and lease.etag != written_before
    # the must: a record another writer put there is not ours
    obstore.put(lease.store, LEASE_OBJECT, b'{"holder": {"command": "another"}, "lease_id": "x", "renewal": 9}')
    assert not lease.renew() and "replaced or removed by another writer" in lease.lost
