"""The Arrow-sorted feed order is the merge of each device's events by seq, devices by ts."""
from __future__ import annotations

import random

from pitwatch.pipelines.replay import feed_order, feed_ordered
from pitwatch.schemas.arrow import drop_empty_columns, events_to_table, table_to_events
from pitwatch.schemas.events import Event

SECOND = 1_000_000


def _events(rnd, clocks_go_back=False):
    out = []
    for device, skew in (("SHOE-1", 2 * SECOND), ("DT-1", 0), ("SHF-1", -SECOND)):
        ts = 1_795_900_000 * SECOND + skew
        for seq in range(1, 200):
            ts += rnd.choice((0, 1, 250_000, SECOND))     # equal instants happen
            if clocks_go_back and device == "DT-1" and seq == 100:
                ts -= 5 * SECOND
            out.append(Event(event_id=f"{device}-{seq}", ts=ts, source="dealer", type="dealer_in",
                             table_id="BAC-1", device_id=device, seq=seq))
    rnd.shuffle(out)
    return out


def test_sorted_by_arrow_equals_the_merge():
    for seed in range(5):
        events = _events(random.Random(seed))
        table = events_to_table(events)
        ordered = feed_ordered(table)
        assert ordered is not None
        assert [e.event_id for e in table_to_events(ordered)] == [e.event_id for e in feed_order(events)]


def test_a_device_clock_going_back_takes_the_merge():
    assert feed_ordered(events_to_table(_events(random.Random(1), clocks_go_back=True))) is None


def test_numpy_sort_agrees_with_arrow_sort_with_repeated_seqs_and_clocks_going_back():
    from pitwatch.pipelines.replay import _feed_ordered_by_arrow

    for seed in range(30):
        rnd = random.Random(seed)
        events = _events(rnd, clocks_go_back=seed % 3 == 0)
        if seed % 2:   # a second event with a seq its device already used: event_id decides, or the merge
            e = rnd.choice(events)
            events.append(e._replace(event_id=e.event_id + "-again", ts=e.ts + rnd.choice((0, -SECOND, SECOND))))
        table = events_to_table(events)
        fast, exact = feed_ordered(table), _feed_ordered_by_arrow(table)
        assert (fast is None) == (exact is None)
        if fast is not None:
            assert fast.column("event_id").to_pylist() == exact.column("event_id").to_pylist()
            assert [e.event_id for e in table_to_events(fast)] == [e.event_id for e in feed_order(events)]


def test_events_from_a_table_without_its_all_null_columns_are_the_same():
    # the replay builds events from the compact table (all-null columns dropped before reordering)
    events = _events(random.Random(3))
    table = events_to_table(events)
    compact = drop_empty_columns(table)
    assert compact.num_columns < table.num_columns
    assert table_to_events(compact) == table_to_events(table) == events


def _over_two_days(rnd, **kw):
    import datetime as dt

    events = _events(rnd, **kw)
    cut = sorted(e.ts for e in events)[len(events) // 2]     # the gaming day changes mid-stream
    return [e._replace(gaming_day=dt.date(2026, 11, 28) if e.ts < cut else dt.date(2026, 11, 29)) for e in events]


def test_one_sort_serves_the_writer_and_the_replay():
    """outputs.md: each day's events partition in lake order; the replay in feed order (events.md)."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.compute as pc

    from pitwatch.lake.parquet import sort_table
    from pitwatch.pipelines.replay import sorted_for_writer, split_by_day

    for seed in range(10):
        rnd = random.Random(seed)
        events = _over_two_days(rnd, clocks_go_back=seed % 3 == 0)
        if seed % 4 == 1:   # a seq twice
            e = rnd.choice(events)
            events.append(e._replace(event_id=e.event_id + "-again"))
        table = events_to_table(events)
        once = sorted_for_writer(table)
        assert (once is None) == (seed % 3 == 0 or seed % 4 == 1)
        if once is None:
            continue
        rows, feed = once
        days = list(split_by_day("events", rows, slices=True))
        assert [key for key, _ in days] == [("events", "2026-11-28"), ("events", "2026-11-29")]
        for (_, day), piece in days:
            whole_day = table.filter(pc.equal(table.column("gaming_day"), pa.scalar(dt.date.fromisoformat(day))))
            assert piece.equals(sort_table("events", whole_day))
        replayed = table_to_events(rows)
        assert [replayed[i].event_id for i in feed] == [e.event_id for e in feed_order(events)]
