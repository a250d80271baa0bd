"""Beam ingest: read files in chunks → decode → find duplicates and conflicts.

No per-event Beam elements on the hot path: an element is a chunk of lines,
then one Arrow table of events per (chunk, table), packed as compressed
Arrow IPC bytes (:mod:`pitwatch.pipelines.coders`).  A chunk is decoded on columns
(:mod:`pitwatch.schemas.columnar`); only the lines the columnar pass is not sure of go
through the per-line decoder.  Composite transforms are named verb-noun,
like Beam's ``examples/complete/game``.

Duplicates and conflicts (``spec/events.md``, version 2; the rule is the
driver's, :mod:`pitwatch.engine.driver`): an event is identified by (``device_id``,
``event_id``) — :func:`identity_keys`.  Copies of one pair that are equal as
parsed JSON are one event delivered twice (the copy with the smallest
file/line is kept, the others counted as duplicates); copies that differ are
a conflict and every copy is rejected.  The same ``event_id`` from two
devices is two events.  Copies of one event share its ``table_id`` unless
they conflict, so the per-table step sees every copy of a well-formed event;
copies that differ in ``table_id``, or that collide with a line rejected for
another reason (whose ``device_id`` could be read: a line of no known device
identifies no event), are found by a small step keyed by the ``event_id``'s
last character (:class:`FindConflictingIds`).
"""
from __future__ import annotations

import dataclasses
import gc
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Generator, Iterable, Iterator

import apache_beam as beam
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pitwatch.engine.driver import conflict_reason
from pitwatch.inputs.files import (
    Damage,
    JoinedLines,
    LineBlock,
    iter_jsonl_chunks,
    iter_line_chunks,
    iter_parquet_chunks,
)
from pitwatch.inputs.ranges import FileRange
from pitwatch.lake import Lake
from pitwatch.pipelines import progress
from pitwatch.pipelines.coders import unpack
from pitwatch.schemas.arrow import EVENTS, concat_conformed, drop_empty_columns
from pitwatch.schemas.columnar import decode_block, decode_joined
from pitwatch.schemas.decode import (
    GamingDayConfig,
    Reject,
    content_digest,
    decode_fields,
    decode_line,
    decode_object,
    internal_error,
)
from pitwatch.schemas.limits import line_problem
from pitwatch.schemas.values import RAW_LIMIT, parquet_row_text
from pitwatch.wording import plural

if TYPE_CHECKING:
    from pitwatch.inputs.stored import TextBlocks

TAG_REJECTS = "rejects"
TAG_IDS = "ids"
TAG_COUNTS = "counts"
TAG_SEQS = "seqs"
ID_BUCKET_CHARS = 1     # event_ids are grouped by their last character(s) to find conflicts
REJECTED_KEY = "\x00rejected"   # the 'table' of a copy that failed decoding


MAX_REJECTS_IN_A_ROW = 10_000   # a file whose last lines in a row were all rejected is read no further


@dataclasses.dataclass(frozen=True)
class IngestOptions:
    gaming_day: GamingDayConfig = GamingDayConfig()
    chunk_lines: int = 20_000
    max_rejects_in_a_row: int = MAX_REJECTS_IN_A_ROW     # 0: no limit


def reject_row(r: Reject) -> dict:
    return {"file": r.file, "line": r.line, "raw": r.raw, "reason": r.reason,
            "event_id": r.event_id, "table_id": r.table_id, "device_id": r.device_id, "seq": r.seq}


class WithoutCyclicGC(beam.DoFn):
    """Base of the heavy steps: the cyclic collector is off for a whole bundle.

    Pausing it only around the hot loops is not enough: once turned back on,
    its first automatic passes walk the table that was just built (and,
    every so often, the whole heap) — measured at 2M events, 15-20 % of the
    worker processes' CPU.  Replaying a table leaves no cyclic garbage
    (measured: 0 unreachable objects after a 94k-event table), so memory
    does not grow in between.  At the end of the bundle the collector is
    only turned back on, not run: a full collection there walked the
    worker's whole heap (~0.1 s, in each of six stages, while the stage
    waited) to free a few hundred objects Beam's own code left (measured:
    114 to 548), which its automatic passes free as well.  Fused steps
    share the pause: only the one that found the collector on turns it
    back on.
    """

    def start_bundle(self):
        self._gc_was_enabled = gc.isenabled()
        gc.disable()

    def finish_bundle(self):
        if getattr(self, "_gc_was_enabled", False):
            gc.enable()


