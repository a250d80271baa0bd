"""The nightly batch: one Beam pipeline from event files to every table of the lake.

``run_batch()`` is the library entry point; ``pitwatch run`` only renders it.
The pipeline::

    ListInputs ─ FingerprintInputs ──────────────────────────────┐
       └ ReadChunks ─ DecodeChunks ─┬ events ─ GroupEventsByTable ─ ReplayTables ─┐
                                    ├ ids ─ FindConflictingIds (side input) ──┘   │
                                    ├ rejects ──────────────── KeyRejects ────────┤
                                    └ counts ───────────────────────────────┐     │
                                                WritePartitions ◄───────────┼─────┘
                                                   └─ RecordRun ◄───────────┘

The embedded default is Beam's ``FnApiRunner``, named explicitly (Beam's
``DirectRunner`` first tries to download a Prism binary, which hangs behind a
silent network).  Any other Beam option passes through (``--runner=FlinkRunner``,
``--direct_num_workers=2`` …): nothing here depends on running embedded — no
local side channels between steps, no global state; the lake may be ``gs://``.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
import os
import platform
import typing
import uuid

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipelines import __version__, coders, lake
from pipelines.ingest import (
    TAG_COUNTS, TAG_IDS, TAG_REJECTS, TAG_SEQS, DecodeChunk, FetchRawLines,
    FindConflictingIds, IngestOptions, ReadChunks,
)
from pipelines.inputs import expand_inputs, file_fingerprint
from pipelines.replay import (
    TAG_CONFLICTS, TAG_FIRED_SEQUENCES, TAG_GAMES, TAG_PACK_CARDS, ReplayDeviceSeq, ReplayTable,
    repeated_run_findings,
)
from schemas.arrow import REJECTS, RUNS, rows_to_table
from schemas.contract import CONTRACT_VERSION

log = logging.getLogger("pitwatch")

DAY_TABLES = ("events", "rounds", "packs", "findings")
DEFAULT_RUNNER = "FnApiRunner"


@dataclasses.dataclass
class RunSummary:
    run_id: str
    lake: str
    inputs: list[dict]
    lines_read: int
    accepted: int
    rejected: int
    duplicates: int
    gaming_days: list[str]
    rows: dict[str, int]
    findings: int
    status: str
    seconds: float


class MergeCounts(beam.CombineFn):
    """Sum numbers, concatenate lists: the run's bookkeeping in one dict."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, item):
        for k, v in item.items():
            if isinstance(v, list):
                acc[k] = acc.get(k, []) + v
            else:
                acc[k] = acc.get(k, 0) + v
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
    rejects under the gaming day it started in.
    """
    return max(days) if days else fallback


class WritePartition(beam.DoFn):
    def __init__(self, lake_path: str):
        self.lake_path = lake_path

    def process(self, kv):
        (name, day), tables = kv
        rows = lake.write_partition(self.lake_path, name, day, [t for t in tables if t is not None])
        log.info("wrote %s/gaming_day=%s: %s rows", name, day, f"{rows:,}")
        yield {"written": [(name, day, rows)]}


class RecordRun(beam.DoFn):
    """Write the run's record once every partition is written (it is the last step)."""

    def __init__(self, lake_path: str, run_meta: dict):
        self.lake_path = lake_path
        self.run_meta = run_meta

    def process(self, totals):
        record = finished_run_record(self.run_meta, totals)
        write_run_record(self.lake_path, record)
        yield record



def build_pipeline(p: beam.Pipeline, files: list[str], lake_path: str, run_meta: dict,
                   options: IngestOptions) -> None:
    coders.register()
    fallback_day = run_meta["fallback_day"]
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
        decoded.events
        | "GroupEventsByTable" >> beam.GroupByKey()
        | "ReplayTables" >> beam.ParDo(ReplayTable(options.gaming_day), beam.pvalue.AsList(conflict_ids))
        .with_outputs(TAG_CONFLICTS, TAG_COUNTS, TAG_GAMES, TAG_PACK_CARDS, TAG_FIRED_SEQUENCES, main="partitions")
    )
    seq_gaps = (
        decoded[TAG_SEQS]
        | "GroupSeqsByDevice" >> beam.GroupByKey()
        | "ReplayDeviceSeqs" >> beam.ParDo(ReplayDeviceSeq(options.gaming_day), beam.pvalue.AsList(replayed[TAG_GAMES]))
    )
    repeats = (
        replayed[TAG_PACK_CARDS]
        | "GatherPackCards" >> beam.combiners.ToList()
        | "FindRepeatedRuns" >> beam.FlatMap(
            repeated_run_findings, beam.pvalue.AsList(replayed[TAG_FIRED_SEQUENCES]), options.gaming_day)
    )
    partitions = (replayed.partitions, seq_gaps, repeats) | "AllReplayOutputs" >> beam.Flatten()
    days = (
        partitions
        | "DayOfEvents" >> beam.FlatMap(lambda kv: [kv[0][1]] if kv[0][0] == "events" else [])
        | "DistinctDays" >> beam.Distinct()
    )
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
    empty = days | "EmptyPartitionsOfDay" >> beam.FlatMap(lambda d: [((t, d), None) for t in DAY_TABLES])
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
        (partitions, rejects, empty, reject_day, rules_table)
        | "AllPartitions" >> beam.Flatten()
        | "GroupPartitions" >> beam.GroupByKey()
        | "WritePartitions" >> beam.ParDo(WritePartition(lake_path))
    )
    (
        (fingerprints, decoded[TAG_COUNTS], replayed[TAG_COUNTS], conflict_counts, written)
        | "AllBookkeeping" >> beam.Flatten()
        | "TotalRun" >> beam.CombineGlobally(MergeCounts())
        | "RecordRun" >> beam.ParDo(RecordRun(lake_path, run_meta))
    )


