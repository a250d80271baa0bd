"""The stored bytes of a JSONL input, as text blocks: gunzipped, checked, lines capped; and its Damage.

No file stops a run (:mod:`pitwatch.inputs.files`): a file is read up to its
damage, and :class:`TextBlocks` says where and why it stopped.

* ``.gz``: every gzip member is decompressed with :mod:`zlib`, fed in
  64 KiB pieces; at corrupt data the piece is fed again byte by byte from a
  copy of the decompressor taken before it, so the damage is named at the
  exact stored byte zlib refused and every line before it is kept.  Data
  that ends inside a member is a truncated file (its missing part is not
  on disk: 0 bytes not read).  An empty file is no damage: it holds no line.
* A ``.jsonl`` that starts with another format's magic bytes (gzip,
  Parquet, zip, zstd, bzip2, xz) is not what its name says: not read.
* A read that fails (:class:`OSError`) is damage at the byte reached.
* Only a regular file is read (:func:`open_stored`): a FIFO, a device, a socket or a link to one
  would hang the run or never end.  The run's listing refuses them before reading
  (:func:`refusal`, :mod:`pitwatch.inputs.files`); a file swapped for one between the listing and
  the read is refused at the open (opened with ``O_NONBLOCK``, its descriptor checked with
  ``fstat``): damage at byte 0.
* Each line is cut to ``MAX_LINE_BYTES + 1`` bytes (the decoder rejects it:
  too long), so a file without line ends cannot fill the memory.

One read is the evidence (issue 37): the run's reader hashes the stored bytes as it reads them
(:class:`ReadDigest`; a Parquet file, read by Arrow in ranges, through :class:`HashedFile`), so the
SHA-256 a run records for an input is of exactly the bytes it read, never of a second read.  The
batch's reads (``fixed=True``) stop at the size the file had when it was opened, and a file whose
size or modification time changed by the end of its read is damaged: :func:`changed_while_read`.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import os
import zlib
from typing import Iterator

from pitwatch.config import kind_of
from pitwatch.config import open_regular as open_stored
from pitwatch.schemas.limits import MAX_LINE_BYTES


@dataclasses.dataclass(frozen=True)
class Damage:
    """Where and why a file could not be read to its end."""

    path: str
    offset: int             # byte of the stored file (compressed, for .gz) where the damage is
    bytes_not_read: int     # stored bytes from there to the end of the file
    what: str               # what is wrong, e.g. "gzip data is corrupt (invalid stored block lengths)"
    last_line: int | None = None    # the last line read, when the read stopped at a line (too many rejects)
    # SHA-256 of the stored bytes before ``offset`` as the run's read hashed them (None: not known,
    # pitwatch.inputs.damage reads them again)
    sha256: str | None = dataclasses.field(default=None, compare=False)

    @property
    def reason(self) -> str:
        return (f"damaged file: {self.what}, at byte {self.offset}; the lines before it are read, "
                f"{self.bytes_not_read} bytes after it are not")

    def to_row(self) -> dict:
        return {"path": self.path, "offset": self.offset, "bytes_not_read": self.bytes_not_read,
                "reason": self.reason}



def refusal(path: str) -> str | None:
    """Why a local input path is not read, or None: a regular file (or a link to one), or a remote
    path (its file system says).  Looks at the path only (``stat``): never opens it."""
    if "://" in path:
        return None
    link = os.path.islink(path)
    try:
        st = os.stat(path)      # follows links: a link to a regular file is read
    except FileNotFoundError:
        return (f"a link to nothing ({os.readlink(path)} does not exist): not read" if link
                else "it does not exist (removed while the run listed its inputs): not read")
    except OSError as exc:
        return f"it cannot be examined ({exc.strerror or type(exc).__name__}): not read"
    kind = kind_of(st.st_mode)
    if kind is None:
        return None
    if link:
        return f"not a regular file: a link to {kind} ({os.path.realpath(path)}): not read"
    return f"not a regular file: {kind}: not read"


class ReadDigest:
    """SHA-256 and count of the stored bytes a reader read, updated as it reads them (one pass).

    The last few pieces are kept with the digest before them, so that a read stopped at an earlier
    byte than it reached (the rejects-in-a-row guard stops at a line, its reader read ahead) gives
    the digest of exactly the bytes up to that stop: :meth:`fingerprint`.
    """

    KEEP = 8 << 20      # bytes of the last pieces kept (and the last piece, whatever its size): more
                        # than a JSONL reader reads ahead of its lines (a 4 MB block)

    def __init__(self, path: str):
        self.path = path
        self.sha = hashlib.sha256()
        self.bytes = 0
        self.opened = False     # False: the file could not be opened (nothing read, digest unknown)
        self._recent: collections.deque = collections.deque()
        self._kept = 0

    def update(self, piece: bytes) -> None:
        self._recent.append((self.bytes, self.sha.copy(), piece))
        self._kept += len(piece)
        while self._kept > self.KEEP and len(self._recent) > 1:
            self._kept -= len(self._recent.popleft()[2])
        self.sha.update(piece)
        self.bytes += len(piece)

    def fingerprint(self, stop: int | None = None) -> dict:
        """``{"path", "sha256", "bytes"}`` of the bytes read, or of those before ``stop`` when the
        read stopped there (its lines after ``stop`` are not read)."""
        if not self.opened:
            return {"path": self.path, "sha256": None, "bytes": 0}
        if stop is not None and stop < self.bytes:
            for start, before, piece in reversed(self._recent):
                if start <= stop:
                    sha = before.copy()
                    sha.update(piece[:stop - start])
                    return {"path": self.path, "sha256": sha.hexdigest(), "bytes": stop}
        return {"path": self.path, "sha256": self.sha.hexdigest(), "bytes": self.bytes}


def _stat(f) -> tuple[int, int] | None:
    """(size, mtime_ns) of an open local file, None for a remote one."""
    try:
        st = os.fstat(f.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return st.st_size, st.st_mtime_ns


def changed_while_read(path: str, before: tuple[int, int] | None, after: tuple[int, int] | None,
                       read: int) -> Damage | None:
    """The :class:`Damage` of a file that changed while it was read (``before``: its size and
    modification time when opened, ``after``: when its read ended; ``read``: the stored bytes read,
    up to the size it had when opened), or None.  What was read is what its digest is of: the
    bytes written after the read began are not read, and the file is named for them."""
    if before is None or after is None or after == before:
        return None
    if after[0] > read:
        what = (f"it changed while it was read: {after[0] - read} bytes written after its read began "
                f"(it held {before[0]} when opened, {after[0]} when the read ended) are not read")
        return Damage(path, read, after[0] - read, what)
    if after[0] < before[0]:
        what = f"it changed while it was read: it was cut from {before[0]} to {after[0]} bytes"
    else:
        what = "it changed while it was read: it was written to (its modification time changed)"
    return Damage(path, read, 0, what)


class HashedFile:
    """A file object over a stored file read in ranges (Arrow reads a Parquet file's footer first,
    then its column chunks), hashing exactly the bytes the ranges read, in file order.

    A range read ahead of the bytes hashed so far is held until the bytes before it are read
    (a Parquet footer: 64 KiB); where two reads overlap, their bytes must agree (else the file
    changed: ``conflicting``).  :meth:`finish` reads what no range read (a Parquet file's first
    4 bytes, its page indexes) in order up to the size the file had when opened, so the digest
    is of the file's bytes as they were read: no byte is hashed from a second read of a byte
    the decoder used, but for a range read twice (hashed as the second read gave it, the two
    compared while the first is held).  Reads stop at the size the file had when opened.
    """

    def __init__(self, f, path: str):
        self.f, self.path = f, path
        self.digest = ReadDigest(path)
        self.digest.opened = True
        self.before = _stat(f)
        if self.before is not None:
            self.size = self.before[0]
        else:
            f.seek(0, 2)
            self.size = f.tell()
        f.seek(0)
        self.pos = 0
        self._ahead: dict[int, bytes] = {}
        self.conflicting = False
        self.closed = False

    # the file object Arrow's PythonFile wants
    def readable(self):
        return True

    def seekable(self):
        return True

    def writable(self):
        return False

    def tell(self):
        return self.pos

    def seek(self, offset, whence=0):
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def read(self, n=-1):
        n = self.size - self.pos if n is None or n < 0 else min(n, max(self.size - self.pos, 0))
        if n <= 0:
            return b""
        self.f.seek(self.pos)
        data = self.f.read(n)
        self._took(self.pos, data)
        self.pos += len(data)
        return data

    def close(self):
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _took(self, at: int, data: bytes) -> None:
        end = at + len(data)
        for start, held in list(self._ahead.items()):     # bytes read twice must be the same bytes
            lo, hi = max(at, start), min(end, start + len(held))
            if lo < hi and data[lo - at:hi - at] != held[lo - start:hi - start]:
                self.conflicting = True
        done = self.digest.bytes
        if at > done:
            if len(data) > len(self._ahead.get(at, b"")):
                self._ahead[at] = data
            return
        if end > done:
            self.digest.update(data[done - at:])
        self._drain()

    def _drain(self) -> None:
        while True:
            done = self.digest.bytes
            ready = [start for start in self._ahead if start <= done]
            if not ready:
                return
            for start in ready:
                held = self._ahead.pop(start)
                if start + len(held) > done:
                    self.digest.update(held[done - start:])
                    break

    def finish(self, upto: int | None = None) -> tuple[dict, Damage | None]:
        """The digest of the file's bytes up to its size when opened, or to ``upto`` (a read that
        stopped there): what no range read is read now, in order.  And the :class:`Damage` of a
        file that changed while it was read (None when it stopped early)."""
        end = self.size if upto is None else min(upto, self.size)
        try:
            while self.digest.bytes < end:
                done = self.digest.bytes
                upto_held = min([start for start in self._ahead if start > done] or [end])
                self.f.seek(done)
                piece = self.f.read(min(max(upto_held, done + 1) - done, 1 << 20))
                if not piece:
                    break
                self._took(done, piece)
            after = _stat(self.f)
        except OSError:
            after = None
        self._ahead.clear()
        if upto is not None:
            return self.digest.fingerprint(upto), None
        damage = changed_while_read(self.path, self.before, after, self.digest.bytes)
        if damage is None and (self.conflicting or self.digest.bytes < self.size):
            what = ("it changed while it was read: a range read twice gave different bytes" if self.conflicting
                    else f"it changed while it was read: it was cut to {self.digest.bytes} bytes")
            damage = Damage(self.path, self.digest.bytes, 0, what)
        return self.digest.fingerprint(), damage


def _open(path: str, raw: bool = False):
    """The file's bytes: ``raw``, as stored; else through Beam's ``FileSystems`` (a remote path, or
    decompressed by its suffix).  A local file is opened only if it is a regular file
    (:func:`open_stored`)."""
    if "://" not in path:
        f = open_stored(path)   # a local file's stored bytes: no Beam needed (the watcher reads here too)
        if raw or not path.endswith((".gz", ".bz2", ".zst", ".deflate", ".zz", ".lzma", ".xz")):
            return f
        f.close()               # checked: Beam opens it again to decompress it
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    kind = CompressionTypes.UNCOMPRESSED if raw else CompressionTypes.AUTO
    return FileSystems.open(path, compression_type=kind)



def remote_store(uri: str):
    """An object-store location (``s3://bucket/inbox``) as ``(pyarrow file system, path on it)``:
    what lists a remote inbox and reads its small files (the events themselves are read by Beam's
    ``FileSystems``).  pyarrow reads the standard AWS variables (``AWS_ENDPOINT_URL``,
    ``AWS_ACCESS_KEY_ID`` …) as Beam's boto3 does (docs/inputs.md, "Inputs on an object store")."""
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(uri)
    return fs, path.rstrip("/")


def remote_object_exists(uri: str) -> bool:
    """Whether an object-store location holds an object (not merely a prefix)."""
    import pyarrow.fs as pafs

    fs, path = remote_store(uri)
    return fs.get_file_info(path).type == pafs.FileType.File


def read_remote_small(uri: str, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a small object an operator names on an object store (an
    inbox's ``devices.csv``, ``dealers.csv``); FileNotFoundError when there is none, IsADirectoryError
    for a prefix with objects below it."""
    import pyarrow.fs as pafs

    fs, path = remote_store(uri)
    kind = fs.get_file_info(path).type
    if kind == pafs.FileType.NotFound:
        raise FileNotFoundError(2, "No such file", uri)
    if kind == pafs.FileType.Directory:
        raise IsADirectoryError(21, "Is a directory", uri)
    with fs.open_input_stream(path) as f:
        return f.read(limit + 1)


def stored_size(path: str) -> int:
    try:
        if "://" not in path:
            return os.path.getsize(path)
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    except Exception:   # noqa: BLE001 - the size only says how much was not read
        return 0


# What a file holds, by its first bytes, when it is not what its name says.
_MAGIC = ((b"\x1f\x8b", "gzip data"), (b"PAR1", "a Parquet file"), (b"PK\x03\x04", "a zip archive"),
          (b"\x28\xb5\x2f\xfd", "zstd data"), (b"BZh", "bzip2 data"), (b"\xfd7zXZ\x00", "xz data"))
_PIECE = 64 << 10
_OUT = 1 << 20      # most bytes one call to zlib decompresses


class TextBlocks:
    """The bytes of a JSONL file (gunzipped for ``.gz``), in blocks of about ``block_size``,
    each line cut to ``MAX_LINE_BYTES + 1`` bytes; after the last block, ``damage`` is the
    file's :class:`Damage` or None, and ``digest`` (:class:`ReadDigest`) the SHA-256 of the
    stored bytes read.

    ``fixed`` (the batch's read): the file is read up to the size it had when it was opened, and
    one that changed by the end of its read (grew, was cut, was written to) ends with the
    :class:`Damage` :func:`changed_while_read` gives: the bytes written after the read began are
    not read, and the run names the file.  ``upto``: the stored bytes are read up to that byte
    (a run's read of the file again, up to where its first read stopped)."""

    def __init__(self, path: str, block_size: int = 4 << 20, fixed: bool = False, upto: int | None = None):
        self.path, self.block_size, self.fixed, self.upto = path, block_size, fixed, upto
        self.damage: Damage | None = None
        self.digest = ReadDigest(path)      # of the stored bytes read, as they are read
        self._run = 0       # bytes of the line being read so far

    def __iter__(self) -> Iterator[bytes]:
        out: list[bytes] = []
        size = 0
        for piece in self._pieces():
            piece = self._cap(piece)
            out.append(piece)
            size += len(piece)
            if size >= self.block_size:
                yield b"".join(out)
                out, size = [], 0
        if out:
            yield b"".join(out)

    def _cap(self, piece: bytes) -> bytes:
        """``piece`` (at most MAX_LINE_BYTES long) with the bytes of its lines beyond the cap dropped."""
        cap = MAX_LINE_BYTES + 1
        first = piece.find(b"\n")
        if first < 0:
            keep = max(0, cap - self._run)
            self._run += len(piece)
            return piece if keep >= len(piece) else piece[:keep]
        keep = max(0, cap - self._run)
        self._run = len(piece) - piece.rfind(b"\n") - 1
        return piece if keep >= first else piece[:keep] + piece[first:]

    def _stop(self, offset: int, what: str) -> None:
        size = max(stored_size(self.path), offset)
        self.damage = Damage(self.path, offset, size - offset, what)

    def _raw_pieces(self, offset: list):
        """The stored bytes in pieces of at most MAX_LINE_BYTES, each hashed as it is read;
        ``offset[0]``: bytes read so far."""
        try:
            with _open(self.path, raw=True) as f:
                self.digest.opened = True
                before = _stat(f) if self.fixed else None
                left = before[0] if before is not None else None
                if self.upto is not None:
                    left = self.upto if left is None else min(left, self.upto)
                while True:
                    want = min(_PIECE * 16, MAX_LINE_BYTES) if left is None else min(_PIECE * 16, MAX_LINE_BYTES, left)
                    piece = f.read(want) if want else b""
                    if not piece:
                        break
                    self.digest.update(piece)
                    if left is not None:
                        left -= len(piece)
                    yield piece
                    offset[0] += len(piece)
                if before is not None:
                    changed = changed_while_read(self.path, before, _stat(f), offset[0])
                    if changed is not None:
                        self.damage = changed
        except OSError as exc:
            self._stop(offset[0], f"the file cannot be read ({exc.strerror or type(exc).__name__})")

    def _pieces(self) -> Iterator[bytes]:
        offset = [0]
        if self.path.endswith(".gz"):
            yield from self._gunzipped(offset)
            return
        first = True
        for piece in self._raw_pieces(offset):
            if first:
                first = False
                for magic, what in _MAGIC:
                    if piece.startswith(magic):
                        self._stop(0, f"it holds {what}, not JSON Lines text")
                        return
            yield piece

    def _gunzipped(self, offset: list) -> Iterator[bytes]:
        """The gzip members of the file, decompressed; at corrupt data, where zlib found it."""
        d = zlib.decompressobj(31)
        started = False     # a member has begun (its bytes were fed)
        member = 0          # the stored byte where the current member starts
        for raw in self._raw_pieces(offset):
            at = offset[0]
            for lo in range(0, len(raw), _PIECE):
                data = raw[lo:lo + _PIECE]
                pending = False     # the last call stopped at _OUT bytes: more may come without input
                while data or pending:
                    before = d.copy()
                    try:
                        out = d.decompress(data, _OUT)      # bounded: 64 KiB of a bomb are ~64 MB
                    except zlib.error as exc:
                        good, bad_at = _find_corrupt_byte(before, data)
                        if good:
                            yield good
                        if _zlib_reason(exc) == "incorrect header check":
                            member = member if started else at + lo
                            self._stop(member, "it is not gzip data" if member == 0 else
                                       "what follows its last gzip member is not gzip data")
                        else:
                            self._stop(at + lo + bad_at, f"gzip data is corrupt ({_zlib_reason(exc)})")
                        return
                    if not started:
                        member, started = at + lo, True
                    if out:
                        yield out
                    if d.eof:       # a member ended: what follows is another member (or garbage)
                        rest = d.unused_data or d.unconsumed_tail
                        lo += len(data) - len(rest)
                        data = rest
                        d = zlib.decompressobj(31)
                        started = pending = False
                    else:
                        rest = d.unconsumed_tail
                        lo += len(data) - len(rest)
                        data = rest
                        pending = len(out) == _OUT
        if self.damage is not None:
            return
        if started:     # an empty file is no damage: it holds no line
            self._stop(offset[0], "gzip data ends before its stream does: the file is truncated")


def line_end_offset(path: str, line: int) -> int:
    """The stored byte the read of ``path`` reached when it stopped after physical line ``line``
    (a read stopped by the rejects in a row, :mod:`pitwatch.pipelines.ingest`): in a plain file, the byte
    after that line's end; in a ``.gz``, the end of the 64 KiB piece of stored bytes whose
    decompressed data holds that line's end (a gzip stream cannot be cut at a line); in a Parquet
    file, the end of the row group holding that row.  Deterministic: the finding's key
    (:mod:`pitwatch.rules.input_damage`) is the SHA-256 of the stored bytes before it."""
    size = stored_size(path)
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        with _open(path) as f:
            meta = pq.ParquetFile(f).metadata
        rows = 0
        for g in range(meta.num_row_groups):
            rows += meta.row_group(g).num_rows
            if rows >= line and g + 1 < meta.num_row_groups:
                return _row_groups_from(meta, g + 1)[0]
        return size
    seen = 0
    offset = 0
    d = zlib.decompressobj(31) if path.endswith(".gz") else None
    with _open(path, raw=True) as f:
        while True:
            piece = f.read(_PIECE)
            if not piece:
                return offset
            if d is None:
                count = piece.count(b"\n")
                if seen + count >= line:
                    at = -1
                    for _ in range(line - seen):
                        at = piece.index(b"\n", at + 1)
                    return offset + at + 1
                seen += count
                offset += len(piece)
                continue
            offset += len(piece)
            data, pending = piece, False
            try:
                while data or pending:
                    out = d.decompress(data, _OUT)
                    seen += out.count(b"\n")
                    if d.eof:
                        data, d, pending = d.unused_data or d.unconsumed_tail, zlib.decompressobj(31), False
                    else:
                        data, pending = d.unconsumed_tail, len(out) == _OUT
            except zlib.error:
                return offset
            if seen >= line:
                return offset


def _row_groups_from(metadata, first: int) -> tuple[int, int]:
    """The byte where row group ``first`` starts, and the compressed bytes of it and those after it."""
    try:
        starts, size = [], 0
        for g in range(first, metadata.num_row_groups):
            group = metadata.row_group(g)
            for c in range(group.num_columns):
                chunk = group.column(c)
                size += chunk.total_compressed_size
                if g == first:
                    starts.append(chunk.dictionary_page_offset if chunk.has_dictionary_page
                                  else chunk.data_page_offset)
        return (min(starts) if starts else 0), size
    except Exception:   # noqa: BLE001 - metadata that cannot say: unknown
        return 0, 0


def _find_corrupt_byte(d, data: bytes) -> tuple[bytes, int]:
    """Feed ``data`` byte by byte to ``d`` (a copy from before the failing call): what it decompressed
    before the error, and the position in ``data`` of the byte it refused."""
    out = []
    for i in range(len(data)):
        try:
            out.append(d.decompress(data[i:i + 1]))
        except zlib.error:
            return b"".join(out), i
    return b"".join(out), len(data)


def _zlib_reason(exc: zlib.error) -> str:
    text = str(exc)
    return text.split(": ", 1)[1] if text.startswith("Error -3 while decompressing data: ") else text


