"""A run's input, read once: every line decoded and put aside by gaming day, before any replay.

::

    ListInputs ─ FingerprintInputs ─────────────────────────────┐
       └ ReadDecodeChunks ──────────┬ events ─ StageEvents ─────┤
                                    ├ rejects ─ StageRejects ────┤
                                    └ counts ───────────── TotalIngest ─ RecordIngest

The staged files live under ``LAKE/_staging/<run id>/`` (events by gaming day, the rejected
lines), private to the run: no reader looks there, the run removes the folder when it ends and
the next run removes one a killed run left.  Then each gaming day from the first one the run
changed is replayed (:mod:`pipelines.graph`), reading its staged events and the ones the lake
already holds for it (:class:`ReadDaySource`).
"""
from __future__ import annotations

import json

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines import coders, lake
from pipelines.ingest import (
    TAG_COUNTS, TAG_IDS, TAG_REJECTS, TAG_SEQS, IngestOptions, ReadAndDecode, WithoutCyclicGC,
    arrival_table, id_table,
)
from pipelines.inputs import file_fingerprint
from schemas.arrow import EVENTS, REJECTS, concat_conformed, drop_empty_columns

STAGING = "_staging"
BATCH_ROWS = 250_000      # rows of a lake file read at a time
REJECT_ROWS = pa.schema([f for f in REJECTS if f.name != "gaming_day"])   # a rejects file: gaming_day is its folder


def staging_dir(lake_path: str, run_id: str) -> str:
    _fs, root = lake.filesystem(lake_path)
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
    """(table_id, packed events) → one staged file per gaming day of them."""

    def __init__(self, folder: str, lake_path: str):
        self.folder = folder
        self.lake_path = lake_path

    def process(self, kv):
        table_id, packed = kv
        table = coders.unpack(packed)
        fs, _root = lake.filesystem(self.lake_path)
        days = table.column("gaming_day")
        for day in pc.unique(days).to_pylist():
            rows = table.filter(pc.equal(days, pa.scalar(day, days.type)))
            name = _name(table_id, rows.column("file")[0].as_py(), rows.column("line")[0].as_py(), day)
            path = f"{self.folder}/events/gaming_day={day.isoformat()}/{name}.parquet"
            fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            with fs.open_output_stream(path) as out:
                pq.write_table(rows, out, compression="lz4")
            files = pc.unique(rows.column("file")).to_pylist()      # the input files it holds lines of
            yield {"staged": [[day.isoformat(), path, rows.num_rows, files]]}


def _name(table_id: str, file: str, line, day) -> str:
    """A staged file's name from what is in it (its first row's file and line), never random: the
    day's replay reads the staged files in name order, so a rerun reads them in the same order
    and decides every tie alike (byte-identical output)."""
    import hashlib

    return hashlib.sha256(f"{table_id}\0{file}\0{line}\0{day}".encode()).hexdigest()[:32]


class StageRejects(beam.DoFn):
    def __init__(self, folder: str, lake_path: str):
        self.folder = folder
        self.lake_path = lake_path

    def process(self, rows):
        from pipelines.input_damage import facts_day, facts_of_reject

        fs, _root = lake.filesystem(self.lake_path)
        # a damaged file's row goes under the gaming day of its last line read (INPUT_DAMAGED's day,
        # pipelines.input_damage); every other rejected line under the run's day (folder without day)
        facts = facts_of_reject(rows[0]) if len(rows) == 1 else None
        day = facts_day(facts) if facts is not None else None
        folder = f"{self.folder}/rejects" + (f"/gaming_day={day}" if day else "")
        path = f"{folder}/{_name('', rows[0]['file'], rows[0]['line'], None)}.parquet"
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(path) as out:
            pq.write_table(pa.Table.from_pylist(rows, schema=REJECT_ROWS), out)
        yield {"staged_rejects": [[path, len(rows)]]}


class RecordIngest(beam.DoFn):
    def __init__(self, path: str, lake_path: str):
        self.path = path
        self.lake_path = lake_path

    def process(self, totals):
        fs, _root = lake.filesystem(self.lake_path)
        fs.create_dir(self.path.rsplit("/", 1)[0], recursive=True)    # a run with no file staged nothing
        with fs.open_output_stream(self.path) as out:
            out.write(json.dumps(totals, sort_keys=True, default=str).encode())
        yield totals


def build_ingest(p: beam.Pipeline, files: list[str], folder: str, lake_path: str, options: IngestOptions) -> None:
    paths = p | "ListInputs" >> beam.Create(files)
    fingerprints = paths | "FingerprintInputs" >> beam.Map(lambda path: {"inputs": [file_fingerprint(path)]})
    decoded = (
        paths
        | "ReadDecodeChunks" >> beam.ParDo(ReadAndDecode(options.chunk_lines, options.gaming_day,
                                                         options.max_rejects_in_a_row)).with_outputs(
            TAG_REJECTS, TAG_IDS, TAG_SEQS, TAG_COUNTS, main="events")
    )
    staged = decoded.events | "StageEvents" >> beam.ParDo(StageEvents(folder, lake_path))
    rejects = decoded[TAG_REJECTS] | "StageRejects" >> beam.ParDo(StageRejects(folder, lake_path))
    (
        (fingerprints, decoded[TAG_COUNTS], staged, rejects, p | "Nothing" >> beam.Create([{}]))
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

    def __init__(self, lake_path: str, day: str, replaced: frozenset):
        self.lake_path = lake_path
        self.day = day
        self.replaced = replaced

    def process(self, source):
        kind, path, carried = source
        fs, _root = lake.filesystem(self.lake_path)
        with fs.open_input_file(path) as f:
            # a day's events the lake held are one file of tens of millions of rows: read in pieces
            for batch in pq.ParquetFile(f).iter_batches(batch_size=BATCH_ROWS):
                yield from self._piece(kind, pa.Table.from_batches([batch]), carried)

    def _piece(self, kind: str, table: pa.Table, carried: bool):
        import datetime as _dt

        before = table.num_rows
        if carried and self.replaced and table.num_rows:
            table = table.filter(pc.invert(pc.is_in(table.column("file"), pa.array(sorted(self.replaced), pa.string()))))
        counts = {f"carried_{kind}_replaced": before - table.num_rows} if carried else {}
        if kind == "rejects":
            rows = concat_conformed([table], REJECT_ROWS).to_pylist() if table.num_rows else []
            if rows:
                yield beam.pvalue.TaggedOutput(TAG_REJECTS, rows)
            if carried:
                counts["carried_rejects"] = len(rows)
            events = None
        else:
            day = _dt.date.fromisoformat(self.day)
            if "gaming_day" not in table.column_names:
                table = table.append_column("gaming_day", pa.array([day] * table.num_rows, pa.date32()))
            events = concat_conformed([table], EVENTS) if table.num_rows else None
            rows = []
            if events is not None:
                from pipelines.ingest import split_by_key

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


def _split(table: pa.Table, column: str):
    from pipelines.ingest import split_by_key

    if table.num_rows == 0:
        return []
    return split_by_key(table, column)
