"""How the large elements travel between Beam steps: Arrow tables packed as bytes.

A table of events is shipped as an Arrow IPC stream compressed with zstd
(about 38 bytes an event, against ~270 in memory), and as plain ``bytes``
to Beam, which every runner moves without pickling.  This matters because
a shuffle holds its elements: the embedded FnApiRunner keeps every
element of a GroupByKey in memory, decoded, until the group is read, so
packed bytes are what lets a month of events through one run.  (Pickling
a table would also do, but writes the whole parent buffer of a sliced
table, and keeps no compression.)

Zstd, not LZ4: LZ4 halves the CPU to pack and unpack (measured: ~0.55 µs
an event less for the round trip) but ships ~70 bytes an event against ~38,
and on the embedded runner every byte between steps crosses the runner
process over gRPC (measured: ~2 s for the ~170 MB of a day's events into
the writer), serially, where the packing runs in parallel in the workers.

The replayed events, the bulk of a day, do not travel at all: each table's
are written by the step that replayed them to a file of the run's staging
folder (:func:`spill`), and only a :class:`Spilled` reference crosses to the
writer, which reads them back one table at a time.  The embedded runner
holds a grouping's elements in memory until they are read, and the writer
held a day's packed events whole.  Measured at 20M events (``bench/README.md``,
"The replayed events spilled"): 2-3 % of the run's peak memory and ~5 % of
its time at 2M; the larger part of the peak was the pack index, since
packed too (:class:`pitwatch.pipelines.replay.FindRepeatedRuns`).
"""
from __future__ import annotations

import dataclasses

import pyarrow as pa

from pitwatch.lake import Lake

_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")
_SPILL_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")   # written and read once, on the same disk: speed


@dataclasses.dataclass(frozen=True)
class Spilled:
    """A table written to a file (:func:`spill`) rather than shipped between steps: where it is,
    and its schema metadata (what :func:`peek` answers without reading it)."""

    lake: Lake
    path: str
    metadata: dict


def spill(lake: Lake, path: str, table: pa.Table) -> Spilled:
    """Write ``table`` to ``path`` on the lake's file system (an Arrow IPC file), for :func:`unpack`.
    The same ``path`` written again (a retried bundle) is overwritten with the same rows."""
    fs = lake.fs
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out, pa.ipc.new_file(out, table.schema, options=_SPILL_OPTIONS) as writer:
        writer.write_table(table)
    return Spilled(lake, path, dict(table.schema.metadata or {}))


def pack(table: pa.Table) -> bytes:
    if any(column.num_chunks > 1 for column in table.columns):
        table = table.combine_chunks()   # one record batch: each batch is compressed on its own
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def unpack(data: bytes | Spilled | pa.Table | None) -> pa.Table | None:
    """A packed or spilled table back (a table or None passes through)."""
    if data is None or isinstance(data, pa.Table):
        return data
    if isinstance(data, Spilled):
        with data.lake.fs.open_input_file(data.path) as f:
            return pa.ipc.open_file(f).read_all()
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def peek(data: bytes | Spilled | pa.Table | None) -> dict | None:
    """A packed or spilled table's schema metadata, read without unpacking its rows."""
    if data is None:
        return None
    if isinstance(data, pa.Table):
        return data.schema.metadata
    if isinstance(data, Spilled):
        return data.metadata
    return pa.ipc.open_stream(pa.py_buffer(data)).schema.metadata


def pack_bytes(data: bytes) -> bytes:
    """Bytes compressed with zstd (their size first), for large blobs such as a table's pack cards."""
    return len(data).to_bytes(8, "little") + pa.compress(data, codec="zstd", asbytes=True)


def unpack_bytes(data: bytes) -> bytes:
    return pa.decompress(data[8:], decompressed_size=int.from_bytes(data[:8], "little"), codec="zstd", asbytes=True)
