"""The contract as JSON Schema (draft 2020-12), generated from :mod:`pitwatch.schemas.contract`.

``schemas/events.schema.json`` is this module's output, committed for
integrators (validate a device adapter's output before it reaches the floor
feed).  Regenerate with ``python -m pitwatch.schemas.jsonschema > schemas/events.schema.json``;
a test fails when the committed file and the contract drift apart.

What JSON Schema cannot say and only pitwatch checks: duplicates and
conflicts between lines (they need every copy), ``NaN``/``Infinity``
(not JSON at all, refused by any JSON parser), and the bounds of
:mod:`pitwatch.schemas.limits` on whole lines and timestamps (a line's length and
nesting, timestamps from 1970 to year 9998, the run's horizon).
"""
from __future__ import annotations

import json
import sys

from pitwatch.schemas import contract as C
from pitwatch.schemas.limits import INT_LIMIT

INT_MAX = INT_LIMIT - 1

_NOT_NULL = {"not": {"type": "null"}}


def _fragment(kind: str) -> dict:
    card = {"type": "string", "pattern": C.CARD_PATTERN}
    if kind == "id":
        return {"type": "string", "minLength": 1}
    if kind == "event_id":
        return {"type": "string", "minLength": 1, "maxLength": 128}
    if kind == "str":
        return {"type": "string"}
    if kind == "ts":
        return {"type": "string", "format": "date-time", "pattern": C.TIMESTAMP_PATTERN}
    if kind in ("int0", "int1", "seat"):    # below 2^63: the lake's int64 (events.md version 2 for seq)
        return {"type": "integer", "minimum": 0 if kind == "int0" else 1, "maximum": INT_MAX}
    if kind == "street":
        return {"type": "integer", "minimum": 3, "maximum": 7}
    if kind == "bool":
        return {"type": "boolean"}
    if kind == "amount":
        return {"type": "number"}
    if kind == "card":
        return card
    if kind == "cards":
        return {"type": "array", "items": card}
    if kind == "cards5":
        return {"type": "array", "items": card, "minItems": 5, "maxItems": 5}
    if kind.startswith("enum:"):
        return {"enum": list(getattr(C, kind[5:]))}
    if kind.startswith("pattern:"):
        return {"type": "string", "pattern": getattr(C, kind[8:])}
    raise AssertionError(kind)


def build_schema() -> dict:
    properties = {}
    for name, kind in C.FIELDS.items():
        frag = _fragment(kind)
        if name == "type":
            frag = {"enum": list(C.TYPES)}
        elif name == "source":
            frag = {"enum": list(C.SOURCES)}
        if name not in C.ENVELOPE_REQUIRED:
            frag = {"anyOf": [{"type": "null"}, frag]}  # null = absent
        properties[name] = frag
    rules = []
    for etype, (source, _req, _opt) in C.TYPES.items():
        required = [f for f in C.required_fields(etype) if f not in C.ENVELOPE_REQUIRED]
        then = {
            "properties": {"source": {"const": source},
                           **{f: _NOT_NULL for f in required if C.FIELDS[f] != "card"}},
            "required": required,
        }
        rules.append({"if": {"properties": {"type": {"const": etype}}, "required": ["type"]}, "then": then})
    rules.append({  # a card placed on the layout belongs to a round; only burns may be outside one
        "if": {"properties": {"type": {"const": "card_dealt"}, "target": {"type": "string", "not": {"const": "burn"}}},
               "required": ["type", "target"]},
        "then": {"required": ["round_id"], "properties": {"round_id": _NOT_NULL}},
    })
    rules.append({
        "if": {"properties": {"type": {"const": "bet_placed"}}, "required": ["type"]},
        "then": {"properties": {"amount": {"type": "number", "exclusiveMinimum": 0}}},
    })
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:pitwatch:event-contract:v%d" % C.CONTRACT_VERSION,
        "title": "pitwatch event, contract version %d" % C.CONTRACT_VERSION,
        "description": "One line of a pitwatch input file (docs/spec/events.md). Generated from schemas/contract.py.",
        "type": "object",
        "required": list(C.ENVELOPE_REQUIRED),
        "properties": properties,
        "additionalProperties": True,
        "allOf": rules,
    }


def render() -> str:
    return json.dumps(build_schema(), indent=2, sort_keys=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