class ReadChunks(beam.DoFn):
    """path → ``(path, kind, items)`` chunks: ``items`` is ``[(line_number, line or row), ...]`` or,
    for plain JSONL lines, a :class:`pitwatch.inputs.files.LineBlock` (no object per line); a damaged
    file's last chunk is ``(path, "damage", Damage)``; then, the read ended, ``(path, "read",
    fingerprint)``: the SHA-256 and count of the stored bytes this read read, computed as it read
    them (up to the damage, for a damaged file): what the run records for the file.

    The file is read once, up to the size it had when opened; one that changed while it was read
    ends with that damage (:func:`pitwatch.inputs.stored.changed_while_read`).  ``digest``: the
    last file's :class:`pitwatch.inputs.stored.ReadDigest` (a read stopped early says where).
    """

    def __init__(self, chunk_lines: int):
        self.chunk_lines = chunk_lines
        self._source: TextBlocks | dict | None = None     # the last file's TextBlocks, or its Parquet read record

    def fingerprint(self, stop: int | None = None) -> dict:
        """The digest of the bytes the last file's read read, up to ``stop`` (where it stopped)."""
        source = self._source
        if isinstance(source, dict):        # Parquet: filled in when its read ended
            digest = source.get("digest")
            return digest.fingerprint(stop) if digest is not None else source["fingerprint"]
        assert source is not None       # called once a file was read
        return source.digest.fingerprint(stop)

    def with_digest(self, damage: Damage) -> Damage:
        """``damage`` with the SHA-256 of the stored bytes before it, as this read hashed them."""
        fingerprint = self.fingerprint(damage.offset)
        if fingerprint.get("sha256") is None or fingerprint["bytes"] != damage.offset:
            return damage
        return dataclasses.replace(damage, sha256=fingerprint["sha256"])

    def process(self, path: str) -> Generator[tuple, None, None]:

        from pitwatch.inputs.stored import TextBlocks

        chunks: Generator[tuple[int, list[tuple[int, dict]] | Damage] | LineBlock | list[tuple[int, bytes]] | Damage,
                          None, None]
        if path.endswith(".parquet"):
            read: dict = {}
            self._source = read
            kind, chunks = "parquet", iter_parquet_chunks(path, self.chunk_lines, read)
        else:
            self._source = source = TextBlocks(path, fixed=True)
            kind, chunks = "jsonl", iter_jsonl_chunks(path, self.chunk_lines, source=source)
        lines = 0
        damage = None
        try:
            for chunk in chunks:
                items = chunk[1] if isinstance(chunk, tuple) else chunk     # a Parquet chunk is numbered
                if isinstance(items, Damage):
                    progress.step_log().warning("%s: %s", path, items.reason)
                    if kind != "parquet":       # the digest of the bytes before it, as this read hashed them
                        items = self.with_digest(items)
                    damage = items
                    yield path, "damage", items
                    continue
                lines += len(items)
                yield path, kind, items
        finally:
            chunks.close()      # a read stopped early (the rejects-in-a-row guard) ends here
        yield path, "read", self.fingerprint(None if damage is None else damage.offset)
        progress.step_log().debug("read %s: %s", path, plural(lines, "line"))   # --verbose


