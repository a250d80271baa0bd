"""``pitwatch vacuum``: the one way history leaves the lake — retention honoured, legal holds honoured.

Every table of the lake is a Delta table whose log keeps every version (its
expired-log clean-up is off): a replayed gaming day is an overwrite of that
day's partition, so the files the day had before stay on disk, removed from
the table but still read by time travel to an earlier version (what was
reported that night).  They go only through this module, and only those that

* no current version of the table references (Delta's *tombstones*: files a
  commit removed; delta-rs ``DeltaTable.vacuum(dry_run=True, full=False,
  enforce_retention_duration=False)`` lists them — "lite" mode, so a file the
  log never mentioned, such as a killed run's leftover, is not vacuum's to
  judge: the next run removes those).  ``alerts`` keeps its tombstones a day
  only (issue 35): its files removed longer ago are found on disk by their age
  (:func:`_past_their_tombstones`);
* were removed longer ago than the retention (``retention_days`` in
  ``pitwatch.toml`` or ``--retention-days``; default 2,555 days = 7 years, the
  longest keeping period regulators commonly ask for, see
  ``docs/operations.md``);
* are not of a gaming day under a legal hold (``legal_holds`` in the config,
  plus any ``--hold`` given): a held day's files are never removed, whatever
  their age.

delta-rs lists the candidates; pitwatch removes them itself (so that the
held ones can be left out), one ``os.unlink`` each (on an object store, one
DELETE through the lake's ``pyarrow.fs`` file system), after checking each
again: a path inside the table's folder, not under ``_delta_log`` or any other
``_``/``.`` folder, a regular file (not a link; an object store has none), not
a file of the table's current version.  ``_delta_log`` is never touched, so time travel to any
version still resolves: a version whose files were vacuumed says which file
is missing; one of a held day still reads.

Decisions (the spec is silent):

* a table not partitioned by ``gaming_day`` (``runs``, ``rules``, …) has no
  day to test against a hold: while any legal hold is in force, none of its
  removed files is vacuumed (a ``runs`` file may hold the records of a held
  night); the same for a file whose partition folder is not
  ``gaming_day=YYYY-MM-DD``;
* every file removed is listed in the ``runs`` record with its size and
  SHA-256, taken just before it was removed, and the table's version it was
  planned against; the record is written before the first removal (status
  ``running``, with the plan) and again at the end.  That chained record is
  how ``pitwatch verify`` tells retention from tampering
  (:func:`pitwatch.lake.verify.vacuum_removals`: a listed file that had left its
  table by that version is retention, counted, exit 0; a killed vacuum's plan
  covers what it removed; a file listed as ``absent`` — already gone when the
  vacuum came — is not), and how ``--as-of`` a run whose files it removed is
  refused naming it (:func:`pitwatch.queries.as_of.refuse_vacuumed`).  No Delta
  ``VACUUM`` commit is written: the log stays exactly the runs' commits, and
  the record already holds what such a commit would, plus each file's SHA-256;
* a dry run only reads: it takes no lock and writes no record.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import re
import stat
from urllib.parse import unquote

from pitwatch.config import parse_day_range
from pitwatch.lake import Lake, runs
from pitwatch.lake.parquet import LakeError

DEFAULT_RETENTION_DAYS = 2555
_DAY_FOLDER = re.compile(r"gaming_day=(\d{4}-\d{2}-\d{2})")


@dataclasses.dataclass(frozen=True)
class LegalHolds:
    """Gaming days whose files are never removed: single days and inclusive ranges."""

    ranges: tuple[tuple[_dt.date, _dt.date], ...] = ()

    @classmethod
    def parse(cls, texts) -> LegalHolds:
        """From ``["2026-11-28", "2026-11-01..2026-11-07"]``; ValueError naming a bad one."""
        return cls(tuple(sorted(parse_day_range(t) for t in texts)))

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def holds(self, day: _dt.date) -> bool:
        return any(a <= day <= b for a, b in self.ranges)

    def texts(self) -> list[str]:
        return [a.isoformat() if a == b else f"{a}..{b}" for a, b in self.ranges]


@dataclasses.dataclass
class Candidate:
    """A file the table removed longer ago than the retention."""

    table: str
    path: str                  # relative to the table's folder: the log's path, URI-decoded (the file's name)
    gaming_day: str | None
    bytes: int | None = None
    sha256: str | None = None
    why_kept: str | None = None     # held day, or a check that failed: not removed
    absent: bool = False            # already gone from the disk when vacuum came to remove it
    file: str | None = None         # its file on disk

    def row(self) -> dict:
        out = {"path": f"{self.table}/{self.path}", "gaming_day": self.gaming_day, "bytes": self.bytes}
        if self.sha256:
            out["sha256"] = self.sha256
        if self.why_kept:
            out["kept"] = self.why_kept
        if self.absent:
            out["absent"] = True
        return out


@dataclasses.dataclass
class TablePlan:
    table: str
    version: int
    remove: list[Candidate]
    keep: list[Candidate]


def tables(lake: Lake) -> list[str]:
    """The lake's Delta tables: folders with a ``_delta_log`` (a linked folder is not followed)."""
    names = _table_folders(lake) if lake.local else _object_store_folders(lake)
    if not names:
        raise LakeError(f"the lake {lake.root} has no Delta table (no TABLE/_delta_log): nothing to vacuum; a lake "
                        "of the previous layout is converted first with pitwatch migrate")
    return names


