"""The alerts table keeps its compactions' removes (tombstones) in its checkpoints for a day, not 100
years (issue 35, "a lake that ages well"): a checkpoint written after that drops them, ``pitwatch
verify`` takes exactly those as the table's retention and still names a forged checkpoint, and a
change of a table's properties pitwatch did not make (an unrecorded one, or on ``findings``).

The lakes are real Delta tables written through the watcher's own code in this process; "two days
ago" is written through pitwatch's one clock of the log (:func:`pitwatch.lake.delta_log.now_ms`), the
checkpoint by delta-rs on the real clock, as on a lake that aged.  ``pitwatch verify``, ``pitwatch
vacuum`` and the watcher's restart run in processes of their own.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pitwatch.lake import Lake, delta, delta_log
from tests.pipelines.test_verify import named, verify
from tests.watch.test_alerts_compaction import DAYS, alert, commit_days, compaction_records, files_of, sink
from tests.watch.test_alerts_table import pitwatch, table_ids

DAY_MS = 86_400_000
NEXT = "2026-11-29"          # the day the lake is in when it is checkpointed: DAYS[2] closes


def _two_days_ago(monkeypatch) -> None:
    real = delta_log.now_ms
    monkeypatch.setattr(delta_log, "now_ms", lambda: real() - 2 * DAY_MS)


def _checkpoints(lake: Path) -> list[Path]:
    log = lake / "alerts" / "_delta_log"
    return sorted(log.glob("*.checkpoint.parquet")) + sorted((lake / "alerts" / "_log_archive").glob("*.checkpoint.parquet"))


def _tombstones(path: Path) -> set[str]:
    return {r["remove"]["path"] for r in pq.read_table(path).to_pylist() if r.get("remove")}


def _age_then_checkpoint(lake: Path, monkeypatch, legacy: bool = False, before_checkpoint=None):
    """Two closed days compacted two days ago (their six removes stamped then, no checkpoint yet), then
    now: the open day closes and is compacted (three removes of now), and commits go on until a
    checkpoint of ``alerts`` (every 10 versions) comes after that compaction.  ``legacy``: the table
    written two days ago by a pitwatch before the short retention (100 years).  ``before_checkpoint``:
    called with the watcher once the old days are written, before anything of now.  The watcher,
    the old removes, the recent ones and the checkpoint."""
    real = delta_log.now_ms
    _two_days_ago(monkeypatch)
    if legacy:
        monkeypatch.setattr(delta, "SHORT_RETENTION_TABLES", {})
    s = sink(lake)
    commit_days(s)
    old = sorted(p for r in compaction_records(lake) for p in r["replaced"])
    monkeypatch.setattr(delta_log, "now_ms", real)
    monkeypatch.setattr(delta, "SHORT_RETENTION_TABLES", {"alerts": delta.ALERTS_DELETED_FILE_RETENTION})
    assert len(old) == 6 and not _checkpoints(lake)
    if before_checkpoint is not None:
        s = before_checkpoint(s)
    monkeypatch.setattr(delta_log, "CHECKPOINT_EVERY", 10)
    s.send([alert(NEXT, 0)])
    s.flush()
    (recent,) = [sorted(r["replaced"]) for r in compaction_records(lake) if f"gaming_day={DAYS[2]}/" in r["compacted"]]
    assert len(recent) == 3
    compacted_at = delta.current_version(Lake.at(lake), "alerts")
    for k in range(1, 30):
        if any(int(p.name[:20]) >= compacted_at for p in _checkpoints(lake)):
            break
        s.send([alert(NEXT, k)])
        s.flush()
    (checkpoint,) = [p for p in _checkpoints(lake) if int(p.name[:20]) >= compacted_at][-1:]
    delta_log.forget()
    return s, old, recent, checkpoint


@pytest.fixture
def aged(tmp_path, monkeypatch):
    lake = tmp_path / "lake"
    s, old, recent, checkpoint = _age_then_checkpoint(lake, monkeypatch)
    return lake, s, old, recent, checkpoint


def test_a_checkpoint_after_the_retention_holds_no_old_removes_and_verify_is_intact(aged):
    lake, _s, old, recent, checkpoint = aged
    tombstones = _tombstones(checkpoint)
    assert not tombstones & set(old)            # dropped: older than the day the table keeps them
    assert set(recent) <= tombstones            # kept: younger than it
    config = dict(pq.read_table(checkpoint).filter(pa.compute.invert(pa.compute.is_null(
        pq.read_table(checkpoint)["metaData"]))).to_pylist()[0]["metaData"]["configuration"])
    assert config[delta_log.RETENTION_KEY] == delta.ALERTS_DELETED_FILE_RETENTION
    # the snapshot pitwatch reads at the head holds no old remove either (it never needs one)
    assert not set(delta_log.snapshot(Lake.at(lake), "alerts").removed) & set(old)
    result, report = verify(lake)
    assert result.returncode == 0, report["problems"]
    assert report["checked"]["compactions"] == 3
    assert all(os.path.exists(lake / "alerts" / p) for p in old)     # history on disk until vacuum


def test_verify_since_an_anchor_before_the_checkpoint_is_intact(tmp_path, monkeypatch):
    from pitwatch.lake import anchor as anchors

    lake, anchor = tmp_path / "lake", tmp_path / "anchor.jsonl"

    def anchored(s):
        delta_log.forget()
        anchors.append(str(anchor), Lake.at(lake))
        return s

    _age_then_checkpoint(lake, monkeypatch, before_checkpoint=anchored)
    result, report = verify(lake, "--since", anchor)
    assert result.returncode == 0, report["problems"]
    assert report["checked"]["compactions"] == 1


def _forge(checkpoint: Path, change) -> None:
    """Rewrite a checkpoint's rows (an insider with pyarrow)."""
    table = pq.read_table(checkpoint)
    rows = change(table.to_pylist())
    os.chmod(checkpoint, 0o644)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), checkpoint)


