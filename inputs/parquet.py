"""Parquet input: rows as the JSON values the same event's line would parse to, and the file's Damage.

A Parquet file "with the same columns" goes through exactly the validation
of a JSON line (:mod:`pitwatch.schemas.decode`); any column type is read:
timestamps, dates and times become RFC 3339 / ISO text, decimals numbers
(an integral decimal an integer), structs objects, lists and maps arrays.
What JSON has no equivalent for (binary data, a duration, a value pyarrow
cannot turn into Python such as a timestamp beyond year 9999 or text that
is not UTF-8, a type nested deeper than a line may be) is an
:class:`pitwatch.schemas.values.Unreadable`, which every field rejects, naming it.
NaN and the infinities stay floats: no field accepts them (JSON has none).

A file that is not Parquet, or a row group that cannot be read, is the
file's :class:`pitwatch.inputs.stored.Damage`; the rows of the row groups
before it are kept.
"""
from __future__ import annotations

import dataclasses
from typing import Generator

from pitwatch.inputs.stored import Damage, _open, _row_groups_from, stored_size
from pitwatch.schemas.values import Unreadable


def iter_parquet_chunks(path: str, chunk_lines: int, read: dict | None = None
                        ) -> Generator[tuple[int, list[tuple[int, dict]] | Damage], None, None]:
    """Yield chunks of ``(row_number, row_dict)`` from a Parquet file of events; a damaged file's last
    chunk is its :class:`Damage` (rows of the row groups before it are kept).

    Values are turned into what the same event's JSON line would parse to
    (:func:`parquet_values`): timestamps into RFC 3339 text, so that they go
    through exactly the validation of a JSON line; a value JSON has no
    equivalent for is an :class:`pitwatch.schemas.values.Unreadable`, which every
    field rejects.  Every column is a field like any other (the lake's own
    column names too: :func:`_parquet_row_to_event`); a file with two
    columns of one name is damaged, not read.

    ``ts_offset`` of a Parquet timestamp column: a column with a time zone
    gives each value's offset in that zone (``America/Puerto_Rico``: -240);
    a naive column is read as UTC (offset 0), as is a ``UTC`` one; a text
    column is read as a line's text, offset and all.

    ``read`` (the batch's read): the ranges Arrow reads are hashed as they are read
    (:class:`pitwatch.inputs.stored.HashedFile`), up to the size the file had when opened; when
    the read ends, ``read["fingerprint"]`` is ``{"path", "sha256", "bytes"}`` of the bytes read
    (up to the damage, for a damaged file), and a file that changed while it was read ends with
    that :class:`Damage`.
    """
    from pitwatch.inputs.stored import HashedFile, ReadDigest

    number = 0
    try:
        f = _open(path)
    except OSError as exc:
        if read is not None:
            read["fingerprint"] = ReadDigest(path).fingerprint()
        yield number, Damage(path, 0, stored_size(path), f"the file cannot be read ({exc.strerror or exc})")
        return
    hashed = None
    if read is not None:
        try:
            f = hashed = HashedFile(f, path)
        except OSError as exc:
            f.close()
            read["fingerprint"] = ReadDigest(path).fingerprint()
            yield number, Damage(path, 0, stored_size(path), f"the file cannot be read ({exc.strerror or exc})")
            return
    damage, ended = None, False
    try:
        for number, items in _parquet_chunks(path, f, chunk_lines):
            if isinstance(items, Damage):
                damage = items
                break
            yield number, items
            number += 1
        ended = True
    finally:
        if hashed is not None:
            assert read is not None     # a read is hashed only when its ``read`` is given
            read["digest"] = hashed.digest
            if not ended:       # closed early (the rejects-in-a-row guard): the bytes hashed so far
                fingerprint, changed = hashed.finish(hashed.digest.bytes)
            elif damage is not None:
                fingerprint, changed = hashed.finish(damage.offset)
            else:
                fingerprint, changed = hashed.finish()
            read["fingerprint"] = fingerprint
            damage = damage or changed
            if damage is not None and fingerprint["bytes"] == damage.offset:    # as this read hashed them
                damage = dataclasses.replace(damage, sha256=fingerprint["sha256"])
        (hashed.f if hashed is not None else f).close()
    if damage is not None:
        yield number, damage


