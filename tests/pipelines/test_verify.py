"""``pitwatch verify`` (issue 27): the hash chain, the files, the anchor, against real lakes.

Every lake here is written by real ``pitwatch run`` processes (``--anchor``/``--key``), copied,
tampered with as an insider would, and checked by a real ``pitwatch verify`` process: its exit
code, the file or record it names, and that verify itself changed no byte of the lake.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pitwatch.cli import exits
from pitwatch.lake import Lake, chain, delta, runs
from tests.conftest import line, run_pitwatch
from tests.data import CLEAN_FLOOR
from tests.pipelines.test_exit_codes import lake_bytes, pitwatch

EXAMPLE = CLEAN_FLOOR                 # the clean example floor, gzipped (tests/data)
ROOT = Path(__file__).resolve().parents[2]


def _day(day: str, seqs, **fields) -> str:
    return "\n".join(line(seq=s, event_id=f"e-{day}-{s}", ts=f"{day}T20:00:{s:02d}.000Z", **fields)
                     for s in seqs) + "\n"


def _run(lake: Path, *inputs, anchor: Path | None = None, key: Path | None = None, extra=()):
    args = ["run", *inputs, "--lake", lake, "--quiet", *extra]
    if anchor:
        args += ["--anchor", anchor]
    if key:
        args += ["--key", key]
    result = pitwatch(*args)
    assert result.returncode == exits.DONE, result.stderr
    return result


def verify(lake: Path, *args) -> tuple[subprocess.CompletedProcess, dict]:
    """``pitwatch verify --format json`` on ``lake`` (in this process: tests.conftest.run_pitwatch): its
    result and its report; the lake's bytes are checked to be the same after it as before."""
    before = lake_bytes(lake)
    result = run_pitwatch("verify", "--lake", lake, "--format", "json", *args)
    assert lake_bytes(lake) == before, "verify changed the lake"
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout) if result.stdout.strip() else {}
    return result, report


