"""``pitwatch verify``: does the lake hold exactly what pitwatch's writers put in it?

Everything is recomputed from the bytes on disk, nothing is taken from Delta's own state
(``docs/verify.md`` has the rules, step by step, so they can be re-checked without pitwatch):

1. **The runs chain** (:mod:`pitwatch.lake.chain`): each commit of ``runs`` adds one file holding one
   record; every record hashes to the hash it carries and links the record before it, that
   record's file and the commit that added it.
2. **Every other table's log**, replayed from its JSON commit files (0, 1, … with no gap): each
   commit is one a record names, with the same SHA-256 and the same files at that version; a
   checkpoint file is re-derived from the JSON commits and compared, never trusted.
3. **Every data file** any commit added (the current version and the retained history): the
   SHA-256 its record names.  A file that is gone is **retention**, not tampering, exactly when a
   chained ``pitwatch vacuum`` record (command ``vacuum``, :mod:`pitwatch.lake.vacuum`) lists it as
   removed, with the SHA-256 its run recorded, and it had left the table at or before the version
   that vacuum planned against (or a recorded Delta ``VACUUM`` commit followed its removal);
   verify counts them and says the latest gaming day they held.  A file gone that no vacuum
   removed stays ``removed``.
4. **Nothing else**: a file in a table's folder no commit names, a file in the lake's folder that
   pitwatch does not write.

**Leftovers of an interrupted run are not tampering**, and are reported apart: a ``running``
record with no end, the commits of a run whose last record is not ``succeeded`` (at the end of a
log, or undone by the next run's roll-back: a ``RESTORE`` to the last recorded state), files
that carry a recorded run's id and that no commit names, a temporary commit file, ``_staging/``.
A commit of such a run is its leftover only when the run's chained intent names it (table,
version, actions SHA-256: :func:`pitwatch.lake.runs.write_intent_record`), its files with the
SHA-256 the intent names; any other is tampering whatever run its commit info names — a run of a
pitwatch before intents keeps the old leniency up to a later commit of the table
(``docs/verify.md``, "Intents").
"""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import re
import stat

import pyarrow as pa
import pyarrow.fs as pafs

from pitwatch.lake import Lake, chain, delta, delta_log, runs
from pitwatch.lake import parquet as lake
from pitwatch.lake import registry as lake_registry
from pitwatch.lake import reviews as lake_reviews
from pitwatch.lake import roster as lake_roster
from pitwatch.lake import settings as lake_settings
from pitwatch.lake.kept import Kept
from pitwatch.lake.runs import HASH_FIELD, PREV_FIELD
from pitwatch.wording import plural

RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}")
COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
CHECKPOINT_FILE = re.compile(r"^(\d{20})\.checkpoint(?:\.\d+\.\d+)?\.parquet$")
TEMP_COMMIT = re.compile(r"^_commit_[0-9a-fA-F-]+\.json\.tmp$")
# pitwatch.lake.settings; pitwatch.lake.runs.runs_append_lock; pitwatch.lake.lock (the run lock, its holder)
LAKE_FILES = {"settings.json", "_runs.lock", "_writer.lock", "_writer.holder.json"}
STAGING = "_staging"                      # pitwatch.pipelines.staging: a run's scratch, removed when it ends
ALERTS = "alerts"                          # pitwatch.live.alerts_table: the watchers' table
ALERTS_FILE = re.compile(r"^.+-\d{8}(\.compacted)?\.parquet$")   # <watch-id>-<n>[.compacted].parquet
WATCH_STATE = "_watch"                    # pitwatch.live.service: the watchers' checkpoints (not evidence: alerts/ is)


@dataclasses.dataclass(frozen=True)
class Finding:
    """One thing found: ``kind`` (changed, removed, added, unrecorded commit, broken link, anchor …
    or, for a leftover, what it is), ``what`` (the file or record, relative to the lake) and why."""

    kind: str
    what: str
    detail: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Report:
    lake: str
    problems: list[Finding] = dataclasses.field(default_factory=list)
    leftovers: list[Finding] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    checked: dict = dataclasses.field(default_factory=lambda: {"tables": 0, "commits": 0, "data_files": 0,
                                                                  "runs_records": 0, "retention_removed": 0,
                                                                  "retention_removed_through": None,
                                                                  "registries": 0, "compactions": 0,
                                                                  "compacted_files": 0})
    head: dict | None = None
    since: dict | None = None      # verify --since: the anchored record everything up to is taken as verified
    # the vacuums whose records account for files found gone: run id -> [record, files, of them planned]
    _vacuums: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def intact(self) -> bool:
        return not self.problems

    def problem(self, kind: str, what: str, detail: str) -> None:
        self.problems.append(Finding(kind, what, detail))

    def leftover(self, kind: str, what: str, detail: str) -> None:
        self.leftovers.append(Finding(kind, what, detail))

    def retained(self, removal: Removal) -> None:
        """A file that retention removed (a chained vacuum record lists it): counted, not a problem."""
        self.checked["retention_removed"] += 1
        through = self.checked["retention_removed_through"]
        if removal.gaming_day and (through is None or removal.gaming_day > through):
            self.checked["retention_removed_through"] = removal.gaming_day
        counts = self._vacuums.setdefault(removal.record.run_id, [removal.record, 0, 0])
        counts[1] += 1
        counts[2] += removal.planned

    def to_dict(self) -> dict:
        return {"lake": self.lake, "intact": self.intact, "problems": [p.to_dict() for p in self.problems],
                "leftovers": [p.to_dict() for p in self.leftovers], "notes": self.notes, "checked": self.checked,
                "head": self.head, "since": self.since}


@dataclasses.dataclass
class Record:
    """A runs record as found: the runs version that added it, its file, their SHA-256, its row."""

    version: int
    path: str
    file_sha256: str | None
    commit_sha256: str
    row: dict | None
    committed_ms: int | None = None     # its runs commit's timestamp: after every checkpoint the record chains

    @property
    def run_id(self) -> str:
        run = self.row.get("run_id") if self.row else None
        return run if isinstance(run, str) else "?"

    def name(self) -> str:
        return f"the runs record of run {self.run_id} (runs version {self.version}, runs/{self.path})"

    def entries(self, column: str, keys: dict) -> list[dict]:
        """The record's ``commits`` or ``added_files`` that have ``keys`` of their types (a record
        rewritten with other columns names nothing: its hash shows the change)."""
        values = self.row.get(column) if self.row else None
        if not isinstance(values, list):
            return []
        return [v for v in values if isinstance(v, dict) and all(isinstance(v.get(k), t) for k, t in keys.items())]

    def options(self) -> dict | None:
        """The record's ``options`` (a JSON object), or None."""
        text = self.row.get("options") if self.row else None
        try:
            options = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            return None
        return options if isinstance(options, dict) else None

    def vacuum_options(self) -> dict | None:
        """The ``options`` of a ``pitwatch vacuum`` record (command ``vacuum``), or None."""
        options = self.options()
        return options if options is not None and options.get("command") == "vacuum" else None

    def compaction(self) -> dict | None:
        """What a watcher's compaction record says (:mod:`pitwatch.live.alerts_table`: command ``watch``, its
        options' ``compaction``: the file written, the files it replaced, their rows' digest), or None."""
        options = self.options() if self.row and self.row.get("command") == "watch" else None
        entry = options.get("compaction") if options is not None else None
        if not (isinstance(entry, dict) and isinstance(entry.get("compacted"), str)
                and isinstance(entry.get("rows_sha256"), str) and isinstance(entry.get("replaced"), list)
                and all(isinstance(p, str) for p in entry["replaced"])):
            return None
        return entry


@dataclasses.dataclass(frozen=True)
class Removal:
    """A data file a chained ``pitwatch vacuum`` record lists: removed (``sha256`` taken just before),
    found already gone (``absent``: that vacuum did not remove it), or only in the plan of a vacuum
    that never recorded what it removed (``planned``: killed while removing; its plan is chained
    before its first removal)."""

    record: Record
    version: int | None            # the table's version the vacuum planned against
    sha256: str | None
    gaming_day: str | None
    absent: bool = False
    planned: bool = False


def vacuum_removals(records: list[Record]) -> dict[tuple[str, str], Removal]:
    """``(table, path)`` -> what the chained vacuum records say of it: a removal wins over a plan,
    a plan over a later vacuum finding the file already gone."""
    removed: dict[tuple[str, str], Removal] = {}
    absent: dict[tuple[str, str], Removal] = {}
    planned: dict[str, dict[tuple[str, str], Removal]] = {}     # run id -> its plan
    ended: set[str] = set()                                      # vacuums that recorded what they removed
    for r in records:
        options = r.vacuum_options()
        if options is None:
            continue
        done = isinstance(options.get("tables"), dict)
        if done:
            ended.add(r.run_id)
        for table, entry in ((options.get("tables") if done else options.get("planned")) or {}).items():
            if not isinstance(entry, dict) or not isinstance(entry.get("files"), list):
                continue
            version = entry.get("version") if isinstance(entry.get("version"), int) else None
            for f in entry["files"]:
                if not (isinstance(f, dict) and isinstance(f.get("path"), str) and f["path"].startswith(table + "/")):
                    continue
                key = (table, delta.added_paths([{"add": {"path": f["path"][len(table) + 1:]}}])[0])
                removal = Removal(r, version, f.get("sha256") if isinstance(f.get("sha256"), str) else None,
                                  f.get("gaming_day") if isinstance(f.get("gaming_day"), str) else None,
                                  absent=bool(f.get("absent")), planned=not done)
                (planned.setdefault(r.run_id, {}) if not done else absent if removal.absent else removed)[key] = removal
    out = dict(absent)
    for run, plan in planned.items():
        if run not in ended:
            out.update(plan)
    out.update(removed)
    return out


