"""Reading a lake in tests as its readers do: each Delta table at the version the last successful
run committed (``pitwatch.lake.versions``), never a folder's listing (which also holds files
later commits removed)."""
from __future__ import annotations

import re

import pyarrow as pa

from pitwatch.lake import Lake, delta, runs
from pitwatch.lake import parquet as lake
from pitwatch.lake import versions as lake_versions
from pitwatch.schemas.arrow import RUN_STAMPS

_RUN_ID = re.compile(r"-\d{8}T\d{6}Z-[0-9a-f]{8}")


def table(lake_path, name: str, columns=None) -> pa.Table:
    """Table ``name`` as readers see it (``runs``: its latest version, every record).  ``lake_path``,
    here and below: the lake's folder, as the test has it (a string or a path)."""
    at = Lake.at(lake_path)
    if name == "runs":
        return lake.read_table(at, "runs", columns)
    versions = lake_versions.pinned_versions(at) or {}
    if versions.get(name) is None:
        empty = lake.LAKE_TABLES[name].empty_table()
        return empty.select(columns) if columns else empty
    return lake.read_table(at, name, columns, version=versions[name])


# Columns that name the runs of one lake (issue 42: the runs that first wrote and last changed a finding):
# two lakes written by different runs differ there and nowhere else, so a comparison across lakes leaves
# them out; one lake compared with itself (a rerun) keeps them (``exclude=()``).
RUN_NAMED = {"findings": RUN_STAMPS}


def rows(lake_path, name: str, exclude=(), with_runs: bool = False) -> list[tuple]:
    """Every row of table ``name`` (whole rows, but the ``exclude`` columns and, unless ``with_runs``,
    the columns that name the lake's own runs: :data:`RUN_NAMED`), sorted."""
    exclude = (*exclude, *(() if with_runs else RUN_NAMED.get(name, ())))
    t = table(lake_path, name)
    t = t.select([c for c in t.column_names if c not in exclude])
    return sorted(zip(*(column.to_pylist() for column in t.columns)))   # by column: 2x faster than by row


def dicts(lake_path, name: str, with_runs: bool = True) -> list[dict]:
    """Every row of table ``name`` as a dict; without the columns naming the lake's runs (:data:`RUN_NAMED`)
    unless ``with_runs``: to compare with another lake's."""
    t = table(lake_path, name)
    if not with_runs:
        t = t.drop_columns([c for c in RUN_NAMED.get(name, ()) if c in t.column_names])
    return t.to_pylist()


def run_records(lake_path) -> list[dict]:
    """The latest record of every run, oldest first."""
    return runs.latest_records(lake.read_table(Lake.at(lake_path), "runs"))


def last_run(lake_path) -> dict:
    return run_records(lake_path)[-1]


def data_files(lake_path, across_lakes: bool = False) -> dict[str, bytes]:
    """``{table/partition/file name without the run id: bytes}`` of every data file the pinned
    versions hold: a rerun over the same input must give the same bytes (the file names carry
    the writing run's id).  The state's manifests are left out: each names the run that wrote it.
    ``across_lakes`` (two lakes written by different runs): a file of a table with columns that name
    its lake's runs (:data:`RUN_NAMED`) is given as its rows without those columns, not its bytes."""
    at = Lake.at(lake_path)
    versions = lake_versions.pinned_versions(at) or {}
    root = at.root
    out = {}
    for name, version in sorted(versions.items()):
        for path in delta.files_at(at, name, version):
            if path.endswith("-manifest.parquet"):
                continue
            key = _RUN_ID.sub("", path[len(root) + 1:])
            if across_lakes and name in RUN_NAMED:
                import pyarrow.parquet as pq

                t = pq.read_table(path, filesystem=at.fs)
                out[key] = repr(t.drop_columns([c for c in RUN_NAMED[name] if c in t.column_names]).to_pylist()).encode()
                continue
            with at.fs.open_input_stream(path) as f:     # a folder's or an object store's (s3://)
                out[key] = f.read()
    return out


def connection(lake_path):
    """A DuckDB connection with every table of the lake as readers see it, by its name
    (``runs``: the latest record of every run)."""
    import duckdb

    con = duckdb.connect()
    for name in lake.LAKE_TABLES:
        t = pa.Table.from_pylist(run_records(lake_path), schema=lake.LAKE_TABLES["runs"]) if name == "runs" \
            else table(lake_path, name)
        con.register(name, t)
    return con