def named(report: dict, kind: str | None = None) -> list[str]:
    return [p["what"] for p in report["problems"] if kind is None or p["kind"] == kind]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A lake of three runs: a day, the next day, then the first day's file given again with other
    content (a correction); each run appended its head to a signed anchor."""
    return three_runs(tmp_path_factory.mktemp("verify"))


def three_runs(base, third_anchor: str = "anchor.jsonl"):
    """``base/lake``: a day, the next day (both anchored in ``base/anchor.jsonl``, signed with
    ``base/anchor.key``), then the first day's correction, anchored in ``base/third_anchor`` (a copy
    of the anchor taken before it, when it names another file)."""
    feeds = base / "feeds"
    feeds.mkdir()
    (feeds / "a.jsonl").write_text(_day("2026-11-28", range(1, 6)))
    (feeds / "b.jsonl").write_text(_day("2026-11-29", range(1, 4), device_id="SHOE-2"))
    key = base / "anchor.key"
    key.write_text("k" * 40 + "\n")
    anchor, lake = base / "anchor.jsonl", base / "lake"
    _run(lake, feeds / "a.jsonl", anchor=anchor, key=key)
    _run(lake, feeds / "b.jsonl", anchor=anchor, key=key)
    if third_anchor != anchor.name:
        shutil.copy(anchor, base / third_anchor)
    (feeds / "a.jsonl").write_text(_day("2026-11-28", [1, 2, 4, 5, 6]))     # the correction
    _run(lake, feeds / "a.jsonl", anchor=base / third_anchor, key=key)
    return base


@pytest.fixture
def lake(written, tmp_path) -> Path:
    """A copy of the written lake (and its anchor and key) to tamper with."""
    shutil.copytree(written / "lake", tmp_path / "lake")
    shutil.copy(written / "anchor.jsonl", tmp_path / "anchor.jsonl")
    shutil.copy(written / "anchor.key", tmp_path / "anchor.key")
    return tmp_path / "lake"


def _current_file(lake: Path, table: str) -> Path:
    files = delta.files_at(Lake.at(lake), table, delta.current_version(Lake.at(lake), table))
    return Path(files[0])


# -- an untouched lake ------------------------------------------------------------------------

@pytest.mark.slow
def test_an_untouched_lake_of_runs_and_a_correction_is_intact(lake):
    result, report = verify(lake, "--anchor", lake.parent / "anchor.jsonl", "--key", lake.parent / "anchor.key")
    assert result.returncode == exits.DONE, result.stdout
    assert report["intact"] is True and report["problems"] == [] and report["leftovers"] == []
    assert report["checked"]["runs_records"] == 9 and report["checked"]["data_files"] > 10   # each run: start, intent, end
    assert any("3 entries checked, 3 signed" in n for n in report["notes"])
    text = pitwatch("verify", "--lake", lake)
    assert text.returncode == exits.DONE and text.stdout.startswith(f"lake {lake}: intact\n")
    assert "chain head " + report["head"]["record_sha256"] in text.stdout


@pytest.mark.slow
def test_every_record_links_the_one_before_and_names_what_its_run_committed(lake):
    rows = []
    for v in delta.log_versions(Lake.at(lake), "runs"):
        _data, actions = delta.read_commit(Lake.at(lake), "runs", v)
        rows.append(pq.read_table(lake / "runs" / delta.added_paths(actions)[0]).to_pylist()[0])
    assert rows[0]["prev_record_sha256"] is None
    for before, after in zip(rows, rows[1:]):
        assert after["prev_record_sha256"] == before["record_sha256"] == chain.record_sha256(before, "record_sha256")
    finals = [r for r in rows if r["status"] == "succeeded"]
    assert len(finals) == 3 and all(r["commits"] and r["added_files"] for r in finals)
    assert all(not r["commits"] for r in rows if r["status"] == "running")
    findings = [(c["table"], c["version"]) for r in finals for c in r["commits"] if c["table"] == "findings"]
    assert findings == [("findings", 0), ("findings", 1), ("findings", 2)]


@pytest.mark.slow
def test_nightly_runs_and_a_late_file_pass(tmp_path):
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    for day in ("2026-11-28", "2026-11-29"):
        (inbox / day).mkdir(parents=True)
        (inbox / day / "SHOE-1.jsonl").write_text(_day(day, range(1, 4)))
    _run(lake, extra=["--day", "2026-11-28", "--inbox", inbox])
    (inbox / "2026-11-28" / "SHOE-9.jsonl").write_text(_day("2026-11-28", [7, 8], device_id="SHOE-9"))   # late
    _run(lake, extra=["--day", "2026-11-29", "--inbox", inbox])
    result, report = verify(lake)
    assert result.returncode == exits.DONE, result.stdout
    assert report["problems"] == [] and report["leftovers"] == []


# -- tampering with the data files ------------------------------------------------------------

@pytest.mark.slow
def test_one_flipped_byte_of_a_findings_file_is_named(lake):
    target = _current_file(lake, "findings")
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    rel = str(target.relative_to(lake))
    assert named(report, "changed") == [rel]
    assert "recorded" in report["problems"][0]["detail"]
    text = pitwatch("verify", "--lake", lake)
    assert text.returncode == exits.NOT_INTACT and "NOT INTACT: 1 problem" in text.stdout and rel in text.stdout


@pytest.mark.slow
def test_a_deleted_events_file_is_named(lake):
    target = _current_file(lake, "events")
    target.unlink()
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report) == [str(target.relative_to(lake))]
    assert report["problems"][0]["kind"] == "removed" and "the file is gone, and the table's current version still names it" in report["problems"][0]["detail"]


@pytest.mark.slow
def test_a_file_dropped_into_a_partition_is_named(lake):
    source = _current_file(lake, "findings")
    added = source.parent / "part-00000-extra.parquet"
    shutil.copy(source, added)
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "added") == [str(added.relative_to(lake))]


@pytest.mark.slow
def test_a_file_committed_by_another_writer_is_named_with_its_commit(lake):
    from deltalake import DeltaTable
    from deltalake.transaction import AddAction

    source = _current_file(lake, "findings")
    added = source.parent / "part-00000-forged.parquet"
    shutil.copy(source, added)
    table = DeltaTable(str(lake / "findings"))
    table.create_write_transaction(
        [AddAction(path=str(added.relative_to(lake / "findings")), size=added.stat().st_size,
                   modification_time=int(time.time() * 1000), data_change=True,
                   partition_values={"gaming_day": source.parent.name.split("=")[1]}, stats="{}")],
        mode="append", schema=table.schema().to_arrow(), partition_by=["gaming_day"])
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    version = DeltaTable(str(lake / "findings")).version()
    assert f"findings/_delta_log/{version:020d}.json" in named(report, "unrecorded commit")
    assert str(added.relative_to(lake)) in named(report, "added")


@pytest.mark.slow
def test_a_restore_to_an_earlier_version_is_an_unrecorded_commit(lake):
    from deltalake import DeltaTable

    DeltaTable(str(lake / "findings")).restore(0)      # the findings of the later runs gone from the table
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert [p for p in report["problems"] if p["kind"] == "unrecorded commit" and "RESTORE" in p["detail"]]


@pytest.mark.slow
def test_a_changed_commit_file_is_named(lake):
    commit = lake / "findings" / "_delta_log" / f"{1:020d}.json"
    commit.write_bytes(commit.read_bytes().replace(b'"dataChange":true', b'"dataChange":false', 1))
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert "findings/_delta_log/00000000000000000001.json" in named(report, "changed")


@pytest.mark.slow
def test_a_removed_commit_file_is_named(lake):
    (lake / "rounds" / "_delta_log" / f"{1:020d}.json").unlink()
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "removed") == ["rounds/_delta_log/00000000000000000001.json"]


@pytest.mark.slow
def test_the_last_commits_of_a_table_removed_are_named(lake):
    last = delta.log_versions(Lake.at(lake), "findings")[-1]
    (lake / "findings" / "_delta_log" / f"{last:020d}.json").unlink()      # the table back one version
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert f"findings/_delta_log/{last:020d}.json" in named(report, "removed")


# -- tampering with the runs records ----------------------------------------------------------

def _records(lake: Path) -> list[tuple[int, bytes, Path]]:
    out = []
    for v in delta.log_versions(Lake.at(lake), "runs"):
        data, actions = delta.read_commit(Lake.at(lake), "runs", v)
        out.append((v, data, lake / "runs" / delta.added_paths(actions)[0]))
    return out


def _rewrite(path: Path, change) -> dict:
    table = pq.read_table(path)
    row = change(table.to_pylist()[0])
    pq.write_table(pa.Table.from_pylist([row], schema=table.schema), path)
    return row


@pytest.mark.slow
def test_an_edited_runs_record_is_named(lake):
    version, _data, path = _records(lake)[1]          # the first run's final record
    _rewrite(path, lambda r: {**r, "findings": 0, "findings_by_severity": "{}"})
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    rel = str(path.relative_to(lake))
    assert rel in named(report, "changed")
    assert any("was changed: its content hashes to" in p["detail"] for p in report["problems"])


def recompute_chain(lake: Path, target: int, change) -> None:
    """What an insider who can write the lake can do: change a record and recompute every hash after
    it, over the documented canonical encoding (docs/verify.md)."""
    before = None
    for version, data, path in _records(lake):
        def relink(r, before=before, version=version):
            r = change(r) if version == target else r
            if before is not None:
                r = {**r, "prev_record_sha256": before[0], "prev_record_file_sha256": before[1],
                     "prev_runs_commit_sha256": before[2]}
            return {**r, "record_sha256": chain.record_sha256(r, "record_sha256")}
        row = _rewrite(path, relink)
        before = (row["record_sha256"], chain.bytes_sha256(path.read_bytes()), chain.bytes_sha256(data))


@pytest.mark.slow
def test_a_recomputed_chain_is_caught_by_the_anchor_only(lake):
    recompute_chain(lake, 1, lambda r: {**r, "findings": 0, "findings_by_severity": "{}"})
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report          # the chain alone cannot show it …
    anchor = lake.parent / "anchor.jsonl"
    result, report = verify(lake, "--anchor", anchor)      # … its head kept outside the lake does
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "anchor") == ["anchor.jsonl line 1", "anchor.jsonl line 2", "anchor.jsonl line 3"]
    assert "the chain was rewritten" in report["problems"][0]["detail"]


@pytest.mark.slow
def test_a_recomputed_chain_and_anchor_are_caught_by_the_signature(lake):
    recompute_chain(lake, 1, lambda r: {**r, "findings": 0, "findings_by_severity": "{}"})
    anchor = lake.parent / "anchor.jsonl"
    head = runs.runs_head(Lake.at(lake))
    forged = []
    for raw in anchor.read_text().splitlines():        # the insider rewrites the anchor too, without the key
        entry = json.loads(raw)
        entry.pop("hmac")
        if entry["runs_version"] == head["runs_version"]:
            entry.update({k: head[k] for k in ("record_sha256", "record_file_sha256", "runs_commit_sha256")})
        forged.append(json.dumps(entry))
    last = {**json.loads(forged[-1]), "n": 1, "previous": ""}     # renumbered: the only entry now
    forged[-1] = json.dumps(last)
    anchor.write_text(forged[-1] + "\n")
    result, report = verify(lake, "--anchor", anchor)
    assert result.returncode == exits.DONE                 # without the key, a forged anchor passes …
    result, report = verify(lake, "--anchor", anchor, "--key", lake.parent / "anchor.key")
    assert result.returncode == exits.NOT_INTACT           # … with it, it does not
    assert named(report, "anchor") == ["anchor.jsonl line 1"] and "not signed" in report["problems"][0]["detail"]
    entry = json.loads(forged[-1])
    entry["hmac"] = "0" * 64
    anchor.write_text(json.dumps(entry) + "\n")
    result, report = verify(lake, "--anchor", anchor, "--key", lake.parent / "anchor.key")
    assert result.returncode == exits.NOT_INTACT and "signature does not match" in report["problems"][0]["detail"]


@pytest.mark.slow
def test_records_removed_from_the_end_of_the_chain_are_caught_by_the_anchor(lake):
    last = delta.log_versions(Lake.at(lake), "runs")[-1]
    (lake / "runs" / "_delta_log" / f"{last:020d}.json").unlink()
    result, report = verify(lake, "--anchor", lake.parent / "anchor.jsonl")
    assert result.returncode == exits.NOT_INTACT
    assert any("records were removed from the chain" in p["detail"] for p in report["problems"])


# -- interrupted runs are not tampering ---------------------------------------------------------

@pytest.mark.slow
def test_kill_9_during_a_run_leaves_leftovers_not_tampering(lake):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "run", str(EXAMPLE), "--lake", str(lake),
                             "--quiet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((lake / "_staging").glob("*/ingest.json")):
        assert proc.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    time.sleep(0.5)                                    # into the replay
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report["problems"]
    kinds = {p["kind"] for p in report["leftovers"]}
    assert "run with no end" in kinds and "staging" in kinds
    text = pitwatch("verify", "--lake", lake)
    assert text.returncode == exits.DONE and "left by interrupted runs (not tampering" in text.stdout
    _run(lake, EXAMPLE)                                # the next run cleans up; the lake is still intact
    result, report = verify(lake)
    assert result.returncode == exits.DONE and report["leftovers"] == []   # the killed run's end recorded too


@pytest.mark.slow
def test_a_commit_killed_half_way_and_its_roll_back_are_not_tampering(lake, tmp_path):
    # what a kill -9 inside the commit step leaves: a running record, and a table committed by it —
    # of a pitwatch before intents (its versions name no chain format: the old leniency); today's
    # runs record an intent first: tests/pipelines/test_verify_intents.py
    killed = "20261130T070000Z-0badf00d"
    meta = {"run_id": killed, "command": "pitwatch run", "versions": "{}", "options": "{}",
            "started": "2026-11-30T07:00:00+00:00"}
    runs.write_run_record(Lake.at(lake), runs.run_record(meta, "running"))
    delta.commit_replays(Lake.at(lake), "findings", [], ["2026-11-28"], run_id=killed,
                         fence_at_start=delta.fence(Lake.at(lake), "findings"))
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report["problems"]
    assert "commit of an unfinished run" in {p["kind"] for p in report["leftovers"]}
    feeds = tmp_path / "c.jsonl"
    feeds.write_text(_day("2026-11-30", [1, 2]))
    _run(lake, feeds)           # records the killed run's end (its commit chained) and drops what it committed
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report["problems"]
    assert report["problems"] == [] and report["leftovers"] == []


# -- checkpoints ------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_checkpoint_is_re_derived_from_the_log(lake):
    from deltalake import DeltaTable

    DeltaTable(str(lake / "events")).create_checkpoint()
    result, report = verify(lake)
    assert result.returncode == exits.DONE
    # no record chained it (pitwatch's own are chained, issue 35): a leftover, since it matches
    assert [x["kind"] for x in report["leftovers"]] == ["unchained checkpoint"]
    assert "re-derived from the JSON commits, it matches" in report["leftovers"][0]["detail"]
    (checkpoint,) = (lake / "events" / "_delta_log").glob("*.checkpoint.parquet")
    table = pq.read_table(checkpoint)
    rows = [r for r in table.to_pylist() if not (r.get("add") and r["add"]["path"].startswith("gaming_day=2026-11-29"))]
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), checkpoint)    # a day hidden from readers
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "changed") == [str(checkpoint.relative_to(lake))]


# -- the users' mistakes ----------------------------------------------------------------------

@pytest.mark.slow
def test_mistakes_are_one_error_line_and_write_nothing(lake, tmp_path):
    before = lake_bytes(lake)
    short = tmp_path / "short.key"
    short.write_text("abc")
    cases = [
        (("verify", "--lake", lake, "--key", lake.parent / "anchor.key"), "--key goes with --anchor"),
        (("verify", "--lake", lake, "--anchor", tmp_path / "none.jsonl"), "does not exist"),
        (("verify", "--lake", lake, "--anchor", lake.parent / "anchor.jsonl", "--key", short), "holds 3 bytes"),
        (("verify", "--lake", tmp_path / "nowhere"), "no lake at"),
        (("verify", "--lake", tmp_path), "holds no Delta table"),
        (("run", EXAMPLE, "--lake", lake, "--anchor", lake / "anchor.jsonl"), "is inside the lake"),
        (("run", EXAMPLE, "--lake", lake, "--anchor", tmp_path / "a.jsonl", "--key", lake / "settings.json"),
         "is inside the lake"),
        (("run", EXAMPLE, "--lake", lake, "--key", lake.parent / "anchor.key"), "--key goes with --anchor"),
    ]
    for args, message in cases:
        result = pitwatch(*args)
        assert result.returncode == exits.USAGE, (args, result.stderr)
        assert message in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    bad_format = pitwatch("verify", "--lake", lake, "--format", "xml")    # click's own usage error
    assert bad_format.returncode == exits.USAGE and bad_format.stderr.splitlines()[-1].startswith(
        "Error: Invalid value for '--format'")
    assert lake_bytes(lake) == before
    assert not (tmp_path / "a.jsonl").exists()


def test_the_canonical_encoding_is_rfc_8785_without_nulls():
    import datetime as dt

    record = {"b": [1, None, {"z": None, "y": "é"}], "a": dt.datetime(2026, 11, 28, 7, 1, 2, 5, tzinfo=dt.timezone.utc),
              "d": dt.date(2026, 11, 28), "gone": None, "record_sha256": "x"}
    assert chain.canonical(record, "record_sha256") == (
        '{"a":"2026-11-28T07:01:02.000005Z","b":[1,null,{"y":"é"}],"d":"2026-11-28"}').encode()
    assert chain.record_sha256(record, "record_sha256") == chain.bytes_sha256(chain.canonical(record, "record_sha256"))
    linked = chain.link({"record_sha256": "p"}, {"n": 1}, "record_sha256", "prev")
    assert linked["prev"] == "p" and chain.chain_problems([linked], "record_sha256", "prev")[0][1] == "broken link"
    assert chain.chain_problems([chain.link(None, {"n": 1}, "record_sha256", "prev")], "record_sha256", "prev") == []


# -- every writer is chained through write_run_record ----------------------------------------

@pytest.mark.slow
def test_a_vacuum_that_records_through_write_run_record_is_chained_and_not_tampering(lake):
    """What ``pitwatch vacuum`` (another issue) does: delta-rs's vacuum, its commits stamped with its
    run id, then its record; the files it deleted left the tables earlier and are not missing."""
    from deltalake import CommitProperties, DeltaTable

    writer = "20261201T080000Z-0000cafe"
    gone = []
    for name in ("events", "findings"):
        gone += DeltaTable(str(lake / name)).vacuum(
            retention_hours=0, dry_run=False, enforce_retention_duration=False,
            commit_properties=CommitProperties(custom_metadata={delta.RUN_ID_KEY: writer}),
            post_commithook_properties=delta.post_commit())
    assert gone, "the correction left removed files to vacuum"
    meta = {"run_id": writer, "command": "pitwatch vacuum", "versions": "{}", "options": "{}",
            "started": "2026-12-01T08:00:00+00:00"}
    runs.write_run_record(Lake.at(lake), runs.run_record(meta, "succeeded", ended=None))
    rows = [pq.read_table(p).to_pylist()[0] for _v, _d, p in _records(lake)]
    ops = {(c["table"], c["operation"]) for c in rows[-1]["commits"]}
    assert ("findings", "VACUUM START") in ops and ("findings", "VACUUM END") in ops
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report["problems"]
    assert report["leftovers"] == []


@pytest.mark.slow
def test_the_anchor_and_its_key_from_pitwatch_toml(tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "anchor.key").write_text("s" * 32)
    (etc / "pitwatch.toml").write_text('lake = "../lake"\nanchor = "../worm/anchor.jsonl"\nanchor_key = "anchor.key"\n')
    (tmp_path / "worm").mkdir()
    feed = tmp_path / "a.jsonl"
    feed.write_text(_day("2026-11-28", range(1, 4)))
    result = pitwatch("run", feed, "--quiet", env={"PITWATCH_CONFIG": str(etc / "pitwatch.toml")})
    assert result.returncode == exits.DONE, result.stderr
    (entry,) = [json.loads(x) for x in (tmp_path / "worm" / "anchor.jsonl").read_text().splitlines()]
    from pitwatch.lake import anchor

    assert entry["hmac"] == anchor.signature(entry, b"s" * 32) and entry["status"] == "succeeded"
    checked = pitwatch("verify", "--format", "text", env={"PITWATCH_CONFIG": str(etc / "pitwatch.toml")})
    assert checked.returncode == exits.DONE and "1 entry checked, 1 signed" in checked.stdout


@pytest.mark.slow
def test_hostile_records_and_commit_lines_are_named_not_a_traceback(lake):
    """A runs record rewritten with columns of other types, a commit line that is JSON but no
    action, an add action without a path: each is named, exit 5, one report, no traceback."""
    _version, _data, path = _records(lake)[1]
    pq.write_table(pa.table({"run_id": [b"\x00\xff"], "commits": ["not a list"], "added_files": [3.5],
                             "record_sha256": [b"bytes"], "status": [float("nan")]}), path)
    commit = lake / "packs" / "_delta_log" / f"{1:020d}.json"
    commit.write_bytes(commit.read_bytes() + b'[1, 2]\n')
    other = lake / "rounds" / "_delta_log" / f"{1:020d}.json"
    other.write_bytes(other.read_bytes() + b'{"add": {"size": 5}}\n')
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT, result.stderr
    changed = named(report, "changed")
    assert str(path.relative_to(lake)) in changed
    assert "packs/_delta_log/00000000000000000001.json" in changed
    assert "rounds/_delta_log/00000000000000000001.json" in changed
    text = pitwatch("verify", "--lake", lake)
    assert text.returncode == exits.NOT_INTACT and "Traceback" not in text.stderr and text.stderr == ""


# -- the anchor's entries are numbered, each signing the one before (issue 37) --------------------

def _anchor_lines(anchor: Path) -> list[dict]:
    return [json.loads(raw) for raw in anchor.read_text().splitlines()]


@pytest.mark.slow
def test_anchor_entries_are_numbered_and_each_signs_the_one_before(lake):
    anchor, key = lake.parent / "anchor.jsonl", lake.parent / "anchor.key"
    raw = anchor.read_bytes().splitlines()
    entries = _anchor_lines(anchor)
    assert [e["n"] for e in entries] == list(range(1, len(entries) + 1)) and len(entries) >= 3
    assert entries[0]["previous"] == "" and all(
        e["previous"] == chain.bytes_sha256(before) for e, before in zip(entries[1:], raw))
    result, report = verify(lake, "--anchor", anchor, "--key", key)
    assert result.returncode == exits.DONE, report


@pytest.mark.slow
def test_an_anchor_entry_removed_from_the_middle_is_caught(lake):
    anchor, key = lake.parent / "anchor.jsonl", lake.parent / "anchor.key"
    lines = anchor.read_bytes().splitlines(keepends=True)
    anchor.write_bytes(b"".join(lines[:1] + lines[2:]))
    result, report = verify(lake, "--anchor", anchor, "--key", key)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "anchor")[0] == "anchor.jsonl line 2"
    assert "entry number 3 where entry 2 belongs: entries before it were removed" in report["problems"][0]["detail"]


@pytest.mark.slow
def test_the_issues_truncation_is_caught_when_the_anchor_is_append_only(lake):
    """Issue 37: the last anchor line deleted with the last runs record: `verify --anchor --key`
    said intact. A file that can be cut can show nothing of its lost end (docs/verify.md: keep it
    append-only: WORM storage, a remote syslog). Kept append-only, the line stays, and the insider
    can only remove the record, or add a line: each is caught."""
    anchor, key = lake.parent / "anchor.jsonl", lake.parent / "anchor.key"
    last = delta.log_versions(Lake.at(lake), "runs")[-1]
    (lake / "runs" / "_delta_log" / f"{last:020d}.json").unlink()
    result, report = verify(lake, "--anchor", anchor, "--key", key)
    assert result.returncode == exits.NOT_INTACT
    assert any("records were removed from the chain" in p["detail"] for p in report["problems"])
    # appending a copy of the line before, to make the anchor end where the lake now does
    lines = anchor.read_bytes().splitlines(keepends=True)
    anchor.write_bytes(b"".join(lines) + lines[-2])
    result, report = verify(lake, "--anchor", anchor, "--key", key)
    assert result.returncode == exits.NOT_INTACT
    assert any("entries were added or moved" in p["detail"] for p in report["problems"])


# -- links and permissions (issue 37: verify followed symlinks out of the lake) --------------------

@pytest.mark.slow
@pytest.mark.parametrize("target", ["a copy outside", "/dev/zero", "a partition folder outside"])
def test_a_symlink_inside_the_lake_is_refused_and_nothing_is_read_through_it(lake, tmp_path, target):
    data = sorted((lake / "findings").glob("gaming_day=*/*.parquet"))[0]
    if target == "a partition folder outside":
        folder = data.parent
        shutil.copytree(folder, tmp_path / "elsewhere")
        shutil.rmtree(folder)
        folder.symlink_to(tmp_path / "elsewhere")
        link, pointed = str(folder.relative_to(lake)), str(tmp_path / "elsewhere")
    else:
        pointed = "/dev/zero" if target == "/dev/zero" else str(tmp_path / "outside.parquet")
        if target != "/dev/zero":
            shutil.copy(data, pointed)     # the same bytes: only the link is wrong
        data.unlink()
        data.symlink_to(pointed)
        link = str(data.relative_to(lake))
    result, report = verify(lake)        # returns (a link to /dev/zero would have hung a reading verify)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "link") == [link]
    assert report["problems"][0]["detail"].startswith(f"a symbolic link (to {pointed}) inside the lake")


@pytest.mark.slow
def test_files_and_folders_writable_by_others_are_reported(lake):
    folder = sorted((lake / "findings").glob("gaming_day=*"))[0]
    folder.chmod(0o777)
    result, report = verify(lake)
    assert result.returncode == exits.DONE, report
    rel = str(folder.relative_to(lake))
    assert any(n.startswith(f"writable by others: {rel} (drwxrwxrwx)") for n in report["notes"]), report["notes"]
