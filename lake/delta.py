"""The lake's tables as Delta Lake tables (the ``deltalake`` package: delta-rs).

pitwatch writes every data file itself, with pyarrow (:func:`pitwatch.lake.parquet.write_data_file`:
fixed options, sorted rows, the SHA-256 computed while writing); this module only *commits*
them: one Delta transaction per table per run (:func:`commit_replays`), built from add actions
(``create_write_transaction``).  A replayed gaming day is an overwrite with a partition filter on
that day, so the day is replaced whole; ``rejects`` and ``runs`` are appended to.

Why hand-made add actions and not ``write_deltalake``: the files are written by Beam's workers
(any runner), the commit is one small final step of the pipeline.

* **The fence.**  Every commit carries an app transaction (``app_id`` ``pitwatch``) whose version
  is the table's previous one plus one, and the run id in its commit info.  A run reads every
  table's fence when it starts (under the lake's lock); at commit time a table whose fence moved
  since was committed by someone else: :class:`StaleWriter`, nothing committed.  A commit step
  run again (a retried bundle) finds its own run id at ``fence + 1`` and does nothing: idempotent.
* **Stats**: ``numRecords`` only.  Min/max/null counts would let a reader skip files; written
  wrongly they drop rows silently, and pitwatch's readers filter on the partition only.
* **Schema evolution**: a column the table lacks is added with ``alter.add_columns`` before the
  commit that carries it (otherwise readers would not see it).
* **Retention** (:data:`TABLE_PROPERTIES`, set at creation): the log is evidence, Delta's expired
  log clean-up is off and deleted files are kept for :data:`DELETED_FILE_RETENTION`: history goes
  only through ``pitwatch vacuum``.  The ``alerts`` table alone keeps its tombstones (the removes a
  checkpoint repeats) for :data:`ALERTS_DELETED_FILE_RETENTION` (:func:`table_properties`): its
  watcher's daily compaction removes ~2,900 files a day, and a checkpoint drops a remove older than
  that (``docs/lake.md``, "The alerts table"; set on an existing table by :func:`set_table_properties`).
* **One clock** (:func:`pitwatch.lake.delta_log.now_ms`): every time pitwatch writes into a log (commit info, add, remove,
  app transaction) is read from it.
* **Checkpoints are pitwatch's own** (:func:`post_commit`): delta-rs's automatic checkpoint and log
  clean-up are off in every commit; every writer checkpoints a table it committed once its version
  is 100 past the last chained checkpoint and chains it in its ``runs`` record
  (:mod:`pitwatch.lake.delta_log`).  Each JSON commit is chained by the run that wrote it
  (:mod:`pitwatch.lake.chain`, ``docs/verify.md``); ``pitwatch verify`` re-derives every checkpoint
  from the JSON commits and compares it action by action, it never trusts one.
* **Every commit names its writer**: the run id in the commit info (:data:`RUN_ID_KEY`), schema
  changes included, so :func:`pitwatch.lake.runs.write_run_record` chains exactly the commits its
  writer made.
"""
from __future__ import annotations

import atexit
import dataclasses
import json
import os
import uuid
from typing import TYPE_CHECKING
from urllib.parse import quote

import pyarrow as pa
import pyarrow.fs as pafs

from pitwatch.lake import Lake, chain, delta_log
from pitwatch.lake.delta_log import RETENTION_KEY
from pitwatch.lake.files import DATA_FILE_MODE, object_store, replay_day_of, set_file_mode
from pitwatch.schemas.arrow import LAKE_TABLES, PARTITIONED

if TYPE_CHECKING:
    from deltalake import DeltaTable

APP_ID = "pitwatch"
RUN_ID_KEY = "pitwatch.run_id"
LOG_FOLDER = "_delta_log"
ARCHIVE_FOLDER = "_log_archive"          # pitwatch.lake.delta_log: the log's old commits
DELETED_FILE_RETENTION = "interval 36500 days"    # files removed from a table stay until pitwatch vacuum
TABLE_PROPERTIES = {
    "delta.enableExpiredLogCleanup": "false",
    "delta.logRetentionDuration": "interval 36500 days",
    RETENTION_KEY: DELETED_FILE_RETENTION,
}
# the alerts table's tombstones: a checkpoint keeps a remove this long (then drops it); its files stay on disk
# until pitwatch vacuum as every table's (docs/lake.md, "The alerts table")
ALERTS_DELETED_FILE_RETENTION = "interval 1 days"
SHORT_RETENTION_TABLES = {"alerts": ALERTS_DELETED_FILE_RETENTION}


def table_properties(name: str) -> dict[str, str]:
    """The properties a pitwatch table is created with (and the watcher sets on an older ``alerts``)."""
    if name in SHORT_RETENTION_TABLES:
        return {**TABLE_PROPERTIES, RETENTION_KEY: SHORT_RETENTION_TABLES[name]}
    return dict(TABLE_PROPERTIES)


def now_ms() -> int:
    """The log's clock (:func:`pitwatch.lake.delta_log.now_ms`): looked up at each call, so a test that
    moves it moves every time pitwatch writes into a log."""
    return delta_log.now_ms()


class StaleWriter(RuntimeError):
    """A table was committed by another writer since this run read its fence."""


