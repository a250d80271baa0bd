"""The previous layout of the lake (pitwatch up to main 819993f) and the survey of one: what each
file is, what it becomes, what is refused (:mod:`pitwatch.lake.migrate` carries the plan out).

Reads only: nothing here changes the lake."""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pitwatch.lake import Lake, delta
from pitwatch.lake import files as lake_files
from pitwatch.lake import parquet as lake
from pitwatch.schemas.arrow import LAKE_TABLES, PARTITIONED

PLAN = "_migration/plan.json"
OLD_STATE_FORMAT = 1
# the tables the old layout partitioned by gaming day (finding_changes came with issue 42, after it)
DAY_TABLES = tuple(name for name in PARTITIONED if name != "finding_changes")
_DAY = r"\d{4}-\d{2}-\d{2}"
_DAY_FILE = re.compile(rf"^({'|'.join(DAY_TABLES)})/gaming_day=({_DAY})/(part-0|replay-({_DAY}))\.parquet$")
_RUN_FILE = re.compile(r"^runs/([0-9A-Za-z][0-9A-Za-z_.-]*)\.parquet$")
_STATE_FILE = re.compile(rf"^state/gaming_day=({_DAY})/(tables|devices|pack_cards)\.parquet$")
_STATE_MANIFEST = re.compile(rf"^state/gaming_day=({_DAY})/manifest\.json$")
# the old layout's state files (lake/state.py at 819993f): kind -> columns
OLD_STATE = {
    "tables": pa.schema([pa.field("table_id", pa.string(), nullable=False),
                         pa.field("state", pa.string(), nullable=False)]),
    "devices": pa.schema([pa.field("device_id", pa.string(), nullable=False),
                          pa.field("state", pa.string(), nullable=False)]),
    "pack_cards": pa.schema([pa.field("table_id", pa.string(), nullable=False),
                             pa.field("pack_id", pa.string(), nullable=False), pa.field("first_ts", pa.int64()),
                             pa.field("record", pa.string(), nullable=False)]),
}
# settings.json: today's layout reads it as it is; the writer lock's files (pitwatch.lake.lock,
# LAKE/_writer.lock and its holder) are the lock's, there while migrate holds it
KEPT = ("settings.json", "_writer.lock", "_writer.holder.json")
WATCH = "_watch/"                  # the live watcher's folder: not the migration's


class MigrateError(ValueError):
    """The lake cannot be migrated (unknown files, not pitwatch's, damaged): nothing was changed."""


def _rel(root: str, path: str) -> str:
    return path[len(root) + 1:]


def sha256_of(fs, path: str) -> str:
    digest = hashlib.sha256()
    with fs.open_input_stream(path) as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _listing(fs, root: str) -> list[str]:
    return sorted(_rel(root, i.path) for i in fs.get_file_info(pafs.FileSelector(root, recursive=True))
                  if i.type == pafs.FileType.File)


def is_leftover(rel: str) -> bool:
    """A hidden temporary file a killed write of the old layout left (never read by any reader)."""
    base = rel.rsplit("/", 1)[-1]
    return base.startswith(".") and (".tmp" in base or base.startswith(".pitwatch-write-test-"))


def layout(lake_path: Lake) -> str:
    """``"old"`` (the previous layout: migrate it), ``"migrating"`` (a migration to finish),
    ``"delta"`` (today's), or ``"empty"``."""
    fs, root = lake_path.fs, lake_path.root
    if fs.get_file_info(f"{root}/{PLAN}").type == pafs.FileType.File:
        return "migrating"
    if delta.table_names_on_disk(lake_path) or delta.is_table(lake_path, "runs"):
        return "delta"
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return "empty"
    files = _listing(fs, root)
    if any(_DAY_FILE.match(f) or _RUN_FILE.match(f) or _STATE_MANIFEST.match(f) for f in files):
        return "old"
    return "empty"


