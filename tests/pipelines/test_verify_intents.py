"""Intents (issue 37, deliverable 3): a commit naming a killed run's id is that run's leftover only
when the run chained an intent naming it; any other is tampering, whatever run its commit info names.

The attack of the issue, replayed on real lakes: a real ``pitwatch run`` killed with SIGKILL between
two tables' commits (:func:`tests.pipelines.test_kill_run._kill_during_commit`, the same floor), then
an insider appends a ``findings`` commit naming the killed run that replaces a gaming day's findings
file with one lacking its critical rows.  A real ``pitwatch verify`` process must exit 5 naming the
commit (a plain Delta reader of the table would see 0 critical findings that day), and change no byte
of the lake; the killed run's own commits stay leftovers (exit 0).  The writer's steps are also
taken one by one in-process (its records, :func:`pitwatch.lake.delta.intended_commits`,
:func:`pitwatch.lake.delta.commit_replays`) to stop exactly where a kill would.
"""
from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pitwatch.cli import exits
from pitwatch.lake import Lake, delta, runs
from pitwatch.lake import parquet as lake_mod
from pitwatch.lake import versions as lake_versions
from tests.pipelines.test_exit_codes import lake_bytes
from tests.pipelines.test_kill_run import (
    TABLES,
    _kill_during_commit,
    _kill_when,
    build_floor,
    killed_run_id,
    log_versions,
    pitwatch,
    run_records,
)

pytestmark = pytest.mark.slow     # real pitwatch runs (Beam pipelines), real verify processes


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    """The kill-run tests' two nights and reference lake (:func:`build_floor`)."""
    return build_floor(tmp_path_factory)


