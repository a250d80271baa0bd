"""JSON values as the decoder sees them: their kind in words, a value quoted in a reason, finiteness.

Also :class:`Unreadable`, the value of a Parquet cell JSON has no equivalent
for (:mod:`pitwatch.inputs.parquet`): every field rejects it, naming it.
"""
from __future__ import annotations

import math
from typing import Any

from pitwatch.schemas import limits

RAW_LIMIT = 64 * 1024  # rejected raw text is cut here (contract)


def is_int(v: Any) -> bool:
    return (type(v) is int) or (type(v) is float and v.is_integer())


FLOAT_INT = 1 << 1000     # integers below this (in size) are finite as floats


def finite(v) -> bool:
    if type(v) is int:
        return -FLOAT_INT < v < FLOAT_INT
    return math.isfinite(v)


class Unreadable:
    """A Parquet value with no JSON equivalent (binary data, a duration, a timestamp Python
    cannot hold …): every field rejects it, naming what it is (:mod:`pitwatch.inputs.parquet`)."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}>"

    def __eq__(self, other) -> bool:
        return type(other) is Unreadable and other.what == self.what

    def __hash__(self) -> int:
        return hash(self.what)


def json_type(v: Any) -> str:
    if v is None:
        return "null"
    if type(v) is Unreadable:
        return v.what
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def num(v: Any) -> str:
    if type(v) is float:
        return str(int(v)) if v.is_integer() and abs(v) < limits.INT_LIMIT else repr(v)
    if type(v) is int and abs(v) >= 10 ** 30:
        return f"an integer of {len(str(abs(v)))} digits"
    return str(v)


_SHOWN = 80


def show(v: Any) -> str:
    """A value as a reason quotes it: its repr, cut to a readable length."""
    if type(v) is str and len(v) > _SHOWN:
        v = v[:_SHOWN]
        return repr(v)[:-1] + "…" + repr(v)[-1]
    text = repr(v)
    return text if len(text) <= _SHOWN + 2 else text[:_SHOWN] + "…"


def json_default(v: Any) -> str:
    """orjson's fallback for the values of a Parquet row it does not know (never those of a JSON line)."""
    return repr(v)


def parquet_row_text(row: Any) -> str:
    """A Parquet row as the raw text of its reject: JSON, with what JSON cannot carry (NaN, an
    :class:`Unreadable`) written so a person sees it."""
    import json

    try:
        return json.dumps(row, default=json_default, ensure_ascii=False, allow_nan=True)
    except (ValueError, TypeError, RecursionError):
        return repr(row)[:RAW_LIMIT]


def has_unreadable(v: Any) -> str | None:
    """What in a value (an unknown field's) JSON cannot carry: an unreadable Parquet value, NaN or
    an infinity (JSON lines never hold these; Parquet rows may).  None when it is plain JSON."""
    t = type(v)
    if t is Unreadable:
        return v.what
    if t is float:
        return None if math.isfinite(v) else f"{v!r}, which JSON cannot carry"
    if t is dict:
        v = v.values()
    elif t is not list:
        return None
    for x in v:
        found = has_unreadable(x)
        if found:
            return found
    return None
