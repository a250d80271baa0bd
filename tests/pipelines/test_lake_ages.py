"""A lake that ages well (issue 35): checkpoints that are evidence, a log folder that stays short,
readers that read the chain's checkpoint and not the history.

Lakes are written by real ``pitwatch run`` processes or by the watcher's own commit code
(:class:`pitwatch.live.alerts_table.AlertsTable`, in this process); the forgeries are made as the issue's
hostile insider made them (a checkpoint written with delta-rs, then edited with pyarrow), and the
answers are real ``pitwatch sql`` and ``pitwatch verify`` processes'.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pitwatch.cli import exits
from pitwatch.lake import Lake, delta, delta_log, runs
from tests.pipelines.test_exit_codes import lake_bytes, pitwatch
from tests.pipelines.test_verify import _day, _run, named, verify


def _count(lake: Path, table: str) -> tuple[int, int | None]:
    """``pitwatch sql "select count(*) from TABLE"``: its exit code and the count."""
    result = pitwatch("sql", f"select count(*) as n from {table}", "--lake", lake, "--format", "json")
    if result.returncode != exits.DONE:
        return result.returncode, None
    return result.returncode, json.loads(result.stdout.splitlines()[0])["n"]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """A lake of two nightly runs with findings (a sequence gap on each day)."""
    base = tmp_path_factory.mktemp("ages")
    (base / "a.jsonl").write_text(_day("2026-11-28", [1, 2, 5, 6, 9]))
    (base / "b.jsonl").write_text(_day("2026-11-29", [1, 3, 4, 8], device_id="SHOE-2"))
    _run(base / "lake", base / "a.jsonl")
    _run(base / "lake", base / "b.jsonl")
    return base / "lake"


@pytest.fixture
def lake(written, tmp_path) -> Path:
    shutil.copytree(written, tmp_path / "lake")
    return tmp_path / "lake"


def _checkpoint_by_hand(lake: Path, table: str) -> tuple[Path, pa.Table]:
    """A Delta checkpoint of the table's latest version written with delta-rs (as an insider with
    the library would), not chained by any record: its file and its rows."""
    from deltalake import DeltaTable

    DeltaTable(str(lake / table)).create_checkpoint()
    path = sorted((lake / table / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    return path, pq.read_table(path)


@pytest.mark.slow
def test_a_forged_checkpoint_listing_every_add_twice_is_not_read_and_verify_names_it(lake):
    rc, before = _count(lake, "findings")
    assert rc == exits.DONE and before > 0
    path, rows = _checkpoint_by_hand(lake, "findings")
    adds = rows.filter(pa.compute.invert(pa.compute.is_null(rows["add"])))
    pq.write_table(pa.concat_tables([rows, adds]), path)         # every add action listed twice
    assert _count(lake, "findings") == (exits.DONE, before)     # pitwatch reads the chain, not this file
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    where = str(path.relative_to(lake))
    assert where in named(report, "changed")
    assert "listed more than once" in next(p["detail"] for p in report["problems"] if p["what"] == where)


@pytest.mark.slow
def test_a_two_part_checkpoint_holding_no_adds_named_by_last_checkpoint_is_not_read_and_named(lake):
    rc, before = _count(lake, "findings")
    path, rows = _checkpoint_by_hand(lake, "findings")
    version = int(path.name[:20])
    others = rows.filter(pa.compute.is_null(rows["add"]))
    log = lake / "findings" / "_delta_log"
    path.unlink()
    for i in (1, 2):
        pq.write_table(others if i == 1 else others.slice(0, 0), log / f"{version:020d}.checkpoint.{i:010d}.{2:010d}.parquet")
    (log / "_last_checkpoint").write_text(json.dumps({"version": version, "size": others.num_rows, "parts": 2}))
    assert _count(lake, "findings") == (exits.DONE, before)
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    detail = " ".join(p["detail"] for p in report["problems"])
    assert "left out" in detail


@pytest.mark.slow
def test_forged_partition_values_and_stats_in_a_checkpoint_are_named(lake):
    path, rows = _checkpoint_by_hand(lake, "findings")
    table = rows.to_pylist()
    for row in table:
        if row["add"] and "2026-11-28" in row["add"]["path"]:
            row["add"]["partitionValues"] = [("gaming_day", "2026-11-30")]
            row["add"]["stats"] = json.dumps({"numRecords": 0, "minValues": {"severity": "zzz"}})
            break
    pq.write_table(pa.Table.from_pylist(table, schema=rows.schema), path)
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    detail = next(p["detail"] for p in report["problems"] if p["what"] == str(path.relative_to(lake)))
    assert "partitionValues" in detail and "stats" in detail


@pytest.mark.slow
def test_a_checkpoint_that_matches_the_log_but_no_record_chained_is_a_leftover(lake):
    path, _rows = _checkpoint_by_hand(lake, "findings")
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report["problems"]
    assert [x["what"] for x in report["leftovers"] if x["kind"] == "unchained checkpoint"] == \
        [str(path.relative_to(lake))]


def _alert(i: int) -> dict:
    return {"finding_id": f"f-{i}", "rule_id": "BURN_SKIPPED", "gaming_day": "2026-11-28", "severity": "major",
            "table_id": "BAC-01", "ts": "2026-11-28T20:00:00Z", "live_only": False}


def _aged_by_the_watcher(lake: Path, commits: int, monkeypatch) -> None:
    """``commits`` alerts commits through the watcher's own code, a checkpoint every 10 versions
    (the interval is the only thing changed: 100 commits a test would cost minutes)."""
    from pitwatch.live.alerts_table import AlertsTable

    monkeypatch.setattr(delta_log, "CHECKPOINT_EVERY", 10)
    table = AlertsTable(Lake.at(lake), "w1")
    table.recover({})
    for i in range(commits):
        table.send([_alert(i)])
        table.flush()


def test_every_writer_checkpoints_chains_and_archives_and_verify_reads_the_archive(tmp_path, monkeypatch):
    lake = tmp_path / "lake"
    _aged_by_the_watcher(lake, 35, monkeypatch)
    head = runs.runs_head(Lake.at(lake))
    chained = head["checkpoints"]
    assert set(chained) == {"alerts", "runs"}
    log = lake / "alerts" / "_delta_log"
    for table in ("alerts", "runs"):
        cp = chained[table]
        on_disk = delta_log.read_log_file(Lake.at(lake), table, cp.parts[0][0])
        assert delta_log.hashlib.sha256(on_disk).hexdigest() == cp.parts[0][2]
    kept = delta_log.log_versions(Lake.at(lake), "alerts")
    archived = sorted(int(p.name[:20]) for p in (lake / "alerts" / "_log_archive").glob("*.json"))
    assert archived and archived == list(range(0, kept[0]))         # nothing lost, nothing twice
    assert len(kept) <= 2 * 10 + 1
    assert sorted(p.name for p in log.glob("*.checkpoint.parquet")) and len(list(log.glob("*.checkpoint.parquet"))) <= 2
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report["problems"]
    assert report["checked"]["commits"] == len(delta.log_versions(Lake.at(lake), "alerts")) + \
        len(delta.log_versions(Lake.at(lake), "runs"))
    assert _count(lake, "alerts") == (exits.DONE, 35)


def test_readers_read_the_chained_checkpoint_not_the_history(tmp_path, monkeypatch):
    lake = tmp_path / "lake"
    _aged_by_the_watcher(lake, 35, monkeypatch)
    shutil.move(lake / "alerts" / "_log_archive", tmp_path / "history")     # what a reader must not need
    assert _count(lake, "alerts") == (exits.DONE, 35)
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT and "alerts/_delta_log/00000000000000000000.json" in named(report)


def test_a_changed_chained_checkpoint_stops_readers_with_exit_5_and_verify_names_it(tmp_path, monkeypatch):
    lake = tmp_path / "lake"
    _aged_by_the_watcher(lake, 25, monkeypatch)
    cp = runs.runs_head(Lake.at(lake))["checkpoints"]["alerts"]
    path = lake / "alerts" / "_delta_log" / cp.parts[0][0]
    rows = pq.read_table(path)
    pq.write_table(rows.slice(1), path)                     # one action fewer
    before = lake_bytes(lake)
    result = pitwatch("sql", "select count(*) from alerts", "--lake", lake)
    assert result.returncode == exits.NOT_INTACT
    assert result.stderr.startswith("Error: ") and cp.parts[0][0] in result.stderr and "SHA-256" in result.stderr
    assert lake_bytes(lake) == before
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert f"alerts/_delta_log/{cp.parts[0][0]}" in named(report, "changed")


@pytest.mark.slow
def test_a_watchers_commits_after_the_night_leave_readers_on_the_nights_versions(lake):
    night = runs.runs_head(Lake.at(lake))
    assert night["reader_versions"] is not None
    from pitwatch.live.alerts_table import AlertsTable

    table = AlertsTable(Lake.at(lake), "w1")
    table.recover({})
    table.send([_alert(1)])
    table.flush()
    head = runs.runs_head(Lake.at(lake))
    assert head["run_id"] != night["run_id"] and head["reader_versions"] == night["reader_versions"]
    from pitwatch.lake import versions as lake_versions

    assert lake_versions.pinned_versions(Lake.at(lake)) == json.loads(night["reader_versions"]) == \
        runs.last_successful_versions(Lake.at(lake))


def test_an_append_written_by_pitwatch_reads_the_same_in_delta_rs_and_a_taken_version_is_refused(tmp_path, monkeypatch):
    from deltalake import DeltaTable

    lake = tmp_path / "lake"
    _aged_by_the_watcher(lake, 12, monkeypatch)
    theirs = DeltaTable(str(lake / "alerts"))
    ours = delta_log.snapshot(Lake.at(lake), "alerts")
    assert theirs.version() == ours.version
    assert sorted(Path(u).name for u in theirs.file_uris()) == sorted(Path(p).name for p in ours.paths())
    assert theirs.transaction_version("pitwatch") == ours.txns["pitwatch"]
    # another writer takes the next version first: the append is refused, nothing of it committed
    taken = lake / "alerts" / "_delta_log" / delta_log.commit_name(ours.version + 1)
    taken.write_bytes(delta_log.read_log_file(Lake.at(lake), "alerts", delta_log.commit_name(ours.version)))
    before = taken.read_bytes()
    with pytest.raises(delta.StaleWriter):
        delta._append(Lake.at(lake), "alerts", ours.version + 1, [], "a-run", ours.txns["pitwatch"], True, 0)
    assert taken.read_bytes() == before
    assert not list((lake / "alerts" / "_delta_log").glob("_commit_*"))
