"""The event contract of ``docs/spec/events.md``, version 1, as data.

This module is the single definition of the contract: the decoder
(:mod:`pitwatch.schemas.decode`), the Arrow schema of the ``events`` lake table
(:mod:`pitwatch.schemas.arrow`) and the JSON Schema for integrators
(:mod:`pitwatch.schemas.jsonschema`, written to ``schemas/events.schema.json``) are all
derived from the tables below, so they cannot drift apart.

Decisions where ``events.md`` is silent (a casino systems integrator's reading):

* A field marked *optional* or *default* in the contract may be absent; every
  other field a type lists is required.  ``card`` on ``card_drawn`` and
  ``card_dealt`` is the exception: it may be ``null`` *or absent*, both mean
  "not known"; an absent card is never guessed, so nothing is lost by
  accepting it.
* A contract field that appears on a type that does not list it (e.g.
  ``pack_id`` on a ``card_dealt``, as the terminals send it) is validated by
  its kind and kept in its typed column; only names the contract does not
  know go to ``unknown_fields``.
* "Integer" follows JSON Schema: ``3`` and ``3.0`` are integers, ``3.5``
  and ``true`` are not.
* Identifiers (``table_id``, ``device_id``, ``pack_id``, ``round_id``,
  ``dealer_id``) are non-empty strings; ``event_id`` is 1–128 characters.
* ``pack_id`` on the pack-preparation types (``cut_offered``, ``cut``,
  ``cut_card_inserted`` …) is optional: the terminal may not know the pack
  yet; the replay then attributes the event to the pack being prepared.
* ``round_id`` is required on every round type (the contract says "unique
  per table") and on ``stub_counted``.  On ``stub_discarded`` it is
  optional: terminals in the field send the ``pack_id`` instead (see the
  user's example floor, ``tests/data/clean-floor-2h.jsonl.gz``); the replay then attributes the discard
  to the last round dealt from that pack.
* ``small_bet`` / ``big_bet`` are optional on ``round_started`` at the
  contract level (they are only meaningful for stud games).
"""
from __future__ import annotations

CONTRACT_VERSION = 2

SOURCES = ("shuffler", "shoe", "dealer")
GAMES = ("baccarat", "three_bet_poker", "combate", "stud", "stud8", "razz")   # the one list: derived everywhere
STUD_GAMES = ("stud", "stud8", "razz")      # dealt by hand: no shoe stream
SHOE_GAMES = tuple(g for g in GAMES if g not in STUD_GAMES)   # dealt from a shoe that reports its cards
SHUFFLE_METHODS = ("machine", "hand", "riffle")
FACES = ("up", "down")
THREE_BETS = ("first", "second", "third")   # the spots of three-bet poker and combate, in betting order
SPOTS = THREE_BETS + ("player", "banker", "tie", "ante")
ACTIONS = (
    "hit", "stand", "double", "split", "bring_in", "complete",
    "bet", "raise", "call", "check", "fold",
)
RESULTS = ("win", "lose", "push", "half_lose")
DEALER_ROSTER_COLUMNS = ("id", "name", "shift")   # the dealers file (--dealers; the simulator writes one)
RANKS = "A23456789TJQK"
SUITS = "cdhs"  # lowest to highest
CARD_PATTERN = r"^[A2-9TJQK][cdhs]$"
TARGET_PATTERN = r"^(seat:[1-9][0-9]*|dealer|community|player|banker|burn)$"
SEAT_OR_SUPERVISOR_PATTERN = r"^(seat:[1-9][0-9]*|supervisor)$"
SEAT_REF_PATTERN = r"^seat:[1-9][0-9]*$"
# RFC 3339 date-time (section 5.6): full-date "T" full-time with an offset.
TIMESTAMP_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}"
    r"(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)

# Kinds of field.  Each kind has one validation rule in decode.py, one Arrow
# type in arrow.py and one JSON Schema fragment in jsonschema.py.
#   id        non-empty string
#   event_id  string of 1..128 characters
#   str       any string (free text)
#   ts        RFC 3339 timestamp with offset
#   int0      integer >= 0
#   int1      integer >= 1
#   seat      integer >= 1
#   street    integer 3..7
#   bool      true / false
#   amount    number (not bool)
#   pos_amount number > 0
#   card      card code, or null
#   cards     list of card codes
#   cards5    list of exactly 5 card codes
#   enum:NAME one of the tuple NAME above
#   pattern:NAME string matching the pattern NAME above
FIELDS: dict[str, str] = {
    # envelope
    "event_id": "event_id",
    "ts": "ts",
    "source": "enum:SOURCES",
    "type": "str",  # checked against TYPES
    "table_id": "id",
    "device_id": "id",
    "seq": "int0",
    "pack_id": "id",
    "round_id": "id",
    "dealer_id": "id",
    # payloads
    "game": "enum:GAMES",
    "decks": "int1",
    "card_count": "int0",
    "missing": "cards",
    "extra": "cards",
    "preshuffled": "bool",
    "index": "int0",
    "card": "card",
    "remaining": "int0",
    "seat": "seat",
    "method": "enum:SHUFFLE_METHODS",
    "by": "pattern:SEAT_OR_SUPERVISOR_PATTERN",
    "to": "pattern:SEAT_OR_SUPERVISOR_PATTERN",
    "position": "int0",
    "stack_size": "int0",
    "from_back": "int0",
    "target": "pattern:TARGET_PATTERN",
    "hand": "int1",
    "face": "enum:FACES",
    "street": "street",
    "stub": "int0",
    "layout": "int0",
    "exposed": "bool",
    "small_bet": "amount",
    "big_bet": "amount",
    "spot": "enum:SPOTS",
    "amount": "amount",
    "all_in": "bool",
    "action": "enum:ACTIONS",
    "cards": "cards5",
    "result": "enum:RESULTS",
    "reason": "str",
    "burns_added": "int0",
}

