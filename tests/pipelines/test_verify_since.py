"""``pitwatch verify --since ANCHOR`` (issue 35): only what came after the anchor's last entry.

Lakes written by real ``pitwatch run`` processes: two runs anchored (signed), a third not yet;
tampered with after the anchor (found, exactly as the full verify finds it) and before it (not
found by ``--since``: the anchor vouches for it; the full verify still finds it).  Every verify
here is a real process, and :func:`tests.pipelines.test_verify.verify` checks that it left the
lake's bytes as they were.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pitwatch.cli import exits
from pitwatch.lake import Lake, delta
from pitwatch.lake import anchor as anchors
from tests.conftest import run_pitwatch
from tests.pipelines.test_exit_codes import lake_bytes, pitwatch
from tests.pipelines.test_verify import _day, _records, _rewrite, _run, named, three_runs, verify

pytestmark = pytest.mark.slow     # its lakes are written by real pitwatch run processes (Beam pipelines)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Runs of a day and of the next, each anchored (signed); then a correction of the first day,
    not anchored yet (``anchor.jsonl``); ``head.jsonl``: the same anchor with the third run too."""
    return three_runs(tmp_path_factory.mktemp("since"), third_anchor="head.jsonl")


@pytest.fixture
def lake(written, tmp_path) -> Path:
    shutil.copytree(written / "lake", tmp_path / "lake")
    for f in ("anchor.jsonl", "head.jsonl", "anchor.key"):
        shutil.copy(written / f, tmp_path / f)
    return tmp_path / "lake"


def since(lake: Path, anchor: str = "anchor.jsonl", *more):
    return verify(lake, "--since", lake.parent / anchor, "--key", lake.parent / "anchor.key", *more)


def _anchored(lake: Path, anchor: str = "anchor.jsonl") -> dict:
    return json.loads((lake.parent / anchor).read_text().splitlines()[-1])


def _files_added(lake: Path, after: bool) -> list[str]:
    """Data files of the tables other than runs (relative to the lake) that the records after
    (or at and before) the anchored one name."""
    anchored = _anchored(lake)["runs_version"]
    out = []
    for version, _data, path in _records(lake):
        if (version > anchored) != after:
            continue
        row = pq.read_table(path).to_pylist()[0]
        out += [f"{f['table']}/{f['path']}" for f in row["added_files"] or [] if f["table"] != "runs"]
    return out


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_an_intact_lake_since_the_anchor_checks_less_than_the_full_verify(lake):
    result, report = since(lake)
    assert result.returncode == exits.DONE, result.stdout + result.stderr
    assert report["intact"] and report["problems"] == []
    anchored = _anchored(lake)
    assert report["since"]["runs_version"] == anchored["runs_version"]
    assert report["since"]["record_sha256"] == anchored["record_sha256"]
    assert report["since"]["anchored_at"] == anchored["anchored_at"]
    full_result, full = verify(lake)
    assert full_result.returncode == exits.DONE and full["head"] == report["head"]
    assert report["checked"]["runs_records"] == 3          # the third run's start, intent and end
    for what in ("commits", "data_files", "runs_records"):
        assert 0 < report["checked"][what] < full["checked"][what], what
    text = pitwatch("verify", "--lake", lake, "--since", lake.parent / "anchor.jsonl",
                    "--key", lake.parent / "anchor.key")
    assert text.returncode == exits.DONE
    assert f"since runs version {anchored['runs_version']} (run {anchored['run_id']}" in text.stdout


def test_a_data_file_added_after_the_anchor_flipped_is_named(lake):
    what = _files_added(lake, after=True)[0]
    _flip(lake / what)
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT
    assert what in named(report, "changed")


@pytest.mark.parametrize("target", ["/dev/zero", "a copy outside"])
def test_a_data_file_added_after_the_anchor_made_a_link_is_named_and_not_read(lake, tmp_path, target):
    """``--since`` does not walk the partitions (their number grows with the lake's age): the files
    it reads there are checked for a link as they are read.  A link to /dev/zero would hang it."""
    what = _files_added(lake, after=True)[0]
    pointed = "/dev/zero" if target == "/dev/zero" else str(tmp_path / "outside.parquet")
    if target != "/dev/zero":
        shutil.copy(lake / what, pointed)       # the same bytes: only the link is wrong
    (lake / what).unlink()
    (lake / what).symlink_to(pointed)
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "link") == [what]
    assert [p["detail"] for p in report["problems"] if p["kind"] == "link"][0].startswith(
        f"a symbolic link (to {pointed}) inside the lake")


def test_a_data_file_before_the_anchor_made_a_link_is_left_to_the_full_verify(lake, tmp_path):
    """A file the anchor vouches for is not read by ``--since`` (nor is its partition walked): the
    full verify names the link (and reads nothing else)."""
    what = next(f for f in _files_added(lake, after=False) if "2026-11-29" in f)
    shutil.copy(lake / what, tmp_path / "outside.parquet")
    (lake / what).unlink()
    (lake / what).symlink_to(tmp_path / "outside.parquet")
    result, report = since(lake)
    assert result.returncode == exits.DONE and report["intact"], report["problems"]
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT and named(report, "link") == [what]


