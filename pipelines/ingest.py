"""Beam ingest: read files in chunks → decode → find duplicates and conflicts.

No per-event Beam elements on the hot path: an element is a chunk of lines,
then one Arrow table of events per (chunk, table).  Composite transforms are
named verb-noun, like Beam's ``examples/complete/game``.

Duplicates and conflicts (``spec/events.md``): copies of an ``event_id`` that
are equal as parsed JSON are one event delivered twice (the copy with the
smallest file/line is kept, the others counted as duplicates); copies that
differ are a conflict and every copy is rejected.  Copies of one event share
its ``table_id`` unless they conflict, so the per-table step sees every copy
of a well-formed event; copies that differ in ``table_id``, or that collide
with a line rejected for another reason, are found by a small step keyed by
a hash bucket of the ``event_id`` (:class:`FindConflictingIds`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import zlib
from collections import defaultdict
from typing import Iterable, Iterator

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.inputs import iter_line_chunks, iter_parquet_chunks
from schemas.arrow import EVENTS
from schemas.decode import (
    RAW_LIMIT, GamingDayConfig, Reject, content_digest, decode_fields, decode_line, decode_object,
)

TAG_REJECTS = "rejects"
TAG_IDS = "ids"
TAG_COUNTS = "counts"
TAG_SEQS = "seqs"
ID_BUCKETS = 64
REJECTED_KEY = "\x00rejected"   # the 'table' of a copy that failed decoding
DIGEST = "_digest"              # extra column carried until dedup


@dataclasses.dataclass(frozen=True)
class IngestOptions:
    gaming_day: GamingDayConfig = GamingDayConfig()
    chunk_lines: int = 20_000


def reject_row(r: Reject) -> dict:
    return {"file": r.file, "line": r.line, "raw": r.raw, "reason": r.reason,
            "event_id": r.event_id, "table_id": r.table_id, "device_id": r.device_id, "seq": r.seq}


@contextlib.contextmanager
def no_cyclic_gc():
    """Pause Python's cyclic garbage collector around hot loops (decoding a chunk, replaying a table).

    Replaying allocates many small objects (events, state dicts) that are
    freed by reference counting; the cyclic collector would walk the whole
    heap again and again for nothing (measured: a large share of the time).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class ReadChunks(beam.DoFn):
    """path → ``(path, kind, [(line_number, line), ...])`` chunks."""

    def __init__(self, chunk_lines: int):
        self.chunk_lines = chunk_lines

    def process(self, path: str) -> Iterator[tuple]:
        import logging

        kind = "parquet" if path.endswith(".parquet") else "jsonl"
        chunks = (iter_parquet_chunks if kind == "parquet" else iter_line_chunks)(path, self.chunk_lines)
        lines = 0
        for _, items in chunks:
            lines += len(items)
            yield path, kind, items
        logging.getLogger("pitwatch").info("read %s: %s lines", path, f"{lines:,}")


class DecodeChunk(beam.DoFn):
    """A chunk → per-table Arrow tables of events (main), rejects, ids, seqs, counts."""

    def __init__(self, config: GamingDayConfig):
        self.config = config

    def process(self, chunk):
        with no_cyclic_gc():
            yield from self._decode(chunk)

    def _decode(self, chunk):
        import orjson

        path, kind, items = chunk
        by_table: dict[str, list] = defaultdict(list)
        digests: dict[str, list] = defaultdict(list)
        rejects: list[dict] = []
        ids: dict[int, list] = defaultdict(list)
        seqs: dict[str, list] = defaultdict(list)
        config = self.config
        for number, item in items:
            if kind == "parquet":
                obj = item
            else:
                try:
                    obj = orjson.loads(item)
                except orjson.JSONDecodeError:
                    obj = _NOT_JSON
            if obj is _NOT_JSON or type(obj) is not dict:
                out = decode_line(item, path, number, config) if kind != "parquet" else \
                    decode_object(obj, orjson.dumps(obj, default=str).decode(), path, number, config)
            else:
                out = decode_fields(obj, None, path, number, config)
            if isinstance(out, Reject):
                text = item.decode("utf-8", "replace") if kind != "parquet" else orjson.dumps(item, default=str).decode()
                out = dataclasses.replace(out, raw=out.raw or text[:RAW_LIMIT])
                rejects.append(reject_row(out))
                if out.event_id is not None:
                    ids[_bucket(out.event_id)].append((out.event_id, REJECTED_KEY))
                if out.device_id is not None and out.seq is not None:
                    seqs[out.device_id].append((out.seq, out.table_id, out.event_id, None))
                continue
            digest = content_digest(obj)
            table_id, event_id = out["table_id"], out["event_id"]
            by_table[table_id].append(out)
            digests[table_id].append(digest)
            ids[_bucket(event_id)].append((event_id, table_id))
            seqs[out["device_id"]].append((out["seq"], table_id, event_id, out["ts"]))
        for table_id, rows in by_table.items():
            t = rows_to_events_table(rows).append_column(DIGEST, pa.array(digests[table_id], pa.string()))
            yield table_id, t
        if rejects:
            yield beam.pvalue.TaggedOutput(TAG_REJECTS, rejects)
        for bucket, entries in ids.items():
            event_ids, keys = zip(*entries)
            yield beam.pvalue.TaggedOutput(TAG_IDS, (bucket, pa.table(
                {"event_id": pa.array(event_ids, pa.string()), "table_key": pa.array(keys, pa.string())})))
        for device_id, entries in seqs.items():
            yield beam.pvalue.TaggedOutput(TAG_SEQS, (device_id, seq_table(entries)))
        yield beam.pvalue.TaggedOutput(TAG_COUNTS, {"read": len(items), "rejected": len(rejects)})


