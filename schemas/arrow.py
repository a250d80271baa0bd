"""The Arrow schema of every lake table (``docs/spec/outputs.md``), defined once.

Writers (:mod:`pitwatch.lake.parquet`), the replay output, the DuckDB views and the
tests all take their columns from here.  Column order is the table's order in
the Parquet files.  ``gaming_day`` is kept in the rows *and* used as the Hive
partition key; readers that use ``hive_partitioning`` see the same value.
"""
from __future__ import annotations

import sys
from typing import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from pitwatch.schemas.contract import FIELDS
from pitwatch.schemas.events import EVENT_FIELDS, Event, compact_events

TS = pa.timestamp("us", tz="UTC")

# Columns whose values (nearly) never repeat: the lake writes them without a Parquet
# dictionary (pitwatch.lake.parquet) and the replay's events get a str per row of them
# (table_to_events); every other string column repeats a few values per table.
NEVER_REPEATED = frozenset({"event_id", "ts", "seq", "line"})

_KIND_TYPES = {
    "id": pa.string(), "event_id": pa.string(), "str": pa.string(), "ts": TS,
    "int0": pa.int64(), "int1": pa.int64(), "seat": pa.int64(), "street": pa.int64(),
    "bool": pa.bool_(), "amount": pa.float64(), "card": pa.string(),
    "cards": pa.list_(pa.string()), "cards5": pa.list_(pa.string()),
}


def _kind_type(kind: str) -> pa.DataType:
    if kind.startswith(("enum:", "pattern:")):
        return pa.string()
    return _KIND_TYPES[kind]


EVENTS = pa.schema(
    [pa.field(name, _kind_type(kind), nullable=name not in ("event_id", "ts", "source", "type", "table_id", "device_id", "seq"))
     for name, kind in FIELDS.items()]
    + [
        pa.field("ts_offset", pa.int64()),         # minutes east of UTC as the device wrote ts (null: -00:00)
        pa.field("unknown_fields", pa.string()),   # JSON object of fields the contract does not know
        pa.field("gaming_day", pa.date32(), nullable=False),
        pa.field("file", pa.string()),             # input file the line came from
        pa.field("line", pa.int64()),              # 1-based line (or Parquet row) number
    ]
)
assert tuple(EVENTS.names) == EVENT_FIELDS

REJECTS = pa.schema([
    pa.field("file", pa.string(), nullable=False),
    pa.field("line", pa.int64()),                           # null: a damaged file, not a line (reason says where)
    pa.field("raw", pa.string(), nullable=False),          # cut at 64 KiB
    pa.field("reason", pa.string(), nullable=False),
    pa.field("event_id", pa.string()),                      # when readable
    pa.field("table_id", pa.string()),
    pa.field("device_id", pa.string()),
    pa.field("seq", pa.int64()),
    pa.field("gaming_day", pa.date32(), nullable=False),    # the run's gaming day (see pitwatch.pipelines.batch)
])

FINDINGS = pa.schema([
    pa.field("finding_id", pa.string(), nullable=False),
    pa.field("rule_id", pa.string(), nullable=False),
    pa.field("title", pa.string(), nullable=False),          # the rule's plain title (pitwatch.rules.catalog)
    pa.field("severity", pa.string(), nullable=False),
    pa.field("game", pa.string()),
    # null only for INPUT_DAMAGED of a file that held no line before its damage (rules.md 2.1)
    pa.field("table_id", pa.string()),
    pa.field("pack_id", pa.string()),
    pa.field("round_id", pa.string()),
    pa.field("seat", pa.int64()),
    pa.field("spot", pa.string()),
    pa.field("device_id", pa.string()),
    pa.field("dealer_id", pa.string()),
    pa.field("ts", TS, nullable=False),
    pa.field("gaming_day", pa.date32(), nullable=False),
    pa.field("expected", pa.string(), nullable=False),
    pa.field("actual", pa.string(), nullable=False),
    pa.field("event_ids", pa.list_(pa.string()), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    # the evidence identified per device (contract version 2: an event_id is unique only within its
    # device); device_id is null only for evidence carried in a state written before version 2
    pa.field("evidence", pa.list_(pa.struct([pa.field("device_id", pa.string()),
                                             pa.field("event_id", pa.string(), nullable=False)])),
             nullable=False),
    # the table's own time (issue 29): the offset the event that completed the evidence (ts) was written
    # with, minutes east of UTC; and the earliest ts of the evidence (the video window's start).  Null in
    # files written before them (the analysts' connection reads a missing column as null).
    pa.field("ts_offset", pa.int64()),
    pa.field("evidence_from", TS),
    # ids used again (events.md 2.1, issue 36): which use of pack_id and of round_id the finding is about
    # (1 for the first; null with a null id, and in files written before them)
    pa.field("pack_use", pa.int64()),
    pa.field("round_use", pa.int64()),
    # what changed it (issue 42, pitwatch.lake.finding_changes): the run that first wrote this finding_id on
    # this gaming day, and the run that last added it or changed another of its columns (null in files
    # written before them, and kept null while the finding stays unchanged)
    pa.field("first_seen_run", pa.string()),
    pa.field("last_changed_run", pa.string()),
])

# A finding a run added to, removed from or changed on a gaming day an earlier run had already written
# (pitwatch.lake.finding_changes, docs/lake.md "What a run changed"): append-only, partitioned by gaming_day
FINDING_CHANGES = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("change", pa.string(), nullable=False),         # added, removed, changed
    pa.field("changed_columns", pa.list_(pa.string())),      # the columns a changed finding changed
    pa.field("finding_id", pa.string(), nullable=False),
    pa.field("rule_id", pa.string(), nullable=False),
    pa.field("severity", pa.string(), nullable=False),
    pa.field("table_id", pa.string()),
    pa.field("round_id", pa.string()),
    pa.field("dealer_id", pa.string()),
    pa.field("ts", TS, nullable=False),
    pa.field("gaming_day", pa.date32(), nullable=False),
])

