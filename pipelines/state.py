"""Replay state carried from one nightly run to the next (``LAKE/state/``).

Play does not stop at the gaming-day cutoff: a baccarat shoe started at 05:50
ends at 06:40, a stub-count window runs across the cutoff.  At the end of the
replay of gaming day D, the open state of every table, every device's
``seq`` position and the recent packs' drawn cards are written under::

    LAKE/state/gaming_day=D/tables.parquet      table_id, state (JSON of TableReplay.state())
    LAKE/state/gaming_day=D/devices.parquet     device_id, state (JSON of SeqTracker.state())
    LAKE/state/gaming_day=D/pack_cards.parquet  table_id, pack_id, first_ts, record (JSON), for UNSHUFFLED_SEQUENCE
    LAKE/state/gaming_day=D/manifest.json       written last: the day is complete

Every file of the state is written with mode 0600 (``lake.PRIVATE_FILE_MODE``): it holds
the open shoes' drawn cards.  The replay of day D+1 starts from it.  ``manifest.json`` records the format
version (:data:`FORMAT_VERSION`, plus the engine's ``STATE_VERSION``), the
pitwatch version, and the inbox files (path, size, mtime, SHA-256) the day
was replayed from, so a later night can tell that a day received late files
and must be replayed again.  A state written by a pitwatch whose format this
one cannot read fails with a clear message naming the day to rebuild from.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines import lake

FORMAT_VERSION = 1

TABLES = pa.schema([pa.field("table_id", pa.string(), nullable=False), pa.field("state", pa.string(), nullable=False)])
DEVICES = pa.schema([pa.field("device_id", pa.string(), nullable=False), pa.field("state", pa.string(), nullable=False)])
PACK_CARDS = pa.schema([
    pa.field("table_id", pa.string(), nullable=False), pa.field("pack_id", pa.string(), nullable=False),
    pa.field("first_ts", pa.int64()), pa.field("record", pa.string(), nullable=False),
])
FILES = {"tables": TABLES, "devices": DEVICES, "pack_cards": PACK_CARDS}


class StateError(ValueError):
    """A carried state cannot be used (wrong version, missing, damaged)."""


def state_dir(day: str) -> str:
    return f"state/gaming_day={day}"


def write_state_file(lake_path: str, day: str, name: str, rows: list[dict]) -> int:
    schema = FILES[name]
    key = schema.names[0]
    rows = sorted(rows, key=lambda r: (r[key], r.get("pack_id") or ""))
    table = pa.Table.from_pylist(rows, schema=schema)
    lake.write_atomically(lake_path, state_dir(day), f"{name}.parquet", table, mode=lake.PRIVATE_FILE_MODE)
    return table.num_rows


def read_state_file(lake_path: str, day: str, name: str) -> list[dict]:
    fs, root = lake.filesystem(lake_path)
    path = f"{root}/{state_dir(day)}/{name}.parquet"
    try:
        with fs.open_input_file(path) as f:
            return pq.read_table(f).to_pylist()
    except FileNotFoundError:
        raise StateError(f"state of gaming day {day} is missing {name}.parquet: "
                         f"replay that day again (pitwatch run --day {day} …)") from None


def write_manifest(lake_path: str, day: str, manifest: dict) -> None:
    body = json.dumps({"format": FORMAT_VERSION, **manifest}, indent=2, sort_keys=True).encode()
    fs, root = lake.filesystem(lake_path)
    folder = f"{root}/{state_dir(day)}"
    fs.create_dir(folder, recursive=True)
    tmp = f"{folder}/.manifest.json.tmp"
    with fs.open_output_stream(tmp) as out:
        out.write(body)
    lake.set_file_mode(fs, tmp, lake.PRIVATE_FILE_MODE)
    fs.move(tmp, f"{folder}/manifest.json")


def read_manifest(lake_path: str, day: str) -> dict | None:
    """The manifest of a replayed day, or None if the day was never completed."""
    fs, root = lake.filesystem(lake_path)
    try:
        with fs.open_input_stream(f"{root}/{state_dir(day)}/manifest.json") as f:
            manifest = json.loads(f.read())
    except FileNotFoundError:
        return None
    except ValueError:
        raise StateError(f"state manifest of gaming day {day} is damaged: replay that day again") from None
    check_versions(day, manifest)
    return manifest


def check_versions(day: str, manifest: dict) -> None:
    from rules.table import STATE_VERSION

    if manifest.get("format") != FORMAT_VERSION or manifest.get("engine_state") != STATE_VERSION:
        raise StateError(
            f"the state of gaming day {day} was written by pitwatch {manifest.get('pitwatch', '?')} "
            f"(state format {manifest.get('format')}, engine state {manifest.get('engine_state')}); this pitwatch "
            f"reads format {FORMAT_VERSION}, engine state {STATE_VERSION}. Replay from an earlier day with "
            f"--rebuild-from DAY, or with the pitwatch that wrote it")


def replayed_days(lake_path: str) -> list[str]:
    """Gaming days whose replay completed (a manifest exists), ascending."""
    import pyarrow.fs as pafs

    fs, root = lake.filesystem(lake_path)
    base = f"{root}/state"
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        return []
    days = []
    for info in fs.get_file_info(pafs.FileSelector(base)):
        name = info.base_name
        if name.startswith("gaming_day=") and fs.get_file_info(f"{info.path}/manifest.json").type == pafs.FileType.File:
            days.append(name.split("=", 1)[1])
    return sorted(days)