class ReadAndDecode(WithoutCyclicGC):
    """path → what :class:`DecodeChunk` gives for each chunk :class:`ReadChunks` reads of it, the
    read stopped once ``max_rejects`` lines in a row were rejected (0: never).

    A file of nothing but rejected lines (a gzip bomb of ``{}``, a binary file named ``.jsonl``)
    costs a reject row per line: after ``max_rejects`` in a row the lines after the last of them
    are not read, and the file ends with a :class:`Damage` saying so (its rejects row and
    ``INPUT_DAMAGED`` finding, :mod:`pitwatch.inputs.damage`), at the stored byte
    :func:`pitwatch.inputs.stored.line_end_offset` gives.  Blank lines, skipped and not counted,
    do not break a row; an accepted line does.  The chunk in which the row reaches the limit
    is decoded again up to that line, so what is kept does not depend on ``--chunk-lines``.
    """

    def __init__(self, chunk_lines: int, config: GamingDayConfig, max_rejects: int = MAX_REJECTS_IN_A_ROW):
        self.chunk_lines, self.config, self.max_rejects = chunk_lines, config, max_rejects

    def process(self, element):
        """``element``: a path, a list of small files' paths (:func:`input_groups`), whose plain
        lines are decoded together (:class:`pitwatch.inputs.files.JoinedLines`): a file of one line must
        not cost a columnar pass, a staged file and a replay read of its own; or a range of a large
        file (:class:`pitwatch.inputs.ranges.FileRange`)."""
        if isinstance(element, str):
            yield from self._file(element)
            return
        if isinstance(element, FileRange):
            yield from self._range(element)
            return

        decode = DecodeChunk(self.config)
        joined: list[tuple[str, LineBlock]] = []
        lines = size = 0
        for path in element:
            block, fingerprint = self._whole_block(path)
            if block is not None:   # this read is the one the file's lines come from: its digest
                yield beam.pvalue.TaggedOutput(TAG_COUNTS, {"inputs": [fingerprint]})
            if block is False:      # nothing to read (an empty file)
                continue
            if block is None:       # not one block of plain lines: read as a file of its own, after the
                if joined:          # files before it (their rejects staged in (file, line) order)
                    yield from decode.process((joined[0][0], "jsonl", JoinedLines(joined)))
                    joined, lines, size = [], 0, 0
                yield from self._file(path)
                continue
            progress.step_log().debug("read %s: %s", path, plural(block.count, "line"))   # --verbose
            joined.append((path, block))
            lines += block.count
            size += len(block.data)
            if lines >= self.chunk_lines or size >= JOINED_BYTES:
                yield from decode.process((joined[0][0], "jsonl", JoinedLines(joined)))
                joined, lines, size = [], 0, 0
        if joined:
            yield from decode.process((joined[0][0], "jsonl", JoinedLines(joined)))

    def _whole_block(self, path: str):
        """``(block, fingerprint)``: the file's lines as one :class:`LineBlock` when they are that
        (plain lines, undamaged, fewer than ``max_rejects``: they cannot all be rejected in a row),
        False for a file with no line, else None (the file is read on its own: that read's digest
        is the one recorded); ``fingerprint`` the digest of the bytes this read read."""
        from pitwatch.inputs.stored import TextBlocks

        if path.endswith(".parquet"):
            return None, None
        source = TextBlocks(path, fixed=True)
        chunks = iter_jsonl_chunks(path, self.chunk_lines, source=source)
        try:
            first = next(chunks, None)
            if first is None:
                return False, source.digest.fingerprint()
            if not isinstance(first, LineBlock) or next(chunks, None) is not None:
                return None, None
            if self.max_rejects and first.count >= self.max_rejects:
                return None, None
            return first, source.digest.fingerprint()
        finally:
            chunks.close()

    def _range(self, r: FileRange):
        """A range of a large file, decoded as a whole read decodes its lines; then its report for
        :func:`pitwatch.inputs.ranges.whole_reads_needed` (``split_reads``): whether its bytes were
        the launcher's, and its rows of rejected lines at its start and end.  A row reaching
        ``max_rejects`` within the range stops it (the file is read again whole)."""
        from pitwatch.inputs.ranges import RangeBlocks, read_range

        if r.fingerprint is not None:           # the launcher's read of the whole file: its digest
            yield beam.pvalue.TaggedOutput(TAG_COUNTS, {"inputs": [r.fingerprint]})
        data = read_range(r)
        if data is None:
            yield beam.pvalue.TaggedOutput(TAG_COUNTS, {"split_reads": [[r.path, r.index, r.count, "changed",
                                                                          0, 0, False]]})
            return
        decode = DecodeChunk(self.config)
        leading = trailing = 0
        accepted = False
        status = "read"
        for items in iter_jsonl_chunks(r.path, self.chunk_lines, source=RangeBlocks(data), first_line=r.first_line):
            outputs = list(decode.process((r.path, "jsonl", items)))
            yield from outputs
            rejected = _rejected_lines(outputs)
            if not rejected:
                accepted, trailing = True, 0
                continue
            for number in _line_numbers(items):
                if number not in rejected:
                    accepted, trailing = True, 0
                    continue
                trailing += 1
                leading += not accepted
                if self.max_rejects and trailing >= self.max_rejects:
                    status = "tripped"
                    break
            if status != "read":
                break
        progress.step_log().debug("read %s: range %d of %d (bytes %d to %d)", r.path, r.index + 1, r.count,
                                  r.start, r.end)
        yield beam.pvalue.TaggedOutput(TAG_COUNTS, {"split_reads": [[r.path, r.index, r.count, status, leading,
                                                                      trailing, not accepted]]})

    def _file(self, path: str):
        decode = DecodeChunk(self.config)
        reader = ReadChunks(self.chunk_lines)
        chunks = reader.process(path)
        streak = 0
        try:
            for chunk in chunks:
                _path, kind, items = chunk
                outputs = list(decode.process(chunk))
                if kind in ("damage", "read") or not self.max_rejects:
                    yield from outputs
                    continue
                rejected = _rejected_lines(outputs)
                numbers = _line_numbers(items)
                stop = None
                for i, number in enumerate(numbers):
                    streak = streak + 1 if number in rejected else 0
                    if streak >= self.max_rejects:
                        stop = i
                        break
                if stop is None:
                    yield from outputs
                    continue
                if stop + 1 < len(numbers):     # decoded again up to the line where the read stops
                    outputs = list(decode.process((path, kind, [items[k] for k in range(stop + 1)])))
                else:                           # the row ends the chunk: is there more to read?
                    after = next(chunks, None)
                    if after is None or after[1] in ("damage", "read"):
                        yield from outputs      # the file ends there (or at its own damage): read whole
                        if after is not None:
                            yield from decode.process(after)
                            for rest in chunks:     # its digest
                                yield from decode.process(rest)
                        return
                yield from outputs
                damage = rejects_in_a_row(path, numbers[stop], self.max_rejects)
                damage = reader.with_digest(damage)
                yield from decode.process((path, "damage", damage))
                chunks.close()          # the read ends here: its digest is of the bytes up to the stop
                yield from decode.process((path, "read", reader.fingerprint(damage.offset)))
                return
        finally:
            chunks.close()


