"""Decode a block of JSONL lines on columns: the batch's fast path.

:func:`decode_block` hands the block to Arrow's JSON reader (C++, parallel),
which infers the types of the fields the block has; when a column is not
plainly the contract's, it reads the block again with the contract's columns
as an explicit schema (:func:`_read_raw`).  Then it checks the contract on
whole columns.  It is a *filter*, never a judge: a row it is not sure of
goes back to the caller, who decodes that line with the per-line decoder
(:func:`pitwatch.schemas.decode.decode_fields`), which accepts it or rejects it with
the reason.  So the fast path can only be stricter than the per-line
decoder, never looser, and the two agree on every accepted value (a test
decodes a corpus of good and bad lines both ways).

A whole block goes to the per-line decoder when Arrow cannot read it as the
contract's columns: a line that is not a JSON object, invalid UTF-8, a field
of the wrong JSON type, ``3.0`` for an integer, a field the contract does not
know (it belongs in ``unknown_fields``), a key given twice, a timestamp Arrow
cannot parse.  Rows sent back one by one: a missing required field, a value
out of its range or set, a card code, a null inside a card list, a ``card``
that is null where it is required (Arrow cannot tell null from absent), a
timestamp beyond microseconds or spelled with ``t``/``z``, ``NaN``/``Infinity``,
a timestamp outside what the lake holds or beyond the run's horizon.

Arrow never sees a block holding a line the per-line decoder rejects before
parsing (:mod:`pitwatch.schemas.limits`: too long, nested too deep: Arrow's reader
took 47 s over one line of 10,000 nested arrays) or invalid UTF-8 (Arrow
does not check it in every place).
"""
from __future__ import annotations

import datetime as _dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from pitwatch.schemas import contract as C
from pitwatch.schemas import limits
from pitwatch.schemas.arrow import EVENTS, TS

# The contract's fields as Arrow reads them from JSON: ``ts`` as text.
RAW = pa.schema([pa.field(f.name, pa.string() if f.name == "ts" else f.type)
                 for f in EVENTS if f.name in C.FIELDS])
_RAW_NAMES = frozenset(RAW.names)
_PARSE = pj.ParseOptions(explicit_schema=RAW, unexpected_field_behavior="error", newlines_in_values=False)
# The first read names only ``ts`` (as text: Arrow would make it a timestamp) and lets Arrow infer the
# fields the block has.  Given all ~45 of the contract's fields, Arrow appends a null for each one a
# row lacks, one at a time: ~30 % of the read's instructions (callgrind, a day's files).
_PARSE_INFERRED = pj.ParseOptions(explicit_schema=pa.schema([pa.field("ts", pa.string())]),
                                  unexpected_field_behavior="infer", newlines_in_values=False)
# inferred → contract type, where the values are the same: ints that are amounts, empty card lists
_WIDENED = {(pa.int64(), pa.float64()), (pa.list_(pa.null()), pa.list_(pa.string()))}

# Stricter than TIMESTAMP_PATTERN: what Arrow's cast and Python's fromisoformat read alike.
_FAST_TS = (r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
            r"(\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")
_MIN_MICROS = 2 * 86_400_000_000   # earlier instants (1970) go the per-line way
_END_MICROS = limits.END_TS_MICROS - 2 * 86_400_000_000     # and so do the last days the lake holds
_KEEP_OPENING = bytes(b for b in range(256) if b not in b"[{\n")
_CARDS = pa.array(sorted(r + s for r in C.RANKS for s in C.SUITS), pa.string())
_TYPE_NAMES = pa.array(list(C.TYPES), pa.string())
_TYPE_SOURCES = pa.array([spec[0] for spec in C.TYPES.values()], pa.string())


# _REQUIRED[type's position in C.TYPES, field's in C.FIELDS]: the field is required on that type
# (one more row, all False, for a type the contract does not know: those rows are out anyway)
_REQUIRED = np.array([[name in C.required_fields(t) for name in C.FIELDS] for t in C.TYPES]
                     + [[False] * len(C.FIELDS)])
_POSITIVE = pa.array(sorted(C.POSITIVE_AMOUNT_TYPES), pa.string())


def _all_true(mask) -> pa.Array:
    return pc.fill_null(mask, False)


