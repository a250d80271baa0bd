"""The watcher's alerts table on a lake on an S3 API (issue 44; moto's server, tests/object_store.py):
its commits go through the lake's file system and delta-rs as on disk, so the table on the bucket
holds the rows and files the same watcher code leaves on disk, and the readers (``pitwatch sql``)
and ``pitwatch verify`` say the same of both.  The watcher's code runs in this process (its
checkpoint folder, local on both, is not involved).  A closed day's compaction is the same on both
(its commit put at its exact version: a hard link on disk, a conditional put on S3)."""
from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from pitwatch.cli import exits
from pitwatch.lake import Lake, delta, delta_log
from tests.object_store import same_but_the_lake
from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave
from tests.watch.test_alerts_compaction import DAYS, ORDER, alert, commit_days, sink
from tests.watch.test_alerts_table import pitwatch


def alerts_files(location: str) -> dict[str, list[str]]:
    """gaming day -> the alerts table's file names at its latest version (Delta's own reader)."""
    out: dict[str, list[str]] = {}
    for uri in DeltaTable(f"{location}/alerts").file_uris():
        day = uri.split("gaming_day=", 1)[1].split("/", 1)[0]
        out.setdefault(day, []).append(uri.rsplit("/", 1)[1])
    return {d: sorted(f) for d, f in sorted(out.items())}


def read_back(lake: str) -> tuple[list[dict], dict[str, list[str]], str]:
    """The alerts rows (``pitwatch sql``), the table's files per day, and ``pitwatch verify``'s
    verdict with the lake's name taken out: what a disk lake and an S3 lake are compared on."""
    out = pitwatch("sql", f"select * exclude (watch_id) from alerts {ORDER}", "--lake", lake, "--format", "json")
    assert out.returncode == exits.DONE, out.stderr
    checked = pitwatch("verify", "--lake", lake)
    assert checked.returncode == exits.DONE, checked.stdout + checked.stderr
    return ([json.loads(line) for line in out.stdout.splitlines()], alerts_files(lake),
            same_but_the_lake(checked.stdout.split("chain head")[0], lake))


def test_a_watcher_on_an_s3_lake_commits_its_alerts_as_on_disk(tmp_path, s3_lake):
    on_disk = str(tmp_path / "lake")
    reads = []
    for lake in (on_disk, s3_lake):
        commit_days(sink(lake, compaction=False))       # three commits a day, one file each
        reads.append(read_back(lake))
        assert Lake.at(lake).table("alerts").snapshot().metadata["configuration"][delta_log.RETENTION_KEY] == \
            delta.ALERTS_DELETED_FILE_RETENTION
    answers, files, said = zip(*reads)
    assert answers[1] == answers[0] and len(answers[0]) == 9 and any(r.get("readings") for r in answers[0])
    assert files[1] == files[0] and [len(f) for f in files[0].values()] == [3, 3, 3]
    assert said[1] == said[0] and said[0].startswith("lake LAKE: intact")


@pytest.mark.slow           # a real pitwatch watch process over the scenario
def test_pitwatch_watch_on_an_s3_lake_commits_every_alert_once_with_its_checkpoint_local(
        tmp_path, s3_lake, scenario, batch_ids, start_watch):
    feeds, state = tmp_path / "feeds", tmp_path / "state"
    order = interleave(scenario, seed=3)
    w = start_watch(feeds, "--lake", s3_lake, "--state-dir", state, "--finalize-at-stop", "--commit-every", "0.5")
    half = len(order) // 2
    append_lines(feeds, order[:half])
    w.caught_up(half)
    append_lines(feeds, order[half:])
    w.caught_up(len(order))
    assert w.stop() == 0, w.errors[-5:]
    rows = DeltaTable(f"{s3_lake}/alerts").to_pyarrow_table(columns=["finding_id", "live_only"]).to_pylist()
    assert sorted(r["finding_id"] for r in rows if not r["live_only"]) == batch_ids
    assert sorted(r["finding_id"] for r in rows if r["live_only"]) == \
        sorted(a["finding_id"] for a in w.provisional)                 # every alert once, none lost
    assert any(state.iterdir())                                        # the checkpoint: in the local folder
    checked = pitwatch("verify", "--lake", s3_lake)
    assert checked.returncode == exits.DONE and checked.stdout.startswith(f"lake {s3_lake}: intact"), checked.stdout


def test_pitwatch_watch_on_an_s3_lake_without_a_state_dir_is_one_error_line_and_no_lake_made(
        tmp_path, s3_lake, s3_server, start_watch):
    (tmp_path / "feeds").mkdir()
    w = start_watch(tmp_path / "feeds", "--lake", s3_lake)
    assert w.proc.wait(60) == exits.USAGE
    for t in w._threads:
        t.join(5)
    assert w.errors == ["Error: the lake is remote: give a local --state-dir for the watcher's checkpoint"]
    assert s3_server.keys(s3_lake.split("/")[2]) == {}          # --create-lake made nothing first


def test_a_watcher_on_an_s3_lake_compacts_a_closed_day_as_on_disk(tmp_path, s3_lake):
    on_disk = str(tmp_path / "lake")
    reads = []
    for lake in (on_disk, s3_lake):
        commit_days(sink(lake, compaction=False))       # three commits a day, one file each
        s = sink(lake)
        s.send([alert(DAYS[2], 7)])
        s.flush()                                        # commit, then the oldest closed day compacted
        assert s.compactions == 1
        reads.append(read_back(lake))
    answers, files, said = zip(*reads)
    assert answers[1] == answers[0] and len(answers[0]) == 10
    assert files[1] == files[0] and [len(f) for f in files[0].values()] == [1, 3, 4]
    assert said[1] == said[0] and said[0].startswith("lake LAKE: intact")
