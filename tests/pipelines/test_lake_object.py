"""The :class:`pitwatch.lake.Lake` object: where a lake is, resolved once, handed to every lake function.
It pickles (a Beam worker gets it whole), reads what the module functions read, and a ``file://`` URI
is the same lake as its path."""
from __future__ import annotations

import os
import pickle

import pyarrow as pa

from pitwatch.lake import Lake, Table, delta, lock, parquet, versions
from pitwatch.lake.files import filesystem
from pitwatch.queries import lake_views

NAME = "rejects"


def _rejects(n: int, run: str) -> pa.Table:
    schema = parquet.file_schema(NAME)
    rows = [{f.name: (f"{run}-{i}" if pa.types.is_string(f.type) else i) for f in schema} for i in range(n)]
    return pa.Table.from_pylist(rows, schema=schema)


def _lake(tmp_path) -> str:
    lake = Lake.at(tmp_path / "lake")
    parquet.write_partition(lake, NAME, "2024-01-02", [_rejects(3, "one")], run_id="run-one")
    parquet.write_partition(lake, NAME, "2024-01-03", [_rejects(2, "two")], run_id="run-two")
    return str(lake)


def test_a_lake_pickles_and_compares_by_its_location(tmp_path):
    lake = Lake.at(_lake(tmp_path))
    assert lake.fs is lake.fs                       # resolved once, kept
    again = pickle.loads(pickle.dumps(lake))
    assert again == lake and hash(again) == hash(lake)
    assert again.root == lake.root and type(again.fs) is type(lake.fs)
    assert again.table(NAME).files() == lake.table(NAME).files()
    assert filesystem(lake.address) == (lake.fs, lake.root)
    assert os.fspath(lake) == lake.root == os.path.abspath(tmp_path / "lake")


def test_a_relative_path_is_said_as_given_and_used_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lake = Lake.at("lake")
    assert lake.address == lake.root == str(tmp_path / "lake") and str(lake) == lake.location == "lake"
    assert lake == Lake.at(tmp_path / "lake")


def test_the_table_reads_what_the_functions_read(tmp_path):
    lake = Lake.at(_lake(tmp_path))
    table = lake.table(NAME)
    assert isinstance(table, Table) and table.version == delta.current_version(lake, NAME) == 1
    assert table.files() == delta.files_at(lake, NAME, 1)
    assert table.read().equals(parquet.read_table(lake, NAME))
    assert table.dataset(lake_views.view_columns(NAME)).to_table().equals(
        lake_views.table_dataset(lake, NAME).to_table())
    assert table.fence() == delta.fence(lake, NAME) == 2
    assert lake.table(NAME, 0).files() == delta.files_at(lake, NAME, 0) != table.files()
    assert lake.table(NAME, 0).read().num_rows == 3 and table.read().num_rows == 5
    assert lake.fences([NAME]) == delta.fences(lake, [NAME])
    assert lake.pinned_versions() == versions.pinned_versions(lake)
    assert lake.pinned(NAME).files() == table.files()


def test_a_table_the_lake_lacks(tmp_path):
    lake = Lake.at(_lake(tmp_path))
    events = lake.table("events")
    assert events.version is None and not events.exists
    assert events.files() == [] and events.read().num_rows == 0
    assert events.dataset().to_table().num_rows == 0
    assert events.fence() == 0


def test_a_file_uri_is_the_same_lake_as_its_path(tmp_path):
    path = _lake(tmp_path)
    by_path, by_uri = Lake.at(path), Lake.at("file://" + os.path.abspath(path))
    assert by_uri.is_uri and by_uri.local and by_path.local and not by_path.is_uri
    assert by_uri.root == by_path.root
    assert by_uri.table(NAME).files() == by_path.table(NAME).files()
    assert by_uri.table(NAME).read().equals(by_path.table(NAME).read())
    assert delta.table_uri(by_uri, NAME).startswith("file://")
    assert lock.local_root(by_uri) == lock.local_root(by_path) == by_path.root


def test_an_object_store_is_not_contacted_before_it_is_used():
    lake = Lake.at("s3://no-such-bucket/lake")
    assert lake.is_uri and not lake.local and str(lake) == "s3://no-such-bucket/lake"