def old_files_beside_tables(lake_path: Lake) -> list[str]:
    """Files of the previous layout in a lake of Delta tables (copied in, or restored from a
    backup over a migrated lake): no table has them, so they must not pass for migrated."""
    fs, root = lake_path.fs, lake_path.root
    return [f for f in _listing(fs, root)
            if _DAY_FILE.match(f) or _STATE_MANIFEST.match(f) or _STATE_FILE.match(f) or f == "rules/part-0.parquet"]


def refuse_old_layout(lake_path: Lake) -> None:
    """For every writer and reader of the lake: a lake of the previous layout, or one whose
    migration was interrupted, is a :class:`pitwatch.lake.parquet.LakeError` saying to migrate it
    (a Delta run on it would take the old files for a killed run's leftovers)."""
    kind = layout(lake_path)
    if kind == "old":
        raise lake.LakeError(f"lake {lake_path} is of the previous layout (plain Parquet files): "
                             f"convert it first with: pitwatch migrate --lake {lake_path}")
    if kind == "migrating":
        raise lake.LakeError(f"lake {lake_path} is half migrated (an interrupted pitwatch migrate): "
                             f"finish it with: pitwatch migrate --lake {lake_path}")


def _check_columns(fs, path: str, name: str, expected) -> int:
    """The file's rows; :class:`MigrateError` if its columns are not (a subset of) the table's."""
    try:
        with fs.open_input_file(path) as f:
            meta = pq.ParquetFile(f).metadata
            schema = meta.schema.to_arrow_schema()
    except (OSError, ValueError) as exc:
        raise MigrateError(f"{path} is not a readable Parquet file ({exc}); nothing was changed: "
                           "restore it from a backup, or move it out of the lake, then migrate again") from None
    wrong = []
    for field in schema:
        want = expected.field(field.name) if field.name in expected.names else None
        if want is None or not want.type.equals(field.type):
            wrong.append(f"{field.name} {field.type}" + (f" (table {name} has {want.type})" if want else
                                                         f" (not a column of table {name})"))
    missing = [f.name for f in expected if f.name not in schema.names and not f.nullable]
    if wrong or missing:
        raise MigrateError(f"{path} does not have the columns of pitwatch's table {name}: "
                           + "; ".join(wrong + [f"{m} missing" for m in missing])
                           + ". It was not written by pitwatch at the previous layout (main 819993f); nothing was changed: "
                             "replay its inputs into a new lake, or move it out of the lake")
    return meta.num_rows