def _table_folders(lake: Lake) -> list[str]:
    try:
        names = sorted(os.listdir(lake))
    except FileNotFoundError:
        raise LakeError(f"the lake {lake.root} does not exist") from None
    except NotADirectoryError:
        raise LakeError(f"the lake {lake.root} is a file, not a folder") from None
    found = []
    for name in names:
        folder = os.path.join(lake, name)
        if name.startswith((".", "_")) or os.path.islink(folder) or not os.path.isdir(folder):
            continue
        if os.path.isdir(os.path.join(folder, "_delta_log")):
            found.append(name)
    return found


def _object_store_folders(lake: Lake) -> list[str]:
    """:func:`tables` on an object store: its "folders" are key prefixes, and it has no links."""
    import pyarrow.fs as pafs

    fs = lake.fs
    kind = fs.get_file_info(lake.root).type
    if kind == pafs.FileType.NotFound:
        raise LakeError(f"the lake {lake} does not exist")
    if kind != pafs.FileType.Directory:
        raise LakeError(f"the lake {lake} is a file, not a folder")
    found = []
    for info in fs.get_file_info(pafs.FileSelector(lake.root)):
        if info.type != pafs.FileType.Directory or info.base_name.startswith((".", "_")):
            continue
        if fs.get_file_info(f"{info.path}/_delta_log").type == pafs.FileType.Directory:
            found.append(info.base_name)
    return sorted(found)


def plan(lake: Lake, retention_days: int, holds: LegalHolds) -> list[TablePlan]:
    """What vacuum would remove from each table, and what it keeps of the candidates (and why)."""
    from pitwatch.lake import delta

    out = []
    for name in tables(lake):
        folder = lake.path(name)
        table = delta.open_table(lake, name)
        by_day = table.metadata().partition_columns == ["gaming_day"]
        # the log's paths are URI-encoded: decoded once here; delta-rs's vacuum lists them decoded
        current = {unquote(p) for p in table.get_add_actions(flatten=True).column("path").to_pylist()}
        listed = set(table.vacuum(retention_hours=retention_days * 24, dry_run=True, enforce_retention_duration=False,
                                  full=False))
        listed |= _past_their_tombstones(table, retention_days)
        remove: list[Candidate] = []
        keep: list[Candidate] = []
        for path in sorted(listed):
            c = _candidate(lake, name, folder, path, by_day, current, holds)
            (keep if c.why_kept else remove).append(c)
        out.append(TablePlan(name, table.version(), remove, keep))
    return out


