"""A run killed while writing leaves every partition whole: the old one, readable."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

from pitwatch.lake import Lake
from pitwatch.lake import parquet as lakelib


def _events_like(n: int, tag: str) -> pa.Table:
    schema = lakelib.file_schema("rejects")
    return pa.table({
        "file": pa.array([f"{tag}.jsonl"] * n), "line": pa.array(range(n), pa.int64()),
        "raw": pa.array([f"{tag}-{i:012d}-" + "x" * 40 for i in range(n)]),
        "reason": pa.array(["r"] * n), "event_id": pa.nulls(n, pa.string()), "table_id": pa.nulls(n, pa.string()),
        "device_id": pa.nulls(n, pa.string()), "seq": pa.nulls(n, pa.int64()),
    }, schema=schema)


@pytest.mark.slow     # a real writer process, killed half way
def test_killed_writer_leaves_the_old_partition_whole_and_next_run_cleans_up(tmp_path):
    """A data file is written straight under its final name and is part of the table only once a
    commit names it: killed half way, the file is there but no reader sees it, and the next run's
    clean-up (pitwatch.lake.delta.remove_leftovers) removes it."""
    from pitwatch.lake import delta

    lake = str(tmp_path / "lake")
    lakelib.write_partition(Lake.at(lake), "rejects", "2026-11-28", [_events_like(1000, "old")])
    part = tmp_path / "lake" / "rejects" / "gaming_day=2026-11-28"
    committed = {p.name for p in part.iterdir()}
    writer = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.getcwd()!r})
        from tests.pipelines.test_atomic_writes import _events_like
        from pitwatch.lake import Lake, parquet as lake
        lake.write_partition(Lake.at({lake!r}), "rejects", "2026-11-28", [_events_like(6_000_000, "new")])
    """)
    proc = subprocess.Popen([sys.executable, "-c", writer])
    try:
        deadline = time.time() + 120
        while not {p.name for p in part.iterdir()} - committed:
            assert proc.poll() is None, "the writer finished before it could be killed: make the table larger"
            assert time.time() < deadline
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)   # killed in the middle of writing the partition
    finally:
        proc.wait()
    left = sorted({p.name for p in part.iterdir()} - committed)
    assert len(left) == 1, "the half-written file is there"
    rows = lakelib.read_table(Lake.at(lake), "rejects")
    assert rows.num_rows == 1000 and all(r.startswith("old-") for r in rows.column("raw").to_pylist())
    assert delta.leftover_files(Lake.at(lake), ["rejects"]) == [str(part / left[0])]
    assert delta.remove_leftovers(Lake.at(lake), ["rejects"]) == [str(part / left[0])]
    assert {p.name for p in part.iterdir()} == committed
    assert lakelib.read_table(Lake.at(lake), "rejects").num_rows == 1000
