"""Each composite transform of a day's replay (pitwatch.pipelines.graph), alone on Beam's embedded
runner: a minimal input that must give its output, and one that must not."""
from __future__ import annotations

import datetime as _dt
import json

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pitwatch.lake import Lake, state
from pitwatch.pipelines import coders
from pitwatch.pipelines.graph import (
    DayPlan,
    FindCrossPackRepeats,
    FindSeqGaps,
    JoinPriorState,
    ReadDayEvents,
    RecordDayTotals,
    RejectConflictingCopies,
    ReplayTables,
    WriteDayEvents,
    WriteDayPartitions,
    WriteDayState,
)
from pitwatch.pipelines.ingest import REBUILT, TAG_COUNTS, TAG_IDS, TAG_SEQS, IngestOptions
from pitwatch.pipelines.replay import TAG_CONFLICTS, TAG_EVENTS, TAG_PACK_CARDS, TAG_STATE
from pitwatch.schemas.decode import GamingDayConfig
from tests.data import clean_floor_events

pytestmark = pytest.mark.slow      # each starts a pipeline

OPTIONS = IngestOptions(GamingDayConfig())
RUN = "20261128T120000Z-0000000a"


@pytest.fixture(scope="module")
def floor() -> pa.Table:
    """The clean floor's events as the decoder gives them (six tables, one gaming day)."""
    return clean_floor_events()


def _day(floor: pa.Table) -> str:
    return floor.column("gaming_day")[0].as_py().isoformat()


def _of(table: pa.Table, table_id: str) -> pa.Table:
    return table.filter(pc.equal(table.column("table_id"), table_id))


def _plan(lake: Lake, day: str, **fields) -> DayPlan:
    return DayPlan(replay_day=day, prior_day=None, run_id=RUN, result_path=f"{lake.root}/_staging/{RUN}/day-{day}.json",
                   **fields)


_COLLECTED: dict[str, list] = {}     # the elements _run's pipeline gave (the runner is this process's)


def _collect(element, name: str) -> None:
    _COLLECTED.setdefault(name, []).append(element)


def _run(build) -> dict:
    """Run ``build(p)`` (it returns ``{name: PCollection}``) on the embedded runner, in this
    process: every output's elements."""
    _COLLECTED.clear()
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner", "--direct_running_mode=in_memory"])) as p:
        for name, pcoll in build(p).items():
            pcoll | f"Collect{name}" >> beam.Map(_collect, name)
    return dict(_COLLECTED)


