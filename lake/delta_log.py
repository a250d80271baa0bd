"""The Delta log as pitwatch keeps it and reads it: checkpoints that are evidence, an archive of
the log's old commits, and snapshots read from a chained checkpoint (``docs/lake.md``, "A log
that ages well").

**Why.**  A Delta table's state is the replay of its log.  Without checkpoints every open reads
every JSON commit since version 0 (measured with delta-rs 1.6: 6 ms at 10 commits, 1.28 s at
1,289), and the watcher adds two commits a minute.  With checkpoints alone delta-rs still lists
the whole ``_delta_log`` folder on every open (42 ms at 50,000 commits).  So:

* **Checkpoints** (:func:`pitwatch.lake.delta.checkpoint_if_due`): every writer (run, watch, vacuum, migrate), after
  a commit, writes a Delta checkpoint of that table once its version is
  :data:`CHECKPOINT_EVERY` or more past the last chained one, and records it — the checkpoint's
  version, its part files and their SHA-256 — in its chained ``runs`` record (column
  ``checkpoints``: the newest chained checkpoint of *every* table as of that record, carried
  forward from the record before, so a reader needs the chain's head only).  A checkpoint of
  ``runs`` itself is written after the record's own commit and chained by the next record.
* **The archive** (:func:`pitwatch.lake.delta.archive_old_log`): once a newer checkpoint is chained, the JSON commits
  and checkpoints older than the one before it move (a rename, the bytes unchanged) to
  ``TABLE/_log_archive/``.  The log folder then holds at most about 2 × :data:`CHECKPOINT_EVERY`
  commits and two checkpoints, whatever the table's age; ``pitwatch verify`` reads the archive and
  the log as one history, and every archived file is still chained by the record that made it.
  Other Delta readers (delta-rs, DuckDB's ``delta``, Spark) read the table at any version from the
  older kept checkpoint on; earlier versions only through pitwatch (``sql --as-of``).
* **Snapshots** (:func:`snapshot`): pitwatch's readers never let delta-rs pick a checkpoint (it
  takes the newest one in the folder, whoever wrote it, and cannot be told to skip one).  They
  start from the newest *chained* checkpoint at or below the version they read, check each part's
  SHA-256 against the chain as they read its bytes (a mismatch is
  :class:`LogError`, exit 5), and apply the JSON commits after it.  A
  checkpoint nobody chained is simply not read.  One snapshot per table is kept per process and
  brought forward by the commits after it (a watcher's commit reads nothing it already read).

Writing — the commits, the checkpoints and the archive — is :mod:`pitwatch.lake.delta`'s; before a checkpoint is written
the writer compares delta-rs's view of the files with the snapshot's, so a forged checkpoint can
never be copied into a chained one.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
import time
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs

from pitwatch.lake import Lake, chain

LOG_FOLDER = "_delta_log"
ARCHIVE_FOLDER = "_log_archive"
CHECKPOINT_EVERY = 100
COMMIT_FILE_DIGITS = 20
CHECKPOINT_FILE = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d+)\.(\d+))?\.parquet$")
COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


RETENTION_KEY = "delta.deletedFileRetentionDuration"
_INTERVAL = re.compile(r"^\s*interval\s+(\d+)\s+(millisecond|second|minute|hour|day|week)s?\s*$", re.I)
_UNIT_MS = {"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000,
            "week": 7 * 86_400_000}
DEFAULT_TOMBSTONE_RETENTION_MS = 7 * 86_400_000     # Delta's, when a table names none


def now_ms() -> int:
    """The wall clock, in milliseconds since the epoch, of every time pitwatch writes into a Delta
    log (:mod:`pitwatch.lake.delta`: a commit's ``timestamp``, an add's ``modificationTime``, a remove's
    ``deletionTimestamp``, an app transaction's ``lastUpdated``) and of the removes a kept snapshot
    forgets (:meth:`Snapshot.expire`).  One function, so that a test can write a lake as it was
    written days ago (a checkpoint, written by delta-rs, reads the real clock)."""
    return int(time.time() * 1000)


def retention_ms(configuration: dict | None) -> int | None:
    """How long a checkpoint keeps a table's removes (``delta.deletedFileRetentionDuration`` of its
    configuration, ``interval N unit``), in ms: Delta's week when it names none, None when it names
    one pitwatch cannot read."""
    value = map_items(configuration).get(RETENTION_KEY)
    if value is None:
        return DEFAULT_TOMBSTONE_RETENTION_MS
    m = _INTERVAL.match(str(value))
    return int(m.group(1)) * _UNIT_MS[m.group(2).lower()] if m else None


class LogError(ValueError):
    """The log cannot be read as pitwatch wrote it (a chained checkpoint changed, a commit not JSON)."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A checkpoint as the chain records it: the table's version and each part file with its size
    and SHA-256 (the file names are those in ``_delta_log``; an archived part keeps its name)."""

    table: str
    version: int
    parts: tuple[tuple[str, int, str], ...]      # (file name, size, sha256)

    def to_dict(self) -> dict:
        return {"version": self.version, "parts": [{"file": f, "size": s, "sha256": h} for f, s, h in self.parts]}

    @classmethod
    def from_dict(cls, table: str, value: dict) -> Checkpoint:
        return cls(table, int(value["version"]),
                   tuple((str(p["file"]), int(p["size"]), str(p["sha256"])) for p in value["parts"]))


def parse_checkpoints(text: str | None) -> dict[str, Checkpoint]:
    """The ``checkpoints`` column of a runs record (JSON ``{table: {version, parts}}``) as objects;
    a record written before the column existed (null) names none."""
    if not text:
        return {}
    try:
        value = json.loads(text)
        return {t: Checkpoint.from_dict(t, v) for t, v in value.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise LogError("a runs record's checkpoints are not what pitwatch writes: the lake is not intact "
                       "(pitwatch verify)") from None


def dump_checkpoints(checkpoints: dict[str, Checkpoint]) -> str | None:
    if not checkpoints:
        return None
    return json.dumps({t: c.to_dict() for t, c in sorted(checkpoints.items())}, sort_keys=True)


# ---------------------------------------------------------------- files of the log


def _folders(lake: Lake, name: str) -> tuple[pafs.FileSystem, str, str]:
    fs, root = lake.fs, lake.root
    return fs, f"{root}/{name}/{LOG_FOLDER}", f"{root}/{name}/{ARCHIVE_FOLDER}"


def commit_name(version: int) -> str:
    return f"{version:0{COMMIT_FILE_DIGITS}d}.json"


def read_log_file(lake: Lake, name: str, file_name: str) -> bytes:
    """The bytes of a log file (a commit or a checkpoint part), from the log or, once moved, the
    archive.  FileNotFoundError when neither has it."""
    fs, log, archive = _folders(lake, name)
    for folder in (log, archive):
        try:
            with fs.open_input_stream(f"{folder}/{file_name}") as f:
                return f.read()
        except FileNotFoundError:
            continue
        except OSError as exc:
            if "No such file" not in str(exc) and "not found" not in str(exc).lower():
                raise
    raise FileNotFoundError(f"{name}/{LOG_FOLDER}/{file_name}")


def commit_exists(lake: Lake, name: str, version: int) -> bool:
    fs, log, archive = _folders(lake, name)
    file = commit_name(version)
    return any(fs.get_file_info(f"{folder}/{file}").type == pafs.FileType.File for folder in (log, archive))


def parse_commit(data: bytes, name: str = "?", version: int = -1) -> list[dict]:
    """A commit file's actions (one JSON object a line).  Raises ValueError when a line is not a
    JSON object or an add/remove names no path."""
    actions = []
    for line in data.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if not isinstance(action, dict):
            raise ValueError(f"a line of commit {version} of {name} is not a JSON object")
        for kind in ("add", "remove"):
            if kind in action and not (isinstance(action[kind], dict) and isinstance(action[kind].get("path"), str)):
                raise ValueError(f"an {kind} action of commit {version} of {name} names no path")
        actions.append(action)
    return actions


def listed(lake: Lake, name: str, folder: str = LOG_FOLDER) -> list[str]:
    """The names of the files in the table's log (or archive) folder."""
    fs, root = lake.fs, lake.root
    path = f"{root}/{name}/{folder}"
    if fs.get_file_info(path).type != pafs.FileType.Directory:
        return []
    return [i.base_name for i in fs.get_file_info(pafs.FileSelector(path)) if i.type == pafs.FileType.File]


