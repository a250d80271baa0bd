"""Parquet input with every column type, NaN and the infinities: each row accepted or rejected, never a raise.

Rows are read by the real reader (:func:`pitwatch.inputs.files.iter_parquet_chunks`)
from real Parquet files and decoded by ingest's own step (``DecodeChunk``); a
row that a JSON line can carry must get the very verdict and reason of that
line.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import json

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.pvalue import TaggedOutput
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pitwatch.inputs.files import Damage, iter_parquet_chunks
from pitwatch.pipelines.ingest import TAG_REJECTS, DecodeChunk
from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line
from pitwatch.schemas.events import datetime_to_micros
from tests.conftest import event, line

CFG = GamingDayConfig()


def decode_parquet(path) -> dict[int, tuple]:
    """row number → ("accept", event row) / ("reject", reason), through the reader and DecodeChunk."""
    out: dict[int, tuple] = {}
    for _, items in iter_parquet_chunks(str(path), 1000):
        assert not isinstance(items, Damage), items
        for item in DecodeChunk(CFG).process((str(path), "parquet", items)):
            if isinstance(item, TaggedOutput):
                if item.tag == TAG_REJECTS:
                    out.update({r["line"]: ("reject", r["reason"]) for r in item.value})
                continue
            out.update({r["line"]: ("accept", r) for r in item.to_pylist()})
    return out


def _write(tmp_path, columns: dict[str, pa.Array], name="rows.parquet"):
    path = tmp_path / name
    pq.write_table(pa.table(columns), path)
    return path


def _base(n: int, **replace) -> dict[str, pa.Array]:
    rows = [event("bet_placed", seq=i + 1) for i in range(n)]
    cols = {k: pa.array([r[k] for r in rows]) for k in rows[0]}
    cols.update(replace)
    return cols


_TS = [_dt.datetime(2026, 11, 28, 20, 0, 1), None]
COLUMN_TYPES = {
    "int8": pa.array([3, None], pa.int8()), "uint64": pa.array([2**64 - 1, 3], pa.uint64()),
    "int64": pa.array([2**63 - 1, -1], pa.int64()),
    "float16": pa.array([1.5, None], pa.float16()), "float32": pa.array([3.0, float("nan")], pa.float32()),
    "float64": pa.array([float("inf"), float("-inf")], pa.float64()),
    "decimal128": pa.array([decimal.Decimal("3.00"), decimal.Decimal("2.50")], pa.decimal128(10, 2)),
    "decimal256": pa.array([decimal.Decimal(10**40), decimal.Decimal(-1)], pa.decimal256(50, 0)),
    "string": pa.array(["3", "seat:3"]), "large_string": pa.array(["x", None], pa.large_string()),
    "binary": pa.array([b"\xff\xfe", b"3"], pa.binary()), "large_binary": pa.array([b"a", None], pa.large_binary()),
    "fixed_binary": pa.array([b"ab", b"cd"], pa.binary(2)), "bool": pa.array([True, False]),
    "null": pa.nulls(2), "date32": pa.array([_dt.date(2026, 11, 28), None], pa.date32()),
    "date64": pa.array([_dt.date(1, 1, 1), None], pa.date64()),
    "time64": pa.array([_dt.time(20, 0), None], pa.time64("us")),
    "duration": pa.array([_dt.timedelta(seconds=3), None], pa.duration("s")),
    "ts_s": pa.array(_TS, pa.timestamp("s")), "ts_ns_tz": pa.array(_TS, pa.timestamp("ns", tz="America/New_York")),
    "ts_out_of_range": pa.array([10**15, 0], pa.int64()).cast(pa.timestamp("s")),
    "list": pa.array([[1, 2], []], pa.list_(pa.int64())), "large_list": pa.array([["As"], None], pa.large_list(pa.string())),
    "fixed_list": pa.array([[1, 2], [3, 4]], pa.list_(pa.int64(), 2)),
    "struct": pa.array([{"a": 1, "b": "x"}, None], pa.struct([("a", pa.int64()), ("b", pa.string())])),
    "map": pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int64())),
    "dictionary": pa.array(["3", "seat:1"]).dictionary_encode(),
    "nested_ts": pa.array([{"t": 10**15}, None], pa.struct([("t", pa.int64())])).cast(
        pa.struct([("t", pa.timestamp("s"))])),
}


@pytest.mark.parametrize("field", ["seat", "amount", "type", "ts", "pack_id", "card", "x_extra"])
@pytest.mark.parametrize("type_name", sorted(COLUMN_TYPES))
def test_a_column_of_any_type_in_any_field_is_accepted_or_rejected_with_a_reason(tmp_path, type_name, field):
    path = _write(tmp_path, _base(2, **{field: COLUMN_TYPES[type_name]}))
    got = decode_parquet(path)
    assert sorted(got) == [1, 2]
    for verdict, value in got.values():
        if verdict == "reject":
            assert value and not value.startswith("internal error"), value
        elif field == "amount":
            assert value["amount"] > 0 and value["amount"] != float("inf")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinite_amounts_from_parquet_are_rejected(tmp_path, value):
    """They were accepted from Parquet: a NaN bet passed "> 0" and raised PAYOUT findings."""
    path = _write(tmp_path, _base(1, amount=pa.array([value], pa.float64())))
    assert decode_parquet(path) == {1: ("reject", f"field 'amount' must be a finite number, got {value!r}")}


def test_a_type_from_a_struct_column_is_rejected(tmp_path):
    path = _write(tmp_path, _base(1, type=pa.array([{"a": 1}], pa.struct([("a", pa.int64())]))))
    assert decode_parquet(path) == {1: ("reject", "field 'type' must be a string, got an object")}


def test_a_nan_in_an_unknown_column_is_rejected_not_turned_into_null(tmp_path):
    path = _write(tmp_path, _base(2, x_extra=pa.array([float("nan"), 1.5])))
    got = decode_parquet(path)
    assert got[1] == ("reject", "field 'x_extra' holds nan, which JSON cannot carry")
    assert got[2][0] == "accept" and json.loads(got[2][1]["unknown_fields"]) == {"x_extra": 1.5}


def test_unreadable_values_are_named_in_the_reason(tmp_path):
    path = _write(tmp_path, _base(2, ts=COLUMN_TYPES["ts_out_of_range"], pack_id=COLUMN_TYPES["binary"]))
    got = decode_parquet(path)
    assert got[1][0] == "reject" and got[2][0] == "reject"
    assert "field 'ts' must be an RFC 3339 timestamp string, got a timestamp[ms] value that cannot be read" in got[1][1]
    assert "binary data (a Parquet binary value, not text)" in got[2][1]


def test_a_parquet_timestamp_before_1970_is_rejected(tmp_path):
    path = _write(tmp_path, _base(1, ts=pa.array([_dt.datetime(1, 1, 1)], pa.timestamp("us", tz="UTC"))))
    assert decode_parquet(path) == {1: ("reject", "field 'ts' is before 1970, which the lake cannot hold: "
                                                  "'0001-01-01T00:00:00+00:00'")}


# A row a JSON line can carry gets that line's verdict.
json_scalar = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10)
               | st.floats(allow_nan=False, allow_infinity=False)
               | st.sampled_from(["7h", "seat:1", "2026-11-28T20:00:01Z", "0001-01-01T00:00:00Z", "player", "up"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["seat", "amount", "ts", "pack_id", "card", "target", "seq", "x_extra", "missing",
                        # the lake's own column names are fields like any other (issue 37)
                        "file", "line", "gaming_day", "unknown_fields", "ts_offset"]),
       st.lists(json_scalar, min_size=1, max_size=5))
def test_a_row_a_json_line_can_carry_gets_that_lines_verdict(tmp_path_factory, field, values):
    types = {type(v) for v in values if v is not None}
    if len(types) > 1 and types != {int, float}:
        return      # one Parquet column holds one type
    try:
        column = pa.array(values, pa.float64() if types == {int, float} else None)
    except pa.ArrowInvalid:
        return      # an int beyond 2**53 has no float64 column to be in
    path = _write(tmp_path_factory.mktemp("p"), _base(len(values), **{field: column}))
    got = decode_parquet(path)
    table = pq.read_table(path)
    for number, row in enumerate(table.to_pylist(), start=1):
        row = {k: v for k, v in row.items() if v is not None}
        if isinstance(row.get("ts"), _dt.datetime):
            row["ts"] = row["ts"].isoformat()
        line = orjson.dumps(row)
        expected = decode_line(line, "x", number, CFG)
        if isinstance(expected, Reject):
            assert got[number] == ("reject", expected.reason), line
        else:
            assert got[number][0] == "accept", (line, got[number])


# ---- ts_offset (issue 29: the table's own time) ----

_UTC_INSTANT = _dt.datetime(2026, 11, 28, 20, 0, 1, 250000)


@pytest.mark.parametrize("column, offset", [
    (pa.array([_UTC_INSTANT] * 2, pa.timestamp("us")).cast(pa.timestamp("us", tz="America/Puerto_Rico")), -240),
    (pa.array([_UTC_INSTANT] * 2, pa.timestamp("us")).cast(pa.timestamp("us", tz="Asia/Kathmandu")), 345),
    (pa.array([_UTC_INSTANT] * 2, pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC")), 0),
    (pa.array([_UTC_INSTANT] * 2, pa.timestamp("us")), 0),                           # naive: read as UTC
    (pa.array(["2026-11-28T16:00:01.250-04:00"] * 2), -240),                          # text: as written
])
def test_a_parquet_timestamp_column_gives_its_zones_offset(tmp_path, column, offset):
    got = decode_parquet(_write(tmp_path, _base(2, ts=column)))
    assert [v[0] for v in got.values()] == ["accept", "accept"]
    assert [v[1]["ts_offset"] for v in got.values()] == [offset, offset]
    assert {v[1]["ts"] for v in got.values()} == {_UTC_INSTANT.replace(tzinfo=_dt.timezone.utc)}


def test_a_lake_events_file_read_back_gets_its_json_lines_verdicts(tmp_path):
    """Issue 37: fields named ``file``, ``line``, ``gaming_day`` were dropped silently and an
    ``unknown_fields`` column merged into the event. A row is the JSON line of its fields: those
    names are unknown fields there, so here (kept in ``unknown_fields``, the event otherwise the
    line's: whole rows compared)."""
    from pitwatch.schemas.arrow import events_to_table

    lines = [line("card_drawn", seq=1, ts="2026-11-28T16:00:01.250-04:00"),
             line("card_drawn", seq=2, ts="2026-11-28T20:00:01.250Z", x_note="kept")]
    events = [decode_line(text, "in.jsonl", i, CFG)[0] for i, text in enumerate(lines, start=1)]
    path = tmp_path / "events.parquet"
    pq.write_table(events_to_table(events), path)
    got = decode_parquet(path)
    for number, row in enumerate(pq.read_table(path).to_pylist(), start=1):
        as_line = orjson.dumps({k: (v.isoformat() if isinstance(v, (_dt.date, _dt.datetime)) else v)
                                for k, v in row.items() if v is not None})
        expected = {k: v for k, v in decode_line(as_line, str(path), number, CFG)[0].to_row().items() if v is not None}
        verdict, accepted = got[number]
        assert verdict == "accept"
        assert {**accepted, "ts": datetime_to_micros(accepted["ts"])} == expected
        assert set(json.loads(accepted["unknown_fields"])) >= {"file", "line", "gaming_day", "ts_offset"}


def test_two_columns_of_one_name_are_a_damaged_file(tmp_path):
    """Issue 37: a file with two columns named ``event_id`` silently took the last (every row then
    rejected as a conflicting duplicate). Which column is the field cannot be told: not read."""
    rows = [event("bet_placed", seq=i + 1) for i in range(3)]
    names = list(rows[0]) + ["event_id"]
    arrays = [pa.array([r[k] for r in rows]) for k in rows[0]] + [pa.array(["other-1", "other-2", "other-3"])]
    path = tmp_path / "twice.parquet"
    pq.write_table(pa.Table.from_arrays(arrays, names=names), path)
    chunks = [items for _, items in iter_parquet_chunks(str(path), 1000)]
    assert len(chunks) == 1 and isinstance(chunks[0], Damage)
    assert chunks[0].offset == 0 and chunks[0].bytes_not_read == path.stat().st_size
    assert chunks[0].what == "it has more than one column named 'event_id'; a row cannot say which is the field"


def test_a_forged_ts_offset_column_is_an_unknown_field_not_an_offset(tmp_path):
    got = decode_parquet(_write(tmp_path, _base(2, ts_offset=pa.array([99_999, -240]),
                                                ts=pa.array(["2026-11-28T20:00:01Z", "2026-11-28T16:00:01-04:00"]))))
    first, second = got[1][1], got[2][1]
    assert first["ts_offset"] == 0 and json.loads(first["unknown_fields"]) == {"ts_offset": 99_999}
    assert second["ts_offset"] == -240 and json.loads(second["unknown_fields"]) == {"ts_offset": -240}
