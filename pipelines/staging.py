"""A run's input, read once: every line decoded and put aside by gaming day, before any replay.

::

    ListInputs ─ ReadDecodeChunks ──┬ events ─ StageEvents ─────┐
                                    ├ rejects ─ StageRejects ────┤
                                    └ counts ───────────── TotalIngest ─ RecordIngest

The staged files live under ``LAKE/_staging/<run id>/`` (events by gaming day, the rejected
lines), private to the run: no reader looks there, the run removes the folder when it ends and
the next run removes one a killed run left.  Then each gaming day from the first one the run
changed is replayed (:mod:`pitwatch.pipelines.graph`), reading its staged events and the ones the lake
already holds for it (:class:`ReadDaySource`).

``ListInputs`` lists a path per large file and a group per run of small ones
(:func:`pitwatch.pipelines.ingest.input_groups`: their lines are decoded, staged and replayed
together).  A day's rejected lines are never held: ingest stages each chunk's as it decodes
it, and the day's ``rejects`` file is written from the staged and the lake's files, merged
in (file, line) order a batch at a time (:func:`write_rejects`).
"""
from __future__ import annotations

import json
from typing import Iterator

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pitwatch.lake import Lake
from pitwatch.pipelines import coders
from pitwatch.pipelines.ingest import (
    TAG_COUNTS,
    TAG_IDS,
    TAG_REJECTS,
    TAG_SEQS,
    IngestOptions,
    ReadAndDecode,
    WithoutCyclicGC,
    arrival_table,
    id_table,
    input_groups,
)
from pitwatch.schemas.arrow import EVENTS, REJECTS, concat_conformed, drop_empty_columns

STAGING = "_staging"
BATCH_ROWS = 250_000      # rows of a lake file read at a time
REJECT_ROWS = pa.schema([f for f in REJECTS if f.name != "gaming_day"])   # a rejects file: gaming_day is its folder


def staging_dir(lake_path: Lake, run_id: str) -> str:
    root = lake_path.root
    return f"{root}/{STAGING}/{run_id}"


