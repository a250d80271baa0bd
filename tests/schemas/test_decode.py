"""Decode: one test per rejection reason of docs/spec/events.md, and what must be accepted."""
from __future__ import annotations

import json

import pytest

from pitwatch.schemas.decode import RAW_LIMIT, GamingDayConfig, Reject, decode_line
from tests.conftest import event, line

CFG = GamingDayConfig()


def decode(raw):
    return decode_line(raw, "in.jsonl", 7, CFG)


def rejected(raw) -> str:
    out = decode(raw)
    assert isinstance(out, Reject), f"expected a reject, got {out}"
    assert out.file == "in.jsonl" and out.line == 7
    return out.reason


def test_valid_line_is_accepted_with_typed_fields():
    ev, digest = decode(line("card_drawn", seq=5, index=3.0))
    assert ev.index == 3 and type(ev.index) is int      # JSON Schema integer: 3.0 is an integer
    assert ev.ts == 1_795_896_001_000_000 and str(ev.gaming_day) == "2026-11-28"
    assert ev.file == "in.jsonl" and ev.line == 7 and len(digest) == 32


def test_not_json():
    assert rejected('{"event_id": "x", ').startswith("not valid JSON")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(token):
    raw = line().replace('"index": 1', f'"index": {token}')
    assert token in raw
    assert rejected(raw).startswith("not valid JSON")


@pytest.mark.parametrize("raw,what", [("[1, 2]", "a list"), ('"text"', "a string"), ("42", "a number"), ("null", "null")])
def test_not_an_object(raw, what):
    assert rejected(raw) == f"not a JSON object (got {what})"


@pytest.mark.parametrize("field", ["event_id", "ts", "source", "table_id", "device_id", "seq"])
def test_envelope_field_missing(field):
    assert f"required field {field!r} is missing" in rejected(line(**{field: None}))


def test_type_missing():
    assert "required field 'type' is missing" in rejected(json.dumps({k: v for k, v in event().items() if k != "type"}))


def test_dealer_event_needs_dealer_id():
    assert "required field 'dealer_id' is missing" in rejected(line("card_dealt", dealer_id=None))


def test_type_field_missing():
    assert "required field 'index' is missing" in rejected(line("card_drawn", index=None))


def test_required_field_null_is_missing():
    raw = json.dumps({**event("card_drawn"), "pack_id": None})
    assert "required field 'pack_id' is missing" in rejected(raw)


def test_card_dealt_on_the_layout_needs_a_round_but_a_burn_does_not():
    assert "required field 'round_id' is missing" in rejected(line("card_dealt", round_id=None))
    ev, _ = decode(line("card_dealt", round_id=None, target="burn"))
    assert ev.target == "burn" and ev.round_id is None


@pytest.mark.parametrize("field,value", [("pack_id", 17), ("round_id", 4), ("table_id", 7), ("dealer_id", 1043)])
def test_identifiers_are_strings_never_numbers(field, value):
    ev = event("card_dealt", **{field: value})
    assert f"field {field!r} must be a string, got a number" in rejected(json.dumps(ev))


@pytest.mark.parametrize("value,problem", [
    ("12", "must be an integer, got a string"), (1.5, "must be an integer, got a number"),
    (-1, "must be at least 0, got -1"), (True, "must be an integer, got a boolean"),
])
def test_seq_wrong_type(value, problem):
    assert f"field 'seq' {problem}" in rejected(line(seq=value))


def test_empty_identifier_and_overlong_event_id():
    assert "field 'table_id' must not be empty" in rejected(line(table_id=""))
    assert "field 'event_id' must be 1-128 characters, got 129" in rejected(line(event_id="e" * 129))


def test_unknown_source():
    assert "unknown source 'croupier'" in rejected(line(source="croupier"))


def test_unknown_type():
    assert "unknown type 'card_flipped'" in rejected(line(type="card_flipped"))


def test_type_that_does_not_belong_to_its_source():
    assert "type 'card_drawn' belongs to source 'shoe', not 'dealer'" in rejected(line(source="dealer"))


@pytest.mark.parametrize("card", ["1h", "7x", "10h", "h7", "7H", 7])
def test_bad_card_code(card):
    assert "field 'card' is not a card code" in rejected(line(card=card))