@dataclasses.dataclass(frozen=True)
class DataFile:
    """A data file written for a table, to be committed: its path relative to the table's folder."""

    table: str
    path: str
    size: int
    rows: int
    sha256: str
    gaming_day: str | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def post_commit():
    """The post-commit hooks of every pitwatch commit: no checkpoint, no log clean-up."""
    from deltalake import PostCommitHookProperties

    return PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)


def storage_options(lake: Lake) -> dict[str, str] | None:
    """The options every delta-rs table of ``lake`` is opened and committed with (None: a local lake).

    On S3, a commit is safe under concurrency through conditional put: delta-rs 1.x writes commit
    ``N`` with ``If-None-Match: *`` (object_store's ``PutMode::Create``), so of two writers racing for
    one version one gets it and the other a conflict, never a lost commit; AWS S3 has had it since
    2024, MinIO, R2 and moto have it.  Said explicitly here (``conditional_put = etag``, the
    default of delta-rs 1.x), and ``AWS_S3_ALLOW_UNSAFE_RENAME`` is forced off whatever the
    environment says: it would make a commit an unconditional copy.  Credentials, endpoint and region
    come from the standard AWS variables (``docs/lake.md``, "Supported stores")."""
    scheme = lake.address.split("://", 1)[0].lower() if lake.is_uri else ""
    if scheme in ("s3", "s3a"):
        return {"conditional_put": "etag", "AWS_S3_ALLOW_UNSAFE_RENAME": "false"}
    return None


def table_uri(lake: Lake, name: str) -> str:
    if lake.is_uri:
        return f"{lake.address.rstrip('/')}/{name}"
    return f"{lake.root}/{name}"


def is_table(lake: Lake, name: str) -> bool:
    """The lake has table ``name``: its log (or the archive of it) holds a commit."""
    from pitwatch.lake import delta_log

    return delta_log.commit_exists(lake, name, 0) or bool(delta_log.log_versions(lake, name))


def open_table(lake: Lake, name: str, version: int | None = None):
    """The Delta table ``name`` as delta-rs reads it (at ``version``), or None when the lake has no
    such table.  For writers only: readers read :func:`pitwatch.lake.delta_log.snapshot`, which takes
    no checkpoint the chain does not name."""
    from deltalake import DeltaTable

    uri = table_uri(lake, name)
    options = storage_options(lake)
    if not DeltaTable.is_deltatable(uri, storage_options=options):
        return None
    return DeltaTable(uri, version=version, storage_options=options)


def current_version(lake: Lake, name: str) -> int | None:
    """The table's latest version (None: no such table), from the chained log."""
    from pitwatch.lake import delta_log

    snap = delta_log.snapshot(lake, name)
    return None if snap is None else snap.version


def fence(lake: Lake, name: str) -> int:
    """The table's pitwatch transaction version: 0 for a table not created yet."""
    from pitwatch.lake import delta_log

    snap = delta_log.snapshot(lake, name)
    return 0 if snap is None else snap.txns.get(APP_ID, 0)


def fences(lake: Lake, names) -> dict[str, int]:
    return {name: fence(lake, name) for name in names}


def files_at(lake: Lake, name: str, version: int | None, checkpoints=None) -> list[str]:
    """The data files of table ``name`` at ``version`` (None: the table does not exist then), as
    paths the lake's file system opens, sorted: from the chained log
    (:func:`pitwatch.lake.delta_log.snapshot`; ``checkpoints``: the chained checkpoints of the record
    the version was pinned from, default the chain head's)."""
    from pitwatch.lake import delta_log

    if version is None:
        return []
    snap = delta_log.snapshot(lake, name, version, checkpoints)
    if snap is None:
        return []
    root = lake.root
    base = f"{root}/{name}/"
    return [base + path for path in snap.paths()]


def dataset(lake: Lake, name: str, files: list[str], schema: pa.Schema | None = None,
            partitioned: bool | None = None):
    """Table ``name`` as a ``pyarrow.dataset`` of ``files`` (paths the lake's file system opens, as
    :func:`files_at` gives them: the log's paths URI-decoded once), with ``schema`` (default the
    table's, :data:`pitwatch.schemas.arrow.LAKE_TABLES`) and, on a partitioned table (``partitioned``,
    default: one of :data:`pitwatch.schemas.arrow.PARTITIONED`), ``gaming_day`` from the Hive folder name.  The one place a Delta table becomes a dataset: the lake's readers
    (:func:`pitwatch.lake.parquet.read_table`), the SQL views and the alerts view all build theirs here.
    No file is opened until it is scanned; no files: an empty dataset of ``schema``."""
    import pyarrow.dataset as ds

    schema = schema if schema is not None else LAKE_TABLES[name]
    if not files:
        return ds.dataset(schema.empty_table())
    fs, root = lake.fs, lake.root
    if not ((name in PARTITIONED) if partitioned is None else partitioned):
        return ds.dataset(files, schema=schema, format="parquet", filesystem=fs)
    partitioning = ds.partitioning(pa.schema([schema.field("gaming_day")]), flavor="hive")
    return ds.dataset(files, schema=schema, format="parquet", filesystem=fs, partitioning=partitioning,
                      partition_base_dir=f"{root}/{name}")


