"""The replay of one gaming day: its events (carried and new) to every table of the lake.

::

    ReadDayEvents ─┬ events (by table) ────────────┬─ ReplayTables ─┬ rounds, packs, findings ──────────┐
                   ├ ids ─ FindConflictingIds ─────┘  (side input)  ├ events ─ WriteDayEvents            │
                   │                                                ├ conflicts ─ RejectConflictingCopies ┤
                   │                                                └ pack cards ─ FindCrossPackRepeats ──┤
                   ├ seqs (by device) ─ FindSeqGaps ──────────────────────────────────────────────────────┤
                   ├ damaged files' rows ─ FindDamagedFiles ──────────────────────────────────────────────┤
                   │                       the day's rejects files (by reference) ────────────────────────┤
                   │                                                                 WriteDayPartitions ◄─┘
                   │                   each table's, device's and the pack index's state ─ WriteDayState
                   └ counts ─────────────────────────── every step's counts, files ─ RecordDayTotals

Each box is a composite transform (:class:`ReadDayEvents` …), tested alone in
``tests/pipelines/test_day_transforms.py``; :func:`build_pipeline` wires them.

A run (:mod:`pitwatch.pipelines.lake_run`) reads its input files once (:mod:`pitwatch.pipelines.staging`), then
replays every gaming day from the first one it changed, in order, each with this graph:
the day's events are the ones the lake holds for it (without those of the input files the run
reads again) and the run's new ones; deduplication and conflicts are decided over both.
Every day starts from the state the day before left (:mod:`pitwatch.lake.state`) and closes a table
only when its terminal's last event was ``table_closed`` (the nightly close policy,
``TableDriver.end_of_input``), but the last day of a one-off run, which closes every table at its
end as a run over a file always did (``DayPlan.close_at_end``; such a day is replayed again, not
continued from, when a later day comes).  Every file the replay writes is named after its replay day
(``replay-<day>-<run>.parquet``, in whatever partition its rows belong to) and is committed by
the run's last step: a replayed day replaces exactly what earlier replays of it wrote.

The events, the bulk of the data, go from the replay to their own writer as
files of the run's staging folder (:func:`pitwatch.pipelines.coders.spill`):
only a reference per table crosses the runner, which holds a grouping's
elements in memory; and no Flatten is in their way (on the embedded runner
every Flatten in front of a grouping is one more pass of its data through a
worker process).
"""
from __future__ import annotations

import dataclasses
import json

import apache_beam as beam
import pyarrow as pa

from pitwatch.lake import Lake, finding_changes, state
from pitwatch.lake import parquet as lake
from pitwatch.lake.files import replay_file_name
from pitwatch.pipelines import coders, progress
from pitwatch.pipelines.ingest import (
    TAG_COUNTS,
    TAG_IDS,
    TAG_REJECTS,
    TAG_SEQS,
    FetchRawLines,
    FindConflictingIds,
    IngestOptions,
    RecordedDigests,
    WithoutCyclicGC,
)
from pitwatch.pipelines.replay import (
    NO_PACK_CARDS,
    TAG_CONFLICTS,
    TAG_DAYS,
    TAG_EVENTS,
    TAG_FIRED_SEQUENCES,
    TAG_PACK_CARDS,
    TAG_STATE,
    FindRepeatedRuns,
    ReplayDeviceSeq,
    ReplayTable,
)
from pitwatch.pipelines.staging import REJECT_ROWS, REJECTS_FILE, MergeCounts, ReadDaySource, staging_dir, write_rejects
from pitwatch.schemas.arrow import rows_to_table
from pitwatch.wording import plural

DAY_TABLES = ("events", "rounds", "packs", "findings")
COUNTED_TABLES = DAY_TABLES + ("rejects",)   # the tables a run counts the rows of, in its summary's order