def test_bad_card_in_a_list():
    assert "field 'missing' holds bad card codes: 'Zz'" in rejected(line("shuffle_completed", missing=["As", "Zz"]))


def test_declared_hand_must_hold_five_cards():
    assert "field 'cards' must hold exactly 5 cards, got 4" in rejected(line("hand_declared", cards=["As", "Ks", "Qs", "Js"]))


@pytest.mark.parametrize("seat,problem", [(0, "must be at least 1, got 0"), ("3", "must be an integer, got a string"),
                                          (2.5, "must be an integer, got a number")])
def test_bad_seat(seat, problem):
    assert f"field 'seat' {problem}" in rejected(line("bet_placed", seat=seat))


@pytest.mark.parametrize("target", ["seat:0", "seat:", "table", "Player", 3])
def test_bad_target(target):
    assert "field 'target' must be seat:N, dealer, community, player, banker or burn" in rejected(line("card_dealt", target=target))


def test_bad_face():
    assert "field 'face' must be one of up, down; got 'sideways'" in rejected(line("card_dealt", face="sideways"))


@pytest.mark.parametrize("ts", ["2026-11-28T20:00:01", "2026-11-28 20:00:01Z", "2026-13-01T00:00:00Z",
                                "2026-02-30T00:00:00Z", "yesterday", 1764360001])
def test_bad_timestamp(ts):
    assert "field 'ts'" in rejected(line(ts=ts))


def test_timestamp_offsets_are_normalised_to_utc():
    a, _ = decode(line(ts="2026-11-28T16:00:01-04:00"))
    b, _ = decode(line(ts="2026-11-28T20:00:01.000Z"))
    assert a.ts == b.ts


def test_bet_amount_must_be_positive():
    assert "field 'amount' must be greater than 0, got 0" in rejected(line("bet_placed", amount=0))


def test_bad_enumerations():
    assert "field 'game' must be one of" in rejected(line("table_opened", game="roulette"))
    assert "field 'spot' must be one of" in rejected(line("bet_placed", spot="dragon"))


def test_every_problem_of_a_line_is_reported():
    reason = rejected(line("card_drawn", card="Zz", seq=-3, table_id=None))
    assert reason.count("; ") == 2


def test_readable_envelope_of_a_rejected_line_is_kept():
    out = decode(line(card="Zz", seq=41))
    assert (out.event_id, out.device_id, out.seq, out.table_id) == ("e-card_drawn-41", "SHOE-1", 41, "BAC-07")


def test_unknown_fields_are_kept_not_rejected():
    ev, _ = decode(line(firmware="4.2.1", temperature_c=31))
    assert json.loads(ev.unknown_fields) == {"firmware": "4.2.1", "temperature_c": 31}


def test_unreadable_card_is_null_not_a_reject():
    ev, _ = decode(line(card=None))
    assert ev.card is None


def test_not_utf8():
    assert rejected(b'{"event_id": "\xff\xfe"}') == "not valid UTF-8"


def test_raw_text_is_cut_at_64_kib():
    raw = line(padding="x" * (RAW_LIMIT + 100), card="Zz")
    out = decode(raw)
    assert isinstance(out, Reject) and len(out.raw) == RAW_LIMIT


def test_digest_ignores_key_order_spacing_and_integral_floats():
    ev = event()
    a = decode(json.dumps(ev))[1]
    b = decode(json.dumps(dict(reversed(list(ev.items()))), indent=2).replace("\n", " "))[1]
    c = decode(json.dumps({**ev, "index": 1.0}))[1]
    d = decode(json.dumps({**ev, "index": 2}))[1]
    assert a == b == c != d


def test_gaming_day_cutoff_and_time_zone():
    early = line(ts="2026-11-29T05:59:59Z")
    assert str(decode(early)[0].gaming_day) == "2026-11-28"
    pr = GamingDayConfig(cutoff="06:00", timezone="America/Puerto_Rico")  # UTC-4
    ev, _ = decode_line(line(ts="2026-11-29T09:30:00Z"), "f", 1, pr)
    assert str(ev.gaming_day) == "2026-11-28"


def test_gaming_day_config_rejects_bad_values():
    with pytest.raises(ValueError, match="cutoff must be HH:MM"):
        GamingDayConfig(cutoff="6am")
    with pytest.raises(ValueError, match="unknown time zone"):
        GamingDayConfig(timezone="Mars/Olympus")