def commit_replays(lake: Lake, name: str, files: list[DataFile], replayed_days: list[str] | None, *, run_id: str,
                   fence_at_start: int, replace_all: bool = False, schema: pa.Schema | None = None,
                   partitioned: bool | None = None, keep_only: int | None | str = "current",
                   info: dict[str, str] | None = None) -> int:
    """Commit ``files`` to table ``name`` in one transaction; return the table's new version.

    ``replayed_days``: every file the replays of those gaming days wrote before
    (:func:`pitwatch.lake.files.replay_day_of`, in whatever partition) is removed in the same
    transaction, so a replayed day's rows are replaced whole; a day replayed with no rows left
    leaves none.  This is an overwrite by file rather than by partition filter, because the
    replay of day D also writes rows of D-1's partitions (a round started before the cutoff
    belongs to the day it started in).  ``replace_all``: every current file is removed (the rule
    catalogue).  Otherwise the files are appended (``runs``).  ``keep_only``: the version the
    last successful run left (None: no such run); current files not in it were committed by a
    run killed during its commit, never read by anyone, and are removed too.  See the module doc
    for the fence.  ``info``: more entries of the commit's info (strings), beside the run id.
    """
    from deltalake import CommitProperties, Schema, Transaction
    from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

    schema = schema if schema is not None else LAKE_TABLES[name]
    partitioned = (name in PARTITIONED) if partitioned is None else partitioned
    stamp = now_ms()
    adds = [AddAction(path=f.path, size=f.size, modification_time=stamp, data_change=True,
                      partition_values={"gaming_day": f.gaming_day} if partitioned else {},
                      stats=json.dumps({"numRecords": f.rows}))
            for f in sorted(files, key=lambda f: f.path)]
    props = CommitProperties(custom_metadata={**(info or {}), RUN_ID_KEY: run_id},
                             app_transactions=[Transaction(app_id=APP_ID, version=fence_at_start + 1)])
    uri = table_uri(lake, name)
    partition_by = ["gaming_day"] if partitioned else None
    if not is_table(lake, name):
        if fence_at_start != 0:
            raise StaleWriter(f"table {name} has disappeared since the run started")
        lake.check_held()
        create_table_with_add_actions(uri, Schema.from_arrow(schema), adds, mode="error", partition_by=partition_by,
                                      configuration=table_properties(name), commit_properties=props,
                                      post_commithook_properties=post_commit(), storage_options=storage_options(lake))
        set_log_modes(lake, name)
        return 0
    from pitwatch.lake import delta_log

    snap = delta_log.snapshot(lake, name)
    now = snap.txns.get(APP_ID, 0) if snap is not None else 0
    if snap is not None and now == fence_at_start + 1 and _last_writer(lake, name, snap.version) == run_id:
        return snap.version      # this run's commit, made already: a retried step
    if now != fence_at_start:
        raise StaleWriter(f"table {name} was committed by another writer since this run started "
                          f"(fence {fence_at_start}, now {now}): nothing of this run was committed to it")
    assert snap is not None             # is_table: the table has a commit
    lake.check_held()                   # a writer whose lease on an object-store lake is lost commits nothing
    declared = snap.arrow_schema()
    plain_append = not (replayed_days or replace_all or keep_only != "current")
    if plain_append and declared is not None and set(schema.names) <= set(declared.names):
        return _append(lake, name, snap.version + 1, files, run_id, fence_at_start, partitioned, stamp, info)
    table = writer_handle(lake, name)
    if add_missing_columns(table, schema, run_id):
        snap = delta_log.snapshot(lake, name)
    removes = []
    for path, add in _replaced(lake, name, snap, replayed_days, replace_all, keep_only):
        values = {k: (None if v is None else str(v)) for k, v in (add.get("partitionValues") or {}).items()}
        # delta-rs URI-encodes an action's path as it writes it (as an add's): hand it the file's path
        # (decoded), not the log's text, or a name needing quoting is removed under another name
        removes.append(RemoveAction(path=path, data_change=True, deletion_timestamp=stamp,
                                    size=add.get("size"), partition_values=values or None))
    table.create_write_transaction(removes + adds, mode="append", schema=schema, partition_by=partition_by,
                                   commit_properties=props, post_commithook_properties=post_commit())
    set_log_modes(lake, name)
    snap = delta_log.snapshot(lake, name)                # reads the new commit only
    assert snap is not None                             # the commit just made
    return snap.version


def _replaced(lake: Lake, name: str, snap, replayed_days, replace_all: bool, keep_only) -> list[tuple[str, dict]]:
    """The current files (path, add action) a commit of :func:`commit_replays` removes: those of
    the replayed days, all of them (``replace_all``), those not in the ``keep_only`` version."""
    from pitwatch.lake import delta_log

    replayed = set(replayed_days or ())
    base = None
    if keep_only != "current":
        kept = None if keep_only is None else delta_log.snapshot(lake, name, keep_only)
        base = set() if kept is None else set(kept.adds)
    if not (replayed or replace_all or base is not None):
        return []
    return [(path, add) for path, add in sorted(snap.adds.items())
            if replace_all or replay_day_of(path) in replayed or (base is not None and path not in base)]


