"""``pitwatch run`` onto a lake on an S3 API (issue 44): moto's server on 127.0.0.1
(tests/object_store.py), reached through the standard AWS variables only.

The one-off and the nightly form write an ``s3://`` lake whose every table's whole rows equal the
same runs on a local disk, and whose data files are byte for byte the disk's: the Parquet files
are written by the same code from the same rows (:func:`tests.lake_rows.data_files`: every file
the pinned versions hold but the state's manifests, which name their run, keyed without the run id
in their names).  What differs, and is not compared byte for byte: the Delta log entries (their
timestamps, the writing run's id), the ``runs`` records (times, run ids, the hash chain over them)
and the inbox listings the state manifests keep (an object's last-modified time).  Inputs and the
nightly inbox may be on the store too (``s3://bucket/feeds/``), read with the same variables.
"""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

import pytest

from pitwatch.inputs.devices import load_registry, write_registry
from pitwatch.inputs.files import InputError, expand_inputs
from pitwatch.lake import Lake
from pitwatch.lake import registry as lake_registry
from pitwatch.lake.parquet import LakeError
from tests import lake_rows
from tests.conftest import process_env, run_pitwatch_process
from tests.pipelines.test_nightly import CUTOFF, _faulty_floor, _write_inbox

DAYS = ("2026-11-27", "2026-11-28")
ROSTER = b"id,name,shift\nD-BAC01-1,Ann Lee,day\n"
TABLES = ("events", "rejects", "rounds", "packs", "findings", "rules", "finding_changes")


def _upload(s3_server, bucket: str, folder: pathlib.Path, prefix: str) -> str:
    """Every file below ``folder`` put under ``prefix`` of ``bucket``; the prefix's URI."""
    client = s3_server.client()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(folder).as_posix()}", Body=path.read_bytes())
    return f"s3://{bucket}/{prefix}"


def _all_rows(lake, exclude=()) -> dict[str, list[tuple]]:
    """Every table's whole rows (sorted; but ``exclude``'s columns and those naming the lake's runs)."""
    return {name: lake_rows.rows(lake, name, exclude=exclude) for name in TABLES}


def _bucket(s3_lake: str) -> str:
    return s3_lake.split("/")[2]


# --- below the pipeline: what the run keeps and lists on the store (no Beam) -----------------------

def test_a_registry_given_to_an_s3_lake_is_kept_there_byte_for_byte_and_read_back(s3_lake, s3_server, tmp_path):
    write_registry(tmp_path / "devices.csv", [("SHOE-1", "shoe", "BAC-07", "2026-11-01", None)])
    given = load_registry(str(tmp_path / "devices.csv"))
    chosen = lake_registry.choose(Lake.at(s3_lake), given)
    assert chosen.record["kept"] == f"_registry/devices-{given.sha256}.csv"
    assert "kept in the lake as version 1" in chosen.said
    keys = s3_server.keys(_bucket(s3_lake))
    assert keys == {f"lake/{chosen.record['kept']}": (tmp_path / "devices.csv").read_bytes()}
    assert lake_registry.read_kept(Lake.at(s3_lake), chosen.record).rows == given.rows
    again = lake_registry.choose(Lake.at(s3_lake), given)       # the same bytes: checked, not written again
    assert again.record["kept"] == chosen.record["kept"] and s3_server.keys(_bucket(s3_lake)) == keys


def test_a_kept_registry_changed_on_the_store_is_refused_not_overwritten(s3_lake, s3_server, tmp_path):
    write_registry(tmp_path / "devices.csv", [("SHOE-1", "shoe", "BAC-07", "2026-11-01", None)])
    given = load_registry(str(tmp_path / "devices.csv"))
    key = f"lake/_registry/devices-{given.sha256}.csv"
    s3_server.client().put_object(Bucket=_bucket(s3_lake), Key=key, Body=b"device_id,source\nX,shoe\n")
    with pytest.raises(LakeError, match="was changed"):
        lake_registry.choose(Lake.at(s3_lake), given)
    assert s3_server.keys(_bucket(s3_lake))[key] == b"device_id,source\nX,shoe\n"