@dataclasses.dataclass
class Intents:
    """What the chained intent records say (:func:`pitwatch.lake.runs.write_intent_record`): the runs
    held to their intents (their records name chain format 2 or later: ``runs.chain_format``), the
    commits each intended (``(run, table, version)`` -> {actions SHA-256: the intent record}) and
    the SHA-256 of each file an intent names (``(table, path)`` -> (record, SHA-256))."""

    held: set = dataclasses.field(default_factory=set)
    commits: dict = dataclasses.field(default_factory=dict)
    files: dict = dataclasses.field(default_factory=dict)
    last: dict = dataclasses.field(default_factory=dict)     # run -> the runs version of its last record

    def covers(self, run: str, table: str, version: int, digest: str) -> Record | None:
        return self.commits.get((run, table, version), {}).get(digest)


def intents_of(records: list[Record]) -> Intents:
    """The :class:`Intents` of ``records`` (an intent record rewritten with other types names nothing:
    its hash shows the change)."""
    out = Intents()
    for r in records:
        if not r.row:
            continue
        out.last[r.run_id] = max(out.last.get(r.run_id, -1), r.version)
        if runs.chain_format(r.row) >= runs.CHAIN_FORMAT:
            out.held.add(r.run_id)
        if r.row.get("status") != runs.INTENT_STATUS:
            continue
        entries = (r.options() or {}).get(runs.INTENT_KEY)
        for e in entries if isinstance(entries, list) else ():
            if not (isinstance(e, dict) and isinstance(e.get("table"), str) and isinstance(e.get("version"), int)
                    and isinstance(e.get("actions_sha256"), str)):
                continue
            out.commits.setdefault((r.run_id, e["table"], e["version"]), {}).setdefault(e["actions_sha256"], r)
            files = e.get("files")
            for f in files if isinstance(files, list) else ():
                if isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("sha256"), str):
                    out.files.setdefault((e["table"], f["path"]), (r, f["sha256"]))
    return out


@dataclasses.dataclass
class Start:
    """Where ``verify --since`` starts: the anchored runs record (taken as verified, with everything
    at or before it) and, per table, the chained checkpoint that record carries (its state there)."""

    record: Record
    entry: dict
    line: str
    checkpoints: dict          # table -> delta_log.Checkpoint, as the anchored record carries them
    trusted: dict              # table -> the highest version the anchored record vouches for
    walked: list = dataclasses.field(default_factory=list)   # records before it, read back as needed

    @property
    def version(self) -> int:
        return self.record.version

    def earlier(self, lake_path: Lake, name: str, base: int) -> list[Record]:
        """The records before the anchored one that may name a commit of ``name`` after ``base``
        (its checkpoint the anchored record carries): read back one by one, up to the first that
        carries no checkpoint of ``name`` at ``base`` or later (a record written before that
        checkpoint, so before every commit after it).  Only needed for a commit after the
        versions the anchored record names, which no record since names (a watcher's, recorded
        before the anchor): a short walk for a table often written."""
        out = []
        for i in range(self.version):
            if i == len(self.walked):
                try:
                    self.walked.append(read_record(lake_path, self.version - 1 - i))
                except (FileNotFoundError, ValueError, UnicodeDecodeError):
                    break
            r = self.walked[i]
            try:
                cp = delta_log.parse_checkpoints(r.row.get("checkpoints")).get(name) if r.row else None
            except delta_log.LogError:
                cp = None
            if base >= 0 and (cp is None or cp.version < base):
                break
            out.append(r)
        return out


def verify(lake_path: Lake, anchor: str | None = None, key: bytes | None = None,
           since: str | None = None) -> Report:
    """Check the lake (and, with ``anchor``, the lake against it): a :class:`Report`.  With
    ``since`` (an anchor file), only what came after its last entry: that entry's record and
    everything before it are taken as verified (:func:`since_start`).  Raises
    :class:`pitwatch.lake.parquet.LakeError` when ``lake_path`` is no lake at all."""
    kind = lake_path.reach()          # an object store that cannot be asked: LakeError, one line
    if kind != pafs.FileType.Directory:
        raise lake.LakeError(f"no lake at {lake_path}")
    tables = delta.tables_on_disk(lake_path)
    if not tables:
        raise lake.LakeError(f"{lake_path} is not a pitwatch lake: it holds no Delta table")
    report = Report(str(lake_path))
    report.checked["tables"] = len(tables)
    if delta.local(lake_path) and not _no_links(lake_path, report, since=since is not None):
        return report
    start = None
    if since is not None:
        start = since_start(lake_path, since, key, report) if "runs" in tables else None
        if start is None:
            if "runs" not in tables:
                report.problem("removed", "runs/", "the runs table is gone: nothing the lake holds can be checked "
                               "against it")
            return report
    runs_base = _base(lake_path, "runs", start, report)
    runs_replay = _Replay("runs", _checkpoint_parts(lake_path, "runs", start, runs_base), runs_base)
    records = _runs_chain(lake_path, report, runs_replay, start) if "runs" in tables else []
    chained = _chained_checkpoints(records, report, start)
    if "runs" not in tables:
        report.problem("removed", "runs/", "the runs table is gone: nothing the lake holds can be checked against it")
    status = {}
    for r in records:               # chain order is write order: a run's last record is its state
        if r.row:
            status[r.run_id] = str(r.row.get("status") or "")
    for r in records:
        if r.row and status.get(r.run_id) in ("running", runs.INTENT_STATUS) and r.row.get("ended") is None:
            report.leftover("run with no end", r.name(), f"its last record says {status[r.run_id]}: it was killed "
                            "(or is running now); the next run cleans up after it")
            status[r.run_id] += " (no end)"       # running, or committing: killed during its commit
    if "runs" in tables:
        paths = [r.path for r in records]
        _stray_files(lake_path, "runs", set(paths), report, status, start)
        _checkpoints(lake_path, "runs", runs_replay, chained, report, start)
    recorded_commits, recorded_files = _recorded(records)
    removals = vacuum_removals(records)
    intents = intents_of(records)
    for name in tables:
        if name != "runs":
            _table(lake_path, name, report, recorded_commits, recorded_files, status, removals, chained, start,
                   intents)
    for name in sorted({t for t, _v in recorded_commits} - set(tables)):
        by = min(v for t, v in recorded_commits if t == name)
        report.problem("removed", f"{name}/", f"the table is gone; {recorded_commits[(name, by)][0][0].name()} "
                       f"names its version {by}")
    _lake_folder(lake_path, tables, report, status)
    _kept_files(lake_path, records, report, start, lake_registry.KEPT)
    _kept_files(lake_path, records, report, start, lake_roster.KEPT)
    _reviews_chain(lake_path, tables, report, records, start)
    _settings(lake_path, records, report)
    _retention_note(report)
    if report.checked["compactions"]:
        report.notes.append(f"compaction: {plural(report.checked['compacted_files'], 'file')} of the alerts table "
                            f"replaced by {plural(report.checked['compactions'], 'compacted file')}, each replacement "
                            "named by a watcher's chained runs record with its rows' digest (checked): not tampering")
    if records and (row := records[-1].row):
        last = records[-1]
        report.head = {"runs_version": last.version, "run_id": last.run_id, "status": str(row.get("status")),
                       "record_sha256": row.get(HASH_FIELD) if isinstance(row.get(HASH_FIELD), str) else None,
                       "record_file_sha256": last.file_sha256,
                       "runs_commit_sha256": last.commit_sha256}
    if start is not None:
        report.checked["runs_records"] = len([r for r in records if r.version > start.version])
        if not report.checked["runs_records"]:
            report.notes.append(f"since: nothing new after the anchored record (runs version {start.version}): "
                                "it is the chain's head")
    if anchor is not None:
        from pitwatch.lake import anchor as anchors

        anchors.check(anchor, key, records, report)
    return report


def _reviews_chain(lake_path: Lake, tables: list[str], report: Report, records: list[Record], start) -> None:
    """The reviews' own chain (:mod:`pitwatch.lake.reviews`): every review hashes to the hash it
    carries and links the review before it, so a review edited, removed or inserted is named
    (its file's bytes are checked beside, against the SHA-256 its ``pitwatch review`` record names).
    With ``--since`` (``start``): the reviews of the commits the records after the anchored one
    name, from the first of them on."""
    if lake_reviews.TABLE not in tables:
        return
    since = None
    if start is not None:
        new = [c["version"] for r in records if r.version > start.version
               for c in r.entries("commits", {"table": str, "version": int}) if c["table"] == lake_reviews.TABLE]
        if not new:
            return
        since = min(new)
    try:
        found = lake_reviews.chain_problems(lake_path, since)
    except (OSError, ValueError, pa.ArrowException) as exc:
        report.problem("unreadable", f"{lake_reviews.TABLE}/", f"the reviews' chain cannot be read ({exc})")
        return
    for kind, what, why in found:
        report.problem(kind, what, why)