ROUNDS = pa.schema([
    pa.field("table_id", pa.string(), nullable=False),
    pa.field("game", pa.string()),
    pa.field("round_id", pa.string(), nullable=False),
    pa.field("pack_id", pa.string()),
    pa.field("dealer_id", pa.string()),
    pa.field("started", TS),
    pa.field("ended", TS),
    pa.field("seats_dealt", pa.list_(pa.int64())),
    pa.field("outcome", pa.string()),
    pa.field("voided", pa.bool_()),
    pa.field("findings", pa.int64()),
    pa.field("undecided", pa.list_(pa.string())),  # checks left open by unreadable cards
    pa.field("gaming_day", pa.date32(), nullable=False),
    # ids used again (events.md 2.1): which use of round_id and of pack_id (null in files written before them)
    pa.field("round_use", pa.int64()),
    pa.field("pack_use", pa.int64()),
])

PACKS = pa.schema([
    pa.field("table_id", pa.string(), nullable=False),
    pa.field("game", pa.string()),
    pa.field("pack_id", pa.string(), nullable=False),
    pa.field("decks", pa.int64()),
    pa.field("card_count", pa.int64()),
    pa.field("shuffle_method", pa.string()),
    pa.field("preshuffled", pa.bool_()),
    pa.field("shuffled_at", TS),
    pa.field("cut_by", pa.string()),
    pa.field("cut_position", pa.int64()),
    pa.field("cut_stack_size", pa.int64()),
    pa.field("cut_card_from_back", pa.int64()),
    pa.field("cut_card_surfaced_at", pa.int64()),
    pa.field("burn_first_card", pa.string()),
    pa.field("burn_count", pa.int64()),
    pa.field("cards_drawn", pa.int64()),
    pa.field("rounds_played", pa.int64()),
    pa.field("stub_counts", pa.list_(pa.int64())),
    pa.field("stub_remaining", pa.int64()),
    pa.field("findings", pa.int64()),
    pa.field("gaming_day", pa.date32(), nullable=False),
    pa.field("pack_use", pa.int64()),   # which use of pack_id (events.md 2.1; null in files written before it)
])

