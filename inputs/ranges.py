"""One large JSONL file read in parallel: byte ranges at line boundaries (issue 40).

A collector or a broker export gives one big time-ordered file; read and decoded by one
worker, it leaves every other core idle.  The launcher reads such a file once, in order
(:func:`plan_ranges`): it hashes it (the SHA-256 the run records for the file: of exactly the
bytes read), counts its lines and cuts it into :class:`FileRange` s of about ``RANGE_BYTES``
at line ends, each with the number of its first line and the SHA-256 of its bytes.  Each range
is then read and decoded by whichever worker gets it (:func:`read_range`; numbered from its
first line, so every ``line`` in the lake is the one a whole read gives), and it checks that
its bytes are still those the launcher hashed.

A file is read whole, as before, when a range cannot give exactly what a whole read gives:

* it is compressed (``.gz``: a gzip stream cannot be entered in the middle), Parquet, or remote;
* it is smaller than ``2 * RANGE_BYTES`` (one worker reads it in about the time it takes to plan);
* the launcher's read finds it damaged, not JSON Lines (another format's magic bytes), holding a
  line longer than the decoder takes (``MAX_LINE_BYTES``: a whole read cuts it), or changed while
  it was read.

And after the read, a split file is read again whole (by the same run, before anything is
committed: :func:`whole_reads_needed`) when a range found its bytes changed since the
launcher's read, or when the rejects-in-a-row guard (``--max-rejects-in-a-row``) could have
stopped a whole read: a row of rejected lines reaching the limit within a range or across the
ranges' boundaries.  The whole read then decides, as it always did, where the file's read
stops and what its digest is.  These are hostile or damaged inputs; a clean file is read once
by the launcher and once in ranges.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os

from pitwatch.inputs.stored import _MAGIC, _stat, open_stored
from pitwatch.schemas.limits import MAX_LINE_BYTES

RANGE_BYTES = 32 << 20      # stored bytes of a range: a few per worker on a day's file of 1.4M events (~500 MB)
READ_BYTES = 4 << 20        # the launcher's reads


@dataclasses.dataclass(frozen=True)
class FileRange:
    """Bytes ``[start, end)`` of ``path``, a whole number of lines, the first of them numbered
    ``first_line``; ``sha256``: of those bytes as the launcher read them.  Range ``index`` of
    ``count``; the file's ``fingerprint`` (path, SHA-256, bytes of the launcher's read) travels
    with range 0, which records it."""

    path: str
    index: int
    count: int
    start: int
    end: int
    first_line: int
    sha256: str
    fingerprint: dict | None = None


def splittable(path: str) -> bool:
    """Whether a file's name and size let it be read in ranges (its bytes decide the rest)."""
    if "://" in path or not path.endswith(".jsonl"):
        return False
    try:
        return os.path.getsize(path) >= 2 * RANGE_BYTES
    except OSError:
        return False


