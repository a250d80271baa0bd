"""Input files: expand the user's paths, read them in chunks, fingerprint them.

A directory means every ``.jsonl``, ``.jsonl.gz`` and ``.parquet`` file under
it (recursively); a glob is expanded; a plain path must exist.  Files are
read through Beam's ``FileSystems`` so the same code reads local disks, GCS or
S3 on a cluster.  Line numbers are physical (1-based) so a rejected line can
be found again with ``sed -n Np``; lines holding only white space are skipped
and not counted; a UTF-8 byte-order mark and CRLF line ends are accepted.

No file stops a run.  A damaged file (gzip data that is truncated or corrupt,
a file that is not what its name says, a Parquet file that cannot be read,
a read that fails) is read up to the damage: the lines before it are kept,
and the readers end with one :class:`Damage` (where, why, how many of the
file's stored bytes were not read), which ingest turns into one ``rejects``
row and the run's ``damaged_files`` / ``bytes_not_read``.  A line cut by the
damage (the end of a truncated gzip) is read as a line, like a last line
without its line end.  A line longer than :data:`pitwatch.schemas.limits.MAX_LINE_BYTES`
is handed on cut to that length plus one byte (the decoder rejects it), so
a file without line ends cannot fill the memory.

Only regular files are read (:func:`expand_inputs`, :func:`pitwatch.inputs.stored.open_stored`):
a FIFO, a device, a socket or a link to one is refused with the reason, and the other files
are read (docs/inputs.md, "Files that are not files").
"""
from __future__ import annotations

import glob
import hashlib
import os
from typing import Generator, Iterator

from pitwatch.inputs.parquet import iter_parquet_chunks
from pitwatch.inputs.stored import Damage, TextBlocks, _open, refusal

__all__ = ["INPUT_SUFFIXES", "Damage", "InputError", "JoinedLines", "LineBlock", "expand_inputs", "file_fingerprint", "refusal",
           "iter_jsonl_chunks", "iter_line_chunks", "iter_parquet_chunks"]

INPUT_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")


class InputError(ValueError):
    """A user mistake about the inputs (missing file, nothing to read)."""