def _rejected_lines(outputs: list) -> set:
    return {r["line"] for out in outputs if getattr(out, "tag", None) == TAG_REJECTS for r in out.value}


def _line_numbers(items) -> list[int]:
    return items.line_numbers().tolist() if isinstance(items, LineBlock) else [n for n, _ in items]


SMALL_FILE = 256 << 10      # stored bytes: a file smaller is read with others (ReadAndDecode)
GROUP_BYTES = 4 << 20       # stored bytes of a group of small files
GROUP_FILES = 1000
JOINED_BYTES = 4 << 20      # lines of small files decoded in one pass: at most a chunk's lines, about these bytes


def input_groups(files: list[str], ranges: dict | None = None) -> list:
    """The elements ingest reads: each file of ``SMALL_FILE`` bytes or more (or remote) alone, the
    others in groups of consecutive files (``GROUP_BYTES``, at most ``GROUP_FILES`` files), so that
    a night of many small files costs a few decodes, staged files and replay reads, not one each;
    a file the launcher split (``ranges``: path → its :class:`pitwatch.inputs.ranges.FileRange` s)
    as its ranges.  In the order of ``files`` (sorted): a group's rejected lines are in (file, line) order."""
    import os

    out: list = []
    group: list[str] = []
    size = 0
    ranges = ranges or {}
    for path in files:
        if path in ranges:
            if group:
                out.append(group)
                group, size = [], 0
            out.extend(ranges[path])
            continue
        try:
            stored = os.path.getsize(path) if "://" not in path else SMALL_FILE
        except OSError:
            stored = SMALL_FILE
        if stored >= SMALL_FILE:
            if group:
                out.append(group)
                group, size = [], 0
            out.append(path)
            continue
        group.append(path)
        size += stored
        if size >= GROUP_BYTES or len(group) >= GROUP_FILES:
            out.append(group)
            group, size = [], 0
    if group:
        out.append(group)
    return out


def rejects_in_a_row(path: str, line: int, count: int) -> Damage:
    """The :class:`Damage` of a file read no further after ``count`` rejected lines in a row ending at ``line``."""
    from pitwatch.inputs.stored import line_end_offset, stored_size

    offset = line_end_offset(path, line)
    what = (f"its last {count:,} lines in a row were all rejected (to line {line:,}; "
            f"--max-rejects-in-a-row {count:,}): it is read no further")
    return Damage(path, offset, max(stored_size(path) - offset, 0), what, last_line=line)


class DecodeChunk(WithoutCyclicGC):
    """A chunk → its events (main: one Arrow table, every table's rows), rejects, counts.

    The events go to :class:`pitwatch.pipelines.staging.StageEvents`, the next step of the same
    worker (Beam fuses the two: nothing crosses a process), which stages them by gaming day.  Until
    issue 40 they came split by table and packed (compressed Arrow IPC), unpacked at once by the
    stager, and one staged file a table, a chunk and a day (2,034 small files for a day's one file
    of 1.45M events); and this step built the events' ids and seq arrivals too, which nobody read
    (each day's replay takes them from its staged files: ``ReadDaySource``).  Without both,
    ingest's CPU on 321k lines of one file went 3.0 → 1.3 s (``bench/README.md``).
    """

    def __init__(self, config: GamingDayConfig):
        self.config = config

    def process(self, chunk):
        path, kind, items = chunk
        if kind == "damage":
            yield from damage_outputs(path, items, self.config)
            return
        if kind == "read":          # the read of a file ended: the digest of the bytes it read
            yield beam.pvalue.TaggedOutput(TAG_COUNTS, {"inputs": [items]})
            return
        config = self.config
        fast = None
        try:
            if isinstance(items, JoinedLines):
                fast = decode_joined(items.data, len(items), items.longest, items.files(), items.line_numbers(), config)
            elif isinstance(items, LineBlock):
                fast = decode_joined(items.data, len(items), items.longest, path, items.line_numbers(), config)
            elif kind == "jsonl":
                fast = decode_block([item for _, item in items], path, [number for number, _ in items], config)
        except Exception as exc:    # noqa: BLE001 - the fast path is only a filter: decode line by line

            progress.step_log().error("internal error in the columnar decoder on %s: %s: %s; "
                                                "decoding its %d lines one by one", path, type(exc).__name__,
                                                exc, len(items), exc_info=exc)
            fast = None
        fast_events, slow = fast if fast is not None else (None, range(len(items)))
        rows: list[dict] = []
        rejects: list[dict] = []
        joined = isinstance(items, JoinedLines)
        for i in slow:
            number, item = items[i]
            out = decode_one(kind, item, items.path_of(i) if joined else path, number, config)
            if isinstance(out, Reject):
                if not out.raw:
                    try:
                        text = item.decode("utf-8", "replace") if kind != "parquet" else parquet_row_text(item)
                    except Exception:   # noqa: BLE001 - the raw text is only shown
                        text = ""
                    out = dataclasses.replace(out, raw=text[:RAW_LIMIT])
                rejects.append(reject_row(out))
            else:
                rows.append(out)
        parts = [t for t in (fast_events, rows_to_events_table(rows) if rows else None) if t is not None and t.num_rows]
        events = (pa.concat_tables(parts) if len(parts) > 1 else parts[0]) if parts else None
        if events is not None:
            yield drop_empty_columns(events)
        if rejects:
            yield beam.pvalue.TaggedOutput(TAG_REJECTS, rejects)
        yield beam.pvalue.TaggedOutput(TAG_COUNTS, {"read": len(items), "rejected": len(rejects)})


