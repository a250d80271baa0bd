"""Hash chains over a canonical encoding: how a record of the lake names the one before it.

A chained record (a ``runs`` record today, a ``reviews`` record later) is hashed over its
**canonical encoding** (``docs/verify.md``), which anyone can recompute without pitwatch:

1. the record as a JSON object, one member per column, the hash column itself left out;
2. a member whose value is null is left out, at any depth inside objects (so a column added to
   the table later, null in the records written before it, does not change their hash); a list
   keeps its nulls (positions matter);
3. a date is the text ``YYYY-MM-DD``; a timestamp the text ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (UTC,
   always six digits of microseconds); a struct is an object, a list an array;
4. serialised with RFC 8785 (JSON Canonicalization Scheme: members sorted, no white space,
   numbers and strings in one spelling) as UTF-8; the hash is SHA-256 of those bytes, in
   lower-case hex.

The record then carries the hash of the record before it (``prev_field``); changing any record
breaks the link from the next one, and recomputing every hash after it changes the chain's head,
which the anchor outside the lake keeps (:mod:`pitwatch.lake.anchor`).  :func:`chain_problems` checks
a whole chain; :func:`link` gives a new record its link (a table of reviews chains with these two
and its own column names).
"""
from __future__ import annotations

import datetime as _dt
import hashlib

import rfc8785

READ_BLOCK = 1 << 20


def canonical_value(value):
    """``value`` (a row as pyarrow's ``to_pylist`` gives it) as plain JSON values (see the module doc)."""
    if isinstance(value, dict):
        return {str(k): canonical_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [None if v is None else canonical_value(v) for v in value]
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"no canonical encoding for a {type(value).__name__}")


def canonical(record: dict, hash_field: str | None = None) -> bytes:
    """The canonical encoding of ``record`` without its ``hash_field``."""
    return rfc8785.dumps(canonical_value({k: v for k, v in record.items() if k != hash_field}))


def record_sha256(record: dict, hash_field: str) -> str:
    return hashlib.sha256(canonical(record, hash_field)).hexdigest()


def paths_sha256(paths) -> str:
    """SHA-256 of the canonical encoding of a set of paths (a JSON array, sorted): the files of a
    table at one version, as a record names them."""
    return hashlib.sha256(rfc8785.dumps(sorted(paths))).hexdigest()


def actions_sha256(added, removed, metadata: dict | None = None) -> str:
    """SHA-256 of what one Delta commit does, as a writer's intent names it before committing and
    ``pitwatch verify`` recomputes it from the commit (``docs/verify.md``, "Intents"): the canonical
    encoding of ``{"add": [paths], "remove": [paths], "metaData": {...}}`` — the data files it adds
    and removes (relative to the table's folder, URL-decoded, each once, sorted) and, for a commit
    that carries a ``metaData`` action (a table's creation, a column added), ``{"columns": [its
    schema's top-level column names, sorted], "partitionColumns": [...], "configuration": {...}}``
    (absent for a commit with none).  Timestamps, sizes, statistics are left out: a writer cannot
    know them before delta-rs writes them; the files' bytes are bound by their SHA-256, which the
    intent lists apart."""
    body: dict[str, list[str] | dict[str, list[str] | dict[str, str]]] = {"add": sorted(set(added)), "remove": sorted(set(removed))}
    if metadata is not None:
        body["metaData"] = {"columns": sorted(str(c) for c in metadata.get("columns") or ()),
                            "partitionColumns": [str(c) for c in metadata.get("partitionColumns") or ()],
                            "configuration": {str(k): str(v) for k, v in (metadata.get("configuration") or {}).items()}}
    return hashlib.sha256(rfc8785.dumps(body)).hexdigest()