def read_operator_csv(path: str, limit: int, what: str, error: type[InputError] = InputError) -> bytes:
    """The bytes of a small CSV file an operator names (the device registry, the dealers' roster,
    a batch of reviews), read by :func:`pitwatch.config.read_small` (a FIFO or a device is refused,
    never waited on); each refusal is ``error`` with one line ``{what} {path}: …``."""
    from pitwatch.config import NotRegularFile, read_small
    from pitwatch.inputs.stored import read_remote_small

    try:
        data = read_remote_small(path, limit) if "://" in path else read_small(path, limit)
    except NotRegularFile as exc:
        raise error(f"{what} {path}: {exc.strerror}, not a CSV file") from None
    except IsADirectoryError:
        raise error(f"{what} {path}: is a folder, not a CSV file") from None
    except FileNotFoundError:
        raise error(f"{what} {path}: no such file") from None
    except PermissionError:
        raise error(f"{what} {path}: permission denied") from None
    except OSError as exc:
        raise error(f"{what} {path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise error(f"{what} {path}: larger than {limit >> 20} MiB, more than such a file ever holds")
    return data


def expand_inputs(paths: list[str], refused: list[dict] | None = None) -> list[str]:
    """Absolute, sorted, de-duplicated list of input files.

    Only regular files (and links to them) are read: a FIFO, a device, a socket or a link to one
    (or to nothing) found by a folder or a glob, or named, is left out and appended to
    ``refused`` as ``{"path", "reason"}`` (:func:`pitwatch.inputs.stored.refusal`; the run names it
    on stderr and in its record): it must neither hang the run nor keep the other files out.
    Nothing left to read is an :class:`InputError` naming the refused files.
    """
    if not paths:
        raise InputError("no input given")
    found: list[str] = []
    left_out: list[dict] = []

    def take(candidates) -> int:
        kept = 0
        for path in candidates:
            reason = refusal(path)
            if reason is None:
                found.append(path)
                kept += 1
            else:
                left_out.append({"path": os.path.abspath(path), "reason": reason})
        return kept
    for p in paths:
        if "://" in p:  # an object store (s3://, gs://): listed by Beam's FileSystems
            found.extend(remote_inputs(p))
            continue
        if any(ch in p for ch in "*?["):
            matches = sorted(glob.glob(p, recursive=True))
            files = [m for m in matches if m.endswith(INPUT_SUFFIXES) and not os.path.isdir(m)]
            if not files:
                raise InputError(f"no .jsonl, .jsonl.gz or .parquet file matches {p}")
            take(files)
        elif os.path.isdir(p):
            files = [
                os.path.join(root, f)
                for root, _dirs, names in os.walk(p)
                for f in names
                if f.endswith(INPUT_SUFFIXES) and not f.startswith(".")
            ]
            if not files:
                raise InputError(f"directory {p} holds no .jsonl, .jsonl.gz or .parquet file")
            take(files)
        elif os.path.lexists(p):
            take([p])
        else:
            raise InputError(f"input {p} does not exist")
    out = sorted({f if "://" in f else os.path.abspath(f) for f in found})
    left_out = sorted({f["path"]: f for f in left_out}.values(), key=lambda f: f["path"])
    if refused is not None:
        refused.extend(left_out)
    if not out and left_out:
        raise InputError(f"no input file to read: {refused_named(left_out)}")
    return out


def remote_inputs(p: str) -> list[str]:
    """The input files an object-store path names, listed by Beam's ``FileSystems`` (what reads
    them): a glob, its matches with an input suffix; an object, itself; a folder (a prefix, with
    or without its ``/``), every ``.jsonl``, ``.jsonl.gz`` and ``.parquet`` object below it but
    hidden ones, as for a local folder.  An object store has only regular objects: nothing is
    refused.  InputError when nothing matches, or when the store cannot be listed (its reason)."""
    from apache_beam.io.filesystem import BeamIOError
    from apache_beam.io.filesystems import FileSystems

    def match(pattern: str) -> list[str]:
        try:
            return [m.path for r in FileSystems.match([pattern]) for m in r.metadata_list]
        except BeamIOError as exc:
            reasons = "; ".join(f"{e}" for e in (exc.exception_details or {}).values()) or str(exc)
            raise InputError(f"input {p}: cannot list it ({reasons})") from None

    def readable(path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        return path.endswith(INPUT_SUFFIXES) and not name.startswith(".")

    if any(ch in p.split("://", 1)[1] for ch in "*?["):
        files = [m for m in match(p) if readable(m)]
        if not files:
            raise InputError(f"no .jsonl, .jsonl.gz or .parquet file matches {p}")
        return files
    if not p.endswith("/") and p in match(p):
        return [p]
    files = [m for m in match(p.rstrip("/") + "/**") if readable(m)]
    if not files:
        raise InputError(f"input {p}: no .jsonl, .jsonl.gz or .parquet file there (nothing below it on the store)")
    return files


def refused_named(files: list[dict], most: int = 10) -> str:
    shown = "; ".join(f"{f['path']} ({f['reason']})" for f in files[:most])
    return shown + (f" and {len(files) - most} more" if len(files) > most else "")


def file_fingerprint(path: str) -> dict:
    """SHA-256 and size of the file's bytes as stored now (compressed if .gz): a read of its own.

    Not what a run records: a run records the digest its reader computed while reading
    (:class:`pitwatch.inputs.stored.ReadDigest`), of exactly the bytes it read.  This one is for
    checking a file against that record later (tests, an operator)."""
    h = hashlib.sha256()
    size = 0
    try:
        with _open(path, raw=True) as f:
            while True:
                block = f.read(1 << 20)
                if not block:
                    break
                h.update(block)
                size += len(block)
    except OSError:     # the read fails: the file's Damage says so; its digest is unknown
        return {"path": path, "sha256": None, "bytes": size}
    return {"path": path, "sha256": h.hexdigest(), "bytes": size}


def iter_line_chunks(path: str, chunk_lines: int, source: TextBlocks | None = None
                     ) -> Iterator[tuple[int, list[tuple[int, bytes]]]]:
    """Yield ``(chunk_number, [(line_number, line_bytes), ...])`` for a JSONL file.

    Blank lines are skipped (not counted); BOM and ``\\r`` are stripped.  A damaged file
    ends at its damage (:class:`TextBlocks`).  ``source``: the file's reader (else one of 1 MiB
    blocks).
    """
    chunk: list[tuple[int, bytes]] = []
    number = 0
    for lineno, raw in enumerate(_lines(source if source is not None else TextBlocks(path, 1 << 20)), start=1):
        line = _kept(lineno, raw)
        if line is None:
            continue
        chunk.append((lineno, line))
        if len(chunk) >= chunk_lines:
            yield number, chunk
            number += 1
            chunk = []
    if chunk:
        yield number, chunk


class LineBlock:
    """Consecutive lines of a JSONL file held as one ``bytes``, joined by ``\\n``.

    Every line is *plain*: it starts with ``{`` and holds no ``\\r``, so each
    is exactly what :func:`iter_line_chunks` gives, numbered ``first + i``,
    and Arrow's JSON reader may be handed it (a block it parses must not
    start with ``null``: pyarrow 25 dies of a segmentation fault).  The
    columnar decoder reads ``data`` as it is, without a ``bytes`` object per
    line; ``block[i]`` (``(line_number, line)``, like a chunk's items) splits
    it once, for the few lines decoded one by one.
    """

    def __init__(self, first: int, data: bytes, count: int, longest: int):
        self.first, self.data, self.count, self.longest = first, data, count, longest
        self._lines: list[bytes] | None = None

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> tuple[int, bytes]:
        if self._lines is None:
            self._lines = self.data.split(b"\n")
        if i < 0:
            i += self.count
        return self.first + i, self._lines[i]

    def line_numbers(self):
        import numpy as np

        return np.arange(self.first, self.first + self.count, dtype=np.int64)

    def __getstate__(self):
        return self.first, self.data, self.count, self.longest

    def __setstate__(self, state):
        self.first, self.data, self.count, self.longest = state
        self._lines = None


class JoinedLines:
    """The plain lines of several small files (a :class:`LineBlock` each), joined into one block so
    that they are decoded in one columnar pass: ``paths[i]`` is the file of line ``i``."""

    def __init__(self, blocks: list[tuple[str, LineBlock]]):
        import numpy as np

        self.blocks = blocks
        self.data = b"\n".join(block.data for _path, block in blocks)
        self.count = sum(block.count for _path, block in blocks)
        self.longest = max(block.longest for _path, block in blocks)
        self._ends = np.cumsum([block.count for _path, block in blocks])
        self._lines: list[bytes] | None = None

    def __len__(self) -> int:
        return self.count

    def path_of(self, i: int) -> str:
        import numpy as np

        return self.blocks[int(np.searchsorted(self._ends, i, side="right"))][0]

    def __getitem__(self, i: int) -> tuple[int, bytes]:
        import numpy as np

        if self._lines is None:
            self._lines = self.data.split(b"\n")
        k = int(np.searchsorted(self._ends, i, side="right"))
        first = self._ends[k - 1] if k else 0
        return self.blocks[k][1].first + i - int(first), self._lines[i]

    def line_numbers(self):
        import numpy as np

        return np.concatenate([block.line_numbers() for _path, block in self.blocks])

    def files(self):
        """One path per line, as an Arrow string array."""
        import numpy as np
        import pyarrow as pa

        which = np.repeat(np.arange(len(self.blocks)), [block.count for _path, block in self.blocks])
        return pa.array([path for path, _block in self.blocks], pa.string()).take(pa.array(which))


_BOM = b"\xef\xbb\xbf"
_BRACE = ord("{")


def iter_jsonl_chunks(path: str, chunk_lines: int, block_size: int = 4 << 20, source=None, first_line: int = 1
                      ) -> Generator[LineBlock | list[tuple[int, bytes]] | Damage, None, None]:
    """The lines of a JSONL file in chunks of at most ``chunk_lines``: the same lines, numbers and
    order as :func:`iter_line_chunks`, a chunk of plain lines as one :class:`LineBlock`.

    A chunk never spans two reads of ``block_size`` bytes (4 MB: ~16,000 lines
    of the contract's size), so a larger ``chunk_lines`` gives no larger chunks.

    A chunk holding a line that does not start with ``{`` (a blank line, white
    space, a byte-order mark, ``null``, …) or holds a ``\\r`` comes as
    ``[(line_number, line), ...]`` (blank lines left out, ``\\r\\n`` and the
    mark stripped), exactly as :func:`iter_line_chunks` reads it.  Lines are
    found with NumPy on whole read blocks: no Python object per line.  A damaged file's
    last item is its :class:`Damage`.  ``source``: the file's reader (the batch's: a
    ``TextBlocks(path, fixed=True)``, whose ``digest`` is of the bytes read; or a range's
    :class:`pitwatch.inputs.ranges.RangeBlocks`, its first line numbered ``first_line``), else
    one of ``block_size``.
    """
    import numpy as np

    number = first_line            # the line number of the first line in ``rest``
    rest = b""
    source = source if source is not None else TextBlocks(path, block_size)
    blocks = iter(source)
    while True:
        block = next(blocks, b"")
        data = rest + block if rest else block
        if block:
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data         # one line longer than a read block
                continue
            data, rest = data[:cut], data[cut:]
        elif data:
            data, rest = data + b"\n", b""      # the last line had no line end
        else:
            if source.damage is not None:
                yield source.damage
            return
        buf = np.frombuffer(data, dtype=np.uint8)
        ends = np.flatnonzero(buf == 10)
        starts = np.concatenate(([0], ends[:-1] + 1))
        plain = buf[starts] == _BRACE          # an empty line starts with its own \n
        for a in range(0, len(ends), chunk_lines):
            b = min(a + chunk_lines, len(ends))
            lo, hi = int(starts[a]), int(ends[b - 1])
            if plain[a:b].all() and data.find(b"\r", lo, hi) < 0:
                yield LineBlock(number + a, data[lo:hi], b - a, int((ends[a:b] - starts[a:b]).max()))
                continue
            chunk = []
            for i in range(a, b):
                line = _kept(number + i, data[int(starts[i]):int(ends[i])])
                if line is not None:
                    chunk.append((number + i, line))
            if chunk:
                yield chunk
        number += len(ends)


def _kept(number: int, line: bytes) -> bytes | None:
    """A line as the decoders get it (line 1's byte-order mark and the line end stripped), or None
    for a blank line, which is skipped and not counted."""
    if number == 1 and line.startswith(_BOM):
        line = line[3:]
    line = line.rstrip(b"\r\n")
    return line if line.strip() else None


def _lines(blocks) -> Iterator[bytes]:
    """Lines of a file read in large blocks (:class:`TextBlocks`)."""
    rest = b""
    for block in blocks:
        parts = (rest + block).split(b"\n")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