def damage_outputs(path: str, damage: Damage, config: GamingDayConfig) -> list:
    """A damaged file's one reject row naming it (no line; ``raw``: its damage facts, which make its
    ``INPUT_DAMAGED`` finding: :mod:`pitwatch.inputs.damage`) and its counts, apart from lines."""
    from pitwatch.inputs.damage import damage_facts, facts_raw

    raw = facts_raw(damage_facts(damage, config))
    return [beam.pvalue.TaggedOutput(TAG_REJECTS, [reject_row(Reject(path, None, raw, damage.reason))]),
            beam.pvalue.TaggedOutput(TAG_COUNTS, {"damaged_files": 1, "bytes_not_read": damage.bytes_not_read,
                                                  "damage": [damage.to_row()]})]


def decode_one(kind: str, item, path: str, number: int, config: GamingDayConfig):
    """One line (bytes) or Parquet row (dict) → its fields (accepted) or a Reject; never raises."""
    try:
        if kind == "parquet":
            if type(item) is not dict:
                return decode_object(item, parquet_row_text(item), path, number, config)
            return decode_fields(item, None, path, number, config)
        if line_problem(item):
            return decode_line(item, path, number, config)
        try:
            obj = orjson.loads(item)
        except orjson.JSONDecodeError:
            obj = _NOT_JSON
        if obj is _NOT_JSON or type(obj) is not dict:
            return decode_line(item, path, number, config)
        return decode_fields(obj, None, path, number, config)
    except Exception as exc:    # noqa: BLE001 - one line never stops a run
        return internal_error(exc, item if kind != "parquet" else None, path, number)


def split_by_key(table: pa.Table, column: str) -> Iterator[tuple[str, pa.Table]]:
    """``(key, rows)`` for each value of ``column``, in key order (nulls left out)."""
    if table.num_rows == 0:
        return
    col = table.column(column)
    keys = [k for k in pc.unique(col).to_pylist() if k is not None]
    if len(keys) == 1 and col.null_count == 0:
        yield keys[0], table
        return
    for key in sorted(keys):
        yield key, table.filter(pc.equal(col, key))


IDS = pa.schema([("event_id", pa.string()), ("table_key", pa.string()), ("bucket", pa.string())])
KEY_SEPARATOR = "\x00"   # device_id NUL event_id: neither holds a NUL (the contract's strings are JSON text)


def identity_keys(device_ids, event_ids):
    """What identifies an event (:func:`pitwatch.engine.driver.event_key`), as one string column:
    ``device_id`` NUL ``event_id``."""
    return pc.binary_join_element_wise(device_ids, event_ids, KEY_SEPARATOR)


def identity_key(device_id: str, event_id: str) -> str:
    return f"{device_id}{KEY_SEPARATOR}{event_id}"


def id_table(events: pa.Table | None, rejects: list[dict]) -> pa.Table:
    """(event_id = the identity key, table_key, bucket) of every copy: the table, or REJECTED_KEY
    for a rejected line whose device_id and event_id could be read.

    The bucket (the key's last character, computed on the column) only
    spreads the conflict search over several groups; any split is correct.
    """
    ids = [identity_key(r["device_id"], r["event_id"]) for r in rejects
           if r["event_id"] is not None and r["device_id"] is not None]
    parts = [pa.table({"event_id": pa.array(ids, pa.string()),
                       "table_key": pa.array([REJECTED_KEY] * len(ids), pa.string())})]
    if events is not None:
        parts.append(pa.table({"event_id": identity_keys(events.column("device_id"), events.column("event_id")),
                               "table_key": events.column("table_id")}))
    t = pa.concat_tables(parts)
    bucket = pc.utf8_slice_codeunits(t.column("event_id"), -ID_BUCKET_CHARS)
    return t.append_column("bucket", bucket)