def test_a_data_file_before_the_anchor_flipped_is_vouched_for_by_it(lake):
    # the second run's file (the third run replays its day too: removed since, still on disk)
    what = next(f for f in _files_added(lake, after=False) if "2026-11-29" in f)
    _flip(lake / what)
    result, report = since(lake)
    assert result.returncode == exits.DONE and report["intact"], report["problems"]
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT and what in named(report, "changed")


def test_a_data_file_before_the_anchor_deleted_is_named(lake):
    what = next(f for f in _files_added(lake, after=False) if "2026-11-29" in f)
    (lake / what).unlink()
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT and what in named(report, "removed")


def test_a_chain_record_after_the_anchor_edited_is_named(lake):
    version, _data, path = _records(lake)[-1]
    _rewrite(path, lambda r: {**r, "findings": 0})
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT
    assert str(path.relative_to(lake)) in named(report, "changed")


def test_a_commit_after_the_anchor_edited_or_removed_is_named(lake, tmp_path):
    table = "events"
    last = delta.current_version(Lake.at(lake), table)
    commit = lake / table / "_delta_log" / f"{last:020d}.json"
    assert delta.commit_writer(delta.read_commit(Lake.at(lake), table, last)[1]) == \
        pitwatch_run_ids(lake)[-1]                       # the third run's commit: after the anchor
    saved = commit.read_bytes()
    commit.write_bytes(saved.replace(b'"dataChange":true', b'"dataChange":false', 1))
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT and f"{table}/_delta_log/{last:020d}.json" in named(report, "changed")
    commit.unlink()
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT and f"{table}/_delta_log/{last:020d}.json" in named(report, "removed")


def pitwatch_run_ids(lake: Path) -> list[str]:
    ids = []
    for _v, _d, path in _records(lake):
        run = pq.read_table(path).to_pylist()[0]["run_id"]
        if run not in ids:
            ids.append(run)
    return ids


def test_a_file_dropped_into_a_partition_after_the_anchor_is_named(lake):
    what = _files_added(lake, after=True)[0]
    stray = (lake / what).parent / "part-00000-dropped.parquet"
    shutil.copy(lake / what, stray)
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT
    assert str(stray.relative_to(lake)) in named(report, "added")


def test_an_anchor_entry_forged_or_naming_an_absent_record_is_not_intact(lake):
    anchor = lake.parent / "anchor.jsonl"
    entry = _anchored(lake)
    forged = {**entry, "runs_version": entry["runs_version"] + 1}            # without the key
    anchor.write_text(anchor.read_text() + json.dumps(forged) + "\n")
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "anchor") == ["anchor.jsonl line 3"] and "signature" in report["problems"][0]["detail"]
    key = (lake.parent / "anchor.key").read_bytes().strip()
    absent = {k: v for k, v in entry.items() if k != "hmac"}
    absent.update(runs_version=999, n=1, previous="")       # the only entry: numbered as such
    absent["hmac"] = anchors.signature(absent, key)
    anchor.write_text(json.dumps(absent) + "\n")
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT
    assert "the lake has no runs version 999" in report["problems"][0]["detail"]


def test_a_recomputed_record_after_the_anchor_is_a_broken_link(lake):
    from tests.pipelines.test_verify import recompute_chain
    anchored = _anchored(lake)["runs_version"]
    recompute_chain(lake, anchored, lambda r: {**r, "findings": 0})     # the anchored record itself rewritten
    result, report = since(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "anchor") == ["anchor.jsonl line 2"]


def test_nothing_new_since_the_head(lake):
    result, report = since(lake, "head.jsonl")
    assert result.returncode == exits.DONE and report["intact"]
    assert report["checked"]["runs_records"] == 0 and report["checked"]["commits"] == 0
    assert report["checked"]["data_files"] == 0
    assert any("nothing new" in n for n in report["notes"])


def test_mistakes_are_one_error_line(lake, tmp_path):
    before = lake_bytes(lake)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    cases = [
        (("--since", tmp_path / "none.jsonl"), "does not exist"),
        (("--since", tmp_path), "is a folder"),
        (("--since", empty), "holds no entry"),
        (("--since", lake / "settings.json"), "is inside the lake"),
        (("--since", lake.parent / "anchor.jsonl", "--anchor", lake.parent / "anchor.jsonl"), "go apart"),
        (("--since", lake.parent / "anchor.jsonl", "--key", tmp_path / "none.key"), "does not exist"),
    ]
    for args, message in cases:
        result = run_pitwatch("verify", "--lake", lake, *args)
        assert result.returncode == exits.USAGE, (args, result.stderr)
        assert message in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    result = run_pitwatch("verify", "--lake", tmp_path / "nowhere", "--since", lake.parent / "anchor.jsonl")
    assert result.returncode == exits.USAGE and "no lake at" in result.stderr
    assert lake_bytes(lake) == before


