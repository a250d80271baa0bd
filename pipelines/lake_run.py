"""One way to write the lake: a run adds its files' events to the days they fall in, replays
from the first day it changed, and commits everything at once.

1. **Ingest** (:mod:`pitwatch.pipelines.staging`): the run's files are read and decoded once; their
   events are put aside by gaming day, their rejected lines apart.
2. **Plan**: the days to replay are every day from the first one the run changed (a day with
   new events, a day holding events of an input file the run reads again — the file is the unit
   of correction —, the night's day, ``--rebuild-from``) to the lake's last, each starting from
   the state the day before left (:mod:`pitwatch.lake.state`).
3. **Replay** each day in order (:mod:`pitwatch.pipelines.graph`), from its events old and new, and stop
   at the first day the run did not change whose day before ended with the state the lake holds
   (:func:`replay_days`; a day where only the carried pack index differs gets the cross-pack
   repeat check alone: :mod:`pitwatch.pipelines.late_repeats`).  A run replaying more than its night says
   so first (:func:`announce`).
4. **Commit** (:func:`commit_run`, in the launcher once the pipelines have ended): when the counts
   reconcile, the run's intent (one chained ``runs`` record naming every commit it is about to
   make: :func:`pitwatch.lake.delta.intended_commits`, ``docs/verify.md`` "Intents"), each table's
   files in one Delta transaction (:mod:`pitwatch.lake.delta`: a replayed day's earlier files removed
   in it), then the ``runs`` record naming every table's version.

So ``run A; run B`` leaves the lake of ``run A B``, in any order and across days, and a nightly
run is this with the inbox's folders for its files.  A reader pinned to the last successful run
(:func:`pinned_versions`) never sees half a run; a killed run's files are no part of any table
version and the next run removes them (and rolls back a commit it left half done).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging

from pitwatch.lake import Lake, delta, finding_changes, runs, state
from pitwatch.lake.versions import pinned_versions
from pitwatch.pipelines.graph import COUNTED_TABLES, DayPlan, build_pipeline
from pitwatch.pipelines.staging import STAGING
from pitwatch.wording import plural

log = logging.getLogger("pitwatch")

DATA_TABLES = ("events", "rejects", "rounds", "packs", "findings", finding_changes.TABLE, "rules", state.TABLE)
ALL_TABLES = DATA_TABLES + ("runs",)


@dataclasses.dataclass(frozen=True)
class Night:
    """The nightly form's extras: the night's day (replayed even with no file), ``--rebuild-from``
    (the lake's events from that day on are dropped: only the inbox's remain), and the inbox
    folders read, with their listings (kept in the days' manifests)."""

    day: str
    rebuild_from: str | None = None
    retention_days: int = 7
    listings: dict = dataclasses.field(default_factory=dict, hash=False, compare=False)


# On an object store (no flock for the runs append lock) a runs record file is a leftover only once
# it is this old: a watcher writes its record file, then commits it, outside the lake's lease, and a
# file caught between the two is no leftover.  A watcher's restart removes its own.
RUNS_LEFTOVER_GRACE = 600.0      # seconds


def remove_leftovers(lake_path: Lake) -> list[str]:
    """Remove the files of runs that never committed them (killed, failed) and their staging.
    (Files a run killed *during* its commit did commit are no part of the versions readers read
    and are removed from the tables by the next commit: :func:`commit_run`.)  ``runs`` under its
    append lock on a disk, older than :data:`RUNS_LEFTOVER_GRACE` on an object store: the watcher
    appends its records without the lake's lock, each a record file written and then committed,
    and a file between the two is no leftover (the other tables outside it: the watcher's records
    wait on that lock)."""
    import pyarrow.fs as pafs

    gone = delta.remove_leftovers(lake_path, [name for name in ALL_TABLES if name != "runs"])
    fs, root = lake_path.fs, lake_path.root
    if lake_path.local:
        with runs.runs_append_lock(lake_path):      # the watcher's record file between its write and its commit
            gone += delta.remove_leftovers(lake_path, ["runs"])     # (only runs: the watcher waits on the lock)
    else:   # no append lock on a store: a record file younger than the grace may be a watcher's, about to commit
        young = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(seconds=RUNS_LEFTOVER_GRACE)
        for info in fs.get_file_info(delta.leftover_files(lake_path, ["runs"])):
            if info.mtime is not None and info.mtime.astimezone(_dt.timezone.utc) < young:
                fs.delete_file(info.path)
                gone.append(info.path)
    if fs.get_file_info(f"{root}/{STAGING}").type == pafs.FileType.Directory:
        fs.delete_dir(f"{root}/{STAGING}")
    if gone:
        log.info("removed %s left by an interrupted run", plural(len(gone), "file"))
    return gone


def record_killed_runs(lake_path: Lake, run_id: str) -> list[str]:
    """Runs whose last record still says ``running`` while this one holds the lake's lock were
    killed (``kill -9``, a power cut): each gets its end recorded, so no run stays ``running``
    (a watcher's records are its own).  Their ids.

    Read back from the chain's head only as far as the start of the last run that made this same
    check (:func:`_checked_before`): a run checks *before* it writes its ``running`` record, and
    every writer but the watcher writes under the lake's lock, so every run that started before
    that record had either ended or been recorded as killed by then — the records before it cannot
    name another.  So the night reads the records since the last night (its watcher's, a vacuum's),
    whatever the lake's age.  A carried column (the runs still open, in every record) would read
    one record only, but it is a second account of what the records already say, to be kept true
    by every writer and checked by ``verify``; the walk back needs no new column and reads the same
    records ``latest_records`` would decide from."""
    import datetime as _dt

    if not delta.is_table(lake_path, "runs"):
        return []
    since_last_check = []
    for r in runs.records_newest_first(lake_path, skip_watchers=True):   # a watcher's closes none, stops none
        since_last_check.append(r)
        if r["run_id"] != run_id and _checked_before(r):
            break
    import pyarrow as pa

    from pitwatch.schemas.arrow import RUNS

    closed = []
    for r in runs.latest_records(pa.Table.from_pylist(list(reversed(since_last_check)), schema=RUNS)):
        if r["status"] != "running" or r["run_id"] == run_id or runs.is_watcher(r):
            continue
        runs.write_run_record(lake_path, {
            **r, "status": f"interrupted: it ended without recording its end (killed?); found by run {run_id}",
            "ended": _dt.datetime.now(_dt.timezone.utc)})
        closed.append(r["run_id"])
    if closed:
        log.warning("recorded %s as interrupted: %s", plural(len(closed), "killed run"), ", ".join(closed))
    return closed


def _checked_before(record: dict) -> bool:
    """``record`` is the ``running`` record of a run of this module (``pitwatch run``, one-off or
    nightly: its options name the Beam runner), which recorded the killed runs before writing it."""
    if record["status"] != "running" or record["ended"] is not None or runs.is_watcher(record):
        return False
    try:
        options = json.loads(record["options"] or "{}")
    except ValueError:
        return False
    return isinstance(options, dict) and "runner" in options and "beam_args" in options


def input_files_by_day(ingest: dict) -> dict[str, set[str]]:
    """The run's input files with events on each gaming day (from its staged files)."""
    out: dict[str, set[str]] = {}
    for entry in ingest.get("staged", []):
        out.setdefault(entry[0], set()).update(entry[3])
    return out


def plan_days(lake_path: Lake, run_id: str, staged_days: list[str], run_files: frozenset, reject_day: str,
              night: Night | None, result_dir: str, retention_days: int = 7,
              input_files: dict[str, set[str]] | None = None) -> list[DayPlan]:
    """The days to replay, in order, with their sources (see the module doc): what the lake holds
    is what the last successful run committed (:func:`pinned_versions`).  ``input_files``: the
    run's input files with events on each day (the day's line in the log counts them)."""
    pinned = pinned_versions(lake_path) or {}
    manifests = state.manifests(lake_path, pinned.get(state.TABLE))
    replaced_days = {d for d, m in manifests.items() if run_files & set(m.get("files", ()))}
    damage_days = _staged_reject_days(lake_path, result_dir)    # damaged files' rows: their last line's day
    changed = set(staged_days) | replaced_days | {reject_day} | damage_days
    if night is not None:
        changed |= {night.day} | ({night.rebuild_from} if night.rebuild_from else set())
    # a day a one-off run closed at its end is no state to continue from: it is replayed again
    changed |= {d for d, m in manifests.items() if m.get("closed_at_end") and d < max(changed)}
    first = min(changed)
    days = sorted({d for d in manifests if d >= first} | changed)
    earlier = [d for d in manifests if d < first]
    prior = earlier[-1] if earlier else None
    if prior is not None:
        state.check_versions(prior, manifests[prior])
    prior_files = tuple(state.committed_files(lake_path, prior, pinned.get(state.TABLE))) if prior else ()
    carried_events = delta.files_at(lake_path, "events", pinned.get("events"))
    carried_rejects = delta.files_at(lake_path, "rejects", pinned.get("rejects"))
    rebuild = night.rebuild_from if night is not None else None
    state_files = delta.files_at(lake_path, state.TABLE, pinned.get(state.TABLE))    # one open, every day's
    plans = []
    for d in days:
        close_at_end = night is None and d == days[-1]
        folder = f"/gaming_day={d}/"
        keep_old = rebuild is None or d < rebuild
        listing = (night.listings.get(d) if night is not None and d in night.listings
                   else manifests.get(d, {}).get("inbox"))
        plans.append(DayPlan(
            replay_day=d, prior_day=prior, run_id=run_id, prior_state=prior_files,
            events=tuple([(p, True) for p in carried_events if folder in p and keep_old]
                         + [(p, False) for p in _staged(lake_path, result_dir, "events", d)]),
            rejects=tuple([(p, True) for p in carried_rejects if folder in p and keep_old]
                          + ([(p, False) for p in _staged(lake_path, result_dir, "rejects", None)] if d == reject_day else [])
                          + [(p, False) for p in _staged(lake_path, result_dir, "rejects", d)]),
            replaced=run_files, run_files=run_files, result_path=f"{result_dir}/day-{d}.json",
            retention_days=night.retention_days if night is not None else retention_days,
            close_at_end=close_at_end, manifest={"inbox": listing or []},
            forced=_forced(d, changed, manifests, rebuild, night, close_at_end),
            committed_state=tuple(p for p in state_files if f"/gaming_day={d}/" in p) if d in manifests else (),
            findings_version=pinned.get("findings"),
            input_files=(len((input_files or {}).get(d, ())),
                         len(set(manifests.get(d, {}).get("files", ())) - run_files) if keep_old else 0)))
        prior = d
        prior_files = ()    # filled in by run_days once the day has been replayed
    return plans


def _forced(day: str, changed: set, manifests: dict, rebuild: str | None, night: Night | None,
            close_at_end: bool) -> bool:
    """Whether the run must replay ``day`` whatever the day before left: the run changed it (new
    events, events of a file read again, its rejects, the night's day, ``--rebuild-from`` and every
    day after it), it has no state in the lake (or one this pitwatch cannot continue from), its
    inbox folder was read (its manifest keeps the listing), or it must now close every table at its
    end and did not.  Any other day is replayed only while the state carried into it differs from
    the lake's (:func:`replay_days`)."""
    manifest = manifests.get(day)
    if day in changed or manifest is None or (rebuild is not None and day >= rebuild):
        return True
    if night is not None and day in night.listings:
        return True
    if bool(manifest.get("closed_at_end")) != close_at_end:
        return True
    try:
        state.check_versions(day, manifest)
    except state.StateError:
        return True
    return False


def state_differences(lake_path: Lake, files, other) -> dict[str, list[str]]:
    """What differs between two sets of a day's state files, kind by kind (tables, devices,
    pack_cards; the manifest, which names its run, left out): ``{kind: [keys]}``, empty when they
    hold the same rows.  A row is compared by its columns' values (strings, integers, nulls: the
    state table's), not by a JSON text of it: a week of carried packs is a long string each."""
    out = {}
    for kind in state.KINDS:
        mine = {tuple(sorted(r.items())): r for r in state.read_rows(lake_path, list(files), kind)}
        theirs = {tuple(sorted(r.items())): r for r in state.read_rows(lake_path, list(other), kind)}
        if mine.keys() != theirs.keys():
            changed = [mine.get(k) or theirs[k] for k in mine.keys() ^ theirs.keys()]
            out[kind] = sorted({":".join(str(r[c]) for c in ("table_id", "device_id", "pack_id") if c in r)
                                for r in changed})
    return out


def _staged(lake_path: Lake, folder: str, kind: str, day: str | None) -> list[str]:
    """The run's staged files of ``kind`` (of ``day``) in ``folder``, a path on the lake's file system
    (:func:`pitwatch.pipelines.staging.staging_dir`: under its root, no scheme)."""
    import pyarrow.fs as pafs

    fs = lake_path.fs
    base = f"{folder}/{kind}" + (f"/gaming_day={day}" if day else "")
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        return []
    return sorted(i.path for i in fs.get_file_info(pafs.FileSelector(base)) if i.base_name.endswith(".parquet"))


def _staged_reject_days(lake_path: Lake, folder: str) -> set[str]:
    """The gaming days of the run's staged rejects filed under a day of their own (a damaged file's
    row: :mod:`pitwatch.inputs.damage`); the others go under the run's day."""
    import pyarrow.fs as pafs

    fs = lake_path.fs
    base = f"{folder}/rejects"
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        return set()
    return {i.base_name.split("=", 1)[1] for i in fs.get_file_info(pafs.FileSelector(base))
            if i.type == pafs.FileType.Directory and i.base_name.startswith("gaming_day=")}


def read_json(lake_path: Lake, path: str) -> dict:
    fs = lake_path.fs
    with fs.open_input_stream(path) as f:
        return json.loads(f.read())


def replay_days(plans: list[DayPlan], lake_path: Lake, meta: dict, ingest_options, devices, pipeline) -> list[DayPlan]:
    """Replay the days in order, each from the state files the day before left; the days replayed.

    **The early stop**: a day the run did not change (``plan.forced`` false) is not replayed when
    the state carried into it is the lake's: the day before was not replayed, or its replay ended
    with exactly the state rows the lake holds for it (:func:`state_differences`: every table's state,
    every device's ``seq`` position and the carried pack index).  The same state and the same
    events give the same rows (the replay is deterministic), so the lake's files of such a day and
    of every later unchanged day stand; the next day the run changed starts from the lake's state.
    """
    from pitwatch.pipelines import late_repeats

    replayed = []
    prior_files: tuple = plans[0].prior_state if plans else ()
    lake_prior: tuple = prior_files     # the lake's state of the day before (what its replay started from)
    differences: dict = {}              # how the state carried into the next day differs from the lake's
    findings_version = (pinned_versions(lake_path) or {}).get("findings")
    for plan in plans:
        lake_in, lake_prior = lake_prior, plan.committed_state
        if not plan.forced and not differences:
            log.info("gaming day %s: not replayed (the run did not change it, and the day before ended as "
                     "the lake holds it)", plan.replay_day)
            prior_files = plan.committed_state
            continue
        if not plan.forced and set(differences) == {"pack_cards"}:
            done = late_repeats.repeat_check_day(lake_path, plan, prior_files, lake_in, findings_version,
                                                 ingest_options.gaming_day)
            if done is None:
                log.info("gaming day %s: not replayed; its pack index is the lake's again", plan.replay_day)
                prior_files, differences = plan.committed_state, {}
                continue
            _result, prior_files = done
            replayed.append(dataclasses.replace(plan, prior_state=lake_in, repeats_only=True))
            differences = state_differences(lake_path, prior_files, plan.committed_state)
            log.info("gaming day %s: not replayed; the cross-pack repeat check ran again from the run's pack "
                     "index (%s)", plan.replay_day, "; ".join(f"{k} {', '.join(v[:5])}" for k, v in differences.items()))
            continue
        plan = dataclasses.replace(plan, prior_state=prior_files)
        new, held = plan.input_files
        log.info("gaming day %s: events of %s of this run and %s the lake held (state from %s)",
                 plan.replay_day, plural(new, "input file"), plural(held, "input file"),
                 plan.prior_day or "none: a fresh start")
        with pipeline() as p:
            build_pipeline(p, plan, lake_path, meta, ingest_options, devices)
        result = read_json(lake_path, plan.result_path)
        _log_day(plan.replay_day, result)
        replayed.append(plan)
        root = lake_path.root
        prior_files = tuple(f"{root}/{state.TABLE}/{f['path']}" for f in result.get("files", [])
                            if f["table"] == state.TABLE)
        differences = (state_differences(lake_path, prior_files, plan.committed_state) if plan.committed_state
                       else {"manifest": ["a day the lake did not hold"]})
        if differences and any(p.replay_day > plan.replay_day for p in plans):    # why the next day is replayed
            log.info("gaming day %s ended in another state than the lake's: %s", plan.replay_day,
                     "; ".join(f"{kind} {', '.join(keys[:5])}{' …' if len(keys) > 5 else ''}"
                               for kind, keys in differences.items()))
        if not differences and any(not p.forced for p in plans if p.replay_day > plan.replay_day):
            log.info("gaming day %s ended as the lake holds it: the days after it the run did not change "
                     "are not replayed", plan.replay_day)
    return replayed


def _log_day(day: str, result: dict) -> None:
    """The day's replay in one line: the rows it wrote to each table (each table's and partition's
    own line is DEBUG: ``--verbose``)."""
    rows: dict[str, int] = {}
    for name, part, n in result.get("written", []):
        if part is not None:            # not the rule catalogue
            rows[name] = rows.get(name, 0) + n
    order: list[str] = [name for name in COUNTED_TABLES if name in rows]
    order += sorted(set(rows) - set(order))
    log.info("gaming day %s replayed: %s", day, ", ".join(f"{name} {plural(rows[name], 'row')}" for name in order))


def commit_run(lake_path: Lake, meta: dict, ingest_path: str, result_paths: list[str], days: list[str],
               repeats_only: tuple = ()) -> dict:
    """The run's last step, in the launcher once its pipelines have ended (not a pipeline of one
    element: on a cluster that is one more job launched, on the embedded runner one more start of
    its workers): reconcile its counts, record its intent, commit every table, then its ``runs``
    record, which it returns.  ``days``: the days replayed; ``repeats_only``: those whose findings
    and state only were rewritten (:mod:`pitwatch.pipelines.late_repeats`)."""
    from pitwatch.pipelines.late_repeats import TABLES

    def days_of(name: str) -> list[str]:    # the days whose earlier files of table ``name`` the commit replaces
        return [d for d in days if d not in repeats_only or name in TABLES]

    totals = run_totals(read_json(lake_path, ingest_path), [read_json(lake_path, p) for p in result_paths], days)
    record = runs.finished_run_record(meta, totals)
    if record["status"] != "succeeded":
        runs.write_run_record(lake_path, record)
        return record
    versions = {}
    files = [delta.DataFile(**f) for f in totals["files"]]
    # what the run changed in days an earlier run wrote: the findings it added, removed, changed there
    files += finding_changes.write_changes(lake_path, meta["run_id"], meta["pinned"].get("findings"),
                                           days_of("findings"), files)
    commits = {}            # table -> the arguments of its commit
    for name in DATA_TABLES:
        mine = [f for f in files if f.table == name]
        if not mine and not delta.is_table(lake_path, name) and name != state.TABLE:
            continue
        if name in ("rules", finding_changes.TABLE) and not mine:   # no day replayed whole, no change: it stands
            standing = meta["pinned"].get(name, delta.current_version(lake_path, name))
            if standing is not None:
                versions[name] = standing
            continue
        kwargs = {"schema": state.STATE, "partitioned": True} if name == state.TABLE else {}
        appended = name in ("rules", finding_changes.TABLE)     # the catalogue replaced whole, the changes appended
        commits[name] = ((lake_path, name, mine, None if appended else days_of(name)),
                         {"run_id": meta["run_id"], "fence_at_start": meta["fences"].get(name, 0),
                          "replace_all": name == "rules", "keep_only": meta["pinned"].get(name), **kwargs})
    # the intent first, chained: every commit below, so that verify tells a commit of this
    # run killed half way (a leftover) from one made in its name (docs/verify.md, "Intents")
    runs.write_intent_record(lake_path, meta, [
        c for args, kwargs in commits.values() for c in delta.intended_commits(*args, **kwargs)])
    for name, (args, kwargs) in commits.items():
        versions[name] = delta.commit_replays(*args, **kwargs)
    record["table_versions"] = json.dumps(versions, sort_keys=True)
    runs.write_run_record(lake_path, record, written=files)   # chained with the files' hashes
    return record


def run_totals(ingest: dict, days: list[dict], replayed: list[str]) -> dict:
    """The run's bookkeeping, its ingest's and its days' together (:func:`pitwatch.lake.runs.unreconciled`)."""
    out = {k: v for k, v in ingest.items() if k not in ("staged", "staged_rejects")}
    out["staged_events"] = sum(entry[2] for entry in ingest.get("staged", []))
    out["staged_rejects"] = sum(n for _, n in ingest.get("staged_rejects", []))
    for day in days:
        for k, v in day.items():
            out[k] = out.get(k, [] if isinstance(v, list) else 0) + v
    out["replayed_days"] = replayed
    return out


def announce(lake_path: Lake, plans: list[DayPlan], night: Night | None, staged_days: list[str]) -> str | None:
    """Say, before the replay starts, that the run replays more than the night it was asked for
    (nightly: its ``--day``; one-off: the days its files fall in): which days, which tables and an
    estimate; a warning on stderr and in the log file.  The message, or None."""
    own = {night.day} if night is not None else set(staged_days)
    days = [p.replay_day for p in plans]
    if not [d for d in days if d not in own]:
        return None
    forced = [p.replay_day for p in plans if p.forced]
    span = days[0] if len(days) == 1 else f"{days[0]} … {days[-1]}"
    text = (f"this run replays up to {plural(len(days), 'gaming day')} ({span}), not only "
            f"{night.day if night is not None else ', '.join(sorted(own))}: "
            f"{plural(len(forced), 'day')} it changed ({_days(forced)})")
    if len(forced) < len(days):
        text += ("; the days between are replayed only until one ends with the state the lake holds "
                 "(then they stand)")
    tables = _table_count(lake_path, plans)
    text += f"; every table ({tables})" if tables else "; every table"
    events = _events_on(lake_path, days)
    if events is not None:
        text += f"; {plural(events, 'event')} the lake holds on those days"
    per_day = _seconds_per_day(lake_path)
    if per_day is not None:
        text += (f"; estimate: {_duration(per_day * len(forced))} to {_duration(per_day * len(days))} "
                 f"(the last runs took {per_day:.1f} s a day)")
    log.warning(text)
    return text


def _days(days: list[str]) -> str:
    return ", ".join(days) if len(days) <= 4 else f"{', '.join(days[:3])} … {days[-1]}"


def _duration(seconds: float) -> str:
    return f"~{seconds:.0f} s" if seconds < 120 else f"~{seconds / 60:.0f} min"


def _table_count(lake_path: Lake, plans: list[DayPlan]) -> int | None:
    files = next((p.committed_state for p in reversed(plans) if p.committed_state), plans[0].prior_state)
    if not files:
        return None
    return len(state.read_rows(lake_path, list(files), "tables"))


def _events_on(lake_path: Lake, days: list[str]) -> int | None:
    """The events the lake's pinned ``events`` holds on ``days`` (from the log's record counts)."""
    import pyarrow as pa

    version = (pinned_versions(lake_path) or {}).get("events")
    table = delta.open_table(lake_path, "events", version) if version is not None else None
    if table is None:
        return None
    adds = pa.table(table.get_add_actions(flatten=True))
    if "num_records" not in adds.column_names:
        return None
    wanted = set(days)
    return sum(n or 0 for n, day in zip(adds.column("num_records").to_pylist(),
                                        adds.column("partition.gaming_day").to_pylist()) if str(day) in wanted)


def _seconds_per_day(lake_path: Lake, last: int = 5) -> float | None:
    """Seconds per replayed gaming day of the lake's last successful runs (the median), or None.

    Read back from the chain's head until ``last`` of them are found: the first record of a run id
    met going back is its latest, and the runs that hold the lake's lock end in the order they
    started, so the ``last`` found are the ``last`` by start (what ``latest_records`` orders by).
    A lake with fewer is read to its first record.  The watcher's records are no run's (its
    command is ``watch``: the test here, ``" watch" in command``, never matched it, and the
    estimate was the watcher's milliseconds a day on any lake it wrote)."""
    import statistics

    seen: set[str] = set()
    found = []
    for r in runs.records_newest_first(lake_path, skip_watchers=True):     # a watcher's is no run's
        if r["run_id"] in seen:
            continue
        seen.add(r["run_id"])
        if (r["status"] == "succeeded" and r.get("gaming_days") and r.get("ended") and r.get("started")
                and not runs.is_watcher(r)):
            found.append(r)
            if len(found) == last:
                break
    found.sort(key=lambda r: (r["started"], r["run_id"]))
    rates = [(r["ended"] - r["started"]).total_seconds() / len(r["gaming_days"]) for r in found]
    return statistics.median(rates) if rates else None