def history_versions(lake: Lake, name: str) -> list[int]:
    """Every version whose JSON commit the table keeps, in the log or the archive, sorted."""
    out: set[int] = set()
    for folder in (LOG_FOLDER, ARCHIVE_FOLDER):
        out.update(int(m.group(1)) for b in listed(lake, name, folder) if (m := COMMIT_FILE.match(b)))
    return sorted(out)


def log_versions(lake: Lake, name: str) -> list[int]:
    """The versions whose JSON commit is in the log folder itself (not archived), sorted."""
    return sorted(int(m.group(1)) for b in listed(lake, name) if (m := COMMIT_FILE.match(b)))


# ---------------------------------------------------------------- snapshots


@dataclasses.dataclass
class Snapshot:
    """A table at one version: its data files' add actions (by path, URL-decoded), its metadata,
    protocol and app transactions, and the paths it knows were removed with their
    ``deletionTimestamp`` (``removed``: the chained checkpoint's tombstones — delta-rs keeps a remove
    in a checkpoint while it is younger than the table's ``deletedFileRetentionDuration``: 100 years
    on pitwatch's tables, a day on ``alerts`` — and every remove after it; a kept snapshot drops
    those a checkpoint written now would drop, :meth:`expire`)."""

    name: str
    version: int = -1
    adds: dict[str, dict] = dataclasses.field(default_factory=dict)
    metadata: dict | None = None
    protocol: dict | None = None
    txns: dict[str, int] = dataclasses.field(default_factory=dict)
    removed: dict[str, int] = dataclasses.field(default_factory=dict)   # tombstones (path: deletionTimestamp):
    #                                                         the checkpoint's and the commits' since
    last_commit_sha256: str | None = None     # of the commit file of ``version``: a kept snapshot is checked by it

    def apply(self, version: int, actions: list[dict]) -> None:
        for action in actions:
            if isinstance(action.get("remove"), dict):
                path = unquote(action["remove"]["path"])
                self.adds.pop(path, None)
                self.removed[path] = removal_stamp(action["remove"].get("deletionTimestamp"))
            elif isinstance(action.get("add"), dict):
                self.adds[unquote(action["add"]["path"])] = action["add"]
            elif isinstance(action.get("metaData"), dict):
                self.metadata = action["metaData"]
            elif isinstance(action.get("protocol"), dict):
                self.protocol = action["protocol"]
            elif isinstance(action.get("txn"), dict):
                txn = action["txn"]
                self.txns[str(txn.get("appId"))] = int(txn.get("version", 0))
        self.version = version

    def copy(self) -> Snapshot:
        return Snapshot(self.name, self.version, dict(self.adds), self.metadata, self.protocol, dict(self.txns),
                        dict(self.removed), self.last_commit_sha256)

    def expire(self, now_ms: int) -> None:
        """Forget the removes a checkpoint written at ``now_ms`` would drop (older than the table's
        ``deletedFileRetentionDuration``): what a kept snapshot of ``alerts`` holds stays a day of
        removes however long its process runs.  Nothing on a table that keeps them 100 years."""
        keep = retention_ms((self.metadata or {}).get("configuration") if self.metadata else None)
        if keep is None or not self.removed or keep > now_ms:
            return
        cutoff = now_ms - keep
        if min(self.removed.values()) > cutoff:
            return
        self.removed = {p: t for p, t in self.removed.items() if t > cutoff}

    def paths(self) -> list[str]:
        return sorted(self.adds)

    def arrow_schema(self) -> pa.Schema | None:
        """The table's columns as its last metadata action declares them."""
        if not self.metadata or not self.metadata.get("schemaString"):
            return None
        from deltalake import Schema

        return pa.schema(Schema.from_json(self.metadata["schemaString"]).to_arrow())