def test_an_s3_folder_of_inputs_names_its_event_files_but_hidden_ones_and_other_suffixes(s3_lake, s3_server):
    from pitwatch.pipelines.batch import remote_inputs_readable

    bucket, client = _bucket(s3_lake), s3_server.client()
    for key in ("feeds/a.jsonl", "feeds/sub/b.jsonl.gz", "feeds/c.parquet", "feeds/.hidden.jsonl",
                "feeds/notes.txt", "feeds/a.jsonl.partial", "other/d.jsonl"):
        client.put_object(Bucket=bucket, Key=key, Body=b"{}\n")
    remote_inputs_readable([])          # what run_batch does before it lists its inputs
    found = [f"s3://{bucket}/feeds/{n}" for n in ("a.jsonl", "c.parquet", "sub/b.jsonl.gz")]
    assert expand_inputs([f"s3://{bucket}/feeds/"]) == found
    assert expand_inputs([f"s3://{bucket}/feeds"]) == found
    assert expand_inputs([f"s3://{bucket}/feeds/*.jsonl"]) == [f"s3://{bucket}/feeds/a.jsonl"]
    assert expand_inputs([f"s3://{bucket}/other/d.jsonl"]) == [f"s3://{bucket}/other/d.jsonl"]
    with pytest.raises(InputError, match="no .jsonl, .jsonl.gz or .parquet file there"):
        expand_inputs([f"s3://{bucket}/nothing-here/"])
    with pytest.raises(InputError, match="no .jsonl, .jsonl.gz or .parquet file matches"):
        expand_inputs([f"s3://{bucket}/feeds/*.csv"])


def test_an_s3_inbox_lists_its_days_and_names_the_files_it_skips(s3_lake, s3_server):
    from pitwatch.pipelines import nightly

    bucket, client = _bucket(s3_lake), s3_server.client()
    for key, body in (("inbox/2026-11-27/DT-1.jsonl", b"x\n"), ("inbox/2026-11-27/shoes/SHOE-1.jsonl.gz", b"yy"),
                      ("inbox/2026-11-27/SHOE-2.jsonl.partial", b"z"), ("inbox/notaday/DT-2.jsonl", b"w"),
                      ("inbox/devices.csv", b"device_id,source,table_id,from_day,to_day\n")):
        client.put_object(Bucket=bucket, Key=key, Body=body)
    inbox = f"s3://{bucket}/inbox"
    assert nightly.inbox_days(inbox) == ["2026-11-27"]
    listing = nightly.day_listing(inbox, "2026-11-27")
    assert [(f["path"], f["bytes"]) for f in listing] == [("2026-11-27/DT-1.jsonl", 2),
                                                          ("2026-11-27/shoes/SHOE-1.jsonl.gz", 2)]
    assert all(isinstance(f["mtime_ns"], int) and f["mtime_ns"] > 0 for f in listing)
    assert nightly.day_skipped(inbox, "2026-11-27") == [
        {"path": "2026-11-27/SHOE-2.jsonl.partial", "reason": "upload not finished"}]
    with pytest.raises(InputError, match="no inbox folder for gaming day 2026-11-28"):
        nightly.check_inbox(inbox, "2026-11-28", ["2026-11-28"])
    with pytest.raises(InputError, match="is not a folder"):
        nightly.inbox_days(f"s3://{bucket}/no-inbox")
    from pitwatch.inputs.devices import registry_path

    assert registry_path(None, inbox) == f"{inbox}/devices.csv"
    assert registry_path(None, f"s3://{bucket}/inbox/2026-11-27") is None


# --- the batch onto the store (Beam: slow) ---------------------------------------------------------

@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    """The nightly tests' two gaming days with faults, as an inbox (one folder a day, a device
    registry naming one of its devices), and the same runs on a local disk: ``one_off`` (the
    first day's folder, one-off), ``nightly`` (both nights in the nightly form), ``both`` (each
    day's folder, one-off, in turn)."""
    base = tmp_path_factory.mktemp("s3run")
    _write_inbox(base / "inbox", _faulty_floor())
    write_registry(base / "inbox" / "devices.csv", [("DT-BAC01", "dealer", "BAC-01", "2026-11-01", None)])
    (base / "inbox" / "dealers.csv").write_bytes(ROSTER)
    _cli("run", base / "inbox" / DAYS[0], "--lake", base / "one_off", "--devices", base / "inbox" / "devices.csv")
    for day in DAYS:
        _cli("run", "--day", day, "--inbox", base / "inbox", "--lake", base / "nightly")
        _cli("run", base / "inbox" / day, "--lake", base / "both")
    return base


