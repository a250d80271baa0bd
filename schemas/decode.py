"""Decode one raw input line into an :class:`~pitwatch.schemas.events.Event` or a :class:`Reject`.

Every rejection reason of ``spec/events.md`` ("What a line can be rejected
for") is produced here, in words a floor supervisor can read; conflicting
duplicates are decided later, across lines, by ingest (they need every copy).
A line may have several problems: all of them are reported, joined by ``; ``.

The decoder is total: no byte sequence and no JSON value (nor any value a
Parquet file can hold, :mod:`pitwatch.inputs.files`) raises out of it.  Lines too
long or nested too deep are rejected before parsing (:mod:`pitwatch.schemas.limits`);
an exception nobody foresaw while decoding one line becomes a reject with
the reason ``internal error: <type>`` and a log line, never a failed run.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import logging
import re
from typing import TYPE_CHECKING, Any

import orjson

from pitwatch.schemas import contract as C
from pitwatch.schemas import limits
from pitwatch.schemas.events import Event, datetime_to_micros
from pitwatch.schemas.values import (
    FLOAT_INT,
    RAW_LIMIT,
    finite,
    has_unreadable,
    is_int,
    json_default,
    json_type,
    num,
    show,
)

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_UTC_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MICROSECOND = _dt.timedelta(microseconds=1)
_SECOND = _dt.timedelta(seconds=1)
_ONE_DAY = _dt.timedelta(days=1)


@dataclasses.dataclass(frozen=True)
class GamingDayConfig:
    """``gaming_day`` = local date of ``ts`` minus the cutoff (outputs.md).

    ``not_after`` is the run's last day (the nightly ``--day``, or
    ``--not-after DAY``), None when it has none: a line whose gaming day is
    more than :data:`pitwatch.schemas.limits.HORIZON_DAYS` after it is rejected
    (events.md version 2).  It is part of the run's command and recorded in
    ``runs`` (``options.not_after``), so a rerun decides the same.
    """

    cutoff: str = "06:00"
    timezone: str = "UTC"
    not_after: _dt.date | None = None

    if TYPE_CHECKING:   # derived in __post_init__ and cached there: attributes, not fields (nor arguments)
        _delta: _dt.timedelta = dataclasses.field(init=False)
        _zone: _dt.tzinfo = dataclasses.field(init=False)
        _delta_micros: int = dataclasses.field(init=False)
        _starts: dict[_dt.date, int] = dataclasses.field(init=False)
        _last_day: _dt.date | None = dataclasses.field(init=False)

    def __post_init__(self):
        if isinstance(self.not_after, str):
            object.__setattr__(self, "not_after", _dt.date.fromisoformat(self.not_after))
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
        object.__setattr__(self, "_starts", {})             # day -> day_start_micros (a cache)
        object.__setattr__(self, "_last_day", None if self.not_after is None
                           else self.not_after + _dt.timedelta(days=limits.HORIZON_DAYS))

    @property
    def last_gaming_day(self) -> _dt.date | None:
        """The latest gaming day a line may fall in (``not_after`` + the horizon), or None."""
        return self._last_day

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
        """The gaming day ``ts`` falls in: the day D with ``day_start(D) <= ts < day_start(D + 1)``.

        The local date of ``ts`` minus the cutoff, read on the wall clock, goes backwards in a
        repeated hour when the cutoff falls in it (``America/New_York``, cutoff 01:30: 05:45Z is
        01:45 EDT, day 11-01, and 06:15Z is 01:15 EST, which the wall clock would put in 10-31).
        So the wall-clock day is only the first guess, moved by one when ``ts`` lies before its
        start or at or after the next day's: days never go backwards and never skip.
        """
        day = (ts.astimezone(self._zone) - self._delta).date()
        if self._zone is _dt.timezone.utc:
            return day
        micros = (ts - _UTC_EPOCH) // _MICROSECOND
        if micros < self.day_start_micros(day):
            return day - _ONE_DAY
        if micros >= self.day_start_micros(day + _ONE_DAY):
            return day + _ONE_DAY
        return day

    def day_start_micros(self, day: _dt.date) -> int:
        """The instant gaming ``day`` begins, UTC microseconds: the first instant the zone's wall
        clock reads the cutoff on that date (in a repeated hour, its first pass; a cutoff the clock
        skips, spring forward, begins the day at the jump). Cached per day."""
        start = self._starts.get(day)
        if start is None:
            start = self._starts[day] = self._first_instant(_dt.datetime.combine(day, _dt.time()) + self._delta)
        return start

    def _first_instant(self, wall: _dt.datetime) -> int:
        """UTC microseconds of the first instant whose local wall time is ``wall`` or later."""
        utc = _dt.timezone.utc
        first = wall.replace(tzinfo=self._zone, fold=0).astimezone(utc)
        if first.astimezone(self._zone).replace(tzinfo=None) == wall:
            earlier = wall.replace(tzinfo=self._zone, fold=1).astimezone(utc)   # fold=1: a repeat's second pass
            return (min(first, earlier) - _UTC_EPOCH) // _MICROSECOND
        # ``wall`` does not exist (the clock jumps over it): the day begins at the jump, found
        # between the two readings of ``wall`` (offsets before and after it), to the second
        lo = (wall.replace(tzinfo=self._zone, fold=1).astimezone(utc) - _UTC_EPOCH) // _SECOND
        hi = (first - _UTC_EPOCH) // _SECOND
        lo, hi = min(lo, hi), max(lo, hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            local = (_UTC_EPOCH + _dt.timedelta(seconds=mid)).astimezone(self._zone).replace(tzinfo=None)
            lo, hi = (lo, mid) if local >= wall else (mid, hi)
        return hi * 1_000_000


@dataclasses.dataclass(frozen=True)
class Reject:
    """A line that breaks the contract, with everything needed to find it again."""

    file: str
    line: int | None        # None: the whole file's damage (pitwatch.inputs.files.Damage), not a line
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


def _check(kind: str, v: Any) -> str | None:
    """Return a problem description, or None when ``v`` fits ``kind``."""
    if kind == "id":
        if type(v) is not str:
            return f"must be a string, got {json_type(v)}"
        return None if v else "must not be empty"
    if kind == "event_id":
        if type(v) is not str:
            return f"must be a string, got {json_type(v)}"
        return None if 1 <= len(v) <= 128 else f"must be 1-128 characters, got {len(v)}"
    if kind == "str":
        return None if type(v) is str else f"must be a string, got {json_type(v)}"
    if kind == "ts":
        if type(v) is not str:
            return f"must be an RFC 3339 timestamp string, got {json_type(v)}"
        return None if _parse_ts(v) is not None else f"is not an RFC 3339 timestamp with offset: {show(v)}"
    if kind in ("int0", "int1", "seat", "street"):
        if not is_int(v):
            return f"must be an integer, got {json_type(v)}"
        lo, hi = {"int0": (0, None), "int1": (1, None), "seat": (1, None), "street": (3, 7)}[kind]
        if v < lo or (hi is not None and v > hi):
            return f"must be {'between %d and %d' % (lo, hi) if hi else 'at least %d' % lo}, got {num(v)}"
        if v >= limits.INT_LIMIT:
            return f"must be less than 2^63, got {num(v)}"
        return None
    if kind == "bool":
        return None if type(v) is bool else f"must be true or false, got {json_type(v)}"
    if kind == "amount":
        if type(v) not in (int, float):
            return f"must be a number, got {json_type(v)}"
        return None if finite(v) else f"must be a finite number, got {num(v)}"
    if kind == "card":
        if v is None:
            return None
        if type(v) is not str or not _CARD.match(v):
            return f"is not a card code (rank A23456789TJQK + suit cdhs): {show(v)}"
        return None
    if kind in ("cards", "cards5"):
        if type(v) is not list:
            return f"must be a list of card codes, got {json_type(v)}"
        bad = [c for c in v if type(c) is not str or not _CARD.match(c)]
        if bad:
            return f"holds bad card codes: {', '.join(show(c) for c in bad[:5])}"
        if kind == "cards5" and len(v) != 5:
            return f"must hold exactly 5 cards, got {len(v)}"
        return None
    if kind.startswith("enum:"):
        allowed = getattr(C, kind[5:])
        if type(v) is str and v in allowed:
            return None
        return f"must be one of {', '.join(allowed)}; got {show(v)}"
    if kind.startswith("pattern:"):
        name = kind[8:]
        if type(v) is str and _PATTERNS[name].match(v):
            return None
        what = {
            "TARGET_PATTERN": "seat:N, dealer, community, player, banker or burn",
            "SEAT_OR_SUPERVISOR_PATTERN": "seat:N or supervisor",
            "SEAT_REF_PATTERN": "seat:N",
        }[name]
        return f"must be {what}; got {show(v)}"
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
    top = limits.INT_LIMIT
    if kind == "int0":
        return lambda v: type(v) is int and 0 <= v < top
    if kind in ("int1", "seat"):
        return lambda v: type(v) is int and 1 <= v < top
    if kind == "street":
        return lambda v: type(v) is int and 3 <= v <= 7
    if kind == "bool":
        return lambda v: type(v) is bool
    if kind == "amount":
        return lambda v: (type(v) is float and v - v == 0.0) or (type(v) is int and -FLOAT_INT < v < FLOAT_INT)
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
        return int(v) if v.is_integer() and abs(v) < limits.INT_LIMIT else v
    if t is dict:
        return {k: _canonical(x) for k, x in v.items()}
    if t is list:
        return [_canonical(x) for x in v]
    return v


_PLAIN = (str, int, bool, type(None))


def content_digest(obj: dict) -> str:
    """Digest of a parsed line, equal for lines that are equal as parsed JSON."""
    plain = all(type(v) in _PLAIN for v in obj.values())
    canon = orjson.dumps(obj if plain else _canonical(obj), default=json_default, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(canon, digest_size=16).hexdigest()


def _cut(raw: str | None) -> str:
    if raw is None:
        return ""  # the caller fills in the raw text (decode_fields on the batch's hot path)
    return raw if len(raw) <= RAW_LIMIT else raw[:RAW_LIMIT]


def _readable(obj: dict, name: str, kind: str):
    v = obj.get(name)
    return v if v is not None and _check(kind, v) is None else None


Decoded = "tuple[Event, str] | Reject"
log = logging.getLogger("pitwatch")


def internal_error(exc: BaseException, raw: str | bytes | None, file: str, line: int | None) -> Reject:
    """The reject of a line whose decoding raised what nobody foresaw: logged, never a failed run."""
    log.error("internal error decoding %s line %s: %s: %s", file, line, type(exc).__name__, exc, exc_info=exc)
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return Reject(file, line, _cut(text) if text is not None else "", f"internal error: {type(exc).__name__}")


def decode_line(raw: str | bytes, file: str, line: int, config: GamingDayConfig):
    """Decode one line (without its line end) into ``(event, digest)`` or a Reject.

    ``digest`` identifies the line's content as parsed JSON: two deliveries of
    one event_id are duplicates exactly when their digests are equal.
    """
    try:
        return _decode_line(raw, file, line, config)
    except Exception as exc:    # noqa: BLE001 - the decoder is total: one line never stops a run
        return internal_error(exc, raw, file, line)


def _decode_line(raw: str | bytes, file: str, line: int, config: GamingDayConfig):
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    problem = limits.line_problem(data)
    if problem:
        return Reject(file, line, _cut(text), problem)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return Reject(file, line, _cut(text), "not valid UTF-8")
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return Reject(file, line, _cut(text), f"not valid JSON: {exc}")
    return decode_object(obj, text, file, line, config)


def decode_object(obj: Any, text: str, file: str, line: int, config: GamingDayConfig):
    """Validate one parsed JSON value (a line, or a Parquet row as a dict) into ``(Event, digest)``."""
    try:
        if type(obj) is not dict:
            return decode_fields(obj, text, file, line, config)
        digest = content_digest(obj)
        out = decode_fields(obj, text, file, line, config)
        if isinstance(out, Reject):
            return dataclasses.replace(out, digest=digest)
        return Event.from_row(out), digest
    except Exception as exc:    # noqa: BLE001 - the decoder is total
        return internal_error(exc, text, file, line)


def decode_fields(obj: Any, text: str | None, file: str, line: int, config: GamingDayConfig):
    """Like :func:`decode_object`, but an accepted line is its fields dict (missing keys
    are absent fields): the cheap form for building Arrow columns.  No digest."""
    try:
        return _decode_fields(obj, text, file, line, config)
    except Exception as exc:    # noqa: BLE001 - the decoder is total
        return internal_error(exc, text, file, line)


def _decode_fields(obj: Any, text: str | None, file: str, line: int, config: GamingDayConfig):
    if type(obj) is not dict:
        return Reject(file, line, _cut(text), f"not a JSON object (got {json_type(obj)})")
    problems: list[str] = []
    etype: Any = obj.get("type")       # any JSON value (a str of C.TYPES when spec is not None)
    source = obj.get("source")
    spec = C.TYPES.get(etype) if type(etype) is str else None
    if "type" not in obj:
        problems.append("required field 'type' is missing")
    elif spec is None:
        problems.append(f"unknown type {show(etype)}" if etype is None or type(etype) is str
                        else f"field 'type' must be a string, got {json_type(etype)}")
    if source is not None and (type(source) is not str or source not in C.SOURCES):
        problems.append(f"unknown source {show(source)} (must be shuffler, shoe or dealer)")
    elif spec is not None and source is not None and spec[0] != source:
        problems.append(f"type {etype!r} belongs to source {spec[0]!r}, not {source!r}")

    required: tuple[str, ...]
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
    if unknown:
        for name, value in unknown.items():
            found = has_unreadable(value)
            if found:
                problems.append(f"field {show(name)} holds {found}")
    if spec is not None and etype in C.POSITIVE_AMOUNT_TYPES and "amount" in fields and fields["amount"] <= 0:
        problems.append(f"field 'amount' must be greater than 0, got {num(obj['amount'])}")
    micros = offset = None
    if "ts" in fields:
        micros, offset, problem = _ts_micros(fields["ts"], config)
        if problem:
            problems.append(f"field 'ts' {problem}")

    if problems:
        return Reject(
            file, line, _cut(text), "; ".join(problems),
            event_id=_readable(obj, "event_id", "event_id"),
            table_id=_readable(obj, "table_id", "id"),
            device_id=_readable(obj, "device_id", "id"),
            seq=int(obj["seq"]) if _readable(obj, "seq", "int0") is not None else None,
        )

    assert micros is not None       # ts is required, and a ts it could not read is a problem above
    fields["ts"] = micros
    if offset is not None:
        fields["ts_offset"] = offset
    fields["type"] = etype
    fields["gaming_day"] = config.day_of_micros(micros)
    if unknown:
        fields["unknown_fields"] = orjson.dumps(unknown, option=orjson.OPT_SORT_KEYS).decode()
    fields["file"] = file
    fields["line"] = line
    return fields


def ts_offset_minutes(text: str, when: _dt.datetime) -> int | None:
    """The UTC offset ``ts`` was written with, in minutes east of UTC (``-04:00`` is -240, ``Z`` 0);
    None for ``-00:00``, which RFC 3339 (4.3) reserves for "UTC known, local offset unknown"."""
    if text.endswith("-00:00"):
        return None
    offset = when.utcoffset()
    assert offset is not None       # ``when`` was read with its offset (_parse_ts)
    return int(offset.total_seconds()) // 60


def _ts_micros(text: str, config: GamingDayConfig) -> tuple[int | None, int | None, str | None]:
    """``ts`` as UTC microseconds and its offset (:func:`ts_offset_minutes`), or why it is rejected
    (events.md version 2: what the lake can hold, and the horizon of a run with a last day)."""
    when = _parse_ts(text)
    if when is None:
        return None, None, f"is not an RFC 3339 timestamp with offset: {show(text)}"
    micros = datetime_to_micros(when)
    if micros < limits.MIN_TS_MICROS:
        return None, None, f"is before 1970, which the lake cannot hold: {show(text)}"
    if micros >= limits.END_TS_MICROS or when.year >= 9999:
        return None, None, f"is in year 9999, which the lake cannot hold: {show(text)}"
    last = config.last_gaming_day
    if last is not None:
        day = config.day_of_micros(micros)
        if day > last:
            assert config.not_after is not None     # last_gaming_day is derived from it
            return None, None, (f"falls in gaming day {day.isoformat()}, more than {limits.HORIZON_DAYS} days after "
                          f"the run's last day {config.not_after.isoformat()}: {show(text)}")
    return micros, ts_offset_minutes(text, when), None
