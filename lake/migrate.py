"""``pitwatch migrate``: a lake of the previous layout (plain Parquet files) as today's Delta tables.

The previous layout is the one pitwatch wrote up to ``main`` 819993f (``docs/lake.md`` of that
version)::

    LAKE/<table>/gaming_day=D/part-0.parquet          a one-off run's rows (its replay day: D)
    LAKE/<table>/gaming_day=D/replay-E.parquet        a nightly replay of day E (E = D or D+1)
    LAKE/rules/part-0.parquet   LAKE/runs/<run id>.parquet
    LAKE/state/gaming_day=D/{tables,devices,pack_cards}.parquet + manifest.json (format 1)
    LAKE/settings.json          LAKE/_watch/…      hidden ``.….tmp-…`` leftovers of killed writes

The migration (:func:`migrate`), under a run id of its own:

1. **Survey** (reads only, :mod:`pitwatch.lake.migrate_survey`): every file is classified; an
   unknown file, a lake with no run record (pitwatch did not write it), a data or state file
   whose columns are not its table's, a damaged manifest is refused before anything changes
   (:class:`MigrateError`); a lake already of Delta tables has nothing to migrate.
2. **Plan**: ``LAKE/_migration/plan.json`` (written atomically) names every move and the
   SHA-256, size and rows of every file.  From here the migration is **resumable**: ``pitwatch
   migrate`` again finds the plan and carries it out to the end; every step below is either
   done once or finds itself done.  The lake is not readable by either pitwatch in between
   (neither old nor new layout): finish it before anything else reads or writes it.
3. **Rename** every data file to today's name (:func:`pitwatch.lake.files.replay_file_name` with the
   migration's run id, so a later replay of that day replaces it): the bytes stay the same, so
   the SHA-256 the plan took before the move is the file's.
4. **State**: each completed day (a ``manifest.json``) becomes rows of the ``state`` table
   (:mod:`pitwatch.lake.state`, format 2).  Its manifest keeps every field of the old one (the old
   ``run_id``, ``inputs``, ``inbox``, ``engine_state`` …: an engine state this pitwatch cannot
   read still fails the next run clearly), says ``migrated_from_format: 1`` and ``migrated_by``,
   and gets ``files``: the input files of the day's events (their ``file`` column), which a run
   needs to replace a corrected file.  A day a one-off run wrote has no state (the old layout
   kept none) and gets none: a later run that replays a following day starts it from the last
   day before it that has a state, as the old nightly run did.
   State files without a manifest (a nightly replay killed before it completed) are not
   converted: the day never completed.
5. **Commit**: ``runs`` is created from the old run records (their ``table_versions`` null: they
   predate versions, so ``--as-of`` cannot name them), then the migration's ``running`` record;
   each data table is created from add actions (``numRecords``; the table properties of
   :mod:`pitwatch.lake.delta`); then the ``migrate`` record, ``succeeded``, whose
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
import json
import logging

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pitwatch.lake import Lake, delta, runs, state
from pitwatch.lake import files as lake_files
from pitwatch.lake import parquet as lake
from pitwatch.lake.migrate_survey import (
    DAY_TABLES,
    OLD_STATE_FORMAT,
    PLAN,
    MigrateError,
    layout,
    old_files_beside_tables,
    sha256_of,
    survey,
)

log = logging.getLogger("pitwatch")


def _after_step(step: str) -> None:
    """Called after every step that changed the lake (the kill -9 tests stop the process here)."""


def _write_plan(fs, root: str, plan: dict) -> None:
    fs.create_dir(f"{root}/_migration", recursive=True)
    tmp = f"{root}/_migration/.plan.json.tmp-{plan['run_id']}"
    with fs.open_output_stream(tmp) as out:
        out.write(json.dumps(plan, indent=1, sort_keys=True).encode())
    lake_files.set_file_mode(fs, tmp, lake_files.PRIVATE_FILE_MODE)
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
    runs_done = fs.get_file_info(f"{root}/runs/{delta.LOG_FOLDER}").type == pafs.FileType.Directory
    for move in plan["moves"]:
        old, new = f"{root}/{move['old']}", f"{root}/{move['new']}"
        if move["table"] == "runs" and runs_done:
            continue        # the old records are chained records of the runs table already (_commit_runs)
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
        elif have_old and sha256_of(fs, new) == move["sha256"]:
            fs.delete_file(old)         # a move that copies then deletes (object stores), stopped between
        else:
            raise MigrateError(f"{'both' if have_old else 'neither'} {move['old']} {'and' if have_old else 'nor'} "
                               f"{move['new']} exist: the lake changed during the migration; restore it from "
                               "the backup taken before it")


def _state_files(lake_path: Lake, plan: dict) -> list:
    """The state table's files: each completed day's kinds and manifest, written (again) from the
    old files, which stay until the migration has succeeded."""
    fs, root = lake_path.fs, lake_path.root
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


def _manifest_file(lake_path: Lake, day: str, run_id: str, manifest: dict):
    """The day's manifest row, format 2, every other field as given (``engine_state`` included)."""
    import pyarrow as pa

    body = json.dumps({**manifest, "format": state.FORMAT_VERSION}, sort_keys=True)
    table = pa.Table.from_pylist([{"kind": "manifest", "key": day, "payload": body}],
                                 schema=state.STATE.remove(state.STATE.get_field_index("gaming_day")))
    name = lake.replay_file_name(day, run_id).replace(".parquet", "-manifest.parquet")
    return lake.write_data_file(lake_path, state.TABLE, day, name, table, mode=lake_files.PRIVATE_FILE_MODE)