def intended_commits(lake: Lake, name: str, files: list[DataFile], replayed_days: list[str] | None, *, run_id: str,
                     fence_at_start: int, replace_all: bool = False, schema: pa.Schema | None = None,
                     partitioned: bool | None = None, keep_only: int | None | str = "current") -> list[dict]:
    """The commits :func:`commit_replays` with the same arguments is about to make to table
    ``name``, as a writer's intent names them before it commits (:func:`pitwatch.lake.runs.write_intent_record`,
    ``docs/verify.md``, "Intents"): ``{table, version, operation, actions_sha256, files}`` each —
    the version it will have (the writer holds the lake's lock and the table's fence, so nothing
    else commits in between), :func:`pitwatch.lake.chain.actions_sha256` of the files it adds and
    removes (and of the metadata of a creation or a column added: a commit of its own, before the
    data's), and the SHA-256 of every file it adds, as written.  Decided as
    :func:`commit_replays` decides (the same helpers); [] when it would commit nothing: a
    retried step that finds its own commit made, a fence that moved (:class:`StaleWriter` then)."""
    from pitwatch.lake import delta_log

    schema = schema if schema is not None else LAKE_TABLES[name]
    partitioned = (name in PARTITIONED) if partitioned is None else partitioned
    added = [f.path for f in sorted(files, key=lambda f: f.path)]
    hashes = [{"path": f.path, "sha256": f.sha256} for f in sorted(files, key=lambda f: f.path)]
    if not is_table(lake, name):
        if fence_at_start != 0:
            return []
        meta = {"columns": schema.names, "partitionColumns": ["gaming_day"] if partitioned else [],
                "configuration": table_properties(name)}
        return [{"table": name, "version": 0, "operation": "CREATE TABLE",
                 "actions_sha256": chain.actions_sha256(added, [], meta), "files": hashes}]
    snap = delta_log.snapshot(lake, name)
    now = snap.txns.get(APP_ID, 0) if snap is not None else 0
    if snap is None or now != fence_at_start:
        return []           # made already (a retried step), or another writer's: nothing to commit
    declared = snap.arrow_schema()
    out = []
    version = snap.version + 1
    plain_append = not (replayed_days or replace_all or keep_only != "current")
    if not (plain_append and declared is not None and set(schema.names) <= set(declared.names)):
        have = list(declared.names) if declared is not None else []
        missing = [n for n in schema.names if n not in set(have)]
        if missing:
            assert snap.metadata is not None    # a table's first commit carries its metaData
            conf = {str(k): str(v) for k, v in delta_log.map_items(snap.metadata.get("configuration")).items()}
            meta = {"columns": have + missing, "partitionColumns": list(snap.metadata.get("partitionColumns") or []),
                    "configuration": conf}
            out.append({"table": name, "version": version, "operation": "ADD COLUMN",
                        "actions_sha256": chain.actions_sha256([], [], meta), "files": []})
            version += 1
    removed = [path for path, _add in _replaced(lake, name, snap, replayed_days, replace_all, keep_only)]
    out.append({"table": name, "version": version, "operation": "WRITE",
                "actions_sha256": chain.actions_sha256(added, removed), "files": hashes})
    return out


def commit_digest(actions: list[dict]) -> str:
    """:func:`pitwatch.lake.chain.actions_sha256` of a commit as found in a log: what ``pitwatch verify``
    compares with the digest a writer's intent names (its ``metaData``: the column names its
    ``schemaString`` gives, its partition columns and configuration)."""
    meta = None
    for action in actions:
        m = action.get("metaData")
        if isinstance(m, dict):
            try:
                fields = json.loads(m.get("schemaString") or "{}").get("fields") or []
                columns = [f.get("name") for f in fields if isinstance(f, dict)]
            except (ValueError, AttributeError, TypeError):
                columns = ["(schemaString not readable)"]
            from pitwatch.lake import delta_log

            meta = {"columns": columns, "partitionColumns": list(m.get("partitionColumns") or []),
                    "configuration": delta_log.map_items(m.get("configuration"))}
    return chain.actions_sha256(added_paths(actions), removed_paths(actions), meta)


def _append(lake: Lake, name: str, version: int, files: list[DataFile], run_id: str, fence_at_start: int,
            partitioned: bool, stamp: int, extra: dict[str, str] | None = None) -> int:
    """Append ``files`` as commit ``version`` of a table, the commit file written here.

    Why not delta-rs: its Python API materialises every active file of the table to open or bring
    up to date a handle and again to commit (``without_files`` is ignored since 1.x), so an append
    to ``runs`` — one file per record, a watcher's every 30 s — cost more with every record (20 ms
    per update at 750 files, ~0.1 s to open at 50,000).  An append needs none of it: the actions
    are the ones delta-rs writes for the same transaction (commit info with the run id, the app
    transaction that is the fence, the add actions), and the file is put in place the way
    delta-rs puts it on a local disk — written under a temporary name, then hard-linked to its
    version's name, which fails if another writer took that version (:class:`StaleWriter`).
    The same on an object store (one conditional put: :func:`_put_commit`).  Schema changes and a
    replay's removals go through delta-rs (a compaction's removals
    do not: :func:`commit_compaction`)."""
    info = {"timestamp": stamp, "operation": "WRITE",     # the commit's moment, as delta-rs
            "operationParameters": {"mode": "Append"}, "clientVersion": f"pitwatch-{_pitwatch_version()}",
            **(extra or {}), RUN_ID_KEY: run_id}
    actions = [{"commitInfo": info}, {"txn": {"appId": APP_ID, "version": fence_at_start + 1, "lastUpdated": stamp}}]
    actions += [_add_action(f, partitioned, stamp, True) for f in sorted(files, key=lambda f: f.path)]
    return _put_commit(lake, name, version, actions)


