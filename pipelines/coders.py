"""How the large elements travel between Beam steps: Arrow tables packed as bytes.

A table of events is shipped as an Arrow IPC stream compressed with LZ4
(about 80 bytes an event, against ~270 in memory), and as plain ``bytes``
to Beam, which every runner moves without pickling.  This matters because
a shuffle holds its elements: the embedded FnApiRunner keeps every
element of a GroupByKey in memory, decoded, until the group is read, so
packed bytes are what lets a month of events through one run.  (Pickling
a table would also do, but writes the whole parent buffer of a sliced
table, and keeps no compression.)

LZ4, not zstd: zstd packs an event into ~50 bytes but costs twice the CPU
to pack and unpack (measured on a day's events: 0.57 s against 0.30 s to
pack, 0.23 s against 0.10 s to unpack 1.16M events), and every event is
packed and unpacked twice on its way to the lake; the CPU is what a run is
short of, not memory (docs/scale-out.md, the memory model).
"""
from __future__ import annotations

import pyarrow as pa

_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


def pack(table: pa.Table) -> bytes:
    if any(column.num_chunks > 1 for column in table.columns):
        table = table.combine_chunks()   # one record batch: each batch is compressed on its own
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def unpack(data: bytes | pa.Table | None) -> pa.Table | None:
    """A packed table back (a table or None passes through)."""
    if data is None or isinstance(data, pa.Table):
        return data
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def peek(data: bytes | pa.Table | None) -> dict | None:
    """A packed table's schema metadata, read without unpacking its rows."""
    if data is None:
        return None
    if isinstance(data, pa.Table):
        return data.schema.metadata
    return pa.ipc.open_stream(pa.py_buffer(data)).schema.metadata
