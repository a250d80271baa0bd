"""The typed event record shared by ingest, the replay engine and the live path.

An :class:`Event` is one accepted line of the contract: a slotted record with
one attribute per contract field (``None`` where the line does not carry it),
plus what ingest adds (``unknown_fields``, ``gaming_day``, ``file``, ``line``).
``ts`` is held as integer microseconds since the Unix epoch, UTC: cheap to
compare and exact.  Events are plain data: they pickle, and they round-trip
through the ``events`` lake table (:func:`schemas.arrow.events_to_table`).
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from schemas.contract import FIELDS, LAKE_EXTRA_COLUMNS

EVENT_FIELDS: tuple[str, ...] = tuple(FIELDS) + LAKE_EXTRA_COLUMNS

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


class Event:
    """One accepted event.  Attributes are the contract's field names."""

    __slots__ = EVENT_FIELDS

    def __init__(self, **fields: Any) -> None:
        for name in EVENT_FIELDS:
            setattr(self, name, fields.pop(name, None))
        if fields:
            raise TypeError(f"unknown event fields: {sorted(fields)}")

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Event":
        """Build from a dict that may hold fewer (never more) keys."""
        ev = cls.__new__(cls)
        get = row.get
        for name in EVENT_FIELDS:
            setattr(ev, name, get(name))
        return ev

    def to_row(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in EVENT_FIELDS}

    def __getstate__(self):
        return tuple(getattr(self, n) for n in EVENT_FIELDS)

    def __setstate__(self, state):
        for name, value in zip(EVENT_FIELDS, state):
            setattr(self, name, value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and self.__getstate__() == other.__getstate__()

    def __hash__(self) -> int:
        return hash(self.event_id)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{n}={getattr(self, n)!r}" for n in EVENT_FIELDS
            if getattr(self, n) is not None and n not in ("file", "line", "gaming_day")
        )
        return f"Event({shown})"

    @property
    def ts_datetime(self) -> _dt.datetime:
        return micros_to_datetime(self.ts)


def micros_to_datetime(micros: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(microseconds=micros)


def datetime_to_micros(value: _dt.datetime) -> int:
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