def _add_action(f: DataFile, partitioned: bool, stamp: int, data_change: bool) -> dict:
    return {"add": {"path": quote(f.path, safe="/=:"), "partitionValues":
                    {"gaming_day": f.gaming_day} if partitioned else {}, "size": f.size,
                    "modificationTime": stamp, "dataChange": data_change, "stats": json.dumps({"numRecords": f.rows})}}


def _put_commit(lake: Lake, name: str, version: int, actions: list[dict]) -> int:
    """Put ``actions`` in place as commit ``version`` of a table, the way delta-rs does: on a local
    disk written under a temporary name, then hard-linked to its version's name; on an object
    store one conditional put (create only if absent, obstore).  Either fails if another writer
    took that version (:class:`StaleWriter`): a commit is made at the version its writer read,
    never moved past another's (a ``runs`` record moved past another would fork the chain)."""
    from pitwatch.lake import delta_log

    body = "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions).encode()
    if not lake.local:
        import obstore
        from obstore.exceptions import AlreadyExistsError

        try:
            obstore.put(object_store(lake.address), f"{name}/{LOG_FOLDER}/{delta_log.commit_name(version)}", body,
                        mode="create", use_multipart=False)
        except AlreadyExistsError:
            raise StaleWriter(f"table {name}: version {version} was committed by another writer meanwhile: "
                              "nothing of this run was committed to it") from None
        return version
    root = lake.root
    folder = f"{root}/{name}/{LOG_FOLDER}"
    temp = os.path.join(folder, f"_commit_{uuid.uuid4()}.json.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, DATA_FILE_MODE)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temp, os.path.join(folder, delta_log.commit_name(version)))
    except FileExistsError:
        raise StaleWriter(f"table {name}: version {version} was committed by another writer meanwhile: nothing of "
                          "this run was committed to it") from None
    finally:
        os.unlink(temp)
    set_file_mode(lake.fs, os.path.join(folder, delta_log.commit_name(version)), DATA_FILE_MODE)
    return version


COMPACTION = "pitwatch compaction"      # the commit info's operation of a compaction commit


def commit_compaction(lake: Lake, name: str, compacted: DataFile, replaced: list[str], *, run_id: str,
                      fence_at_start: int) -> int:
    """Commit, in one transaction of a partitioned table, the file ``compacted`` in place of
    the files ``replaced`` (paths relative to the table's folder, every one in the table now), which
    hold the same rows (:mod:`pitwatch.live.alerts_table`); return the table's new version.

    A normal Delta add and remove (``dataChange`` false on both, as Delta's own OPTIMIZE writes
    them: no row changed), the operation :data:`COMPACTION`, the fence and the run id in the
    commit info as every pitwatch commit; put in place like :func:`_append`'s.  A retried commit
    finds its own run id at ``fence + 1`` and does nothing.  :class:`StaleWriter` when the fence
    moved or a file to replace is no longer in the table: nothing committed."""
    from pitwatch.lake import delta_log

    snap = delta_log.snapshot(lake, name)
    now = snap.txns.get(APP_ID, 0) if snap is not None else 0
    if snap is not None and now == fence_at_start + 1 and _last_writer(lake, name, snap.version) == run_id:
        return snap.version
    if snap is None or now != fence_at_start:
        raise StaleWriter(f"table {name} was committed by another writer since the compaction read it "
                          f"(fence {fence_at_start}, now {now}): nothing committed")
    gone = sorted(set(replaced) - set(snap.adds))
    if gone or not replaced:
        raise StaleWriter(f"table {name}: {len(gone)} of the files to replace are no longer in the table "
                          f"(e.g. {gone[0] if gone else 'none given'}): nothing committed")
    stamp = now_ms()
    info = {"timestamp": stamp, "operation": COMPACTION,
            "operationParameters": {"gaming_day": str(compacted.gaming_day), "filesReplaced": str(len(replaced))},
            "clientVersion": f"pitwatch-{_pitwatch_version()}", RUN_ID_KEY: run_id}
    actions = [{"commitInfo": info}, {"txn": {"appId": APP_ID, "version": fence_at_start + 1, "lastUpdated": stamp}}]
    for path in sorted(replaced):
        add = snap.adds[path]
        actions.append({"remove": {"path": add["path"], "deletionTimestamp": stamp, "dataChange": False,
                                   "extendedFileMetadata": True, "partitionValues": add.get("partitionValues") or {},
                                   "size": add.get("size")}})
    actions.append(_add_action(compacted, True, stamp, False))
    return _put_commit(lake, name, snap.version + 1, actions)


SET_PROPERTIES = "SET TBLPROPERTIES"     # the commit info's operation of a change of a table's properties


def set_table_properties(lake: Lake, name: str, properties: dict[str, str], *, run_id: str,
                         fence_at_start: int) -> int | None:
    """Commit, to a table, its metadata with ``properties`` set in its configuration (one
    commit: the commit info, operation :data:`SET_PROPERTIES`, with the run id; the fence; the
    ``metaData`` action, everything else of it as it was); the new version, or None when the table
    already has them.  Written here as :func:`_append` writes an append (delta-rs's ``alter``
    materialises the whole table).  The writer's record must say so: ``pitwatch verify`` accepts
    a change of a table's properties only as ``docs/verify.md`` ("Tombstones and the table's
    retention") says."""
    snap = delta_log.snapshot(lake, name)
    if snap is None or snap.metadata is None:
        raise StaleWriter(f"table {name} has no metadata to change")
    conf = {str(k): str(v) for k, v in delta_log.map_items(snap.metadata.get("configuration")).items()}
    if all(conf.get(k) == v for k, v in properties.items()):
        return None
    now = snap.txns.get(APP_ID, 0)
    if now != fence_at_start:
        raise StaleWriter(f"table {name} was committed by another writer since its properties were read "
                          f"(fence {fence_at_start}, now {now}): nothing committed")
    meta = snap.metadata
    fmt = meta.get("format") or {}
    new = {"id": meta.get("id"), **({"name": meta["name"]} if meta.get("name") is not None else {}),
           **({"description": meta["description"]} if meta.get("description") is not None else {}),
           "format": {"provider": fmt.get("provider") or "parquet",
                      "options": {str(k): str(v) for k, v in delta_log.map_items(fmt.get("options")).items()}},
           "schemaString": meta.get("schemaString"), "partitionColumns": list(meta.get("partitionColumns") or []),
           "configuration": {**conf, **properties},
           **({"createdTime": meta["createdTime"]} if meta.get("createdTime") is not None else {})}
    stamp = now_ms()
    info = {"timestamp": stamp, "operation": SET_PROPERTIES,
            "operationParameters": {"properties": json.dumps(properties, sort_keys=True)},
            "clientVersion": f"pitwatch-{_pitwatch_version()}", RUN_ID_KEY: run_id}
    actions = [{"commitInfo": info}, {"txn": {"appId": APP_ID, "version": fence_at_start + 1, "lastUpdated": stamp}},
               {"metaData": new}]
    return _put_commit(lake, name, snap.version + 1, actions)


def _pitwatch_version() -> str:
    from pitwatch import __version__

    return __version__


_HANDLES: dict[tuple[str, str], DeltaTable] = {}


def writer_handle(lake: Lake, name: str) -> DeltaTable:
    """The ``DeltaTable`` this process commits ``name`` through, kept open and brought up to date
    with ``update_incremental`` (it reads only the commits since its last use); opened again when
    that fails (its log moved to the archive meanwhile)."""
    from deltalake import DeltaTable

    key = (lake.root, name)
    table = _HANDLES.get(key)
    if table is not None:
        try:
            table.update_incremental()
            return table
        except Exception:                               # noqa: BLE001 - any failure: open it afresh
            _HANDLES.pop(key, None)
    table = DeltaTable(table_uri(lake, name), storage_options=storage_options(lake))
    if not _HANDLES:
        # the kept delta-rs handles are dropped before the interpreter finalises, not during it (the
        # abort at exit that was seen had another cause, fixed where it was: chain.parquet_rows);
        # registered when a handle is first kept (importing the module does nothing), once
        atexit.unregister(forget_handles)
        atexit.register(forget_handles)
    _HANDLES[key] = table
    return table


def forget_handles() -> None:
    _HANDLES.clear()


def _last_writer(lake: Lake, name: str, version: int) -> str | None:
    from pitwatch.lake import delta_log

    try:
        return commit_writer(delta_log.parse_commit(delta_log.read_log_file(lake, name, delta_log.commit_name(version))))
    except (FileNotFoundError, ValueError):
        return None


def set_log_modes(lake: Lake, name: str) -> None:
    """The log's files get the data files' mode whatever the umask (delta-rs writes them with the
    umask's): readable by all, written by the lake's owner only (``docs/lake.md``)."""
    fs, root = lake.fs, lake.root
    if not isinstance(fs, pafs.LocalFileSystem):
        return
    folder = f"{root}/{name}/{LOG_FOLDER}"
    for entry in os.scandir(folder):
        if entry.is_file() and entry.stat().st_mode & 0o777 != DATA_FILE_MODE:
            set_file_mode(fs, entry.path, DATA_FILE_MODE)


def add_missing_columns(table, schema: pa.Schema, run_id: str | None = None) -> list[str]:
    """Add to the Delta table the columns of ``schema`` it lacks (schema evolution, a commit of its
    own, carrying ``run_id``); their names."""
    from deltalake import CommitProperties, Field

    have = set(table.schema().to_arrow().names)
    missing = [f for f in schema if f.name not in have]
    if missing:
        props = CommitProperties(custom_metadata={RUN_ID_KEY: run_id}) if run_id else None
        table.alter.add_columns([Field.from_arrow(f.with_nullable(True)) for f in missing],
                                commit_properties=props, post_commithook_properties=post_commit())
        table.update_incremental()
    return [f.name for f in missing]


def committed_paths(lake: Lake, name: str) -> set[str]:
    """Every data file any commit of the table's log (or its archive) added (relative paths): what
    is not in here is no part of the table in any version (a killed run's leftover).  Reads the
    table's whole history: :func:`committed_among` asks it only about the files the snapshot at the
    head cannot place."""
    from pitwatch.lake import delta_log

    paths = set()
    for version in delta_log.history_versions(lake, name):
        for action in delta_log.parse_commit(delta_log.read_log_file(lake, name, delta_log.commit_name(version))):
            if "add" in action:
                paths.add(unquote_path(action["add"]["path"]))
    return paths


def committed_among(lake: Lake, name: str, paths) -> set[str]:
    """Which of ``paths`` (relative to the table's folder) some commit of the table added: exactly
    ``set(paths) & committed_paths(lake, name)``, without reading the history in the usual case.

    A file a commit added is, at the head, either still in the table (the snapshot's adds: the
    chained checkpoint plus the commits after it) or removed since — by a commit after the
    checkpoint, or before it with its tombstone still in the checkpoint (delta-rs keeps a remove
    there for the table's ``deletedFileRetentionDuration``: 100 years on pitwatch's tables, a day on
    ``alerts``).  Those are read from the snapshot at the head (:func:`pitwatch.lake.delta_log.snapshot`),
    the same cost on a lake of any age.  A file none of these names is a killed run's leftover — or
    a file removed long ago that is still on disk (vacuum not run, a legal hold keeping it): only
    then is the whole history read (:func:`committed_paths`) to tell the two apart, so a kept file
    is never taken for a leftover and deleted.  Decision (``docs/lake.md``, "A log that ages well"):
    the answer stays exact; the history is read on the rare night that has such a file, not every
    night."""
    from pitwatch.lake import delta_log

    wanted = set(paths)
    if not wanted:
        return set()
    snap = delta_log.snapshot(lake, name)
    placed = wanted & (set(snap.adds) | set(snap.removed)) if snap is not None else set()
    rest = wanted - placed
    if rest:
        placed |= rest & committed_paths(lake, name)
    return placed


def unquote_path(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path)


def leftover_files(lake: Lake, names) -> list[str]:
    """Data files under the tables' folders that no commit added: what a killed run left behind.
    (The caller of ``runs`` holds :func:`pitwatch.lake.runs.runs_append_lock`: the watcher writes a
    record file there before committing it, outside the lake's lock.)"""
    fs, root = lake.fs, lake.root
    out: list[str] = []
    for name in names:
        folder = f"{root}/{name}"
        if fs.get_file_info(folder).type != pafs.FileType.Directory:
            continue
        on_disk = data_files_on_disk(fs, folder)
        known = committed_among(lake, name, on_disk)
        out.extend(path for rel, path in on_disk.items() if rel not in known)
    return sorted(out)


def data_files_on_disk(fs: pafs.FileSystem, folder: str) -> dict[str, str]:
    """Every file under a table's folder but in its log and the log's archive ({path relative to the
    folder: path}), which are not walked: they hold every commit of the table's history (the
    archive grows by one file a commit, whatever the table holds now).  A local lake is walked by
    name (``os.scandir``: no stat, no object per file), another file system a folder at a time."""
    out: dict[str, str] = {}
    local_fs = isinstance(fs, pafs.LocalFileSystem)
    pending = [("", folder)]
    while pending:
        rel, path = pending.pop()
        if local_fs:
            with os.scandir(path) as entries:
                found = [(e.name, e.path, e.is_dir(follow_symlinks=False)) for e in entries]
        else:
            found = [(i.base_name, i.path, i.type == pafs.FileType.Directory)
                     for i in fs.get_file_info(pafs.FileSelector(path))]
        for base, full, is_dir in found:
            if is_dir:
                if not (rel == "" and base in (LOG_FOLDER, ARCHIVE_FOLDER)):
                    pending.append((f"{rel}{base}/", full))
            else:
                out[rel + base] = full
    return out


def remove_leftovers(lake: Lake, names) -> list[str]:
    fs = lake.fs
    gone = leftover_files(lake, names)
    for path in gone:
        fs.delete_file(path)
    return gone


def local(lake: Lake) -> bool:
    return lake.local


def table_names_on_disk(lake: Lake) -> list[str]:
    root = lake.root
    return sorted(n for n in LAKE_TABLES if os.path.isdir(f"{root}/{n}/{LOG_FOLDER}"))


# The log, read as files (pitwatch.lake.runs chains commit files, pitwatch.lake.verify re-derives tables).
COMMIT_FILE_DIGITS = 20


def tables_on_disk(lake: Lake) -> list[str]:
    """Every folder of the lake that holds a Delta log (the private ``state`` table included), sorted."""
    fs, root = lake.fs, lake.root
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return []
    return sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(root))
                  if i.type == pafs.FileType.Directory
                  and fs.get_file_info(f"{i.path}/{LOG_FOLDER}").type == pafs.FileType.Directory)