def rows_sha256(rows) -> str:
    """SHA-256 of a set of rows (dicts, as pyarrow's ``to_pylist`` gives them): the canonical
    encoding of the JSON array of the rows, each in its canonical encoding (nulls left out, as a
    record's), sorted by those bytes.  The rows' order does not count, a row held twice counts
    twice: the rows a compaction removed and the rows of the file it wrote hash alike exactly when
    they are the same rows (``docs/verify.md``)."""
    encoded = sorted(rfc8785.dumps(canonical_value(r)) for r in rows)
    return hashlib.sha256(b"[" + b",".join(encoded) + b"]").hexdigest()


def bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_whole(fs, path: str):
    """A whole file, as a ``pyarrow.Buffer`` of memory Arrow owns (not a Python ``bytes``): what
    :func:`parquet_rows` parses and :func:`bytes_sha256` hashes, the same bytes read once."""
    with fs.open_input_stream(path) as f:
        return f.read_buffer()


def parquet_rows(data) -> list[dict]:
    """The rows of one small Parquet file held in memory (a runs record), read on this thread.

    Never ``pq.read_table(pa.BufferReader(some_bytes))``: that wraps the Python object in a
    buffer whose release takes the GIL, and the dataset scan it starts lets one of Arrow's pool
    threads drop the last reference to it after the rows came back.  Under load that thread ran
    while the interpreter was exiting, took the GIL, was ended by Python (``PyThread_exit_thread``)
    inside a C++ destructor, and the process aborted (``terminate called without an active
    exception``, exit -6) after ``verify`` had printed its report (issue 35).  Here the memory is
    Arrow's (``data`` from :func:`read_whole`; a ``bytes`` is copied into Arrow's pool first), and
    ``ParquetFile(...).read(use_threads=False)`` neither scans asynchronously nor uses a pool thread."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(data, pa.Buffer):
        sink = pa.BufferOutputStream()
        sink.write(data)
        data = sink.getvalue()
    return pq.ParquetFile(pa.BufferReader(data), pre_buffer=False).read(use_threads=False).to_pylist()


def file_sha256(fs, path: str) -> str:
    """SHA-256 of a file on a ``pyarrow.fs`` file system, read in blocks."""
    digest = hashlib.sha256()
    with fs.open_input_stream(path) as f:
        while True:
            block = f.read(READ_BLOCK)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()


def link(previous: dict | None, record: dict, hash_field: str, prev_field: str) -> dict:
    """``record`` with its link to ``previous`` (None: the chain's first) and its own hash."""
    out = dict(record)
    out[prev_field] = None if previous is None else previous[hash_field]
    out[hash_field] = record_sha256(out, hash_field)
    return out


def chain_problems(records: list[dict], hash_field: str, prev_field: str,
                   name=lambda i, r: f"record {i}") -> list[tuple[int, str, str]]:
    """Every broken link of a chain, in its order, as (index of the record, ``changed`` or
    ``broken link``, what): a record whose content does not hash to the hash it carries (changed
    after it was written), a record whose link is not the hash of the one before it (changed,
    removed, inserted or reordered), a first record that links to something."""
    problems: list[tuple[int, str, str]] = []
    previous: dict | None = None
    for i, r in enumerate(records):
        try:
            actual = record_sha256(r, hash_field)
        except (TypeError, ValueError):         # a value no writer of the chain writes (bytes, NaN …)
            actual = "(none: it holds a value with no canonical encoding)"
        if r.get(hash_field) is None:
            problems.append((i, "changed", f"{name(i, r)} carries no hash: it is not part of the chain"))
        elif r[hash_field] != actual:
            problems.append((i, "changed", f"{name(i, r)} was changed: its content hashes to {actual}, "
                                           f"it carries {r[hash_field]}"))
        want = None if previous is None else previous.get(hash_field)
        if r.get(prev_field) != want:
            if previous is None:
                problems.append((i, "broken link", f"{name(i, r)} is the first record but links to "
                                                   f"{r.get(prev_field)}: records before it were removed"))
            else:
                problems.append((i, "broken link", f"{name(i, r)} links to {r.get(prev_field)}, the record "
                                                   f"before it ({name(i - 1, previous)}) hashes to {want}"))
        previous = r
    return problems