SEQS = pa.schema([("seq", pa.int64()), ("table_id", pa.string()), ("event_id", pa.string()), ("ts", pa.int64())])


def arrival_table(events: pa.Table | None, rejects: list[dict]) -> pa.Table:
    """Every line whose device_id and seq could be read: (seq, table_id, event_id, ts or null, ts_offset,
    device_id)."""
    readable = [r for r in rejects if r["device_id"] is not None and r["seq"] is not None]
    parts = [pa.table({
        "seq": pa.array([r["seq"] for r in readable], pa.int64()),
        "table_id": pa.array([r["table_id"] for r in readable], pa.string()),
        "event_id": pa.array([r["event_id"] for r in readable], pa.string()),
        "ts": pa.nulls(len(readable), pa.int64()), "ts_offset": pa.nulls(len(readable), pa.int64()),
        "device_id": pa.array([r["device_id"] for r in readable], pa.string())})]
    if events is not None:
        parts.append(pa.table({
            "seq": events.column("seq"), "table_id": events.column("table_id"),
            "event_id": events.column("event_id"), "ts": events.column("ts").cast(pa.int64()),
            "ts_offset": events.column("ts_offset") if "ts_offset" in events.column_names
            else pa.nulls(events.num_rows, pa.int64()),
            "device_id": events.column("device_id")}))
    return pa.concat_tables(parts)


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


def conflicting_ids(tables: Iterable[pa.Table]) -> list[str]:
    """Identity keys (:func:`identity_key`) whose copies sit under more than one table (or collide
    with a reject)."""
    tables = [unpack(t) for t in tables]
    if not tables:
        return []
    ids = pa.concat_tables(tables)
    if pc.count_distinct(ids.column("event_id")).as_py() == ids.num_rows:
        return []   # every event_id once (the common case): the grouping costs twice as much
    counts = ids.group_by("event_id").aggregate([("table_key", "count_distinct")])
    many = counts.filter(pc.greater(counts.column("table_key_count_distinct"), 1))
    return sorted(many.column("event_id").to_pylist())


class FindConflictingIds(beam.PTransform):
    """(bucket, Arrow table of identity key, table_key) → identity keys in conflict across tables."""

    def expand(self, ids):
        return (
            ids
            | "GroupIdsByBucket" >> beam.GroupByKey()
            | "ConflictsInBucket" >> beam.FlatMap(lambda kv: conflicting_ids(kv[1]))
        )


@dataclasses.dataclass
class Deduplicated:
    events: pa.Table            # one row per accepted event
    duplicates: int             # exact re-deliveries dropped
    conflicts: list[dict]       # {file, line, event_id, table_id, device_id, seq, reason, rebuilt}
    dropped_files: list[str] = dataclasses.field(default_factory=list)   # the file of each duplicate dropped


# Columns that differ between copies of one delivery, or that are not the parsed JSON itself.
_NOT_CONTENT = ("file", "line", "unknown_fields")