@dataclasses.dataclass(frozen=True)
class DayPlan:
    """The replay of one gaming day within a run (:mod:`pitwatch.pipelines.lake_run`).

    Its events are the day's events the lake holds (``carried``: committed files of the
    ``events`` table, without the rows of ``replaced`` input files) and the run's new ones
    (``staged`` by the run's ingest); it starts from ``prior_state`` (the state files the day
    before left: this run's, or committed) and leaves its own.
    """

    replay_day: str
    prior_day: str | None
    run_id: str
    prior_state: tuple[str, ...] = ()
    events: tuple[tuple[str, bool], ...] = ()      # (path, carried)
    rejects: tuple[tuple[str, bool], ...] = ()     # (path, carried)
    replaced: frozenset = frozenset()              # input files (the events' ``file``) this run reads again
    run_files: frozenset = frozenset()             # the run's input files
    result_path: str = ""                          # the day's result (files written, counts), JSON
    retention_days: int = 7      # packs kept for the cross-pack UNSHUFFLED_SEQUENCE check
    close_at_end: bool = False   # the last day of a one-off run: every table closed at its end
    # the run changed this day (new events, files read again, the night's day …): it is replayed even
    # when the day before ended as the lake holds it (pitwatch.pipelines.lake_run.replay_days: the early stop)
    forced: bool = True
    committed_state: tuple[str, ...] = ()          # the day's state files in the lake (empty: none)
    repeats_only: bool = False   # only the cross-pack repeat check ran again (pitwatch.pipelines.late_repeats)
    input_files: tuple[int, int] = (0, 0)   # input files with events on the day: this run's, others the lake held
    findings_version: int | None = None     # the lake's pinned findings (pitwatch.lake.finding_changes.stamp)
    manifest: dict = dataclasses.field(default_factory=dict, hash=False, compare=False)

    @property
    def file_name(self) -> str:
        return replay_file_name(self.replay_day, self.run_id)


class WritePartition(WithoutCyclicGC):
    def __init__(self, lake_path: Lake, file_name: str, replaced: frozenset = frozenset(),
                 stamps: tuple[str, int | None] | None = None):
        self.lake_path = lake_path
        self.file_name = file_name
        self.replaced = replaced    # input files read again: their rows of the lake's rejects files are dropped
        # (run id, pinned findings version): a findings partition's rows get the runs that first wrote and
        # last changed them (pitwatch.lake.finding_changes.stamp)
        self.stamps = stamps

    def process(self, kv):
        (name, day), tables = kv
        tables = [t for t in tables if t is not None]
        sources = [(t[1], t[2]) for t in tables if isinstance(t, tuple) and t[0] == REJECTS_FILE]
        if name == "rejects":   # the day's rejects, read from their files as they are written
            written = write_rejects(self.lake_path, day, self.file_name, sources,
                                    [t for t in tables if not isinstance(t, tuple)], self.replaced)
        elif name == "findings" and self.stamps is not None:
            run_id, version = self.stamps
            written = lake.write_partition_file(
                self.lake_path, name, day, [finding_changes.stamp_partition(self.lake_path, day, list(map(coders.unpack, tables)),
                                                                            run_id, version)],
                file_name=self.file_name)
        else:
            written = lake.write_partition_file(self.lake_path, name, day, tables, unpack=coders.unpack,
                                                peek=coders.peek, file_name=self.file_name)
        rows = written.rows
        progress.step_log().debug("wrote %s: %s", name if day is None else f"{name}/gaming_day={day}", plural(rows, "row"))
        out = {"written": [(name, day, rows)], "files": [written.to_dict()]}
        if name == "findings":
            from pitwatch.inputs.damage import incomplete_days

            for t in map(coders.unpack, tables):
                for sev in t.column("severity").to_pylist():
                    out[f"findings_{sev}"] = out.get(f"findings_{sev}", 0) + 1
                out["input_damaged"] = out.get("input_damaged", []) + incomplete_days(t, day)
        yield out


class WriteState(beam.DoFn):
    """Write one kind of the replayed day's state (tables, devices or pack_cards): a file of the
    ``state`` table, committed with the run."""

    def __init__(self, lake_path: Lake, plan: DayPlan):
        self.lake_path = lake_path
        self.plan = plan

    def process(self, kv):
        name, items = kv       # rows (dicts), or a packed table of them (the pack index: FindRepeatedRuns)
        written = state.write_state_file(self.lake_path, self.plan.replay_day, self.plan.run_id, name,
                                         [r for r in items if isinstance(r, dict)],
                                         [coders.unpack(r) for r in items if isinstance(r, bytes)])
        yield {"state_files": [(name, written.rows)], "files": [written.to_dict()]}


