"""The columnar fast path (pitwatch.schemas.columnar) agrees with the per-line decoder.

The fast path may send a line back to the per-line decoder, but whatever it
accepts, the per-line decoder must accept with exactly the same values.
"""
from __future__ import annotations

import orjson
import pyarrow as pa
import pyarrow.json as pj
import pytest

from pitwatch.schemas.arrow import EVENTS
from pitwatch.schemas.columnar import _PARSE_INFERRED, _as_raw, decode_block
from pitwatch.schemas.decode import GamingDayConfig, decode_fields
from tests.conftest import event
from tests.data import clean_floor_lines
from tests.schemas.test_jsonschema import _corpus

EXTRA_LINES = [
    b'{"a":1} {"a":2}', b'{"event_id":"x","event_id":"y"}', b'\xff\xfe', b'NaN', b'null', b'[1]',
    orjson.dumps(event("bet_placed")).replace(b'"amount":100', b'"amount":NaN'),
    orjson.dumps(event("bet_placed")).replace(b'"amount":100', b'"amount":-Infinity'),
    orjson.dumps({**event("card_drawn"), "ts": "2026-11-28t20:00:01z"}),
    orjson.dumps({**event("card_drawn"), "ts": "2026-11-28T20:00:01.123456789Z"}),
    orjson.dumps({**event("card_drawn"), "ts": "2026-11-28T20:00:01.5+05:30"}),
    orjson.dumps({**event("card_drawn"), "ts": "1970-01-01T00:00:01Z"}),
    orjson.dumps({**event("card_dealt"), "type": "card_exposed", "card": None}),
    orjson.dumps({**event("hand_declared"), "cards": ["As", None, "Qs", "Js", "Ts"]}),
    orjson.dumps({**event("card_dealt"), "target": "seat:1\n"}),
    orjson.dumps(event("bet_placed", amount=2**53 + 1)),      # an int amount beyond a double's exact range
    orjson.dumps(event("bet_placed", amount=2**63)),
    orjson.dumps(event("bet_placed", round_id="2026-11-28")),  # text Arrow would infer as a timestamp
    orjson.dumps(event("shuffle_completed", missing=[None])),
]


def slow(line: bytes, number: int, cfg):
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    out = decode_fields(obj, None, "f.jsonl", number, cfg)
    return out if isinstance(out, dict) else None


def fast_rows(lines: list[bytes], cfg) -> tuple[dict[int, dict], list[int]] | None:
    got = decode_block(lines, "f.jsonl", list(range(1, len(lines) + 1)), cfg)
    if got is None:
        return None
    table, slow_rows = got
    assert table.schema == EVENTS
    rows = {}
    for row in table.to_pylist():
        row["ts"] = int(row["ts"].timestamp() * 1_000_000) if row["ts"] else None
        rows[row["line"] - 1] = row
    return rows, slow_rows


def as_slow_row(fields: dict) -> dict:
    return {f.name: fields.get(f.name) for f in EVENTS}


def check_agreement(lines: list[bytes], cfg) -> int:
    """Returns how many lines the fast path accepted; asserts each equals the per-line result."""
    got = fast_rows(lines, cfg)
    if got is None:
        return 0
    rows, slow_rows = got
    assert sorted(set(rows) | set(slow_rows)) == list(range(len(lines))), "every line is accepted or sent back"
    assert not set(rows) & set(slow_rows)
    for i, row in rows.items():
        expected = slow(lines[i], i + 1, cfg)
        assert expected is not None, f"fast path accepted a line the per-line decoder rejects: {lines[i]!r}"
        exp = as_slow_row(expected)
        row["ts"] = exp["ts"] if abs(row["ts"] - exp["ts"]) < 1 else row["ts"]
        assert row == exp, lines[i]
    return len(rows)


@pytest.mark.parametrize("cfg", [GamingDayConfig(), GamingDayConfig("06:00", "Europe/Madrid")],
                         ids=["utc", "madrid"])
def test_fast_path_accepts_only_what_the_per_line_decoder_accepts_with_the_same_values(cfg):
    lines = [orjson.dumps(o) for o in _corpus()] + EXTRA_LINES
    accepted = sum(check_agreement([line], cfg) for line in lines)
    assert accepted >= 20, "the fast path takes the valid lines of the corpus"


def test_fast_path_agrees_on_the_clean_floor_in_one_block():
    lines = [line.encode() if isinstance(line, str) else line for line in clean_floor_lines()][:30_000]
    for cfg in (GamingDayConfig(), GamingDayConfig("04:30", "America/New_York")):
        assert check_agreement(lines, cfg) == len(lines)


def test_a_bad_row_in_a_good_block_is_sent_back_alone():
    lines = [orjson.dumps(event("card_drawn", seq=i)) for i in range(5)]
    lines[2] = orjson.dumps({**event("card_drawn", seq=2), "card": "1h"})
    rows, slow_rows = fast_rows(lines, GamingDayConfig())
    assert slow_rows == [2] and sorted(rows) == [0, 1, 3, 4]


def test_a_block_whose_inferred_columns_are_not_the_contracts_is_read_with_the_contracts():
    """Arrow infers the block's types first; a column it infers otherwise (a date-like text as a
    timestamp, an amount beyond 2**53 as an integer) sends the block to the explicit read, with
    the values the per-line decoder gives."""
    dated = [orjson.dumps(event("bet_placed", seq=i, round_id="2026-11-28 20:00:00")) for i in range(3)]
    bets = [orjson.dumps(event("bet_placed", seq=i, amount=2**53 + i)) for i in range(3)]
    for lines in (dated, bets):
        inferred = pj.read_json(pa.BufferReader(b"\n".join(lines)), parse_options=_PARSE_INFERRED)
        assert _as_raw(inferred) is None        # so the explicit read decides
    for lines in (dated, bets, dated + bets):
        assert check_agreement(lines, GamingDayConfig()) == len(lines)


def test_a_block_arrow_cannot_read_goes_the_per_line_way():
    lines = [orjson.dumps(event("card_drawn")), orjson.dumps({**event("card_drawn"), "seq": "3"})]
    assert decode_block(lines, "f.jsonl", [1, 2], GamingDayConfig()) is None
    unknown = [orjson.dumps({**event("card_drawn"), "firmware": "1.2"})]
    assert decode_block(unknown, "f.jsonl", [1], GamingDayConfig()) is None