def deduplicate(tables: list[pa.Table], cross_conflicts: frozenset | set, digests=None) -> Deduplicated:
    """Keep one copy of each event (device_id, event_id); reject every copy of a conflicting one.

    ``cross_conflicts``: identity keys (:func:`identity_key`) found in conflict across tables.

    Copies are the same delivery when they are equal as parsed JSON (the
    contract).  Copies whose decoded columns differ cannot be equal JSON: a
    conflict.  Copies whose decoded columns agree may still differ as JSON
    (``Z`` against ``+00:00``, a null against an absent key, their unknown
    fields): their lines are read again from the input files and compared as
    parsed JSON.  The fast path (every event_id once) reads nothing.

    ``digests`` (the replay's: :class:`RecordedDigests`): each input file's digest as the run that
    read it recorded; a file's lines are read again only up to where that read stopped and used
    only if they hash to it (:func:`verified_lines`): a file edited since, or of no recorded
    digest, is not read, and its copies are judged on what the lake kept of them.  None: the
    lines are read as the files are now (direct callers, tests).
    """
    table = concat_conformed([unpack(t) for t in tables], EVENTS)
    keys = identity_keys(table.column("device_id"), table.column("event_id"))
    if pc.count_distinct(keys).as_py() == table.num_rows and not (
            cross_conflicts and pc.any(pc.is_in(keys, pa.array(sorted(cross_conflicts), pa.string()))).as_py()):
        return Deduplicated(table, 0, [])   # the common case: every event once
    order = pc.sort_indices(pa.table({"key": keys, "file": table.column("file"), "line": table.column("line")}),
                            sort_keys=[("key", "ascending"), ("file", "ascending"), ("line", "ascending")])
    table = table.take(order)
    ids = keys.take(order).to_pylist()
    starts = [i for i in range(len(ids)) if i == 0 or ids[i] != ids[i - 1]] + [len(ids)]
    spans = [(a, b) for a, b in zip(starts, starts[1:]) if b - a > 1 or ids[a] in cross_conflicts]
    rows = table.take(pa.array([k for a, b in spans for k in range(a, b)], pa.int64())).to_pylist()
    groups = []     # (start, stop, copies, whether their decoded columns agree), per event_id to decide
    at = 0
    for a, b in spans:
        copies, at = rows[at:at + b - a], at + b - a
        content = [{k: v for k, v in r.items() if k not in _NOT_CONTENT} for r in copies]
        agree = ids[a] not in cross_conflicts and all(c == content[0] for c in content[1:])
        groups.append((a, b, copies, agree))
    wanted: dict[str, set[int]] = defaultdict(set)
    for _a, _b, copies, agree in groups:
        for r in copies if agree else ():
            wanted[r["file"]].add(r["line"])
    def lines_of(path: str, numbers: set[int]) -> dict[int, str]:
        if digests is None:
            return raw_lines(path, numbers)
        return verified_lines(path, numbers, digests.get(path)) or {}

    digests_of = {(path, number): content_digest(orjson.loads(text))
                  for path, numbers in wanted.items() for number, text in lines_of(path, numbers).items()}
    keep = [True] * len(ids)
    conflict_rows: list[dict] = []
    duplicates = 0
    dropped: list[str] = []
    for a, b, copies, agree in groups:
        seen = {digests_of.get((r["file"], r["line"])) for r in copies}
        # a copy whose file cannot be read again (a lake's event whose input file is gone) is
        # judged on what the lake kept of it: its decoded columns and unknown fields
        if agree and (len(seen) == 1 or (None in seen and len(seen) <= 2)):
            keep[a + 1:b] = [False] * (b - a - 1)     # the first copy (smallest file, line) stays
            duplicates += b - a - 1
            dropped += [r["file"] for r in copies[1:]]
        else:
            keep[a:b] = [False] * (b - a)
            conflict_rows.extend(copies)
    per_id = Counter((r["device_id"], r["event_id"]) for r in conflict_rows)
    conflicts = [{
        "file": row["file"], "line": row["line"], "event_id": row["event_id"], "table_id": row["table_id"],
        "device_id": row["device_id"], "seq": row["seq"],
        "reason": conflict_reason(row["device_id"], row["event_id"], per_id[(row["device_id"], row["event_id"])]),
        "rebuilt": rebuilt_event(row),
    } for row in conflict_rows]
    return Deduplicated(table.filter(pa.array(keep, pa.bool_())), duplicates, conflicts, dropped)


def raw_lines(path: str, numbers: set[int]) -> dict[int, str]:
    """The text of some lines (or Parquet rows, as JSON) of an input file, read again; none of a
    file that can no longer be read (a carried event's input file, moved or deleted since)."""
    try:
        return _raw_lines(path, numbers)
    except OSError:
        return {}


