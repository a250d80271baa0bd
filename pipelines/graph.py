"""The replay of one gaming day: its events (carried and new) to every table of the lake.

::

    ListDaySources ─ ReadDaySources ─┬ events ─ (+ prior table states) ─ ReplayTables ─┐
                                     ├ ids ─ FindConflictingIds (side input) ┘    │     │
                                     │                     each table's events ───┤     │
                                     │                           WriteEventPartitions ──┤
                                     ├ seqs (+ prior device states) ─ ReplayDeviceSeqs ─┤
                                     │        pack cards (+ prior) ─ FindRepeatedRuns ──┤
                                     ├ (damaged files' rows) ─── FindDamagedFiles ──────┤
                    the day's rejects files (by reference) + conflicts ─ KeyRejects ──┤
                                     └ counts ──────────────────────────┐               │
                                             WritePartitions (rounds, packs, findings, …) ◄┘
                                             WriteState ◄────────────────┤
                                                └─ RecordDay ◄───────────┘

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

The events, the bulk of the data, go from the replay to their own
grouping and writer: on the embedded runner every Flatten in front of a
grouping is one more pass of its data through a worker process, so after
the replay the Flattens carry only small elements.
"""
from __future__ import annotations

import dataclasses
import json

import apache_beam as beam
import pyarrow as pa

from pitwatch.lake import Lake, state
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
    manifest: dict = dataclasses.field(default_factory=dict, hash=False, compare=False)

    @property
    def file_name(self) -> str:
        return replay_file_name(self.replay_day, self.run_id)


class WritePartition(WithoutCyclicGC):
    def __init__(self, lake_path: Lake, file_name: str, replaced: frozenset = frozenset()):
        self.lake_path = lake_path
        self.file_name = file_name
        self.replaced = replaced    # input files read again: their rows of the lake's rejects files are dropped

    def process(self, kv):
        (name, day), tables = kv
        tables = [t for t in tables if t is not None]
        sources = [(t[1], t[2]) for t in tables if isinstance(t, tuple) and t[0] == REJECTS_FILE]
        if name == "rejects":   # the day's rejects, read from their files as they are written
            written = write_rejects(self.lake_path, day, self.file_name, sources,
                                    [t for t in tables if not isinstance(t, tuple)], self.replaced)
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
        name, rows = kv
        written = state.write_state_file(self.lake_path, self.plan.replay_day, self.plan.run_id, name,
                                         [r for r in rows if r is not None])
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


def _prior_state(p, lake_path: Lake, plan: DayPlan, name: str):
    """The previous day's rows of one kind of state, as a PCollection (empty on a first day)."""
    label = f"Prior{name.title().replace('_', '')}"
    if not plan.prior_state:
        return p | label >> beam.Create([])
    files = list(plan.prior_state)
    return (p | label >> beam.Create([None])
            | f"Read{label}" >> beam.FlatMap(lambda _: state.read_rows(lake_path, files, name)))


def _with_prior_state(p, what: str, rows, tag: str, lake_path: Lake, plan: DayPlan, state_file: str,
                      key: str):
    """``(key, {tag: [rows…], "state": [prior state…]})`` for each key of ``rows`` (and, nightly,
    of the previous day's state file ``state_file``).

    A first day has no prior state: its rows are grouped alone, which on the
    embedded runner saves a pass of all of them through a worker (the
    Flatten inside a CoGroupByKey).
    """
    if not plan.prior_state:
        return (rows
                | f"Group{what}Rows" >> beam.GroupByKey()
                | f"No{what}State" >> beam.MapTuple(lambda k, values: (k, {tag: values, "state": ()})))
    states = (_prior_state(p, lake_path, plan, state_file)
              | f"Key{what}States" >> beam.Map(lambda r: (r[key], r["state"])))
    return {tag: rows, "state": states} | f"Join{what}State" >> beam.CoGroupByKey()


