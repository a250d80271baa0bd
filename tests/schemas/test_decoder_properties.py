"""Property tests (hypothesis): any JSON value in any field, any bytes as a line, through both decoders.

Each line must be accepted or rejected with a reason, never raise (nor end
in ``internal error``), and the per-line decoder and ingest's columnar step
must agree on the verdict, the reason and every accepted column
(``both_ways``).  Lines go in blocks, as the reader hands them on, so that a
bad line sits among good ones in Arrow's reader.
"""
from __future__ import annotations

import datetime as _dt

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pitwatch.schemas import contract as C
from pitwatch.schemas.decode import GamingDayConfig
from tests.schemas.both_ways import assert_same_verdicts

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CONFIGS = [GamingDayConfig(), GamingDayConfig("04:30", "America/New_York", _dt.date(2026, 11, 28))]

_VALID = {
    "id": "X-1", "event_id": "e-1", "str": "words", "ts": "2026-11-28T20:00:01.250Z", "int0": 0, "int1": 1,
    "seat": 2, "street": 3, "bool": False, "amount": 25.5, "card": "7h", "cards": ["As", "Td"],
    "cards5": ["As", "Ks", "Qs", "Js", "Ts"],
    "pattern:TARGET_PATTERN": "player", "pattern:SEAT_OR_SUPERVISOR_PATTERN": "seat:1",
    "pattern:SEAT_REF_PATTERN": "seat:4",
}


def _valid_value(name: str):
    kind = C.FIELDS[name]
    if kind.startswith("enum:"):
        return getattr(C, kind[5:])[0]
    return _VALID[kind]


def valid_event(etype: str, seq: int) -> dict:
    """A contract-valid event of ``etype``: its required fields, and its optional ones."""
    source, required, optional = C.TYPES[etype]
    ev = {name: _valid_value(name) for name in C.required_fields(etype) + required + optional}
    ev.update(type=etype, source=source, seq=seq, event_id=f"e-{etype}-{seq}", round_id="R-1")
    return ev


json_scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
                | st.sampled_from(["", "7h", "seat:0", "seat:1", "burn", "1970-01-01T00:00:00Z",
                                   "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00Z", "2026-11-28T20:00:01Z",
                                   "2026-12-25T20:00:01Z", "2026-11-28t20:00:01z", "2026-02-30T20:00:01Z",
                                   "shoe", "dealer", "card_drawn", "bet_placed"])
                | st.sampled_from([0, 1, -1, 3.0, 3.5, 2**53 + 1, 2**63 - 1, 2**63, 1e300, -0.0, 1e17]))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
field_names = st.sampled_from(list(C.FIELDS)) | st.text(min_size=1, max_size=12)


@st.composite
def mutated_events(draw) -> bytes:
    etype = draw(st.sampled_from(list(C.TYPES)))
    ev = valid_event(etype, draw(st.integers(0, 10**6)))
    for _ in range(draw(st.integers(0, 3))):
        name = draw(field_names)
        if draw(st.booleans()) and name in ev:
            del ev[name]
        else:
            ev[name] = draw(json_values)
    return orjson.dumps(ev)


@st.composite
def edged_events(draw) -> bytes:
    """A valid event with one of its own fields set to an edge value (of any kind): mostly one
    problem per line, so that the line's other fields stay valid and the edge decides."""
    etype = draw(st.sampled_from(list(C.TYPES)))
    ev = valid_event(etype, draw(st.integers(0, 10**6)))
    name = draw(st.sampled_from(sorted(ev)))
    kind = C.FIELDS.get(name, "str")
    ev[name] = draw(st.sampled_from(_EDGES.get(kind.split(":")[0], _EDGES["str"])) | json_scalars)
    return orjson.dumps(ev)


_INTS = [0, 1, 2, 3, 7, 8, -1, 3.0, 2.5, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 1e17, 1e300, True, "3"]
_EDGES = {
    "ts": ["1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "1970-01-01T00:30:00+01:00", "9998-12-31T23:59:59Z",
           "9999-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00Z", "2026-11-30T10:59:59Z",
           "2026-11-30T11:00:00Z", "2026-12-01T05:59:59Z", "2026-12-01T06:00:00Z", "2026-12-25T20:00:01Z",
           "2026-11-28T20:00:01.123456789Z", "2026-11-28T20:00:01+14:00", "2026-11-28T20:00:01-23:59",
           "2026-11-28 20:00:01Z", "2026-11-28T24:00:00Z", "2026-02-29T20:00:00Z", "2024-02-29T20:00:00Z",
           "2026-11-28T16:00:01.250-04:00", "2026-11-28T20:00:01-00:00", "2026-11-28T20:00:01+00:00",
           "2026-11-29T01:45:01+05:45"],
    "int0": _INTS, "int1": _INTS, "seat": _INTS, "street": _INTS,
    "amount": [0, -1, 0.0, 1e-300, 1e308, 2**53 + 1, 2**64 - 1, -0.0, "10", None, True],
    "id": ["", " ", "x" * 200, 17, None, "P\u0000"], "event_id": ["", "x" * 128, "x" * 129, 5],
    "str": ["", "\u2028", None, 1, [], {}],
    "card": [None, "", "7H", "10h", "As ", "Xx", 1], "cards": [[], [None], ["As", "As"], "As", [1]],
    "cards5": [[], ["As"] * 5, ["As"] * 4, ["As"] * 6], "bool": [0, 1, "true", None], "enum": ["", "x", None, 0],
    "pattern": ["seat:0", "seat:01", "seat:1\n", "seat:", "dealer ", "supervisor", "burn"],
}


def _lines(raws: list[bytes]) -> list[bytes]:
    """What the reader could hand on: no line end inside, not blank."""
    return [r for r in (raw.replace(b"\n", b" ").replace(b"\r", b" ") for raw in raws) if r.strip()]


