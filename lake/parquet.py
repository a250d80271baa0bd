"""The lake's Parquet data files: written by pitwatch, with pyarrow; committed by :mod:`pitwatch.lake.delta`.

The lake is a folder of Delta tables (``docs/lake.md``): each table's data
files in Hive-style ``gaming_day=`` folders plus its transaction log::

    LAKE/events/_delta_log/…                                      the table's log
    LAKE/events/gaming_day=2026-11-28/replay-2026-11-28-<run id>.parquet
    LAKE/rejects/…  LAKE/rounds/…  LAKE/packs/…  LAKE/findings/…  (partitioned the same way)
    LAKE/rules/…  LAKE/runs/…  LAKE/state/…                       (not partitioned)

This module writes the files and reads a version of a table back; it commits
nothing.  A data file goes straight to a name unique to its run
(:func:`write_data_file`, :func:`pitwatch.lake.files.replay_file_name`), with
its SHA-256 computed on the bytes as they are written; a reader sees it only
once a commit adds it, so a killed run leaves a file no commit names, which
the next run removes.  Rows are sorted by a fixed key (:data:`SORT_KEYS`) and
Parquet is written with fixed options (zstd, statistics, no dictionary for the
columns that never repeat), so the same rows give byte-identical files.
The partition key ``gaming_day`` lives in the folder name only
(:func:`file_schema`).

All file access goes through ``pyarrow.fs`` (:mod:`pitwatch.lake.files`), so a
lake may live on a local disk, GCS or S3 (``gs://bucket/lake``).
"""
from __future__ import annotations

import datetime as _dt
import uuid
from typing import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pitwatch.lake import Lake
from pitwatch.lake.files import (
    DATA_FILE_MODE,
    replay_file_name,
    set_file_mode,
)
from pitwatch.schemas.arrow import LAKE_TABLES, NEVER_REPEATED, PARTITIONED, concat_conformed

SORT_KEYS: dict[str, list[str]] = {
    "events": ["table_id", "device_id", "seq", "event_id"],
    "rejects": ["file", "line"],
    "findings": ["table_id", "ts", "rule_id", "finding_id"],
    "rounds": ["table_id", "started", "round_id"],
    "packs": ["table_id", "pack_id"],
    "rules": ["rule_id"],
    "finding_changes": ["table_id", "ts", "rule_id", "finding_id", "change"],
}
# Columns whose values (nearly) never repeat are written without a dictionary, in every
# table that has them: Parquet would build one per column chunk, give up when it outgrows
# its page and fall back to plain pages anyway.  Measured on a day's events: 25 % less
# time to write, half the bytes (16.2 → 8.0 bytes an event).  Every other column, nested
# ones by each of their leaves, keeps its dictionary.
NOT_DICTIONARY_ENCODED = NEVER_REPEATED

# Schema metadata of a piece handed to write_partition already in order (sorted_piece): the
# writer neither reads it to find its first key nor sorts it again (a step that has the rows
# at hand, in parallel, sorts them; the writer of a partition is one process).
PIECE_SORTED = b"pitwatch.sorted"

PIECE_FIRST_KEY = b"pitwatch.first_key"


class LakeError(ValueError):
    """The lake cannot be used (not writable, not a folder …): a user mistake."""


def check_writable(lake: Lake) -> None:
    """Fail early, with a clear reason, if the lake cannot be written."""
    fs, root = lake.fs, lake.root
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.File:
        raise LakeError(f"lake {lake} is a file, not a folder")
    try:
        fs.create_dir(root, recursive=True)
        probe = f"{root}/.pitwatch-write-test-{uuid.uuid4().hex}"
        with fs.open_output_stream(probe) as out:
            out.write(b"ok")
        fs.delete_file(probe)
    except OSError as exc:
        raise LakeError(f"cannot write to lake {lake}: {exc.strerror or exc}") from None


def partition_path(root: str, table: str, gaming_day: _dt.date | str | None) -> str:
    if gaming_day is None:
        return f"{root}/{table}"
    return f"{root}/{table}/gaming_day={gaming_day}"


def sort_table(name: str, table: pa.Table) -> pa.Table:
    keys = SORT_KEYS.get(name)
    if not keys or table.num_rows < 2:
        return table
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys]))


