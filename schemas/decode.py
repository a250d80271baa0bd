"""Decode one raw input line into an :class:`~schemas.events.Event` or a :class:`Reject`.

Every rejection reason of ``spec/events.md`` ("What a line can be rejected
for") is produced here, in words a floor supervisor can read; conflicting
duplicates are decided later, across lines, by ingest (they need every copy).
A line may have several problems: all of them are reported, joined by ``; ``.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import re
from typing import Any

import orjson

from schemas import contract as C
from schemas.events import Event, datetime_to_micros

RAW_LIMIT = 64 * 1024  # rejected raw text is cut here (contract)
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()


@dataclasses.dataclass(frozen=True)
class GamingDayConfig:
    """``gaming_day`` = local date of ``ts`` minus the cutoff (outputs.md)."""

    cutoff: str = "06:00"
    timezone: str = "UTC"

    def __post_init__(self):
        m = re.fullmatch(r"([01]?[0-9]|2[0-3]):([0-5][0-9])", self.cutoff)
        if not m:
            raise ValueError(f"cutoff must be HH:MM, got {self.cutoff!r}")
        delta = _dt.timedelta(hours=int(m.group(1)), minutes=int(m.group(2)))
        if self.timezone.upper() == "UTC":
            zone = _dt.timezone.utc
        else:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                zone = ZoneInfo(self.timezone)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {self.timezone!r}") from None
        object.__setattr__(self, "_delta", delta)   # derived, cached (frozen dataclass)
        object.__setattr__(self, "_zone", zone)
        object.__setattr__(self, "_delta_micros", int(delta.total_seconds()) * 1_000_000)

    @property
    def cutoff_delta(self) -> _dt.timedelta:
        return self._delta

    @property
    def zone(self) -> _dt.tzinfo:
        return self._zone

    def day_of_micros(self, micros: int) -> _dt.date:
        """Gaming day of a UTC timestamp in microseconds (integer arithmetic when the zone is UTC)."""
        if self._zone is _dt.timezone.utc:
            return _dt.date.fromordinal(_EPOCH_ORDINAL + (micros - self._delta_micros) // 86_400_000_000)
        return self.gaming_day(_dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=micros))

    def gaming_day(self, ts: _dt.datetime) -> _dt.date:
        return (ts.astimezone(self.zone) - self.cutoff_delta).date()


@dataclasses.dataclass(frozen=True)
class Reject:
    """A line that breaks the contract, with everything needed to find it again."""

    file: str
    line: int
    raw: str
    reason: str
    # What could still be read from the line (``None`` otherwise).  A rejected
    # line whose device_id and seq are readable did arrive: it is no SEQ_GAP.
    event_id: str | None = None
    table_id: str | None = None
    device_id: str | None = None
    seq: int | None = None
    digest: str | None = None


_CARD = re.compile(C.CARD_PATTERN)
_TS = re.compile(C.TIMESTAMP_PATTERN)
_PATTERNS = {
    name: re.compile(getattr(C, name))
    for name in ("TARGET_PATTERN", "SEAT_OR_SUPERVISOR_PATTERN", "SEAT_REF_PATTERN")
}


def _is_int(v: Any) -> bool:
    return (type(v) is int) or (type(v) is float and v.is_integer())


def _check(kind: str, v: Any) -> str | None:
    """Return a problem description, or None when ``v`` fits ``kind``."""
    if kind == "id":
        if type(v) is not str:
            return f"must be a string, got {_json_type(v)}"
        return None if v else "must not be empty"
    if kind == "event_id":
        if type(v) is not str:
            return f"must be a string, got {_json_type(v)}"
        return None if 1 <= len(v) <= 128 else f"must be 1-128 characters, got {len(v)}"
    if kind == "str":
        return None if type(v) is str else f"must be a string, got {_json_type(v)}"
    if kind == "ts":
        if type(v) is not str:
            return f"must be an RFC 3339 timestamp string, got {_json_type(v)}"
        return None if _parse_ts(v) is not None else f"is not an RFC 3339 timestamp with offset: {v!r}"
    if kind in ("int0", "int1", "seat", "street"):
        if not _is_int(v):
            return f"must be an integer, got {_json_type(v)}"
        lo, hi = {"int0": (0, None), "int1": (1, None), "seat": (1, None), "street": (3, 7)}[kind]
        if v < lo or (hi is not None and v > hi):
            return f"must be {'between %d and %d' % (lo, hi) if hi else 'at least %d' % lo}, got {_num(v)}"
        return None
    if kind == "bool":
        return None if type(v) is bool else f"must be true or false, got {_json_type(v)}"
    if kind == "amount":
        return None if type(v) in (int, float) else f"must be a number, got {_json_type(v)}"
    if kind == "card":
        if v is None:
            return None
        if type(v) is not str or not _CARD.match(v):
            return f"is not a card code (rank A23456789TJQK + suit cdhs): {v!r}"
        return None
    if kind in ("cards", "cards5"):
        if type(v) is not list:
            return f"must be a list of card codes, got {_json_type(v)}"
        bad = [c for c in v if type(c) is not str or not _CARD.match(c)]
        if bad:
            return f"holds bad card codes: {', '.join(repr(c) for c in bad[:5])}"
        if kind == "cards5" and len(v) != 5:
            return f"must hold exactly 5 cards, got {len(v)}"
        return None
    if kind.startswith("enum:"):
        allowed = getattr(C, kind[5:])
        if type(v) is str and v in allowed:
            return None
        return f"must be one of {', '.join(allowed)}; got {v!r}"
    if kind.startswith("pattern:"):
        name = kind[8:]
        if type(v) is str and _PATTERNS[name].match(v):
            return None
        what = {
            "TARGET_PATTERN": "seat:N, dealer, community, player, banker or burn",
            "SEAT_OR_SUPERVISOR_PATTERN": "seat:N or supervisor",
            "SEAT_REF_PATTERN": "seat:N",
        }[name]
        return f"must be {what}; got {v!r}"
    raise AssertionError(f"unknown field kind {kind}")


_CARD_SET = frozenset(r + u for r in C.RANKS for u in C.SUITS)
_NAMED_TARGETS = frozenset(("dealer", "community", "player", "banker", "burn"))


def _fast_predicate(name: str, kind: str):
    """A cheap test that accepts the common, valid values of a field (and converts nothing).

    A value it does not accept goes through :func:`_check`, which decides and
    says why (e.g. ``3.0`` is a valid integer, but only the slow path takes it).
    """
    if kind == "id":
        return lambda v: type(v) is str and v != ""
    if kind == "event_id":
        return lambda v: type(v) is str and 0 < len(v) <= 128
    if kind in ("str", "ts"):
        return lambda v: type(v) is str
    if kind == "int0":
        return lambda v: type(v) is int and v >= 0
    if kind in ("int1", "seat"):
        return lambda v: type(v) is int and v >= 1
    if kind == "street":
        return lambda v: type(v) is int and 3 <= v <= 7
    if kind == "bool":
        return lambda v: type(v) is bool
    if kind == "amount":
        return lambda v: type(v) is int or type(v) is float
    if kind == "card":
        return lambda v: type(v) is str and v in _CARD_SET
    if kind == "cards":
        return lambda v: type(v) is list and all(type(c) is str and c in _CARD_SET for c in v)
    if kind == "cards5":
        return lambda v: type(v) is list and len(v) == 5 and all(type(c) is str and c in _CARD_SET for c in v)
    if kind.startswith("enum:"):
        allowed = frozenset(getattr(C, kind[5:]))
        return lambda v: type(v) is str and v in allowed
    if kind == "pattern:TARGET_PATTERN":
        seat = _PATTERNS["TARGET_PATTERN"].match
        return lambda v: type(v) is str and (v in _NAMED_TARGETS or seat(v) is not None)
    if kind.startswith("pattern:"):
        match = _PATTERNS[kind[8:]].match
        return lambda v: type(v) is str and match(v) is not None
    raise AssertionError(kind)


_CONVERT = {"int0": int, "int1": int, "seat": int, "street": int, "amount": float}
# name -> (kind, fast predicate, converter or None)
_FIELD_RULES = {name: (kind, _fast_predicate(name, kind), _CONVERT.get(kind)) for name, kind in C.FIELDS.items()}
_REQUIRED = {t: C.required_fields(t) for t in C.TYPES}
_REQUIRED_LAYOUT_CARD = {t: r + ("round_id",) for t, r in _REQUIRED.items()}


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def _num(v: Any) -> str:
    return str(int(v)) if _is_int(v) else str(v)


def _parse_ts(text: str) -> _dt.datetime | None:
    if not _TS.match(text):
        return None
    norm = text.replace("t", "T").replace("z", "Z")
    try:
        value = _dt.datetime.fromisoformat(norm)
    except ValueError:
        return None
    return value if value.tzinfo is not None else None


def _canonical(v: Any) -> Any:
    """Parsed JSON with integral floats folded to ints: 1 and 1.0 are equal JSON."""
    t = type(v)
    if t is float:
        return int(v) if v.is_integer() else v
    if t is dict:
        return {k: _canonical(x) for k, x in v.items()}
    if t is list:
        return [_canonical(x) for x in v]
    return v


_PLAIN = (str, int, bool, type(None))


def content_digest(obj: dict) -> str:
    """Digest of a parsed line, equal for lines that are equal as parsed JSON."""
    plain = all(type(v) in _PLAIN for v in obj.values())
    canon = orjson.dumps(obj if plain else _canonical(obj), option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(canon, digest_size=16).hexdigest()


def _cut(raw: str | None) -> str:
    if raw is None:
        return ""  # the caller fills in the raw text (decode_fields on the batch's hot path)
    return raw if len(raw) <= RAW_LIMIT else raw[:RAW_LIMIT]


def _readable(obj: dict, name: str, kind: str):
    v = obj.get(name)
    return v if v is not None and _check(kind, v) is None else None


Decoded = "tuple[Event, str] | Reject"


def decode_line(raw: str | bytes, file: str, line: int, config: GamingDayConfig):
    """Decode one line (without its line end) into ``(event, digest)`` or a Reject.

    ``digest`` identifies the line's content as parsed JSON: two deliveries of
    one event_id are duplicates exactly when their digests are equal.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if isinstance(raw, bytes):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return Reject(file, line, _cut(text), "not valid UTF-8")
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return Reject(file, line, _cut(text), f"not valid JSON: {exc}")
    return decode_object(obj, text, file, line, config)