def _kind_ok(kind: str, col) -> pa.Array | None:
    """Row mask: the value fits ``kind`` or is null.  None when every value fits by its Arrow type."""
    if kind in ("str", "bool", "ts"):
        return None
    if kind == "id":
        ok = pc.greater(pc.utf8_length(col), 0)
    elif kind == "event_id":
        n = pc.utf8_length(col)
        ok = pc.and_(pc.greater_equal(n, 1), pc.less_equal(n, 128))
    elif kind == "int0":
        ok = pc.greater_equal(col, 0)
    elif kind in ("int1", "seat"):
        ok = pc.greater_equal(col, 1)
    elif kind == "street":
        ok = pc.and_(pc.greater_equal(col, 3), pc.less_equal(col, 7))
    elif kind == "amount":
        ok = pc.is_finite(col)
    elif kind == "card":
        ok = pc.is_in(col, value_set=_CARDS)
    elif kind in ("cards", "cards5"):
        ok = _cards_ok(col, exactly=5 if kind == "cards5" else None)
    elif kind.startswith("enum:"):
        ok = pc.is_in(col, value_set=pa.array(getattr(C, kind[5:]), pa.string()))
    elif kind.startswith("pattern:"):
        ok = pc.match_substring_regex(col, getattr(C, kind[8:]))
    else:
        raise AssertionError(kind)
    return pc.or_kleene(pc.is_null(col), _all_true(ok))


def _cards_ok(col, exactly: int | None) -> pa.Array:
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    flat = col.flatten()
    bad_card = pc.invert(_all_true(pc.is_in(flat, value_set=_CARDS)))
    parents = pc.filter(pc.list_parent_indices(col), bad_card)
    ok = pc.invert(pc.is_in(pa.array(range(len(col)), pa.int64()), value_set=parents.cast(pa.int64())))
    if exactly is not None:
        ok = pc.and_(ok, _all_true(pc.equal(pc.list_value_length(col), exactly)))
    return ok


def rows_that_pass(raw: pa.Table) -> pa.Array:
    """Boolean mask of the rows the fast path may accept (the others go to the per-line decoder)."""
    etype = raw.column("type")
    type_at = pc.index_in(etype, value_set=_TYPE_NAMES)     # null: a type the contract does not know
    ok = pc.is_valid(type_at)
    # source must be the type's own (an unknown type is already out)
    expected_source = pc.take(_TYPE_SOURCES, type_at)
    ok = pc.and_(ok, _all_true(pc.equal(raw.column("source"), expected_source)))
    required_here = _REQUIRED[pc.fill_null(type_at, len(_TYPE_NAMES)).to_numpy()]   # row → fields it needs
    missing_required = np.zeros(raw.num_rows, dtype=bool)
    for j, (name, kind) in enumerate(C.FIELDS.items()):
        col = raw.column(name)
        if col.null_count and _REQUIRED[:, j].any():
            missing_required |= required_here[:, j] & col.is_null().to_numpy()
        if col.null_count == len(col):
            continue
        fits = _kind_ok(kind, col)
        if fits is not None:
            ok = pc.and_(ok, fits)
    # a card_dealt to a layout position (not the burn) belongs to a round
    dealt = pc.and_(_all_true(pc.equal(etype, "card_dealt")), _all_true(pc.not_equal(raw.column("target"), "burn")))
    ok = pc.and_(ok, pc.invert(pc.and_(dealt, pc.is_null(raw.column("round_id")))))
    positive = _all_true(pc.is_in(etype, value_set=_POSITIVE))
    ok = pc.and_(ok, pc.invert(pc.and_(positive, _all_true(pc.less_equal(raw.column("amount"), 0)))))
    ok = pc.and_(ok, _all_true(pc.match_substring_regex(raw.column("ts"), _FAST_TS)))
    return pc.and_(ok, pa.array(~missing_required))