def test_a_checkpoint_missing_a_remove_inside_the_retention_is_exit_5(aged):
    lake, _s, _old, recent, checkpoint = aged
    _forge(checkpoint, lambda rows: [r for r in rows if not (r.get("remove") and r["remove"]["path"] == recent[0])])
    result, report = verify(lake)
    assert result.returncode == 5
    where = str(checkpoint.relative_to(lake))
    details = [p["detail"] for p in report["problems"] if p["what"] == where]
    assert any("the table's retention keeps left out" in d and recent[0] in d for d in details), details


def test_an_unchained_checkpoint_is_judged_by_the_retention_both_ways(aged):
    """A checkpoint delta-rs writes by hand (no record chains it) drops what pitwatch's does: a
    leftover.  The same with an old remove put back, or a recent one left out: named."""
    from deltalake import DeltaTable

    lake, s, old, recent, _checkpoint = aged
    s.send([alert(NEXT, 99)])
    s.flush()                                   # a version no checkpoint is of yet
    DeltaTable(str(lake / "alerts")).create_checkpoint()
    mine = _checkpoints(lake)[-1]
    assert not _tombstones(mine) & set(old) and set(recent) <= _tombstones(mine)
    result, report = verify(lake)
    assert result.returncode == 0, report["problems"]
    assert str(mine.relative_to(lake)) in [x["what"] for x in report["leftovers"] if x["kind"] == "unchained checkpoint"]

    def put_back(rows):
        template = next(r for r in rows if r.get("remove"))
        return rows + [{**template, "remove": {**template["remove"], "path": old[0],
                                               "deletionTimestamp": delta.now_ms() - 2 * DAY_MS}}]

    _forge(mine, put_back)
    result, report = verify(lake)
    assert result.returncode == 5
    assert any("older than the table's retention kept" in p["detail"]
               or "or removed longer ago than its retention" in p["detail"]     # (the replay forgot it)
               for p in report["problems"] if p["what"] == str(mine.relative_to(lake))), report["problems"]


