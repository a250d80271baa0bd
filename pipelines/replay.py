"""Beam step after ingest: one element per table → deduplicated events (+ replay outputs).

``ReplayTable`` receives every event batch of one table (grouped by
``table_id``), keeps one copy of each event (:func:`pipelines.ingest.deduplicate`)
and emits the table's events split by gaming day, keyed for the partition
writer as ``((lake_table, gaming_day), arrow_table)``.
"""
from __future__ import annotations

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.ingest import TAG_COUNTS, deduplicate

TAG_CONFLICTS = "conflicts"


def split_by_day(name: str, table: pa.Table):
    """Yield ``((name, 'YYYY-MM-DD'), rows)`` for each gaming day in ``table``."""
    if table.num_rows == 0:
        return
    days = pc.unique(table.column("gaming_day")).to_pylist()
    for day in sorted(days):
        rows = table.filter(pc.equal(table.column("gaming_day"), pa.scalar(day, pa.date32())))
        yield (name, day.isoformat()), rows


class ReplayTable(beam.DoFn):
    def __init__(self):
        self._conflicts_cache = None

    def _conflicts(self, conflict_ids) -> frozenset:
        if self._conflicts_cache is None:
            self._conflicts_cache = frozenset(conflict_ids)
        return self._conflicts_cache

    def process(self, kv, conflict_ids):
        table_id, batches = kv
        dedup = deduplicate(list(batches), self._conflicts(conflict_ids))
        for row in dedup.conflicts:
            yield beam.pvalue.TaggedOutput(TAG_CONFLICTS, (row["file"], row))
        yield beam.pvalue.TaggedOutput(
            TAG_COUNTS, {"accepted": dedup.events.num_rows, "duplicates": dedup.duplicates})
        yield from split_by_day("events", dedup.events)
