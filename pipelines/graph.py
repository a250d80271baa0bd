"""The batch pipeline's graph: from event files to every table of the lake.

::

    ListInputs ─ FingerprintInputs ──────────────────────────────────────────────────┐
       └ ReadChunks ─ DecodeChunks ─┬ events ─┐                                       │
                                    │  (nightly: + prior table states) ─ ReplayTables ┤
                                    ├ ids ─ FindConflictingIds (side input) ┘    │    │
                                    │                    each table's events ────┤    │
                                    │                           WriteEventPartitions ─┤
                                    ├ seqs (nightly: + prior device states) ─ ReplayDeviceSeqs ─┐
                                    │        pack cards (+ prior) ─ FindRepeatedRuns ─────────┤
                                    ├ rejects ───────────────── KeyRejects ────────────────────┤
                                    └ counts ─────────────────────────────┐                   │
                                             WritePartitions (rounds, packs, findings, …) ◄───┘
                                             WriteState (nightly) ◄───────┤
                                                └─ RecordRun ◄────────────┘

The events, the bulk of the data, go from the replay to their own
grouping and writer: on the embedded runner every Flatten in front of a
grouping is one more pass of its data through a worker process, so after
the replay the Flattens carry only small elements.  Before it, a plain run
groups each table's events alone; a nightly run joins them with the prior
state (a CoGroupByKey, whose Flatten does pass them through a worker once).

Two modes.  A plain run replays its input from scratch, closes every table
at the end of input and owns the partitions it writes (``part-0.parquet``;
other files there are removed).  A nightly run (:class:`DayMode`) starts
from the state the previous day left (:mod:`pipelines.state`), writes its
rows as ``replay-<day>.parquet`` in each partition they belong to, and
leaves the state for the next day.
"""
from __future__ import annotations

import dataclasses
import logging

import apache_beam as beam
import pyarrow as pa

from pipelines import coders, lake, runs, state
from pipelines.ingest import (
    TAG_COUNTS, TAG_IDS, TAG_REJECTS, TAG_SEQS, DecodeChunk, FetchRawLines, FindConflictingIds,
    IngestOptions, ReadChunks, WithoutCyclicGC,
)
from pipelines.inputs import file_fingerprint
from pipelines.replay import (
    TAG_CONFLICTS, TAG_DAYS, TAG_EVENTS, TAG_FIRED_SEQUENCES, TAG_GAMES, TAG_PACK_CARDS, TAG_STATE,
    NO_PACK_CARDS, FindRepeatedRuns, ReplayDeviceSeq, ReplayTable,
)
from pipelines.wording import plural
from schemas.arrow import REJECTS, rows_to_table

log = logging.getLogger("pitwatch")

DAY_TABLES = ("events", "rounds", "packs", "findings")
_REJECT_ROWS = pa.schema([f for f in REJECTS if f.name != "gaming_day"])


@dataclasses.dataclass(frozen=True)
class DayMode:
    """A nightly replay of one gaming day, continuing from ``prior_day``'s state."""

    replay_day: str
    prior_day: str | None
    retention_days: int = 7      # packs kept for the cross-pack UNSHUFFLED_SEQUENCE check

    @property
    def file_name(self) -> str:
        return f"replay-{self.replay_day}.parquet"