def commit_path(lake: Lake, name: str, version: int) -> str:
    """The commit file of ``version`` of table ``name`` (``_delta_log/000…N.json``)."""
    root = lake.root
    return f"{root}/{name}/{LOG_FOLDER}/{version:0{COMMIT_FILE_DIGITS}d}.json"


def log_versions(lake: Lake, name: str) -> list[int]:
    """The versions whose commit file the table keeps (in its log or, once old, its archive), sorted."""
    from pitwatch.lake import delta_log

    return delta_log.history_versions(lake, name)


def read_commit(lake: Lake, name: str, version: int) -> tuple[bytes, list[dict]]:
    """The bytes of a commit file (from the log or the archive) and its actions (one JSON object a
    line).  Raises ValueError when a line is not a JSON object."""
    from pitwatch.lake import delta_log

    data = delta_log.read_log_file(lake, name, delta_log.commit_name(version))
    return data, delta_log.parse_commit(data, name, version)


def commit_writer(actions: list[dict]) -> str | None:
    """The run id a commit's commit info names (:data:`RUN_ID_KEY`), or None."""
    for action in actions:
        info = action.get("commitInfo")
        if isinstance(info, dict) and isinstance(info.get(RUN_ID_KEY), str):
            return info[RUN_ID_KEY]
    return None


