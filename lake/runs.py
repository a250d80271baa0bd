"""The ``runs`` table: one record per run, written when it starts and when it ends."""
from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import platform
import uuid
from collections import Counter

import pyarrow as pa

from pitwatch import __version__
from pitwatch.config import SEVERITIES
from pitwatch.lake import Lake, chain
from pitwatch.lake import parquet as lake
from pitwatch.schemas.arrow import RUNS, conform, rows_to_table
from pitwatch.schemas.contract import CONTRACT_VERSION


def versions() -> str:
    """The versions a run record names.  Beam's from its package metadata, not by importing it: the
    watcher (which never runs Beam) paid ~0.8 s of import on its first alerts commit, on the
    checkpoint thread, holding the loop's interpreter lock."""
    from importlib.metadata import version

    return json.dumps({
        "pitwatch": __version__, "contract": CONTRACT_VERSION, "apache_beam": version("apache-beam"),
        "pyarrow": pa.__version__, "python": platform.python_version(), "chain": CHAIN_FORMAT,
    }, sort_keys=True)


# The chain's format, in every record's ``versions`` (:func:`versions`): 2 = its writer records a
# chained intent (:func:`write_intent_record`) before any commit it makes while its run has not
# ended; ``pitwatch verify`` holds a run whose records say so to its intents, and gives a run
# recorded without it (an older pitwatch's) the leniency of before (docs/verify.md, "Intents").
CHAIN_FORMAT = 2
INTENT_STATUS = "committing"       # the status of an intent record: the run is about to commit
INTENT_KEY = "intent"              # its options' member: the commits it is about to make


def chain_format(record: dict) -> int:
    """The chain format a record's ``versions`` names (1: none, an older pitwatch's record)."""
    try:
        found = json.loads(record.get("versions") or "{}").get("chain")
    except (ValueError, TypeError, AttributeError):
        return 1
    return found if isinstance(found, int) and not isinstance(found, bool) else 1


def write_intent_record(lake_path: Lake, meta: dict, intended: list[dict]) -> int | None:
    """Record, chained, the commits a writer is about to make (before the first of them): one
    record for the whole commit phase, status :data:`INTENT_STATUS`, its options ``{"intent":
    [{table, version, operation, actions_sha256, files: [{path, sha256}]}, …]}`` — each commit as
    :func:`pitwatch.lake.delta.intended_commits` plans it.  A commit of a run that did not succeed is
    a killed run's leftover for ``pitwatch verify`` only when an intent of that run names it;
    any other is tampering, whatever run its commit info names (``docs/verify.md``, "Intents").
    Nothing is written (None) when ``intended`` is empty.  The caller holds the lake's lock."""
    if not intended:
        return None
    record = run_record({**meta, "options": json.dumps({INTENT_KEY: intended}, sort_keys=True)}, INTENT_STATUS)
    return write_run_record(lake_path, record)


