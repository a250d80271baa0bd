"""How the large elements travel between Beam steps: Arrow tables packed as bytes.

A table of events is shipped as an Arrow IPC stream compressed with zstd
(about 35 bytes an event, against ~270 in memory), and as plain ``bytes``
to Beam, which every runner moves without pickling.  This matters because
a shuffle holds its elements: the embedded FnApiRunner keeps every
element of a GroupByKey in memory, decoded, until the group is read, so
packed bytes are what lets a month of events through one run.  (Pickling
a table would also do, but writes the whole parent buffer of a sliced
table, and keeps no compression.)
"""
from __future__ import annotations

import pyarrow as pa

_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


def pack(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def unpack(data: bytes | pa.Table | None) -> pa.Table | None:
    """A packed table back (a table or None passes through)."""
    if data is None or isinstance(data, pa.Table):
        return data
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