def build_pipeline(p: beam.Pipeline, plan: DayPlan, lake_path: Lake, run_meta: dict,
                   options: IngestOptions, devices=None) -> None:
    """The replay of one gaming day (``plan``): its events, carried and new, to every table."""
    day = plan.replay_day
    sources = [("events", path, carried) for path, carried in plan.events] + \
              [("rejects", path, carried) for path, carried in plan.rejects]
    decoded = (
        p | "ListDaySources" >> beam.Create(sources)
        | "ReadDaySources" >> beam.ParDo(ReadDaySource(lake_path, day, plan.replaced)).with_outputs(
            TAG_REJECTS, TAG_IDS, TAG_SEQS, TAG_COUNTS, main="events")
    )
    conflict_ids = decoded[TAG_IDS] | "FindConflictingIds" >> FindConflictingIds()
    digests = run_digests(lake_path, plan.run_id, plan.run_files)     # what the run's reads hashed
    replayed = (
        _with_prior_state(p, "Table", decoded.events, "events", lake_path, plan, "tables", "table_id")
        | "ReplayTables" >> beam.ParDo(ReplayTable(options.gaming_day, not plan.close_at_end, devices, plan.run_files,
                                                   RecordedDigests(lake_path, digests),
                                                   (lake_path, f"{staging_dir(lake_path, plan.run_id)}/replayed")),
                                       beam.pvalue.AsList(conflict_ids))
        .with_outputs(TAG_CONFLICTS, TAG_COUNTS, TAG_PACK_CARDS, TAG_FIRED_SEQUENCES, TAG_STATE,
                      TAG_EVENTS, TAG_DAYS, main="partitions")
    )
    seq_gaps = (
        _with_prior_state(p, "Device", decoded[TAG_SEQS], "seqs", lake_path, plan, "devices", "device_id")
        | "ReplayDeviceSeqs" >> beam.ParDo(ReplayDeviceSeq(options.gaming_day, True))
        .with_outputs(TAG_STATE, main="partitions")
    )
    repeats = (   # one group of every table's packs' run keys and cards (a GroupByKey, not a side input)
        (replayed[TAG_PACK_CARDS], p | "NoPackCards" >> beam.Create([NO_PACK_CARDS]))   # the step runs even with none
        | "AllPackCards" >> beam.Flatten()
        | "KeyPackCards" >> beam.Map(lambda cards: (None, cards))
        | "GatherPackCards" >> beam.GroupByKey()
        | "FindRepeatedRuns" >> beam.ParDo(
            FindRepeatedRuns(options.gaming_day, plan, lake_path),    # it reads the prior pack index itself
            beam.pvalue.AsList(replayed[TAG_FIRED_SEQUENCES])).with_outputs(TAG_STATE, main="partitions")
    )
    run_files = plan.run_files
    conflict_rejects = (
        replayed[TAG_CONFLICTS]
        | "GroupConflictsByFile" >> beam.GroupByKey()
        # the copies of earlier runs quoted as the lake holds them; the run's own read again, checked
        | "FetchRawLines" >> beam.ParDo(FetchRawLines(digests))
    )
    conflict_counts = conflict_rejects | "CountConflicts" >> beam.Map(lambda rows: {
        "rejected": sum(r["file"] in run_files for r in rows),
        "carried_rejected": sum(r["file"] not in run_files for r in rows)})
    # the day's rejects: those it had (but the replaced files'), the run's new ones if it is the
    # run's day, and every copy of an event in conflict; the files' rows go to the writer by
    # reference (staging.write_rejects streams them): a flood of rejected lines is never held
    rejects = (
        conflict_rejects
        | "KeyRejects" >> beam.Map(lambda rows: (("rejects", day), rows_to_table(rows, REJECT_ROWS)))
    )
    reject_files = p | "RejectFiles" >> beam.Create(
        [(("rejects", day), (REJECTS_FILE, path, carried)) for path, carried in plan.rejects])
    # INPUT_DAMAGED: built again at each replay of the day from its damaged-file rows (their facts),
    # so a later replay keeps it and the file read again undamaged (its rows replaced) drops it
    damaged = decoded[TAG_REJECTS] | "FindDamagedFiles" >> beam.FlatMap(_damage_findings, day, options.gaming_day)
    # the day gets its rounds, packs, findings and rejects files, even empty (its events: always rows)
    empty = p | "EmptyPartitionsOfDay" >> beam.Create([((t, day), None) for t in COUNTED_TABLES
                                                       if t != "events"])
    rules_table = (
        p | "RuleCatalogue" >> beam.Create([None])
        | "RulesTable" >> beam.Map(lambda _: (("rules", None), rules_catalogue_table()))
    )
    written = (
        (replayed.partitions, seq_gaps.partitions, repeats.partitions, rejects, reject_files, damaged, empty,
         rules_table)
        | "AllPartitions" >> beam.Flatten()
        | "GroupPartitions" >> beam.GroupByKey()
        | "WritePartitions" >> beam.ParDo(WritePartition(lake_path, plan.file_name, plan.replaced))
    )
    # the events, the bulk, are grouped on their own: no Flatten in their way (on the embedded
    # runner a Flatten before a grouping is one more pass of its data through a worker)
    written_events = (
        replayed[TAG_EVENTS]
        | "GroupEventPartitions" >> beam.GroupByKey()
        | "WriteEventPartitions" >> beam.ParDo(WritePartition(lake_path, plan.file_name))
    )
    every_file = p | "StateFiles" >> beam.Create([(name, None) for name in state.KINDS])
    state_files = (
        (replayed[TAG_STATE], seq_gaps[TAG_STATE], repeats[TAG_STATE], every_file)
        | "AllState" >> beam.Flatten()
        | "GroupStateByFile" >> beam.GroupByKey()
        | "WriteState" >> beam.ParDo(WriteState(lake_path, plan))
    )
    (
        (decoded[TAG_COUNTS], replayed[TAG_COUNTS], conflict_counts, written, written_events, state_files)
        | "AllBookkeeping" >> beam.Flatten()
        | "TotalDay" >> beam.CombineGlobally(MergeCounts())
        | "RecordDay" >> beam.ParDo(RecordDay(lake_path, run_meta, plan))
    )


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
