"""Decode lines both ways, as ingest does, and compare the verdicts.

*Per line*: :func:`pitwatch.schemas.decode.decode_line`, one line at a time.
*Columnar*: ingest's own step, :class:`pitwatch.pipelines.ingest.DecodeChunk`, run on a
chunk of the lines (Arrow's reader first, the per-line decoder for the rows it
sends back), its outputs collected without Beam.
"""
from __future__ import annotations

import datetime as _dt

from apache_beam.pvalue import TaggedOutput

from pitwatch.inputs.files import LineBlock
from pitwatch.pipelines.ingest import TAG_COUNTS, TAG_REJECTS, DecodeChunk
from pitwatch.schemas.arrow import EVENTS
from pitwatch.schemas.decode import Reject, decode_line

PATH = "fuzz.jsonl"


def per_line(lines: list[bytes], config) -> dict[int, tuple]:
    """line number → ("reject", reason) or ("accept", row of EVENTS' columns)."""
    out = {}
    for number, raw in enumerate(lines, start=1):
        got = decode_line(raw, PATH, number, config)
        if isinstance(got, Reject):
            out[number] = ("reject", got.reason)
        else:
            event, _digest = got
            out[number] = ("accept", {f.name: getattr(event, f.name) for f in EVENTS})
    return out


def columnar(lines: list[bytes], config, kind: str = "jsonl") -> dict[int, tuple]:
    """The same through DecodeChunk, handed the lines as the reader would: one LineBlock when every
    line starts with ``{`` and has no ``\\r``, else a list of ``(number, line)``."""
    if all(raw[:1] == b"{" and b"\r" not in raw and b"\n" not in raw for raw in lines):
        items = LineBlock(1, b"\n".join(lines), len(lines), max(map(len, lines)))
    else:
        items = list(enumerate(lines, start=1))
    out: dict[int, tuple] = {}
    counts = []
    for item in DecodeChunk(config).process((PATH, kind, items)):
        if isinstance(item, TaggedOutput):
            if item.tag == TAG_REJECTS:
                for r in item.value:
                    assert r["line"] not in out
                    out[r["line"]] = ("reject", r["reason"])
            elif item.tag == TAG_COUNTS:
                counts.append(item.value)
            continue
        for row in item.to_pylist():     # the chunk's events, one Arrow table
            assert row["line"] not in out
            out[row["line"]] = ("accept", _as_event_row(row))
    assert counts == [{"read": len(lines), "rejected": sum(v[0] == "reject" for v in out.values())}]
    return out


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _as_event_row(row: dict) -> dict:
    full = {f.name: row.get(f.name) for f in EVENTS}
    ts = full["ts"]
    full["ts"] = (ts - _EPOCH) // _dt.timedelta(microseconds=1) if ts is not None else None
    return full


def assert_same_verdicts(lines: list[bytes], config) -> dict[int, tuple]:
    """Both ways give every line the same verdict, reason and accepted columns; returns them."""
    expected = per_line(lines, config)
    got = columnar(lines, config)
    assert sorted(got) == sorted(expected), "every line is accepted or rejected, once"
    for number, verdict in expected.items():
        assert got[number] == verdict, (lines[number - 1][:300], got[number], verdict)
        assert verdict[0] == "accept" or not verdict[1].startswith("internal error"), (lines[number - 1][:300], verdict)
    return expected