def test_join_prior_state_on_a_first_day_groups_the_rows_with_no_state(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    got = _run(lambda p: {"out": p | beam.Create([("A", 1), ("B", 2), ("A", 3)])
                          | JoinPriorState(lake, _plan(lake, "2026-11-28"), "rows", "tables", "table_id")})
    assert sorted((k, sorted(v["rows"]), list(v["state"])) for k, v in got["out"]) == [("A", [1, 3], []), ("B", [2], [])]


def test_join_prior_state_brings_the_day_befores_state_even_to_a_key_without_rows(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    written = state.write_state_file(lake, "2026-11-27", RUN, "tables",
                                     [{"table_id": "A", "state": "sA"}, {"table_id": "C", "state": "sC"}])
    plan = _plan(lake, "2026-11-28", prior_state=(f"{lake.root}/{state.TABLE}/{written.path}",))
    got = _run(lambda p: {"out": p | beam.Create([("A", 1), ("B", 2)])
                          | JoinPriorState(lake, plan, "rows", "tables", "table_id")})
    assert sorted((k, list(v["rows"]), list(v["state"])) for k, v in got["out"]) == [
        ("A", [1], ["sA"]), ("B", [2], []), ("C", [], ["sC"])]


def test_read_day_events_keys_the_days_events_by_table_and_drops_the_carried_rows_of_a_file_read_again(tmp_path, floor):
    lake = Lake.at(tmp_path / "lake")
    day = _day(floor)
    staged, carried = f"{tmp_path}/staged.parquet", f"{tmp_path}/carried.parquet"
    pq.write_table(_of(floor, "BAC-01"), staged)
    old = _of(floor, "COM-01")
    pq.write_table(old.set_column(old.column_names.index("file"), "file",
                                  pa.array(["again.jsonl"] * 10 + ["kept.jsonl"] * (old.num_rows - 10))), carried)
    plan = _plan(lake, day, events=((staged, False), (carried, True)), replaced=frozenset({"again.jsonl"}))

    def build(p):
        read = p | ReadDayEvents(lake, plan)
        return {"events": read.events, "ids": read[TAG_IDS], "seqs": read[TAG_SEQS], "counts": read[TAG_COUNTS]}
    got = _run(build)
    rows = {}
    for table_id, packed in got["events"]:
        rows[table_id] = rows.get(table_id, 0) + coders.unpack(packed).num_rows
    assert rows == {"BAC-01": _of(floor, "BAC-01").num_rows, "COM-01": old.num_rows - 10}
    assert sum(c.get("carried_events_replaced", 0) for c in got["counts"]) == 10
    assert sum(coders.unpack(t).num_rows for _, t in got["ids"]) == rows["BAC-01"] + rows["COM-01"]
    assert {d for d, _ in got["seqs"]} == set(_of(floor, "BAC-01").column("device_id").to_pylist()) | set(
        old.column("device_id").to_pylist())


def _replayed(lake, plan, floor, table_ids, conflict_ids=()):
    def build(p):
        events = p | "Events" >> beam.Create([(t, coders.pack(_of(floor, t))) for t in table_ids])
        ids = p | "Ids" >> beam.Create(list(conflict_ids))
        out = (events, ids) | ReplayTables(lake, plan, OPTIONS, None, {})
        return {"partitions": out.partitions, "events": out[TAG_EVENTS], "state": out[TAG_STATE],
                "conflicts": out[TAG_CONFLICTS], "cards": out[TAG_PACK_CARDS]}
    return _run(build)


def test_replay_tables_gives_each_tables_rounds_state_and_its_events_by_reference(tmp_path, floor):
    lake = Lake.at(tmp_path / "lake")
    day = _day(floor)
    plan = _plan(lake, day, run_files=frozenset({"floor.jsonl"}))
    got = _replayed(lake, plan, floor, ["BAC-01", "STU-01"])
    assert sorted({t for (t, d), _ in got["partitions"]}) == ["packs", "rounds"]      # a clean floor: no finding
    assert all(d == day for (t, d), _ in got["partitions"])
    events = {coders.unpack(ref).column("table_id")[0].as_py(): coders.unpack(ref) for _, ref in got["events"]}
    assert all(isinstance(ref, coders.Spilled) for _, ref in got["events"])
    for table_id in ("BAC-01", "STU-01"):
        assert events[table_id].num_rows == _of(floor, table_id).num_rows
    assert sorted(row["table_id"] for kind, row in got["state"] if kind == "tables") == ["BAC-01", "STU-01"]
    assert got.get("conflicts", []) == []


def test_replay_tables_hands_out_the_copies_of_a_conflicting_id(tmp_path, floor):
    from pitwatch.pipelines.ingest import identity_key

    lake = Lake.at(tmp_path / "lake")
    first = _of(floor, "BAC-01").slice(0, 1).to_pylist()[0]
    got = _replayed(lake, _plan(lake, _day(floor), run_files=frozenset({"floor.jsonl"})), floor, ["BAC-01"],
                    [identity_key(first["device_id"], first["event_id"])])
    assert [(f, r["event_id"]) for f, r in got["conflicts"]] == [("floor.jsonl", first["event_id"])]


def test_find_seq_gaps_finds_a_missing_seq_and_nothing_in_an_unbroken_run(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    ts = int(_dt.datetime(2026, 11, 28, 20, tzinfo=_dt.timezone.utc).timestamp() * 1_000_000)

    def arrivals(seqs):
        return coders.pack(pa.table({"seq": pa.array(seqs, pa.int64()), "table_id": ["BAC-01"] * len(seqs),
                                     "event_id": [f"e{s}" for s in seqs],
                                     "ts": pa.array([ts + s for s in seqs], pa.int64()),
                                     "ts_offset": pa.array([0] * len(seqs), pa.int64())}))

    def found(seqs):
        got = _run(lambda p: {"out": (p | beam.Create([("DT-BAC01", arrivals(seqs))])
                                      | FindSeqGaps(lake, _plan(lake, "2026-11-28"), OPTIONS)).partitions})
        return [r["rule_id"] for _, t in got.get("out", []) for r in coders.unpack(t).to_pylist()]
    assert found([1, 2, 4]) == ["SEQ_GAP"]
    assert found([1, 2, 3]) == []


def test_find_cross_pack_repeats_carries_every_new_pack_and_runs_with_none(tmp_path, floor):
    lake = Lake.at(tmp_path / "lake")
    plan = _plan(lake, _day(floor), run_files=frozenset({"floor.jsonl"}))
    cards = _replayed(lake, plan, floor, ["BAC-01"])["cards"]

    def carried(pack_cards):
        def build(p):
            out = ((p | "Cards" >> beam.Create(pack_cards), p | "Fired" >> beam.Create([]))
                   | FindCrossPackRepeats(lake, plan, OPTIONS))
            return {"findings": out.partitions, "state": out[TAG_STATE]}
        got = _run(build)
        assert got.get("findings", []) == []       # a clean floor
        assert {kind for kind, _ in got.get("state", [])} <= {"pack_cards"}    # the pack index, packed tables
        return [row for _, index in got.get("state", []) for row in state.rows_of(coders.unpack(index))]
    packs = json.loads(coders.unpack_bytes(cards[0][1]))
    assert len(carried(cards)) == len(packs) > 0
    assert carried([]) == []


def test_reject_conflicting_copies_quotes_an_earlier_runs_copy_as_the_lake_holds_it(tmp_path, floor):
    lake = Lake.at(tmp_path / "lake")
    row = {**_of(floor, "BAC-01").slice(0, 1).to_pylist()[0], "file": "earlier.jsonl", "line": 7,
           "reason": "conflict", "rebuilt": '{"a": 1}'}
    plan = _plan(lake, _day(floor), run_files=frozenset({"floor.jsonl"}))
    got = _run(lambda p: p | beam.Create([("earlier.jsonl", row)]) | RejectConflictingCopies(plan, {}))
    [(key, table)] = got["rejects"]
    assert key == ("rejects", plan.replay_day)
    assert table.column("raw").to_pylist() == [REBUILT + '{"a": 1}']
    assert got["counts"] == [{"rejected": 0, "carried_rejected": 1}]


def test_write_day_partitions_gives_the_day_every_table_even_empty_and_the_rule_catalogue(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    plan = _plan(lake, "2026-11-28")
    got = _run(lambda p: {"out": (p | beam.Create([]),) | WriteDayPartitions(lake, plan)})
    written = sorted(w for out in got["out"] for w in out["written"])
    assert written == [("findings", "2026-11-28", 0), ("packs", "2026-11-28", 0), ("rejects", "2026-11-28", 0),
                       ("rounds", "2026-11-28", 0), ("rules", None, written[-1][2])]
    assert written[-1][2] > 0


def test_write_day_events_writes_the_spilled_tables_in_table_order(tmp_path, floor):
    from pitwatch.lake.parquet import sorted_piece

    lake = Lake.at(tmp_path / "lake")
    day = _day(floor)
    plan = _plan(lake, day)
    refs = [(("events", day), coders.spill(lake, f"{tmp_path}/s/{t}.arrow", sorted_piece("events", _of(floor, t))))
            for t in ("STU-01", "BAC-01")]
    got = _run(lambda p: {"out": p | beam.Create(refs) | WriteDayEvents(lake, plan)})
    [out] = got["out"]
    [file] = out["files"]
    written = pq.read_table(f"{lake.root}/events/{file['path']}")
    assert written.num_rows == _of(floor, "BAC-01").num_rows + _of(floor, "STU-01").num_rows
    ids = written.column("table_id").to_pylist()
    assert ids == sorted(ids) and ids[0] == "BAC-01"


def test_write_day_state_writes_every_kind_even_with_no_row(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    got = _run(lambda p: {"out": (p | beam.Create([("tables", {"table_id": "A", "state": "{}"})]),)
                          | WriteDayState(lake, _plan(lake, "2026-11-28"))})
    assert sorted(kind for out in got["out"] for kind in out["state_files"]) == sorted(
        [("devices", 0), ("pack_cards", 0), ("tables", 1)])


def test_record_day_totals_adds_every_steps_counts_into_the_days_result(tmp_path):
    lake = Lake.at(tmp_path / "lake")
    plan = _plan(lake, "2026-11-28")
    meta = {"pitwatch": "test"}
    got = _run(lambda p: {"out": (p | "A" >> beam.Create([{"accepted": 2}, {"accepted": 3, "files": []}]),
                                  p | "B" >> beam.Create([{"duplicates": 1}]))
                          | RecordDayTotals(lake, meta, plan)})
    [totals] = got["out"]
    assert (totals["accepted"], totals["duplicates"]) == (5, 1)
    with open(plan.result_path) as f:
        assert json.load(f)["accepted"] == 5