RUNS = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("command", pa.string(), nullable=False),
    pa.field("inputs", pa.list_(pa.struct([
        pa.field("path", pa.string()), pa.field("sha256", pa.string()), pa.field("bytes", pa.int64()),
    ]))),
    pa.field("lines_read", pa.int64()),
    pa.field("accepted", pa.int64()),
    pa.field("rejected", pa.int64()),
    pa.field("duplicates", pa.int64()),
    pa.field("gaming_days", pa.list_(pa.date32())),
    pa.field("findings", pa.int64()),
    pa.field("findings_by_severity", pa.string()),  # JSON: {"critical": n, "major": n, …}
    pa.field("versions", pa.string()),   # JSON: pitwatch, contract, beam, pyarrow, python
    pa.field("options", pa.string()),    # JSON: cutoff, timezone, runner …
    pa.field("status", pa.string()),
    pa.field("started", TS),
    pa.field("ended", TS),
    # files read only up to their damage (pitwatch.inputs.files.Damage): counted apart from lines
    pa.field("damaged_files", pa.int64()),
    pa.field("bytes_not_read", pa.int64()),
    pa.field("damage", pa.list_(pa.struct([
        pa.field("path", pa.string()), pa.field("offset", pa.int64()), pa.field("bytes_not_read", pa.int64()),
        pa.field("reason", pa.string()),
    ]))),
    # JSON {table: Delta version} of every table as this run left it committed (a reader pinned to
    # the run reads these versions: pitwatch.pipelines.lake_run); null while the run is running
    pa.field("table_versions", pa.string()),
    # The hash chain (pitwatch.lake.chain, docs/verify.md), written by pitwatch.lake.runs.write_run_record:
    # this record's SHA-256 over its canonical encoding; its link to the record before it (that
    # record's hash, its data file's and the runs commit's that added it); every data file this
    # writer's commits added and every Delta commit file it wrote for the other tables (with the
    # SHA-256 of the sorted paths of the table's files at that version)
    pa.field("record_sha256", pa.string()),
    pa.field("prev_record_sha256", pa.string()),
    pa.field("prev_record_file_sha256", pa.string()),
    pa.field("prev_runs_commit_sha256", pa.string()),
    pa.field("added_files", pa.list_(pa.struct([
        pa.field("table", pa.string()), pa.field("path", pa.string()), pa.field("size", pa.int64()),
        pa.field("rows", pa.int64()), pa.field("sha256", pa.string()),
    ]))),
    pa.field("commits", pa.list_(pa.struct([
        pa.field("table", pa.string()), pa.field("version", pa.int64()), pa.field("sha256", pa.string()),
        pa.field("files_sha256", pa.string()), pa.field("operation", pa.string()),
    ]))),
    # Carried forward from the record before, so that a reader needs the chain's head only
    # (pitwatch.lake.delta_log, docs/lake.md "A log that ages well"): JSON {table: {version, parts:
    # [{file, size, sha256}]}}, the newest chained Delta checkpoint of every table (this writer's
    # new ones included); JSON {table: version} (or null), the versions readers read as of this
    # record: the last successful run's table_versions.  Null in records written before them.
    pa.field("checkpoints", pa.string()),
    pa.field("reader_versions", pa.string()),
])

RULES = pa.schema([
    pa.field("rule_id", pa.string(), nullable=False),
    pa.field("title", pa.string()),
    pa.field("severity", pa.string(), nullable=False),
    pa.field("games", pa.list_(pa.string())),
    pa.field("source", pa.string()),
    pa.field("summary", pa.string()),
])

# The analysts' reviews of findings (``LAKE/reviews``, a Delta table whose only writer is ``pitwatch
# review``: pitwatch.lake.reviews, docs/lake.md "The reviews table").  Not one of LAKE_TABLES: append-only,
# never replayed, rolled back or pinned to a run (readers read its latest version).  A review's own id,
# the finding and what was decided about it, a snapshot of the finding when reviewed, then its chain
# (pitwatch.lake.chain): its hash and the hash of the review before it.
REVIEWS = pa.schema([
    pa.field("review_id", pa.string(), nullable=False),
    pa.field("finding_id", pa.string(), nullable=False),
    pa.field("disposition", pa.string(), nullable=False),   # confirmed, dismissed, escalated
    pa.field("reason", pa.string()),                         # a code of seeds/review_reasons.csv
    pa.field("reviewer", pa.string(), nullable=False),       # --by
    pa.field("note", pa.string()),
    pa.field("video", pa.string()),                          # the video reference
    pa.field("amount", pa.float64()),                        # the house's loss (+) or money saved (-)
    pa.field("reviewed_at", TS, nullable=False),
    pa.field("rule_id", pa.string()),
    pa.field("table_id", pa.string()),
    pa.field("gaming_day", pa.date32()),
    pa.field("prev_review_sha256", pa.string()),
    pa.field("review_sha256", pa.string()),
])

LAKE_TABLES: dict[str, pa.Schema] = {
    "events": EVENTS, "rejects": REJECTS, "rounds": ROUNDS, "packs": PACKS,
    "findings": FINDINGS, "runs": RUNS, "rules": RULES,
    "finding_changes": FINDING_CHANGES,
}
PARTITIONED = ("events", "rejects", "rounds", "packs", "findings", "finding_changes")

