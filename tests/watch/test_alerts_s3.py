"""The watcher's alerts table on a lake on an S3 API (issue 44; moto's server, tests/object_store.py):
its commits go through the lake's file system and delta-rs as on disk, so the table on the bucket
holds the rows and files the same watcher code leaves on disk, and the readers (``pitwatch sql``)
and ``pitwatch verify`` say the same of both.  The watcher's code runs in this process (its
checkpoint folder, local on both, is not involved).  Compaction of a closed day is not done on an
object store yet (:func:`pitwatch.lake.delta.commit_compaction` puts its commit on a local disk only)."""
from __future__ import annotations

import json

from deltalake import DeltaTable

from pitwatch.cli import exits
from pitwatch.lake import Lake, delta, delta_log
from tests.object_store import same_but_the_lake
from tests.watch.test_alerts_compaction import ORDER, commit_days, sink
from tests.watch.test_alerts_table import pitwatch


def alerts_files(location: str) -> dict[str, list[str]]:
    """gaming day -> the alerts table's file names at its latest version (Delta's own reader)."""
    out: dict[str, list[str]] = {}
    for uri in DeltaTable(f"{location}/alerts").file_uris():
        day = uri.split("gaming_day=", 1)[1].split("/", 1)[0]
        out.setdefault(day, []).append(uri.rsplit("/", 1)[1])
    return {d: sorted(f) for d, f in sorted(out.items())}


def test_a_watcher_on_an_s3_lake_commits_its_alerts_as_on_disk(tmp_path, s3_lake):
    on_disk = str(tmp_path / "lake")
    answers, files, said = [], [], []
    for lake in (on_disk, s3_lake):
        commit_days(sink(lake, compaction=False))       # three commits a day, one file each
        out = pitwatch("sql", f"select * exclude (watch_id) from alerts {ORDER}", "--lake", lake, "--format", "json")
        assert out.returncode == exits.DONE, out.stderr
        answers.append([json.loads(line) for line in out.stdout.splitlines()])
        files.append(alerts_files(lake))
        checked = pitwatch("verify", "--lake", lake)
        assert checked.returncode == exits.DONE, checked.stdout + checked.stderr
        said.append(same_but_the_lake(checked.stdout.split("chain head")[0], lake))
        assert Lake.at(lake).table("alerts").snapshot().metadata["configuration"][delta_log.RETENTION_KEY] == \
            delta.ALERTS_DELETED_FILE_RETENTION
    assert answers[1] == answers[0] and len(answers[0]) == 9 and any(r.get("readings") for r in answers[0])
    assert files[1] == files[0] and [len(f) for f in files[0].values()] == [3, 3, 3]
    assert said[1] == said[0] and said[0].startswith("lake LAKE: intact")