def added_paths(actions: list[dict]) -> list[str]:
    return [unquote_path(a["add"]["path"]) for a in actions if isinstance(a.get("add"), dict)]


def removed_paths(actions: list[dict]) -> list[str]:
    return [unquote_path(a["remove"]["path"]) for a in actions if isinstance(a.get("remove"), dict)]


def commit_operation(actions: list[dict]) -> str | None:
    for action in actions:
        info = action.get("commitInfo")
        if isinstance(info, dict):
            return info.get("operation")
    return None


# The checkpoints every writer writes and the archive of the old log (pitwatch.lake.delta_log reads them)



def checkpoint_if_due(lake: Lake, name: str, chained: dict):
    """After a commit: write a checkpoint of table ``name`` at its version now when that version is :data:`CHECKPOINT_EVERY` or more past the newest chained one (``chained``: the
    chain head's), and return it for the writer's record; then move what the previous chained
    checkpoint makes old to the archive.  Before writing, delta-rs's files are compared with the
    snapshot read from the chain: they differ only when a checkpoint or commit nobody chained is
    in the folder, and then nothing is written (:class:`LogError`: verify names it)."""
    from pitwatch.lake.delta_log import (
        CHECKPOINT_EVERY,
        CHECKPOINT_FILE,
        Checkpoint,
        LogError,
        listed,
        log_versions,
        read_log_file,
        snapshot,
    )

    # the version now from the log folder's names (kept short by the archive), not a snapshot: a
    # commit that checkpoints nothing (99 in 100) reads no checkpoint (runs' names every record)
    versions = log_versions(lake, name)
    if not versions:
        return None
    version = versions[-1]
    have = chained.get(name)
    if have is not None and version - have.version < CHECKPOINT_EVERY:
        return None
    if have is None and version + 1 < CHECKPOINT_EVERY:
        return None
    table = writer_handle(lake, name)
    if table.version() != version:
        return None                 # committed by another writer in between: checkpointed by the next one
    snap = snapshot(lake, name, version, chained)
    theirs = sorted(unquote_path(p) for p in pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist())
    if snap is None or theirs != snap.paths():
        raise LogError(f"{name}: delta-rs reads files at version {version} other than the chained log gives: a "
                       f"checkpoint or commit in {name}/{LOG_FOLDER} was put there outside pitwatch; no checkpoint "
                       "written (pitwatch verify names it)")
    table.create_checkpoint()
    parts = []
    for base in sorted(listed(lake, name)):
        m = CHECKPOINT_FILE.match(base)
        if m and int(m.group(1)) == version:
            data = read_log_file(lake, name, base)
            parts.append((base, len(data), chain.bytes_sha256(data)))
    if not parts:
        return None
    set_log_modes(lake, name)
    if have is not None:
        archive_old_log(lake, name, have.version)
    return Checkpoint(name, version, tuple(parts))


def archive_old_log(lake: Lake, name: str, keep_from: int) -> int:
    """Move the log's JSON commits older than ``keep_from`` (a chained checkpoint's version) and its
    checkpoints older than that to ``TABLE/_log_archive/``; the number of files moved.  A rename on
    a local disk: the bytes, and so their SHA-256 in the chain, are unchanged."""
    from pitwatch.lake.delta_log import ARCHIVE_FOLDER, CHECKPOINT_FILE, COMMIT_FILE, listed

    fs, root = lake.fs, lake.root
    log, archive = f"{root}/{name}/{LOG_FOLDER}", f"{root}/{name}/{ARCHIVE_FOLDER}"
    moved = 0
    for base in listed(lake, name):
        m = COMMIT_FILE.match(base) or CHECKPOINT_FILE.match(base)
        if not m or int(m.group(1)) >= keep_from:
            continue
        if not moved:
            fs.create_dir(archive, recursive=True)
        fs.move(f"{log}/{base}", f"{archive}/{base}")
        moved += 1
    return moved