class MergeCounts(beam.CombineFn):
    """Sum numbers, concatenate lists: the run's bookkeeping in one dict."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, item):
        for k, v in item.items():
            acc[k] = acc.get(k, [] if isinstance(v, list) else 0) + v
        return acc

    def merge_accumulators(self, accs):
        out = {}
        for acc in accs:
            self.add_input(out, acc)
        return out

    def extract_output(self, acc):
        return acc


def run_gaming_day(days: list[str], fallback: str) -> str:
    """The gaming day a run's rejects are filed under: the last day it covers.

    A nightly run processes the day just ended (late lines of earlier days
    still belong to this run); a run with no accepted event files its
    rejects under the gaming day it started in (nightly: the replayed day).
    """
    return max(days) if days else fallback


class WritePartition(WithoutCyclicGC):
    def __init__(self, lake_path: str, file_name: str):
        self.lake_path = lake_path
        self.file_name = file_name

    def process(self, kv):
        (name, day), tables = kv
        tables = [t for t in tables if t is not None]
        rows = lake.write_partition(self.lake_path, name, day, tables, unpack=coders.unpack, peek=coders.peek,
                                    file_name=lake.PART_FILE if name == "rules" else self.file_name)
        log.info("wrote %s: %s", name if day is None else f"{name}/gaming_day={day}", plural(rows, "row"))
        out = {"written": [(name, day, rows)]}
        if name == "findings":
            for t in map(coders.unpack, tables):
                for sev in t.column("severity").to_pylist():
                    out[f"findings_{sev}"] = out.get(f"findings_{sev}", 0) + 1
        yield out


class WriteState(beam.DoFn):
    """Write one state file of the replayed day (tables, devices or pack_cards)."""

    def __init__(self, lake_path: str, day: str):
        self.lake_path = lake_path
        self.day = day

    def process(self, kv):
        name, rows = kv
        n = state.write_state_file(self.lake_path, self.day, name, [r for r in rows if r is not None])
        yield {"state_files": [(name, n)]}


class RecordRun(beam.DoFn):
    """The last step: remove superseded files, write the day's manifest and the run record."""

    def __init__(self, lake_path: str, run_meta: dict, day_mode: DayMode | None):
        self.lake_path = lake_path
        self.run_meta = run_meta
        self.day_mode = day_mode

    def process(self, totals):
        written = [(n, d) for n, d, _ in totals.get("written", []) if d is not None]
        if self.day_mode is None:
            removed = lake.remove_other_files(self.lake_path, written, keep=lake.PART_FILE)
        else:
            removed = lake.remove_stale_replay_files(self.lake_path, self.day_mode.file_name, written)
        if removed:
            log.info("removed %s", plural(removed, "superseded file"))
        record = runs.finished_run_record(self.run_meta, totals)
        if self.day_mode is not None and record["status"] == "succeeded":
            from rules.table import STATE_VERSION

            state.write_manifest(self.lake_path, self.day_mode.replay_day, {
                "gaming_day": self.day_mode.replay_day, "prior_day": self.day_mode.prior_day,
                "engine_state": STATE_VERSION, "pitwatch": self.run_meta["pitwatch"],
                "run_id": self.run_meta["run_id"], "inputs": record["inputs"],
                "inbox": self.run_meta.get("inbox", []),
                "state_files": dict(totals.get("state_files", [])),
            })
        runs.write_run_record(self.lake_path, record)
        yield record


def _prior_state(p, lake_path: str, day_mode: DayMode | None, name: str):
    """The previous day's rows of one state file, as a PCollection (empty in a plain run)."""
    label = f"Prior{name.title().replace('_', '')}"
    if day_mode is None or day_mode.prior_day is None:
        return p | label >> beam.Create([])
    prior = day_mode.prior_day
    return (p | label >> beam.Create([None])
            | f"Read{label}" >> beam.FlatMap(lambda _: state.read_state_file(lake_path, prior, name)))


def _with_prior_state(p, what: str, rows, tag: str, lake_path: str, day_mode: DayMode | None, state_file: str,
                      key: str):
    """``(key, {tag: [rows…], "state": [prior state…]})`` for each key of ``rows`` (and, nightly,
    of the previous day's state file ``state_file``).

    A plain run has no prior state: its rows are grouped alone, which on the
    embedded runner saves a pass of all of them through a worker (the
    Flatten inside a CoGroupByKey).
    """
    if day_mode is None:
        return (rows
                | f"Group{what}Rows" >> beam.GroupByKey()
                | f"No{what}State" >> beam.MapTuple(lambda k, values: (k, {tag: values, "state": ()})))
    states = (_prior_state(p, lake_path, day_mode, state_file)
              | f"Key{what}States" >> beam.Map(lambda r: (r[key], r["state"])))
    return {tag: rows, "state": states} | f"Join{what}State" >> beam.CoGroupByKey()