def _past_their_tombstones(table, retention_days: int) -> set[str]:
    """The removed files of a table that keeps its tombstones (the removes its checkpoints repeat)
    less than pitwatch's 100 years — ``alerts``, a day (:data:`pitwatch.lake.delta.ALERTS_DELETED_FILE_RETENTION`):
    a file removed longer ago than that has no tombstone left to list it by.  They are found on disk
    (delta-rs's "full" mode: every file under the table's folder that its current version does not
    hold and no tombstone still names) by their age — when they were written, which for a watcher's
    file is about a day before its compaction removed it — older than both the retention and the
    table's tombstone retention (so a file a watcher has just written and not committed yet is never
    one).  Empty for every other table."""
    from pitwatch.lake import delta, delta_log

    keep_ms = delta_log.retention_ms(table.metadata().configuration)
    pitwatch_ms = delta_log.retention_ms(delta.TABLE_PROPERTIES)
    assert pitwatch_ms is not None      # pitwatch's own retention, an interval it reads
    if keep_ms is None or keep_ms >= pitwatch_ms:
        return set()                # every remove still in the table's tombstones: listed by them
    hours = max(retention_days * 24, -(-keep_ms // 3_600_000))
    return set(table.vacuum(retention_hours=hours, dry_run=True, enforce_retention_duration=False, full=True))


def _candidate(lake: Lake, name: str, folder: str, path: str, by_day: bool, current: set,
               holds: LegalHolds) -> Candidate:
    parts = path.split("/")
    m = _DAY_FOLDER.fullmatch(parts[0]) if by_day and len(parts) > 1 else None
    c = Candidate(name, path, m.group(1) if m and _is_date(m.group(1)) else None)
    full = _file_of(lake, folder, path)
    if full is None:
        c.why_kept = "not a plain file inside the table's folder: left alone"
        return c
    c.file = full
    c.bytes = _size(lake, full)
    if path in current:
        c.why_kept = "still in the table's current version"
    elif holds and c.gaming_day is None:
        c.why_kept = ("legal hold: a table without gaming days" if not by_day else
                      "legal hold: no gaming day in its folder name")
    elif c.gaming_day is not None and holds.holds(_dt.date.fromisoformat(c.gaming_day)):
        c.why_kept = f"legal hold on {c.gaming_day}"
    return c


def _is_date(text: str) -> bool:
    try:
        _dt.date.fromisoformat(text)
        return True
    except ValueError:
        return False


def _file_of(lake: Lake, folder: str, path: str) -> str | None:
    """The candidate's file, or None when it is not one vacuum may touch."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") or p.startswith(("_", ".")) for p in parts):
        return None             # never _delta_log, never outside the table, never a hidden file
    if not lake.local:          # an object store: a key under the table's prefix, no links to follow
        import pyarrow.fs as pafs

        full = f"{folder}/{path}"
        kind = lake.fs.get_file_info(full).type
        return full if kind in (pafs.FileType.File, pafs.FileType.NotFound) else None
    full = os.path.join(folder, *path.split("/"))
    if os.path.lexists(full):
        real_folder = os.path.realpath(folder)
        if os.path.commonpath([os.path.realpath(os.path.dirname(full)), real_folder]) != real_folder:
            return None     # a partition folder linked to elsewhere
        if not stat.S_ISREG(os.lstat(full).st_mode):
            return None     # a link or anything else planted under the file's name
    return full             # gone already: recorded as such, nothing to unlink


def _size(lake: Lake, full: str) -> int | None:
    """The file's size now; None when it is gone (on disk: the link itself, never followed)."""
    if lake.local:
        return os.lstat(full).st_size if os.path.lexists(full) else None
    import pyarrow.fs as pafs

    info = lake.fs.get_file_info(full)
    return info.size if info.type == pafs.FileType.File else None


def _sha256(lake: Lake, path: str) -> str:
    h = hashlib.sha256()
    with lake.fs.open_input_stream(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _remove(lake: Lake, full: str) -> None:
    """Remove one planned file: ``os.unlink`` on disk (the link check was made just before), a DELETE
    through the lake's file system on an object store."""
    if lake.local:
        os.unlink(full)
    else:
        lake.fs.delete_file(full)


def current_files_missing(lake: Lake, names: list[str]) -> list[str]:
    """Files the tables' current versions reference that are not on disk (after a vacuum: none)."""
    import pyarrow.fs as pafs

    from pitwatch.lake import delta

    missing = []
    for name in names:
        table = delta.open_table(lake, name)
        paths = [] if table is None else table.get_add_actions(flatten=True).column("path").to_pylist()
        for path, info in zip(paths, lake.fs.get_file_info([lake.path(name, unquote(p)) for p in paths])):
            if info.type != pafs.FileType.File:
                missing.append(f"{name}/{path}")
    return missing


@dataclasses.dataclass
class Outcome:
    run_id: str | None
    status: str
    plans: list[TablePlan]
    removed: dict[str, list[Candidate]]
    failed: list[tuple[Candidate, str]]


def summary(plans: list[TablePlan], removed: dict[str, list[Candidate]] | None) -> dict:
    """Per table: version, removed (count, bytes, files) and kept (count, files with the reason)."""
    out = {}
    for p in plans:
        gone = p.remove if removed is None else removed.get(p.table, [])
        out[p.table] = {"version": p.version, "removed": len(gone), "bytes": sum(c.bytes or 0 for c in gone),
                        "files": [c.row() for c in gone], "kept": len(p.keep), "kept_files": [c.row() for c in p.keep]}
    return out


def vacuum(lake: Lake, retention_days: int, holds: LegalHolds, command: str, log, holder_update=None) -> Outcome:
    """Remove what :func:`plan` lists, under the lake's lock (the caller holds it), with a ``runs`` record."""
    started = _dt.datetime.now(_dt.timezone.utc)
    run_id = runs.new_run_id(started)
    if holder_update is not None:
        holder_update(run_id=run_id)
    plans = plan(lake, retention_days, holds)
    options = {"command": "vacuum", "retention_days": retention_days, "legal_holds": holds.texts()}
    meta = {"run_id": run_id, "command": command, "started": started.isoformat(), "versions": runs.versions(),
            "options": json.dumps({**options, "planned": summary(plans, None)}, sort_keys=True)}
    runs.write_run_record(lake, runs.run_record(meta, "running"))
    removed: dict[str, list[Candidate]] = {p.table: [] for p in plans}
    failed: list[tuple[Candidate, str]] = []
    status = "interrupted"
    try:
        for p in plans:
            lake.check_held()       # a vacuum whose lease on an object store is lost removes nothing more
            for c in p.remove:
                full = c.file
                assert full is not None     # _candidate keeps (why_kept) every file it gives none
                try:
                    size = _size(lake, full)
                    if size is not None:
                        if lake.local and not stat.S_ISREG(os.lstat(full).st_mode):    # swapped since planned
                            raise OSError("no longer a plain file: left alone")
                        c.bytes, c.sha256 = size, _sha256(lake, full)
                        _remove(lake, full)
                    else:
                        c.bytes, c.absent = None, True     # gone before this vacuum: listed, nothing unlinked
                    removed[p.table].append(c)
                except OSError as exc:
                    failed.append((c, exc.strerror or str(exc)))
            log.info("vacuum %s: %s: removed %d files, kept %d", run_id, p.table, len(removed[p.table]), len(p.keep))
        missing = current_files_missing(lake, [p.table for p in plans])
        if failed:
            status = (f"failed: {len(failed)} files could not be removed, first {failed[0][0].table}/"
                      f"{failed[0][0].path}: {failed[0][1]}")
        elif missing:      # cannot happen if delta-rs listed only removed files: say so loudly if it ever does
            status = f"failed: {len(missing)} files of the current versions are missing, first {missing[0]}"
        else:
            status = "succeeded"
    except BaseException as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"failed: {type(exc).__name__}: {exc}"
        raise
    finally:
        meta["options"] = json.dumps({**options, **({"failed": [
            {**c.row(), "error": why} for c, why in failed]} if failed else {}),
            "tables": summary(plans, removed)}, sort_keys=True)
        runs.write_run_record(lake, runs.run_record(meta, status, ended=_dt.datetime.now(_dt.timezone.utc)))
    return Outcome(run_id, status, plans, removed, failed)