def _no_links(lake_path: Lake, report: Report, since: bool = False) -> bool:
    """Walk the local lake without following links: every symbolic link in it is a problem (a data
    file or a partition folder pointing outside the lake would make verify vouch for bytes the lake
    does not hold, and a link to a device or a FIFO would hang it), and nothing else is read when
    there is one (False); every file or folder writable by others is noted (anyone on the host can
    change the evidence: not tampering, but the lake's guard is down). True when there is no link.

    ``since`` (``verify --since``): the walk does not go into the folders that grow with the lake's
    age and of which the check reads only what is new — partitions (``gaming_day=D``) and log
    archives: each file it reads there is checked for a link as it is read (:func:`_linked`), so
    its cost is what is new, not seven years of folders."""
    links, open_to_all = [], []
    todo = [lake_path.root]
    cut = len(lake_path.root.rstrip("/")) + 1
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            report.problem("unreadable", folder[cut:] or ".", f"cannot be listed ({exc.strerror})")
            continue
        for entry in entries:
            if entry.is_symlink():
                links.append((entry.path[cut:], os.readlink(entry.path)))
                continue
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if mode & stat.S_IWOTH:
                open_to_all.append((entry.path[cut:], mode))
            if entry.is_dir(follow_symlinks=False) and not (
                    since and ("=" in entry.name or entry.name == delta.ARCHIVE_FOLDER)):
                todo.append(entry.path)
    for rel, target in sorted(links):
        report.problem("link", rel, f"a symbolic link (to {target}) inside the lake: verify follows no link, "
                       "and a lake's files are its own; nothing else was checked — remove the link and verify again")
    if open_to_all:
        shown = ", ".join(f"{rel} ({stat.filemode(mode)})" for rel, mode in sorted(open_to_all)[:10])
        more = f" and {len(open_to_all) - 10} more" if len(open_to_all) > 10 else ""
        report.notes.append(f"writable by others: {shown}{more}: anyone on this host can change the lake's "
                            "evidence (chmod o-w; docs/operations.md)")
    return not links


def _linked(lake_path: Lake, rel: str, report: Report) -> bool:
    """``verify --since``: is a file it is about to read at ``rel`` (inside a partition or a log
    archive, which its walk does not go into: :func:`_no_links`), or a folder on its way, a symbolic
    link?  Then it is a problem (named as the walk names one) and the file is not read (True)."""
    if not delta.local(lake_path):
        return False
    path = lake_path.root.rstrip("/")
    for part in rel.split("/"):
        path = f"{path}/{part}"
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                report.problem("link", path[len(lake_path.root.rstrip('/')) + 1:], f"a symbolic link (to "
                               f"{os.readlink(path)}) inside the lake: verify follows no link, and a lake's files "
                               "are its own; it was not read")
                return True
        except OSError:
            return False
    return False


def _recorded(records: list[Record]) -> tuple[dict, dict]:
    """``(table, version)`` -> [(record, its commits entry)] and ``(table, path)`` -> (record, its
    added_files entry), of ``records``."""
    recorded_commits: dict[tuple[str, int], list[tuple[Record, dict]]] = {}
    recorded_files: dict[tuple[str, str], tuple[Record, dict]] = {}
    for r in records:
        for c in r.entries("commits", {"table": str, "version": int, "sha256": str}):
            recorded_commits.setdefault((c["table"], c["version"]), []).append((r, c))
        for f in r.entries("added_files", {"table": str, "path": str, "sha256": str}):
            recorded_files.setdefault((f["table"], f["path"]), (r, f))
    return recorded_commits, recorded_files


def read_record(lake_path: Lake, version: int, data: bytes | None = None, actions: list | None = None,
                report: Report | None = None) -> Record:
    """The runs record runs ``version`` added, as found (FileNotFoundError when the log and the
    archive have no commit of that version); what is wrong with it goes to ``report``."""
    fs, root = lake_path.fs, lake_path.root
    if data is None:
        data, actions = delta.read_commit(lake_path, "runs", version)
    assert actions is not None          # given with data, or read with it
    commit_sha = chain.bytes_sha256(data)
    stamp = _commit_ms(actions)
    problem = report.problem if report is not None else (lambda *_a: None)
    if delta.removed_paths(actions):
        problem("changed", _log_name("runs", version), "a commit of runs removes a record: runs is append-only")
    paths = delta.added_paths(actions)
    if len(paths) != 1:
        problem("changed", _log_name("runs", version), f"it adds {len(paths)} files, a runs commit adds one record")
        return Record(version, paths[0] if paths else "?", None, commit_sha, None, stamp)
    path = paths[0]
    try:
        body = chain.read_whole(fs, f"{root}/runs/{path}")
    except (FileNotFoundError, OSError):
        problem("removed", f"runs/{path}", f"the record runs version {version} added is gone")
        return Record(version, path, None, commit_sha, None, stamp)
    try:
        rows = chain.parquet_rows(body)
    except (pa.ArrowException, OSError) as exc:
        problem("changed", f"runs/{path}", f"not a Parquet file any more ({exc})")
        return Record(version, path, chain.bytes_sha256(body), commit_sha, None, stamp)
    if len(rows) != 1:
        problem("changed", f"runs/{path}", f"it holds {len(rows)} records, a runs file holds one")
    return Record(version, path, chain.bytes_sha256(body), commit_sha, rows[0] if rows else None, stamp)


def _commit_ms(actions: list[dict] | None) -> int | None:
    """The ``timestamp`` (ms) a commit's commit info gives, or None."""
    for action in actions or ():
        info = action.get("commitInfo")
        if isinstance(info, dict):
            stamp = info.get("timestamp")
            return stamp if isinstance(stamp, int) and not isinstance(stamp, bool) else None
    return None


def since_start(lake_path: Lake, anchor_path: str, key: bytes | None, report: Report) -> Start | None:
    """The anchored record ``verify --since`` starts from: the anchor's LAST entry (its signature
    checked with ``key``), the runs record it names found in the lake with the same hashes.
    None, with a problem of kind ``anchor`` in ``report``, when the last line is no entry, its
    signature does not match, or the lake does not hold that record as anchored (tampering: the
    lake is not intact).  :class:`pitwatch.lake.anchor.AnchorError` when the file cannot be read or
    holds no entry at all."""
    from pitwatch.lake import anchor as anchors

    anchors.outside_the_lake(anchor_path, lake_path, "--since")       # an anchor the lake's writers can edit vouches for nothing
    entries = anchors.read_lines(anchor_path)
    if not entries:
        raise anchors.AnchorError(f"anchor {anchor_path} holds no entry: nothing to verify since")
    n, entry, _raw = entries[-1]
    line = f"{os.path.basename(anchor_path)} line {n}"
    problem = anchors.entry_problem(entry, key)
    if problem is None:
        assert entry is not None        # entry_problem names a line that is no entry
        problem = anchors.sequence_problem(entry, len(entries), entries[-2][2] if len(entries) > 1 else None)
    if problem:
        report.problem("anchor", line, problem + ": nothing can be verified since it")
        return None
    assert entry is not None            # entry_problem names a line that is no entry
    version = entry["runs_version"]
    try:
        record = read_record(lake_path, version)
    except FileNotFoundError:
        report.problem("anchor", line, anchors.removed_problem(entry))
        return None
    except (ValueError, UnicodeDecodeError):
        record = Record(version, "?", None, chain.bytes_sha256(delta_log.read_log_file(
            lake_path, "runs", delta_log.commit_name(version))), None)
    differ = anchors.differences(entry, record)
    if differ:
        report.problem("anchor", line, anchors.rewritten_problem(entry, differ))
        return None
    assert record.row is not None       # a record without a row differs from every entry (its run id, a str)
    try:
        checkpoints = delta_log.parse_checkpoints(record.row.get("checkpoints"))
    except delta_log.LogError:
        checkpoints = {}
    trusted: dict[str, int] = {t: cp.version for t, cp in checkpoints.items()}
    try:
        readers = json.loads(record.row.get("reader_versions") or "null")
    except ValueError:
        readers = None
    for t, v in (readers.items() if isinstance(readers, dict) else ()):
        if isinstance(v, int):
            trusted[t] = max(trusted.get(t, -1), v)
    for c in record.entries("commits", {"table": str, "version": int}):
        trusted[c["table"]] = max(trusted.get(c["table"], -1), c["version"])
    trusted["runs"] = version
    report.since = {"anchor": anchor_path, "line": n, "runs_version": version, "run_id": entry["run_id"],
                    "record_sha256": entry["record_sha256"], "anchored_at": entry.get("anchored_at")}
    return Start(record, entry, line, checkpoints, trusted)


def _base(lake_path: Lake, name: str, start: Start | None, report: Report) -> tuple[int, delta_log.Snapshot | None]:
    """The version the table's replay starts after, and its state there: (-1, None) for the whole
    log; with ``start``, the chained checkpoint the anchored record carries (read, each part
    checked against the SHA-256 the chain holds)."""
    cp = start.checkpoints.get(name) if start is not None else None
    if cp is None:
        return -1, None
    assert start is not None
    try:
        return cp.version, delta_log.read_checkpoint(lake_path, cp)
    except (delta_log.LogError, pa.ArrowException, OSError, KeyError, TypeError) as exc:
        report.problem("changed", f"{name}/{delta.LOG_FOLDER}/{cp.parts[0][0]}", f"the checkpoint of version "
                       f"{cp.version} {start.record.name()} carries cannot be used ({exc}); the whole log is replayed")
        return -1, None


