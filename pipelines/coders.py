"""Beam coders for the large elements pitwatch shuffles.

A pyarrow Table travels between steps in Arrow IPC stream format: compact,
and safe for sliced tables (Beam's default pickling of a sliced RecordBatch
writes its whole parent buffer; see design.md).
"""
from __future__ import annotations

import apache_beam as beam
import pyarrow as pa


class ArrowTableCoder(beam.coders.Coder):
    def encode(self, table: pa.Table) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()

    def decode(self, data: bytes) -> pa.Table:
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()

    def is_deterministic(self) -> bool:
        return True

    def to_type_hint(self):
        return pa.Table


def register() -> None:
    beam.coders.registry.register_coder(pa.Table, ArrowTableCoder)