def _day_input_files(lake_path: Lake, plan: dict, day: str) -> list[str]:
    fs, root = lake_path.fs, lake_path.root
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


def _commit_runs(lake_path: Lake, plan: dict, meta: dict) -> None:
    """``runs``: each old record appended as a chained record of its own (``runs.write_run_record``:
    one record per commit, the hash chain of ``docs/verify.md`` starting with the oldest), its old
    file then removed (its SHA-256 stays in the migration's record); then the migration's
    ``running`` record; each found done when resuming."""
    import pyarrow.parquet as pq

    fs, root = lake_path.fs, lake_path.root
    have = set()
    if delta.open_table(lake_path, "runs") is not None:
        have = {r["run_id"] for r in lake.read_table(lake_path, "runs", columns=["run_id"]).to_pylist()}
    old = []
    for move in plan["moves"]:
        if move["table"] != "runs":
            continue
        path = f"{root}/{move['new']}"
        if fs.get_file_info(path).type == pafs.FileType.File:
            with fs.open_input_file(path) as f:
                old += [(r, path) for r in pq.read_table(f).to_pylist()]
    for record, path in sorted(old, key=lambda rp: (rp[0]["started"], rp[0]["run_id"])):
        if record["run_id"] not in have:
            runs.write_run_record(lake_path, {**record, "table_versions": None})
        fs.delete_file(path)
    if old:
        _after_step("runs created")
    if not any(r["run_id"] == plan["run_id"] for r in lake.read_table(lake_path, "runs").to_pylist()):
        runs.write_run_record(lake_path, runs.run_record(meta, "running"))
        _after_step("running recorded")


def _commit_tables(lake_path: Lake, plan: dict, state_files: list | None, meta: dict) -> dict[str, int]:
    """Each data table created from its add actions (found done when resuming); their versions.
    Before the first commit (of this start or of a resumed one), the migration's intent, chained:
    the commits it is about to make (:func:`pitwatch.lake.runs.write_intent_record`; a resumed
    migration records one for the tables still to create)."""
    versions, commits = {}, {}
    for name in DAY_TABLES + ("rules", state.TABLE):
        files = state_files if name == state.TABLE else _data_files(plan, name)
        if files is None:           # the state table was committed before the interruption
            version = delta.current_version(lake_path, name)
            assert version is not None
            versions[name] = version
            continue
        if not files and name != state.TABLE:
            continue
        kwargs = {"schema": state.STATE, "partitioned": True} if name == state.TABLE else {}
        commits[name] = (files, kwargs)
    runs.write_intent_record(lake_path, meta, [
        c for name, (files, kwargs) in commits.items()
        for c in delta.intended_commits(lake_path, name, files, None, run_id=plan["run_id"], fence_at_start=0,
                                        **kwargs)])
    _after_step("intent recorded")
    for name, (files, kwargs) in commits.items():
        versions[name] = delta.commit_replays(lake_path, name, files, None, run_id=plan["run_id"],
                                              fence_at_start=0, **kwargs)
        _after_step(f"{name} committed")
    return versions