def ts_offsets(text) -> pa.Array:
    """``ts_offset`` of timestamp texts that match :data:`_FAST_TS`: minutes east of UTC as written
    (``Z`` 0, ``-04:00`` -240), null for ``-00:00`` (:func:`pitwatch.schemas.decode.ts_offset_minutes`)."""
    tail = pc.if_else(pc.ends_with(text, "Z"), "+00:00", pc.utf8_slice_codeunits(text, -6))
    hours = pc.cast(pc.utf8_slice_codeunits(tail, 1, 3), pa.int64())
    minutes = pc.add(pc.multiply(hours, 60), pc.cast(pc.utf8_slice_codeunits(tail, 4, 6), pa.int64()))
    signed = pc.if_else(pc.starts_with(tail, "-"), pc.negate(minutes), minutes)
    return pc.if_else(pc.equal(tail, "-00:00"), pa.scalar(None, pa.int64()), signed)


def gaming_days(ts: pa.Array, config) -> pa.Array:
    """``gaming_day`` of UTC timestamps: local date of ``ts`` minus the cutoff (outputs.md)."""
    cutoff = pa.scalar(config.cutoff_delta, pa.duration("us"))
    if config.zone is _dt.timezone.utc:
        local = ts.cast(pa.timestamp("us"))
    else:
        local = pc.local_timestamp(ts.cast(pa.timestamp("us", tz=config.timezone)))
    days = pc.subtract(local, cutoff).cast(pa.date32())
    if config.zone is _dt.timezone.utc:
        return days
    # the wall-clock day is a first guess: moved by one where ``ts`` lies before that day's start
    # or at or after the next day's (a cutoff in a repeated hour; GamingDayConfig.gaming_day)
    guesses = pc.unique(days)
    starts = [config.day_start_micros(d) for d in guesses.to_pylist()]
    ends = [config.day_start_micros(d + _dt.timedelta(days=1)) for d in guesses.to_pylist()]
    at = pc.index_in(days, value_set=guesses)
    micros = ts.cast(pa.int64())
    early = pc.less(micros, pa.array(starts, pa.int64()).take(at))
    late = pc.greater_equal(micros, pa.array(ends, pa.int64()).take(at))
    if not (pc.any(early).as_py() or pc.any(late).as_py()):
        return days
    shift = pc.if_else(early, -1, pc.if_else(late, 1, 0)).cast(pa.int32())
    return pc.add(days.cast(pa.int32()), shift).cast(pa.date32())


def decode_block(lines: list[bytes], file: str, line_numbers: list[int], config) -> tuple[pa.Table, list[int]] | None:
    """Decode lines (line ends and blank lines already removed) on columns.

    Returns ``(events, slow)``: an EVENTS table of the rows accepted here, and
    the positions in ``lines`` the caller must decode one by one; or ``None``
    when Arrow cannot read the block as the contract's columns (then every
    line goes the per-line way).  A line that does not start with ``{`` is
    never handed to Arrow (:func:`decode_joined`): it is sent back alone.
    """
    objects = [i for i, line in enumerate(lines) if line[:1] == b"{"]
    if len(objects) == len(lines):
        return decode_joined(b"\n".join(lines), len(lines), max(map(len, lines)), file, line_numbers, config)
    others = sorted(set(range(len(lines))) - set(objects))
    if not objects:
        return EVENTS.empty_table(), others
    got = decode_joined(b"\n".join(lines[i] for i in objects), len(objects), max(len(lines[i]) for i in objects),
                        file, [line_numbers[i] for i in objects], config)
    if got is None:
        return None
    events, slow = got
    return events, sorted([objects[k] for k in slow] + others)


def _read_raw(data: bytes, longest: int) -> pa.Table | None:
    """The block as RAW's columns, or None when Arrow cannot read it so.

    Read first with the types Arrow infers (:data:`_PARSE_INFERRED`), taken
    when each column is plainly the contract's field (:func:`_as_raw`);
    otherwise read again with RAW as the explicit schema, so that the
    outcome is always the explicit read's (a date-like text that Arrow
    infers as a timestamp, a field of the wrong type, an unknown field).
    """
    options = pj.ReadOptions(block_size=max(1 << 20, 2 * longest + 2))
    for parse, conformed in ((_PARSE_INFERRED, _as_raw), (_PARSE, pa.Table.combine_chunks)):
        try:
            raw = conformed(pj.read_json(pa.BufferReader(data), read_options=options, parse_options=parse))
        except (pa.ArrowException, UnicodeDecodeError, ValueError):
            continue
        if raw is not None:
            return raw
    return None