def _runs_chain(lake_path: Lake, report: Report, replay: _Replay, start: Start | None = None) -> list[Record]:
    """The runs records in chain order, each link checked; with ``start``, from the anchored
    record on (the records before it are only replayed, for the checkpoints)."""
    records = []
    for version, data, actions in _commits(lake_path, "runs", report, replay):
        if start is not None and version < start.version:
            continue
        if start is not None and version == start.version:
            records.append(start.record)
            continue
        report.checked["commits"] += 1
        records.append(read_record(lake_path, version, data, actions, report))
    report.checked["runs_records"] = len(records)
    readable = [r for r in records if r.row is not None]
    for i, kind, problem in chain.chain_problems([r.row for r in readable if r.row is not None], HASH_FIELD, PREV_FIELD,
                                                 name=lambda i, _r: readable[i].name()):
        if start is not None and i == 0 and kind == "broken link":
            continue            # the anchored record: its link to the one before is what the anchor vouches for
        report.problem(kind, f"runs/{readable[i].path}", problem)
    for before, r in zip(records, records[1:]):
        if r.row is None:
            continue
        if r.row.get("prev_record_file_sha256") != before.file_sha256:
            report.problem("changed", f"runs/{before.path}", f"its SHA-256 is {before.file_sha256}, the next record "
                           f"({r.name()}) names {r.row.get('prev_record_file_sha256')}")
        if r.row.get("prev_runs_commit_sha256") != before.commit_sha256:
            report.problem("changed", _log_name("runs", before.version),
                           f"its SHA-256 is {before.commit_sha256}, the next record ({r.name()}) names "
                           f"{r.row.get('prev_runs_commit_sha256')}")
    return records


def _log_name(name: str, version: int) -> str:
    return f"{name}/{delta.LOG_FOLDER}/{version:0{delta.COMMIT_FILE_DIGITS}d}.json"


def _commits(lake_path: Lake, name: str, report: Report, replay: _Replay | None = None):
    """(version, bytes, actions) of every commit file of the table's log and its archive
    (:mod:`pitwatch.lake.delta_log`), in order; a missing version, an unreadable commit, a file in the
    log or the archive pitwatch does not write: reported.  ``replay``: fed every commit, to
    re-derive the checkpoints; when it starts from a checkpoint (``verify --since``), only the
    commits after it: the log folder is listed (names only, kept short by the archive), the
    archive is not — its commits after the checkpoint are read by name."""
    fs, root = lake_path.fs, lake_path.root
    after = replay.base if replay is not None else -1
    versions = set()
    for folder in (delta.LOG_FOLDER, delta.ARCHIVE_FOLDER) if after < 0 else (delta.LOG_FOLDER,):
        path = f"{root}/{name}/{folder}"
        if fs.get_file_info(path).type != pafs.FileType.Directory:
            continue
        for info in fs.get_file_info(pafs.FileSelector(path)):
            base = info.base_name
            if info.type != pafs.FileType.File:
                report.problem("added", f"{name}/{folder}/{base}/", "pitwatch writes no folder here")
            elif COMMIT_FILE.match(base):
                if int(base[:-5]) in versions:
                    report.problem("added", f"{name}/{folder}/{base}", "the log and its archive both hold this commit")
                versions.add(int(base[:-5]))
            elif folder == delta.LOG_FOLDER and (TEMP_COMMIT.match(base) or (base.startswith(".") and ".tmp" in base)):
                report.leftover("temporary commit file", f"{name}/{folder}/{base}",
                                "a commit that was interrupted before it was made: no reader sees it")
            elif not (CHECKPOINT_FILE.match(base) or (base == "_last_checkpoint" and folder == delta.LOG_FOLDER)):
                report.problem("added", f"{name}/{folder}/{base}", "pitwatch writes no such file in a Delta log")
    if after >= 0:          # the archived commits after the checkpoint: by name, up to the log's first
        versions = {v for v in versions if v > after}
        first = min(versions) if versions else float("inf")     # the log's first (not the growing set's)
        v = after + 1
        while v < first and not _linked(lake_path, f"{name}/{delta.ARCHIVE_FOLDER}/{delta_log.commit_name(v)}",
                                        report) and delta_log.commit_exists(lake_path, name, v):
            versions.add(v)
            v += 1
    expected = after + 1
    for version in sorted(versions):
        for missing in range(expected, version):
            report.problem("removed", _log_name(name, missing), "the log has no commit file for this version")
        expected = version + 1
        try:
            data, actions = delta.read_commit(lake_path, name, version)
        except (ValueError, UnicodeDecodeError) as exc:
            data = delta_log.read_log_file(lake_path, name, delta_log.commit_name(version))
            report.problem("changed", _log_name(name, version), f"not a Delta commit any more ({exc})")
            actions = []
        if replay is not None:
            replay.apply(version, actions)
        yield version, data, actions


class _Replay:
    """The table's state replayed from its JSON commits, kept at the versions a checkpoint is of:
    every add action (by path), the tombstones (each path removed and not added again, with its
    remove's ``deletionTimestamp``), metadata, protocol and app transactions, and the commit's own
    time.  ``retention``: the tombstone retention (ms) the table's chained history gives from each
    version on (:func:`_retention_changes`; a version not in it: the table's first)."""

    def __init__(self, name: str, wanted, base: tuple[int, delta_log.Snapshot | None] = (-1, None)) -> None:
        self.base = base[0]             # the version the replay starts after (-1: the whole log)
        self.snap = base[1].copy() if base[1] is not None else delta_log.Snapshot(name)
        # tombstones: from a checkpoint, its own (each with its deletionTimestamp) and those since
        self.removed: dict[str, int] = {p: t for p, t in self.snap.removed.items() if p not in self.snap.adds}
        self.snap.removed = {}          # (kept here, with their times: the snapshots need none)
        self._queue = collections.deque(sorted((t, p) for p, t in self.removed.items()))
        self.wanted = set(wanted)
        self.at: dict[int, tuple[delta_log.Snapshot, dict, int | None]] = {}
        self.retention: dict[int, int] = {}
        self._honoured = FOREVER_MS     # the retention honoured as of the last version applied

    def honour(self, version: int, retention: int) -> None:
        """The table's chained history gives it ``retention`` from ``version`` on."""
        self.retention[version] = retention
        self._honoured = retention

    def apply(self, version: int, actions: list[dict]) -> None:
        for action in actions:
            if isinstance(action.get("remove"), dict):
                path, stamp = delta.unquote_path(action["remove"]["path"]), \
                    delta_log.removal_stamp(action["remove"].get("deletionTimestamp"))
                self.removed[path] = stamp
                self._queue.append((stamp, path))
            elif isinstance(action.get("add"), dict):
                self.removed.pop(delta.unquote_path(action["add"]["path"]), None)
        self.snap.apply(version, actions)
        self.snap.removed.clear()
        committed = _commit_ms(actions)
        self._forget_expired(committed)
        if version in self.wanted:
            self.at[version] = (self.snap.copy(), dict(self.removed), committed)

    def _forget_expired(self, committed: int | None) -> None:
        """Forget the removes no checkpoint from this commit on may hold (older than the honoured
        retention at this commit's time, :meth:`_Window.must_drop`): what the replay keeps of
        ``alerts`` stays a day of removes, not seven years of them.  One a checkpoint still holds is
        then 'not seen to remove', a problem as 'kept past the retention' is."""
        if committed is None:
            return
        cutoff = committed - CLOCK_SLACK_MS - self._honoured
        while self._queue and self._queue[0][0] < cutoff:
            stamp, path = self._queue.popleft()
            if self.removed.get(path) == stamp:
                del self.removed[path]