def _meta(lake_path: Lake, plan: dict) -> dict:
    converted = {name: [{k: m[k] for k in ("old", "new", "sha256", "size", "rows")}
                        for m in plan["moves"] if m["table"] == name]
                 for name in DAY_TABLES + ("rules", "runs")}
    options = {"migrated_from": "plain Parquet files (pitwatch main 819993f)", "files": converted,
               "state_days": sorted(plan["state_days"]), "incomplete_state_days": plan["incomplete_state_days"],
               "leftovers_removed": plan["leftovers"], "days_counted_twice": plan["days_counted_twice"]}
    return {"run_id": plan["run_id"], "command": f"pitwatch migrate --lake {lake_path}", "started": plan["started"],
            "versions": runs.versions(), "options": json.dumps(options, sort_keys=True)}


def _clean_up(lake_path: Lake, plan: dict) -> None:
    fs, root = lake_path.fs, lake_path.root
    old_state = [f"state/gaming_day={d}/{k}" for d in list(plan["state_days"]) + plan["incomplete_state_days"]
                 for k in ("tables.parquet", "devices.parquet", "pack_cards.parquet", "manifest.json")]
    for rel in old_state + plan["leftovers"]:
        if fs.get_file_info(f"{root}/{rel}").type == pafs.FileType.File:
            fs.delete_file(f"{root}/{rel}")
    fs.delete_dir(f"{root}/_migration")


def migrate(lake_path: Lake) -> dict | None:
    """Convert ``lake_path`` (see the module doc); the migration's ``runs`` record, or None when
    the lake is of today's layout already (nothing to migrate).  Raises :class:`MigrateError`."""
    fs, root = lake_path.fs, lake_path.root
    kind = layout(lake_path)
    if kind == "delta":
        mixed = old_files_beside_tables(lake_path)
        if mixed:
            shown = ", ".join(mixed[:10]) + (f" and {len(mixed) - 10} more" if len(mixed) > 10 else "")
            raise MigrateError(f"lake {lake_path} is of Delta tables already, and holds {len(mixed)} file(s) of the "
                               f"previous layout no table has: {shown}. Nothing was changed: migrate them as a "
                               "lake of their own (a copy of the folder they came from), or move them out")
        return None
    if kind == "empty":
        if fs.get_file_info(root).type != pafs.FileType.Directory:
            raise MigrateError(f"no lake at {lake_path}: not a folder")
        raise MigrateError(f"{lake_path} holds no lake pitwatch wrote (no run record, no table): nothing to migrate")
    # LAKE LOCK: take the lake's writer lock here for the whole migration, as every writer does
    # (pitwatch.lake.lock, issue 26 part 1, not on this branch yet: ``with lake_lock.hold(lake_path,
    # lake_lock.new_holder(command, run_id), timeout, log):`` around the rest of this function, and
    # --lock-timeout on the command).  Until then: nothing else may read or write the lake meanwhile.
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
    try:
        state_files = None if delta.is_table(lake_path, state.TABLE) else _state_files(lake_path, plan)
        _after_step("state written")
        versions = _commit_tables(lake_path, plan, state_files, meta)
    except delta.StaleWriter as exc:
        _record_stop(lake_path, meta, f"failed: {exc}")
        raise MigrateError(f"{exc}: the lake changed during the migration; restore it from the backup") from None
    except BaseException as exc:     # the plan stays: migrate again resumes; the record must not stay running
        _record_stop(lake_path, meta, f"interrupted: {getattr(exc, 'signal_name', '') or 'SIGINT'}"
                     if isinstance(exc, KeyboardInterrupt)
                     else f"failed: {type(exc).__name__}: {exc}"[:2000])
        raise
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


def _record_stop(lake_path: Lake, meta: dict, status: str) -> None:
    """The migration's record when it stops before its end (superseded by the one that finishes it)."""
    try:
        runs.write_run_record(lake_path, runs.run_record(meta, status, ended=_dt.datetime.now(_dt.timezone.utc)))
    except Exception as exc:     # the stop's own cause is what the user must see
        log.warning("could not record the migration's stop (%s): %s", status, exc)
