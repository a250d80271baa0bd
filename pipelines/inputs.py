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


def iter_line_blocks(path: str, chunk_lines: int, read_size: int = 4 << 20) -> Iterator[tuple[int, bytes]]:
    """Yield ``(first_line_number, block)``: the file's bytes cut into blocks of
    ``chunk_lines`` whole physical lines (the last block may be shorter and end
    without a line end).  Nothing is skipped or stripped here: see
    :func:`block_lines` and :func:`clean_block_lines`."""
    import numpy as np

    first = 1
    buf = b""
    ends: list = []     # positions of b"\n" in buf, arrays
    n_ends = 0
    with _open(path) as f:
        while True:
            data = f.read(read_size)
            if data:
                found = np.flatnonzero(np.frombuffer(data, np.uint8) == 10) + len(buf)
                buf += data
                ends.append(found)
                n_ends += len(found)
            if n_ends >= chunk_lines:
                at = np.concatenate(ends)
                start = 0
                while len(at) >= chunk_lines:
                    stop = int(at[chunk_lines - 1]) + 1
                    yield first, buf[start:stop]
                    first += chunk_lines
                    start, at = stop, at[chunk_lines:]
                buf, ends, n_ends = buf[start:], [at - start], len(at)
            if not data:
                if buf:
                    yield first, buf
                return


def block_lines(first: int, block: bytes) -> list[tuple[int, bytes]]:
    """``[(line_number, line)]`` of a block: blank lines skipped (not counted);
    a BOM on line 1 and ``\r`` line ends stripped."""
    out = []
    for number, line in enumerate(block.split(b"\n"), start=first):
        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        line = line.rstrip(b"\r\n")
        if line.strip():
            out.append((number, line))
    return out


_BLANK_STARTS = (9, 10, 11, 12, 32)     # a line starting with one of these may be blank


def clean_block_lines(first: int, block: bytes) -> tuple[bytes, int, int] | None:
    """``(text, lines, longest)`` when :func:`block_lines` would keep every line of the
    block as it stands (no ``\r``, no BOM, no line starting with white space or
    empty): the block without its last line end, its line count and its longest
    line's length, so it can be decoded whole.  None otherwise."""
    import numpy as np

    text = block[:-1] if block.endswith(b"\n") else block
    if not text or b"\r" in text or (first == 1 and text.startswith(b"\xef\xbb\xbf")):
        return None
    raw = np.frombuffer(text, np.uint8)
    ends = np.flatnonzero(raw == 10)
    starts = np.concatenate(([0], ends + 1))
    if starts[-1] >= len(raw) or np.isin(raw[starts], _BLANK_STARTS).any():
        return None
    longest = int(np.diff(np.concatenate(([-1], ends, [len(raw)]))).max()) - 1
    return text, len(starts), longest


def iter_line_chunks(path: str, chunk_lines: int) -> Iterator[tuple[int, list[tuple[int, bytes]]]]:
    """Yield ``(chunk_number, [(line_number, line_bytes), ...])`` for a JSONL file.

    Blank lines are skipped (not counted); BOM and ``\r`` are stripped.
    """
    for number, (first, block) in enumerate(iter_line_blocks(path, chunk_lines)):
        lines = block_lines(first, block)
        if lines:
            yield number, lines


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