def sorted_piece(name: str, table: pa.Table, presorted: bool = False) -> pa.Table:
    """``table`` in table ``name``'s sort order, marked so; with its first sort key's one value
    (a string) when it holds only one, as the replay's pieces do (one table's events).
    ``presorted``: the caller already put the rows in that order."""
    if not presorted:
        table = sort_table(name, table)
    meta = {PIECE_SORTED: b"1"}
    first = table.column(SORT_KEYS[name][0])
    if (table.num_rows and pa.types.is_string(first.type) and first.null_count == 0
            and first[0].as_py() == first[-1].as_py()):    # sorted: the ends agree only if all do
        meta[PIECE_FIRST_KEY] = first[0].as_py().encode()
    return table.replace_schema_metadata(meta)


def _leaf_paths(name: str, type_: pa.DataType) -> list[str]:
    """The Parquet column paths of a field (a list's items are ``name.list.element``)."""
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return _leaf_paths(f"{name}.list.element", type_.value_type)
    if pa.types.is_struct(type_):
        return [p for i in range(type_.num_fields)
                for p in _leaf_paths(f"{name}.{type_.field(i).name}", type_.field(i).type)]
    return [name]


class _Hashing:
    """A writable stream that passes bytes on and keeps their SHA-256 and count."""

    def __init__(self, out):
        import hashlib

        self.out, self.sha256, self.size, self.closed = out, hashlib.sha256(), 0, False

    def write(self, data) -> int:
        self.sha256.update(data)
        self.size += len(data)
        return self.out.write(data)

    def flush(self):
        pass

    def close(self):
        self.closed = True


def _write_parquet(out, schema: pa.Schema, tables) -> None:
    dictionary = [path for f in schema if f.name not in NOT_DICTIONARY_ENCODED for path in _leaf_paths(f.name, f.type)]
    with pq.ParquetWriter(out, schema, compression="zstd", write_statistics=True, use_dictionary=dictionary) as writer:
        for piece in tables:
            writer.write_table(piece)


def write_atomically(lake: Lake, relative_dir: str, file_name: str, table: pa.Table | Iterable[pa.Table],
                     schema: pa.Schema | None = None, mode: int = DATA_FILE_MODE) -> str:
    """Write ``table`` (or, one after the other, ``schema``'s tables) to ``lake/relative_dir/file_name``
    via a hidden temp file and a move; the file gets ``mode`` (local lakes) before it is moved.
    On an object store straight to its name: an upload is there whole or not at all, and a store's
    move is a copy and a delete.  For files outside the Delta tables (a watcher's own files); table
    data: :func:`write_data_file`."""
    fs, root = lake.fs, lake.root
    folder = f"{root}/{relative_dir}" if relative_dir else root
    fs.create_dir(folder, recursive=True)
    final = f"{folder}/{file_name}"
    tmp = final if not lake.local else f"{folder}/.{file_name}.tmp-{uuid.uuid4().hex}"
    schema = table.schema if isinstance(table, pa.Table) else schema
    with fs.open_output_stream(tmp) as out:
        _write_parquet(out, schema, [table] if isinstance(table, pa.Table) else table)
    if tmp != final:
        set_file_mode(fs, tmp, mode)
        fs.move(tmp, final)
    return final


def write_data_file(lake: Lake, name: str, gaming_day, file_name: str, table: pa.Table | Iterable[pa.Table],
                    schema: pa.Schema | None = None, mode: int = DATA_FILE_MODE):
    """Write a data file of Delta table ``name`` (not committed: :mod:`pitwatch.lake.delta` commits it).

    The file goes straight to its final name, unique to the run (:func:`replay_file_name`): a
    killed run leaves a file no commit names, which no reader sees and the next run removes.
    Its SHA-256 is computed on the bytes as they are written.  Returns a
    :class:`pitwatch.lake.delta.DataFile`.
    """
    from pitwatch.lake.delta import DataFile

    fs, root = lake.fs, lake.root
    relative = f"gaming_day={gaming_day}/{file_name}" if gaming_day is not None else file_name
    folder = f"{root}/{name}" + (f"/gaming_day={gaming_day}" if gaming_day is not None else "")
    fs.create_dir(folder, recursive=True)
    schema = table.schema if isinstance(table, pa.Table) else schema
    rows = 0

    def counted(pieces):
        nonlocal rows
        for piece in pieces:
            rows += piece.num_rows
            yield piece
    with fs.open_output_stream(f"{folder}/{file_name}") as raw:
        out = _Hashing(raw)
        _write_parquet(out, schema, counted([table] if isinstance(table, pa.Table) else table))
    set_file_mode(fs, f"{folder}/{file_name}", mode)
    return DataFile(name, relative, out.size, rows, out.sha256.hexdigest(),
                    None if gaming_day is None else str(gaming_day))


