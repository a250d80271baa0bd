"""The replayed events go to the writer as files of the run's staging folder, not through the runner
(pitwatch.pipelines.coders.spill): the rows the writer reads back are the ones it would have been shipped."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc

from pitwatch.lake import Lake
from pitwatch.pipelines import coders
from pitwatch.pipelines.replay import TAG_EVENTS, ReplayTable
from pitwatch.schemas.decode import GamingDayConfig
from tests.data import clean_floor_events


def test_a_spilled_table_reads_back_whole_and_its_metadata_without_the_file(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    table = pa.table({"table_id": ["BAC-01"] * 3, "seq": [1, 2, 3]}).replace_schema_metadata({b"k": b"v"})
    ref = coders.spill(lake, f"{lake.root}/_staging/r/replayed/x.arrow", table)
    assert isinstance(ref, coders.Spilled)
    back = coders.unpack(ref)
    assert back.equals(table, check_metadata=True)
    os.remove(ref.path)
    assert coders.peek(ref) == {b"k": b"v"}          # what orders the writer's pieces: no read


def _one_table_events(table_id: str) -> pa.Table:
    events = clean_floor_events()
    return events.filter(pc.equal(events.column("table_id"), table_id))


def _shipped(step: ReplayTable, table_id: str, events: pa.Table) -> list:
    out = step.process((table_id, {"events": [coders.pack(events)], "state": []}), [])
    return [o.value for o in out if getattr(o, "tag", None) == TAG_EVENTS]


def test_the_replay_ships_a_reference_to_the_same_rows_it_would_have_packed(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    table_id = "BAC-01"
    events = _one_table_events(table_id)
    assert events.num_rows > 100
    packed = _shipped(ReplayTable(GamingDayConfig()), table_id, events)
    spilled = _shipped(ReplayTable(GamingDayConfig(), spill_to=(lake, f"{lake.root}/_staging/r/replayed")),
                       table_id, events)
    assert [key for key, _ in spilled] == [key for key, _ in packed] and packed
    for (_, ref), (_, data) in zip(spilled, packed):
        assert isinstance(ref, coders.Spilled) and isinstance(data, bytes)
        assert ref.path.startswith(f"{lake.root}/_staging/r/replayed/gaming_day=")
        assert coders.unpack(ref).equals(coders.unpack(data), check_metadata=True)     # whole rows, in order
        assert coders.peek(ref) == coders.peek(data)