class RecordDay(beam.DoFn):
    """The day's last step: its manifest (a state file) and its result for the run's commit
    (:mod:`pitwatch.pipelines.lake_run`): the files written and the counts, as JSON at ``plan.result_path``."""

    def __init__(self, lake_path: Lake, run_meta: dict, plan: DayPlan):
        self.lake_path = lake_path
        self.run_meta = run_meta
        self.plan = plan

    def process(self, totals):
        plan = self.plan
        manifest = state.write_manifest(self.lake_path, plan.replay_day, plan.run_id, {
            "gaming_day": plan.replay_day, "prior_day": plan.prior_day, "pitwatch": self.run_meta["pitwatch"],
            "run_id": plan.run_id, **plan.manifest, "state_files": dict(totals.get("state_files", [])),
            "closed_at_end": plan.close_at_end,
            "files": sorted(set(totals.get("day_files", []))),   # the input files of the day's rows
        })
        totals = {**totals, "files": totals.get("files", []) + [manifest.to_dict()]}
        fs = self.lake_path.fs
        fs.create_dir(plan.result_path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(plan.result_path) as out:
            out.write(json.dumps(totals, sort_keys=True, default=str).encode())
        yield totals


class JoinPriorState(beam.PTransform):
    """``(key, rows)`` → ``(key, {tag: [rows…], "state": [prior state…]})`` for each key of the rows
    and, when the day continues another (``plan.prior_state``), of that day's ``kind`` of state
    (``tables``, ``devices``), whose rows are keyed by ``key``.

    A first day has no prior state: its rows are grouped alone, which on the
    embedded runner saves a pass of all of them through a worker (the
    Flatten inside a CoGroupByKey).
    """

    def __init__(self, lake_path: Lake, plan: DayPlan, tag: str, kind: str, key: str):
        super().__init__()
        self.lake_path, self.plan, self.tag, self.kind, self.key = lake_path, plan, tag, kind, key

    def expand(self, rows):
        tag, key = self.tag, self.key
        if not self.plan.prior_state:
            return (rows
                    | "GroupRows" >> beam.GroupByKey()
                    | "WithNoState" >> beam.MapTuple(lambda k, values: (k, {tag: values, "state": ()})))
        lake_path, files, kind = self.lake_path, list(self.plan.prior_state), self.kind
        states = (rows.pipeline
                  | "ListPriorState" >> beam.Create([None])
                  | "ReadPriorState" >> beam.FlatMap(lambda _: state.read_rows(lake_path, files, kind))
                  | "KeyPriorState" >> beam.Map(lambda r: (r[key], r["state"])))
        return {tag: rows, "state": states} | "JoinState" >> beam.CoGroupByKey()


class ReadDayEvents(beam.PTransform):
    """The day's sources (the lake's files of it, the run's staged ones) → its events keyed by
    table (``events``), the damaged files' rows (``TAG_REJECTS``), the ids (``TAG_IDS``), the
    ``seq`` arrivals keyed by device (``TAG_SEQS``) and counts (``TAG_COUNTS``): what the decoder
    gives for the same rows (:class:`pitwatch.pipelines.staging.ReadDaySource`)."""

    def __init__(self, lake_path: Lake, plan: DayPlan):
        super().__init__()
        self.lake_path, self.plan = lake_path, plan

    def expand(self, p):
        plan = self.plan
        sources = ([("events", path, carried) for path, carried in plan.events]
                   + [("rejects", path, carried) for path, carried in plan.rejects])
        return (p
                | "ListDaySources" >> beam.Create(sources)
                | "ReadDaySources" >> beam.ParDo(ReadDaySource(self.lake_path, plan.replay_day, plan.replaced))
                .with_outputs(TAG_REJECTS, TAG_IDS, TAG_SEQS, TAG_COUNTS, main="events"))


class ReplayTables(beam.PTransform):
    """``(events keyed by table, conflicting ids)`` → every table's replay
    (:class:`pitwatch.pipelines.replay.ReplayTable`): the rounds, packs and findings partitions
    (main), the day's events (``TAG_EVENTS``, spilled to the run's staging folder), the copies in
    conflict, counts, the pack cards and the fired sequences, and each table's state."""

    def __init__(self, lake_path: Lake, plan: DayPlan, options: IngestOptions, devices, digests: dict):
        super().__init__()
        self.lake_path, self.plan, self.options, self.devices, self.digests = lake_path, plan, options, devices, digests

    def expand(self, inputs):
        events, conflict_ids = inputs
        plan, lake_path = self.plan, self.lake_path
        step = ReplayTable(self.options.gaming_day, not plan.close_at_end, self.devices, plan.run_files,
                           RecordedDigests(lake_path, self.digests),
                           (lake_path, f"{staging_dir(lake_path, plan.run_id)}/replayed"))
        return (events
                | "WithPriorTableState" >> JoinPriorState(lake_path, plan, "events", "tables", "table_id")
                | "ReplayTable" >> beam.ParDo(step, beam.pvalue.AsList(conflict_ids))
                .with_outputs(TAG_CONFLICTS, TAG_COUNTS, TAG_PACK_CARDS, TAG_FIRED_SEQUENCES, TAG_STATE,
                              TAG_EVENTS, TAG_DAYS, main="partitions"))


class FindSeqGaps(beam.PTransform):
    """Each device's ``seq`` arrivals (keyed by device) → its ``SEQ_GAP`` findings (main) and its
    state (``TAG_STATE``), continuing the day before's (:class:`pitwatch.pipelines.replay.ReplayDeviceSeq`)."""

    def __init__(self, lake_path: Lake, plan: DayPlan, options: IngestOptions):
        super().__init__()
        self.lake_path, self.plan, self.options = lake_path, plan, options

    def expand(self, seqs):
        return (seqs
                | "WithPriorDeviceState" >> JoinPriorState(self.lake_path, self.plan, "seqs", "devices", "device_id")
                | "ReplayDeviceSeq" >> beam.ParDo(ReplayDeviceSeq(self.options.gaming_day, True))
                .with_outputs(TAG_STATE, main="partitions"))


class FindCrossPackRepeats(beam.PTransform):
    """``(every table's pack cards, the fired sequences)`` → the cross-pack ``UNSHUFFLED_SEQUENCE``
    findings (main) and the carried pack index (``TAG_STATE``), from one group of every table's
    packs' run keys and cards (a GroupByKey, not a side input; the check runs even with none:
    :class:`pitwatch.pipelines.replay.FindRepeatedRuns` reads the prior pack index itself)."""

    def __init__(self, lake_path: Lake, plan: DayPlan, options: IngestOptions):
        super().__init__()
        self.lake_path, self.plan, self.options = lake_path, plan, options

    def expand(self, inputs):
        pack_cards, fired = inputs
        return (
            (pack_cards, pack_cards.pipeline | "NoPackCards" >> beam.Create([NO_PACK_CARDS]))
            | "AllPackCards" >> beam.Flatten()
            | "KeyPackCards" >> beam.Map(lambda cards: (None, cards))
            | "GatherPackCards" >> beam.GroupByKey()
            | "FindRepeatedRuns" >> beam.ParDo(FindRepeatedRuns(self.options.gaming_day, self.plan, self.lake_path),
                                               beam.pvalue.AsList(fired)).with_outputs(TAG_STATE, main="partitions"))


class RejectConflictingCopies(beam.PTransform):
    """The copies of an event in conflict, keyed by their file → the day's reject rows of them
    (main: ``(("rejects", day), table)``) and their counts (``counts``): the copies of earlier runs
    quoted as the lake holds them, the run's own lines read again from their files, checked
    against the digests the run's read recorded (:class:`pitwatch.pipelines.ingest.FetchRawLines`)."""

    def __init__(self, plan: DayPlan, digests: dict):
        super().__init__()
        self.plan, self.digests = plan, digests

    def expand(self, conflicts):
        run_files, day = self.plan.run_files, self.plan.replay_day
        rows = (conflicts
                | "GroupConflictsByFile" >> beam.GroupByKey()
                | "FetchRawLines" >> beam.ParDo(FetchRawLines(self.digests)))
        counts = rows | "CountConflicts" >> beam.Map(lambda found: {
            "rejected": sum(r["file"] in run_files for r in found),
            "carried_rejected": sum(r["file"] not in run_files for r in found)})
        rejects = rows | "KeyRejects" >> beam.Map(lambda found: (("rejects", day), rows_to_table(found, REJECT_ROWS)))
        return {"rejects": rejects, "counts": counts}


class WriteDayPartitions(beam.PTransform):
    """Keyed tables ``((lake table, day), rows)`` of every table but the events (each a tuple of
    PCollections) → one file per partition in the lake, not committed, and what each wrote
    (:class:`WritePartition`).  The day gets its rounds, packs, findings and rejects files even
    empty; the rule catalogue is written whole."""

    def __init__(self, lake_path: Lake, plan: DayPlan):
        super().__init__()
        self.lake_path, self.plan = lake_path, plan

    def expand(self, partitions):
        p, day = partitions[0].pipeline, self.plan.replay_day
        empty = p | "EmptyPartitionsOfDay" >> beam.Create([((t, day), None) for t in COUNTED_TABLES if t != "events"])
        rules_table = (p | "RuleCatalogue" >> beam.Create([None])
                       | "RulesTable" >> beam.Map(lambda _: (("rules", None), rules_catalogue_table())))
        return (
            (*partitions, empty, rules_table)
            | "AllPartitions" >> beam.Flatten()
            | "GroupPartitions" >> beam.GroupByKey()
            | "WritePartition" >> beam.ParDo(WritePartition(self.lake_path, self.plan.file_name, self.plan.replaced,
                                                            (self.plan.run_id, self.plan.findings_version))))


class WriteDayEvents(beam.PTransform):
    """The replay's events, ``(("events", day), one table's rows)`` (spilled: references to files
    of the run's staging folder) → the day's ``events`` partition file, written one table at a
    time in sort order.  Grouped on their own: no Flatten in their way (on the embedded runner a
    Flatten before a grouping is one more pass of its data through a worker)."""

    def __init__(self, lake_path: Lake, plan: DayPlan):
        super().__init__()
        self.lake_path, self.plan = lake_path, plan

    def expand(self, events):
        return (events
                | "GroupEventPartitions" >> beam.GroupByKey()
                | "WriteEventPartition" >> beam.ParDo(WritePartition(self.lake_path, self.plan.file_name)))


class WriteDayState(beam.PTransform):
    """``(kind, row)`` of the state the day leaves (each a tuple of PCollections) → one file of the
    ``state`` table per kind (tables, devices, pack_cards), written even with no row."""

    def __init__(self, lake_path: Lake, plan: DayPlan):
        super().__init__()
        self.lake_path, self.plan = lake_path, plan

    def expand(self, rows):
        every_kind = rows[0].pipeline | "StateKinds" >> beam.Create([(name, None) for name in state.KINDS])
        return ((*rows, every_kind)
                | "AllState" >> beam.Flatten()
                | "GroupStateByKind" >> beam.GroupByKey()
                | "WriteState" >> beam.ParDo(WriteState(self.lake_path, self.plan)))


class RecordDayTotals(beam.PTransform):
    """Every step's bookkeeping (each a tuple of PCollections of dicts) → the day's totals, its
    manifest and its result for the run's commit (:class:`RecordDay`)."""

    def __init__(self, lake_path: Lake, run_meta: dict, plan: DayPlan):
        super().__init__()
        self.lake_path, self.run_meta, self.plan = lake_path, run_meta, plan

    def expand(self, counts):
        return (counts
                | "AllBookkeeping" >> beam.Flatten()
                | "TotalDay" >> beam.CombineGlobally(MergeCounts())
                | "RecordDay" >> beam.ParDo(RecordDay(self.lake_path, self.run_meta, self.plan)))


def build_pipeline(p: beam.Pipeline, plan: DayPlan, lake_path: Lake, run_meta: dict,
                   options: IngestOptions, devices=None) -> None:
    """The replay of one gaming day (``plan``): its events, carried and new, to every table."""
    day = plan.replay_day
    decoded = p | "ReadDayEvents" >> ReadDayEvents(lake_path, plan)
    conflict_ids = decoded[TAG_IDS] | "FindConflictingIds" >> FindConflictingIds()
    digests = run_digests(lake_path, plan.run_id, plan.run_files)     # what the run's reads hashed
    replayed = (decoded.events, conflict_ids) | "ReplayTables" >> ReplayTables(lake_path, plan, options, devices, digests)
    seq_gaps = decoded[TAG_SEQS] | "FindSeqGaps" >> FindSeqGaps(lake_path, plan, options)
    repeats = ((replayed[TAG_PACK_CARDS], replayed[TAG_FIRED_SEQUENCES])
               | "FindCrossPackRepeats" >> FindCrossPackRepeats(lake_path, plan, options))
    conflicts = replayed[TAG_CONFLICTS] | "RejectConflictingCopies" >> RejectConflictingCopies(plan, digests)
    # the day's rejects: those it had (but the replaced files'), the run's new ones if it is the
    # run's day, and every copy of an event in conflict; the files' rows go to the writer by
    # reference (staging.write_rejects streams them): a flood of rejected lines is never held
    reject_files = p | "RejectFiles" >> beam.Create(
        [(("rejects", day), (REJECTS_FILE, path, carried)) for path, carried in plan.rejects])
    # INPUT_DAMAGED: built again at each replay of the day from its damaged-file rows (their facts),
    # so a later replay keeps it and the file read again undamaged (its rows replaced) drops it
    damaged = decoded[TAG_REJECTS] | "FindDamagedFiles" >> beam.FlatMap(_damage_findings, day, options.gaming_day)
    written = ((replayed.partitions, seq_gaps.partitions, repeats.partitions, conflicts["rejects"], reject_files,
                damaged)
               | "WriteDayPartitions" >> WriteDayPartitions(lake_path, plan))
    written_events = replayed[TAG_EVENTS] | "WriteDayEvents" >> WriteDayEvents(lake_path, plan)
    state_files = ((replayed[TAG_STATE], seq_gaps[TAG_STATE], repeats[TAG_STATE])
                   | "WriteDayState" >> WriteDayState(lake_path, plan))
    ((decoded[TAG_COUNTS], replayed[TAG_COUNTS], conflicts["counts"], written, written_events, state_files)
     | "RecordDayTotals" >> RecordDayTotals(lake_path, run_meta, plan))


def run_digests(lake_path: Lake, run_id: str, run_files: frozenset) -> dict:
    """Each of the run's input files → the digest its read recorded (``{"sha256", "bytes"}``, from the
    run's ingest totals; ``{}`` when there are none to read)."""
    fs = lake_path.fs
    try:
        with fs.open_input_stream(f"{staging_dir(lake_path, run_id)}/ingest.json") as f:
            inputs = json.loads(f.read()).get("inputs", [])
    except (FileNotFoundError, OSError, ValueError):
        inputs = []
    known = {i["path"]: i for i in inputs}
    return {path: known.get(path, {}) for path in run_files}


def _damage_findings(rows: list[dict], day: str, config):
    """``(("findings", day), rows)`` of the INPUT_DAMAGED findings of one list of the day's rejects."""
    from pitwatch.inputs.damage import damage_findings
    from pitwatch.pipelines.replay import finding_rows
    from pitwatch.schemas.arrow import FINDINGS

    found = damage_findings(rows, day, config)
    if found:
        yield ("findings", day), rows_to_table(finding_rows(found), FINDINGS)


def rules_catalogue_table() -> pa.Table:
    from pitwatch.rules.catalog import RULES
    from pitwatch.schemas.arrow import RULES as RULES_SCHEMA

    return rows_to_table([r.to_row() for r in RULES], RULES_SCHEMA)
