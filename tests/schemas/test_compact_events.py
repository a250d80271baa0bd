"""A table's events store only the fields it has columns for, and behave as full events."""
from __future__ import annotations

import pickle
import sys

import pyarrow as pa
import pytest

from pitwatch.schemas.arrow import drop_empty_columns, events_to_table, shared_strings, table_to_events
from pitwatch.schemas.contract import LAKE_EXTRA_COLUMNS
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from pitwatch.schemas.events import EVENT_FIELDS, CompactEvent, Event, compact_event_class
from tests.conftest import line


def _events():
    cfg = GamingDayConfig()
    return [decode_line(line(seq=s, card="As" if s % 2 else "Kh"), "f.jsonl", s, cfg)[0] for s in (1, 2, 3)]


def test_a_compact_event_reads_every_field_as_the_full_event_does():
    full = _events()
    compact = table_to_events(drop_empty_columns(events_to_table(full)))
    assert all(isinstance(e, CompactEvent) for e in compact)
    assert len(compact[0]) < len(EVENT_FIELDS)      # the absent fields are not stored
    for c, f in zip(compact, full):
        assert all(getattr(c, name) == getattr(f, name) for name in EVENT_FIELDS)
        assert c.amount is None and c.card == f.card
        assert c == f and f == c and hash(c) == hash(f) and c.to_row() == f.to_row()
        assert repr(c) == repr(f)
        assert pickle.loads(pickle.dumps(c)) == f and type(pickle.loads(pickle.dumps(c))) is Event
        assert c._replace(card="2c") == f._replace(card="2c")
    assert compact[0] != compact[1]


def test_skipped_columns_read_none():
    full = _events()
    compact = table_to_events(events_to_table(full), skip=LAKE_EXTRA_COLUMNS)
    assert [e.file for e in compact] == [None] * 3 and [e.seq for e in compact] == [1, 2, 3]
    assert compact[0].to_row() == {**full[0].to_row(), **{name: None for name in LAKE_EXTRA_COLUMNS}}


def test_one_class_per_set_of_stored_fields_and_no_unknown_field():
    assert compact_event_class(("event_id", "ts")) is compact_event_class(("event_id", "ts"))
    assert compact_event_class(("event_id", "ts")) is not compact_event_class(("ts", "event_id"))
    with pytest.raises(ValueError, match="not event fields"):
        compact_event_class(("event_id", "colour"))


def test_shared_strings_equal_values_are_one_object_and_nulls_stay():
    col = pa.chunked_array([["card_dealt", None, "payout"], ["card_dealt", "payout", None]])
    values = shared_strings(col)
    assert values == col.to_pylist()
    assert values[0] is values[3] and values[2] is values[4]
    assert shared_strings(pa.array([], pa.string())) == []


def test_shared_strings_are_the_interned_names():
    """A value equal to a name the code holds is that name's own str (the engine's comparisons
    with its literals end at the identity test)."""
    built = "".join(["card_", "dealt"])     # an equal str that is not the interned one
    values = shared_strings(pa.array([built, "a round id built at run time " + str(len(built))]))
    assert values[0] is sys.intern(built) and values[0] is not built
    assert values[1] is sys.intern("a round id built at run time " + str(len(built)))   # an equal, new str