_NOT_JSON = object()


def rows_to_events_table(rows: list[dict]) -> pa.Table:
    """Accepted lines' fields (``decode_fields``) → an Arrow table of the EVENTS schema.

    Columns start all-null and each row fills only the fields it has (a dozen
    of the schema's ~50), which is what makes this cheap.
    """
    n = len(rows)
    columns: dict[str, list] = {}
    for i, row in enumerate(rows):
        for name, value in row.items():
            col = columns.get(name)
            if col is None:
                col = columns[name] = [None] * n
            col[i] = value
    arrays = []
    for field in EVENTS:
        values = columns.get(field.name)
        if values is None:
            arrays.append(pa.nulls(n, field.type))
        elif field.name == "ts":
            arrays.append(pa.array(values, pa.int64()).cast(field.type))
        else:
            arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=EVENTS)


def _bucket(event_id: str) -> int:
    return zlib.crc32(event_id.encode()) % ID_BUCKETS


SEQS = pa.schema([("seq", pa.int64()), ("table_id", pa.string()), ("event_id", pa.string()), ("ts", pa.int64())])


def seq_table(entries: list[tuple]) -> pa.Table:
    """A device's arrivals in a chunk: (seq, table_id, event_id, ts or None for a rejected line)."""
    columns = list(zip(*entries))
    return pa.table([pa.array(c, f.type) for c, f in zip(columns, SEQS)], schema=SEQS)


def conflicting_ids(tables: Iterable[pa.Table]) -> list[str]:
    """event_ids whose copies sit under more than one table (or collide with a reject)."""
    tables = list(tables)
    if not tables:
        return []
    pairs = pa.concat_tables(tables).group_by(["event_id", "table_key"]).aggregate([])
    counts = pairs.group_by("event_id").aggregate([("table_key", "count")])
    many = counts.filter(pc.greater(counts.column("table_key_count"), 1))
    return sorted(many.column("event_id").to_pylist())


class FindConflictingIds(beam.PTransform):
    """(bucket, Arrow table of event_id, table_key) → event_ids in conflict across tables."""

    def expand(self, ids):
        return (
            ids
            | "GroupIdsByBucket" >> beam.GroupByKey()
            | "ConflictsInBucket" >> beam.FlatMap(lambda kv: conflicting_ids(kv[1]))
        )


@dataclasses.dataclass
class Deduplicated:
    events: pa.Table            # one row per accepted event, DIGEST dropped
    duplicates: int             # exact re-deliveries dropped
    conflicts: list[dict]       # {file, line, event_id, table_id, device_id, seq, reason}


def deduplicate(tables: list[pa.Table], cross_conflicts: frozenset | set) -> Deduplicated:
    """Keep one copy of each event_id; reject every copy of a conflicting one."""
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    event_ids = table.column("event_id")
    if pc.count_distinct(event_ids).as_py() == table.num_rows and not (
            cross_conflicts and pc.any(pc.is_in(event_ids, pa.array(sorted(cross_conflicts), pa.string()))).as_py()):
        return Deduplicated(table.drop_columns([DIGEST]), 0, [])   # the common case: every event_id once
    order = pc.sort_indices(table, sort_keys=[("event_id", "ascending"), ("file", "ascending"), ("line", "ascending")])
    table = table.take(order)
    ids = table.column("event_id").to_pylist()
    digests = table.column(DIGEST).to_pylist()
    keep = [False] * len(ids)
    conflict_rows: list[int] = []
    duplicates = 0
    i = 0
    n = len(ids)
    while i < n:
        j = i + 1
        while j < n and ids[j] == ids[i]:
            j += 1
        group_digests = set(digests[i:j])
        if len(group_digests) > 1 or ids[i] in cross_conflicts:
            conflict_rows.extend(range(i, j))
        else:
            keep[i] = True
            duplicates += j - i - 1
        i = j
    conflicts = []
    if conflict_rows:
        sub = table.take(pa.array(conflict_rows, pa.int64())).select(
            ["file", "line", "event_id", "table_id", "device_id", "seq"]).to_pylist()
        copies = defaultdict(int)
        for row in sub:
            copies[row["event_id"]] += 1
        for row in sub:
            row["reason"] = (
                f"conflicting duplicate: event_id {row['event_id']!r} arrived in "
                f"{'copies' if copies[row['event_id']] > 1 else 'another copy'} with different content; "
                "every copy is rejected"
            )
            conflicts.append(row)
    events = table.filter(pa.array(keep, pa.bool_())).drop_columns([DIGEST])
    return Deduplicated(events, duplicates, conflicts)


class FetchRawLines(beam.DoFn):
    """(file, [conflict rows]) → reject rows with the raw text of those lines read again.

    Conflicts are rare, so their raw text is not carried through the shuffle:
    the file is read once more for just those lines.
    """

    def process(self, kv):
        import orjson

        from schemas.decode import RAW_LIMIT

        path, rows = kv
        wanted = {r["line"]: r for r in rows}
        found: dict[int, str] = {}
        if path.endswith(".parquet"):
            chunks = iter_parquet_chunks(path, 50_000)
            for _, items in chunks:
                for number, obj in items:
                    if number in wanted:
                        found[number] = orjson.dumps(obj, default=str).decode()
        else:
            for _, items in iter_line_chunks(path, 50_000):
                for number, line in items:
                    if number in wanted:
                        found[number] = line.decode("utf-8", "replace")
        out = []
        for number, row in sorted(wanted.items()):
            out.append({**row, "raw": found.get(number, "")[:RAW_LIMIT]})
        yield out