def rules_catalogue_table() -> pa.Table:
    from rules.catalog import RULES
    from schemas.arrow import RULES as RULES_SCHEMA

    return rows_to_table([r.to_row() for r in RULES], RULES_SCHEMA)


_REJECT_ROWS = pa.schema([f for f in REJECTS if f.name != "gaming_day"])


def _versions() -> str:
    return json.dumps({
        "pitwatch": __version__, "contract": CONTRACT_VERSION, "apache_beam": beam.__version__,
        "pyarrow": pa.__version__, "python": platform.python_version(),
    }, sort_keys=True)


def new_run_id(now: _dt.datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def run_record(meta: dict, status: str, totals: dict | None = None, ended=None) -> dict:
    totals = totals or {}
    written = totals.get("written", [])
    return {
        "run_id": meta["run_id"], "command": meta["command"],
        "inputs": sorted(totals.get("inputs", []), key=lambda i: i["path"]),
        "lines_read": totals.get("read", 0), "accepted": totals.get("accepted", 0),
        "rejected": totals.get("rejected", 0), "duplicates": totals.get("duplicates", 0),
        "gaming_days": sorted({_dt.date.fromisoformat(d) for n, d, _ in written if n == "events"}),
        "findings": sum(r for n, _, r in written if n == "findings"),
        "versions": meta["versions"], "options": meta["options"], "status": status,
        "started": _dt.datetime.fromisoformat(meta["started"]), "ended": ended,
        "_written": written,
    }


def finished_run_record(meta: dict, totals: dict) -> dict:
    rec = run_record(meta, "succeeded", totals, ended=_dt.datetime.now(_dt.timezone.utc))
    if rec["lines_read"] != rec["accepted"] + rec["rejected"] + rec["duplicates"]:
        rec["status"] = (
            f"failed: counts do not reconcile: read {rec['lines_read']} != accepted {rec['accepted']}"
            f" + rejected {rec['rejected']} + duplicates {rec['duplicates']}")
    return rec


def write_run_record(lake_path: str, record: dict) -> None:
    row = {k: v for k, v in record.items() if not k.startswith("_")}
    lake.write_atomically(lake_path, "runs", f"{record['run_id']}.parquet", rows_to_table([row], RUNS))


def beam_options(beam_args: list[str]) -> PipelineOptions:
    options = PipelineOptions(beam_args)
    if not options.view_as(StandardOptions).runner:
        options.view_as(StandardOptions).runner = DEFAULT_RUNNER
    return options


def run_batch(inputs: list[str], lake_path: str, beam_args: list[str] | None = None,
              gaming_day=None, chunk_lines: int = 20_000, command: str = "pitwatch run") -> RunSummary:
    """Ingest, validate, replay and write every table of the lake. Raises InputError/LakeError."""
    from schemas.decode import GamingDayConfig

    config = gaming_day or GamingDayConfig()
    files = expand_inputs(inputs)
    lake.check_writable(lake_path)
    stale = lake.remove_stale_temp_files(lake_path)
    if stale:
        log.info("removed %d temporary file(s) left by an interrupted run", stale)
    started = _dt.datetime.now(_dt.timezone.utc)
    options = beam_options(list(beam_args or []))
    meta = {
        "run_id": new_run_id(started), "command": command, "started": started.isoformat(),
        "fallback_day": config.gaming_day(started).isoformat(), "versions": _versions(),
        "options": json.dumps({"cutoff": config.cutoff, "timezone": config.timezone,
                               "runner": str(options.view_as(StandardOptions).runner),
                               "beam_args": list(beam_args or [])}, sort_keys=True),
    }
    write_run_record(lake_path, run_record(meta, "running"))
    log.info("run %s: %d input file(s) → %s", meta["run_id"], len(files), lake_path)
    try:
        with beam.Pipeline(options=options) as p:
            build_pipeline(p, files, lake_path, meta, IngestOptions(config, chunk_lines))
    except BaseException as exc:
        write_run_record(lake_path, run_record(meta, f"failed: {type(exc).__name__}: {exc}"[:2000],
                                               ended=_dt.datetime.now(_dt.timezone.utc)))
        raise
    return read_summary(lake_path, meta["run_id"], started)


def read_summary(lake_path: str, run_id: str, started: _dt.datetime) -> RunSummary:
    import pyarrow.parquet as pq

    fs, root = lake.filesystem(lake_path)
    with fs.open_input_file(f"{root}/runs/{run_id}.parquet") as f:
        rec = pq.read_table(f).to_pylist()[0]
    days = [d.isoformat() for d in rec["gaming_days"]]
    rows = {"rejects": rec["rejected"]}
    wanted = pa.array([_dt.date.fromisoformat(d) for d in days], pa.date32())
    for name in DAY_TABLES:
        t = lake.read_table(lake_path, name).select(["gaming_day"])
        rows[name] = t.filter(pc.is_in(t.column("gaming_day"), wanted)).num_rows if t.num_rows else 0
    ended = rec["ended"] or _dt.datetime.now(_dt.timezone.utc)
    return RunSummary(
        run_id=run_id, lake=lake_path, inputs=rec["inputs"], lines_read=rec["lines_read"],
        accepted=rec["accepted"], rejected=rec["rejected"], duplicates=rec["duplicates"],
        gaming_days=days, rows=rows, findings=rec["findings"], status=rec["status"],
        seconds=(ended - started).total_seconds(),
    )
