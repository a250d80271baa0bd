"""``pitwatch migrate``: a lake of the previous layout (plain Parquet files) as today's Delta tables.

The previous layout is the one pitwatch wrote up to ``main`` 819993f (``docs/lake.md`` of that
version)::

    LAKE/<table>/gaming_day=D/part-0.parquet          a one-off run's rows (its replay day: D)
    LAKE/<table>/gaming_day=D/replay-E.parquet        a nightly replay of day E (E = D or D+1)
    LAKE/rules/part-0.parquet   LAKE/runs/<run id>.parquet
    LAKE/state/gaming_day=D/{tables,devices,pack_cards}.parquet + manifest.json (format 1)
    LAKE/settings.json          LAKE/_watch/…      hidden ``.….tmp-…`` leftovers of killed writes

The migration (:func:`migrate`), under a run id of its own:

1. **Survey** (reads only): every file is classified; an unknown file, a lake with no run
   record (pitwatch did not write it), a data file whose columns are not its table's, or a lake
   already of Delta tables is refused before anything changes (:class:`MigrateError`).
2. **Plan**: ``LAKE/_migration/plan.json`` (written atomically) names every move and the
   SHA-256, size and rows of every file.  From here the migration is **resumable**: ``pitwatch
   migrate`` again finds the plan and carries it out to the end; every step below is either
   done once or finds itself done.  The lake is not readable by either pitwatch in between
   (neither old nor new layout): finish it before anything else reads or writes it.
3. **Rename** every data file to today's name (:func:`pipelines.lake.replay_file_name` with the
   migration's run id, so a later replay of that day replaces it): the bytes stay the same, so
   the SHA-256 the plan took before the move is the file's.
4. **State**: each completed day (a ``manifest.json``) becomes rows of the ``state`` table
   (:mod:`pipelines.state`, format 2).  Its manifest keeps every field of the old one (the old
   ``run_id``, ``inputs``, ``inbox``, ``engine_state`` …: an engine state this pitwatch cannot
   read still fails the next run clearly), says ``migrated_from_format: 1`` and ``migrated_by``,
   and gets ``files``: the input files of the day's events (their ``file`` column), which a run
   needs to replace a corrected file.  A day a one-off run wrote has no state (the old layout
   kept none): the next run replays it from the state of the last day before it that has one.
   State files without a manifest (a nightly replay killed before it completed) are not
   converted: the day never completed.
5. **Commit**: ``runs`` is created from the old run records (their ``table_versions`` null: they
   predate versions, so ``--as-of`` cannot name them), then the migration's ``running`` record;
   each data table is created from add actions (``numRecords``; the table properties of
   :mod:`pipelines.delta`); then the ``migrate`` record, ``succeeded``, whose
   ``table_versions`` pins every reader to the migrated lake and whose ``options`` name every
   file converted (old name, new name, SHA-256, size, rows), the state days, the leftovers
   removed.
6. **Clean up**: the old state files, the leftovers and the plan are removed.

``settings.json`` stays as it is (today's layout reads it alike); ``_watch/`` is the watcher's
and is left alone.  A partition that holds both a one-off run's ``part-0`` and a nightly
replay of the same day held its events twice in the old layout (the old layout's double count):
both files are kept, as they were, and the record names the day (replay it with ``pitwatch run
--day D --rebuild-from D``).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import re

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipelines import delta, lake, runs, state
from schemas.arrow import LAKE_TABLES, PARTITIONED

log = logging.getLogger("pitwatch")

PLAN = "_migration/plan.json"
OLD_STATE_FORMAT = 1
DAY_TABLES = ("events", "rejects", "rounds", "packs", "findings")
_DAY = r"\d{4}-\d{2}-\d{2}"
_DAY_FILE = re.compile(rf"^({'|'.join(DAY_TABLES)})/gaming_day=({_DAY})/(part-0|replay-({_DAY}))\.parquet$")
_RUN_FILE = re.compile(r"^runs/([0-9A-Za-z][0-9A-Za-z_.-]*)\.parquet$")
_STATE_FILE = re.compile(rf"^state/gaming_day=({_DAY})/(tables|devices|pack_cards)\.parquet$")
_STATE_MANIFEST = re.compile(rf"^state/gaming_day=({_DAY})/manifest\.json$")
KEPT = ("settings.json",)          # today's layout reads it as it is
WATCH = "_watch/"                  # the live watcher's folder: not the migration's


class MigrateError(ValueError):
    """The lake cannot be migrated (unknown files, not pitwatch's, damaged): nothing was changed."""


def _after_step(step: str) -> None:
    """Called after every step that changed the lake (the kill -9 tests stop the process here)."""


def _rel(root: str, path: str) -> str:
    return path[len(root) + 1:]


def _sha256(fs, path: str) -> str:
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


def layout(lake_path: str) -> str:
    """``"old"`` (the previous layout: migrate it), ``"migrating"`` (a migration to finish),
    ``"delta"`` (today's), or ``"empty"``."""
    fs, root = lake.filesystem(lake_path)
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


def refuse_old_layout(lake_path: str) -> None:
    """For every writer and reader of the lake: a lake of the previous layout, or one whose
    migration was interrupted, is a :class:`pipelines.lake.LakeError` saying to migrate it
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
        raise MigrateError(f"{path} is not a readable Parquet file ({exc}): not migrated; "
                           "restore it from a backup, or remove it if it holds nothing") from None
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
                           + ". It was not written by pitwatch at the previous layout (main 819993f): "
                             "migrate with the pitwatch that wrote it, or replay its inputs into a new lake")
    return meta.num_rows


def survey(lake_path: str, run_id: str) -> dict:
    """The migration's plan (see the module doc), from the lake as it is; changes nothing."""
    fs, root = lake.filesystem(lake_path)
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        raise MigrateError(f"no lake at {lake_path}: not a folder")
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
        if m := _DAY_FILE.match(rel):
            name, day, _stem, replay_day = m.groups()
            replay_day = replay_day or day
            new = f"{name}/gaming_day={day}/{lake.replay_file_name(replay_day, run_id)}"
            n = 1
            while new in seen:          # a one-off part-0 beside the nightly replay of its day
                n += 1
                new = f"{name}/gaming_day={day}/{lake.replay_file_name(replay_day, f'{run_id}-{n}')}"
            seen.add(new)
            rows = _check_columns(fs, path, name, lake.file_schema(name))
            moves.append({"table": name, "old": rel, "new": new, "gaming_day": day, "replay_day": replay_day,
                          "rows": rows})
        elif rel == "rules/part-0.parquet":
            rows = _check_columns(fs, path, "rules", LAKE_TABLES["rules"])
            new = f"rules/{lake.replay_file_name(days[-1] if days else 'catalogue', run_id)}"
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
        move["sha256"] = _sha256(fs, f"{root}/{move['old']}")
    manifests = {day: _old_manifest(fs, f"{root}/{rel}", day) for day, rel in sorted(state_days.items())}
    return {"run_id": run_id, "started": _dt.datetime.now(_dt.timezone.utc).isoformat(), "moves": moves,
            "state_days": manifests, "incomplete_state_days": sorted(partial_state - set(state_days)),
            "leftovers": leftovers, "days_counted_twice": _counted_twice(moves)}


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


def _write_plan(fs, root: str, plan: dict) -> None:
    fs.create_dir(f"{root}/_migration", recursive=True)
    tmp = f"{root}/_migration/.plan.json.tmp-{plan['run_id']}"
    with fs.open_output_stream(tmp) as out:
        out.write(json.dumps(plan, indent=1, sort_keys=True).encode())
    lake.set_file_mode(fs, tmp, lake.PRIVATE_FILE_MODE)
    fs.move(tmp, f"{root}/{PLAN}")


def _read_plan(fs, root: str) -> dict:
    try:
        with fs.open_input_stream(f"{root}/{PLAN}") as f:
            return json.loads(f.read())
    except ValueError:
        raise MigrateError(f"the migration's plan {root}/{PLAN} is damaged: the lake is half migrated; "
                           "restore it from the backup taken before the migration") from None


def _rename(fs, root: str, plan: dict) -> None:
    """Every data file to its new name; a move found done is checked by size (resuming)."""
    for move in plan["moves"]:
        old, new = f"{root}/{move['old']}", f"{root}/{move['new']}"
        have_old = fs.get_file_info(old).type == pafs.FileType.File
        have_new = fs.get_file_info(new).type == pafs.FileType.File
        if have_old and not have_new:
            fs.move(old, new)
            _after_step(f"renamed {move['old']}")
        elif have_new and not have_old:
            if fs.get_file_info(new).size != move["size"]:
                raise MigrateError(f"{new} is not the file the migration moved there (size "
                                   f"{fs.get_file_info(new).size}, planned {move['size']}): the lake changed "
                                   "during the migration; restore it from the backup")
        else:
            raise MigrateError(f"{'both' if have_old else 'neither'} {move['old']} {'and' if have_old else 'nor'} "
                               f"{move['new']} exist: the lake changed during the migration; restore it from "
                               "the backup taken before it")


def _state_files(lake_path: str, plan: dict) -> list:
    """The state table's files: each completed day's kinds and manifest, written (again) from the
    old files, which stay until the migration has succeeded."""
    fs, root = lake.filesystem(lake_path)
    run_id, out = plan["run_id"], []
    for day, old in sorted(plan["state_days"].items()):
        for kind in state.KINDS:
            path = f"{root}/state/gaming_day={day}/{kind}.parquet"
            try:
                with fs.open_input_file(path) as f:
                    rows = pq.read_table(f).to_pylist()
            except FileNotFoundError:
                raise MigrateError(f"the state of gaming day {day} has a manifest but no {kind}.parquet: "
                                   f"remove state/gaming_day={day}/ (the next run replays the day), then migrate "
                                   "again") from None
            out.append(state.write_state_file(lake_path, day, run_id, kind, rows))
        manifest = {k: v for k, v in old.items() if k != "format"}
        manifest.update({"migrated_from_format": OLD_STATE_FORMAT, "migrated_by": run_id,
                         "files": _day_input_files(lake_path, plan, day), "inbox": old.get("inbox") or []})
        out.append(_manifest_file(lake_path, day, run_id, manifest))
    return out


def _manifest_file(lake_path: str, day: str, run_id: str, manifest: dict):
    """The day's manifest row, format 2, every other field as given (``engine_state`` included)."""
    import pyarrow as pa

    body = json.dumps({**manifest, "format": state.FORMAT_VERSION}, sort_keys=True)
    table = pa.Table.from_pylist([{"kind": "manifest", "key": day, "payload": body}],
                                 schema=state.STATE.remove(state.STATE.get_field_index("gaming_day")))
    name = lake.replay_file_name(day, run_id).replace(".parquet", "-manifest.parquet")
    return lake.write_data_file(lake_path, state.TABLE, day, name, table, mode=lake.PRIVATE_FILE_MODE)


def _day_input_files(lake_path: str, plan: dict, day: str) -> list[str]:
    fs, root = lake.filesystem(lake_path)
    names = set()
    for move in plan["moves"]:
        if move["table"] == "events" and move["gaming_day"] == day:
            with fs.open_input_file(f"{root}/{move['new']}") as f:
                names |= set(pq.read_table(f, columns=["file"]).column("file").to_pylist())
    return sorted(n for n in names if n is not None)


def _data_files(plan: dict, name: str) -> list:
    prefix = f"{name}/"
    return [delta.DataFile(name, m["new"][len(prefix):], m["size"], m["rows"], m["sha256"], m["gaming_day"])
            for m in plan["moves"] if m["table"] == name]


def _commit_runs(lake_path: str, plan: dict, meta: dict) -> None:
    """``runs``: the old records (one commit that creates the table), then the migration's
    ``running`` record; either found done when resuming."""
    table = delta.open_table(lake_path, "runs")
    if table is None:
        delta.commit_replays(lake_path, "runs", _data_files(plan, "runs"), None, run_id=plan["run_id"],
                             fence_at_start=0)
        _after_step("runs created")
    elif (table.history()[-1].get(delta.RUN_ID_KEY)) != plan["run_id"]:
        raise MigrateError(f"the runs table of {lake_path} was not created by this migration: the lake changed "
                           "during it; restore it from the backup")
    if not any(r["run_id"] == plan["run_id"] for r in lake.read_table(lake_path, "runs").to_pylist()):
        runs.write_run_record(lake_path, runs.run_record(meta, "running"))
        _after_step("running recorded")


def _commit_tables(lake_path: str, plan: dict, state_files: list | None) -> dict[str, int]:
    """Each data table created from its add actions (found done when resuming); their versions."""
    versions = {}
    for name in DAY_TABLES + ("rules", state.TABLE):
        files = state_files if name == state.TABLE else _data_files(plan, name)
        if files is None:           # the state table was committed before the interruption
            versions[name] = delta.current_version(lake_path, name)
            continue
        if not files and name != state.TABLE:
            continue
        kwargs = {"schema": state.STATE, "partitioned": True} if name == state.TABLE else {}
        versions[name] = delta.commit_replays(lake_path, name, files, None, run_id=plan["run_id"],
                                              fence_at_start=0, **kwargs)
        _after_step(f"{name} committed")
    return versions


def _meta(lake_path: str, plan: dict) -> dict:
    converted = {name: [{k: m[k] for k in ("old", "new", "sha256", "size", "rows")}
                        for m in plan["moves"] if m["table"] == name]
                 for name in DAY_TABLES + ("rules", "runs")}
    options = {"migrated_from": "plain Parquet files (pitwatch main 819993f)", "files": converted,
               "state_days": sorted(plan["state_days"]), "incomplete_state_days": plan["incomplete_state_days"],
               "leftovers_removed": plan["leftovers"], "days_counted_twice": plan["days_counted_twice"]}
    return {"run_id": plan["run_id"], "command": f"pitwatch migrate --lake {lake_path}", "started": plan["started"],
            "versions": runs.versions(), "options": json.dumps(options, sort_keys=True)}


def _clean_up(lake_path: str, plan: dict) -> None:
    fs, root = lake.filesystem(lake_path)
    old_state = [f"state/gaming_day={d}/{k}" for d in list(plan["state_days"]) + plan["incomplete_state_days"]
                 for k in ("tables.parquet", "devices.parquet", "pack_cards.parquet", "manifest.json")]
    for rel in old_state + plan["leftovers"]:
        if fs.get_file_info(f"{root}/{rel}").type == pafs.FileType.File:
            fs.delete_file(f"{root}/{rel}")
    fs.delete_dir(f"{root}/_migration")


def migrate(lake_path: str) -> dict:
    """Convert ``lake_path`` (see the module doc); the migration's ``runs`` record, or None when
    the lake is of today's layout already (nothing to migrate).  Raises :class:`MigrateError`."""
    fs, root = lake.filesystem(lake_path)
    kind = layout(lake_path)
    if kind == "delta":
        return None
    if kind == "empty":
        if fs.get_file_info(root).type != pafs.FileType.Directory:
            raise MigrateError(f"no lake at {lake_path}: not a folder")
        raise MigrateError(f"{lake_path} holds no lake pitwatch wrote (no run record, no table): nothing to migrate")
    # LAKE LOCK: take the lake's writer lock here (pipelines.lake_lock, issue 26 part 1, not on this
    # branch yet) for the whole migration, as every writer does; until then run it with nothing else
    # reading or writing the lake.
    if kind == "old":
        plan = survey(lake_path, runs.new_run_id(_dt.datetime.now(_dt.timezone.utc)))
        _write_plan(fs, root, plan)
        _after_step("planned")
    else:
        plan = _read_plan(fs, root)
        log.warning("resuming the interrupted migration %s", plan["run_id"])
    _rename(fs, root, plan)
    meta = _meta(lake_path, plan)
    _commit_runs(lake_path, plan, meta)
    state_files = None if delta.is_table(lake_path, state.TABLE) else _state_files(lake_path, plan)
    _after_step("state written")
    versions = _commit_tables(lake_path, plan, state_files)
    done = [r for r in runs.latest_records(lake.read_table(lake_path, "runs"))
            if r["run_id"] == plan["run_id"] and r["status"] == "succeeded"]
    if done:                    # recorded before the interruption: only the clean-up was left
        _clean_up(lake_path, plan)
        return done[0]
    record = runs.run_record(meta, "succeeded", {"table_versions": versions,
                                                 "replayed_days": sorted({m["gaming_day"] for m in plan["moves"]
                                                                          if m["gaming_day"]})},
                             ended=_dt.datetime.now(_dt.timezone.utc))
    runs.write_run_record(lake_path, record)
    _after_step("recorded")
    _clean_up(lake_path, plan)
    _after_step("cleaned")
    return record