def _table(lake_path: Lake, name, report, recorded_commits, recorded_files, status, removals, chained,
           start: Start | None = None, intents: Intents | None = None) -> None:
    """Replay the table's log; check each commit against the record that names it, each file
    against the hash its record names, each checkpoint against the log.  With ``start``
    (``verify --since``): replayed from the checkpoint the anchored record carries; the commits
    the anchored record (or a record before it) vouches for are replayed, not checked."""
    fs, root = lake_path.fs, lake_path.root
    base = _base(lake_path, name, start, report)
    replay = _Replay(name, _checkpoint_parts(lake_path, name, start, base), base)
    live: set[str] = set(replay.snap.adds)
    conf = None             # the table's configuration (its properties) as the log has it so far
    if replay.snap.metadata is not None:        # the anchored checkpoint's: vouched for
        conf = dict(delta_log.map_items(replay.snap.metadata.get("configuration")))
        replay.honour(replay.base, _retention_of(conf))
    trusted = start.trusted.get(name, -1) if start is not None else -1
    intents = intents if intents is not None else Intents()
    earlier: tuple[dict, dict, Intents] | None = None   # the records before the anchor, when needed
    states: dict[int, frozenset] = {}
    added_by: dict[str, tuple[int, str]] = {}       # path -> (version, "recorded" | "unfinished" | "foreign")
    removed_at: dict[str, int] = {}
    vacuums: list[int] = []
    last_recorded_state: frozenset | None = frozenset(live)
    unfinished_since: list[tuple[int, str]] = []     # commits of unfinished runs after the last recorded one
    removed_since: set[str] = set()                  # verify --since: the files the commits checked removed
    compactions: list[tuple[str, Record, dict]] = []  # (the commit, its record, what it says) of alerts
    recorded_by = -1            # the newest runs version of the records naming the commits so far
    for version, data, actions in _commits(lake_path, name, report, replay):
        before = frozenset(live)
        for path in delta.removed_paths(actions):
            live.discard(path)
            removed_at[path] = version
        for path in delta.added_paths(actions):
            live.add(path)
            removed_at.pop(path, None)
        state = frozenset(live)
        states[version] = state
        writer = delta.commit_writer(actions)
        new_conf = _configuration(actions)
        if start is not None and (version <= trusted or (not recorded_commits.get((name, version))
                                                         and writer not in status)):
            if version > trusted and earlier is None:
                walked = start.earlier(lake_path, name, replay.base)
                earlier = (_recorded(walked)[0], {r.run_id: str(r.row.get("status") or "") for r in reversed(walked)
                                                  if r.row}, intents_of(walked))
            if version <= trusted or (earlier is not None and (name, version) in earlier[0]):    # (set: past trusted)
                last_recorded_state, unfinished_since = state, []
                if new_conf is not None:        # vouched for, its properties too
                    conf = new_conf
                    replay.honour(version, _retention_of(conf))
                continue            # before the anchor: vouched for by it
        report.checked["commits"] += 1
        removed_since.update(delta.removed_paths(actions))
        sha = chain.bytes_sha256(data)
        by = recorded_commits.get((name, version))
        operation = str(delta.commit_operation(actions) or "?")
        where = _log_name(name, version)
        if new_conf is not None and (conf is None or new_conf != conf):
            wrong = _properties_problem(name, conf, new_conf, by[0][0] if by else None)
            if wrong:
                report.problem("changed", where, wrong)
            if not wrong or conf is None:
                replay.honour(version, _retention_of(new_conf if not wrong else delta.TABLE_PROPERTIES))
            conf = new_conf
        last = status[writer] if writer in status else (     # the last status of the run it names
            earlier[1][writer] if earlier is not None and writer in earlier[1] else None)
        if by:
            record, c = by[0]
            recorded_by = max(recorded_by, record.version)
            unintended = (record.run_id == writer and last is not None and last != "succeeded"
                          and writer is not None and _unintended(writer, name, version, actions, intents, earlier))
            if unintended:
                report.problem("unrecorded commit", where, f"{record.name()} chains it, but as the end recorded for "
                               f"run {writer}, which did not succeed ({last}): {unintended}")
            if c["sha256"] != sha:
                report.problem("changed", where, f"its SHA-256 is {sha}, {record.name()} recorded {c['sha256']}")
            elif c.get("files_sha256") and c["files_sha256"] != chain.paths_sha256(state):
                report.problem("changed", where, f"the table's files at version {version} are not the ones "
                               f"{record.name()} committed (an earlier commit of the log was changed)")
            kind = "recorded"
            last_recorded_state, unfinished_since = state, []
            if operation.upper().startswith("VACUUM"):
                vacuums.append(version)
            if name == ALERTS and delta.removed_paths(actions):
                entry = _compaction_problem(report, where, record, actions, before)
                if entry is not None:
                    compactions.append((where, record, entry))
        elif last is not None and last != "succeeded" and writer is not None and (
                unintended := _unintended(writer, name, version, actions, intents, earlier, recorded_by)):
            kind = "foreign"
            report.problem("unrecorded commit", where, f"no runs record names this commit ({operation}, written by "
                           f"run {writer}, whose last record says {last}): {unintended}")
        elif last is not None and last != "succeeded" and writer is not None:   # (a last status names a run)
            kind = "unfinished"
            unfinished_since.append((version, writer))
            report.leftover("commit of an unfinished run", where,
                            f"written by run {writer}, whose last record says {last}"
                            + (", as its chained intent names it" if writer in intents.held
                               or (earlier is not None and writer in earlier[2].held) else
                               " (a run of a pitwatch that recorded no intents)")
                            + ": no reader pinned to a successful run sees it")
        elif (writer is None and operation == "RESTORE" and unfinished_since
              and last_recorded_state is not None and state == last_recorded_state):
            kind = "recorded"
            runs_undone = sorted({w for _, w in unfinished_since})
            report.leftover("roll-back", where, f"the next run undid the commits of run {', '.join(runs_undone)}: "
                            "the table is back at its last recorded files")
            unfinished_since = []
        else:
            kind = "foreign"
            report.problem("unrecorded commit", where,
                           f"no runs record names this commit ({operation}, written by "
                           f"{'run ' + writer if writer else 'no pitwatch run'}): the lake was changed outside pitwatch")
        for path in delta.added_paths(actions):
            added_by.setdefault(path, (version, kind))
    for (t, v), by in sorted(recorded_commits.items()):
        end = max(states) if states else replay.base
        if t == name and v not in states and v > end:    # a gap is reported already
            report.problem("removed", _log_name(name, v), f"{by[0][0].name()} committed it; the log ends at "
                           f"version {end if end >= 0 else 'none'}")
    current = states[max(states)] if states else frozenset(live)
    replaced = {p for _where, _record, entry in compactions for p in entry["replaced"]}
    hash_later: dict[str, tuple[Record, str]] = {}      # replaced files: hashed when their rows are read
    recorded_states = [states[v] for (t, v) in recorded_commits if t == name and v in states]
    for path, (version, kind) in sorted(added_by.items()):
        what = f"{name}/{path}"
        if start is not None and _linked(lake_path, what, report):
            continue
        rec = recorded_files.get((name, path))
        exists = fs.get_file_info(f"{root}/{name}/{path}").type == pafs.FileType.File
        removal = removals.get((name, path))
        left = path not in current and path in removed_at
        if rec is None:
            if kind == "unfinished" and not exists and left and _retention(removal, removed_at[path], None):
                report.retained(removal)      # a killed run's file, rolled back, then past the retention
            elif kind == "unfinished" and any(path in s for s in recorded_states):
                report.problem("unverifiable", what, f"added by commit {version} of a run that did not finish, and "
                               "part of a version a later run committed: no record holds its SHA-256")
            elif kind == "unfinished" and exists and (meant := _intended_file(name, path, intents, earlier)) \
                    and (actual := chain.file_sha256(fs, f"{root}/{name}/{path}")) != meant[1]:
                report.problem("changed", what, f"added by commit {version} of a run that did not finish; its SHA-256 "
                               f"is {actual}, {meant[0].name()} (its intent) names {meant[1]}")
            elif kind == "unfinished":
                report.leftover("file of an unfinished run", what, f"added by commit {version}, whose run did not finish")
            elif kind == "foreign":
                report.problem("added", what, f"added by commit {version}, which no run recorded")
            elif exists:
                report.problem("added", what, f"commit {version} adds it, but no runs record names the file")
            continue
        record, f = rec
        if not exists:
            if left and removal is not None and removal.sha256 and removal.sha256 != f["sha256"] \
                    and _retention(removal, removed_at[path], None):
                report.problem("changed", what, f"{removal.record.name()} removed it by retention with SHA-256 "
                               f"{removal.sha256}, {record.name()} recorded {f['sha256']}: it was changed before")
            elif left and _retention(removal, removed_at[path], f["sha256"]):
                report.retained(removal)
            elif path not in current and any(v > removed_at.get(path, version) for v in vacuums):
                continue            # a recorded Delta VACUUM commit of the table followed its removal
            else:
                report.problem("removed", what, f"{record.name()} added it"
                               + ("; the file is gone, and the table's current version still names it" if path in current
                                  else "; the file is gone, and a version of the table's history names it")
                               + ("" if removal is None or not removal.absent else
                                  f"; {removal.record.name()} (pitwatch vacuum) found it already gone: no vacuum "
                                  "removed it"))
            continue
        report.checked["data_files"] += 1
        if path in replaced:
            hash_later[path] = (record, f["sha256"])
            continue
        actual = chain.file_sha256(fs, f"{root}/{name}/{path}")
        _hashed(report, what, actual, record, f["sha256"])
        meant = _intended_file(name, path, intents, earlier)
        if meant is not None and actual == f["sha256"] and actual != meant[1]:
            report.problem("changed", what, f"its SHA-256 is {actual}, as {record.name()} recorded it; "
                           f"{meant[0].name()} (the intent of the run that added it) names {meant[1]}: "
                           "it was changed before it was recorded")
    if start is not None:       # files added before the anchor, in the table now or removed since: there, not hashed
        for path in sorted((current | removed_since) - set(added_by)):
            if fs.get_file_info(f"{root}/{name}/{path}").type == pafs.FileType.File:
                continue
            removal = removals.get((name, path))
            if path not in current and path in removed_at and _retention(removal, removed_at[path], None):
                report.retained(removal)
            elif not (path not in current and any(v > removed_at.get(path, -1) for v in vacuums)):
                report.problem("removed", f"{name}/{path}", "added before the anchor"
                               + ("; the file is gone, and the table's current version still names it" if path in current else
                                  f"; commit {removed_at.get(path)} removed it from the table, no vacuum removed it"))
    for where, record, entry in compactions:
        _compacted_rows(lake_path, name, where, record, entry, report, hash_later, since=start is not None)
    _stray_files(lake_path, name, set(added_by) | set(current), report, status, start, added_by)
    _checkpoints(lake_path, name, replay, chained, report, start)


def _unintended(writer: str, name: str, version: int, actions: list[dict], intents: Intents,
                earlier: tuple | None, recorded_by: int = -1) -> str | None:
    """Why a commit of run ``writer`` (which did not succeed) is not that run's: it is held to its
    intents (its records name chain format 2: ``docs/verify.md``, "Intents") and none of them names
    this table, version and actions SHA-256.  A run that predates intents: only when the commit
    comes after a commit of the table named by a record written after that run's last one
    (``recorded_by``: a killed run's commits end the log before any later run's).  None otherwise."""
    held = [i for i in (intents, earlier[2] if earlier is not None else None) if i is not None]
    if not any(writer in i.held for i in held):
        ended = max((i.last.get(writer, -1) for i in held), default=-1)
        if 0 <= ended < recorded_by:
            return (f"it comes after commits of the table named by runs version {recorded_by}, a record written "
                    f"after run {writer}'s last one (runs version {ended}): a killed run's commits come before any "
                    "later run's, so this one is not its leftover — a commit made in its name outside pitwatch")
        return None
    digest = delta.commit_digest(actions)
    if any(i.covers(writer, name, version, digest) for i in held):
        return None
    named = sorted({(t, v) for i in held for (r, t, v) in i.commits if r == writer})
    return (f"no intent run {writer} chained before committing names it (table {name}, version {version}, "
            f"actions SHA-256 {digest}; "
            + (f"its intents name {', '.join(f'{t} {v}' for t, v in named[:8])}{' …' if len(named) > 8 else ''}"
               if named else "it chained no intent") + "): not a killed run's leftover — a commit made in its "
            "name outside pitwatch")