def test_the_watcher_restarts_after_such_a_checkpoint_and_compacts(aged, tmp_path):
    """A real watcher process on the lake: its restart needs no dropped remove (an old compaction file
    stays, nothing is committed again), and it compacts the next closed day."""
    from tests.watch.conftest import ROOT

    lake, s, old, _recent, _checkpoint = aged
    state = tmp_path / "state.json"
    state.write_text(json.dumps(s.state()))
    ids = table_ids(lake)
    on_disk = sorted(str(p.relative_to(lake)) for p in (lake / "alerts").rglob("*.parquet") if "_delta_log" not in str(p))
    script = """
import json, sys
from pitwatch.lake import Lake
from pitwatch.live.alerts_table import AlertsTable
from tests.watch.test_alerts_compaction import alert
s = AlertsTable(Lake.at(sys.argv[1]), "w1")
s.recover(json.load(open(sys.argv[2])))
s.send([alert("2026-11-30", 0)])
s.flush()
print(s.compactions)
"""
    done = subprocess.run([sys.executable, "-c", script, str(lake), str(state)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1"]                         # the day before closed: compacted
    assert len(files_of(lake, NEXT)) == 1 and files_of(lake, NEXT)[0].endswith(".compacted.parquet")
    assert all((lake / p).exists() for p in on_disk)            # nothing of the history deleted by the restart
    assert table_ids(lake) == sorted([*ids, alert("2026-11-30", 0)["finding_id"]])
    result, report = verify(lake)
    assert result.returncode == 0, report["problems"]


def test_vacuum_removes_the_replaced_files_whose_removes_the_checkpoint_dropped(aged):
    """pitwatch vacuum lists a table's removed files from its tombstones; those of alerts past its day
    are found on disk by their age (written two days ago) and removed, and verify counts them as
    retention."""
    lake, _s, old, recent, _checkpoint = aged
    two_days_ago = time.time() - 2 * 86_400
    for p in old:
        os.utime(lake / "alerts" / p, (two_days_ago, two_days_ago))
    done = pitwatch("vacuum", "--lake", lake, "--retention-days", "0", "--no-config-holds")
    assert done.returncode == 0, done.stderr
    assert not any((lake / "alerts" / p).exists() for p in old + recent), done.stdout + done.stderr
    assert all((lake / "alerts" / p).exists() for p in (f"gaming_day={d}/{f}" for d in DAYS for f in files_of(lake, d)))
    result, report = verify(lake)
    assert result.returncode == 0, report["problems"]
    assert report["checked"]["retention_removed"] >= len(old) + len(recent)


# --- an alerts table of an older pitwatch (tombstones kept 100 years) ----------------------------------

def test_a_watcher_gives_an_older_alerts_table_the_short_retention_by_a_recorded_commit(tmp_path, monkeypatch):
    lake = tmp_path / "lake"

    def restarted(s):
        from pitwatch.live.alerts_table import AlertsTable

        meta = delta_log.snapshot(Lake.at(lake), "alerts").metadata
        assert meta["configuration"][delta_log.RETENTION_KEY] == delta.DELETED_FILE_RETENTION
        again = AlertsTable(Lake.at(lake), "w1")
        again.recover(s.state())                 # the upgrade: one commit of the table's metadata, recorded
        return again

    _s, old, _recent, checkpoint = _age_then_checkpoint(lake, monkeypatch, legacy=True, before_checkpoint=restarted)
    (record,) = [r for r in _watch_options(lake) if "table_properties" in r]
    assert record["table_properties"] == {delta_log.RETENTION_KEY: delta.ALERTS_DELETED_FILE_RETENTION}
    assert not _tombstones(checkpoint) & set(old)
    result, report = verify(lake)
    assert result.returncode == 0, report["problems"]


def test_verify_since_an_anchor_before_the_upgrade_of_an_older_table(tmp_path, monkeypatch):
    """The anchored checkpoint is an older table's (its removes of two days ago kept, 100 years); after
    the anchor the watcher gives the table its day and the next checkpoint drops them: verify --since
    starts from the anchored checkpoint's removes, follows the recorded change, and is intact."""
    from pitwatch.lake import anchor as anchors

    lake, anchor = tmp_path / "lake", tmp_path / "anchor.jsonl"
    s, old, _recent, first = _age_then_checkpoint(lake, monkeypatch, legacy=True)
    assert set(old) <= _tombstones(first)               # 100 years: kept
    anchors.append(str(anchor), Lake.at(lake))
    again = sink(lake, state=s.state())                 # the upgrade, recorded
    for k in range(100, 130):
        if _checkpoints(lake)[-1] != first and int(_checkpoints(lake)[-1].name[:20]) > int(first.name[:20]):
            break
        again.send([alert(NEXT, k)])
        again.flush()
    newest = max(_checkpoints(lake), key=lambda p: int(p.name[:20]))
    assert newest != first and not _tombstones(newest) & set(old)
    for args in (("--since", anchor), ()):
        result, report = verify(lake, *args)
        assert result.returncode == 0, (args, json.dumps(report["problems"], indent=1))


def _watch_options(lake: Path) -> list[dict]:
    from pitwatch.lake.parquet import read_table

    return [json.loads(r["options"]) for r in read_table(Lake.at(lake), "runs").to_pylist() if r["command"] == "watch"]


def test_a_retention_shortened_on_alerts_by_an_unrecorded_commit_is_named_and_not_honoured(tmp_path, monkeypatch):
    """An insider shortens the older table's retention with pitwatch's own code but records nothing:
    the commit is named, and the checkpoint that then drops the old removes is named too."""
    lake = tmp_path / "lake"
    forged = {}

    def forger(s):
        forged["version"] = delta.set_table_properties(
            Lake.at(lake), "alerts", {delta_log.RETENTION_KEY: delta.ALERTS_DELETED_FILE_RETENTION},
            run_id="20261128T000000Z-0badc0de", fence_at_start=delta.fence(Lake.at(lake), "alerts"))
        return s

    _s, old, _recent, checkpoint = _age_then_checkpoint(lake, monkeypatch, legacy=True, before_checkpoint=forger)
    assert not any("table_properties" in r for r in _watch_options(lake))
    result, report = verify(lake)
    assert result.returncode == 5
    where = f"alerts/_delta_log/{forged['version']:020d}.json"
    assert where in named(report, "unrecorded commit") and where in named(report, "changed")
    assert any("changes the table's properties" in p["detail"] for p in report["problems"] if p["what"] == where)
    cp = str(checkpoint.relative_to(lake))
    assert any("the table's retention keeps left out" in p["detail"] for p in report["problems"] if p["what"] == cp)


def test_a_watcher_killed_between_the_retention_commit_and_its_record_records_it_at_restart(tmp_path, monkeypatch):
    """The kill lands after the metadata commit, before its record: an unrecorded commit (exit 5) until
    the watcher restarts and records it (the state of the watcher is the one it saved before)."""
    lake = tmp_path / "lake"
    monkeypatch.setattr(delta, "SHORT_RETENTION_TABLES", {})
    s = sink(lake)
    commit_days(s, DAYS[:1])
    monkeypatch.setattr(delta, "SHORT_RETENTION_TABLES", {"alerts": delta.ALERTS_DELETED_FILE_RETENTION})
    version = delta.set_table_properties(Lake.at(lake), "alerts",
                                         {delta_log.RETENTION_KEY: delta.ALERTS_DELETED_FILE_RETENTION},
                                         run_id=s._new_run_id(), fence_at_start=delta.fence(Lake.at(lake), "alerts"))
    result, report = verify(lake)
    assert result.returncode == 5 and named(report, "unrecorded commit") == [f"alerts/_delta_log/{version:020d}.json"]
    again = sink(lake, state=s.state())
    assert delta.current_version(Lake.at(lake), "alerts") == version          # recorded, not made again
    assert [r["table_properties"] for r in _watch_options(lake) if "table_properties" in r] == \
        [{delta_log.RETENTION_KEY: delta.ALERTS_DELETED_FILE_RETENTION}]
    again.send([alert(DAYS[1], 0)])
    again.flush()
    result, report = verify(lake)
    assert result.returncode == 0, report["problems"]


def test_a_restart_records_no_other_property_change_and_sets_the_retention_back(tmp_path, monkeypatch):
    """An insider's change of alerts' properties at the log's end is not taken for a killed watcher's:
    the restart leaves it unrecorded (named by verify) and gives the table its day again, recorded."""
    lake = tmp_path / "lake"
    s = sink(lake)
    commit_days(s, DAYS[:1])
    version = delta.set_table_properties(Lake.at(lake), "alerts", {delta_log.RETENTION_KEY: "interval 1 minutes"},
                                         run_id="20261128T000000Z-0badc0de", fence_at_start=delta.fence(Lake.at(lake), "alerts"))
    sink(lake, state=s.state())
    meta = delta_log.snapshot(Lake.at(lake), "alerts").metadata
    assert meta["configuration"][delta_log.RETENTION_KEY] == delta.ALERTS_DELETED_FILE_RETENTION
    result, report = verify(lake)
    assert result.returncode == 5
    where = f"alerts/_delta_log/{version:020d}.json"
    assert named(report, "unrecorded commit") == [where]
    assert any("interval 1 minutes" in p["detail"] for p in report["problems"] if p["what"] == where)
    assert [p["what"] for p in report["problems"]] == [where, where]     # the watcher's change back is its own


@pytest.fixture(scope="module")
def run_lake(tmp_path_factory) -> Path:
    from tests.pipelines.test_verify import _day, _run

    base = tmp_path_factory.mktemp("findings")
    (base / "a.jsonl").write_text(_day("2026-11-28", [1, 2, 5, 6, 9]))
    _run(base / "lake", base / "a.jsonl")
    return base / "lake"


@pytest.mark.slow     # its lake is written by a real pitwatch run (a Beam pipeline)
def test_a_retention_shortened_on_findings_is_named_recorded_or_not(run_lake, tmp_path):
    """findings keeps its removes 100 years: a shorter retention is no pitwatch writer's, whether the
    insider records the commit (as a watcher's property change) or not."""
    import datetime as dt
    import shutil

    from pitwatch.lake import runs

    for record in (False, True):
        lake = tmp_path / f"lake-{record}"
        shutil.copytree(run_lake, lake)
        delta_log.forget()
        run_id = runs.new_run_id(dt.datetime.now(dt.timezone.utc))
        version = delta.set_table_properties(Lake.at(lake), "findings", {delta_log.RETENTION_KEY: "interval 1 hours"},
                                             run_id=run_id, fence_at_start=delta.fence(Lake.at(lake), "findings"))
        if record:
            meta = {"run_id": run_id, "command": "watch", "versions": runs.versions(),
                    "started": dt.datetime.now(dt.timezone.utc).isoformat(),
                    "options": json.dumps({"watch_id": "w1", "table_properties": {
                        delta_log.RETENTION_KEY: "interval 1 hours"}})}
            runs.write_run_record(Lake.at(lake), runs.run_record(meta, "succeeded", {"replayed_days": []},
                                                             ended=dt.datetime.now(dt.timezone.utc)),
                                  since={"findings": version})
        result, report = verify(lake)
        assert result.returncode == 5, record
        where = f"findings/_delta_log/{version:020d}.json"
        assert any("changes the table's properties" in p["detail"] and "interval 1 hours" in p["detail"]
                   for p in report["problems"] if p["what"] == where), report["problems"]
        assert (where in named(report, "unrecorded commit")) == (not record)


def test_verify_replays_a_days_removes_not_the_tables_history():
    """verify's replay of alerts forgets a remove once no later checkpoint may hold it (older than the
    honoured retention at a later commit's time): what it keeps for each checkpoint is a day of removes,
    not seven years of them.  Under 100 years it forgets nothing."""
    from pitwatch.lake.verify import _Replay

    now = delta_log.now_ms()

    def commit(version: int, when: int, removes=(), adds=()):
        return [{"commitInfo": {"timestamp": when}},
                *({"remove": {"path": p, "deletionTimestamp": when}} for p in removes),
                *({"add": {"path": p, "partitionValues": {}, "size": 1}} for p in adds)]

    for retention, kept in ((DAY_MS, {"b"}), (delta_log.retention_ms(delta.TABLE_PROPERTIES), {"a", "b"})):
        replay = _Replay("alerts", {3})
        replay.apply(0, commit(0, now - 3 * DAY_MS, adds=("a", "b", "c")))
        replay.honour(0, retention)
        replay.apply(1, commit(1, now - 3 * DAY_MS, removes=("a",)))
        replay.apply(2, commit(2, now - DAY_MS // 2, removes=("b",)))
        replay.apply(3, commit(3, now, adds=("d",)))
        assert set(replay.at[3][1]) == kept