def build_pipeline(p: beam.Pipeline, files: list[str], lake_path: str, run_meta: dict,
                   options: IngestOptions, day_mode: DayMode | None = None, devices=None) -> None:
    fallback_day = day_mode.replay_day if day_mode else run_meta["fallback_day"]
    file_name = day_mode.file_name if day_mode else lake.PART_FILE
    nightly = day_mode is not None
    paths = p | "ListInputs" >> beam.Create(files)
    fingerprints = paths | "FingerprintInputs" >> beam.Map(lambda path: {"inputs": [file_fingerprint(path)]})
    decoded = (
        paths
        | "ReadChunks" >> beam.ParDo(ReadChunks(options.chunk_lines))
        | "DecodeChunks" >> beam.ParDo(DecodeChunk(options.gaming_day)).with_outputs(
            TAG_REJECTS, TAG_IDS, TAG_SEQS, TAG_COUNTS, main="events")
    )
    conflict_ids = decoded[TAG_IDS] | "FindConflictingIds" >> FindConflictingIds()
    replayed = (
        _with_prior_state(p, "Table", decoded.events, "events", lake_path, day_mode, "tables", "table_id")
        | "ReplayTables" >> beam.ParDo(ReplayTable(options.gaming_day, nightly, devices), beam.pvalue.AsList(conflict_ids))
        .with_outputs(TAG_CONFLICTS, TAG_COUNTS, TAG_GAMES, TAG_PACK_CARDS, TAG_FIRED_SEQUENCES, TAG_STATE,
                      TAG_EVENTS, TAG_DAYS, main="partitions")
    )
    seq_gaps = (
        _with_prior_state(p, "Device", decoded[TAG_SEQS], "seqs", lake_path, day_mode, "devices", "device_id")
        | "ReplayDeviceSeqs" >> beam.ParDo(ReplayDeviceSeq(options.gaming_day, nightly),
                                           beam.pvalue.AsList(replayed[TAG_GAMES]))
        .with_outputs(TAG_STATE, main="partitions")
    )
    prior_packs = _prior_state(p, lake_path, day_mode, "pack_cards")
    repeats = (   # one group of every table's packs' run keys and cards (a GroupByKey, not a side input)
        (replayed[TAG_PACK_CARDS], p | "NoPackCards" >> beam.Create([NO_PACK_CARDS]))   # the step runs even with none
        | "AllPackCards" >> beam.Flatten()
        | "KeyPackCards" >> beam.Map(lambda cards: (None, cards))
        | "GatherPackCards" >> beam.GroupByKey()
        | "FindRepeatedRuns" >> beam.ParDo(
            FindRepeatedRuns(options.gaming_day, day_mode), beam.pvalue.AsList(replayed[TAG_FIRED_SEQUENCES]),
            beam.pvalue.AsList(prior_packs)).with_outputs(TAG_STATE, main="partitions")
    )
    days = replayed[TAG_DAYS] | "DistinctDays" >> beam.Distinct()
    conflict_rejects = (
        replayed[TAG_CONFLICTS]
        | "GroupConflictsByFile" >> beam.GroupByKey()
        | "FetchRawLines" >> beam.ParDo(FetchRawLines())
    )
    conflict_counts = conflict_rejects | "CountConflicts" >> beam.Map(lambda rows: {"rejected": len(rows)})
    rejects = (
        (decoded[TAG_REJECTS], conflict_rejects)
        | "AllRejects" >> beam.Flatten()
        | "KeyRejects" >> beam.FlatMap(
            lambda rows, ds: [(("rejects", run_gaming_day(list(ds), fallback_day)),
                               rows_to_table(rows, _REJECT_ROWS))],
            beam.pvalue.AsList(days))
    )
    # every day of the run gets its rounds, packs and findings partitions, even empty (its events: always rows)
    empty = days | "EmptyPartitionsOfDay" >> beam.FlatMap(lambda d: [((t, d), None) for t in DAY_TABLES if t != "events"])
    reject_day = (
        p | "RunStart" >> beam.Create([None])
        | "RejectsPartition" >> beam.Map(
            lambda _, ds: (("rejects", run_gaming_day(list(ds), fallback_day)), None),
            beam.pvalue.AsList(days))
    )
    rules_table = (
        p | "RuleCatalogue" >> beam.Create([None])
        | "RulesTable" >> beam.Map(lambda _: (("rules", None), rules_catalogue_table()))
    )
    written = (
        (replayed.partitions, seq_gaps.partitions, repeats.partitions, rejects, empty, reject_day, rules_table)
        | "AllPartitions" >> beam.Flatten()
        | "GroupPartitions" >> beam.GroupByKey()
        | "WritePartitions" >> beam.ParDo(WritePartition(lake_path, file_name))
    )
    # the events, the bulk, are grouped on their own: no Flatten in their way (on the embedded
    # runner a Flatten before a grouping is one more pass of its data through a worker),
    # and each day's partition is written while another worker writes the next
    written_events = (
        replayed[TAG_EVENTS]
        | "GroupEventPartitions" >> beam.GroupByKey()
        | "WriteEventPartitions" >> beam.ParDo(WritePartition(lake_path, file_name))
    )
    bookkeeping = [fingerprints, decoded[TAG_COUNTS], replayed[TAG_COUNTS], conflict_counts, written,
                   written_events]
    if nightly:
        every_file = p | "StateFiles" >> beam.Create([(name, None) for name in state.FILES])
        state_files = (
            (replayed[TAG_STATE], seq_gaps[TAG_STATE], repeats[TAG_STATE], every_file)
            | "AllState" >> beam.Flatten()
            | "GroupStateByFile" >> beam.GroupByKey()
            | "WriteState" >> beam.ParDo(WriteState(lake_path, day_mode.replay_day))
        )
        bookkeeping.append(state_files)
    (
        tuple(bookkeeping)
        | "AllBookkeeping" >> beam.Flatten()
        | "TotalRun" >> beam.CombineGlobally(MergeCounts())
        | "RecordRun" >> beam.ParDo(RecordRun(lake_path, run_meta, day_mode))
    )


def rules_catalogue_table() -> pa.Table:
    from rules.catalog import RULES
    from schemas.arrow import RULES as RULES_SCHEMA

    return rows_to_table([r.to_row() for r in RULES], RULES_SCHEMA)
