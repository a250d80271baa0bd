"""The typed event record shared by ingest, the replay engine and the live path.

An :class:`Event` is one accepted line of the contract: a named tuple with
one attribute per contract field (``None`` where the line does not carry it),
plus what ingest adds (``unknown_fields``, ``gaming_day``, ``file``, ``line``).
``ts`` is held as integer microseconds since the Unix epoch, UTC: cheap to
compare and exact.  Events are plain data: they pickle, and they round-trip
through the ``events`` lake table (:func:`schemas.arrow.events_to_table`).
"""
from __future__ import annotations

import datetime as _dt
from collections import namedtuple
from typing import Any

from schemas.contract import FIELDS, LAKE_EXTRA_COLUMNS

EVENT_FIELDS: tuple[str, ...] = tuple(FIELDS) + LAKE_EXTRA_COLUMNS

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


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
        return isinstance(other, Event) and tuple.__eq__(self, other)

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


def events_from_columns(columns: list[list]) -> list[Event]:
    """Events from one list of values per field of EVENT_FIELDS, in that order."""
    return [_new(Event, values) for values in zip(*columns)]


def micros_to_datetime(micros: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(microseconds=micros)


def datetime_to_micros(value: _dt.datetime) -> int:
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