def removal_stamp(value) -> int:
    """A remove's ``deletionTimestamp`` (ms) as an int; 0 when it has none (Delta's reading)."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def map_items(value) -> dict:
    """A Parquet map read by pyarrow (a list of pairs) or a JSON object, as a dict."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return dict(value)


def read_checkpoint(lake: Lake, checkpoint: Checkpoint) -> Snapshot:
    """The snapshot a chained checkpoint holds, each part checked against the SHA-256 the chain
    recorded as its bytes are read (:class:`LogError` on a mismatch or a missing part)."""
    snap = Snapshot(checkpoint.table)
    for file, _size, sha in checkpoint.parts:
        try:
            data = read_log_file(lake, checkpoint.table, file)
        except FileNotFoundError:
            raise LogError(f"{checkpoint.table}/{LOG_FOLDER}/{file}: the chained checkpoint of version "
                           f"{checkpoint.version} is gone: the lake is not intact (pitwatch verify)") from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha:
            raise LogError(f"{checkpoint.table}/{LOG_FOLDER}/{file}: its SHA-256 is {actual}, the chain recorded "
                           f"{sha}: the checkpoint was changed, the lake is not intact (pitwatch verify)")
        for row in chain.parquet_rows(data):       # on this thread (chain.parquet_rows: the abort at exit)
            if row.get("add"):
                add = dict(row["add"])
                add["partitionValues"] = map_items(add.get("partitionValues"))
                snap.adds[unquote(add["path"])] = add
            elif row.get("metaData"):
                meta = dict(row["metaData"])
                meta["configuration"] = map_items(meta.get("configuration"))
                snap.metadata = meta
            elif row.get("remove"):
                snap.removed[unquote(row["remove"]["path"])] = removal_stamp(row["remove"].get("deletionTimestamp"))
            elif row.get("protocol"):
                snap.protocol = row["protocol"]
            elif row.get("txn"):
                snap.txns[str(row["txn"]["appId"])] = int(row["txn"]["version"])
    snap.version = checkpoint.version
    return snap