def _intended_file(name: str, path: str, intents: Intents, earlier: tuple | None) -> tuple[Record, str] | None:
    """(the intent record, the SHA-256) an intent names for the file, or None."""
    found = intents.files.get((name, path))
    if found is None and earlier is not None:
        found = earlier[2].files.get((name, path))
    return found


def _configuration(actions: list[dict]) -> dict | None:
    """The table's properties a commit's ``metaData`` action gives (None: it has none)."""
    for action in actions:
        meta = action.get("metaData")
        if isinstance(meta, dict):
            return {str(k): str(v) for k, v in delta_log.map_items(meta.get("configuration")).items()}
    return None


_PITWATCH_RETENTION_MS = delta_log.retention_ms(delta.TABLE_PROPERTIES)
assert _PITWATCH_RETENTION_MS is not None       # pitwatch's own retention: an interval it reads
FOREVER_MS: int = _PITWATCH_RETENTION_MS


def _retention_of(conf: dict | None) -> int:
    """The tombstone retention (ms) a checkpoint honours under ``conf``: one pitwatch cannot read
    counts as pitwatch's own (every tombstone kept)."""
    value = delta_log.retention_ms(conf)
    return FOREVER_MS if value is None else value


def _properties_problem(name: str, before: dict | None, after: dict, record: Record | None) -> str | None:
    """What is wrong with a commit that sets table ``name``'s properties from ``before`` (None: it
    creates the table) to ``after``, named by ``record`` (None: by none): None when pitwatch made it.
    pitwatch creates every table with :data:`pitwatch.lake.delta.TABLE_PROPERTIES` (``alerts`` with its
    short tombstone retention, by a watcher) and changes nothing after but that retention of
    ``alerts``, by a watcher's record whose options' ``table_properties`` say so
    (:meth:`pitwatch.live.alerts_table.AlertsTable._set_retention`).  A retention shortened by anything else
    would let a checkpoint drop the table's removes: it is not honoured."""
    short = delta.SHORT_RETENTION_TABLES.get(name)
    value = after.get(delta_log.RETENTION_KEY)
    watcher = record is not None and record.row is not None and record.row.get("command") == "watch"
    if before is None:
        if value in (None, delta.DELETED_FILE_RETENTION) or (short is not None and value == short and watcher):
            return None
        return (f"it creates the table with {delta_log.RETENTION_KEY} {value!r}: pitwatch creates it with "
                f"{delta.DELETED_FILE_RETENTION!r}" + (f" ({short!r} by a watcher)" if short else "")
                + "; a checkpoint's dropped removes are not taken as retention under it")
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    options = record.options() if watcher and record is not None else None
    if (changed == [delta_log.RETENTION_KEY] and short is not None and value == short and options is not None
            and options.get("table_properties") == {delta_log.RETENTION_KEY: short}):
        return None
    what = ", ".join(f"{k} {before.get(k)!r} -> {after.get(k)!r}" for k in changed)
    return (f"it changes the table's properties ({what}) and "
            + (f"{record.name()} does not say so" if record is not None else "no runs record names it")
            + f": pitwatch changes none after creating a table but {delta_log.RETENTION_KEY} of alerts, to "
            f"{delta.ALERTS_DELETED_FILE_RETENTION!r}, by a watcher's record naming it; not honoured: the "
            "table's checkpoints are checked under its retention before")


def _compaction_problem(report: Report, where: str, record: Record, actions: list[dict], before) -> dict | None:
    """A recorded commit of ``alerts`` that removes files: only a watcher's compaction may, and its
    record must say so — the same files replaced (each in the table before it), the same file
    added.  What the record says, or None with the problem in ``report``."""
    removed, added = delta.removed_paths(actions), delta.added_paths(actions)
    entry = record.compaction()
    if entry is None:
        report.problem("removed", where, f"it removes {plural(len(removed), 'file')} from the alerts table (e.g. "
                       f"{removed[0]}) and {record.name()} is no compaction's: the watchers' table is only appended "
                       "to and compacted")
        return None
    if sorted(set(removed)) != sorted(set(entry["replaced"])) or added != [entry["compacted"]]:
        report.problem("changed", where, f"it replaces other files than {record.name()} says its compaction "
                       f"replaced ({plural(len(removed), 'file')} by {', '.join(added) or 'none'}; the record: "
                       f"{plural(len(entry['replaced']), 'file')} by {entry['compacted']})")
        return None
    outside = sorted(set(removed) - before)
    if outside:
        report.problem("changed", where, f"its compaction replaces {plural(len(outside), 'file')} the table did not "
                       f"hold then (e.g. {outside[0]})")
        return None
    return entry


def _hashed(report: Report, what: str, actual: str, record: Record, want: str) -> None:
    if actual != want:
        report.problem("changed", what, f"its SHA-256 is {actual}, {record.name()} recorded {want}")


def _compacted_rows(lake_path: Lake, name: str, where: str, record: Record, entry: dict, report: Report,
                    hash_later: dict, since: bool = False) -> None:
    """A recorded compaction's rows: the new file's (when on disk) and the replaced files' (when all
    are still on disk: vacuum removes them in time) hash to the digest its record names
    (:func:`pitwatch.lake.chain.rows_sha256`); counted for the note.  A replaced file is read once: its
    SHA-256 (``hash_later``: the one recorded when it was added) from the same bytes as its rows."""
    fs, root = lake_path.fs, lake_path.root
    report.checked["compactions"] += 1
    report.checked["compacted_files"] += len(entry["replaced"])
    for what, paths in (("the file it wrote", [entry["compacted"]]),
                        (f"the {plural(len(entry['replaced']), 'file')} it replaced", entry["replaced"])):
        rows: list | None = []
        for path in paths:
            full = f"{root}/{name}/{path}"
            if fs.get_file_info(full).type != pafs.FileType.File:
                rows = None               # gone: named by the file checks (removed, or retention)
                continue
            if since and _linked(lake_path, f"{name}/{path}", report):
                rows = None
                continue
            body = chain.read_whole(fs, full)
            if path in hash_later:
                _hashed(report, f"{name}/{path}", chain.bytes_sha256(body), *hash_later.pop(path))
            if rows is not None:
                try:
                    rows.extend(chain.parquet_rows(body))
                except (pa.ArrowException, OSError) as exc:
                    rows = None
                    report.problem("changed", where, f"the rows of {what} cannot be read ({exc}): "
                                   f"{record.name()} recorded their digest {entry['rows_sha256']}")
        if rows is None:
            continue
        try:
            digest = chain.rows_sha256(rows)
        except (TypeError, ValueError) as exc:
            digest = f"(none: {exc})"
        if digest != entry["rows_sha256"]:
            report.problem("changed", where, f"the rows of {what} hash to {digest}, {record.name()} recorded "
                           f"{entry['rows_sha256']}: the compaction did not keep the rows as they were")


def _retention(removal: Removal | None, removed_at: int, sha256: str | None) -> bool:
    """Did retention remove this file?  A chained vacuum record lists it as removed (with ``sha256``
    when the run that added it recorded one; a killed vacuum's plan has none), and it had left the
    table at or before the version that vacuum planned against."""
    if removal is None or removal.absent or removal.version is None or removed_at > removal.version:
        return False
    return removal.planned or sha256 is None or removal.sha256 == sha256


def _retention_note(report: Report) -> None:
    """One note: how many files retention removed, by which vacuums, up to which gaming day."""
    n = report.checked["retention_removed"]
    if not n:
        return
    by = []
    for record, files, planned in report._vacuums.values():
        options = record.vacuum_options() or {}
        holds = ", ".join(str(h) for h in options.get("legal_holds") or []) or "none"
        days = options.get("retention_days")
        by.append(f"run {record.run_id} ({plural(files, 'file')}, retention "
                  f"{plural(days, 'day') if isinstance(days, int) else '?'}, legal holds: {holds}"
                  + (f"; killed before it recorded its end: {plural(planned, 'file')} named by its plan, chained "
                     "before it removed anything, without a SHA-256" if planned else "") + ")")
    through = report.checked["retention_removed_through"]
    report.notes.append(f"retention: {plural(n, 'file')} of the tables' history removed by pitwatch vacuum, "
                        + (f"gaming days up to {through}" if through else "of no gaming day")
                        + f": {'; '.join(by)}; each listed with its SHA-256 in the vacuum's chained runs record, "
                        "not tampering")


def _stray_files(lake_path: Lake, name, committed: set[str], report, status, start: Start | None = None,
                 added_by=None) -> None:
    """Files in the table's folder that no commit names: a killed run's, or added from outside.
    With ``start`` (``verify --since``): only in the folders of the files added since (the runs
    table's own folder), listed without recursion, and only files written after the anchored
    entry (their modification time): names and times, nothing read."""
    fs, root = lake_path.fs, lake_path.root
    folder = f"{root}/{name}"
    if start is None:
        listing = fs.get_file_info(pafs.FileSelector(folder, recursive=True))
    else:
        since_ns = _anchored_ns(start.entry)
        folders = {""} if added_by is None else {p.rpartition("/")[0] for p in added_by}
        listing = [i for f in sorted(folders)
                   for i in fs.get_file_info(pafs.FileSelector(f"{folder}/{f}".rstrip("/"), allow_not_found=True))
                   if i.mtime_ns is None or i.mtime_ns >= since_ns]
    for info in listing:
        rel = info.path[len(folder) + 1:]
        if (info.type != pafs.FileType.File or rel.startswith((delta.LOG_FOLDER + "/", delta.ARCHIVE_FOLDER + "/"))
                or rel in committed):
            continue
        run = RUN_ID.search(info.base_name)
        if name == ALERTS and ALERTS_FILE.match(info.base_name):
            report.leftover("uncommitted alerts file", f"{name}/{rel}", "written by a watcher killed during its "
                            "commit: no reader sees it; that watcher's restart removes it")
        elif run and run.group(0) in status:
            report.leftover("uncommitted file", f"{name}/{rel}", f"written by run {run.group(0)} and never committed "
                            "(an interrupted run's): no reader sees it; the next run removes it")
        else:
            report.problem("added", f"{name}/{rel}", "no commit names it and no recorded run wrote it: "
                           "put there outside pitwatch")


