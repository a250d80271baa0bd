"""Replay state carried from one gaming day to the next: the lake's private ``state`` table.

Play does not stop at the gaming-day cutoff: a baccarat shoe started at 05:50
ends at 06:40, a stub-count window runs across the cutoff.  At the end of the
replay of gaming day D, the open state of every table, every device's ``seq``
position and the recent packs' drawn cards are rows of the Delta table
``LAKE/state`` (partition ``gaming_day=D``), committed with the run like every
other table (:mod:`pitwatch.pipelines.lake_run`), so a reader or the next run sees the
state of the last successful run only::

    kind        key        pack_id  first_ts  payload
    tables      table_id                      JSON of TableReplay.state()
    devices     device_id                     JSON of SeqTracker.state()
    pack_cards  table_id   pack_id  first_ts  JSON record, for UNSHUFFLED_SEQUENCE
    manifest    the day                       JSON: format, engine state, prior day, run, inputs

Each kind is one file of the day (``replay-D-<run>-<kind>.parquet``), written with mode 0600
(``lake_files.PRIVATE_FILE_MODE``): it holds the open shoes' drawn cards.  ``state`` is not one of
the analysts' tables (``pitwatch.schemas.arrow.LAKE_TABLES``).  The manifest records the format
version (:data:`FORMAT_VERSION`, plus the engine's ``STATE_VERSION``); a state written by a
pitwatch whose format this one cannot read fails with a clear message naming the day to
rebuild from.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pitwatch.lake import Lake, delta
from pitwatch.lake import files as lake_files
from pitwatch.lake import parquet as lake

FORMAT_VERSION = 2
TABLE = "state"
KINDS = ("tables", "devices", "pack_cards")

STATE = pa.schema([
    pa.field("kind", pa.string(), nullable=False), pa.field("key", pa.string(), nullable=False),
    pa.field("pack_id", pa.string()), pa.field("first_ts", pa.int64()), pa.field("payload", pa.string()),
    pa.field("gaming_day", pa.date32(), nullable=False),
])
_FILE = STATE.remove(STATE.get_field_index("gaming_day"))


class StateError(ValueError):
    """A carried state cannot be used (wrong version, missing, damaged)."""


def _row(kind: str, r: dict) -> dict:
    """An old-style state row (``{"table_id", "state"}`` …) as a row of the table."""
    if kind == "tables":
        return {"kind": kind, "key": r["table_id"], "payload": r["state"]}
    if kind == "devices":
        return {"kind": kind, "key": r["device_id"], "payload": r["state"]}
    return {"kind": kind, "key": r["table_id"], "pack_id": r["pack_id"], "first_ts": r.get("first_ts"),
            "payload": r["record"]}


def _unrow(r: dict) -> dict:
    kind = r["kind"]
    if kind == "tables":
        return {"table_id": r["key"], "state": r["payload"]}
    if kind == "devices":
        return {"device_id": r["key"], "state": r["payload"]}
    return {"table_id": r["key"], "pack_id": r["pack_id"], "first_ts": r["first_ts"], "record": r["payload"]}


def state_chunks(kind: str, rows: Iterable[dict], chunk: int = 10_000) -> Iterator[pa.Table]:
    """Rows of one ``kind`` (old-style dicts) as tables of a state file's columns, ``chunk`` rows
    each, in the order they come (a week of a floor's packs is hundreds of megabytes of records:
    never all as dicts at once)."""
    batch = []
    for r in rows:
        batch.append(_row(kind, r))
        if len(batch) == chunk:
            yield pa.Table.from_pylist(batch, schema=_FILE)
            batch = []
    if batch:
        yield pa.Table.from_pylist(batch, schema=_FILE)


def state_table(kind: str, rows: Iterable[dict], tables: Iterable[pa.Table] = ()) -> pa.Table:
    """Rows of one ``kind`` (old-style dicts) and tables of them (:func:`state_chunks`) as one state
    file's table, in its order: by key, then pack."""
    table = pa.concat_tables([*tables, *state_chunks(kind, rows)] or [_FILE.empty_table()])
    if table.num_rows < 2:
        return table
    # a kind's rows all have a pack (pack_cards) or none have one (tables, devices): nulls never meet values
    return table.take(pc.sort_indices(table, sort_keys=[("key", "ascending"), ("pack_id", "ascending")]))


def rows_of(table: pa.Table) -> list[dict]:
    """A :func:`state_table`'s rows as old-style dicts (what :func:`read_rows` gives)."""
    return [_unrow(r) for r in table.to_pylist()]