ENVELOPE_REQUIRED = ("event_id", "ts", "source", "type", "table_id", "device_id", "seq")

# type -> (source, required fields, optional fields).  Envelope fields are
# implied; dealer events also require dealer_id.
TYPES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    # shuffler
    "shuffle_completed": ("shuffler", ("pack_id", "decks", "card_count", "missing", "extra"), ("preshuffled",)),
    # shoe
    "shoe_loaded": ("shoe", ("pack_id", "card_count"), ()),
    "card_drawn": ("shoe", ("pack_id", "index"), ("card",)),
    "cut_card_drawn": ("shoe", ("pack_id", "index"), ()),
    "shoe_emptied": ("shoe", ("pack_id", "remaining"), ()),
    # dealer: table and seats
    "table_opened": ("dealer", ("game", "decks"), ()),
    "table_closed": ("dealer", (), ()),
    "dealer_in": ("dealer", (), ()),
    "player_seated": ("dealer", ("seat",), ()),
    "player_left": ("dealer", ("seat",), ()),
    # dealer: pack preparation
    "shuffle": ("dealer", ("pack_id", "method"), ()),
    "riffle_requested": ("dealer", ("by",), ("pack_id",)),
    "cut_offered": ("dealer", ("to",), ("pack_id",)),
    "cut_refused": ("dealer", ("by",), ("pack_id",)),
    "cut": ("dealer", ("by", "position", "stack_size"), ("pack_id",)),
    "cut_card_inserted": ("dealer", ("from_back", "stack_size"), ("pack_id",)),
    "stub_counted": ("dealer", ("round_id", "stub", "layout"), ("pack_id",)),
    "stub_discarded": ("dealer", ("exposed",), ("round_id", "pack_id")),
    "last_coup_announced": ("dealer", (), ("pack_id",)),
    # dealer: rounds
    "round_started": ("dealer", ("round_id", "game", "pack_id"), ("small_bet", "big_bet")),
    "bet_placed": ("dealer", ("round_id", "seat", "spot", "amount"), ("all_in",)),
    "bets_closed": ("dealer", ("round_id",), ()),
    "card_dealt": ("dealer", ("target", "face"), ("round_id", "pack_id", "card", "hand", "street")),
    "card_exposed": ("dealer", ("round_id", "target", "card"), ("street",)),
    "player_action": ("dealer", ("round_id", "seat", "action"), ("hand", "amount", "all_in", "street")),
    "player_absent": ("dealer", ("round_id", "seat"), ()),
    "hand_declared": ("dealer", ("round_id", "seat", "cards"), ()),
    "payout": ("dealer", ("round_id", "seat", "spot", "result", "amount"), ("hand",)),
    "round_voided": ("dealer", ("round_id", "reason"), ()),
    "reshuffle": ("dealer", ("round_id", "pack_id", "card_count", "burns_added"), ()),
    "round_ended": ("dealer", ("round_id",), ()),
}

# Fields whose value must be strictly positive on a given type.
POSITIVE_AMOUNT_TYPES = {"bet_placed"}


# Event columns ingest derives from the wire fields, read by the engine too.  ``ts_offset``: the
# device's UTC offset in minutes east of UTC as its ``ts`` was written (``Z`` and ``+00:00`` are 0;
# ``-00:00``, RFC 3339's "local offset unknown", is null): the table's own time, beside ``ts``
# (always UTC).  Not a wire field: a line's own "ts_offset" is an unknown field like any other.
DERIVED_COLUMNS = ("ts_offset",)

# Lake columns added to every event by ingest (not part of the wire format; the replay skips them).
LAKE_EXTRA_COLUMNS = ("unknown_fields", "gaming_day", "file", "line")


def required_fields(event_type: str) -> tuple[str, ...]:
    source, required, _optional = TYPES[event_type]
    envelope = ENVELOPE_REQUIRED + (("dealer_id",) if source == "dealer" else ())
    return envelope + required
