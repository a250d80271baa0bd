"""One dataset builder (:func:`pitwatch.lake.delta.dataset`), one path quoting: a data file whose name
needs URI-encoding in the Delta log (a space, a '%', a '%41' that decoding twice would turn into 'A')
is the same file for every reader — the chained log (:func:`pitwatch.lake.delta.files_at`), the lake's
table reader, the SQL views' dataset, delta-rs — and a replay of its day removes it under its own name."""
from __future__ import annotations

import json
import os
from urllib.parse import unquote

import pyarrow as pa

from pitwatch.lake import Lake, delta, parquet
from pitwatch.queries import lake_views

NAME = "rejects"
DAY = "2024-01-02"
FIRST = "r1 a%41b"            # 'replay-2024-01-02-r1 a%41b.parquet': '%20' and '%2541' in the log
SECOND = "r2 c%d"


def _rejects(n: int, run: str) -> pa.Table:
    schema = parquet.file_schema(NAME)
    rows = [{f.name: (f"{run}-{i}" if pa.types.is_string(f.type) else i) for f in schema} for i in range(n)]
    return pa.Table.from_pylist(rows, schema=schema)


def _log_paths(lake: str) -> list[tuple[str, str]]:
    folder = os.path.join(lake, NAME, "_delta_log")
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                for line in f:
                    action = json.loads(line)
                    out += [(kind, action[kind]["path"]) for kind in ("add", "remove") if kind in action]
    return out


def _readers(lake: str) -> dict[str, list[str]]:
    from deltalake import DeltaTable

    version = delta.current_version(Lake.at(lake), NAME)
    return {
        "files_at": sorted(delta.files_at(Lake.at(lake), NAME, version)),
        "lake_views": sorted(lake_views.table_dataset(Lake.at(lake), NAME).files),
        "dataset": sorted(delta.dataset(Lake.at(lake), NAME, delta.files_at(Lake.at(lake), NAME, version)).files),
        "delta-rs": sorted(DeltaTable(os.path.join(lake, NAME)).file_uris()),
    }


def test_a_name_that_needs_quoting_is_one_file_for_every_reader(tmp_path):
    lake = str(tmp_path / "lake")
    parquet.write_partition(Lake.at(lake), NAME, DAY, [_rejects(3, "one")], run_id=FIRST)
    first = f"{os.path.abspath(lake)}/{NAME}/gaming_day={DAY}/replay-{DAY}-{FIRST}.parquet"
    assert os.path.isfile(first)
    readers = _readers(lake)
    assert all(files == [first] for files in readers.values()), readers
    assert parquet.read_table(Lake.at(lake), NAME).num_rows == 3
    assert lake_views.table_dataset(Lake.at(lake), NAME).to_table().num_rows == 3
    ((kind, logged),) = _log_paths(lake)
    assert kind == "add" and unquote(logged) == f"gaming_day={DAY}/replay-{DAY}-{FIRST}.parquet"


def test_a_replay_removes_the_file_by_its_own_name(tmp_path):
    """The remove delta-rs writes names the file the add named (it was encoded twice: the old file
    stayed in the table beside the new one, its rows read twice)."""
    lake = str(tmp_path / "lake")
    parquet.write_partition(Lake.at(lake), NAME, DAY, [_rejects(3, "one")], run_id=FIRST)
    parquet.write_partition(Lake.at(lake), NAME, DAY, [_rejects(2, "two")], run_id=SECOND)
    second = f"{os.path.abspath(lake)}/{NAME}/gaming_day={DAY}/replay-{DAY}-{SECOND}.parquet"
    readers = _readers(lake)
    assert all(files == [second] for files in readers.values()), readers
    assert parquet.read_table(Lake.at(lake), NAME).num_rows == 2
    table = lake_views.table_dataset(Lake.at(lake), NAME).to_table()
    assert table.num_rows == 2 and {str(d) for d in table.column("gaming_day").to_pylist()} == {DAY}
    logged = _log_paths(lake)
    added = [unquote(p) for kind, p in logged if kind == "add"]
    removed = [unquote(p) for kind, p in logged if kind == "remove"]
    assert removed == [added[0]]


def test_vacuum_names_the_replaced_file_by_its_own_name(tmp_path):
    """vacuum decodes the log's paths once too: the replaced file is its candidate (the file on disk),
    the current one is no candidate and is not missing."""
    from pitwatch.lake import vacuum

    lake = str(tmp_path / "lake")
    parquet.write_partition(Lake.at(lake), NAME, DAY, [_rejects(3, "one")], run_id=FIRST)
    parquet.write_partition(Lake.at(lake), NAME, DAY, [_rejects(2, "two")], run_id=SECOND)
    (table_plan,) = [p for p in vacuum.plan(Lake.at(lake), 0, vacuum.LegalHolds.parse([])) if p.table == NAME]
    first = f"gaming_day={DAY}/replay-{DAY}-{FIRST}.parquet"
    assert [c.path for c in table_plan.remove] == [first]
    assert table_plan.remove[0].file == os.path.join(os.path.abspath(lake), NAME, *first.split("/"))
    assert os.path.isfile(table_plan.remove[0].file) and not table_plan.keep
    assert vacuum.current_files_missing(Lake.at(lake), [NAME]) == []