def test_help_names_since_with_an_example():
    result = run_pitwatch("verify", "--help")
    assert result.returncode == exits.DONE
    assert "--since FILE" in result.stdout and "--since /worm/pitwatch/anchor.jsonl" in result.stdout


def _watcher_commit(lake: Path, watch_id: str, n: int) -> None:
    """One real alerts commit of a watcher (pitwatch.live.alerts_table), recorded in runs, in a process of its own."""
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench.lake_age import ALERT, WATCHER
    code = ALERT + WATCHER.format(lake=str(lake), watch_id=watch_id, n=0, count=1, day="2026-11-29", first=n,
                                  of=1, per=2)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_a_watcher_commit_recorded_before_the_anchor_is_vouched_for_and_one_after_checked(lake, tmp_path):
    _watcher_commit(lake, "w-before", 1)             # after the third run, recorded before the new anchor
    feed = tmp_path / "c.jsonl"
    feed.write_text(_day("2026-11-30", range(1, 4)))
    anchor = lake.parent / "late.jsonl"
    _run(lake, feed, anchor=anchor, key=lake.parent / "anchor.key")
    _watcher_commit(lake, "w-after", 2)              # after the anchor
    result, report = since(lake, "late.jsonl")
    assert result.returncode == exits.DONE, report.get("problems")
    assert report["checked"]["commits"] == 2 and report["checked"]["runs_records"] == 1   # the alerts commit, its record's
    files = delta.files_at(Lake.at(lake), "alerts", delta.current_version(Lake.at(lake), "alerts"))
    before = next(Path(f) for f in files if "w-before" in f)
    _flip(before)                                    # before the anchor: vouched for
    result, report = since(lake, "late.jsonl")
    assert result.returncode == exits.DONE, report.get("problems")
    after = next(Path(f) for f in files if "w-after" in f)
    _flip(after)
    result, report = since(lake, "late.jsonl")
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "changed") == [str(after.relative_to(lake))]


def test_since_an_anchor_followed_by_several_checkpoints_reads_every_archived_commit(tmp_path, monkeypatch):
    """Issue 35: once two checkpoints came after the anchored one, the commits between the anchored
    checkpoint and the log's first were all in the archive, and --since read only the first of them
    (every later one 'removed', the chain 'broken').  A watcher's day archives thousands."""
    from pitwatch.lake import delta_log
    from tests.pipelines.test_lake_ages import _aged_by_the_watcher

    lake, anchor = tmp_path / "lake", tmp_path / "anchor.jsonl"
    _aged_by_the_watcher(lake, 12, monkeypatch)          # a checkpoint every 10 versions
    anchors.append(str(anchor), Lake.at(lake))
    delta_log.forget()
    from pitwatch.live.alerts_table import AlertsTable
    from tests.pipelines.test_lake_ages import _alert

    table = AlertsTable(Lake.at(lake), "w1")
    table.recover({"n": 12})
    for i in range(12, 50):
        table.send([_alert(i)])
        table.flush()
    assert len(list((lake / "runs" / "_log_archive").glob("*.json"))) > 20
    result, report = verify(lake, "--since", anchor)
    assert result.returncode == exits.DONE, report["problems"][:3]
    assert report["checked"]["commits"] >= 2 * 38


def test_since_holds_a_killed_run_after_the_anchor_to_its_intent(lake):
    """Issue 37, deliverable 3, with ``--since``: a run after the anchored head killed after one
    commit its intent names (a leftover, exit 0), then a commit in its name no intent names (exit 5)."""
    from pitwatch.lake import runs
    from tests.pipelines.test_verify_intents import _day_commit, _day_rows, _started

    killed = "20261130T070000Z-0badf00d"
    meta = _started(lake, killed)
    rows = _day_rows(lake, "2026-11-28", "events")
    args, kwargs = _day_commit(lake, killed, "2026-11-28", rows, "events")
    runs.write_intent_record(Lake.at(lake), meta, delta.intended_commits(*args, **kwargs))
    made = delta.commit_replays(*args, **kwargs)
    result, report = since(lake, "head.jsonl")
    assert result.returncode == exits.DONE, report["problems"]
    commits = [f["what"] for f in report["leftovers"] if f["kind"] == "commit of an unfinished run"]
    assert commits == [f"events/_delta_log/{made:020d}.json"]
    # the insider: the day again without its first event, committed in the killed run's name
    args, kwargs = _day_commit(lake, killed, "2026-11-28", rows.slice(1), "events",
                               name=f"replay-2026-11-28-{killed}-b.parquet")
    forged = delta.commit_replays(*args, **kwargs)
    result, report = since(lake, "head.jsonl")
    assert result.returncode == exits.NOT_INTACT
    assert f"events/_delta_log/{forged:020d}.json" in named(report, "unrecorded commit")
    full_result, full = verify(lake)
    assert full_result.returncode == exits.NOT_INTACT and named(full, "unrecorded commit") == \
        named(report, "unrecorded commit")
