"""A lake on an S3 API (moto's server on 127.0.0.1, tests/object_store.py): the lake's own
functions write and read it as they do a folder (issue 44)."""
from __future__ import annotations

from pitwatch.lake import Lake, parquet
from tests.pipelines.test_lake_object import NAME, _rejects


def test_a_partition_written_to_an_s3_lake_reads_back_as_on_disk(s3_lake, s3_server, tmp_path):
    on_disk, on_s3 = Lake.at(tmp_path / "lake"), Lake.at(s3_lake)
    for lake in (on_disk, on_s3):
        parquet.write_partition(lake, NAME, "2024-01-02", [_rejects(3, "one")], run_id="run-one")
    assert on_s3.is_uri and not on_s3.local
    assert on_s3.table(NAME).read().equals(on_disk.table(NAME).read())
    bucket = s3_lake.split("/")[2]
    assert any(k.startswith("lake/rejects/_delta_log/") for k in s3_server.keys(bucket))