def write_state_file(lake_path: Lake, day: str, run_id: str, kind: str, rows: Iterable[dict],
                     tables: Iterable[pa.Table] = ()):
    """One kind of day ``day``'s state as a data file of the state table (not committed): ``rows``
    (old-style dicts) and ``tables`` (of :func:`state_chunks`) together."""
    table = state_table(kind, rows, tables)
    name = lake_files.replay_file_name(day, run_id).replace(".parquet", f"-{kind}.parquet")
    return lake.write_data_file(lake_path, TABLE, day, name, table, mode=lake_files.PRIVATE_FILE_MODE)


def write_manifest(lake_path: Lake, day: str, run_id: str, manifest: dict):
    from pitwatch.rules.state import STATE_VERSION

    body = json.dumps({"format": FORMAT_VERSION, "engine_state": STATE_VERSION, **manifest}, sort_keys=True)
    table = pa.Table.from_pylist([{"kind": "manifest", "key": day, "payload": body}], schema=_FILE)
    name = lake_files.replay_file_name(day, run_id).replace(".parquet", "-manifest.parquet")
    return lake.write_data_file(lake_path, TABLE, day, name, table, mode=lake_files.PRIVATE_FILE_MODE)


def read_rows(lake_path: Lake, files: list[str], kind: str) -> list[dict]:
    """The rows of one ``kind`` in the given state files (old-style dicts)."""
    fs = lake_path.fs
    out = []
    for path in files:
        if not path.endswith(f"-{kind}.parquet"):
            continue
        try:
            with fs.open_input_file(path) as f:
                out += [_unrow(r) for r in pq.read_table(f).to_pylist()]
        except FileNotFoundError:
            raise StateError(f"the state file {path} is missing: replay from an earlier day "
                             "(pitwatch run --rebuild-from DAY …)") from None
    return out


def committed_files(lake_path: Lake, day: str, version: int | None = None) -> list[str]:
    """The state files of ``day`` in the committed state table (its current version by default)."""
    if version is None:
        version = delta.current_version(lake_path, TABLE)
    return [p for p in delta.files_at(lake_path, TABLE, version) if f"/gaming_day={day}/" in p]


def manifests(lake_path: Lake, version: int | None = None) -> dict[str, dict]:
    """``{day: manifest}`` of every replayed day of the committed state table."""
    if version is None:
        version = delta.current_version(lake_path, TABLE)
    fs = lake_path.fs
    out = {}
    for path in delta.files_at(lake_path, TABLE, version):
        if path.endswith("-manifest.parquet"):
            with fs.open_input_file(path) as f:
                for r in pq.read_table(f).to_pylist():
                    try:
                        out[r["key"]] = json.loads(r["payload"])
                    except ValueError:
                        raise StateError(f"state manifest of gaming day {r['key']} is damaged: "
                                         "replay that day again") from None
    return dict(sorted(out.items()))


def read_manifest(lake_path: Lake, day: str) -> dict | None:
    """The manifest of a replayed day, or None if the day was never completed."""
    manifest = manifests(lake_path).get(day)
    if manifest is not None:
        check_versions(day, manifest)
    return manifest


def check_versions(day: str, manifest: dict) -> None:
    """The day's state can be read: format :data:`FORMAT_VERSION`, and an engine state of this
    pitwatch's version or one it migrates when it loads a table's state
    (:data:`pitwatch.rules.migrations.MIGRATES_FROM`, :func:`pitwatch.rules.migrations.migrate`)."""
    from pitwatch.rules.migrations import MIGRATES_FROM
    from pitwatch.rules.state import STATE_VERSION

    engine = manifest.get("engine_state")
    if manifest.get("format") != FORMAT_VERSION or (engine != STATE_VERSION and engine not in MIGRATES_FROM):
        raise StateError(
            f"the state of gaming day {day} was written by pitwatch {manifest.get('pitwatch', '?')} "
            f"(state format {manifest.get('format')}, engine state {manifest.get('engine_state')}); this pitwatch "
            f"reads format {FORMAT_VERSION}, engine state {STATE_VERSION}. Replay from an earlier day with "
            f"--rebuild-from DAY, or with the pitwatch that wrote it")


def replayed_days(lake_path: Lake) -> list[str]:
    """Gaming days whose replay completed (a committed manifest), ascending."""
    return list(manifests(lake_path))