def file_schema(name: str) -> pa.Schema:
    """The columns stored in the files of table ``name``.

    The partition key ``gaming_day`` lives in the folder name only (standard
    Hive layout: pyarrow, Spark and polars refuse a column that is both in the
    file and in the path); readers get it back as a DATE with
    ``hive_partitioning``.
    """
    schema = LAKE_TABLES[name]
    if name in PARTITIONED:
        schema = schema.remove(schema.get_field_index("gaming_day"))
    return schema


def write_partition(lake: Lake, name: str, gaming_day, tables: Iterable, run_id: str | None = None) -> int:
    """Replace partition ``gaming_day`` of table ``name`` with the rows of ``tables`` and commit it
    at once: for tools and tests that build a small lake by hand (a run commits at its end,
    :mod:`pitwatch.pipelines.lake_run`).  Returns rows written."""
    from pitwatch.lake import delta

    run_id = run_id or f"{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    written = write_partition_file(lake, name, gaming_day, tables,
                                   replay_file_name(str(gaming_day), run_id) if gaming_day is not None
                                   else f"{run_id}.parquet")
    delta.commit_replays(lake, name, [written], [str(gaming_day)] if gaming_day is not None else None,
                         run_id=run_id, fence_at_start=delta.fence(lake, name))
    return written.rows


def write_partition_file(lake: Lake, name: str, gaming_day, tables: Iterable, file_name: str,
                         unpack=None, peek=None):
    """Write the rows of ``tables`` as one data file of a partition of table ``name`` (not committed).
    Returns its :class:`pitwatch.lake.delta.DataFile`.

    ``tables`` may be packed (``unpack`` turns an item into a table).  When each
    piece holds one value of the table's first sort key (the replay hands out
    the ``events`` of one table at a time), the pieces are sorted one by one
    and written in key order, so a partition of tens of millions of events is
    never held in memory whole; otherwise they are concatenated and sorted.
    Pieces from :func:`sorted_piece` are not sorted again; ``peek`` reads a
    packed piece's schema metadata without unpacking it.
    """
    unpack = unpack or (lambda t: t)
    peek = peek or (lambda item: unpack(item).schema.metadata)
    schema = file_schema(name)
    items = [t for t in tables if t is not None]
    order = _piece_order(name, items, unpack, peek) if len(items) > 1 else None
    if order is None:
        tables = [unpack(t) for t in items]
        table = concat_conformed(tables, schema)
        if not (len(tables) == 1 and _marked_sorted(tables[0])):
            table = sort_table(name, table)
        return write_data_file(lake, name, gaming_day, file_name, table)

    def pieces():
        for i in order:
            table = unpack(items[i])
            piece = concat_conformed([table], schema)
            if not _marked_sorted(table):
                piece = sort_table(name, piece)
            yield piece
    return write_data_file(lake, name, gaming_day, file_name, pieces(), schema)


def _marked_sorted(table: pa.Table) -> bool:
    return (table.schema.metadata or {}).get(PIECE_SORTED) == b"1"


def _piece_order(name: str, items: list, unpack, peek) -> list[int] | None:
    """Indices of ``items`` in the order of their single first-sort-key value, or None."""
    keys = SORT_KEYS.get(name)
    if not keys:
        return None
    firsts = []
    for i, item in enumerate(items):
        first = (peek(item) or {}).get(PIECE_FIRST_KEY)
        if first is not None:
            firsts.append((first.decode(), i))
            continue
        table = unpack(item)
        if table.num_rows == 0:
            continue
        values = pc.unique(table.column(keys[0]))
        if len(values) != 1 or values[0].as_py() is None:
            return None
        firsts.append((values[0].as_py(), i))
    if len({v for v, _ in firsts}) != len(firsts):
        return None
    return [i for _, i in sorted(firsts)]


def read_table(lake: Lake, name: str, columns: list[str] | None = None, version: int | None = None) -> pa.Table:
    """Read a whole lake table (its current version, or ``version``; some ``columns``); empty if absent."""
    from pitwatch.lake import delta

    if version is None:
        version = delta.current_version(lake, name)
    files = delta.files_at(lake, name, version)
    if not files:
        empty = LAKE_TABLES[name].empty_table()
        return empty.select(columns) if columns else empty
    dataset = delta.dataset(lake, name, files)
    return dataset.to_table(columns=columns)
