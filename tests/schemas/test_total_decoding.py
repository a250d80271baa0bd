"""Issue 23's cases, each a named regression: every one is a reject with a reason, both ways.

Each case is a clean line plus one bad one, decoded per line and by ingest's
columnar step (``both_ways``); the two must agree on the verdict, the reason
and every accepted column.
"""
from __future__ import annotations

import datetime as _dt
import json
import time

import orjson
import pytest

from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_fields, decode_line
from pitwatch.schemas.limits import END_TS_MICROS, MAX_DEPTH, MAX_LINE_BYTES, nesting_depth
from tests.conftest import event
from tests.schemas.both_ways import assert_same_verdicts

CFG = GamingDayConfig()
GOOD = orjson.dumps(event(seq=1))


def _bad(**fields) -> bytes:
    return orjson.dumps({**event(seq=2), **fields})


def _verdicts(bad: bytes, config=CFG) -> tuple:
    got = assert_same_verdicts([GOOD, bad], config)
    assert got[1][0] == "accept", "the clean line is still accepted"
    return got[2]


def _reason(bad: bytes, config=CFG) -> str:
    verdict, reason = _verdicts(bad, config)
    assert verdict == "reject", reason
    return reason


@pytest.mark.parametrize("value,what", [({"a": 1}, "an object"), ([1], "a list"), (["card_drawn"], "a list")])
def test_a_type_that_is_an_object_or_an_array_is_rejected(value, what):
    assert _reason(_bad(type=value)).startswith(f"field 'type' must be a string, got {what}")


@pytest.mark.parametrize("seq", [2**63, 2**64 - 1])
def test_seq_outside_0_to_2_63_is_rejected_and_not_read(seq):
    assert _reason(_bad(seq=seq)) == f"field 'seq' must be less than 2^63, got {seq}"
    out = decode_line(_bad(seq=seq), "f", 2, CFG)
    assert out.seq is None and out.device_id == "SHOE-1"     # a seq outside the range is not read


def test_the_largest_seq_is_accepted():
    verdict, row = _verdicts(_bad(seq=2**63 - 1))
    assert verdict == "accept" and row["seq"] == 2**63 - 1


def test_1e300_in_an_integer_field_is_rejected():
    bad = orjson.dumps(event("bet_placed", seq=2)).replace(b'"seat":3', b'"seat":1e300')
    assert b"1e300" in bad
    assert _reason(bad) == "field 'seat' must be less than 2^63, got 1e+300"


def test_an_amount_beyond_a_double_is_not_json():
    bad = orjson.dumps(event("bet_placed", seq=2)).replace(b'"amount":100', b'"amount":1e400')
    assert _reason(bad).startswith("not valid JSON: number is infinity")


def test_ts_in_year_1_is_before_1970():
    assert _reason(_bad(ts="0001-01-01T00:00:00Z")) == \
        "field 'ts' is before 1970, which the lake cannot hold: '0001-01-01T00:00:00Z'"


def test_ts_one_second_before_1970_is_rejected_and_1970_is_accepted():
    assert _reason(_bad(ts="1970-01-01T00:30:00+01:00")).startswith("field 'ts' is before 1970")
    verdict, row = _verdicts(_bad(ts="1970-01-01T00:00:00Z"))
    assert verdict == "accept" and row["ts"] == 0


@pytest.mark.parametrize("ts", ["9999-12-31T23:59:59-23:59", "9999-12-31T00:00:00Z", "9999-01-01T01:00:00+02:00",
                                "9998-12-31T23:00:00-02:00"])
def test_ts_in_year_9999_is_rejected(ts):
    assert _reason(_bad(ts=ts)) == f"field 'ts' is in year 9999, which the lake cannot hold: {ts!r}"


def test_the_last_instant_the_lake_holds_is_accepted():
    verdict, row = _verdicts(_bad(ts="9998-12-31T23:59:59.999999Z"))
    assert verdict == "accept" and row["ts"] == END_TS_MICROS - 1 and row["gaming_day"] == _dt.date(9998, 12, 31)