def _cli(*args) -> subprocess.CompletedProcess:
    from tests.conftest import run_pitwatch

    result = run_pitwatch(*args, "--cutoff", CUTOFF, "--quiet")
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.slow
def test_a_day_run_onto_s3_equals_the_same_run_on_disk_row_for_row_and_byte_for_byte(floor, s3_lake, s3_server):
    done = _cli("run", floor / "inbox" / DAYS[0], "--lake", s3_lake, "--devices", floor / "inbox" / "devices.csv")
    assert f"lake        {s3_lake}" in done.stdout
    assert _all_rows(s3_lake) == _all_rows(floor / "one_off")
    assert sum(map(len, _all_rows(s3_lake).values())) > 1000
    assert lake_rows.data_files(s3_lake, across_lakes=True) == lake_rows.data_files(floor / "one_off", across_lakes=True)
    record = lake_rows.last_run(s3_lake)
    assert record["status"] == "succeeded"
    devices = json.loads(record["options"])["devices"]
    assert devices["from"] == "given" and devices["version"] == 1
    keys = s3_server.keys(_bucket(s3_lake))
    assert keys[f"lake/{devices['kept']}"] == (floor / "inbox" / "devices.csv").read_bytes()
    assert not [k for k in keys if k.startswith("lake/_staging/")], "the run's staging was left on the store"
    assert json.loads(keys["lake/settings.json"])["cutoff"] == CUTOFF
    assert not [k for k in keys if ".tmp" in k], "a temporary object was left on the store"
    verified = run_pitwatch_process("verify", "--lake", s3_lake)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.slow
def test_two_nights_from_an_s3_inbox_onto_an_s3_lake_carry_the_state_and_equal_the_nights_on_disk(
        floor, s3_lake, s3_server):
    inbox = _upload(s3_server, _bucket(s3_lake), floor / "inbox", "inbox")
    for day in DAYS:
        done = _cli("run", "--day", day, "--inbox", inbox, "--lake", s3_lake)
        assert ": succeeded in " in done.stdout and f"lake        {s3_lake}" in done.stdout
    # the events' and rejects' input file is the inbox's path, on the store or on the disk: left out
    assert _all_rows(s3_lake, exclude=("file",)) == _all_rows(floor / "nightly", exclude=("file",))
    assert {r["file"].split("/inbox/", 1)[0] for r in lake_rows.dicts(s3_lake, "events")} == {f"s3://{_bucket(s3_lake)}"}
    second = lake_rows.last_run(s3_lake)
    assert second["status"] == "succeeded" and [d.isoformat() for d in second["gaming_days"]] == [DAYS[1]]
    # the second night started from the first night's state, kept on the store: its rounds crossing the cutoff
    crossing = [r for r in lake_rows.dicts(s3_lake, "rounds") if r["gaming_day"].isoformat() == DAYS[0]
                and r["ended"] is not None and r["ended"].isoformat() >= "2026-11-28T08:00"]
    assert crossing
    assert json.loads(second["options"])["devices"]["from"] == "given"     # INBOX/devices.csv on the store
    dealers = json.loads(second["options"])["dealers"]                     # INBOX/dealers.csv, kept on the store
    assert dealers["from"] == "given" and dealers["version"] == 1
    assert s3_server.keys(_bucket(s3_lake))[f"lake/{dealers['kept']}"] == ROSTER
    verified = run_pitwatch_process("verify", "--lake", s3_lake)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.slow
def test_two_writers_at_once_on_an_s3_lake_one_waits_and_both_days_land_as_in_sequence_on_disk(
        floor, s3_lake, s3_server):
    from pitwatch.lake.lock import LEASE_OBJECT

    def writer(day: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "run", str(floor / "inbox" / day),
                                 "--lake", s3_lake, "--cutoff", CUTOFF],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=process_env())

    writers = [writer(DAYS[0])]
    leased = time.monotonic() + 120             # the second starts once the first holds the lease: it must wait
    while f"lake/{LEASE_OBJECT}" not in s3_server.keys(_bucket(s3_lake)) and writers[0].poll() is None:
        assert time.monotonic() < leased, "the first writer never took the lease"
        time.sleep(0.05)
    writers.append(writer(DAYS[1]))
    outputs = [w.communicate(timeout=600) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], outputs
    assert _all_rows(s3_lake) == _all_rows(floor / "both")
    records = [r for r in lake_rows.run_records(s3_lake) if r["status"] == "succeeded"]
    assert len(records) == 2
    first, second = sorted(records, key=lambda r: r["started"])
    assert first["ended"] <= second["started"], "the two runs overlapped: the second did not wait"
    waited = [err for _out, err in outputs if "waiting for the lake's lock" in err]
    assert len(waited) == 1, outputs


@pytest.mark.slow
def test_inputs_on_s3_read_with_the_aws_variables_give_the_rows_of_the_same_files_on_disk(floor, s3_lake, s3_server,
                                                                                           tmp_path):
    feeds = _upload(s3_server, _bucket(s3_lake), floor / "inbox" / DAYS[0], "feeds")
    done = _cli("run", feeds + "/", "--lake", tmp_path / "lake", "--devices", floor / "inbox" / "devices.csv")
    assert "  inputs      15 files" in done.stdout
    assert _all_rows(tmp_path / "lake", exclude=("file",)) == _all_rows(floor / "one_off", exclude=("file",))
    assert {r["path"].rsplit("/", 1)[0] for r in lake_rows.last_run(tmp_path / "lake")["inputs"]} == {feeds}