def _raw_lines(path: str, numbers: set[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    if path.endswith(".parquet"):
        for _, items in iter_parquet_chunks(path, 50_000):
            for number, obj in items if not isinstance(items, Damage) else ():
                if number in numbers:
                    found[number] = orjson.dumps(obj, default=str).decode()
    else:
        for _, lines in iter_line_chunks(path, 50_000):
            for number, line in lines:
                if number in numbers:
                    found[number] = line.decode("utf-8", "replace")
    return found


# The label of a reject's ``raw`` that is not the text of a line as read but the event rebuilt from
# its decoded columns and unknown fields, as canonical JSON (sorted keys, no spaces): the copy an
# earlier run accepted, which the lake holds (its input file is never read again for it) ...
REBUILT = "rebuilt from the lake: "
# ... or a copy of this run's whose file no longer holds the bytes the run read (its digest differs)
REBUILT_CHANGED = "rebuilt from this run's read (the file has changed since): "
_NOT_FIELDS = ("ts_offset", "unknown_fields", "gaming_day", "file", "line")


def rebuilt_event(row: dict) -> str:
    """An accepted event (a row of the ``events`` table, as ``to_pylist`` gives it) as the JSON line
    of its fields: the contract's fields it has, ``ts`` in the offset the device wrote it with
    (``ts_offset``; null: ``-00:00``), and its unknown fields; sorted keys, integral numbers as
    integers.  Equal, as parsed JSON, to the line the event was decoded from but for the form of
    ``ts`` (the same instant and offset) and of numbers (``100.0`` is ``100``)."""
    import datetime as _dt

    obj = {}
    for name, value in row.items():
        if value is None or name in _NOT_FIELDS:
            continue
        if name == "ts":
            offset = row.get("ts_offset")
            value = _ts_text(value.astimezone(_dt.timezone(_dt.timedelta(minutes=offset or 0))), offset)
        elif type(value) is float and value.is_integer() and abs(value) < 2 ** 63:
            value = int(value)
        obj[name] = value
    if row.get("unknown_fields"):
        obj.update(orjson.loads(row["unknown_fields"]))
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()


def _ts_text(when, offset: int | None) -> str:
    text = when.strftime("%Y-%m-%dT%H:%M:%S")      # milliseconds, as devices write them; microseconds if any
    text += f".{when.microsecond // 1000:03d}" if when.microsecond % 1000 == 0 else f".{when.microsecond:06d}"
    if offset is None:
        return text + "-00:00"
    if offset == 0:
        return text + "Z"
    sign, offset = ("+", offset) if offset > 0 else ("-", -offset)
    return f"{text}{sign}{offset // 60:02d}:{offset % 60:02d}"


def verified_lines(path: str, numbers: set[int], fingerprint: dict) -> dict[int, str] | None:
    """Some lines (Parquet rows as JSON) of a file this run read, read again up to where the run's
    read stopped and hashed as they are: their text when the bytes are the ones the run read (the
    digest it recorded, ``fingerprint``), else None (the file changed since: its lines are not
    what the run decoded)."""
    from pitwatch.inputs.stored import TextBlocks

    if not fingerprint or not fingerprint.get("sha256"):
        return None
    found: dict[int, str] = {}
    try:
        if path.endswith(".parquet"):
            read: dict = {}
            for _, items in iter_parquet_chunks(path, 50_000, read):
                for number, obj in items if not isinstance(items, Damage) else ():
                    if number in numbers:
                        found[number] = orjson.dumps(obj, default=str).decode()
            again = read.get("fingerprint") or {}
        else:
            source = TextBlocks(path, fixed=True, upto=fingerprint["bytes"])
            for _, lines in iter_line_chunks(path, 50_000, source=source):
                for number, line in lines:
                    if number in numbers:
                        found[number] = line.decode("utf-8", "replace")
            again = source.digest.fingerprint()
    except OSError:
        return None
    same = again.get("sha256") == fingerprint["sha256"] and again.get("bytes") == fingerprint["bytes"]
    return found if same else None


class RecordedDigests:
    """Each input file → the digest (``{"sha256", "bytes"}``) of the read whose lines the lake holds:
    this run's (``run_inputs``), else the latest succeeded run's that read it (its ``runs``
    record's ``inputs``), read from the lake the first time a file not of this run is asked for
    (only copies whose decoded columns agree need it: rare)."""

    def __init__(self, lake_path: Lake, run_inputs: dict):
        self.lake_path, self.run_inputs = lake_path, run_inputs
        self._recorded: dict | None = None

    def get(self, path: str) -> dict | None:
        if path in self.run_inputs:
            return self.run_inputs[path]
        if self._recorded is None:
            self._recorded = recorded_digests(self.lake_path)
        return self._recorded.get(path)

    def __getstate__(self):
        return self.lake_path, self.run_inputs

    def __setstate__(self, state):
        self.lake_path, self.run_inputs = state
        self._recorded = None


def recorded_digests(lake_path: Lake) -> dict:
    """Each input file a succeeded run read → the digest the latest of them recorded."""
    from pitwatch.lake import parquet as lake
    from pitwatch.lake import runs

    try:
        table = lake.read_table(lake_path, "runs", ["run_id", "inputs", "status", "started", "ended"])
    except Exception:   # noqa: BLE001 - no record to check against: the files are not read
        return {}
    out: dict = {}
    for record in runs.latest_records(table):
        if record.get("status") == "succeeded":
            for entry in record.get("inputs") or ():
                out[entry["path"]] = entry
    return out


class FetchRawLines(beam.DoFn):
    """(file, [conflict rows]) → reject rows with the raw text of those copies.

    A copy an earlier run accepted (its file is not one of this run's ``inputs``) is quoted as the
    lake holds it: the event rebuilt from its columns (:func:`rebuilt_event`), labelled
    :data:`REBUILT`; its input file is never read again (it may have been edited since).  A copy
    of this run's is quoted as its line: conflicts are rare, so their raw text is not carried
    through the shuffle but read again, up to where the run's read stopped, and checked against
    the digest the run recorded (``inputs``: path → ``{"sha256", "bytes"}``); a file whose bytes
    are no longer those gives the rebuilt copy, labelled :data:`REBUILT_CHANGED`.
    """

    def __init__(self, inputs: dict | None = None):
        self.inputs = inputs or {}

    def process(self, kv):
        path, rows = kv
        wanted = {r["line"]: r for r in rows}
        found = verified_lines(path, set(wanted), self.inputs[path]) if path in self.inputs else None
        label = REBUILT_CHANGED if path in self.inputs else REBUILT
        out = []
        for number, row in sorted(wanted.items()):
            row = dict(row)
            rebuilt = row.pop("rebuilt", None)
            if found is not None and number in found:
                raw = found[number]
            else:
                raw = label + rebuilt if rebuilt is not None else ""
            out.append({**row, "raw": raw[:RAW_LIMIT]})
        yield out
