"""The Delta commits of pitwatch.lake.delta against real delta-rs tables: the fence, a retried commit,
stats, schema evolution, retention, a replayed day replaced by file, leftovers."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from pitwatch.lake import Lake, delta
from pitwatch.lake import parquet as lake
from pitwatch.schemas.arrow import rows_to_table

DAY, NEXT = "2026-11-28", "2026-11-29"


def _rejects(n: int, tag: str) -> pa.Table:
    return rows_to_table([{"file": f"{tag}.jsonl", "line": i, "raw": tag, "reason": "r"} for i in range(n)],
                         lake.file_schema("rejects"))


def _write(path, day, replay_day, run, n, tag="x"):
    return lake.write_partition_file(Lake.at(path), "rejects", day, [_rejects(n, tag)], lake.replay_file_name(replay_day, run))


def _commit(path, files, days, run, fence):
    return delta.commit_replays(Lake.at(path), "rejects", files, days, run_id=run, fence_at_start=fence)


def test_a_stale_writer_commits_nothing(tmp_path):
    _commit(tmp_path, [_write(tmp_path, DAY, DAY, "r1", 3)], [DAY], "r1", 0)
    fence_of_r2 = delta.fence(Lake.at(tmp_path), "rejects")      # r2 starts
    _commit(tmp_path, [_write(tmp_path, DAY, DAY, "r3", 1)], [DAY], "r3", fence_of_r2)   # r3 commits meanwhile
    version = delta.current_version(Lake.at(tmp_path), "rejects")
    with pytest.raises(delta.StaleWriter, match="committed by another writer"):
        _commit(tmp_path, [_write(tmp_path, DAY, DAY, "r2", 5)], [DAY], "r2", fence_of_r2)
    assert delta.current_version(Lake.at(tmp_path), "rejects") == version
    assert lake.read_table(Lake.at(tmp_path), "rejects").column("raw").to_pylist() == ["x"]


def test_a_retried_commit_step_commits_once(tmp_path):
    files = [_write(tmp_path, DAY, DAY, "r1", 3)]
    first = _commit(tmp_path, files, [DAY], "r1", 0)
    files2 = [_write(tmp_path, DAY, DAY, "r2", 2)]
    v = _commit(tmp_path, files2, [DAY], "r2", 1)
    assert _commit(tmp_path, files2, [DAY], "r2", 1) == v != first     # the same step again: nothing new
    assert delta.current_version(Lake.at(tmp_path), "rejects") == v
    assert lake.read_table(Lake.at(tmp_path), "rejects").num_rows == 2


def test_a_replayed_day_replaces_every_file_its_earlier_replay_wrote_and_nothing_else(tmp_path):
    # replay of NEXT wrote rows in DAY's partition too (a round across the cutoff)
    _commit(tmp_path, [_write(tmp_path, DAY, DAY, "r1", 3, "day"), _write(tmp_path, DAY, NEXT, "r1", 2, "spill"),
                       _write(tmp_path, NEXT, NEXT, "r1", 4, "next")], [DAY, NEXT], "r1", 0)
    _commit(tmp_path, [_write(tmp_path, NEXT, NEXT, "r2", 1, "next2")], [NEXT], "r2", 1)
    got = sorted(lake.read_table(Lake.at(tmp_path), "rejects").column("raw").to_pylist())
    assert got == ["day"] * 3 + ["next2"]
    # time travel still reads the first version whole
    assert lake.read_table(Lake.at(tmp_path), "rejects", version=0).num_rows == 9


def test_stats_are_the_record_count_only(tmp_path):
    _commit(tmp_path, [_write(tmp_path, DAY, DAY, "r1", 3)], [DAY], "r1", 0)
    log = (tmp_path / "rejects" / "_delta_log" / "00000000000000000000.json").read_text().splitlines()
    adds = [json.loads(line)["add"] for line in log if '"add"' in line]
    assert [json.loads(a["stats"]) for a in adds] == [{"numRecords": 3}]
    # and a filtered read returns exactly the rows: the only filter pitwatch uses is the partition
    dt = DeltaTable(str(tmp_path / "rejects"))
    assert dt.to_pyarrow_table(filters=[("gaming_day", "=", __import__("datetime").date.fromisoformat(DAY))]).num_rows == 3


def test_a_column_the_table_lacks_is_added_before_the_commit_that_carries_it(tmp_path):
    old = lake.LAKE_TABLES["rejects"].remove(lake.LAKE_TABLES["rejects"].get_field_index("seq"))
    small = _rejects(2, "old").drop_columns(["seq"])
    f = lake.write_data_file(Lake.at(tmp_path), "rejects", DAY, lake.replay_file_name(DAY, "r1"), small)
    delta.commit_replays(Lake.at(tmp_path), "rejects", [f], [DAY], run_id="r1", fence_at_start=0, schema=old)
    assert "seq" not in DeltaTable(str(tmp_path / "rejects")).schema().to_arrow().names
    _commit(tmp_path, [_write(tmp_path, NEXT, NEXT, "r2", 1, "new")], [NEXT], "r2", 1)
    assert "seq" in DeltaTable(str(tmp_path / "rejects")).schema().to_arrow().names
    t = DeltaTable(str(tmp_path / "rejects")).to_pyarrow_table()
    assert sorted(t.column("raw").to_pylist()) == ["new", "old", "old"] and "seq" in t.column_names


def test_every_table_keeps_its_history_until_vacuum(tmp_path):
    _commit(tmp_path, [_write(tmp_path, DAY, DAY, "r1", 3)], [DAY], "r1", 0)
    config = DeltaTable(str(tmp_path / "rejects")).metadata().configuration
    assert config["delta.enableExpiredLogCleanup"] == "false"
    assert config["delta.deletedFileRetentionDuration"] == delta.DELETED_FILE_RETENTION
    assert config["delta.logRetentionDuration"] == "interval 36500 days"


def test_a_file_no_commit_names_is_a_leftover_and_only_it(tmp_path):
    _commit(tmp_path, [_write(tmp_path, DAY, DAY, "r1", 3)], [DAY], "r1", 0)
    stray = _write(tmp_path, DAY, DAY, "killed", 9)       # written, never committed
    path = str(tmp_path / "rejects" / stray.path)
    assert delta.leftover_files(Lake.at(tmp_path), ["rejects"]) == [path]
    assert lake.read_table(Lake.at(tmp_path), "rejects").num_rows == 3
    assert delta.remove_leftovers(Lake.at(tmp_path), ["rejects"]) == [path]
    assert delta.leftover_files(Lake.at(tmp_path), ["rejects"]) == []
    assert lake.read_table(Lake.at(tmp_path), "rejects").num_rows == 3


def test_files_a_run_killed_during_its_commit_committed_are_removed_by_the_next_commit(tmp_path):
    _commit(tmp_path, [_write(tmp_path, DAY, DAY, "r1", 3, "good")], [DAY], "r1", 0)
    good = delta.current_version(Lake.at(tmp_path), "rejects")
    _commit(tmp_path, [_write(tmp_path, NEXT, NEXT, "killed", 5, "bad")], [NEXT], "killed", 1)   # no runs record after
    fence = delta.fence(Lake.at(tmp_path), "rejects")
    delta.commit_replays(Lake.at(tmp_path), "rejects", [_write(tmp_path, DAY, DAY, "r3", 1, "good3")], [DAY],
                         run_id="r3", fence_at_start=fence, keep_only=good)
    assert sorted(lake.read_table(Lake.at(tmp_path), "rejects").column("raw").to_pylist()) == ["good3"]
