"""What a line may be before it is parsed, and what the lake can hold: the contract's bounds.

Decisions where ``spec/events.md`` is silent (a casino systems integrator's
reading), shared by the per-line decoder (:mod:`pitwatch.schemas.decode`) and the
columnar one (:mod:`pitwatch.schemas.columnar`) so that their verdicts cannot differ:

* A line longer than :data:`MAX_LINE_BYTES` (1 MiB, some thousand times a
  real event) is rejected unparsed: "line longer than 1048576 bytes".  The
  reader (:mod:`pitwatch.inputs.files`) hands on only its first
  ``MAX_LINE_BYTES + 1`` bytes, so a file without line ends cannot fill the
  memory.
* A line whose JSON nests deeper than :data:`MAX_DEPTH` (64) arrays and
  objects is rejected unparsed: "nested deeper than 64 levels".  An event
  nests 2 levels (a list of cards in the object); unknown fields may nest
  more, up to that bound.  The check scans the bytes (:func:`nesting_depth`):
  its time is linear in the line's length, whatever the nesting (a 20 KB
  line of 10,000 nested arrays took 14 s to reject before it).
* Integers are at most ``2**63 - 1`` (the lake's int64 columns): ``seq`` is
  ``0 <= seq < 2**63`` (version 2), and so is every other integer field.
* Timestamps the lake can hold (version 2): from 1970-01-01T00:00:00Z up to,
  not including, 9999-01-01T00:00:00Z (UTC), and not written in year 9999
  whatever the offset; with a run's last day (:attr:`pitwatch.schemas.decode.GamingDayConfig.not_after`),
  a gaming day at most :data:`HORIZON_DAYS` (2) after it.
"""
from __future__ import annotations

import datetime as _dt
import re

MAX_LINE_BYTES = 1 << 20
MAX_DEPTH = 64
INT_LIMIT = 1 << 63                       # integers are below this (int64)
HORIZON_DAYS = 2

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
MIN_TS_MICROS = 0                                                    # 1970-01-01T00:00:00Z
END_TS_MICROS = (_dt.datetime(9999, 1, 1, tzinfo=_dt.timezone.utc) - _EPOCH) // _dt.timedelta(microseconds=1)

# A JSON string (the unrolled loop: linear time); what is left holds the brackets that nest.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of ``[`` / ``{`` in ``data``, outside JSON strings (an upper bound
    for text that is not JSON).  Linear time; cheap when the line has few brackets."""
    opened = data.count(b"[") + data.count(b"{")
    if opened <= MAX_DEPTH:
        return opened                      # cannot nest deeper than it opens: the common case
    import numpy as np

    brackets = np.frombuffer(_STRING.sub(b'""', data).translate(None, _NOT_BRACKETS), dtype=np.uint8)
    if brackets.size == 0:
        return 0
    # the running depth; a close before its open makes it dip below 0: the text is not JSON then,
    # and every parser stops at that close, before any depth after it
    return int(np.cumsum(np.where((brackets == 0x5B) | (brackets == 0x7B), 1, -1)).max())


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def line_problem(data: bytes) -> str | None:
    """Why a line is rejected before it is parsed (too long, too deep), or None."""
    if len(data) > MAX_LINE_BYTES:
        return f"line longer than {MAX_LINE_BYTES} bytes: not read"
    if nesting_depth(data) > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels of arrays and objects: not read"
    return None