def test_invalid_utf8_inside_a_string_value_is_a_not_valid_utf8_reject():
    bad = _bad(pack_id="P-@@").replace(b"@@", b"\xff\xfe")
    assert _reason(bad) == "not valid UTF-8"


def test_a_10000_deep_array_is_rejected_in_bounded_time():
    bad = _bad()[:-1] + b',"x":' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    started = time.perf_counter()
    assert _reason(bad) == f"nested deeper than {MAX_DEPTH} levels of arrays and objects: not read"
    assert time.perf_counter() - started < 2, "rejected without parsing it (it took 14 s, 47 s in Arrow)"


def test_nesting_up_to_the_limit_is_kept_in_unknown_fields():
    deep = json.loads("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))
    verdict, row = _verdicts(_bad(x=deep))
    assert verdict == "accept" and json.loads(row["unknown_fields"]) == {"x": deep}


def test_brackets_inside_strings_do_not_count_as_nesting():
    assert nesting_depth(b'{"a":"' + b"[[[[{" * 100 + b'\\"[[["}') == 1
    verdict, _ = _verdicts(_bad(x="[" * 500))
    assert verdict == "accept"


def test_a_line_longer_than_the_limit_is_rejected_unparsed():
    bad = _bad(x="y" * MAX_LINE_BYTES)
    assert _reason(bad) == f"line longer than {MAX_LINE_BYTES} bytes: not read"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinite_amounts_from_a_parsed_row_are_rejected(value):
    """JSON has no NaN (not valid JSON); a Parquet row can hold one: it must not pass "> 0"."""
    row = event("bet_placed", amount=value)
    out = decode_fields(row, None, "f.parquet", 1, CFG)
    assert isinstance(out, Reject) and out.reason == f"field 'amount' must be a finite number, got {value!r}"


def test_a_gaming_day_more_than_2_days_after_the_last_day_is_rejected():
    cfg = GamingDayConfig(not_after=_dt.date(2026, 11, 28))
    assert _reason(_bad(ts="2026-12-01T06:00:00Z"), cfg) == (
        "field 'ts' falls in gaming day 2026-12-01, more than 2 days after the run's last day 2026-11-28: "
        "'2026-12-01T06:00:00Z'")
    verdict, row = _verdicts(_bad(ts="2026-12-01T05:59:59Z"), cfg)     # gaming day 2026-11-30: within
    assert verdict == "accept" and row["gaming_day"] == _dt.date(2026, 11, 30)


def test_without_a_last_day_far_future_days_are_accepted():
    verdict, row = _verdicts(_bad(ts="9000-01-01T12:00:00Z"))
    assert verdict == "accept" and row["gaming_day"] == _dt.date(9000, 1, 1)


def test_an_unforeseen_exception_becomes_an_internal_error_reject(monkeypatch, caplog):
    from pitwatch.schemas import decode

    def broken(obj):
        raise KeyError("boom")

    monkeypatch.setattr(decode, "content_digest", broken)
    out = decode_line(GOOD, "f.jsonl", 9, CFG)
    assert isinstance(out, Reject) and out.reason == "internal error: KeyError" and out.line == 9
    assert out.raw == GOOD.decode()
    assert "internal error decoding f.jsonl line 9: KeyError" in caplog.text


def test_a_column_decoder_failure_falls_back_to_the_per_line_decoder(monkeypatch, caplog):
    from pitwatch.pipelines import ingest

    def broken(*args):
        raise RuntimeError("arrow broke")

    monkeypatch.setattr(ingest, "decode_joined", broken)
    got = assert_same_verdicts([GOOD, _bad(card="Zz")], CFG)
    assert got[1][0] == "accept" and got[2][0] == "reject"
    assert "internal error in the columnar decoder" in caplog.text


@pytest.mark.parametrize("escape", [rb"\ud800", rb"\udc00x"])
def test_a_lone_surrogate_escape_is_not_json_both_ways(escape):
    bad = _bad(pack_id="P@@").replace(b"@@", escape)
    assert _reason(bad).startswith("not valid JSON: ")


def test_a_reason_quotes_a_long_value_cut():
    reason = _reason(_bad(card="x" * 5000))
    assert reason.startswith("field 'card' is not a card code") and len(reason) < 200
