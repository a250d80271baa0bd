"""The typed event record shared by ingest, the replay engine and the live path.

An :class:`Event` is one accepted line of the contract: a named tuple with
one attribute per contract field (``None`` where the line does not carry it),
plus what ingest adds (``ts_offset``, ``unknown_fields``, ``gaming_day``, ``file``, ``line``).
``ts`` is held as integer microseconds since the Unix epoch, UTC: cheap to
compare and exact.  Events are plain data: they pickle, and they round-trip
through the ``events`` lake table (:func:`pitwatch.schemas.arrow.events_to_table`).
The batch replay reads them back as :class:`CompactEvent` s, which store
only the fields their table has values for.
"""
from __future__ import annotations

import datetime as _dt
from collections import namedtuple
from typing import TYPE_CHECKING, Any, Self

from pitwatch.schemas.contract import DERIVED_COLUMNS, FIELDS, LAKE_EXTRA_COLUMNS

EVENT_FIELDS: tuple[str, ...] = tuple(FIELDS) + DERIVED_COLUMNS + LAKE_EXTRA_COLUMNS

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


if TYPE_CHECKING:
    class _EventTuple(tuple[Any, ...]):
        """The named tuple below as the type checker sees it: its fields are the contract's
        (:data:`EVENT_FIELDS`, read at run time), so each reads as ``Any``."""

        index: Any      # card_drawn's field, which the tuple's own index() method would hide

        def __new__(cls, *values: Any, **fields: Any) -> Self: ...
        def __getattr__(self, name: str) -> Any: ...
        def _replace(self, **fields: Any) -> Event: ...
        def _asdict(self) -> dict[str, Any]: ...
else:
    _EventTuple = namedtuple("_EventTuple", EVENT_FIELDS, defaults=(None,) * len(EVENT_FIELDS))


class Event(_EventTuple):
    """One accepted event.  Attributes are the contract's field names.

    A named tuple: built from a row of columns in one C call (the batch
    builds millions of them), read through C-level attribute getters, and
    immutable.  ``Event(**fields)`` refuses a name the contract does not know.
    """

    __slots__ = ()

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Event":
        """Build from a dict that may hold fewer (never more) keys."""
        return _new(cls, map(row.get, EVENT_FIELDS))

    def to_row(self) -> dict[str, Any]:
        return dict(zip(EVENT_FIELDS, self))

    def __eq__(self, other: object) -> bool:
        if type(self) is type(other):
            return tuple.__eq__(self, other)
        return isinstance(other, Event) and self.to_row() == other.to_row()   # a compact event

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.event_id)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{n}={v!r}" for n, v in zip(EVENT_FIELDS, self)
            if v is not None and n not in ("file", "line", "gaming_day")
        )
        return f"Event({shown})"

    @property
    def ts_datetime(self) -> _dt.datetime:
        return micros_to_datetime(self.ts)


_new = tuple.__new__


class CompactEvent(Event):
    """An :class:`Event` that stores only some fields; the others read ``None``.

    A table's events carry a dozen of the ~50 fields, and the batch builds
    millions of them: storing only the fields its table has columns for
    makes each event ~140 bytes smaller (measured) and quicker to build.
    Each set of fields gets its own subclass (:func:`compact_events`), whose
    attributes are read like a named tuple's; everything else (``to_row``,
    equality, ``repr``, pickling as a plain :class:`Event`) behaves as for
    the full event.
    """

    __slots__ = ()
    STORED: tuple[str, ...] = ()

    def to_row(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in EVENT_FIELDS}

    _asdict = to_row

    def __repr__(self) -> str:
        return repr(self.full())

    def full(self) -> Event:
        return Event.from_row(self.to_row())

    def _replace(self, **fields) -> Event:
        return Event.from_row({**self.to_row(), **fields})

    def __reduce__(self):
        return Event.from_row, (self.to_row(),)


_COMPACT_CLASSES: dict[tuple[str, ...], type] = {}


def compact_event_class(stored: tuple[str, ...]) -> type:
    """The :class:`CompactEvent` subclass storing ``stored`` (fields of EVENT_FIELDS), in that order."""
    cls = _COMPACT_CLASSES.get(stored)
    if cls is None:
        unknown = set(stored) - set(EVENT_FIELDS)
        if unknown:
            raise ValueError(f"not event fields: {sorted(unknown)}")
        getters = namedtuple("_Stored", stored).__dict__ if stored else {}   # C-level item getters by position
        attrs = {name: getters[name] if name in stored else None for name in EVENT_FIELDS}
        cls = _COMPACT_CLASSES[stored] = type("CompactEvent", (CompactEvent,),
                                              {**attrs, "__slots__": (), "STORED": stored})
    return cls


def compact_events(names: list[str], columns: list[list]) -> list[Event]:
    """Events from one list of values per field in ``names``; every other field reads None."""
    cls = compact_event_class(tuple(names))
    return [_new(cls, values) for values in zip(*columns)]


def micros_to_datetime(micros: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(microseconds=micros)


def datetime_to_micros(value: _dt.datetime) -> int:
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
