"""Delta commits on S3 are safe under concurrency (issue 44): two writers racing for one version of one
table on a real S3 API (moto's server, ``s3_lake``) give one commit and one conflict, never a lost commit.

delta-rs 1.x writes commit N with a conditional put (``If-None-Match: *``); pitwatch opens every table with
:func:`pitwatch.lake.delta.storage_options`, which says so and turns off the unsafe rename whatever the
environment holds (docs/lake.md, "Supported stores")."""
from __future__ import annotations

import json
import threading

import pytest

from pitwatch.lake import Lake, delta, delta_log, parquet
from tests.pipelines.test_lake_object import NAME, _rejects


@pytest.mark.parametrize("unsafe_rename_in_the_environment", [False, True], ids=["plain", "unsafe-rename-set"])
def test_two_transactions_racing_on_one_version_of_an_s3_table_one_commits_one_conflicts(
        s3_lake, s3_server, monkeypatch, unsafe_rename_in_the_environment):
    from deltalake import DeltaTable
    from deltalake.exceptions import CommitFailedError
    from deltalake.transaction import AddAction, RemoveAction

    if unsafe_rename_in_the_environment:
        monkeypatch.setenv("AWS_S3_ALLOW_UNSAFE_RENAME", "true")
    lake = Lake.at(s3_lake)
    parquet.write_partition(lake, NAME, "2024-01-02", [_rejects(3, "one")], run_id="run-one")   # version 0
    (existing,) = delta_log.snapshot(lake, NAME).adds
    # two writers, each with its handle on version 0, each replacing the one file with its own
    handles = {w: DeltaTable(delta.table_uri(lake, NAME), storage_options=delta.storage_options(lake))
               for w in ("first", "second")}
    barrier, outcome = threading.Barrier(2), {}

    def commit(writer: str) -> None:
        actions = [RemoveAction(path=existing, data_change=True, deletion_timestamp=1,
                                partition_values={"gaming_day": "2024-01-02"}),
                   AddAction(path=f"gaming_day=2024-01-02/{writer}.parquet", size=1, modification_time=1,
                             data_change=True, partition_values={"gaming_day": "2024-01-02"},
                             stats=json.dumps({"numRecords": 1}))]
        barrier.wait()
        try:
            handles[writer].create_write_transaction(actions, mode="append", schema=parquet.file_schema(NAME),
                                                     partition_by=["gaming_day"])
            outcome[writer] = "committed"
        except CommitFailedError as exc:
            outcome[writer] = f"conflict: {exc}"

    both = [threading.Thread(target=commit, args=(w,)) for w in handles]
    for t in both:
        t.start()
    for t in both:
        t.join()
    won = [w for w, said in outcome.items() if said == "committed"]
    assert len(won) == 1 and len(outcome) == 2, outcome
    (lost,) = set(outcome) - set(won)
    assert outcome[lost].startswith("conflict: "), outcome
    logs = sorted(k for k in s3_server.keys(s3_lake.split("/")[2]) if "/_delta_log/" in k and k.endswith(".json"))
    assert [k.rsplit("/", 1)[1] for k in logs] == ["00000000000000000000.json", "00000000000000000001.json"]
    delta_log.forget()
    assert set(delta_log.snapshot(lake, NAME).adds) == {f"gaming_day=2024-01-02/{won[0]}.parquet"}


def test_a_local_lake_has_no_store_options_and_an_s3_lake_conditional_put(tmp_path):
    assert delta.storage_options(Lake.at(tmp_path / "lake")) is None
    assert delta.storage_options(Lake.at(f"file://{tmp_path}/lake")) is None
    assert delta.storage_options(Lake.at("s3://casino/lake"))["conditional_put"] == "etag"


@pytest.mark.parametrize("where", ["disk", "s3"])
def test_two_appends_read_at_one_version_one_is_committed_at_it_the_other_refused_never_moved_past(
        s3_lake, tmp_path, where):
    """pitwatch puts a plain append (a ``runs`` record: the chain's next link) at the exact version
    its writer read, never past another's: delta-rs would move an append past a concurrent one
    (two blind appends do not conflict), and two ``runs`` records naming one head would fork the
    chain.  On S3 the put is conditional (create only if absent), as the hard link is on disk."""
    lake = Lake.at(s3_lake if where == "s3" else tmp_path / "lake")
    parquet.write_partition(lake, NAME, "2024-01-02", [_rejects(3, "one")], run_id="run-one")   # version 0
    fence = delta.fence(lake, NAME)
    snap = delta_log.snapshot(lake, NAME)
    files = {w: delta.DataFile(NAME, f"gaming_day=2024-01-03/{w}.parquet", 10, 1, "0" * 64, "2024-01-03")
             for w in ("first", "second")}
    assert delta._append(lake, NAME, snap.version + 1, [files["first"]], "run-first", fence, True,
                         delta.now_ms()) == 1
    with pytest.raises(delta.StaleWriter, match="version 1 was committed by another writer"):
        delta._append(lake, NAME, snap.version + 1, [files["second"]], "run-second", fence, True, delta.now_ms())
    delta_log.forget()
    after = delta_log.snapshot(lake, NAME)
    assert after.version == 1 and "gaming_day=2024-01-03/first.parquet" in after.adds
    assert "gaming_day=2024-01-03/second.parquet" not in after.adds
    delta_log.forget()
