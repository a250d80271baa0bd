"""Rows handed to the writer per gaming day: slices when in time order, filtered otherwise."""
from __future__ import annotations

import datetime as _dt
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pitwatch.pipelines import coders
from pitwatch.pipelines.replay import split_by_day

DAY = _dt.date(2026, 11, 28)


def _table(days: list[_dt.date]) -> pa.Table:
    return pa.table({"event_id": [f"e{i}" for i in range(len(days))],
                     "gaming_day": pa.array(days, pa.date32())})


def _filtered(table: pa.Table) -> dict[str, list[str]]:
    """What each day's rows must be: the rows of that day, in their order."""
    out = {}
    for day in sorted(set(table.column("gaming_day").to_pylist())):
        rows = table.filter(pc.equal(table.column("gaming_day"), pa.scalar(day, pa.date32())))
        out[day.isoformat()] = rows.column("event_id").to_pylist()
    return out


@pytest.mark.parametrize("in_time_order", [True, False])
def test_each_day_gets_exactly_its_rows_in_their_order(in_time_order):
    rnd = random.Random(7)
    for _ in range(50):
        days = [DAY + _dt.timedelta(days=rnd.randrange(3)) for _ in range(rnd.randrange(1, 40))]
        if in_time_order:
            days.sort()
        table = _table(days)
        for slices in (True, False):
            got = {key[1]: rows.column("event_id").to_pylist()
                   for key, rows in split_by_day("events", table, slices=slices)}
            assert got == _filtered(table)
            assert list(got) == sorted(got)          # day order
            assert all(key[0] == "events" for key, _ in split_by_day("events", table, slices=slices))


def test_rows_in_time_order_are_handed_out_as_slices_of_the_table_when_asked():
    table = _table([DAY] * 3 + [DAY + _dt.timedelta(days=1)] * 2)
    base = table.column("event_id").chunk(0).buffers()[1].address
    parts = [rows for _, rows in split_by_day("events", table, slices=True)]
    assert [p.num_rows for p in parts] == [3, 2]
    assert all(p.column("event_id").chunk(0).buffers()[1].address == base for p in parts)   # no copy
    # rows Beam pickles are copies: a pickled slice would carry its whole parent table
    copies = [rows for _, rows in split_by_day("rounds", table)]
    assert [p.num_rows for p in copies] == [3, 2]
    assert all(p.column("event_id").chunk(0).buffers()[1].address != base for p in copies)


def test_a_table_with_no_rows_has_no_day():
    assert list(split_by_day("events", _table([]))) == []


def test_a_slice_packs_only_its_own_rows():
    table = _table([DAY] * 1000 + [DAY + _dt.timedelta(days=1)])
    (_, first), (_, last) = split_by_day("events", table, slices=True)
    assert coders.unpack(coders.pack(last)).column("event_id").to_pylist() == ["e1000"]
    assert len(coders.pack(last)) < len(coders.pack(first)) / 5


def test_a_table_of_many_chunks_packs_into_one_batch():
    table = pa.concat_tables([_table([DAY] * 10) for _ in range(20)])
    assert table.column("event_id").num_chunks == 20
    back = coders.unpack(coders.pack(table))
    assert back.column("event_id").num_chunks == 1
    assert back.equals(table.combine_chunks())


def test_a_blob_travels_compressed_and_comes_back_whole():
    blob = b'[["T","P",[[1,"Ac","e-1",17]]]]' * 1000
    packed = coders.pack_bytes(blob)
    assert len(packed) < len(blob) / 10
    assert coders.unpack_bytes(packed) == blob
    assert coders.unpack_bytes(coders.pack_bytes(b"")) == b""