def test_every_event_type_valid_as_built_is_accepted_both_ways():
    lines = [orjson.dumps(valid_event(t, i)) for i, t in enumerate(C.TYPES)]
    for config in CONFIGS:
        got = assert_same_verdicts(lines, config)
        assert all(v[0] == "accept" for v in got.values()), [v for v in got.values() if v[0] != "accept"]


@SETTINGS
@given(st.lists(mutated_events(), min_size=1, max_size=8), st.sampled_from(CONFIGS))
def test_any_json_value_in_any_field_gets_the_same_verdict_both_ways(lines, config):
    assert_same_verdicts(_lines(lines) or [b"{}"], config)


@SETTINGS
@given(st.lists(edged_events(), min_size=1, max_size=8), st.sampled_from(CONFIGS))
def test_an_edge_value_in_an_events_own_field_gets_the_same_verdict_both_ways(lines, config):
    assert_same_verdicts(_lines(lines), config)


@SETTINGS
@given(st.lists(st.binary(min_size=1, max_size=80), min_size=1, max_size=6), st.sampled_from(CONFIGS))
def test_any_bytes_as_lines_get_the_same_verdict_both_ways(raws, config):
    lines = _lines(raws)
    if lines:
        assert_same_verdicts(lines, config)


@st.composite
def damaged_lines(draw) -> bytes:
    """A valid line with bytes replaced, inserted or cut: mostly still object-like text."""
    line = bytearray(orjson.dumps(valid_event(draw(st.sampled_from(list(C.TYPES))), 1)))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(line)))
        what = draw(st.sampled_from(["replace", "insert", "cut"]))
        chunk = draw(st.binary(min_size=1, max_size=4) | st.sampled_from(
            [b"\xff", b"\xef\xbb\xbf", b"\x00", b"[", b"{", b"}", b'"', b"\\", b"NaN", b"1e999", b"-"]))
        if what == "replace":
            line[at:at + len(chunk)] = chunk
        elif what == "insert":
            line[at:at] = chunk
        else:
            del line[at:]
    return bytes(line)


@SETTINGS
@given(st.lists(damaged_lines(), min_size=1, max_size=6), st.sampled_from(CONFIGS))
def test_damaged_valid_lines_get_the_same_verdict_both_ways(lines, config):
    lines = _lines(lines)
    if lines:
        assert_same_verdicts(lines, config)


_NEAR = [(_dt.datetime(1, 1, 2), _dt.datetime(9999, 12, 30)),
         (_dt.datetime(1969, 12, 30), _dt.datetime(1970, 1, 3)),
         (_dt.datetime(9998, 12, 29), _dt.datetime(9999, 12, 30)),
         (_dt.datetime(2026, 11, 27), _dt.datetime(2026, 12, 3))]


@st.composite
def timestamps(draw) -> str:
    lo, hi = draw(st.sampled_from(_NEAR))
    local = draw(st.datetimes(min_value=lo, max_value=hi))
    minutes = draw(st.sampled_from([0, 0, 60, -300, -23 * 60 - 59, 23 * 60 + 59, 330]) | st.integers(-1439, 1439))
    digits = draw(st.integers(0, 9))
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    if digits:
        text += "." + f"{local.microsecond:06d}{draw(st.integers(0, 999)):03d}"[:digits]
    if minutes == 0:
        return text + draw(st.sampled_from(["Z", "+00:00", "-00:00"]))
    sign = "+" if minutes >= 0 else "-"
    return text + f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def written_offset(ts: str) -> int | None:
    """The offset a timestamp text was written with, in minutes east of UTC (None: ``-00:00``)."""
    if ts.endswith("Z"):
        return 0
    if ts.endswith("-00:00"):
        return None
    sign = -1 if ts[-6] == "-" else 1
    return sign * (int(ts[-5:-3]) * 60 + int(ts[-2:]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(timestamps(), min_size=1, max_size=6), st.sampled_from(CONFIGS + [GamingDayConfig(not_after=_dt.date(2026, 11, 28))]))
def test_any_timestamp_gets_the_same_verdict_both_ways(stamps, config):
    lines = [orjson.dumps({**valid_event("card_drawn", i), "ts": ts}) for i, ts in enumerate(stamps)]
    got = assert_same_verdicts(lines, config)
    for (verdict, value), ts in zip(got.values(), stamps):
        if verdict == "accept":
            assert value["ts_offset"] == written_offset(ts), ts
            assert 0 <= value["ts"] and value["gaming_day"].year < 9999 and value["gaming_day"].year >= 1969
            if config.not_after is not None:
                assert value["gaming_day"] <= config.not_after + _dt.timedelta(days=2), ts


def test_a_tbp_terminal_writing_minus_four_hours_keeps_its_offset_both_ways():
    """issue 29: the TBP and COM terminals write ``-04:00``; ``ts`` is UTC, ``ts_offset`` the -240
    minutes as written; ``Z`` and ``+00:00`` are 0, ``-00:00`` (local offset unknown) is null."""
    stamps = {"2026-11-28T16:00:01.250-04:00": -240, "2026-11-28T20:00:01.250Z": 0,
              "2026-11-28T20:00:01.250+00:00": 0, "2026-11-28T20:00:01.250-00:00": None,
              "2026-11-29T01:45:01.250+05:45": 345}
    lines = [orjson.dumps({**valid_event("card_drawn", i), "ts": ts}) for i, ts in enumerate(stamps)]
    for config in CONFIGS:
        got = assert_same_verdicts(lines, config)
        assert [v[1]["ts_offset"] for v in got.values()] == list(stamps.values())
        assert {v[1]["ts"] for v in got.values()} == {1_795_896_001_250_000}   # one instant, written five ways