def _as_raw(read: pa.Table) -> pa.Table | None:
    """An inferred read's columns as RAW's: None unless every column is a contract field whose
    inferred type is the field's, null, or widens to it with the same values (:data:`_WIDENED`)."""
    n = read.num_rows
    have = dict(zip(read.column_names, read.columns))
    if not have.keys() <= _RAW_NAMES:
        return None
    columns = []
    for field in RAW:
        column = have.get(field.name)
        if column is None or column.type == pa.null():
            columns.append(pa.nulls(n, field.type))
        elif column.type == field.type:
            columns.append(column)
        elif (column.type, field.type) in _WIDENED:
            try:
                columns.append(column.cast(field.type))     # safe: an int beyond 2**53 raises
            except pa.ArrowInvalid:
                return None
        else:
            return None
    return pa.Table.from_arrays(columns, schema=RAW).combine_chunks()


def decode_joined(data: bytes, count: int, longest: int, file: str, line_numbers, config
                  ) -> tuple[pa.Table, list[int]] | None:
    """:func:`decode_block` of ``count`` lines already joined by ``\\n`` (the longest ``longest`` bytes).
    ``file``: their file's path, or a string array of one path per line (several small files' lines).

    Every line must start with ``{`` (:class:`pitwatch.inputs.files.LineBlock`'s
    lines do): pyarrow 25's JSON reader dies of a segmentation fault on a
    block that starts with ``null``.
    """
    if not _arrow_may_read(data, longest):
        return None
    raw = _read_raw(data, longest)
    if raw is None or raw.num_rows != count:
        return None     # Arrow cannot read it as the contract's columns, or a line held more than one JSON value
    ok = rows_that_pass(raw)
    n_ok = pc.sum(ok.cast(pa.int64())).as_py() or 0
    if n_ok == 0:
        return EVENTS.empty_table(), list(range(count))
    slow = [] if n_ok == count else pc.indices_nonzero(pc.invert(ok)).to_pylist()
    good = raw.filter(ok) if slow else raw
    try:
        ts = pc.cast(good.column("ts"), TS)
    except pa.ArrowInvalid:
        return None     # a date such as February 30th: let the per-line decoder say which
    micros = ts.cast(pa.int64())
    if pc.min(micros).as_py() < _MIN_MICROS or pc.max(micros).as_py() >= _END_MICROS:
        return None
    days = gaming_days(ts, config)
    numbers = pa.array(line_numbers, pa.int64())
    numbers = numbers.filter(ok) if slow else numbers
    files = None if isinstance(file, str) else file     # several files' lines (JoinedLines): a path per line
    if files is not None and slow:
        files = files.filter(ok)
    last = config.last_gaming_day
    if last is not None and pc.max(days).as_py() > last:     # beyond the run's horizon: the per-line way
        within = pc.less_equal(days, pa.scalar(last, pa.date32()))
        beyond = pc.filter(pc.indices_nonzero(ok), pc.invert(within)).to_pylist()
        slow = sorted(slow + beyond)
        good, ts, days, numbers = good.filter(within), ts.filter(within), days.filter(within), numbers.filter(within)
        files = files.filter(within) if files is not None else None
    n = good.num_rows
    columns = {name: good.column(name) for name in RAW.names}
    columns["ts"] = ts
    columns["ts_offset"] = ts_offsets(good.column("ts"))
    columns["unknown_fields"] = pa.nulls(n, pa.string())
    columns["gaming_day"] = days
    columns["file"] = pc.fill_null(pa.nulls(n, pa.string()), file) if files is None else files
    columns["line"] = numbers
    return pa.table([columns[f.name] for f in EVENTS], schema=EVENTS), slow


def _arrow_may_read(data: bytes, longest: int) -> bool:
    """Whether the block may go to Arrow: valid UTF-8, and no line the per-line decoder rejects unparsed
    (:func:`pitwatch.schemas.limits.line_problem`).  A few ms over 4 MB: the brackets that open, counted per line."""
    if longest > limits.MAX_LINE_BYTES:
        return False
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    opening = data.translate(None, _KEEP_OPENING).split(b"\n")
    if max(map(len, opening)) <= limits.MAX_DEPTH:
        return True
    lines = data.split(b"\n")
    return all(limits.nesting_depth(lines[i]) <= limits.MAX_DEPTH
               for i, o in enumerate(opening) if len(o) > limits.MAX_DEPTH)