def test_an_s3_input_with_nothing_there_or_no_bucket_is_one_error_line_and_exit_2(s3_lake, tmp_path):
    from tests.conftest import run_pitwatch

    for uri in (f"s3://{_bucket(s3_lake)}/nothing/", "s3://no-such-bucket-pitwatch/feeds/"):
        result = run_pitwatch("run", uri, "--lake", tmp_path / "lake")
        assert result.returncode == 2, result.stderr
        assert result.stderr.splitlines() == [f"Error: input {uri}: no .jsonl, .jsonl.gz or .parquet file there "
                                              "(nothing below it on the store)"]
    assert not (tmp_path / "lake").exists() or not list((tmp_path / "lake").rglob("*.parquet"))


@pytest.mark.slow
def test_a_writer_killed_on_s3_keeps_the_lake_one_lease_then_the_next_run_takes_over_and_nothing_of_it_is_read(
        floor, s3_lake, s3_server):
    """SIGKILL of a real ``pitwatch run`` (its process group: Beam's workers too) once it has written a
    replay file on the store and committed nothing; with a 3 s lease the next run waits for the
    lease to run out, takes the lake over, records the killed run's end and completes: the lake is
    the two runs' uninterrupted and verifies, and no table holds a file of the killed run."""
    import os
    import signal

    from pitwatch.lake import delta
    from pitwatch.pipelines.lake_run import DATA_TABLES

    lease = {"PITWATCH_LEASE_SECONDS": "3"}
    _cli("run", floor / "inbox" / DAYS[0], "--lake", s3_lake)
    first_night = _all_rows(s3_lake)
    bucket, client = _bucket(s3_lake), s3_server.client()
    killed = subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "run", str(floor / "inbox" / DAYS[1]),
                               "--lake", s3_lake, "--cutoff", CUTOFF, "--quiet"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=process_env(lease), start_new_session=True)
    deadline = time.monotonic() + 300

    def replay_written() -> bool:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="lake/events/")
        return any(f"/replay-{DAYS[1]}-" in o["Key"] for page in pages for o in page.get("Contents", []))
    try:
        while not replay_written():
            assert killed.poll() is None, f"the run ended (rc {killed.returncode}) before it wrote: {killed.stderr.read()}"
            assert time.monotonic() < deadline, "no replay file in 300 s"
            time.sleep(0.05)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(60)
        killed.stderr.close()
    assert killed.returncode == -signal.SIGKILL
    keys = s3_server.keys(bucket)
    assert "lake/_writer.lease.json" in keys, "the killed run's lease is not on the store"
    (killed_id,) = [r["run_id"] for r in lake_rows.run_records(s3_lake) if r["status"] == "running"]
    assert _all_rows(s3_lake) == first_night      # readers: the first run's rows only
    began = time.monotonic()
    after = run_pitwatch_process("run", floor / "inbox" / DAYS[1], "--lake", s3_lake, "--cutoff", CUTOFF, env=lease)
    assert after.returncode == 0, after.stderr
    assert "waiting for the lake's lock" in after.stderr and time.monotonic() - began >= 3
    statuses = {r["run_id"]: r["status"] for r in lake_rows.run_records(s3_lake)}
    assert statuses[killed_id].startswith("interrupted: it ended without recording its end")
    assert _all_rows(s3_lake) == _all_rows(floor / "both")
    lake = Lake.at(s3_lake)
    for name in DATA_TABLES:      # runs keeps its records: running, then interrupted
        assert not [f for f in delta.files_at(lake, name, delta.current_version(lake, name)) if killed_id in f], name
    assert not [k for k in s3_server.keys(bucket) if killed_id in k and "/_delta_log/" not in k and "runs/" not in k]
    verified = run_pitwatch_process("verify", "--lake", s3_lake)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_runs_record_file_younger_than_the_grace_is_no_leftover_on_s3(s3_lake, monkeypatch):
    """On a store there is no append lock: a watcher's record file written and not yet committed
    must survive a run's clean-up, and an old one (a killed writer's) must not (review of issue 44)."""
    from pitwatch.lake import Lake
    from pitwatch.pipelines import lake_run

    lake = Lake.at(s3_lake)
    path = f"{lake.root}/runs/record-of-a-watcher.parquet"
    with lake.fs.open_output_stream(path) as out:
        out.write(b"a record file between its write and its commit")
    assert lake_run.remove_leftovers(lake) == []
    assert lake.fs.get_file_info(path).is_file                       # the must not: young, kept
    monkeypatch.setattr(lake_run, "RUNS_LEFTOVER_GRACE", -60.0)      # as if it were old
    assert lake_run.remove_leftovers(lake) == [path]
    assert not lake.fs.get_file_info(path).is_file                   # the must: an old one removed