def verify(lake: Path) -> tuple[int, dict]:
    """A real ``pitwatch verify --format json``: its exit code and report; the lake's bytes are the
    same after it as before."""
    before = lake_bytes(lake)
    result = pitwatch("verify", "--lake", lake, "--format", "json")
    assert lake_bytes(lake) == before, "verify changed the lake"
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def kinds(findings: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in findings:
        out.setdefault(f["kind"], []).append(f["what"])
    return out


def criticals_by_day(lake: Path) -> dict[str, int]:
    """Critical findings per gaming day, as any plain Delta reader sees the table (its latest version)."""
    from deltalake import DeltaTable

    table = DeltaTable(str(lake / "findings")).to_pyarrow_table(columns=["gaming_day", "severity"])
    out: dict[str, int] = {}
    for day, severity in zip(table.column("gaming_day").to_pylist(), table.column("severity").to_pylist()):
        if severity == "critical":
            out[str(day)] = out.get(str(day), 0) + 1
    return out


def current_day_files(lake: Path, day: str, table: str = "findings") -> list[str]:
    """The files of ``day`` at the table's latest version (paths relative to its folder)."""
    snap = delta.current_version(Lake.at(lake), table)
    return [p for p in (Path(f).relative_to(lake / table).as_posix()
                        for f in delta.files_at(Lake.at(lake), table, snap)) if f"gaming_day={day}/" in p]


def without_criticals(lake: Path, paths: list[str]) -> pa.Table:
    rows = pa.concat_tables([pq.read_table(lake / "findings" / p, partitioning=None) for p in paths])
    return rows.filter(pc.not_equal(rows.column("severity"), "critical"))


def forge_findings_commit(lake: Path, run_id: str, day: str) -> int:
    """What the insider does: a findings commit naming ``run_id`` (its commit info, as pitwatch writes
    it) that replaces the day's files with one holding their rows but the critical ones; its version."""
    from deltalake import CommitProperties, DeltaTable
    from deltalake.transaction import AddAction, RemoveAction

    old = current_day_files(lake, day)
    assert old
    forged = lake / "findings" / f"gaming_day={day}" / f"replay-{day}-{run_id}-b.parquet"
    rows = without_criticals(lake, old)
    pq.write_table(rows, forged)
    table = DeltaTable(str(lake / "findings"))
    stamp = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    actions = [RemoveAction(path=p, data_change=True, deletion_timestamp=stamp, partition_values={"gaming_day": day})
               for p in old]
    actions.append(AddAction(path=str(forged.relative_to(lake / "findings")), size=forged.stat().st_size,
                             modification_time=stamp, data_change=True, partition_values={"gaming_day": day},
                             stats=json.dumps({"numRecords": rows.num_rows})))
    table.create_write_transaction(actions, mode="append", schema=table.schema().to_arrow(),
                                   partition_by=["gaming_day"],
                                   commit_properties=CommitProperties(custom_metadata={delta.RUN_ID_KEY: run_id}),
                                   post_commithook_properties=delta.post_commit())
    return DeltaTable(str(lake / "findings")).version()


@pytest.fixture
def killed(floor, tmp_path):
    """Night one's lake with night two's run killed between two tables' commits: (lake, its run id)."""
    lake = tmp_path / "lake"
    shutil.copytree(floor["first"], lake)
    run_id, _pinned, _current = _kill_during_commit(floor, lake)
    return lake, run_id


def reference(floor) -> Path:
    """The floor's lake of both nights (night two holds critical findings)."""
    return floor["base"] / "reference"


@pytest.fixture
def killed_again(floor, tmp_path):
    """The lake of both nights with a run of night two's files again (a correction: it replays the
    night) killed between two tables' commits: (lake, its run id)."""
    lake = tmp_path / "lake"
    shutil.copytree(reference(floor), lake)
    for _attempt in range(3):
        logs_before = log_versions(lake)

        def a_table_committed(_lines, lake_, logs_before=logs_before):
            now = log_versions(lake_)
            return any(now[t] > logs_before[t] for t in TABLES)

        run_id = killed_run_id(lake, _kill_when(lake, floor["night2"], a_table_committed))
        pinned = lake_versions.pinned_versions(Lake.at(lake))
        if run_records(lake)[run_id] == "running" and any(
                delta.current_version(Lake.at(lake), t) != pinned.get(t) for t in TABLES + ("state",)):
            return lake, run_id
        shutil.rmtree(lake)         # the whole commit landed before the kill: again
        shutil.copytree(reference(floor), lake)
    pytest.fail("could not kill the run between two tables' commits in 3 attempts")


# -- 2. a genuinely killed run's commits stay leftovers ---------------------------------------------

def test_a_run_killed_between_two_tables_commits_leaves_leftovers_its_intent_names(killed):
    lake, run_id = killed
    code, report = verify(lake)
    assert code == exits.DONE, report["problems"]
    left = kinds(report["leftovers"])
    assert left.get("commit of an unfinished run"), report["leftovers"]
    assert all("as its chained intent names it" in f["detail"] for f in report["leftovers"]
               if f["kind"] == "commit of an unfinished run")
    assert len(left["run with no end"]) == 1 and run_id in left["run with no end"][0]
    # its intent, chained before its first commit, names every table it was about to commit
    intent = [r for r in _records(lake) if r["run_id"] == run_id and r["status"] == runs.INTENT_STATUS]
    assert len(intent) == 1
    named = {e["table"] for e in json.loads(intent[0]["options"])["intent"]}
    assert {"events", "findings", "state"} <= named


# -- 1. the attack: a commit made in the killed run's name ---------------------------------

def test_a_findings_commit_naming_the_killed_run_that_drops_a_days_criticals_is_tampering(killed_again, floor):
    lake, run_id = killed_again
    before = criticals_by_day(lake)
    day = max(before, key=before.get)
    assert before[day] > 0
    version = forge_findings_commit(lake, run_id, day)
    assert criticals_by_day(lake).get(day, 0) == 0          # what any plain Delta reader now sees
    code, report = verify(lake)
    assert code == exits.NOT_INTACT, report
    commit = f"findings/_delta_log/{version:020d}.json"
    problems = kinds(report["problems"])
    assert commit in problems.get("unrecorded commit", []), report["problems"]
    detail = next(p["detail"] for p in report["problems"] if p["what"] == commit)
    assert f"run {run_id}" in detail and f"no intent run {run_id} chained before committing names it" in detail
    assert commit not in [f["what"] for f in report["leftovers"]]
    assert any(w.startswith(f"findings/gaming_day={day}/") for w in problems.get("added", [])), report["problems"]
    # the next run chains the killed run's commits into the end it records for it: the forged one
    # stays tampering (chained by the next run, still named by no intent)
    again = pitwatch("run", floor["night2"], "--lake", lake)
    assert again.returncode == exits.DONE, again.stderr
    assert run_records(lake)[run_id].startswith("interrupted")
    code, report = verify(lake)
    assert code == exits.NOT_INTACT
    assert commit in kinds(report["problems"]).get("unrecorded commit", []), report["problems"]
    detail = next(p["detail"] for p in report["problems"] if p["what"] == commit)
    assert "as the end recorded for run" in detail


# -- 3. a commit naming a succeeded run, not recorded ------------------------------------------------

def test_an_unrecorded_commit_naming_a_succeeded_run_is_tampering(floor, tmp_path):
    lake = tmp_path / "lake"
    shutil.copytree(reference(floor), lake)
    done = max(r for r, s in run_records(lake).items() if s == "succeeded")      # the last run
    day = max(criticals_by_day(lake), key=criticals_by_day(lake).get)
    version = forge_findings_commit(lake, done, day)
    code, report = verify(lake)
    assert code == exits.NOT_INTACT
    commit = f"findings/_delta_log/{version:020d}.json"
    assert commit in kinds(report["problems"]).get("unrecorded commit", []), report["problems"]
    detail = next(p["detail"] for p in report["problems"] if p["what"] == commit)
    assert "no runs record names this commit" in detail and f"run {done}" in detail


# -- the writer's steps one by one: where a kill can stop it ----------------------------------------

def _records(lake: Path) -> list[dict]:
    out = []
    for v in delta.log_versions(Lake.at(lake), "runs"):
        _data, actions = delta.read_commit(Lake.at(lake), "runs", v)
        out.append(pq.read_table(lake / "runs" / delta.added_paths(actions)[0]).to_pylist()[0])
    return out


def _started(lake: Path, run_id: str) -> dict:
    """A run's start as ``pitwatch run`` records it (this pitwatch: chain format 2)."""
    meta = {"run_id": run_id, "command": "pitwatch run", "versions": runs.versions(), "options": "{}",
            "started": "2026-11-30T07:00:00+00:00"}
    runs.write_run_record(Lake.at(lake), runs.run_record(meta, "running"))
    return meta


def _day_commit(lake: Path, run_id: str, day: str, rows: pa.Table, table: str = "findings",
                name: str | None = None) -> tuple[tuple, dict]:
    """The run's replay of ``day`` of ``table``: its file written, the arguments of its commit."""
    at = Lake.at(lake)
    written = lake_mod.write_partition_file(at, table, day, [rows], name or lake_mod.replay_file_name(day, run_id))
    pinned = lake_versions.pinned_versions(at) or {}
    return ((at, table, [written], [day]),
            {"run_id": run_id, "fence_at_start": delta.fence(at, table), "keep_only": pinned.get(table)})


def _day_rows(lake: Path, day: str, table: str = "findings") -> pa.Table:
    return pa.concat_tables([pq.read_table(lake / table / p, partitioning=None)
                             for p in current_day_files(lake, day, table)])


def test_killed_after_its_intent_before_and_after_a_commit_is_a_leftover(floor, tmp_path):
    """Killed after its intent and before any commit: the intent names commits that never happened,
    which is no problem (nothing is missing: no record says they were made). Killed after the commit
    its intent names: a leftover, its file checked against the SHA-256 the intent names."""
    lake = tmp_path / "lake"
    shutil.copytree(reference(floor), lake)
    run_id = "20261130T070000Z-0badf00d"
    meta = _started(lake, run_id)
    day = max(criticals_by_day(lake), key=criticals_by_day(lake).get)
    args, kwargs = _day_commit(lake, run_id, day, _day_rows(lake, day))
    intended = delta.intended_commits(*args, **kwargs)
    assert [(c["table"], c["version"]) for c in intended] == [("findings", delta.current_version(Lake.at(lake), "findings") + 1)]
    runs.write_intent_record(Lake.at(lake), meta, intended)
    code, report = verify(lake)                    # killed here: before the commit
    assert code == exits.DONE, report["problems"]
    assert "run with no end" in kinds(report["leftovers"])
    version = delta.commit_replays(*args, **kwargs)
    assert version == intended[0]["version"]
    code, report = verify(lake)                    # killed here: after it
    assert code == exits.DONE, report["problems"]
    assert f"findings/_delta_log/{version:020d}.json" in kinds(report["leftovers"])["commit of an unfinished run"]


def test_the_intended_commit_made_with_other_bytes_is_named(floor, tmp_path):
    """The insider commits exactly what the killed run intended (same paths, same version: the
    actions' digest matches) but with the day's file rewritten without its critical rows first:
    the file's SHA-256 is not the one the intent names."""
    lake = tmp_path / "lake"
    shutil.copytree(reference(floor), lake)
    run_id = "20261130T070000Z-0badf00d"
    meta = _started(lake, run_id)
    day = max(criticals_by_day(lake), key=criticals_by_day(lake).get)
    rows = _day_rows(lake, day)
    args, kwargs = _day_commit(lake, run_id, day, rows)
    runs.write_intent_record(Lake.at(lake), meta, delta.intended_commits(*args, **kwargs))
    # killed; then the insider writes the same file again, without the criticals, and commits it
    (forged,) = args[2]
    changed = lake_mod.write_partition_file(Lake.at(lake), "findings", day,
                                            [rows.filter(pc.not_equal(rows.column("severity"), "critical"))],
                                            lake_mod.replay_file_name(day, run_id))
    assert changed.path == forged.path and changed.sha256 != forged.sha256
    version = delta.commit_replays(args[0], args[1], [changed], args[3], **kwargs)
    assert criticals_by_day(lake).get(day, 0) == 0
    code, report = verify(lake)
    assert code == exits.NOT_INTACT, report
    assert f"findings/{changed.path}" in kinds(report["problems"]).get("changed", []), report["problems"]
    assert f"findings/_delta_log/{version:020d}.json" in kinds(report["leftovers"])["commit of an unfinished run"]


def test_a_schema_change_and_a_table_creation_are_intended_as_committed(tmp_path):
    """The metadata commits a run may make (a table created, a column added before its data) are
    planned with the digest verify recomputes from them."""
    from pitwatch.schemas.arrow import LAKE_TABLES

    lake = Lake.at(tmp_path / "lake")
    full = LAKE_TABLES["findings"]
    narrow = full.remove(full.get_field_index(full.names[-1]))
    empty = pa.table({f.name: pa.nulls(0, f.type) for f in narrow if f.name != "gaming_day"})
    for run_id, schema in (("20261130T070000Z-00000001", narrow), ("20261130T070000Z-00000002", full)):
        written = lake_mod.write_partition_file(lake, "findings", "2026-11-28", [empty],
                                                lake_mod.replay_file_name("2026-11-28", run_id))
        kwargs = {"run_id": run_id, "fence_at_start": delta.fence(lake, "findings"), "schema": schema}
        intended = delta.intended_commits(lake, "findings", [written], ["2026-11-28"], **kwargs)
        delta.commit_replays(lake, "findings", [written], ["2026-11-28"], **kwargs)
        made = []
        for c in intended:
            _data, actions = delta.read_commit(lake, "findings", c["version"])
            made.append((delta.commit_operation(actions), delta.commit_digest(actions)))
        assert made == [(c["operation"], c["actions_sha256"]) for c in intended]
    assert [c["operation"] for c in intended] == ["ADD COLUMN", "WRITE"]


# -- older lakes: runs of a pitwatch that recorded no intents --------------------------------------

def test_a_run_of_a_pitwatch_before_intents_keeps_its_leftovers_until_a_later_run_commits(floor, tmp_path):
    """A killed run whose records name no chain format (an older pitwatch's): its commit at the end
    of the log is its leftover, as before intents. Once a later run has committed the table, a
    commit naming it is no leftover: a killed run's commits come before any later run's."""
    lake = tmp_path / "lake"
    shutil.copytree(reference(floor), lake)
    old = "20261130T070000Z-0000old1"
    meta = {"run_id": old, "command": "pitwatch run", "versions": json.dumps({"pitwatch": "0.1.0"}), "options": "{}",
            "started": "2026-11-30T07:00:00+00:00"}
    runs.write_run_record(Lake.at(lake), runs.run_record(meta, "running"))
    day = max(criticals_by_day(lake), key=criticals_by_day(lake).get)
    args, kwargs = _day_commit(lake, old, day, _day_rows(lake, day))
    made = delta.commit_replays(*args, **kwargs)            # killed after it: no intent (an older pitwatch)
    code, report = verify(lake)
    assert code == exits.DONE, report["problems"]
    (left,) = [f for f in report["leftovers"] if f["what"] == f"findings/_delta_log/{made:020d}.json"]
    assert left["kind"] == "commit of an unfinished run" and "recorded no intents" in left["detail"]
    again = pitwatch("run", floor["night2"], "--lake", lake)      # records its end, commits findings
    assert again.returncode == exits.DONE, again.stderr
    assert run_records(lake)[old].startswith("interrupted")
    code, report = verify(lake)
    assert code == exits.DONE, report["problems"]
    version = forge_findings_commit(lake, old, day)
    code, report = verify(lake)
    assert code == exits.NOT_INTACT
    commit = f"findings/_delta_log/{version:020d}.json"
    assert commit in kinds(report["problems"]).get("unrecorded commit", []), report["problems"]
    detail = next(p["detail"] for p in report["problems"] if p["what"] == commit)
    assert "a killed run's commits come before any later run's" in detail
