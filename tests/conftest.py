"""Shared test helpers: build contract-valid event lines tersely."""
from __future__ import annotations

import json

import pytest

BASE = {
    "shuffle_completed": {"source": "shuffler", "device_id": "SHF-1", "pack_id": "P-1", "decks": 8,
                          "card_count": 416, "missing": [], "extra": []},
    "card_drawn": {"source": "shoe", "device_id": "SHOE-1", "pack_id": "P-1", "index": 1, "card": "7h"},
    "card_dealt": {"source": "dealer", "device_id": "DT-1", "dealer_id": "D-1", "round_id": "R-1",
                   "target": "player", "face": "up", "card": "7h"},
    "bet_placed": {"source": "dealer", "device_id": "DT-1", "dealer_id": "D-1", "round_id": "R-1",
                   "seat": 3, "spot": "banker", "amount": 100},
    "table_opened": {"source": "dealer", "device_id": "DT-1", "dealer_id": "D-1", "game": "baccarat", "decks": 8},
    "hand_declared": {"source": "dealer", "device_id": "DT-1", "dealer_id": "D-1", "round_id": "R-1",
                      "seat": 2, "cards": ["As", "Ks", "Qs", "Js", "Ts"]},
}


def event(type_: str = "card_drawn", seq: int = 1, **fields) -> dict:
    """A valid event of ``type_`` with ``fields`` overriding (None deletes a field)."""
    ev = {"event_id": f"e-{type_}-{seq}", "ts": "2026-11-28T20:00:01.000Z", "type": type_,
          "table_id": "BAC-07", "seq": seq, **BASE[type_]}
    for k, v in fields.items():
        if v is None:
            ev.pop(k, None)
        else:
            ev[k] = v
    return ev


def line(type_: str = "card_drawn", seq: int = 1, **fields) -> str:
    return json.dumps(event(type_, seq, **fields))


@pytest.fixture
def make_line():
    return line