def survey(lake_path: Lake, run_id: str) -> dict:
    """The migration's plan (see the module doc), from the lake as it is; changes nothing."""
    fs, root = lake_path.fs, lake_path.root
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        raise MigrateError(f"no lake at {lake_path}: not a folder; nothing was changed")
    files = _listing(fs, root)
    moves, unknown, leftovers, state_days, partial_state, seen = [], [], [], {}, set(), set()
    days = sorted({m.group(2) for m in map(_DAY_FILE.match, files) if m})
    for rel in files:
        path = f"{root}/{rel}"
        if rel.startswith(WATCH) or rel in KEPT:
            continue
        if is_leftover(rel):
            leftovers.append(rel)
            continue
        if not _days_valid(rel):
            unknown.append(rel)
        elif m := _DAY_FILE.match(rel):
            name, day, _stem, replay_day = m.groups()
            replay_day = replay_day or day
            new = f"{name}/gaming_day={day}/{lake_files.replay_file_name(replay_day, run_id)}"
            n = 1
            while new in seen:          # a one-off part-0 beside the nightly replay of its day
                n += 1
                new = f"{name}/gaming_day={day}/{lake_files.replay_file_name(replay_day, f'{run_id}-{n}')}"
            seen.add(new)
            rows = _check_columns(fs, path, name, lake.file_schema(name))
            moves.append({"table": name, "old": rel, "new": new, "gaming_day": day, "replay_day": replay_day,
                          "rows": rows})
        elif rel == "rules/part-0.parquet":
            rows = _check_columns(fs, path, "rules", LAKE_TABLES["rules"])
            new = f"rules/{lake_files.replay_file_name(days[-1] if days else 'catalogue', run_id)}"
            moves.append({"table": "rules", "old": rel, "new": new, "gaming_day": None, "rows": rows})
        elif m := _RUN_FILE.match(rel):
            rows = _check_columns(fs, path, "runs", LAKE_TABLES["runs"])
            moves.append({"table": "runs", "old": rel, "new": f"runs/run-{m.group(1)}-migrated-{run_id}.parquet",
                          "gaming_day": None, "rows": rows})
        elif m := _STATE_MANIFEST.match(rel):
            state_days[m.group(1)] = rel
        elif m := _STATE_FILE.match(rel):
            partial_state.add(m.group(1))
        else:
            unknown.append(rel)
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise MigrateError(f"lake {lake_path} holds {len(unknown)} file(s) pitwatch's previous layout does not "
                           f"have: {shown}. Nothing was changed: move them out of the lake, then migrate again")
    if not any(m["table"] == "runs" for m in moves):
        raise MigrateError(f"{lake_path} holds no run record (runs/<run id>.parquet): not a lake pitwatch wrote; "
                           "nothing was changed")
    for move in moves:
        move["size"] = fs.get_file_info(f"{root}/{move['old']}").size
        move["sha256"] = sha256_of(fs, f"{root}/{move['old']}")
    manifests = {day: _old_manifest(fs, f"{root}/{rel}", day) for day, rel in sorted(state_days.items())}
    for day in manifests:
        for kind, schema in OLD_STATE.items():
            path = f"{root}/state/gaming_day={day}/{kind}.parquet"
            if fs.get_file_info(path).type != pafs.FileType.File:
                raise MigrateError(f"the state of gaming day {day} has a manifest but no {kind}.parquet; nothing "
                                   f"was changed. Remove state/gaming_day={day}/ (the next run then replays the "
                                   "day from the one before), then migrate again")
            _check_columns(fs, path, f"state ({kind})", schema)
    return {"run_id": run_id, "started": _dt.datetime.now(_dt.timezone.utc).isoformat(), "moves": moves,
            "state_days": manifests, "incomplete_state_days": sorted(partial_state - set(state_days)),
            "leftovers": leftovers, "days_counted_twice": _counted_twice(moves)}


def _days_valid(rel: str) -> bool:
    """Every ``gaming_day=`` folder of the path names a real date (a Delta partition value must)."""
    for part in rel.split("/"):
        if part.startswith("gaming_day="):
            try:
                _dt.date.fromisoformat(part.split("=", 1)[1])
            except ValueError:
                return False
    return True


def _old_manifest(fs, path: str, day: str) -> dict:
    try:
        with fs.open_input_stream(path) as f:
            manifest = json.loads(f.read())
    except ValueError:
        raise MigrateError(f"the state manifest of gaming day {day} ({path}) is damaged; nothing was changed. "
                           f"Remove state/gaming_day={day}/ (the day is then replayed by the next run), "
                           "then migrate again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != OLD_STATE_FORMAT:
        raise MigrateError(f"the state manifest of gaming day {day} has format "
                           f"{manifest.get('format') if isinstance(manifest, dict) else '?'}, not "
                           f"{OLD_STATE_FORMAT}: not the previous layout's; nothing was changed")
    return manifest


def _counted_twice(moves: list[dict]) -> list[str]:
    """Days whose events partition holds a one-off run's file beside a replay of that day."""
    by_day: dict[str, int] = {}
    for m in moves:
        if m["table"] == "events" and m["replay_day"] == m["gaming_day"]:
            by_day[m["gaming_day"]] = by_day.get(m["gaming_day"], 0) + 1
    return sorted(d for d, n in by_day.items() if n > 1)