class MergeCounts(beam.CombineFn):
    """Sum numbers, concatenate lists."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, item):
        for k, v in item.items():
            acc[k] = acc.get(k, [] if isinstance(v, list) else 0) + v
        return acc

    def merge_accumulators(self, accs):
        out = {}
        for acc in accs:
            self.add_input(out, acc)
        return out

    def extract_output(self, acc):
        return acc


class StageEvents(WithoutCyclicGC):
    """A chunk's events (every table's) → one staged file per gaming day of them."""

    def __init__(self, folder: str, lake_path: Lake):
        self.folder = folder
        self.lake_path = lake_path

    def process(self, table: pa.Table):
        fs = self.lake_path.fs
        days = table.column("gaming_day")
        for day in pc.unique(days).to_pylist():
            rows = table.filter(pc.equal(days, pa.scalar(day, days.type)))
            name = _name(rows.column("file")[0].as_py(), rows.column("line")[0].as_py(), day)
            path = f"{self.folder}/events/gaming_day={day.isoformat()}/{name}.parquet"
            fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            with fs.open_output_stream(path) as out:
                pq.write_table(rows, out, compression="lz4")
            files = pc.unique(rows.column("file")).to_pylist()      # the input files it holds lines of
            yield {"staged": [[day.isoformat(), path, rows.num_rows, files]]}


def _name(file: str, line, day) -> str:
    """A staged file's name from what is in it (its first row's file and line), never random: the
    day's replay reads the staged files in name order, so a rerun reads them in the same order
    and decides every tie alike (byte-identical output)."""
    import hashlib

    return hashlib.sha256(f"{file}\0{line}\0{day}".encode()).hexdigest()[:32]


class StageRejects(beam.DoFn):
    def __init__(self, folder: str, lake_path: Lake):
        self.folder = folder
        self.lake_path = lake_path

    def process(self, rows):
        from pitwatch.inputs.damage import facts_day, facts_of_reject

        fs = self.lake_path.fs
        # a damaged file's row goes under the gaming day of its last line read (INPUT_DAMAGED's day,
        # pitwatch.inputs.damage); every other rejected line under the run's day (folder without day)
        facts = facts_of_reject(rows[0]) if len(rows) == 1 else None
        day = facts_day(facts) if facts is not None else None
        folder = f"{self.folder}/rejects" + (f"/gaming_day={day}" if day else "")
        path = f"{folder}/{_name(rows[0]['file'], rows[0]['line'], None)}.parquet"
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(path) as out:
            pq.write_table(pa.Table.from_pylist(rows, schema=REJECT_ROWS), out)
        yield {"staged_rejects": [[path, len(rows)]]}


class RecordIngest(beam.DoFn):
    def __init__(self, path: str, lake_path: Lake):
        self.path = path
        self.lake_path = lake_path

    def process(self, totals):
        fs = self.lake_path.fs
        fs.create_dir(self.path.rsplit("/", 1)[0], recursive=True)    # a run with no file staged nothing
        with fs.open_output_stream(self.path) as out:
            out.write(json.dumps(totals, sort_keys=True, default=str).encode())
        yield totals


def build_ingest(p: beam.Pipeline, files: list[str], folder: str, lake_path: Lake, options: IngestOptions,
                 ranges: dict | None = None) -> None:
    """``ranges``: the large files the launcher split (:func:`pitwatch.inputs.ranges.plan_ranges`),
    read a range per element."""
    # a path, a group of small files' paths, or a range of a large file
    paths = p | "ListInputs" >> beam.Create(input_groups(files, ranges))
    # each file's SHA-256 and size come with its counts, from the read that read it (ReadChunks):
    # of exactly the bytes the run read, never a second read of the file
    decoded = (
        paths
        | "ReadDecodeChunks" >> beam.ParDo(ReadAndDecode(options.chunk_lines, options.gaming_day,
                                                         options.max_rejects_in_a_row)).with_outputs(
            TAG_REJECTS, TAG_COUNTS, main="events")
    )
    staged = decoded.events | "StageEvents" >> beam.ParDo(StageEvents(folder, lake_path))
    rejects = decoded[TAG_REJECTS] | "StageRejects" >> beam.ParDo(StageRejects(folder, lake_path))
    (
        (decoded[TAG_COUNTS], staged, rejects, p | "Nothing" >> beam.Create([{}]))
        | "AllCounts" >> beam.Flatten()
        | "TotalIngest" >> beam.CombineGlobally(MergeCounts())
        | "RecordIngest" >> beam.ParDo(RecordIngest(f"{folder}/ingest.json", lake_path))
    )


class ReadDaySource(WithoutCyclicGC):
    """``(kind, path, carried)`` of one gaming day → what the decoder gives for the same rows.

    ``events``: the rows per table (main), their ids and seq arrivals; ``rejects``: the rejected
    lines (to be written again with the day) with their ids and arrivals.  Rows the lake held
    (``carried``) that came from an input file the run reads again (``replaced``) are dropped:
    the file is the unit of correction.
    """

    def __init__(self, lake_path: Lake, day: str, replaced: frozenset):
        self.lake_path = lake_path
        self.day = day
        self.replaced = replaced

    def process(self, source):
        kind, path, carried = source
        fs = self.lake_path.fs
        with fs.open_input_file(path) as f:
            # a day's events the lake held are one file of tens of millions of rows: read in pieces
            # rejects in smaller pieces: a day's rejects file may hold millions of long raw lines
            for batch in pq.ParquetFile(f).iter_batches(batch_size=REJECT_BATCH if kind == "rejects" else BATCH_ROWS):
                yield from self._piece(kind, pa.Table.from_batches([batch]), carried)

    def _piece(self, kind: str, table: pa.Table, carried: bool):
        import datetime as _dt

        before = table.num_rows
        if carried and self.replaced and table.num_rows:
            table = table.filter(pc.invert(pc.is_in(table.column("file"), pa.array(sorted(self.replaced), pa.string()))))
        counts = {f"carried_{kind}_replaced": before - table.num_rows} if carried else {}
        if kind == "rejects":
            # the rows themselves go to the day's rejects file by reference (write_rejects reads them
            # again, streaming): here only what the replay needs of them, never a dict per row
            table = concat_conformed([table], REJECT_ROWS) if table.num_rows else table
            rows = identity_rows(table)
            damaged = table.filter(pc.is_null(table.column("line"))).to_pylist() if table.num_rows else []
            if damaged:         # a damaged file's row: its INPUT_DAMAGED finding (graph.FindDamagedFiles)
                yield beam.pvalue.TaggedOutput(TAG_REJECTS, damaged)
            if carried:
                counts["carried_rejects"] = table.num_rows
            events = None
        else:
            day = _dt.date.fromisoformat(self.day)
            if "gaming_day" not in table.column_names:
                table = table.append_column("gaming_day", pa.array([day] * table.num_rows, pa.date32()))
            events = concat_conformed([table], EVENTS) if table.num_rows else None
            rows = []
            if events is not None:
                from pitwatch.pipelines.ingest import split_by_key

                for table_id, piece in split_by_key(events, "table_id"):
                    yield table_id, coders.pack(drop_empty_columns(piece))
        for bucket, ids in _split(id_table(events, rows), "bucket"):
            yield beam.pvalue.TaggedOutput(TAG_IDS, (bucket, coders.pack(ids.drop_columns(["bucket"]))))
        for device_id, seqs in _split(arrival_table(events, rows), "device_id"):
            yield beam.pvalue.TaggedOutput(TAG_SEQS, (device_id, coders.pack(seqs.drop_columns(["device_id"]))))
        if table.num_rows:
            counts["day_files"] = sorted(set(table.column("file").to_pylist()))
        if counts:
            yield beam.pvalue.TaggedOutput(TAG_COUNTS, counts)


def identity_rows(table: pa.Table) -> list[dict]:
    """The rejected lines that name a device (``device_id``, ``event_id``, ``seq``, ``table_id``):
    what :func:`pitwatch.pipelines.ingest.id_table` and :func:`~pitwatch.pipelines.ingest.arrival_table` need of them."""
    if not table.num_rows:
        return []
    named = table.filter(pc.is_valid(table.column("device_id")))
    return named.select(["device_id", "event_id", "seq", "table_id"]).to_pylist()


REJECTS_FILE = "rejects-file"   # a day's rejects source handed to the writer by reference
REJECT_BATCH = 1 << 16          # rows of rejects read, merged and written at a time (a row group)


def write_rejects(lake_path: Lake, day: str, file_name: str, sources: list[tuple[str, bool]], tables: list,
                  replaced: frozenset):
    """Write the day's ``rejects`` file from its sources, streamed: at no time more than a batch of
    each source in memory, whatever their number of rows (a gzip bomb of rejected lines).

    ``sources``: ``(path, carried)`` of the run's staged rejects files and the lake's files of the
    day (without the rows of the ``replaced`` input files); ``tables``: the copies of events in
    conflict.  Each source is in (file, line) order (a staged file holds one chunk of one input
    file, a lake file was written so), so the rows are merged in that order batch by batch
    (:func:`merge_sorted`): the file is the one a sort of all of them gives.
    """
    from pitwatch.lake.parquet import file_schema, write_data_file

    schema = file_schema("rejects")
    fs = lake_path.fs
    streams = _staged_streams(fs, [p for p, carried in sources if not carried], schema)
    streams += [_file_batches(fs, p, schema, replaced) for p, carried in sources if carried]
    tables = [t for t in (coders.unpack(t) for t in tables) if t is not None and t.num_rows]
    if tables:
        from pitwatch.lake.parquet import sort_table

        streams.append(iter([sort_table("rejects", concat_conformed(tables, schema))]))
    return write_data_file(lake_path, "rejects", day, file_name, _rebatched(merge_sorted(streams)), schema)


def _file_batches(fs, path: str, schema: pa.Schema, replaced: frozenset = frozenset()):
    with fs.open_input_file(path) as f:
        for batch in pq.ParquetFile(f).iter_batches(batch_size=REJECT_BATCH):
            table = concat_conformed([pa.Table.from_batches([batch])], schema)
            if replaced and table.num_rows:
                table = table.filter(pc.invert(pc.is_in(table.column("file"), pa.array(sorted(replaced), pa.string()))))
            if table.num_rows:
                yield table


def _staged_streams(fs, paths: list[str], schema: pa.Schema) -> list:
    """The run's staged rejects files as sorted streams: one stream of them all, one after the other
    in order of their first row, when their (file, line) spans do not overlap (each holds one
    chunk of one input file: they never do); else one stream each."""
    spans = []
    for path in paths:
        with fs.open_input_file(path) as f:
            keys = pq.read_table(f, columns=["file", "line"])
        if keys.num_rows:
            spans.append((_key(keys, 0), _key(keys, keys.num_rows - 1), path))
    spans.sort()
    if all(a[1] < b[0] for a, b in zip(spans, spans[1:])):
        def chained():
            for _first, _last, path in spans:
                yield from _file_batches(fs, path, schema)
        return [chained()]
    return [_file_batches(fs, path, schema) for _first, _last, path in spans]


_LAST = float("inf")     # a damaged file's row (no line) comes after its lines, as a sort puts nulls


def _key(table: pa.Table, i: int) -> tuple:
    line = table.column("line")[i].as_py()
    return table.column("file")[i].as_py() or "", _LAST if line is None else line


def _leading(table: pa.Table, bound: tuple) -> int:
    """How many first rows of ``table`` (in (file, line) order) are at or before ``bound``."""
    file, line = bound
    files, lines = table.column("file"), table.column("line")
    same = pc.equal(files, file)
    if line != _LAST:
        same = pc.and_(same, pc.fill_null(pc.less_equal(lines, line), False))
    return pc.sum(pc.fill_null(pc.or_(pc.less(files, file), same), False)).as_py() or 0


def merge_sorted(streams: list) -> Iterator[pa.Table]:
    """Tables of rows in (file, line) order from ``streams`` of tables each in that order: each step
    takes, from every stream's current table, the rows up to the smallest of their last rows."""
    from pitwatch.lake.parquet import sort_table

    current: list = [None] * len(streams)
    while True:
        for i, stream in enumerate(streams):
            while stream is not None and (current[i] is None or not current[i].num_rows):
                current[i] = next(stream, None)
                if current[i] is None:
                    streams[i] = stream = None
        active = [i for i, t in enumerate(current) if t is not None]
        if not active:
            return
        bound = min(_key(current[i], current[i].num_rows - 1) for i in active)
        parts = []
        for i in active:
            n = _leading(current[i], bound)
            if n:
                parts.append(current[i].slice(0, n))
                current[i] = current[i].slice(n) if n < current[i].num_rows else None
        if parts:
            yield parts[0] if len(parts) == 1 else sort_table("rejects", pa.concat_tables(parts))


def _rebatched(pieces, rows: int = REJECT_BATCH):
    """The same rows in tables of exactly ``rows`` (the last fewer), each one chunk: the file's row
    groups depend on its rows only, not on the pieces they came in (a rerun writes the same bytes)."""
    held, count = [], 0
    for piece in pieces:
        held.append(piece)
        count += piece.num_rows
        while count >= rows:
            table = pa.concat_tables(held)
            yield table.slice(0, rows).combine_chunks()
            rest = table.slice(rows)
            held, count = ([rest] if rest.num_rows else []), rest.num_rows
    if count:
        yield pa.concat_tables(held).combine_chunks()


def _split(table: pa.Table, column: str):
    from pitwatch.pipelines.ingest import split_by_key

    if table.num_rows == 0:
        return []
    return split_by_key(table, column)