_CACHE: dict[tuple[str, str], Snapshot] = {}
_CACHE_LOCK = threading.Lock()


def forget(lake: Lake | None = None) -> None:
    """Drop the snapshots this process keeps (of one lake, or all): the next read starts again from
    the chain's checkpoint (tests that rewrite a lake's files behind pitwatch's back)."""
    with _CACHE_LOCK:
        for key in [k for k in _CACHE if lake is None or k[0] == lake.root]:
            del _CACHE[key]


def snapshot(lake: Lake, name: str, version: int | None = None,
             checkpoints: dict[str, Checkpoint] | None = None) -> Snapshot | None:
    """Table ``name`` at ``version`` (None: its latest), or None when the table has no commit then.

    Starts from the snapshot this process already holds when it is at or before ``version``, else
    from the newest chained checkpoint at or below it (``checkpoints``: a record's; None: the
    chain head's, :func:`head_checkpoints`), else from version 0; then applies
    the commits after it, from the log or the archive.  The latest version is the last commit
    found in order (a commit file appears whole: delta-rs writes it by a put-if-absent rename)."""
    key = (lake.root, name)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        cached = cached.copy() if cached is not None else None
    if cached is not None and not _still_there(lake, cached):
        cached = None
        forget(lake)
    start = cached if cached is not None and (version is None or cached.version <= version) else None
    if start is None:
        if checkpoints is None:
            checkpoints = head_checkpoints(lake)
        cp = checkpoints.get(name)
        start = read_checkpoint(lake, cp) if cp is not None and (version is None or cp.version <= version) \
            else Snapshot(name)
    snap = start
    while version is None or snap.version < version:
        nxt = snap.version + 1
        try:
            data = read_log_file(lake, name, commit_name(nxt))
        except FileNotFoundError:
            if version is not None:
                raise LogError(f"{name}: the log has no commit {nxt} (reading version {version}): the lake is "
                               "not intact (pitwatch verify)") from None
            break
        try:
            snap.apply(nxt, parse_commit(data, name, nxt))
            snap.last_commit_sha256 = hashlib.sha256(data).hexdigest()
        except (ValueError, UnicodeDecodeError) as exc:
            raise LogError(f"{name}/{LOG_FOLDER}/{commit_name(nxt)}: not a Delta commit ({exc}): the lake is "
                           "not intact (pitwatch verify)") from None
    if snap.version < 0:
        return None
    if version is None:
        snap.expire(now_ms())
    with _CACHE_LOCK:
        have = _CACHE.get(key)
        if have is None or have.version <= snap.version:
            _CACHE[key] = snap.copy()
    return snap


RUNS = "runs"
CHECKPOINTS_COLUMN = "checkpoints"


def head_checkpoints(lake: Lake) -> dict[str, Checkpoint]:
    """The chained checkpoints the chain's head names (its ``runs`` record's ``checkpoints``): the
    last commit of ``runs`` adds that record's one file.  {} when there is no record, or the head
    predates checkpoints.  (:func:`pitwatch.lake.runs.runs_head` reads the whole head; this module
    reads only what it needs, below ``runs`` in the import order.)"""
    versions = log_versions(lake, RUNS) or history_versions(lake, RUNS)
    if not versions:
        return {}
    adds = [a["add"] for a in parse_commit(read_log_file(lake, RUNS, commit_name(versions[-1])), RUNS, versions[-1])
            if isinstance(a.get("add"), dict)]
    if len(adds) != 1:
        raise LogError(f"runs commit {versions[-1]} adds {len(adds)} files, not one record: the lake is not intact "
                       "(pitwatch verify)")
    fs, root = lake.fs, lake.root
    rows = chain.parquet_rows(chain.read_whole(fs, f"{root}/{RUNS}/{unquote(adds[0]['path'])}"))
    return parse_checkpoints(rows[0].get(CHECKPOINTS_COLUMN)) if len(rows) == 1 else {}


def _still_there(lake: Lake, snap: Snapshot) -> bool:
    """A kept snapshot still describes the table on disk: its last commit file has the bytes it read
    (a lake removed and made again at the same place, in one process, has other ones)."""
    if snap.last_commit_sha256 is None:
        return False
    try:
        data = read_log_file(lake, snap.name, commit_name(snap.version))
    except FileNotFoundError:
        return False
    return hashlib.sha256(data).hexdigest() == snap.last_commit_sha256