def _parquet_chunks(path: str, f, chunk_lines: int):
    import pyarrow.parquet as pq

    number = 0
    try:
        pf = pq.ParquetFile(f)
        groups = pf.metadata.num_row_groups
        names = pf.schema_arrow.names
    except Exception as exc:    # noqa: BLE001 - whatever pyarrow raises, the file is unreadable
        yield number, Damage(path, 0, stored_size(path), f"it is not a readable Parquet file ({_short(exc)})")
        return
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:   # a row would be a JSON object with a key twice: which value is the event's?
        yield number, Damage(path, 0, stored_size(path), "it has more than one column named "
                             + ", ".join(repr(n) for n in twice) + "; a row cannot say which is the field")
        return
    row = 0
    for g in range(groups):
        try:
            for batch in pf.iter_batches(batch_size=chunk_lines, row_groups=[g]):
                names = batch.schema.names
                columns = [parquet_values(column) for column in batch.columns]
                rows = []
                for values in zip(*columns):
                    row += 1
                    rows.append((row, _parquet_row_to_event(dict(zip(names, values)))))
                yield number, rows
                number += 1
        except Exception as exc:    # noqa: BLE001 - a row group that cannot be read is the file's damage
            offset, unread = _row_groups_from(pf.metadata, g)
            yield number, Damage(path, offset, unread, f"Parquet row group {g + 1} of {groups} cannot be read "
                                                       f"({_short(exc)})")
            return


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


def _type_depth(t) -> int:
    import pyarrow as pa

    depth, todo = 0, [(t, 1)]
    while todo:
        t, d = todo.pop()
        depth = max(depth, d)
        if pa.types.is_struct(t):
            todo.extend((t.field(i).type, d + 1) for i in range(t.num_fields))
        elif pa.types.is_map(t):
            todo.extend(((t.key_type, d + 2), (t.item_type, d + 2)))
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) \
                or getattr(pa.types, "is_list_view", lambda _: False)(t):
            todo.append((t.value_type, d + 1))
        elif pa.types.is_dictionary(t):
            todo.append((t.value_type, d))
    return depth


def parquet_values(column) -> list:
    """A Parquet column's values as a JSON line's would parse (:func:`json_value`).  Never raises:
    a value pyarrow cannot turn into Python (a timestamp beyond year 9999, text that is not
    UTF-8 …) or that nests deeper than a line may is an :class:`pitwatch.schemas.values.Unreadable`."""
    import pyarrow as pa

    from pitwatch.schemas.limits import MAX_DEPTH

    if _type_depth(column.type) - 1 > MAX_DEPTH:
        return [None if null else Unreadable(f"a value nested deeper than {MAX_DEPTH} levels")
                for null in column.is_null().to_pylist()]
    try:
        values = column.to_pylist()
    except Exception:   # noqa: BLE001 - one value is unreadable: find which
        values = []
        for i in range(len(column)):
            try:
                values.append(column[i].as_py())
            except UnicodeDecodeError:
                values.append(Unreadable("text that is not valid UTF-8"))
            except Exception:   # noqa: BLE001
                values.append(Unreadable(f"a {column.type} value that cannot be read"))
    plain = (pa.types.is_integer(column.type) or pa.types.is_string(column.type)
             or pa.types.is_large_string(column.type) or pa.types.is_boolean(column.type)
             or pa.types.is_null(column.type) or pa.types.is_float64(column.type) or pa.types.is_float32(column.type))
    return values if plain else [json_value(v) for v in values]


def _big(v: int) -> float:
    """An integer beyond 64 bits as a JSON line's parses: a float (orjson's reading), inf beyond."""
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


class _NotJSON(Exception):
    pass


def json_value(v):
    """A Python value of a Parquet row as the same value in a JSON line would parse (str, int, float,
    bool, None, list, dict); an :class:`pitwatch.schemas.values.Unreadable` when JSON has no equivalent."""
    try:
        return _json_value(v)
    except _NotJSON as exc:
        return Unreadable(str(exc))


def _json_value(v):
    import datetime as _dt
    import decimal
    import numbers

    t = type(v)
    if t is Unreadable:
        return v
    if t is int:
        return v if -(1 << 63) <= v < (1 << 64) else _big(v)
    if v is None or t in (str, float, bool):
        return v
    if t is list or t is tuple:
        return [_json_value(x) for x in v]
    if t is dict:
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, _dt.datetime):
        return (v if v.tzinfo else v.replace(tzinfo=_dt.timezone.utc)).isoformat()
    if isinstance(v, (_dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        if v.is_finite() and v == v.to_integral_value():
            return _json_value(int(v))
        return float(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        raise _NotJSON("binary data (a Parquet binary value, not text)")
    if isinstance(v, _dt.timedelta):
        raise _NotJSON("a duration")
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    raise _NotJSON(f"a {t.__name__} value")


def _parquet_row_to_event(rec: dict) -> dict:
    """A row as the JSON line that carries the same fields: a null cell is a field the line leaves
    out (a column is in every row). Every name is a field like any other, the lake's own column
    names included (``gaming_day``, ``file``, ``line``, ``unknown_fields``, ``ts_offset``: in a
    JSON line they are unknown fields, kept in ``unknown_fields``; so here)."""
    return {k: v for k, v in rec.items() if v is not None}
