"""schemas/events.schema.json agrees with the decoder on a corpus of good and bad lines."""
from __future__ import annotations

import itertools
import json
import pathlib

import jsonschema
import pytest

from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line
from pitwatch.schemas.jsonschema import build_schema, render
from tests.conftest import BASE, event
from tests.data import clean_floor_lines

SCHEMA_FILE = pathlib.Path(__file__).resolve().parents[2] / "schemas" / "events.schema.json"


def test_committed_schema_is_generated_from_the_contract():
    assert SCHEMA_FILE.read_text() == render(), "run: python -m pitwatch.schemas.jsonschema > schemas/events.schema.json"


def test_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(build_schema())


def _corpus() -> list[dict]:
    good = [event(t, seq=i) for i, t in enumerate(BASE)]
    good += [json.loads(l) for l in itertools.islice(clean_floor_lines(), 0, None, 97)]
    bad_edits = [
        {"seq": -1}, {"seq": "3"}, {"seq": 2.5}, {"seq": True}, {"table_id": 7}, {"table_id": ""},
        {"source": "croupier"}, {"source": "dealer"}, {"type": "nope"}, {"card": "1h"}, {"card": 7},
        {"ts": "2026-11-28T20:00:01"}, {"ts": "2026-13-01T00:00:00Z"}, {"ts": "2026-02-30T00:00:00Z"},
        {"event_id": "e" * 129}, {"event_id": ""}, {"pack_id": 12}, {"pack_id": None}, {"index": None},
        {"device_id": None}, {"index": 3.0}, {"extra_field": {"nested": [1, 2]}}, {"card": None},
        {"seq": 2**63 - 1}, {"seq": 2**63}, {"seq": 2**64 - 1}, {"index": 2**63},   # version 2: seq below 2^63
    ]
    corpus = list(good)
    for edit in bad_edits:
        ev = event("card_drawn")
        for k, v in edit.items():
            ev[k] = v
        corpus.append(ev)
    for edit in [{"seat": 0}, {"seat": "2"}, {"amount": 0}, {"amount": -5}, {"amount": "5"}, {"spot": "dragon"},
                 {"dealer_id": None}, {"round_id": None}, {"all_in": 1}]:
        corpus.append({**event("bet_placed"), **edit})
    for edit in [{"target": "seat:0"}, {"target": "table"}, {"face": "sideways"}, {"round_id": None},
                 {"round_id": None, "target": "burn"}, {"street": 8}, {"street": 3}, {"hand": 0}]:
        corpus.append({**event("card_dealt"), **edit})
    for edit in [{"cards": ["As"]}, {"cards": ["As", "Ks", "Qs", "Js", "Xx"]}]:
        corpus.append({**event("hand_declared"), **edit})
    for edit in [{"missing": ["Zz"]}, {"missing": None}, {"preshuffled": "no"}, {"decks": 0}]:
        corpus.append({**event("shuffle_completed"), **edit})
    corpus += [[1, 2], "text", 42]
    return corpus


def test_decoder_and_json_schema_agree_on_every_line():
    validator = jsonschema.Draft202012Validator(build_schema(), format_checker=jsonschema.FormatChecker())
    cfg = GamingDayConfig()
    disagreements = []
    n_good = n_bad = 0
    for i, obj in enumerate(_corpus()):
        decoded_ok = not isinstance(decode_line(json.dumps(obj), "c", i, cfg), Reject)
        schema_ok = validator.is_valid(obj)
        n_good += decoded_ok
        n_bad += not decoded_ok
        if decoded_ok != schema_ok:
            disagreements.append((obj, decoded_ok, [e.message for e in validator.iter_errors(obj)][:3]))
    assert not disagreements, disagreements[:5]
    assert n_good > 100 and n_bad > 40  # the corpus exercises both sides


@pytest.mark.parametrize("fmt_needed", ["date-time"])
def test_format_checker_knows_date_time(fmt_needed):
    assert fmt_needed in jsonschema.FormatChecker().checkers