def plan_ranges(path: str, range_bytes: int | None = None) -> list[FileRange] | None:
    """The launcher's one read of ``path``: its ranges of about ``range_bytes`` (``RANGE_BYTES``),
    or None when it is read whole (the module's list: damaged, another format, a line too long,
    changed while read, one range only)."""
    import numpy as np

    range_bytes = range_bytes or RANGE_BYTES
    ranges: list[FileRange] = []
    whole = hashlib.sha256()
    part = hashlib.sha256()
    start, first_line = 0, 1
    lines = 0               # line ends before ``offset``
    last_end = -1           # offset of the last line end seen
    offset = 0
    try:
        with open_stored(path) as f:
            before = _stat(f)
            size = before[0] if before is not None else os.path.getsize(path)
            if size < 2 * range_bytes:
                return None
            while offset < size:
                block = f.read(min(READ_BYTES, size - offset))
                if not block:
                    return None                         # cut while read
                if offset == 0 and any(block.startswith(magic) for magic, _what in _MAGIC):
                    return None                         # not JSON Lines: the whole read says what it is
                ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) + offset
                longest = np.diff(ends, prepend=last_end).max() - 1 if len(ends) else offset + len(block) - last_end - 1
                if longest > MAX_LINE_BYTES:
                    return None                         # a whole read cuts that line: keep its way
                whole.update(block)
                target = start + range_bytes
                at = 0                                  # bytes of ``block`` hashed into ``part``
                while size - target >= range_bytes // 2:   # a cut leaves a range of at least half the size
                    k = int(np.searchsorted(ends, target))  # the first line end at or after the target
                    if k == len(ends):
                        break
                    cut = int(ends[k]) + 1
                    part.update(block[at:cut - offset])
                    at = cut - offset
                    n = lines + k + 1                   # line ends before the cut
                    ranges.append(FileRange(path, len(ranges), 0, start, cut, first_line, part.hexdigest()))
                    part, start, first_line = hashlib.sha256(), cut, n + 1
                    target = start + range_bytes
                part.update(block[at:])
                if len(ends):
                    last_end = int(ends[-1])
                lines += len(ends)
                offset += len(block)
            if size - last_end - 1 > MAX_LINE_BYTES:
                return None                             # the last line, without a line end, too long
            if _stat(f) != before:
                return None                             # changed while read: the whole read names it
    except OSError:
        return None                                     # the whole read says what is wrong
    ranges.append(FileRange(path, len(ranges), 0, start, size, first_line, part.hexdigest()))
    if len(ranges) < 2:
        return None
    fingerprint = {"path": path, "sha256": whole.hexdigest(), "bytes": size}
    return [dataclasses.replace(r, count=len(ranges), fingerprint=fingerprint if r.index == 0 else None)
            for r in ranges]


def read_range(r: FileRange) -> bytes | None:
    """The range's bytes, or None when they are not the ones the launcher read (the file changed
    or cannot be read since): the file is then read again whole."""
    try:
        with open_stored(r.path) as f:
            f.seek(r.start)
            data = f.read(r.end - r.start)
    except OSError:
        return None
    if len(data) != r.end - r.start or hashlib.sha256(data).hexdigest() != r.sha256:
        return None
    return data


def whole_reads_needed(reports: list, max_rejects: int) -> list[str]:
    """The split files to read again whole, from their ranges' reports ``[path, index, count,
    status, leading, trailing, all_rejected]`` (status ``read``, ``changed`` or ``tripped``;
    ``leading`` / ``trailing``: rejected lines in a row at its start / end, blank lines not
    counted; ``all_rejected``: every line of the range was).  A file is read again when a range
    changed or tripped the rejects-in-a-row guard, a range is missing, or a row of rejected lines
    across ranges reaches ``max_rejects`` (0: no guard)."""
    by_path: dict[str, list] = {}
    for report in reports:
        by_path.setdefault(report[0], []).append(report)
    again = []
    for path, rows in sorted(by_path.items()):
        rows.sort(key=lambda row: row[1])
        if [row[1] for row in rows] != list(range(rows[0][2])) or any(row[3] != "read" for row in rows):
            again.append(path)
            continue
        if not max_rejects:
            continue
        run = 0
        for _path, _index, _count, _status, leading, trailing, all_rejected in rows:
            if all_rejected:
                run += leading
            else:
                if run + leading >= max_rejects:
                    break
                run = trailing
            if run >= max_rejects:
                break
        else:
            continue
        again.append(path)
    return again


class RangeBlocks:
    """A range's bytes as the blocks :func:`pitwatch.inputs.files.iter_jsonl_chunks` reads (a
    :class:`pitwatch.inputs.stored.TextBlocks` of a whole file gives the same): no damage, the
    launcher's read checked its lines."""

    damage = None

    def __init__(self, data: bytes):
        self.data = data

    def __iter__(self):
        for lo in range(0, len(self.data), READ_BYTES):
            yield self.data[lo:lo + READ_BYTES]