# The live service's alerts (``LAKE/alerts``, a Delta table whose only writer is ``pitwatch watch``:
# live/alerts_table.py, docs/lake.md "The alerts table").  Not one of LAKE_TABLES: no run reads,
# fences, rolls back or pins it; readers read it at its latest version.  The FINDINGS columns, then
# the watcher's id and the alert's own extras (a provisional alert's id); any other member an alert
# carries becomes a column of its own, its JSON text (schema evolution, pitwatch.lake.delta).
# Nullable but for the alert's id, rule and day: a provisional alert need not have every finding column.
ALERT_KEYS = ("finding_id", "rule_id", "gaming_day")
RUN_STAMPS = ("first_seen_run", "last_changed_run")     # a batch run's, no alert's
ALERTS = pa.schema([f if f.name in ALERT_KEYS else f.with_nullable(True) for f in FINDINGS if f.name not in RUN_STAMPS]
                   + [pa.field("watch_id", pa.string()), pa.field("provisional_id", pa.string()),
                      # an alert that is no finding (CARD_DISAGREEMENT, its _CLEARED, DEVICE_SILENT): true
                      pa.field("live_only", pa.bool_())])


def rows_to_table(rows: Iterable[dict], schema: pa.Schema) -> pa.Table:
    """Column-wise build of a table from dict rows (missing keys are null)."""
    rows = list(rows)
    return pa.table({f.name: pa.array([r.get(f.name) for r in rows], type=f.type) for f in schema}, schema=schema)


def events_to_table(events: Iterable[Event]) -> pa.Table:
    events = list(events)
    cols = {}
    for f in EVENTS:
        name = f.name
        values = [getattr(e, name) for e in events]
        if name == "ts":
            cols[name] = pa.array(values, type=pa.int64()).cast(TS)
        else:
            cols[name] = pa.array(values, type=f.type)
    return pa.table(cols, schema=EVENTS)


def table_to_events(table: pa.Table, skip: tuple[str, ...] = ()) -> list[Event]:
    """Inverse of :func:`events_to_table` (``ts`` back to integer microseconds).

    Fields named in ``skip`` read ``None`` (the replay reads none of the
    ingest columns; a ``date`` per event is costly to build), and so do
    fields the table has no column for (:func:`drop_empty_columns`) or whose
    column is all null: the events store only the other fields
    (:class:`pitwatch.schemas.events.CompactEvent`).
    """
    n = table.num_rows
    names, columns = [], []
    for name in EVENT_FIELDS:
        if name in skip or name not in table.column_names:
            continue
        col = table.column(name)
        if col.null_count == n:
            continue
        names.append(name)
        if name == "ts":
            columns.append(col.cast(pa.int64()).to_pylist())
        elif pa.types.is_string(col.type) and name not in NEVER_REPEATED:
            columns.append(shared_strings(col))
        else:
            columns.append(col.to_pylist())
    return compact_events(names, columns)


def shared_strings(col: pa.Array | pa.ChunkedArray) -> list:
    """A string column's values (None for null) as a list in which equal values are one ``str``.

    A table's events repeat a few values per column (its types, sources,
    devices, cards, a round's id); ``to_pylist`` builds a new ``str`` per row,
    this builds one per distinct value (Arrow's dictionary, then NumPy picks
    them by index): measured ~30 against 30-70 ns a value.  The engine gains
    too: a shared ``str`` keeps its hash for every dict lookup it keys, and
    equal values compare by identity (a few % of the replay, measured).  Not
    for a column that never repeats (:data:`NEVER_REPEATED`): there it costs more.
    The values are interned: one equal to a name the engine compares it with
    (an event type, a source, a target) is then that name's own ``str``, and
    the comparison ends at the identity test (callgrind, the engine over 150k
    events of the six games: 1.6 % fewer instructions).
    """
    import numpy as np

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    encoded = pc.dictionary_encode(col, null_encoding="encode")
    values = np.empty(len(encoded.dictionary), dtype=object)
    values[:] = [None if v is None else sys.intern(v) for v in encoded.dictionary.to_pylist()]
    return values[encoded.indices.to_numpy()].tolist()


def drop_empty_columns(table: pa.Table) -> pa.Table:
    """The table without its all-null columns: the compact form that travels between steps.

    An event carries a dozen of the ~50 event columns; an all-null string column
    still costs four bytes a row of offsets.  :func:`conform` restores them.
    """
    empty = [name for name in table.column_names if table.column(name).null_count == table.num_rows]
    return table.drop_columns(empty) if empty and table.num_rows else table


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns, in its order and types: a column the table lacks
    (a file written before it existed, or a compact table) is all null."""
    n = table.num_rows
    names = set(table.column_names)
    return pa.Table.from_arrays(
        [table.column(f.name).cast(f.type) if f.name in names else pa.nulls(n, f.type) for f in schema],
        schema=schema)


def concat_conformed(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    """Concatenate compact tables (any subsets of ``schema``'s columns) into one of ``schema``."""
    parts = [conform(t, schema) for t in tables if t is not None]
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]