def _anchored_ns(entry: dict) -> int:
    """When the anchor's entry was written, in nanoseconds since the epoch (0 when it does not say)."""
    import datetime as _dt

    try:
        when = _dt.datetime.strptime(str(entry.get("anchored_at")), "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return 0
    return int(when.replace(tzinfo=_dt.timezone.utc).timestamp()) * 10**9 + when.microsecond * 1000


def _checkpoint_parts(lake_path: Lake, name: str, start: Start | None = None, base=None) -> dict[int, list[str]]:
    """Every checkpoint's part files in the table's log and archive, by version (with ``start``:
    in the log only — the archive holds the older ones)."""
    parts: dict[int, list[str]] = {}
    for folder in (delta.LOG_FOLDER, delta.ARCHIVE_FOLDER) if start is None else (delta.LOG_FOLDER,):
        for base_name in delta_log.listed(lake_path, name, folder):
            if (m := CHECKPOINT_FILE.match(base_name)):
                parts.setdefault(int(m.group(1)), []).append(base_name)
    return parts


def _chained_checkpoints(records: list[Record], report: Report, start: Start | None = None
                         ) -> dict[tuple[str, int], tuple[Record, delta_log.Checkpoint]]:
    """Every checkpoint a record names (each record carries the newest one of every table), with
    the first record that named it; and each record's carried ``reader_versions`` checked against
    the chain (its own run's versions when it is a successful run's end, else the record before's)."""
    out: dict[tuple[str, int], tuple[Record, delta_log.Checkpoint]] = {}
    carried, known = None, True      # before the first record nothing is carried
    for r in records:
        if not r.row:
            continue
        try:
            named = delta_log.parse_checkpoints(r.row.get("checkpoints"))
        except delta_log.LogError:
            report.problem("changed", f"runs/{r.path}", f"{r.name()} names checkpoints pitwatch does not write")
            named = {}
        for table, cp in named.items():
            have = out.get((table, cp.version))
            if have is None:
                out[(table, cp.version)] = (r, cp)
            elif have[1] != cp:
                report.problem("changed", f"runs/{r.path}", f"{r.name()} names checkpoint {cp.version} of {table} "
                               f"with other files or hashes than {have[0].name()}")
        mine = r.row.get("reader_versions")
        if start is not None and r is start.record:     # vouched for by the anchor: where the check starts
            carried, known = mine, mine is not None
            continue
        if mine is None:                 # a record written before the column existed
            known = False
            continue
        want = runs.next_reader_versions(carried, r.row) if known else mine
        try:
            differs = json.loads(mine) != json.loads(want)
        except ValueError:
            differs = True
        if differs:
            report.problem("changed", f"runs/{r.path}", f"{r.name()} says readers read {mine}; the chain "
                           f"before it gives {want}")
        carried, known = mine, True
    return out


def _canonical_add(add: dict) -> dict:
    """The fields of an add action a checkpoint must repeat, as comparable values."""
    stats = add.get("stats")
    try:
        stats = json.loads(stats) if isinstance(stats, str) else stats
    except ValueError:
        pass
    values = add.get("partitionValues")
    values = dict(values) if isinstance(values, (list, tuple)) else (values or {})
    return {"path": delta.unquote_path(add["path"]), "partitionValues": {str(k): v for k, v in values.items()},
            "size": add.get("size"), "modificationTime": add.get("modificationTime"),
            "dataChange": add.get("dataChange"), "stats": stats, "tags": add.get("tags") or None,
            "deletionVector": add.get("deletionVector")}


def _canonical_meta(meta: dict | None) -> dict | None:
    if meta is None:
        return None
    conf = meta.get("configuration")
    conf = dict(conf) if isinstance(conf, (list, tuple)) else (conf or {})
    fmt = meta.get("format") or {}
    return {"id": meta.get("id"), "schemaString": meta.get("schemaString"),
            "partitionColumns": list(meta.get("partitionColumns") or []), "configuration": conf,
            "provider": fmt.get("provider"), "name": meta.get("name"), "description": meta.get("description")}


def _canonical_protocol(protocol: dict | None) -> dict | None:
    if protocol is None:
        return None
    return {"minReaderVersion": protocol.get("minReaderVersion"), "minWriterVersion": protocol.get("minWriterVersion"),
            "readerFeatures": sorted(protocol.get("readerFeatures") or []),
            "writerFeatures": sorted(protocol.get("writerFeatures") or [])}


CLOCK_SLACK_MS = 10 * 60_000     # the clocks of a commit, a checkpoint and a record may differ by this much


@dataclasses.dataclass(frozen=True)
class _Window:
    """When a checkpoint was written and what it had to keep: after its version's commit (``after``,
    that commit's timestamp), before the record that chained it (``before``, its runs commit's
    timestamp; verify's own clock for a checkpoint no record chained), under the table's tombstone
    retention there (``retention``, ms)."""

    retention: int
    after: int | None
    before: int

    def must_keep(self, deleted: int) -> bool:
        """A remove of then that a checkpoint written in the window keeps (younger than the retention
        even at its end)."""
        return deleted > self.before + CLOCK_SLACK_MS - self.retention

    def must_drop(self, deleted: int) -> bool:
        """A remove a checkpoint written in the window drops (older than the retention even at its start)."""
        return self.after is not None and deleted < self.after - CLOCK_SLACK_MS - self.retention


def _when(stamp: int | None) -> str:
    import datetime as _dt

    if stamp is None:
        return "?"
    return _dt.datetime.fromtimestamp(stamp / 1000, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _checkpoint_differences(rows: list[dict], snap: delta_log.Snapshot, removed: dict[str, int],
                            window: _Window) -> list[str]:
    """How a checkpoint's actions differ from the state the JSON commits give at its version: its
    tombstones must be exactly the removes a checkpoint written in ``window`` keeps (delta-rs drops
    a remove older than the table's ``deletedFileRetentionDuration`` when it writes a checkpoint;
    one whose age crossed the retention while it may have been written may be either)."""
    out = []
    adds: dict[str, list[dict]] = {}
    metas, protocols, txns, tombstones, other = [], [], {}, set(), 0
    for row in rows:
        kinds = [k for k, v in row.items() if v is not None]
        if kinds == ["add"]:
            adds.setdefault(delta.unquote_path(row["add"]["path"]), []).append(row["add"])
        elif kinds == ["metaData"]:
            metas.append(row["metaData"])
        elif kinds == ["protocol"]:
            protocols.append(row["protocol"])
        elif kinds == ["txn"]:
            txns[row["txn"]["appId"]] = row["txn"]["version"]
        elif kinds == ["remove"]:
            tombstones.add(delta.unquote_path(row["remove"]["path"]))
        else:
            other += 1
    twice = sorted(p for p, v in adds.items() if len(v) > 1)
    if twice:
        out.append(f"{len(twice)} add action(s) listed more than once (e.g. {twice[0]}): readers would read them twice")
    missing, extra = sorted(set(snap.adds) - set(adds)), sorted(set(adds) - set(snap.adds))
    if missing:
        out.append(f"{len(missing)} file(s) of the table left out (e.g. {missing[0]})")
    if extra:
        out.append(f"{len(extra)} file(s) the table does not have (e.g. {extra[0]})")
    changed = sorted(p for p in set(adds) & set(snap.adds)
                     if _canonical_add(adds[p][0]) != _canonical_add(snap.adds[p]))
    if changed:
        first = changed[0]
        mine, theirs = _canonical_add(snap.adds[first]), _canonical_add(adds[first][0])
        fields = sorted(k for k in mine if mine[k] != theirs[k])
        out.append(f"{len(changed)} add action(s) differ from the commits' ({first}: {', '.join(fields)})")
    if len(metas) != 1 or _canonical_meta(metas[0]) != _canonical_meta(snap.metadata):
        out.append("its metaData is not the table's")
    if len(protocols) != 1 or _canonical_protocol(protocols[0]) != _canonical_protocol(snap.protocol):
        out.append("its protocol is not the table's")
    if txns != snap.txns:
        out.append(f"its app transactions {txns} are not the table's {snap.txns}")
    if tombstones - set(removed):
        out.append(f"{len(tombstones - set(removed))} remove action(s) of files the table was not seen to remove "
                   "(or removed longer ago than its retention)")
    dropped = sorted(p for p, t in removed.items() if p not in tombstones and window.must_keep(t))
    if dropped:
        out.append(f"{len(dropped)} remove action(s) the table's retention keeps left out (e.g. {dropped[0]}, removed "
                   f"{_when(removed[dropped[0]])}; retention {window.retention // 3_600_000} h, the checkpoint "
                   f"chained by {_when(window.before)})")
    kept = sorted(p for p in tombstones & set(removed) if window.must_drop(removed[p]))
    if kept:
        out.append(f"{len(kept)} remove action(s) older than the table's retention kept (e.g. {kept[0]}, removed "
                   f"{_when(removed[kept[0]])}; retention {window.retention // 3_600_000} h, its version committed "
                   f"{_when(window.after)})")
    if other:
        out.append(f"{other} action(s) pitwatch's checkpoints do not hold")
    return out


def _retention_at(replay: _Replay, version: int) -> int:
    """The tombstone retention (ms) the table's chained history gives at ``version``
    (:func:`_properties_problem`): the last honoured one at or before it; on a table whose
    properties are not followed commit by commit (``runs``), its own, never shorter than pitwatch's."""
    honoured = [v for v in replay.retention if v <= version]
    if honoured:
        return replay.retention[max(honoured)]
    snap = replay.at[version][0]
    own = _retention_of(delta_log.map_items(snap.metadata.get("configuration")) if snap.metadata else None)
    return max(own, FOREVER_MS)


def _checkpoints(lake_path: Lake, name, replay: _Replay, chained, report, start: Start | None = None) -> None:
    """Every checkpoint of the table (log and archive) re-derived from the JSON commits, action by
    action (each add once, every field, metadata, protocol, transactions), its parts against the
    record that chained them, and ``_last_checkpoint`` against what the folder holds."""
    fs, root = lake_path.fs, lake_path.root
    parts = _checkpoint_parts(lake_path, name, start)
    chained_here = {v: rc for (t, v), rc in chained.items() if t == name}
    for version, rc in sorted(chained_here.items()):
        record, cp = rc
        have = set(parts.get(version, ()))
        for file, _size, _sha in cp.parts:
            if file not in have and (start is None or fs.get_file_info(
                    f"{root}/{name}/{delta.ARCHIVE_FOLDER}/{file}").type != pafs.FileType.File):
                report.problem("removed", f"{name}/{delta.LOG_FOLDER}/{file}", f"{record.name()} chained this "
                               "checkpoint part; it is gone")
    for version, files in sorted(parts.items()):
        if version <= replay.base:
            continue                # before the checkpoint the replay starts from (verify --since): vouched for
        where = f"{name}/{delta.LOG_FOLDER}/{files[0]}" if len(files) == 1 else \
            f"{name}/{delta.LOG_FOLDER}/{version:020d}.checkpoint.*.parquet"
        rc = chained_here.get(version)
        try:
            blobs = {f: delta_log.read_log_file(lake_path, name, f) for f in files}
        except OSError as exc:
            report.problem("changed", where, f"not readable ({exc})")
            continue
        if rc is not None:
            record, cp = rc
            want = {f: sha for f, _size, sha in cp.parts}
            for f, data in sorted(blobs.items()):
                if f not in want:
                    report.problem("added", f"{name}/{delta.LOG_FOLDER}/{f}", f"a part of checkpoint {version} that "
                                   f"{record.name()} did not chain")
                elif chain.bytes_sha256(data) != want[f]:
                    report.problem("changed", f"{name}/{delta.LOG_FOLDER}/{f}", f"its SHA-256 is "
                                   f"{chain.bytes_sha256(data)}, {record.name()} chained {want[f]}")
        try:
            rows = []
            for f in sorted(blobs):
                rows.extend(chain.parquet_rows(blobs[f]))
        except (pa.ArrowException, OSError, KeyError, TypeError) as exc:
            report.problem("changed", where, f"not a readable checkpoint ({exc})")
            continue
        if version not in replay.at:
            report.problem("added", where, f"a checkpoint of version {version}, which the log does not have")
            continue
        snap, removed, committed = replay.at[version]
        window = _Window(_retention_at(replay, version), committed,
                         (rc[0].committed_ms if rc is not None and rc[0].committed_ms is not None
                          else delta_log.now_ms()))
        differences = _checkpoint_differences(rows, snap, removed, window)
        if differences:
            report.problem("changed", where, f"re-derived from the JSON commits of version {version}, it differs: "
                           + "; ".join(differences) + ": Delta readers that trust it see another table")
        elif rc is None:
            report.leftover("unchained checkpoint", where, "no runs record names it (a writer stopped between the "
                            "checkpoint and its record); re-derived from the JSON commits, it matches")
    last = f"{root}/{name}/{delta.LOG_FOLDER}/_last_checkpoint"
    if fs.get_file_info(last).type == pafs.FileType.File:
        where = f"{name}/{delta.LOG_FOLDER}/_last_checkpoint"
        try:
            with fs.open_input_stream(last) as f:
                named = json.loads(f.read())
            version = named["version"]
        except (ValueError, KeyError, TypeError, OSError):
            named, version = {}, None
        if version not in parts:
            report.problem("changed", where, f"it names checkpoint {version}, which the log does not hold")
        elif int(named.get("parts") or 1) != len(parts[version]):
            report.problem("changed", where, f"it names {named.get('parts') or 1} part(s) of checkpoint {version}, "
                           f"the log holds {len(parts[version])}")
        elif max(parts) != version:
            report.problem("changed", where, f"it names checkpoint {version}, the log's newest is {max(parts)}")


def _lake_folder(lake_path: Lake, tables, report, status) -> None:
    """The lake's own folder: its tables, settings.json, the staging of a run, the writer lock;
    nothing else."""
    from pitwatch.lake.lock import HOLDER_FILE, LOCK_FILE

    fs, root = lake_path.fs, lake_path.root
    for info in fs.get_file_info(pafs.FileSelector(root)):
        base = info.base_name
        if base in tables or base in LAKE_FILES or base.startswith(".pitwatch-write-test-"):
            continue
        if base in (LOCK_FILE, HOLDER_FILE) or (base.startswith(f".{HOLDER_FILE}") and ".tmp-" in base):
            report.leftover("lock", base, "the lake's writer lock (pitwatch.lake.lock): held by a writer now, "
                            "or left by one that was killed (the next writer takes it over)")
            continue
        if base in (WATCH_STATE, lake_registry.KEPT.folder, lake_roster.KEPT.folder) and info.type == pafs.FileType.Directory:
            continue            # the watchers' checkpoints (not evidence); the registries and rosters: _kept_files
        if base == STAGING and info.type == pafs.FileType.Directory:
            for run in fs.get_file_info(pafs.FileSelector(info.path)):
                report.leftover("staging", f"{STAGING}/{run.base_name}",
                                "the scratch folder of a run that did not end: the next run removes it")
            continue
        report.problem("added", base + ("/" if info.type == pafs.FileType.Directory else ""),
                       "pitwatch writes no such file in the lake's folder")


def _settings(lake_path: Lake, records: list, report: Report) -> None:
    """``settings.json`` against the chain (:mod:`pitwatch.lake.settings`): what the newest
    succeeded record ran with; a file one rebuild behind (killed between the rebuild's record and
    the file) is noted, not tampering. With ``--since``, only the records since are read: the file
    is checked when one of them ran with settings."""
    try:
        in_file = lake_settings.read_file(lake_path)
    except lake.LakeError as exc:
        report.problem("changed", lake_settings.FILE, str(exc))
        return
    of_records = [(r, lake_settings.of_record(r.row)) for r in records if r.row]
    found = [(r, f) for r, f in of_records if f is not None]
    if not found:
        return
    newest = found[-1][1]
    before = next((f for _r, f in reversed(found[:-1]) if not f["rebuild"]
                   or not all(lake_settings.same(k, f[k], newest[k]) for k in lake_settings.KEYS)), None)
    if in_file is None:
        report.notes.append(f"{lake_settings.FILE}: absent; the next run writes it from {newest['recorded_by']}")
        return
    verdict = lake_settings.compare(in_file, newest, before if newest["rebuild"] else None)
    if verdict == "tampered":
        report.problem("changed", lake_settings.FILE, lake_settings.tampered(lake_path, in_file, newest))
    elif verdict == "behind":
        report.notes.append(f"{lake_settings.FILE}: still the settings before the rebuild {newest['recorded_by']} "
                            "(killed before it wrote the file): the next run writes it")


def _kept_files(lake_path: Lake, records, report, start, kept: Kept) -> None:
    """The device registries or dealers' rosters the lake keeps: each file's bytes hash to its
    name; each one a record names is there; one no record names was kept by a writer killed
    before its record (a leftover; with ``since`` only the new records are read, so none is
    called that)."""
    named: dict[str, str] = {}
    for r in records:
        try:
            described = json.loads(r.row.get("options") or "{}").get(kept.key) if r.row else None
        except (ValueError, AttributeError, TypeError):
            described = None      # a record rewritten: its hash shows the change
        if isinstance(described, dict) and isinstance(described.get("kept"), str):
            named.setdefault(described["kept"], r.name())
    fs, root = lake_path.fs, lake_path.root
    folder = f"{root}/{kept.folder}"
    found = set()
    if fs.get_file_info(folder).type == pafs.FileType.Directory:
        for info in fs.get_file_info(pafs.FileSelector(folder)):
            where = f"{kept.folder}/{info.base_name}"
            match = kept.file.match(info.base_name)
            if info.type == pafs.FileType.File and kept.temp.match(info.base_name):
                report.leftover(f"{kept.kind} being kept", where, f"a {kept.what} a writer was keeping "
                                "(or was killed while writing): not evidence, never named by a record")
                continue
            if info.type != pafs.FileType.File or match is None:
                report.problem("added", where, f"pitwatch keeps no such file among the {kept.what} files")
                continue
            found.add(where)
            actual = chain.file_sha256(fs, info.path)
            if actual != match.group(1):
                report.problem("changed", where, f"its SHA-256 is {actual}, not the one its name gives: "
                               f"a {kept.what} kept in the lake was changed")
            elif where not in named and start is None:
                report.leftover(kept.kind, where, f"a {kept.what} no record names (kept by a writer killed "
                                "before its record)")
    for where, by in sorted(named.items()):
        if where not in found:
            report.problem("removed", where, f"{by} names it as the {kept.what} it used")
    report.checked[kept.checked] = len(found)
