"""Input files: expand the user's paths, read them in chunks, fingerprint them.

A directory means every ``.jsonl``, ``.jsonl.gz`` and ``.parquet`` file under
it (recursively); a glob is expanded; a plain path must exist.  Files are
read through Beam's ``FileSystems`` so the same code reads local disks, GCS or
S3 on a cluster.  Line numbers are physical (1-based) so a rejected line can
be found again with ``sed -n Np``; lines holding only white space are skipped
and not counted; a UTF-8 byte-order mark and CRLF line ends are accepted.
"""
from __future__ import annotations

import glob
import hashlib
import os
from typing import Iterator

INPUT_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")


class InputError(ValueError):
    """A user mistake about the inputs (missing file, nothing to read)."""


def expand_inputs(paths: list[str]) -> list[str]:
    """Absolute, sorted, de-duplicated list of input files."""
    if not paths:
        raise InputError("no input given")
    found: list[str] = []
    for p in paths:
        if "://" in p:  # remote file system: trust Beam's FileSystems to glob
            from apache_beam.io.filesystems import FileSystems

            matches = [m.path for r in FileSystems.match([p]) for m in r.metadata_list]
            if not matches:
                raise InputError(f"no input file matches {p}")
            found.extend(matches)
            continue
        if any(ch in p for ch in "*?["):
            matches = sorted(glob.glob(p, recursive=True))
            files = [m for m in matches if os.path.isfile(m) and m.endswith(INPUT_SUFFIXES)]
            if not files:
                raise InputError(f"no .jsonl, .jsonl.gz or .parquet file matches {p}")
            found.extend(files)
        elif os.path.isdir(p):
            files = [
                os.path.join(root, f)
                for root, _dirs, names in os.walk(p)
                for f in names
                if f.endswith(INPUT_SUFFIXES) and not f.startswith(".")
            ]
            if not files:
                raise InputError(f"directory {p} holds no .jsonl, .jsonl.gz or .parquet file")
            found.extend(files)
        elif os.path.isfile(p):
            found.append(p)
        else:
            raise InputError(f"input {p} does not exist")
    out = sorted({f if "://" in f else os.path.abspath(f) for f in found})
    return out


def _open(path: str, raw: bool = False):
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    kind = CompressionTypes.UNCOMPRESSED if raw else CompressionTypes.AUTO
    return FileSystems.open(path, compression_type=kind)


def file_fingerprint(path: str) -> dict:
    """SHA-256 and size of the file's bytes as stored (compressed if .gz)."""
    h = hashlib.sha256()
    size = 0
    with _open(path, raw=True) as f:
        while True:
            block = f.read(1 << 20)
            if not block:
                break
            h.update(block)
            size += len(block)
    return {"path": path, "sha256": h.hexdigest(), "bytes": size}


def iter_line_chunks(path: str, chunk_lines: int) -> Iterator[tuple[int, list[tuple[int, bytes]]]]:
    """Yield ``(chunk_number, [(line_number, line_bytes), ...])`` for a JSONL file.

    Blank lines are skipped (not counted); BOM and ``\\r`` are stripped.
    """
    chunk: list[tuple[int, bytes]] = []
    number = 0
    with _open(path) as f:
        for lineno, line in enumerate(_lines(f), start=1):
            if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            chunk.append((lineno, line))
            if len(chunk) >= chunk_lines:
                yield number, chunk
                number += 1
                chunk = []
    if chunk:
        yield number, chunk


def _lines(f, block_size: int = 4 << 20) -> Iterator[bytes]:
    """Lines of a binary file object, read in large blocks (any Beam file object)."""
    rest = b""
    while True:
        block = f.read(block_size)
        if not block:
            break
        parts = (rest + block).split(b"\n")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


def iter_parquet_chunks(path: str, chunk_lines: int) -> Iterator[tuple[int, list[tuple[int, dict]]]]:
    """Yield chunks of ``(row_number, row_dict)`` from a Parquet file of events.

    Timestamps stored as Arrow timestamps are turned back into RFC 3339 text
    so that they go through exactly the validation of a JSON line.  A file
    of pitwatch's own ``events`` table is accepted too: its ingest columns
    (``gaming_day``, ``file``, ``line``) are dropped and ``unknown_fields`` is
    merged back into the event.
    """
    import datetime as _dt

    import pyarrow.parquet as pq

    with _open(path) as f:
        pf = pq.ParquetFile(f)
        row = 0
        number = 0
        for batch in pf.iter_batches(batch_size=chunk_lines):
            rows = []
            for rec in batch.to_pylist():
                row += 1
                for k, v in rec.items():
                    if isinstance(v, _dt.datetime):
                        rec[k] = (v if v.tzinfo else v.replace(tzinfo=_dt.timezone.utc)).isoformat()
                    elif isinstance(v, _dt.date):
                        rec[k] = v.isoformat()
                rows.append((row, _parquet_row_to_event(rec)))
            yield number, rows
            number += 1


_LAKE_ONLY = ("gaming_day", "file", "line")


def _parquet_row_to_event(rec: dict) -> dict:
    import orjson

    out = {k: v for k, v in rec.items() if v is not None and k not in _LAKE_ONLY}
    extra = out.pop("unknown_fields", None)
    if isinstance(extra, str):
        try:
            loaded = orjson.loads(extra)
        except orjson.JSONDecodeError:
            loaded = None
        if isinstance(loaded, dict):
            for k, v in loaded.items():
                out.setdefault(k, v)
        else:
            out["unknown_fields"] = extra
    return out
