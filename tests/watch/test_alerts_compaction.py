"""The watcher compacts each closed gaming day of its alerts files into one file (issue 35): a chained
compaction commit, real Delta tables, the readers through the real CLI (``pitwatch sql``, ``pitwatch
query``), ``pitwatch verify`` in its own process (the lake's bytes unchanged by it)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pitwatch.lake import Lake
from tests.pipelines.test_verify import named, verify
from tests.watch.test_alerts_table import pitwatch, table_ids

DAYS = ("2026-11-26", "2026-11-27", "2026-11-28")        # two closed days, then the open one
ALERT = {"rule_id": "BURN_SKIPPED", "title": "Burn card skipped", "severity": "high", "table_id": "BAC-01",
         "event_ids": ["e1"], "evidence": [{"device_id": "SHOE-1", "event_id": "e1"}], "expected": "a burn",
         "actual": "none", "source": "live"}
ORDER = "order by gaming_day, finding_id"


def alert(day: str, k: int, **more) -> dict:
    return {**ALERT, "finding_id": f"{day}-{k}".ljust(64, "0"), "gaming_day": day,
            "ts": f"{day}T1{k % 10}:00:00.000Z", **more}


def sink(lake: Path, watch_id: str = "w1", compaction: bool = True, state: dict | None = None):
    from pitwatch.live.alerts_table import AlertsTable

    s = AlertsTable(Lake.at(lake), watch_id, compaction=compaction)
    s.recover(state or {})
    return s


def commit_days(s, days=DAYS, per_day: int = 3, start: int = 0) -> None:
    """``per_day`` commits of one alert each to every day of ``days``, in day order (one file each); an
    alert of the first day carries a member no finding has (a column of its own)."""
    for day in days:
        for k in range(start, start + per_day):
            s.send([alert(day, k, readings={"shoe": "AS"} if k == 1 and day == days[0] else None)])
            s.flush()


def files_of(lake: Path, day: str, watch_id: str | None = None) -> list[str]:
    """The alerts table's files of gaming day ``day`` at its latest version (Delta's own reader)."""
    from deltalake import DeltaTable

    paths = DeltaTable(str(lake / "alerts")).file_uris()
    return sorted(os.path.basename(p) for p in paths if f"gaming_day={day}/" in p
                  and (watch_id is None or os.path.basename(p).startswith(f"{watch_id}-")))


def sql(lake: Path, statement: str) -> list[dict]:
    out = pitwatch("sql", statement, "--lake", lake, "--format", "json", "--max-rows", "100000")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def compaction_records(lake: Path) -> list[dict]:
    from pitwatch.lake.parquet import read_table

    return [json.loads(r["options"])["compaction"] for r in read_table(Lake.at(lake), "runs").to_pylist()
            if r["command"] == "watch" and "compaction" in json.loads(r["options"])]


@pytest.fixture
def uncompacted(tmp_path) -> Path:
    """A lake whose alerts table holds three files of each of two closed days and of the open one,
    written by a watcher that does not compact (what a lake from before compaction holds)."""
    lake = tmp_path / "lake"
    commit_days(sink(lake, compaction=False))
    assert [len(files_of(lake, d)) for d in DAYS] == [3, 3, 3]
    return lake


def test_a_closed_day_becomes_one_file_one_day_per_commit_and_readers_see_the_same_rows(uncompacted):
    lake = uncompacted
    before = sql(lake, f"select * from alerts {ORDER}")
    assert len(before) == 9 and any(r.get("readings") for r in before)
    s = sink(lake)
    s.send([alert(DAYS[2], 7)])
    s.flush()                                       # commit, then the oldest closed day compacted
    assert s.compactions == 1 and files_of(lake, DAYS[0]) == ["w1-00000002.compacted.parquet"]
    assert len(files_of(lake, DAYS[1])) == 3        # one day per commit
    s.send([alert(DAYS[2], 8)])
    s.flush()
    assert s.compactions == 2 and files_of(lake, DAYS[1]) == ["w1-00000005.compacted.parquet"]
    s.send([alert(DAYS[2], 9)])
    s.flush()
    assert s.compactions == 2 and len(files_of(lake, DAYS[2])) == 6   # the open day: never compacted
    new = ", ".join(repr(alert(DAYS[2], k)["finding_id"]) for k in (7, 8, 9))
    after = sql(lake, f"select * from alerts where finding_id not in ({new}) {ORDER}")
    assert after == before                          # whole rows, the extra member's column too
    assert sql(lake, f"select * from alerts where gaming_day = DATE '{DAYS[0]}' {ORDER}") == \
        [r for r in before if r["gaming_day"] == DAYS[0]]
    # Delta's own reader: the same rows now, and time travel to before the compaction still reads them
    from deltalake import DeltaTable

    table = DeltaTable(str(lake / "alerts"))
    key = lambda r: r["finding_id"]                 # noqa: E731
    old = sorted(DeltaTable(str(lake / "alerts"), version=table.version() - 4).to_pyarrow_table().to_pylist(), key=key)
    now = sorted(table.to_pyarrow_table().to_pylist(), key=key)
    assert [r for r in now if r["finding_id"] in {x["finding_id"] for x in old}] == old
    assert len(table_ids(lake)) == 12


def test_the_named_query_alerts_vs_findings_reads_the_same_before_and_after(uncompacted, tmp_path):
    lake = uncompacted
    copy = tmp_path / "before"
    shutil.copytree(lake, copy)

    def query(where: Path) -> list[dict]:
        out = pitwatch("query", "alerts_vs_findings", "--lake", where, "--param", f"gaming_day={DAYS[0]}",
                       "--format", "json")
        assert out.returncode == 0, out.stderr
        return sorted((json.loads(line) for line in out.stdout.splitlines()), key=lambda r: r["finding_id"])

    s = sink(lake)
    s.send([alert(DAYS[2], 7)])
    s.flush()
    assert files_of(lake, DAYS[0]) == ["w1-00000002.compacted.parquet"]
    assert query(lake) == query(copy) and len(query(lake)) == 3


def test_verify_is_intact_after_compaction_and_names_how_many_files_it_replaced(uncompacted):
    s = sink(uncompacted)
    for k in (7, 8):
        s.send([alert(DAYS[2], k)])
        s.flush()
    result, report = verify(uncompacted)
    assert result.returncode == 0, report["problems"]
    assert report["checked"]["compactions"] == 2 and report["checked"]["compacted_files"] == 6
    assert any("6 files of the alerts table replaced by 2 compacted files" in n for n in report["notes"])
    records = compaction_records(uncompacted)
    assert [len(r["replaced"]) for r in records] == [3, 3]
    text = pitwatch("verify", "--lake", uncompacted)
    assert text.returncode == 0 and "6 files of the alerts table replaced by 2 compacted files" in text.stdout


def test_verify_since_an_anchor_checks_a_compaction_made_after_it(uncompacted, tmp_path):
    from pitwatch.lake import anchor as anchors

    anchor = tmp_path / "anchor.jsonl"
    anchors.append(str(anchor), Lake.at(uncompacted))
    s = sink(uncompacted)
    s.send([alert(DAYS[2], 7)])
    s.flush()
    result, report = verify(uncompacted, "--since", anchor)
    assert result.returncode == 0, report["problems"]
    assert report["checked"]["compactions"] == 1 and report["checked"]["compacted_files"] == 3
    flipped = uncompacted / "alerts" / f"gaming_day={DAYS[0]}" / "w1-00000002.compacted.parquet"
    rewrite_rows(flipped, lambda rows: rows[:-1])
    result, report = verify(uncompacted, "--since", anchor)
    assert result.returncode == 5 and f"alerts/gaming_day={DAYS[0]}/w1-00000002.compacted.parquet" in named(report)


def rewrite_rows(path: Path, change) -> None:
    """Rewrite a Parquet file with its rows changed (an edit made outside pitwatch)."""
    table = pq.read_table(path)
    rows = change(table.to_pylist())
    os.chmod(path, 0o644)
    pq.write_table(table.from_pylist(rows, schema=table.schema), path)


def _compact_by_hand(s, day: str, written=None, digest: str | None = None, record: bool = True):
    """What :meth:`AlertsTable.compact` does, step by step (a step left out: a kill there, or a forger's
    commit): the file written (or ``written``, with ``digest``), the commit, and its record."""
    import datetime as dt

    from pitwatch.lake import delta
    from pitwatch.live.alerts_table import TABLE, _compaction_entry

    _day, replaced = s.compaction_due()
    if written is None:
        written, digest = s.write_compacted(day, replaced)
    run_id = s._new_run_id()
    version = delta.commit_compaction(s.lake, TABLE, written, replaced, run_id=run_id,
                                      fence_at_start=delta.fence(s.lake, TABLE))
    if record:
        s._record(run_id, dt.datetime.now(dt.timezone.utc), [written], written.rows, [day], None, version,
                  compaction=_compaction_entry(written.path, replaced, digest))
    return written, replaced


def test_a_compaction_killed_before_its_commit_leaves_a_leftover_the_restart_removes(uncompacted):
    s = sink(uncompacted, compaction=False)
    s.send([alert(DAYS[2], 7)])
    s.flush()
    state = s.state()
    _day, replaced = s.compaction_due()
    written, _digest = s.write_compacted(DAYS[0], replaced)   # killed here: the file written, no commit
    left = uncompacted / "alerts" / written.path
    assert left.exists() and len(files_of(uncompacted, DAYS[0])) == 3
    result, report = verify(uncompacted)
    assert result.returncode == 0 and [f["kind"] for f in report["leftovers"]] == ["uncommitted alerts file"]
    ids = table_ids(uncompacted)
    again = sink(uncompacted, state=state)
    assert not left.exists() and table_ids(uncompacted) == ids
    again.send([alert(DAYS[2], 8)])
    again.flush()
    assert files_of(uncompacted, DAYS[0]) == [written.path.rpartition("/")[2]]
    assert verify(uncompacted)[0].returncode == 0


def test_a_compaction_committed_and_not_recorded_is_recorded_at_restart(uncompacted):
    s = sink(uncompacted, compaction=False)
    s.send([alert(DAYS[2], 7)])
    s.flush()
    _compact_by_hand(s, DAYS[0], record=False)      # killed between the commit and its record
    result, report = verify(uncompacted)
    assert result.returncode == 5 and [p["kind"] for p in report["problems"]] == ["unrecorded commit", "added"]
    sink(uncompacted, state=s.state())
    result, report = verify(uncompacted)
    assert result.returncode == 0, report["problems"]
    assert report["checked"]["compacted_files"] == 3 and len(compaction_records(uncompacted)) == 1


def test_two_watchers_compact_only_their_own_files(tmp_path):
    lake = tmp_path / "lake"
    one, two = sink(lake, "w1"), sink(lake, "w2", compaction=False)
    commit_days(one, DAYS[:1])
    commit_days(two, DAYS[:1], start=5)
    commit_days(one, DAYS[1:2], per_day=1)            # w1 moves to the next day: its own day-1 files compacted
    assert files_of(lake, DAYS[0], "w1") == ["w1-00000002.compacted.parquet"]
    assert len(files_of(lake, DAYS[0], "w2")) == 3
    two.compaction = True
    commit_days(two, DAYS[1:2], per_day=1, start=5)
    assert files_of(lake, DAYS[0]) == ["w1-00000002.compacted.parquet", "w2-00000002.compacted.parquet"]
    assert len(table_ids(lake)) == 8
    result, report = verify(lake)
    assert result.returncode == 0 and report["checked"]["compacted_files"] == 6, report["problems"]


def test_a_removal_no_compaction_record_explains_is_exit_5(uncompacted):
    """A remove commit recorded as a plain watcher commit (a forger who writes the chain too): not a
    compaction, tampering."""
    import datetime as dt

    from pitwatch.lake import delta
    from pitwatch.live.alerts_table import TABLE

    s = sink(uncompacted, compaction=False)
    s.send([alert(DAYS[2], 7)])
    s.flush()
    _day, replaced = s.compaction_due()
    written, _digest = s.write_compacted(DAYS[0], replaced)
    run_id = s._new_run_id()
    version = delta.commit_compaction(s.lake, TABLE, written, replaced, run_id=run_id,
                                      fence_at_start=delta.fence(s.lake, TABLE))
    s._record(run_id, dt.datetime.now(dt.timezone.utc), [written], written.rows, [DAYS[0]], None, version)
    result, report = verify(uncompacted)
    assert result.returncode == 5
    assert named(report, "removed") == [f"alerts/_delta_log/{version:020d}.json"]


def test_a_compaction_whose_record_names_other_rows_is_exit_5(uncompacted):
    s = sink(uncompacted, compaction=False)
    s.send([alert(DAYS[2], 7)])
    s.flush()
    _day, replaced = s.compaction_due()
    written, _digest = s.write_compacted(DAYS[0], replaced)
    _compact_by_hand(s, DAYS[0], written=written, digest="0" * 64)
    result, report = verify(uncompacted)
    assert result.returncode == 5
    assert [p["detail"] for p in report["problems"]][0].find("did not keep the rows") > 0


def test_a_compaction_that_dropped_a_row_with_its_own_digest_recorded_is_exit_5(uncompacted):
    """A forger's compaction: one row left out of the new file, the new file's own digest recorded:
    the replaced files, still on disk, hash to another digest."""
    from pitwatch.lake import chain
    from pitwatch.lake import parquet as lake

    s = sink(uncompacted, compaction=False)
    s.send([alert(DAYS[2], 7)])
    s.flush()
    _day, replaced = s.compaction_due()
    tables = [s._read(p) for p in replaced[1:]]
    rows = [r for t in tables for r in t.to_pylist()]
    written = lake.write_data_file(Lake.at(uncompacted), "alerts", DAYS[0], "w1-00000002.compacted.parquet", tables[0])
    _compact_by_hand(s, DAYS[0], written=written, digest=chain.rows_sha256(tables[0].to_pylist()))
    assert rows and len(table_ids(uncompacted)) == 8
    result, report = verify(uncompacted)
    assert result.returncode == 5
    assert any("did not keep the rows" in p["detail"] for p in report["problems"])


def test_a_compacted_file_edited_afterwards_is_exit_5(uncompacted):
    s = sink(uncompacted)
    s.send([alert(DAYS[2], 7)])
    s.flush()
    path = uncompacted / "alerts" / f"gaming_day={DAYS[0]}" / "w1-00000002.compacted.parquet"
    rewrite_rows(path, lambda rows: [{**r, "severity": "low"} for r in rows])
    result, report = verify(uncompacted)
    assert result.returncode == 5
    assert named(report, "changed")[:1] == [f"alerts/gaming_day={DAYS[0]}/w1-00000002.compacted.parquet"]
    assert any("did not keep the rows" in p["detail"] for p in report["problems"])


# A watcher's alerts commits as the service makes them (pitwatch.live.service: take, the checkpoint's state, write,
# the checkpoint saved), one alert a commit, three commits a gaming day, in a process of its own.
WRITER = """
import json, os, sys
from pitwatch.lake import Lake
from pitwatch.live.alerts_table import AlertsTable
from tests.watch.test_alerts_compaction import alert
lake, state_file, total = Lake.at(sys.argv[1]), sys.argv[2], int(sys.argv[3])
saved = json.load(open(state_file)) if os.path.exists(state_file) else {"table": {}, "next": 0}
s = AlertsTable(lake, "w1")
delivered = s.recover(saved["table"])
days = ["2026-11-%02d" % d for d in range(1, 31)]
for k in range(saved["next"], total):
    a = alert(days[k // 3], k)
    if a["finding_id"] not in delivered:
        s.send([a])
    batch, _ids = s.take()
    state = {"table": s.state(), "next": k + 1}
    s.write(batch)
    with open(state_file + ".tmp", "w") as f:
        json.dump(state, f)
    os.replace(state_file + ".tmp", state_file)
"""


@pytest.mark.slow     # real watcher processes killed -9 again and again
def test_kill_9_at_any_moment_of_commits_and_compactions_loses_and_repeats_nothing(tmp_path):
    import random
    import signal
    import subprocess
    import sys
    import time

    from tests.watch.conftest import ROOT

    lake, state, total = tmp_path / "lake", tmp_path / "state.json", 90      # 30 gaming days
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = [sys.executable, "-c", WRITER, str(lake), str(state), str(total)]
    rng = random.Random(35)
    for _kill in range(8):          # tens of ms a commit: a kill lands anywhere in one, or in a compaction
        proc = subprocess.Popen(run, env=env, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.8, 2.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert table_ids(lake) == sorted(alert("2026-11-%02d" % (k // 3 + 1), k)["finding_id"] for k in range(total))
    closed = sorted({f"2026-11-{k // 3 + 1:02d}" for k in range(total)})[:-1]
    assert all(len(files_of(lake, day)) == 1 for day in closed[:-1])   # the last closed one: at the next commit
    result, report = verify(lake)
    assert result.returncode == 0, report["problems"]
    assert report["checked"]["compactions"] >= len(closed) - 1


def test_a_replaced_file_still_on_disk_edited_after_compaction_is_named(uncompacted):
    """The files a compaction removed from the table stay on disk until vacuum: still evidence, still hashed."""
    s = sink(uncompacted)
    s.send([alert(DAYS[2], 7)])
    s.flush()
    replaced = compaction_records(uncompacted)[0]["replaced"]
    rewrite_rows(uncompacted / "alerts" / replaced[1], lambda rows: [{**r, "actual": "a burn"} for r in rows])
    result, report = verify(uncompacted)
    assert result.returncode == 5
    assert named(report, "changed")[0] == f"alerts/{replaced[1]}"
    assert any("did not keep the rows" in p["detail"] for p in report["problems"])


def test_an_alert_stamped_in_the_future_closes_no_open_day(tmp_path):
    """Review of issue 35: the closed days were those before the newest alert's day; one alert of a
    device whose clock ran a day (or years) ahead made the open day 'closed' and compacted it again
    at every commit.  A day is closed only before the clock's gaming day too."""
    lake = tmp_path / "lake"
    s = sink(lake)
    s.clock_day = lambda: DAYS[2]                       # the clock is in the open day
    commit_days(s, days=(DAYS[2],), per_day=3)
    s.send([alert("2030-01-01", 1)])                    # a clock gone wrong
    s.flush()
    assert s.today == "2030-01-01" and s.compaction_due() is None
    assert len(files_of(lake, DAYS[2])) == 3 and compaction_records(lake) == []
    s.clock_day = lambda: "2026-11-29"                  # the clock moves on: the day closes
    assert s.compaction_due()[0] == DAYS[2]


def test_a_restart_keeps_a_compaction_file_a_later_compaction_replaced(uncompacted):
    """The restart tells an interrupted compaction from the table's snapshot alone (never its
    history): a compaction file no longer in the table whose own newest plain file is gone too was
    committed (and replaced since by a later compaction of a late alert): it stays on disk, history
    until vacuum, and verify stays intact."""
    s = sink(uncompacted)
    s.send([alert(DAYS[2], 7)])
    s.flush()                                           # compacts the first closed day: one file
    first = files_of(uncompacted, DAYS[0])
    assert len(first) == 1 and first[0].endswith(".compacted.parquet")
    s.send([alert(DAYS[0], 9)])                         # a late alert of the closed day: two files again
    s.flush()
    while s.compaction_due() is not None and s.compaction_due()[0] != DAYS[0]:
        s.compact()
    s.compact()
    assert len(files_of(uncompacted, DAYS[0])) == 1 and files_of(uncompacted, DAYS[0]) != first
    old = uncompacted / "alerts" / f"gaming_day={DAYS[0]}" / first[0]
    assert old.exists()
    sink(uncompacted, state=s.state())
    assert old.exists()
    assert verify(uncompacted)[0].returncode == 0
