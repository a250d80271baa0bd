"""The lake's ``alerts`` table: a Delta table whose only writer is the live service.

``LAKE/alerts/gaming_day=D/<watch-id>-<n>.parquet``, the :data:`pitwatch.schemas.arrow.ALERTS` columns (the
FINDINGS columns, ``watch_id``, ``provisional_id``, ``live_only``: every alert the watcher sends,
the live-only ones — provisional card alerts, their clearing, silence notices — too, marked
``live_only``; any other member an alert carries — ``trigger``
with ``--with-trigger`` — a column of its own holding the member's JSON text, added to the table
by schema evolution).  ``docs/lake.md`` ("The alerts table") is the reader's side.

* **Outside the run lock.**  The watcher never takes :mod:`pitwatch.lake.lock`'s lock: the batch
  does not read, fence, pin or roll back ``alerts`` (it is not one of ``LAKE_TABLES``), and no two
  writers ever write one file (each watcher's files carry its id).
* **When.**  Only in the watcher's committer process (:mod:`pitwatch.live.alerts_committer`): the
  watcher's loop appends each alert to a batch file of its state folder and hands batch ``n`` over
  at most every ``--commit-every`` seconds and on stop; the committer puts its rows in
  :attr:`buffer`, sets :attr:`n` and calls :meth:`flush`.  One commit = one counter value ``n``: the
  rows, one file per gaming day, written with :func:`pitwatch.lake.parquet.write_data_file` and
  committed in one Delta transaction (:func:`pitwatch.lake.delta.commit_replays`, an append).
* **Exactly once across a kill -9.**  Batch ``n`` becomes the files named ``n`` and nothing else.
  On restart :meth:`AlertsTable.recover` looks at this watcher's files numbered from the counter it
  is given (the lowest of the checkpoint's and of the batch files left): committed (a name some
  commit of the log adds) → their alerts are delivered, ``n`` moves past them and
  :attr:`recovered` names them; not committed → deleted (a killed commit's: its batch file is
  committed again).  So a repeated commit after a restart cannot happen: the file names it would
  add are either committed already or gone.  (``pending``, the alerts an older watcher's
  checkpoint kept uncommitted, comes back as :attr:`buffer`.)
* **Two watchers on one lake** (different ``--watch-id``): one table, each watcher's own files;
  a commit that finds the table's fence moved (the other watcher committed since it read it) reads
  it again and retries (:data:`COMMIT_RETRIES`): appends never conflict.  Two watchers with one
  id share one checkpoint folder and are refused by it already.
* **The chain.**  Each commit carries a fresh run id, and the watcher then appends a ``runs``
  record for it (command ``watch``, status ``succeeded``, ``commits`` naming the alerts commit
  and the SHA-256 of each file it added: :func:`pitwatch.lake.runs.write_run_record`, under its
  append lock, so a run appending at the same moment does not fork the chain).  ``pitwatch
  verify`` then checks the alerts table like every other.  A watcher killed between its commit
  and its record records that commit when it restarts (:meth:`AlertsTable.recover`).
* **Compaction of a closed day** (:meth:`AlertsTable.compact`).  After a commit, one gaming day
  before :attr:`AlertsTable.today` (the newest day of this watcher's committed alerts) that holds
  more than one file of this watcher is rewritten into one file,
  ``gaming_day=D/<watch-id>-<n>.compacted.parquet`` (``n``: the highest counter it replaces), and
  committed in place of them in one Delta transaction (:func:`pitwatch.lake.delta.commit_compaction`),
  then recorded in the chain (command ``watch``; its options' ``compaction``: the new file, the
  files replaced, :func:`pitwatch.lake.chain.rows_sha256` of their rows, the new file's the same).  One
  day per commit, at most :data:`COMPACT_FILES` files: it runs in the committer process, after the
  commit.  A kill before its commit leaves a file :meth:`AlertsTable.recover`
  deletes; a kill before its record, a commit the restart records.  Only this watcher's files;
  on a disk and on an object store alike.  ``pitwatch verify`` accepts the removal exactly as that record accounts for it.
* **Tombstones kept a day.**  The table's ``delta.deletedFileRetentionDuration`` is
  :data:`pitwatch.lake.delta.ALERTS_DELETED_FILE_RETENTION` (every other table's: 100 years), so its
  checkpoints drop a compaction's removes a day after it: its snapshot stays a day of removes
  whatever the lake's age.  A table created before that is given it by the first watcher that
  starts (:meth:`AlertsTable._set_retention`: one recorded metadata commit).  Nothing here reads a
  remove older than that: the restart tells an interrupted compaction from the current files.
* **Migration.**  A plain-Parquet ``alerts/`` folder (what the watcher wrote before the table was
  Delta) is *converted* in place when a watcher first opens it: its files are committed as they
  are (version 0, recorded in the chain like any commit); their ``watch_id`` column is null (the
  id is in their names only).
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake.exceptions import CommitFailedError

from pitwatch.lake import Lake
from pitwatch.schemas.arrow import ALERTS, FINDINGS, RUN_STAMPS, conform, rows_to_table

log = logging.getLogger("pitwatch")

TABLE = "alerts"
COMMIT_RETRIES = 20
RECOVERY_SCAN = 256      # the last commits of the log a restart looks at for an unrecorded one of its own
COMPACT_FILES = 1000     # at most this many files replaced by one compaction (~2 s; one closed day per commit)
KNOWN = set(ALERTS.names)


def _parse_ts(value):
    if value is None or isinstance(value, _dt.datetime):
        return value
    return _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


class AlertsTable:
    """Buffer alerts (:meth:`send`); :meth:`take` + :meth:`write` commit them as one Delta commit."""

    def __init__(self, lake: Lake, watch_id: str, compaction: bool = True) -> None:
        self.name = f"lake:{watch_id}"
        self.lake = lake
        self.watch_id = watch_id
        self.fs, self.root = lake.fs, lake.root
        self.n = 0
        self.buffer: list[dict] = []
        self.commits = 0        # Delta commits this process made (the stop summary, the tests)
        self.registry: dict | None = None   # a device registry given to this watcher: its next record names it
        self._file = re.compile(re.escape(watch_id) + r"-(\d{8})\.parquet$")
        self._compacted = re.compile(re.escape(watch_id) + r"-(\d{8})\.compacted\.parquet$")
        self.today: str | None = None    # the newest gaming day of this watcher's committed alerts
        self.clock_day = None            # () -> the gaming day the clock is in (the service sets it): a
        #                                  day is closed only before both, so an alert stamped in the
        #                                  future (a device's clock, a hostile line) closes no open day
        self.compactions = 0            # compaction commits this process made
        self.compaction = compaction    # False: never compacts (a bench's "before", a test's uncompacted lake)
        self._not_compacted: set[str] = set()    # days whose compaction failed (warned once; not tried again)
        self.recovered: set[int] = set()         # the counters :meth:`recover` found committed

    # --- the sink ------------------------------------------------------------------
    def send(self, records: list[dict]) -> list[str]:
        have = {r["finding_id"] for r in self.buffer}
        self.buffer.extend(r for r in records if r["finding_id"] not in have)
        return []   # delivered by a commit

    def take(self) -> tuple[list, list[str]]:
        """Hand the buffer over as one commit's batch ``[(n, records)]`` and its ids; ``n`` is reserved now
        (on the service's loop, at the snapshot of the checkpoint that comes after the commit)."""
        if not self.buffer:
            return [], []
        batch = [(self.n, self.buffer)]
        self.n += 1
        ids = [r["finding_id"] for r in self.buffer]
        self.buffer = []
        return batch, ids

    def write(self, batch: list, compact: bool = True) -> None:
        """Write and commit a batch from :meth:`take`, record the commit, then (``compact`` and
        :attr:`compaction`) compact one closed day; the committer process compacts after its answer."""
        for n, records in batch:
            self._commit(n, records)
        if batch and compact and self.compaction:
            self.compact()

    def flush(self) -> list[str]:
        batch, ids = self.take()
        self.write(batch)
        return ids

    def state(self) -> dict:
        """``n`` and the alerts not committed yet: they are delivered by a later commit, after a restart too."""
        return {"n": self.n, "pending": self.buffer}

    # --- writing -------------------------------------------------------------------
    def _rows(self, records: list[dict]) -> tuple[pa.Table, dict[str, pa.Table]]:
        extra = sorted({k for r in records for k in r} - KNOWN)
        schema = pa.schema([*ALERTS, *(pa.field(k, pa.string()) for k in extra)])
        rows = []
        for r in records:
            row = {**r, "ts": _parse_ts(r.get("ts")), "evidence_from": _parse_ts(r.get("evidence_from")),
                   "gaming_day": _dt.date.fromisoformat(r["gaming_day"]), "watch_id": r.get("watch_id", self.watch_id),
                   "live_only": bool(r.get("live_only"))}
            for k in extra:
                row[k] = None if r.get(k) is None else json.dumps(r[k], sort_keys=True, default=str)
            rows.append(row)
        table = rows_to_table(rows, schema)
        by_day = {}
        for day in sorted({r["gaming_day"] for r in records}):
            part = table.filter(pc.equal(table["gaming_day"], pa.scalar(_dt.date.fromisoformat(day))))
            by_day[day] = part.drop_columns(["gaming_day"])
        return schema, by_day

    def _commit(self, n: int, records: list[dict]) -> None:
        from pitwatch.lake import delta
        from pitwatch.lake import parquet as lake

        schema, by_day = self._rows(records)
        name = f"{self.watch_id}-{n:08d}.parquet"
        files = [lake.write_data_file(self.lake, TABLE, day, name, part) for day, part in by_day.items()]
        run_id = self._new_run_id()
        started = _dt.datetime.now(_dt.timezone.utc)
        since = (delta.current_version(self.lake, TABLE) or 0) + 1
        for attempt in range(COMMIT_RETRIES):
            try:
                delta.commit_replays(self.lake, TABLE, files, None, run_id=run_id,
                                     fence_at_start=delta.fence(self.lake, TABLE), schema=schema, partitioned=True)
                break
            except (delta.StaleWriter, CommitFailedError):   # another watcher committed between our
                if attempt == COMMIT_RETRIES - 1:                # fence read and our commit (or during it)
                    raise
        self.commits += 1
        self.today = max(self.today or "", *by_day)
        self._record(run_id, started, files, len(records), sorted(by_day), n, since, once=False)

    def _record(self, run_id: str, started, files, rows: int, days: list[str], n: int | None, since: int = 0,
                once: bool = True, compaction: dict | None = None, properties: dict | None = None) -> None:
        """Append the runs record of commit(s) ``run_id`` made.  ``once``: unless it is recorded already
        (a restart's or a creation's record, which another watcher may make too; a fresh commit's
        run id is this process's alone, and its files match no other watcher's names).
        ``compaction``: the record of a compaction commit (:meth:`compact`), its options say so;
        ``properties``: of a change of the table's properties (:meth:`_set_retention`), likewise."""
        from pitwatch.lake import runs

        if compaction is not None:
            what = {"compaction": compaction}
        elif properties is not None:
            what = {"table_properties": properties}
        else:
            what = {"batch": n, "alerts": rows}
        options = {"watch_id": self.watch_id, **what}
        if self.registry is not None:       # pitwatch.lake.registry: the lake's registry from now on
            options["devices"] = self.registry
        meta = {"run_id": run_id, "command": "watch", "versions": _versions(), "started": started.isoformat(),
                "options": json.dumps(options, sort_keys=True)}
        rec = runs.run_record(meta, "succeeded", {"replayed_days": days}, ended=_dt.datetime.now(_dt.timezone.utc))
        runs.write_run_record(self.lake, rec, files, once=once, since={TABLE: since})
        self.registry = None

    # --- compaction ----------------------------------------------------------------
    def owns(self, path: str) -> bool:
        """``path`` (relative to the table) is a file of this watcher: a commit's or a compaction's."""
        base = path.rpartition("/")[2]
        return bool(self._file.fullmatch(base) or self._compacted.fullmatch(base))

    def _counter(self, path: str) -> tuple[int, str]:
        base = path.rpartition("/")[2]
        m = self._file.fullmatch(base) or self._compacted.fullmatch(base)
        return int(m.group(1)), base

    def compaction_due(self) -> tuple[str, list[str]] | None:
        """The oldest closed gaming day (before :attr:`today` and the clock's, :attr:`clock_day`) that holds more than one file of this
        watcher at the table's latest version, and those files (at most :data:`COMPACT_FILES`, in
        the order they were committed); None when there is none."""
        from pitwatch.lake import delta_log

        snap = delta_log.snapshot(self.lake, TABLE) if self.today else None
        if snap is None:
            return None
        closed_before = min(self.today, self.clock_day()) if self.clock_day is not None else self.today
        by_day: dict[str, list[str]] = {}
        for path, add in snap.adds.items():
            day = (add.get("partitionValues") or {}).get("gaming_day")
            if isinstance(day, str) and day < closed_before and day not in self._not_compacted and self.owns(path):
                by_day.setdefault(day, []).append(path)
        for day in sorted(by_day):
            if len(by_day[day]) > 1:
                return day, sorted(by_day[day], key=self._counter)[:COMPACT_FILES]
        return None

    def compact(self) -> int | None:
        """Compact one closed gaming day (:meth:`compaction_due`): its files' rows, in the order
        they were committed, written into one file (:meth:`write_compacted`) and committed in place
        of them in one Delta transaction (:func:`pitwatch.lake.delta.commit_compaction`), then recorded
        in the chain (command ``watch``, its options' ``compaction``).  The new version, or None
        (nothing due, a remote lake, or a failure: warned, the day left as it is).

        One day per commit, at most :data:`COMPACT_FILES` files: this runs in the committer process
        after the alerts commit, so the next batch waits for it (never the watcher's loop); a
        watcher started on a lake of many uncompacted days catches up one day per commit rather
        than delaying its alerts' commits for all of them."""
        from pitwatch.lake import delta

        due = self.compaction_due()
        if due is None:
            return None
        day, replaced = due
        try:
            compacted, digest = self.write_compacted(day, replaced)
        except (pa.ArrowException, OSError, ValueError, TypeError) as exc:
            log.warning("alerts: gaming day %s not compacted: %s", day, exc)
            self._not_compacted.add(day)
            return None
        run_id = self._new_run_id()
        started = _dt.datetime.now(_dt.timezone.utc)
        for attempt in range(COMMIT_RETRIES):
            try:
                version = delta.commit_compaction(self.lake, TABLE, compacted, replaced, run_id=run_id,
                                                  fence_at_start=delta.fence(self.lake, TABLE))
                break
            except delta.StaleWriter as exc:            # another watcher committed in between: again
                if attempt == COMMIT_RETRIES - 1:
                    log.warning("alerts: gaming day %s not compacted this time: %s", day, exc)
                    self.fs.delete_file(f"{self.root}/{TABLE}/{compacted.path}")
                    return None
            except Exception as exc:   # noqa: BLE001 - a disk's error: the alerts are committed already
                log.warning("alerts: gaming day %s not compacted: %s", day, exc)
                self._not_compacted.add(day)
                if not self._interrupted_compactions([compacted.path]):
                    return None         # committed after all (the error came later): the restart records it
                self.fs.delete_file(f"{self.root}/{TABLE}/{compacted.path}")
                return None
        self.compactions += 1
        self._record(run_id, started, [compacted], compacted.rows, [day], None, version, once=False,
                     compaction=_compaction_entry(compacted.path, replaced, digest))
        return version

    def write_compacted(self, day: str, replaced: list[str]):
        """Write the one file of gaming day ``day`` that holds the rows of ``replaced`` (in that
        order), named after the highest counter value among them (``<watch-id>-<n>.compacted.parquet``),
        with :func:`pitwatch.lake.parquet.write_data_file`; the :class:`pitwatch.lake.delta.DataFile` and the
        rows' digest (:func:`pitwatch.lake.chain.rows_sha256`), the same over the replaced files' rows
        and over the new file's as read back (ValueError, the file deleted, if not)."""
        from pitwatch.lake import chain
        from pitwatch.lake import parquet as lake

        tables = [self._read(path) for path in replaced]
        extra = sorted({name for t in tables for name in t.column_names} - KNOWN)
        schema = pa.schema([*(f for f in ALERTS if f.name != "gaming_day"), *(pa.field(k, pa.string()) for k in extra)])
        digest = chain.rows_sha256(row for t in tables for row in t.to_pylist())
        name = f"{self.watch_id}-{max(self._counter(p)[0] for p in replaced):08d}.compacted.parquet"
        rows = pa.concat_tables([conform(t, schema) for t in tables])
        written = lake.write_data_file(self.lake, TABLE, day, name, rows)
        if chain.rows_sha256(self._read(written.path).to_pylist()) != digest:
            self.fs.delete_file(f"{self.root}/{TABLE}/{written.path}")
            raise ValueError(f"the rows of {written.path} are not the rows of the {len(replaced)} files it replaces")
        return written, digest

    def _read(self, path: str) -> pa.Table:
        """One small file of the table, read on this thread (``pq.read_table``'s dataset scan costs
        ~2 ms a file more: seconds for a day of 2,900 files)."""
        with self.fs.open_input_file(f"{self.root}/{TABLE}/{path}") as f:
            return pq.ParquetFile(f, pre_buffer=False).read(use_threads=False)

    def _record_compaction(self, run_id: str, version: int, actions: list[dict]) -> None:
        """Record a compaction commit of ours that was made and not recorded (a restart's): its rows'
        digest read from the files it replaced (from the file it wrote when one of them cannot be
        read: ``pitwatch verify`` then names the difference, if any, while they are on disk)."""
        from pitwatch.lake import chain, delta

        replaced = delta.removed_paths(actions)
        compacted = delta.added_paths(actions)[0]
        try:
            digest = chain.rows_sha256(row for path in replaced for row in self._read(path).to_pylist())
        except (pa.ArrowException, OSError) as exc:
            log.warning("alerts: the files compaction %d replaced cannot be read (%s): its record names the "
                        "digest of the rows of %s", version, exc, compacted)
            digest = chain.rows_sha256(self._read(compacted).to_pylist())
        day = re.search(r"gaming_day=([0-9-]+)/", compacted)
        self._record(run_id, _dt.datetime.now(_dt.timezone.utc), (), 0, [day.group(1)] if day else [], None, version,
                     compaction=_compaction_entry(compacted, replaced, digest))

    # --- restart -------------------------------------------------------------------
    def _own_files(self) -> list[tuple[int, str, str]]:
        """(n, path relative to the table, absolute path) of every file of this watcher in the table's folder."""
        base = f"{self.root}/{TABLE}"
        if self.fs.get_file_info(base).type != pafs.FileType.Directory:
            return []
        out = []
        for info in self.fs.get_file_info(pafs.FileSelector(base, recursive=True)):
            rel = info.path[len(base) + 1:]
            if info.type == pafs.FileType.File and not rel.startswith("_delta_log/"):
                if (m := self._file.fullmatch(info.base_name)):
                    out.append((int(m.group(1)), rel, info.path))
                elif self._compacted.fullmatch(info.base_name):
                    out.append((-1, rel, info.path))   # a compaction's: kept when committed, its rows delivered
                elif info.base_name.startswith(f"_{self.watch_id}-") and info.base_name.endswith(".partial"):
                    self.fs.delete_file(info.path)      # left by a killed write of the plain-Parquet sink
        return out

    def recover(self, state: dict) -> dict:
        """After a restart: migrate a plain-Parquet folder, record an unrecorded commit of ours, and
        return the ids (and days) our commits numbered ``state["n"]`` or more hold (delivered);
        our uncommitted files are deleted.  The buffer comes back from the checkpoint."""
        from pitwatch.lake import delta

        self._migrate()
        self._create()
        self._record_unrecorded()
        self._set_retention()
        self.n = int(state.get("n", 0))
        own = [(n, rel, path) for n, rel, path in self._own_files() if n >= int(state.get("n", 0)) or n < 0]
        committed = delta.committed_among(self.lake, TABLE, [rel for n, rel, _path in own if n >= 0])
        interrupted = self._interrupted_compactions([rel for n, rel, _path in own if n < 0])
        ids: dict = {}
        for n, rel, path in own:
            if n < 0 and rel in interrupted:
                log.info("alerts: removing %s, written by a compaction that was interrupted (the files it was to "
                         "replace are still in the table)", rel)
                self.fs.delete_file(path)
                continue
            if n < 0:
                continue
            if rel not in committed:
                log.info("alerts: removing %s, written by a commit that was interrupted (its alerts are "
                         "committed again)", rel)
                self.fs.delete_file(path)
                continue
            day = re.search(r"gaming_day=([0-9-]+)", rel)
            with self.fs.open_input_file(path) as f:
                for fid in pq.read_table(f, columns=["finding_id"]).column(0).to_pylist():
                    ids[fid] = day.group(1) if day else ""
            self.n = max(self.n, n + 1)
            self.recovered.add(n)
        self.buffer = [r for r in state.get("pending", []) if r.get("finding_id") not in ids]
        self.today = self._newest_day()
        return ids

    def _interrupted_compactions(self, compacted: list[str]) -> set[str]:
        """The compaction files among ``compacted`` whose commit never came, told from the table's
        latest snapshot alone (never its history, which grows with the lake's age): not in the
        table, and the plain file of the same day and counter — the newest file it was to replace,
        which every compaction replaces — still is.  One that was committed (and perhaps replaced
        since, by a later compaction of a late alert) removed that plain file for good."""
        from pitwatch.lake import delta_log

        if not compacted:
            return set()
        snap = delta_log.snapshot(self.lake, TABLE)
        current = set(snap.adds) if snap is not None else set()
        out = set()
        for rel in compacted:
            folder, _, base = rel.rpartition("/")
            m = self._compacted.fullmatch(base)
            plain = f"{folder}/{self.watch_id}-{m.group(1)}.parquet" if m else None
            if rel not in current and plain in current:
                out.add(rel)
        return out

    def _newest_day(self) -> str | None:
        """The newest gaming day of this watcher's files at the table's latest version."""
        from pitwatch.lake import delta_log

        snap = delta_log.snapshot(self.lake, TABLE)
        days = [(add.get("partitionValues") or {}).get("gaming_day") for path, add in snap.adds.items()
                if self.owns(path)] if snap is not None else []
        return max((d for d in days if isinstance(d, str)), default=None)

    def _record_unrecorded(self) -> None:
        """Our commits at the end of the log that no runs record names (killed between commit and
        record; or a creation of the empty table another watcher has not recorded yet: recorded
        once, by whichever comes first, :func:`pitwatch.lake.runs.write_run_record`'s ``once``)."""
        from pitwatch.lake import delta, runs

        if not delta.is_table(self.lake, TABLE):
            return
        recorded = runs.recorded_run_ids(self.lake)
        pending: dict[str, int] = {}
        for version in reversed(delta.log_versions(self.lake, TABLE)[-RECOVERY_SCAN:]):
            _data, actions = delta.read_commit(self.lake, TABLE, version)
            writer = delta.commit_writer(actions)
            if writer is None or writer in recorded or not all(self.owns(p) for p in delta.added_paths(actions)):
                continue        # recorded, or another watcher's (it records its own)
            pending[writer] = (version, actions)    # the earliest commit of a writer wins (an alter before its append)
        for writer, (version, actions) in sorted(pending.items(), key=lambda kv: kv[1][0]):
            log.info("alerts: recording commit %d of %s, made before this watcher was stopped", version, writer)
            if delta.commit_operation(actions) == delta.COMPACTION:
                self._record_compaction(writer, version, actions)
            elif delta.commit_operation(actions) == delta.SET_PROPERTIES:
                if not _our_retention(actions):
                    log.warning("alerts: commit %d of %s sets other properties than a watcher's: not recorded "
                                "(pitwatch verify names it)", version, writer)
                    continue
                self._record(writer, _dt.datetime.now(_dt.timezone.utc), (), 0, [], None, version,
                             properties=_properties_set(actions))
            else:
                self._record(writer, _dt.datetime.now(_dt.timezone.utc), (), 0, [], None, version)

    def _set_retention(self) -> None:
        """Give an ``alerts`` table created before its short tombstone retention
        (:data:`pitwatch.lake.delta.ALERTS_DELETED_FILE_RETENTION`) that retention: one commit of its
        metadata (:func:`pitwatch.lake.delta.set_table_properties`), recorded in the chain (command
        ``watch``, its options' ``table_properties``), once — the first watcher started after the
        upgrade makes it; the checkpoints after it drop the removes older than a day."""
        from pitwatch.lake import delta, delta_log

        retention = delta.SHORT_RETENTION_TABLES.get(TABLE)
        if retention is None or not delta.is_table(self.lake, TABLE):
            return
        want = {delta_log.RETENTION_KEY: retention}
        run_id = self._new_run_id()
        started = _dt.datetime.now(_dt.timezone.utc)
        for attempt in range(COMMIT_RETRIES):
            try:
                version = delta.set_table_properties(self.lake, TABLE, want, run_id=run_id,
                                                     fence_at_start=delta.fence(self.lake, TABLE))
                break
            except delta.StaleWriter:           # another watcher committed in between: read it again
                if attempt == COMMIT_RETRIES - 1:
                    raise
        if version is None:
            return
        log.warning("alerts: the table keeps the removes of its compactions in its checkpoints for %s from now on "
                    "(commit %d; its files stay on disk until pitwatch vacuum)", retention, version)
        self._record(run_id, started, (), 0, [], None, version, once=False, properties=want)

    def _create(self) -> None:
        """Create the (empty) table before this watcher writes any file into its folder, so that a
        folder with files and no log is only ever a plain-Parquet one (:meth:`_migrate`)."""
        from pitwatch.lake import delta

        if delta.is_table(self.lake, TABLE):
            return
        run_id = self._new_run_id()
        started = _dt.datetime.now(_dt.timezone.utc)
        if self._create_with(run_id, []):
            self._record(run_id, started, (), 0, [], None)

    def _create_with(self, run_id: str, files: list) -> bool:
        """Create the table with ``files``; False when another watcher created it first."""
        from deltalake.exceptions import DeltaError

        from pitwatch.lake import delta

        try:
            delta.commit_replays(self.lake, TABLE, files, None, run_id=run_id, fence_at_start=0,
                                 schema=pa.schema(list(ALERTS)), partitioned=True)
            return True
        except (DeltaError, delta.StaleWriter, OSError):
            if delta.is_table(self.lake, TABLE):
                return False
            raise

    @staticmethod
    def _new_run_id() -> str:
        from pitwatch.lake import runs

        return runs.new_run_id(_dt.datetime.now(_dt.timezone.utc))

    def _migrate(self) -> None:
        """Convert a plain-Parquet ``alerts/`` folder (no Delta log) into the Delta table, in place."""
        from pitwatch.lake import chain, delta

        base = f"{self.root}/{TABLE}"
        if self.fs.get_file_info(base).type != pafs.FileType.Directory or delta.is_table(self.lake, TABLE):
            return
        files = []
        for info in self.fs.get_file_info(pafs.FileSelector(base, recursive=True)):
            rel = info.path[len(base) + 1:]
            if info.type != pafs.FileType.File or not rel.endswith(".parquet") or info.base_name.startswith(("_", ".")):
                continue
            day = re.search(r"gaming_day=([0-9-]+)/", rel)
            try:
                with self.fs.open_input_file(info.path) as f:
                    rows = pq.read_metadata(f).num_rows
            except (pa.ArrowException, OSError) as exc:
                log.warning("alerts: %s is not a readable Parquet file (%s): not converted", rel, exc)
                continue
            files.append(delta.DataFile(TABLE, rel, info.size, rows, chain.file_sha256(self.fs, info.path),
                                        day.group(1) if day else None))
        if not files:
            return
        run_id = self._new_run_id()
        started = _dt.datetime.now(_dt.timezone.utc)
        if not self._create_with(run_id, files):
            return              # another watcher converted it
        log.warning("alerts: converted the plain-Parquet alerts folder (%d file(s)) into the Delta table", len(files))
        self._record(run_id, started, files, sum(f.rows for f in files),
                     sorted({f.gaming_day for f in files if f.gaming_day}), None)


def _properties_set(actions: list[dict]) -> dict:
    """The properties a :data:`pitwatch.lake.delta.SET_PROPERTIES` commit set (its commit info says)."""
    for action in actions:
        info = action.get("commitInfo")
        if isinstance(info, dict):
            try:
                value = json.loads((info.get("operationParameters") or {}).get("properties") or "{}")
            except ValueError:
                value = {}
            return value if isinstance(value, dict) else {}
    return {}


def _our_retention(actions: list[dict]) -> bool:
    """A :data:`pitwatch.lake.delta.SET_PROPERTIES` commit is one :meth:`AlertsTable._set_retention` makes:
    its commit info and its metadata set the table's tombstone retention to the watcher's, nothing
    else (a restart records only such a commit of the log's end: never another writer's change)."""
    from pitwatch.lake import delta, delta_log

    want = delta.SHORT_RETENTION_TABLES.get(TABLE)
    metas = [a["metaData"] for a in actions if isinstance(a.get("metaData"), dict)]
    conf = (metas[0].get("configuration") or {}) if len(metas) == 1 else {}
    return (want is not None and _properties_set(actions) == {delta_log.RETENTION_KEY: want}
            and isinstance(conf, dict) and conf.get(delta_log.RETENTION_KEY) == want)


def _compaction_entry(compacted: str, replaced: list[str], digest: str) -> dict:
    """What a compaction's record says of it (its options' ``compaction``; ``docs/verify.md``): the
    file written, the files it replaced, the digest of their rows (the same as the new file's)."""
    return {"table": TABLE, "compacted": compacted, "replaced": sorted(replaced), "rows_sha256": digest}


_VERSIONS: list[str] = []


def _versions() -> str:
    from pitwatch.lake import runs

    if not _VERSIONS:
        _VERSIONS.append(runs.versions())
    return _VERSIONS[0]


# the findings' columns but the batch run's stamps (first_seen_run, last_changed_run), then the alert's own
assert [n for n in FINDINGS.names if n not in RUN_STAMPS] == ALERTS.names[:len(FINDINGS.names) - len(RUN_STAMPS)]