def decode_object(obj: Any, text: str, file: str, line: int, config: GamingDayConfig):
    """Validate one parsed JSON value (a line, or a Parquet row as a dict) into ``(Event, digest)``."""
    if type(obj) is not dict:
        return decode_fields(obj, text, file, line, config)
    digest = content_digest(obj)
    out = decode_fields(obj, text, file, line, config)
    if isinstance(out, Reject):
        return dataclasses.replace(out, digest=digest)
    return Event.from_row(out), digest


def decode_fields(obj: Any, text: str, file: str, line: int, config: GamingDayConfig):
    """Like :func:`decode_object`, but an accepted line is its fields dict (missing keys
    are absent fields): the cheap form for building Arrow columns.  No digest."""
    if type(obj) is not dict:
        return Reject(file, line, _cut(text), f"not a JSON object (got {_json_type(obj)})")
    problems: list[str] = []
    etype = obj.get("type")
    source = obj.get("source")
    spec = C.TYPES.get(etype) if type(etype) is str else None
    if "type" not in obj:
        problems.append("required field 'type' is missing")
    elif spec is None:
        problems.append(f"unknown type {etype!r}")
    if source is not None and (type(source) is not str or source not in C.SOURCES):
        problems.append(f"unknown source {source!r} (must be shuffler, shoe or dealer)")
    elif spec is not None and source is not None and spec[0] != source:
        problems.append(f"type {etype!r} belongs to source {spec[0]!r}, not {source!r}")

    if spec is None:
        required = C.ENVELOPE_REQUIRED
    elif etype == "card_dealt" and obj.get("target") not in (None, "burn"):
        required = _REQUIRED_LAYOUT_CARD[etype]
    else:
        required = _REQUIRED[etype]
    for name in required:
        value = obj.get(name)
        if value is None and name != "type" and (name not in obj or name != "card"):
            problems.append(f"required field {name!r} is missing")

    fields: dict[str, Any] = {}
    unknown: dict[str, Any] | None = None
    rules = _FIELD_RULES
    for name, value in obj.items():
        rule = rules.get(name)
        if rule is None:
            if unknown is None:
                unknown = {}
            unknown[name] = value
            continue
        if value is None or name == "type":
            continue  # a null is an absent field; a required one is reported above
        kind, fast, convert = rule
        if fast(value):
            fields[name] = float(value) if kind == "amount" else value
            continue
        problem = _check(kind, value)
        if problem:
            problems.append(f"field {name!r} {problem}")
        else:
            fields[name] = convert(value) if convert else value
    if etype in C.POSITIVE_AMOUNT_TYPES and "amount" in fields and fields["amount"] <= 0:
        problems.append(f"field 'amount' must be greater than 0, got {_num(obj['amount'])}")
    when = None
    if "ts" in fields:
        when = _parse_ts(fields["ts"])
        if when is None:
            problems.append(f"field 'ts' is not an RFC 3339 timestamp with offset: {fields['ts']!r}")

    if problems:
        return Reject(
            file, line, _cut(text), "; ".join(problems),
            event_id=_readable(obj, "event_id", "event_id"),
            table_id=_readable(obj, "table_id", "id"),
            device_id=_readable(obj, "device_id", "id"),
            seq=int(obj["seq"]) if _readable(obj, "seq", "int0") is not None else None,
        )

    micros = datetime_to_micros(when)
    fields["ts"] = micros
    fields["type"] = etype
    fields["gaming_day"] = config.day_of_micros(micros)
    if unknown:
        fields["unknown_fields"] = orjson.dumps(unknown, option=orjson.OPT_SORT_KEYS).decode()
    fields["file"] = file
    fields["line"] = line
    return fields