def new_run_id(now: _dt.datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def run_record(meta: dict, status: str, totals: dict | None = None, ended=None) -> dict:
    """A row of the ``runs`` table from the run's metadata and its bookkeeping totals."""
    totals = totals or {}
    by_severity = {s: totals.get(f"findings_{s}", 0) for s in SEVERITIES}
    return {
        "run_id": meta["run_id"], "command": meta["command"],
        "inputs": sorted(totals.get("inputs", []), key=lambda i: i["path"]),
        "lines_read": totals.get("read", 0), "accepted": totals.get("accepted", 0),
        "rejected": totals.get("rejected", 0), "duplicates": totals.get("duplicates", 0),
        "gaming_days": sorted({_dt.date.fromisoformat(d) for d in totals.get("replayed_days", [])}),
        "findings": sum(by_severity.values()),
        "findings_by_severity": json.dumps(by_severity),
        "versions": meta["versions"], "options": meta["options"], "status": status,
        "started": _dt.datetime.fromisoformat(meta["started"]), "ended": ended,
        "damaged_files": totals.get("damaged_files", 0), "bytes_not_read": totals.get("bytes_not_read", 0),
        "damage": sorted(totals.get("damage", []), key=lambda d: d["path"]),
        "table_versions": json.dumps(totals["table_versions"], sort_keys=True) if totals.get("table_versions") else None,
    }


def finished_run_record(meta: dict, totals: dict) -> dict:
    """The record of a finished run: ``failed: …`` when its lines or its rows do not reconcile."""
    rec = run_record(meta, "succeeded", totals, ended=_dt.datetime.now(_dt.timezone.utc))
    problem = unreconciled(rec, totals.get("written", []), totals)
    if problem:
        rec["status"] = f"failed: {problem}"
    return rec


def unreconciled(rec: dict, written: list, totals: dict | None = None) -> str | None:
    """Why a run's counts do not add up, or None.

    Every line read is accepted, rejected or a duplicate; every event the
    replayed days' ``events`` files hold is an accepted line of this run or
    one the lake held (``carried``); the ``rejects`` files hold exactly this
    run's rejected lines and damaged files (one row each, counted apart from
    lines), the ones the replayed days had, and every copy of an event in
    conflict; every staged event was decided; and no file is written twice.
    A run that fails these checks must not pass for a good one.
    """
    totals = totals or {}
    if rec["lines_read"] != rec["accepted"] + rec["rejected"] + rec["duplicates"]:
        return (f"counts do not reconcile: read {rec['lines_read']} != accepted {rec['accepted']}"
                f" + rejected {rec['rejected']} + duplicates {rec['duplicates']}")
    paths = Counter((f["table"], f["path"]) for f in totals.get("files", []))
    twice = sorted(f"{table}/{path}" for (table, path), n in paths.items() if n > 1)
    if twice:
        return f"file written twice in one run, rows may be lost: {', '.join(twice)}"
    carried = totals.get("carried", 0)
    day_rejected = rec["rejected"] - (totals.get("staged_rejects", 0) - rec.get("damaged_files", 0))
    expected_rejects = (totals.get("staged_rejects", 0) + day_rejected + totals.get("carried_rejected", 0)
                        + totals.get("carried_rejects", 0))
    for name, expected in (("events", rec["accepted"] + carried), ("rejects", expected_rejects)):
        rows = sum(n for table, _, n in written if table == name)
        if rows != expected:
            return f"rows do not reconcile: the {name} files hold {rows} rows, the run counted {expected}"
    staged = totals.get("staged_events")
    decided = rec["accepted"] + rec["duplicates"] + day_rejected
    if staged is not None and staged != decided:
        return f"rows do not reconcile: {staged} events were read, {decided} decided"
    return None


# A runs commit's info says whether the record it adds is the watcher's (:func:`is_watcher`): "true"
# or "false" (absent: a commit written before the key existed).  The night's walks back over the
# records (:func:`records_newest_first`, ``skip_watchers``) pass the watcher's — thousands a day —
# without reading their record files.
WATCHER_KEY = "pitwatch.watcher"
REGISTRY_KEY = "pitwatch.devices"     # a watcher's record that names a device registry (pitwatch.lake.registry)

HASH_FIELD = "record_sha256"
PREV_FIELD = "prev_record_sha256"
CHAIN_RETRIES = 5


def write_run_record(lake_path: Lake, record: dict, written=None, once: bool = False,
                     since: dict[str, int] | None = None) -> int | None:
    """Append ``record`` to the ``runs`` Delta table (one commit), chained; returns the table's version.

    A run appends a record when it starts (``running``), its intent just before it commits
    (:func:`write_intent_record`) and one when it ends; the latest record of a run id is its state
    (:func:`read_run_record`, the analysts' ``runs`` view; an intent is never that).  The caller
    holds the lake's lock (:mod:`pitwatch.lake.lock`), except the live service, which records its
    alerts commits outside it (:mod:`pitwatch.live.alerts_table`); :func:`runs_append_lock` serialises the
    two appends.

    Every writer of the lake (a run, ``vacuum``, ``migrate``) records through here, so every record
    is chained (:mod:`pitwatch.lake.chain`, ``docs/verify.md``): it carries the hash of the record
    before it, of that record's data file and of the runs commit that added it
    (:func:`runs_head`), and every commit the writer made to the other tables since — the commits
    at the end of each table's log whose commit info names ``record["run_id"]`` — with the SHA-256
    of the commit file, of the table's paths at that version, and of every data file they added
    (``written``: the :class:`pitwatch.lake.delta.DataFile` the writer wrote, hashed as written; a file
    not among them is hashed from the lake).  Another writer's record committed in between is
    chained first, then this one (:data:`CHAIN_RETRIES`).

    ``once``: nothing is written (None) when a record of ``record["run_id"]`` is there already —
    decided under the append lock, so two writers that may both record one commit (a watcher
    recording the commit another made before it was killed) record it once.  ``since``: for the
    tables named, the writer's commits are those from that version on (other writers' commits in
    between skipped), not only the ones at the end of the log — the ``alerts`` table, which
    several watchers append to without the lake's lock."""
    with runs_append_lock(lake_path):
        if once and record["run_id"] in recorded_run_ids(lake_path):
            return None
        return _append_record(lake_path, record, written, since)


def recorded_run_ids(lake_path: Lake) -> set[str]:
    """Every run id the ``runs`` table has a record of (none: an empty set)."""
    from pitwatch.lake import delta

    if not delta.is_table(lake_path, "runs"):
        return set()
    return set(lake.read_table(lake_path, "runs").column("run_id").to_pylist())


RUNS_APPEND_LOCK = "_runs.lock"


@contextlib.contextmanager
def runs_append_lock(lake_path: Lake):
    """An operating-system lock (``flock``) on ``LAKE/_runs.lock`` around one append to ``runs``.

    A run appends under the lake's lock; the live service (:mod:`pitwatch.live.alerts_table`) appends a
    record per alerts commit *outside* it, so two appends can meet: without this lock both would
    read the same head and one would fork the chain (or fail delta-rs's concurrent-transaction
    check).  Held for the few milliseconds of one append only.  A lake on an object store has no
    ``flock``: there the lake's lock is a lease (:mod:`pitwatch.lake.lock`) that every writer but
    the watcher holds, so the only appends that can meet are a run's and a watcher's; the second
    is refused by its commit, put at the exact version it read by a conditional put
    (:func:`pitwatch.lake.delta._put_commit`, never moved past the other's as delta-rs would move a
    blind append), and chained again from the new head (:class:`pitwatch.lake.delta.StaleWriter`,
    :data:`CHAIN_RETRIES`).  A lease here would cost two round trips to the store for each record,
    every 30 s a watcher commits."""
    from pitwatch.lake import delta

    if not delta.local(lake_path):
        yield
        return
    root = lake_path.root
    fd = os.open(os.path.join(root, RUNS_APPEND_LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _append_record(lake_path: Lake, record: dict, written=None, since=None) -> int:
    from pitwatch.lake import delta, delta_log

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    commits, added = writer_commits(lake_path, record["run_id"], written or (), since)
    for attempt in range(CHAIN_RETRIES):
        head = runs_head(lake_path)
        checkpoints = _new_checkpoints(lake_path, head, {c["table"] for c in commits} | {"runs"})
        row = rows_to_table([{**record, "commits": commits, "added_files": added,
                              "prev_record_file_sha256": head and head["record_file_sha256"],
                              "prev_runs_commit_sha256": head and head["runs_commit_sha256"],
                              "checkpoints": delta_log.dump_checkpoints(checkpoints),
                              "reader_versions": _reader_versions(lake_path, head, record)}], RUNS).to_pylist()[0]
        row = chain.link(head and {HASH_FIELD: head["record_sha256"]}, row, HASH_FIELD, PREV_FIELD)
        table = rows_to_table([row], RUNS)
        written_file = lake.write_data_file(lake_path, "runs", None, f"run-{record['run_id']}-{stamp}-{attempt}.parquet",
                                            table)
        try:
            return delta.commit_replays(lake_path, "runs", [written_file], None, run_id=record["run_id"],
                                        fence_at_start=head["fence"] if head else 0,
                                        info=_commit_info(record))
        except delta.StaleWriter:
            fs, root = lake_path.fs, lake_path.root
            fs.delete_file(f"{root}/runs/{written_file.path}")
            if attempt == CHAIN_RETRIES - 1:
                raise
    raise AssertionError("unreachable: the last attempt re-raises its StaleWriter")


def _new_checkpoints(lake_path: Lake, head: dict | None, tables) -> dict:
    """The chain head's checkpoints, with a new one of each of ``tables`` that is due
    (:func:`pitwatch.lake.delta.checkpoint_if_due`: this writer's tables at their versions now,
    and ``runs`` at the head's version, before this record's own commit)."""
    from pitwatch.lake import delta

    chained = dict(head["checkpoints"]) if head else {}
    for name in sorted(tables):
        if name == "runs" and head is None:
            continue
        if not delta.is_table(lake_path, name):
            continue
        made = delta.checkpoint_if_due(lake_path, name, chained)
        if made is not None:
            chained[name] = made
    return chained


READ_LATEST = '"latest"'      # reader_versions of a lake only watchers wrote: every table as it is now


def _reader_versions(lake_path: Lake, head: dict | None, record: dict) -> str:
    """The versions readers read as of ``record``, as JSON: its own ``table_versions`` when it is
    a successful run's end; else the head's, carried forward, except that the first record of a
    writer other than a watcher on a lake only watchers wrote makes it ``null`` (no successful run:
    readers see no table until one ends); :data:`READ_LATEST` on a lake only watchers wrote (their
    table is read at its latest version).  A head written before the column existed: found once by
    reading every record (:func:`last_successful_versions`)."""
    if head is None:
        return next_reader_versions(None, record)
    carried = head["reader_versions"]
    if carried is None:
        found = last_successful_versions(lake_path)
        if found is not None:
            carried = json.dumps(found, sort_keys=True)
        else:
            only_watchers = {r["command"] for r in latest_records(lake.read_table(lake_path, "runs"))} <= {"watch"}
            carried = READ_LATEST if only_watchers else "null"
    return next_reader_versions(carried, record)


def next_reader_versions(previous: str | None, record: dict) -> str:
    """The ``reader_versions`` of ``record`` after a record carrying ``previous`` (None: it is the
    chain's first): the rule :func:`_reader_versions` writes and ``pitwatch verify`` checks."""
    if record.get("status") == "succeeded" and record.get("table_versions"):
        return record["table_versions"]
    watcher = record.get("command") == "watch"
    if previous is None:
        return READ_LATEST if watcher else "null"
    if previous == READ_LATEST and not watcher:
        return "null"
    return previous


def chained_checkpoints(lake_path: Lake) -> dict:
    """The newest chained checkpoint of every table, as the chain's head records it ({} for a lake
    whose head predates checkpoints, or has no record)."""
    from pitwatch.lake import delta_log

    return delta_log.head_checkpoints(lake_path)


def runs_head(lake_path: Lake) -> dict | None:
    """The chain's head: the last record of ``runs`` (the one its last commit added), that
    commit's version and SHA-256, the record file's SHA-256 and the record's hash, its carried
    checkpoints and reader versions; None when the lake has no record.  What the next record
    links to and what the anchor keeps.  Reads the log folder's listing (kept short by the
    archive), one commit and one record file: the same cost on a lake of any age."""

    from pitwatch.lake import delta, delta_log

    versions = delta_log.log_versions(lake_path, "runs") or delta_log.history_versions(lake_path, "runs")
    if not versions:
        return None
    version = versions[-1]
    data, actions = delta.read_commit(lake_path, "runs", version)
    paths = delta.added_paths(actions)
    if len(paths) != 1:
        raise lake.LakeError(f"runs commit {version} adds {len(paths)} files, not one record: the lake is not intact "
                             "(pitwatch verify)")
    fs, root = lake_path.fs, lake_path.root
    path = f"{root}/runs/{paths[0]}"
    body = chain.read_whole(fs, path)
    rows = chain.parquet_rows(body)       # never pq.read_table(pa.BufferReader(bytes)): see parquet_rows
    if len(rows) != 1:
        raise lake.LakeError(f"runs/{paths[0]} holds {len(rows)} records, not one: the lake is not intact "
                             "(pitwatch verify)")
    checkpoints = delta_log.parse_checkpoints(rows[0].get("checkpoints"))
    # the fence: the head commit's own app transaction (every record's commit carries one,
    # pitwatch.lake.delta._append), not the table's snapshot, whose checkpoint names every record
    # (a cold watcher commit read ~1,500 adds on the bench's 14-night lake: one per record)
    fence = next((int(a["txn"]["version"]) for a in actions if isinstance(a.get("txn"), dict)
                  and a["txn"].get("appId") == delta.APP_ID), None)
    if fence is None:
        snap = delta_log.snapshot(lake_path, "runs", version, checkpoints)
        fence = snap.txns.get(delta.APP_ID, 0) if snap is not None else 0
    return {"runs_version": version, "runs_commit_sha256": chain.bytes_sha256(data), "record_path": paths[0],
            "record_file_sha256": chain.bytes_sha256(body), "record_sha256": rows[0].get(HASH_FIELD),
            "run_id": rows[0].get("run_id"), "status": rows[0].get("status"),
            "checkpoints": checkpoints, "reader_versions": rows[0].get("reader_versions"),
            "fence": fence}


def writer_commits(lake_path: Lake, run_id: str, written, since: dict[str, int] | None = None
                   ) -> tuple[list[dict], list[dict]]:
    """The commits at the end of every other table's log that name ``run_id`` (for a table in
    ``since``: every one from that version on), and the data files they added (see
    :func:`write_run_record`)."""
    from pitwatch.lake import delta, delta_log

    hashed = {(f.table, f.path): f for f in written}
    fs, root = lake_path.fs, lake_path.root
    commits, added = [], []
    for name in delta.tables_on_disk(lake_path):
        if name == "runs":
            continue
        mine = []
        # the table's last commit from its log folder (kept short by the archive), not its snapshot:
        # a table this writer did not commit (the watcher's alerts, for a run) is read one commit deep
        versions = delta_log.log_versions(lake_path, name) or delta_log.history_versions(lake_path, name)
        for version in range(versions[-1] if versions else -1, -1, -1):
            if since is not None and name in since and version < since[name]:
                break
            data, actions = delta.read_commit(lake_path, name, version)
            if delta.commit_writer(actions) != run_id:
                if since is not None and name in since:
                    continue
                break
            mine.append((version, data, actions))
        for version, data, actions in reversed(mine):
            snap = delta_log.snapshot(lake_path, name, version)
            assert snap is not None             # its commit was just read: the table has this version
            paths = snap.paths()
            commits.append({"table": name, "version": version, "sha256": chain.bytes_sha256(data),
                            "files_sha256": chain.paths_sha256(paths), "operation": delta.commit_operation(actions)})
            for action in actions:
                if not isinstance(action.get("add"), dict):
                    continue
                path = delta.added_paths([action])[0]
                known = hashed.get((name, path))
                added.append({"table": name, "path": path,
                              "size": known.size if known else action["add"].get("size"),
                              "rows": known.rows if known else None,
                              "sha256": known.sha256 if known else chain.file_sha256(fs, f"{root}/{name}/{path}")})
    return commits, added


def is_watcher(record: dict) -> bool:
    """A record of the live service's alerts commits (command ``watch``: :mod:`pitwatch.live.alerts_table`;
    ``… watch …``: a command line naming it)."""
    command = record.get("command") or ""
    return command == "watch" or " watch" in command


def latest_records(table) -> list[dict]:
    """The latest record of every run id (a run's ``running`` record is superseded by its end).
    A run's intent record (:data:`INTENT_STATUS`) supersedes none: a run killed during its commit
    is still ``running`` (its start record), until its end is recorded."""
    latest: dict[str, dict] = {}
    for r in table.to_pylist():
        have = latest.get(r["run_id"])
        intent = r["status"] == INTENT_STATUS and r["ended"] is None
        if have is None or (have["status"] == INTENT_STATUS and have["ended"] is None and not intent) or (
                have["ended"] is None and r["ended"] is not None) or (
                have["ended"] is not None and r["ended"] is not None and r["ended"] >= have["ended"]):
            latest[r["run_id"]] = r
    return sorted(latest.values(), key=lambda r: (r["started"], r["run_id"]))


RECORDS_READ = [0]    # runs records read by :func:`records_newest_first` in this process (the tests' measure)


def newest_naming(lake_path: Lake, key: str) -> tuple[object, str | None]:
    """What the newest succeeded record whose options name ``key`` says of it, and that record's
    run id; (None, None) when none does.  Read from the chain's head back (watchers' records passed
    over unread) to the newest batch run at most (its options hold ``night``; one that names no
    ``key`` is from before the key existed: (None, its run id)): a day's records, whatever the
    lake's age.  The device registry, the dealers' roster and the reviews' version are found so."""
    for record in records_newest_first(lake_path, skip_watchers=True):
        if record.get("status") != "succeeded":
            continue
        try:
            options = json.loads(record.get("options") or "{}")
        except ValueError:
            continue
        if not isinstance(options, dict):
            continue
        if key in options:
            return options[key], record.get("run_id")
        if "night" in options:
            return None, record.get("run_id")
    return None, None


def records_newest_first(lake_path: Lake, skip_watchers: bool = False):
    """The records of ``runs``, newest first, one commit and its record file at a time: from the
    chain's head down the log (and the archive), reading only as far as the caller goes.  A reader
    that stops at a record it can name reads the same on a lake of any age; one that never stops
    reads the whole table (as :func:`latest_records` of ``lake.read_table`` would).  Each record
    has every column of the table's schema (a column its file predates is None).

    ``skip_watchers``: the records of a commit whose info says they are the watcher's
    (:data:`WATCHER_KEY`) are left out unread — their commit is read, not their file (a commit
    older than the key: its file is read, and its watcher's records are given)."""
    from pitwatch.lake import delta, delta_log

    if not delta.is_table(lake_path, "runs"):
        return
    versions = delta_log.log_versions(lake_path, "runs") or delta_log.history_versions(lake_path, "runs")
    if not versions:
        return
    fs, root = lake_path.fs, lake_path.root
    for version in range(versions[-1], -1, -1):
        try:
            _data, actions = delta.read_commit(lake_path, "runs", version)
        except FileNotFoundError:
            raise lake.LakeError(f"runs: the log has no commit {version}: the lake is not intact "
                                 "(pitwatch verify)") from None
        if skip_watchers and _watchers_commit(actions):
            continue
        for path in reversed(delta.added_paths(actions)):
            rows = _record_rows(fs, f"{root}/runs/{path}")
            RECORDS_READ[0] += len(rows)
            yield from reversed(rows)


def _commit_info(record: dict) -> dict[str, str]:
    """What a runs commit's info says of its record: the watcher's or not, and (a watcher's) whether
    it names a device registry given to the watcher, which readers of the lake's registry need."""
    info = {WATCHER_KEY: "true" if is_watcher(record) else "false"}
    try:
        options = json.loads(record.get("options") or "{}")
    except ValueError:
        options = {}
    if isinstance(options, dict) and isinstance(options.get("devices"), dict):
        info[REGISTRY_KEY] = "true"
    return info


def _watchers_commit(actions: list[dict]) -> bool:
    """The runs commit's info says the record it adds is the watcher's (:data:`WATCHER_KEY`) and
    names no device registry (:data:`REGISTRY_KEY`: such a record is never passed over)."""
    return any(isinstance(a.get("commitInfo"), dict) and a["commitInfo"].get(WATCHER_KEY) == "true"
               and a["commitInfo"].get(REGISTRY_KEY) != "true" for a in actions)


def _record_rows(fs, path: str) -> list[dict]:
    """The rows of one record file, as ``lake.read_table`` gives them (the table's schema; a
    column the file predates is null)."""
    import pyarrow.parquet as pq

    body = chain.read_whole(fs, path)      # read on this thread: see chain.parquet_rows
    table = pq.ParquetFile(pa.BufferReader(body), pre_buffer=False).read(use_threads=False)
    return conform(table, RUNS).to_pylist()


def read_run_record(lake_path: Lake, run_id: str) -> dict:
    """The latest record of ``run_id`` (:func:`latest_records`' choice), read back from the chain's
    head only as far as the run's first record: a run starts with its ``running`` record (ended
    null) and every later record of it comes after that one, so the records before it cannot
    change the answer.  The nightly run reads its own summary here: the records written while it
    ran (its own two, the watcher's few), whatever the lake's age.  KeyError when no record names
    it (then the whole table was read)."""
    mine = []
    for r in records_newest_first(lake_path):
        if r["run_id"] != run_id:
            continue
        mine.append(r)
        if r["ended"] is None and r["status"] == "running":
            break
    if not mine:
        raise KeyError(run_id)
    return latest_records(pa.Table.from_pylist(list(reversed(mine)), schema=RUNS))[0]


def last_successful_versions(lake_path: Lake, as_of: str | None = None,
                             current_when_none: bool = False) -> dict[str, int] | None:
    """:func:`pitwatch.lake.versions.pinned_versions` by reading every record of ``runs`` (the ``as_of`` search, and a
    lake whose head predates ``reader_versions``).  ``current_when_none``: a lake with no
    successful run's record is read as its tables are now."""
    from pitwatch.lake import delta

    table = lake.read_table(lake_path, "runs") if delta.is_table(lake_path, "runs") else None
    if table is None or set(table.column("command").to_pylist()) <= {"watch"}:
        if as_of is not None or not current_when_none:
            return None
        return {name: v for name in lake.LAKE_TABLES if (v := delta.current_version(lake_path, name)) is not None}
    done = [r for r in latest_records(table) if r["status"] == "succeeded" and r.get("table_versions")]
    if as_of is not None:
        by_id = [r for r in done if r["run_id"] == as_of]
        if by_id:
            done = by_id
        else:
            when = parse_as_of_time(as_of)
            done = [r for r in done if r["ended"] is not None and r["ended"] <= when]
    if not done:
        return None
    last = max(done, key=lambda r: (r["ended"], r["run_id"]))
    return json.loads(last["table_versions"])


def parse_as_of_time(text: str) -> _dt.datetime:
    """An ``--as-of`` timestamp (ISO 8601; no zone: UTC); ValueError saying what it expects."""
    try:
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--as-of {text!r} is neither a run id of a successful run nor a timestamp "
                         "(2026-11-29T07:00:00+00:00)") from None
    return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)
