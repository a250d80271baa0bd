"""What a run changed in the findings of a gaming day an earlier run had already written.

A later run replays an earlier day (a late file, a table that played through the cutoff, a file
read again) and that day's findings change.  Two records of it, both written by the run itself,
in the same commit as the findings (``docs/lake.md``, "What a run changed"):

* **On every finding**, two columns (:data:`STAMPS`): ``first_seen_run``, the run that first wrote
  a finding with this ``finding_id`` on this gaming day, and ``last_changed_run``, the run that last
  added it or changed any of its other columns.  :func:`stamp` sets them when a day's findings
  file is written, from the partition's rows as the last successful run left them: a finding
  written again unchanged keeps both (a rerun over the same input writes identical rows).  A row of
  a file written before the columns existed reads them as null and keeps that null while unchanged.
* **The findings a run removed** are in no findings file any more: the ``finding_changes`` table
  (:data:`TABLE`, partitioned by ``gaming_day``, append-only) keeps one row per finding a run added
  to, removed from or changed on a day that the lake already held findings files of
  (:func:`write_changes`, in the run's commit step).  A day's first write is no change.

Both read only the partitions the run writes or replaces, at the pinned version: the cost follows
the days replayed, not the lake's age.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pitwatch.lake import Lake, delta
from pitwatch.lake import parquet as lake_files
from pitwatch.lake.files import replay_day_of
from pitwatch.schemas.arrow import FINDING_CHANGES, FINDINGS, RUN_STAMPS, concat_conformed, conform

TABLE = "finding_changes"
STAMPS = RUN_STAMPS
ADDED, REMOVED, CHANGED = "added", "removed", "changed"
# the columns a change compares: every finding column but its stamps and its partition (the same by the key)
COMPARED = tuple(n for n in FINDINGS.names if n not in STAMPS and n != "gaming_day")


def partition_files(lake: Lake, version: int | None, day: str) -> list[str]:
    """The ``findings`` files of partition ``gaming_day=day`` at ``version`` (the pinned one)."""
    folder = f"/findings/gaming_day={day}/"
    return [p for p in delta.files_at(lake, "findings", version) if folder in p]


def read_rows(lake: Lake, files: list[str]) -> list[dict]:
    """The findings rows of ``files`` (without ``gaming_day``: the files do not store it); a column
    a file lacks (written before it existed) reads as null."""
    schema = lake_files.file_schema("findings")
    out: list[dict] = []
    for path in files:
        with lake.fs.open_input_file(path) as f:
            out += conform(pq.read_table(f), schema).to_pylist()
    return out


def stamp(table: pa.Table, prior: list[dict], run_id: str) -> pa.Table:
    """``table`` (a partition's new findings) with :data:`STAMPS` set against ``prior`` (the
    partition's rows at the pinned version): a finding whose ``finding_id`` the partition held with
    every other column equal keeps both values; one held with a column changed keeps its
    ``first_seen_run`` and gets ``run_id`` as ``last_changed_run``; a new one gets ``run_id`` twice."""
    before = {r["finding_id"]: r for r in prior}
    firsts, lasts = [], []
    for row in table.select(list(COMPARED)).to_pylist():
        old = before.get(row["finding_id"])
        if old is None:
            firsts.append(run_id)
            lasts.append(run_id)
        elif _same(old, row):
            firsts.append(old["first_seen_run"])
            lasts.append(old["last_changed_run"])
        else:
            firsts.append(old["first_seen_run"])
            lasts.append(run_id)
    for name, values in zip(STAMPS, (firsts, lasts)):
        table = table.set_column(table.schema.get_field_index(name), FINDINGS.field(name), pa.array(values, pa.string()))
    return table


def stamp_partition(lake: Lake, day: str, tables: list[pa.Table], run_id: str, version: int | None) -> pa.Table:
    """The run's findings of partition ``gaming_day=day`` (``tables``, any subsets of the columns) as
    one table of the files' columns, stamped (:func:`stamp`) against the partition at ``version``."""
    table = concat_conformed([t for t in tables if t is not None], lake_files.file_schema("findings"))
    return stamp(table, read_rows(lake, partition_files(lake, version, day)), run_id)


def _same(a: dict, b: dict) -> bool:
    return all(a.get(c) == b.get(c) for c in COMPARED)


def changed_columns(a: dict, b: dict) -> list[str]:
    return [c for c in COMPARED if a.get(c) != b.get(c)]


def day_changes(prior: list[dict], new: list[dict], run_id: str, day: str) -> list[dict]:
    """The ``finding_changes`` rows of one day: findings of ``new`` not in ``prior`` (added), of
    ``prior`` not in ``new`` (removed), in both with another column changed (changed)."""
    import datetime as _dt

    before = {r["finding_id"]: r for r in prior}
    after = {r["finding_id"]: r for r in new}
    out = []
    for fid in sorted(before.keys() | after.keys()):
        old, row = before.get(fid), after.get(fid)
        columns: list[str] | None = None
        source: dict
        if old is not None and row is not None:
            columns = changed_columns(old, row)
            if not columns:
                continue
            kind, source = CHANGED, row
        elif row is not None:
            kind, source = ADDED, row
        else:
            assert old is not None          # a key of one of the two
            kind, source = REMOVED, old
        out.append({"run_id": run_id, "change": kind, "changed_columns": columns,
                    **{c: source.get(c) for c in FINDING_CHANGES.names
                       if c not in ("run_id", "change", "changed_columns", "gaming_day")},
                    "gaming_day": _dt.date.fromisoformat(day)})
    return out


def write_changes(lake: Lake, run_id: str, findings_version: int | None, replayed_days: list[str],
                  written: list) -> list:
    """Write the run's ``finding_changes`` files (not committed: the run's commit step commits them
    with its findings); their :class:`pitwatch.lake.delta.DataFile`.  ``written``: the run's new
    ``findings`` files; ``replayed_days``: the days whose earlier findings files the commit removes.

    A day is compared when the lake held findings files of it at ``findings_version`` (an earlier
    run wrote it): its rows in the files the commit removes against its rows in the run's files."""
    replayed = set(replayed_days)
    root = lake.root
    mine: dict[str, list[str]] = {}
    for f in written:
        if f.table == "findings" and f.gaming_day is not None:
            mine.setdefault(f.gaming_day, []).append(f"{root}/findings/{f.path}")
    held: dict[str, list[str]] = {}
    for path in delta.files_at(lake, "findings", findings_version):
        day = path.split("/gaming_day=", 1)[1].split("/", 1)[0] if "/gaming_day=" in path else None
        if day is not None and (day in mine or replay_day_of(path) in replayed):
            held.setdefault(day, []).append(path)
    out = []
    for day in sorted(held):
        replaced = [p for p in held[day] if replay_day_of(p) in replayed]
        rows = day_changes(read_rows(lake, replaced), read_rows(lake, mine.get(day, [])), run_id, day)
        if rows:
            table = pa.Table.from_pylist(rows, schema=FINDING_CHANGES)
            table = table.drop_columns(["gaming_day"])
            out.append(lake_files.write_data_file(lake, TABLE, day, f"run-{run_id}.parquet",
                                                  lake_files.sort_table(TABLE, table)))
    return out
