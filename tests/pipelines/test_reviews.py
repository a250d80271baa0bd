"""``pitwatch review`` and the lake's ``reviews`` table (issue 42, deliverable 1): a review is one
chained commit under the lake's lock; what must not be recorded is one ``Error:`` line, exit 2,
and the lake's bytes unchanged; the findings view shows each finding's latest review as its status."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pitwatch.cli import exits
from pitwatch.lake import Lake, chain, delta, runs
from pitwatch.lake import parquet as lake_parquet
from pitwatch.lake import reviews as lake_reviews
from pitwatch.queries.lake_views import connect
from tests.conftest import run_pitwatch
from tests.pipelines.test_exit_codes import lake_bytes
from tests.pipelines.test_verify import _day, _run

DAY = "2026-11-28"


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """A lake of one run over two tables' unshuffled packs: two findings, no review."""
    base = tmp_path_factory.mktemp("reviews")
    (base / "a.jsonl").write_text(_day(DAY, range(1, 6)) + "".join(
        _day(DAY, range(11, 13), table_id="BAC-08", device_id="SHOE-8").splitlines(keepends=True)))
    _run(base / "lake", base / "a.jsonl")
    return base / "lake"


@pytest.fixture
def lake(written, tmp_path) -> Path:
    shutil.copytree(written, tmp_path / "lake")
    return tmp_path / "lake"


def finding_ids(lake: Path) -> list[str]:
    con = connect(Lake.at(lake))
    try:
        return [r[0] for r in con.sql("SELECT finding_id FROM findings ORDER BY table_id").fetchall()]
    finally:
        con.close()


def statuses(lake: Path) -> dict[str, tuple]:
    con = connect(Lake.at(lake))
    try:
        return {r[0]: r[1:] for r in con.sql(
            "SELECT finding_id, status, reviewed_by, reviewed_at IS NOT NULL FROM findings").fetchall()}
    finally:
        con.close()


def review(lake: Path, *args):
    return run_pitwatch("review", *args, "--lake", lake)


def test_the_written_lake_has_two_findings_of_two_tables(written):
    assert len(finding_ids(written)) == 2


def test_a_review_is_recorded_and_becomes_the_findings_status(lake):
    first, second = finding_ids(lake)
    result = review(lake, first, "--disposition", "confirmed", "--by", "M. Ortiz", "--reason", "DEALER_ERROR",
                    "--note", "burn skipped", "--video", "CAM-14 21:03", "--amount", "-25")
    assert result.returncode == exits.DONE, result.stderr
    assert result.stdout.startswith(f"{first}: confirmed (review ")
    assert statuses(lake) == {first: ("confirmed", "M. Ortiz", True), second: ("open", None, False)}
    rows = lake_reviews.read_all(Lake.at(lake)).to_pylist()
    assert len(rows) == 1
    row = rows[0]
    assert {k: row[k] for k in ("finding_id", "disposition", "reason", "reviewer", "note", "video", "amount",
                                "rule_id", "table_id", "prev_review_sha256")} == {
        "finding_id": first, "disposition": "confirmed", "reason": "DEALER_ERROR", "reviewer": "M. Ortiz",
        "note": "burn skipped", "video": "CAM-14 21:03", "amount": -25.0, "rule_id": "UNSHUFFLED_PACK",
        "table_id": "BAC-07", "prev_review_sha256": None}
    assert str(row["gaming_day"]) == DAY
    assert row["review_sha256"] == chain.record_sha256(row, "review_sha256")


def test_the_latest_review_is_the_status_and_history_is_kept(lake):
    first, _second = finding_ids(lake)
    assert review(lake, first, "--disposition", "escalated", "--by", "A").returncode == exits.DONE
    assert review(lake, first, "--disposition", "dismissed", "--by", "B", "--reason", "DEVICE_FAULT").returncode == 0
    assert statuses(lake)[first] == ("dismissed", "B", True)
    rows = lake_reviews.read_all(Lake.at(lake)).to_pylist()
    assert [r["disposition"] for r in rows] == ["escalated", "dismissed"]
    assert rows[1]["prev_review_sha256"] == rows[0]["review_sha256"]       # chained, the second to the first
    assert chain.chain_problems(rows, "review_sha256", "prev_review_sha256") == []


def test_each_review_call_is_one_commit_recorded_in_runs_with_its_file(lake):
    first, second = finding_ids(lake)
    at = Lake.at(lake)
    before = delta.current_version(at, "reviews")
    (lake.parent / "batch.csv").write_text(
        "finding_id,disposition,by,reason,note,video,amount\n"
        f"{first},confirmed,A,DEALER_ERROR,\"a note, with a comma\",,\n"
        f"{second},escalated,A,,,CAM-2,\n")
    result = run_pitwatch("review", "--from", lake.parent / "batch.csv", "--lake", lake)
    assert result.returncode == exits.DONE, result.stderr
    assert len(result.stdout.splitlines()) == 2
    assert before is None and delta.current_version(at, "reviews") == 0
    record = runs.latest_records(lake_parquet.read_table(at, "runs"))[-1]
    assert record["status"] == "succeeded" and record["command"].startswith("pitwatch review")
    files = [f for f in record["added_files"] if f["table"] == "reviews"]
    assert len(files) == 1 and files[0]["sha256"] == chain.file_sha256(at.fs, at.path("reviews", files[0]["path"]))
    assert statuses(lake)[second][0] == "escalated"


def test_the_chain_head_is_found_from_the_last_commit_only(lake):
    first, second = finding_ids(lake)
    for i in range(3):
        assert review(lake, first, "--disposition", "confirmed", "--by", f"R{i}").returncode == 0
    at = Lake.at(lake)
    for version in range(2):          # the older commits' files gone: the head is still found
        _data, actions = delta.read_commit(at, "reviews", version)
        path = Path(at.path("reviews", delta.added_paths(actions)[0]))
        path.chmod(0o644)
        path.unlink()
    assert lake_reviews.head(at)["reviewer"] == "R2"


REFUSED = [
    ("an_unknown_finding", ["no-such-finding", "--disposition", "confirmed", "--by", "A"], "is not in the lake's findings"),
    ("an_unknown_disposition", [0, "--disposition", "approved", "--by", "A"], "disposition 'approved'"),
    ("an_unknown_reason", [0, "--disposition", "confirmed", "--by", "A", "--reason", "BAD_LUCK"], "reason 'BAD_LUCK'"),
    ("an_empty_reviewer", [0, "--disposition", "confirmed", "--by", " "], "--by"),
    ("a_nan_amount", [0, "--disposition", "confirmed", "--by", "A", "--amount", "nan"], "not a number"),
    ("an_infinite_amount", [0, "--disposition", "confirmed", "--by", "A", "--amount", "inf"], "not a number"),
    ("an_amount_too_large_for_a_float", [0, "--disposition", "confirmed", "--by", "A", "--amount", "9" * 400],
     "finite"),
    ("an_amount_in_arabic_indic_digits", [0, "--disposition", "confirmed", "--by", "A", "--amount", "\u0661\u0662"],
     "not a number"),
    ("an_amount_with_an_underscore", [0, "--disposition", "confirmed", "--by", "A", "--amount", "1_000"],
     "not a number"),
    ("an_amount_in_exponent_form", [0, "--disposition", "confirmed", "--by", "A", "--amount", "1e3"], "not a number"),
    ("a_text_amount", [0, "--disposition", "confirmed", "--by", "A", "--amount", "ten"], "not a number"),
    ("no_reviewer", [0, "--disposition", "confirmed"], "--by"),
]


@pytest.mark.parametrize("name,args,said", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_refused_review_is_one_error_line_and_leaves_the_lake_unchanged(lake, name, args, said):
    ids = finding_ids(lake)
    args = [ids[a] if isinstance(a, int) else a for a in args]
    before = lake_bytes(lake)
    result = review(lake, *args)
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr.startswith("Error: ") and said in result.stderr and len(result.stderr.splitlines()) == 1
    assert lake_bytes(lake) == before


@pytest.mark.parametrize("typed,stored", [("12", 12.0), ("-25", -25.0), ("+7.50", 7.5), (" 1000 ", 1000.0)])
def test_a_plain_ascii_decimal_amount_is_stored_as_written(lake, typed, stored):
    first, _second = finding_ids(lake)
    result = review(lake, first, "--disposition", "confirmed", "--by", "A", "--amount", typed)
    assert result.returncode == exits.DONE, result.stderr
    assert [r["amount"] for r in lake_reviews.read_all(Lake.at(lake)).to_pylist()] == [stored]


def test_the_reviewers_name_is_echoed_with_its_control_characters_escaped(lake):
    first, _second = finding_ids(lake)
    by = "M. Ortiz\x1b]0;owned\x07\rforged"
    result = review(lake, first, "--disposition", "confirmed", "--by", by)
    assert result.returncode == exits.DONE, result.stderr
    assert "\x1b" not in result.stdout and "\r" not in result.stdout and "\x07" not in result.stdout
    assert result.stdout.rstrip("\n").endswith("by M. Ortiz\\x1b]0;owned\\x07\\x0dforged)")
    assert lake_reviews.read_all(Lake.at(lake)).to_pylist()[0]["reviewer"] == by     # stored as typed


def test_a_plain_reviewers_name_is_echoed_as_it_is(lake):
    first, _second = finding_ids(lake)
    result = review(lake, first, "--disposition", "confirmed", "--by", "M. Ortiz")
    assert result.returncode == exits.DONE, result.stderr
    assert result.stdout.rstrip("\n").endswith("by M. Ortiz)")


@pytest.mark.parametrize("where", ["missing", "a_file", "an_empty_folder"])
def test_a_review_of_a_lake_that_is_not_one_is_one_error_line(tmp_path, where):
    target = tmp_path / "lake"
    if where == "a_file":
        target.write_text("x")
    elif where == "an_empty_folder":
        target.mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = review(target, "abc", "--disposition", "confirmed", "--by", "A")
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.rglob("*")) == before         # no lock file, no folder created


def test_a_lake_no_run_wrote_is_refused_and_left_as_it_was(tmp_path):
    from tests.queries.lakes import build_lake

    lake = Path(build_lake(str(tmp_path / "lake")))        # findings committed by hand: no runs table
    before = lake_bytes(lake)
    result = review(lake, "f-0", "--disposition", "confirmed", "--by", "A")
    assert result.returncode == exits.USAGE and "no findings a pitwatch run wrote" in result.stderr, result.stderr
    assert lake_bytes(lake) == before


@pytest.mark.slow
def test_a_review_waits_for_the_lakes_lock_and_gives_up_with_exit_4_writing_nothing(lake):
    import logging

    from pitwatch.lake.lock import hold, new_holder
    from tests.conftest import run_pitwatch_process

    first, _ = finding_ids(lake)
    with hold(Lake.at(lake), new_holder("a test holding the lake"), 5, logging.getLogger("t")):
        before = lake_bytes(lake)
        result = run_pitwatch_process("review", first, "--disposition", "confirmed", "--by", "A",
                                      "--lock-timeout", "0.5", "--lake", lake)      # another process: it waits
        assert lake_bytes(lake) == before
    assert result.returncode == exits.LOCKED and "a test holding the lake" in result.stderr, result.stderr
    assert review(lake, first, "--disposition", "confirmed", "--by", "A").returncode == exits.DONE


def test_a_second_identical_review_is_refused_and_a_different_one_is_not(lake):
    first, _ = finding_ids(lake)
    same = [first, "--disposition", "confirmed", "--by", "A", "--note", "n"]
    assert review(lake, *same).returncode == exits.DONE
    before = lake_bytes(lake)
    again = review(lake, *same)
    assert again.returncode == exits.USAGE and "already has this review" in again.stderr
    assert lake_bytes(lake) == before
    assert review(lake, first, "--disposition", "confirmed", "--by", "A", "--note", "n2").returncode == exits.DONE


def test_a_batch_with_one_bad_line_is_refused_whole_naming_the_line(lake):
    first, second = finding_ids(lake)
    batch = lake.parent / "batch.csv"
    batch.write_text("finding_id,disposition,by,reason,note,video,amount\n"
                     f"{first},confirmed,A,,,,\n"
                     f"{second},confirmed,A,NOT_A_CODE,,,\n")
    before = lake_bytes(lake)
    result = run_pitwatch("review", "--from", batch, "--lake", lake)
    assert result.returncode == exits.USAGE
    assert f"{batch} line 3" in result.stderr and "NOT_A_CODE" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert lake_bytes(lake) == before


@pytest.mark.parametrize("body,said", [
    (b"finding_id,disposition\nx,confirmed\n", "line 1"),
    (b"finding_id,disposition,by,reason,note,video,amount\nx,confirmed\n", "line 2: 2 fields"),
    (b"finding_id,disposition,by,reason,note,video,amount\n\xff\xfe,confirmed,A,,,,\n", "line 2: not UTF-8"),
    (b"", "empty"),
    (b"finding_id,disposition,by,reason,note,video,amount\n", "no review"),
], ids=["bad_header", "short_row", "not_utf8", "empty", "header_only"])
def test_a_batch_file_that_is_not_one_is_refused(lake, body, said):
    batch = lake.parent / "batch.csv"
    batch.write_bytes(body)
    before = lake_bytes(lake)
    result = run_pitwatch("review", "--from", batch, "--lake", lake)
    assert result.returncode == exits.USAGE and said in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert lake_bytes(lake) == before


@pytest.mark.parametrize("kind", ["folder", "fifo", "missing"])
def test_a_batch_that_is_no_file_is_refused_without_waiting(lake, kind):
    import os

    batch = lake.parent / "batch.csv"
    if kind == "folder":
        batch.mkdir()
    elif kind == "fifo":
        os.mkfifo(batch)
    before = lake_bytes(lake)
    result = run_pitwatch("review", "--from", batch, "--lake", lake)
    assert result.returncode == exits.USAGE and result.stderr.startswith("Error: "), result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert lake_bytes(lake) == before


def test_review_help_has_examples():
    result = run_pitwatch("review", "--help")
    assert result.returncode == 0 and "Examples:" in result.stdout and "pitwatch review --from" in result.stdout


def test_the_export_holds_the_reviews_and_the_findings_status(lake, tmp_path):
    import duckdb

    first, second = finding_ids(lake)
    assert review(lake, first, "--disposition", "confirmed", "--by", "A").returncode == exits.DONE
    out = tmp_path / "export.duckdb"
    result = run_pitwatch("export-duckdb", "--lake", lake, "--out", out)
    assert result.returncode == exits.DONE, result.stderr
    con = duckdb.connect(str(out), read_only=True)
    try:
        assert sorted(con.sql("SELECT finding_id, status, reviewed_by FROM findings").fetchall()) == sorted(
            [(first, "confirmed", "A"), (second, "open", None)])
        assert con.sql("SELECT finding_id, disposition FROM reviews").fetchall() == [(first, "confirmed")]
    finally:
        con.close()


# -- verify covers the reviews ------------------------------------------------------------------

def _three_reviews(lake: Path) -> list[Path]:
    """Three reviews of the lake's first finding, one commit each; their files, oldest first."""
    first, _ = finding_ids(lake)
    for by in ("A", "B", "C"):
        assert review(lake, first, "--disposition", "confirmed", "--by", by).returncode == exits.DONE
    at = Lake.at(lake)
    return [Path(at.path("reviews", delta.added_paths(delta.read_commit(at, "reviews", v)[1])[0])) for v in range(3)]


def _rewrite(path: Path, change) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [change(r) for r in pq.read_table(path).to_pylist()]
    path.chmod(0o644)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)


def test_verify_finds_a_lake_with_reviews_intact(lake):
    from tests.pipelines.test_verify import verify

    _three_reviews(lake)
    result, report = verify(lake)
    assert result.returncode == exits.DONE, result.stdout
    assert report["problems"] == [] and report["leftovers"] == []


def test_verify_names_a_review_whose_note_was_rewritten(lake):
    from tests.pipelines.test_verify import named, verify

    files = _three_reviews(lake)
    _rewrite(files[1], lambda r: {**r, "note": "nothing to see"})
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    rel = f"reviews/{files[1].name}"
    assert rel in named(report, "changed")                              # the file's bytes, and the review
    assert any(p["kind"] == "changed" and p["what"] == rel and "review " in p["detail"] for p in report["problems"])


def test_verify_names_the_link_a_rehashed_review_broke(lake):
    from tests.pipelines.test_verify import verify

    files = _three_reviews(lake)

    def rehashed(r):
        r = {**r, "disposition": "dismissed"}
        return {**r, "review_sha256": chain.record_sha256(r, "review_sha256")}
    _rewrite(files[1], rehashed)
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert any(p["kind"] == "broken link" and p["what"] == f"reviews/{files[2].name}" for p in report["problems"])


def test_verify_of_a_lake_without_reviews_says_nothing_of_them(written):
    from tests.pipelines.test_verify import verify

    result, report = verify(written)
    assert result.returncode == exits.DONE and not any("review" in p["what"] for p in report["problems"])


# -- the named queries, and a corrected replay ----------------------------------------------------

def query(lake: Path, name: str, *params: str) -> list[dict]:
    import json

    args = [a for p in params for a in ("--param", p)]
    result = run_pitwatch("query", name, "--lake", lake, "--format", "json", *args)
    assert result.returncode == exits.DONE, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_open_findings_lists_the_open_and_escalated_not_the_decided(lake):
    first, second = finding_ids(lake)
    assert [r["finding_id"] for r in query(lake, "open_findings")] == [first, second]      # same severity: by time
    assert review(lake, first, "--disposition", "confirmed", "--by", "A").returncode == exits.DONE
    assert review(lake, second, "--disposition", "escalated", "--by", "B").returncode == exits.DONE
    shown = query(lake, "open_findings")
    assert [(r["finding_id"], r["status"], r["reviewed_by"]) for r in shown] == [(second, "escalated", "B")]
    assert query(lake, "open_findings", "table_id=BAC-07") == []
    assert query(lake, "open_findings", "from_day=2026-11-29") == []


def test_review_log_is_newest_first_and_filters_by_reviewer(lake):
    first, second = finding_ids(lake)
    assert review(lake, first, "--disposition", "confirmed", "--by", "A", "--reason", "DEALER_ERROR").returncode == 0
    assert review(lake, second, "--disposition", "dismissed", "--by", "B", "--reason", "PATRON").returncode == 0
    log = query(lake, "review_log")
    assert [(r["finding_id"], r["reviewer"], r["error_type"], r["finding_exists"]) for r in log] == [
        (second, "B", "patron", True), (first, "A", "dealer", True)]
    assert [r["finding_id"] for r in query(lake, "review_log", "reviewer=A")] == [first]
    assert query(lake, "review_log", "since=9999-01-01") == []


def test_a_corrected_replay_keeps_the_reviews_of_surviving_findings_and_lists_the_others_as_orphans(lake):
    from tests.conftest import line

    kept, removed = finding_ids(lake)          # BAC-07's and BAC-08's unshuffled packs
    assert review(lake, kept, "--disposition", "confirmed", "--by", "A", "--note", "on camera").returncode == 0
    assert review(lake, removed, "--disposition", "confirmed", "--by", "A").returncode == 0
    assert query(lake, "orphan_reviews") == []
    late = lake.parent / "late.jsonl"           # BAC-08's shuffle, in a file that came late: its pack was shuffled
    late.write_text(line("shuffle_completed", seq=10, event_id="e-late-shuffle", table_id="BAC-08",
                         device_id="SHF-8", ts=f"{DAY}T19:59:00.000Z") + "\n")
    _run(lake, late)
    assert statuses(lake) == {kept: ("confirmed", "A", True)}
    orphans = query(lake, "orphan_reviews")
    assert [(r["finding_id"], r["rule_id"], r["table_id"], r["disposition"]) for r in orphans] == [
        (removed, "UNSHUFFLED_PACK", "BAC-08", "confirmed")]
    assert {r["finding_id"]: r["finding_exists"] for r in query(lake, "review_log")} == {kept: True, removed: False}
    refused = review(lake, removed, "--disposition", "dismissed", "--by", "A")
    assert refused.returncode == exits.USAGE and "not in the lake's findings" in refused.stderr
    from tests.pipelines.test_verify import verify

    result, report = verify(lake)                  # reviews, a run, more reviews: one intact chain
    assert result.returncode == exits.DONE and report["problems"] == [] and report["leftovers"] == [], report


def test_vacuum_keeps_every_review_and_the_lake_stays_intact(lake):
    from tests.pipelines.test_verify import verify

    files = _three_reviews(lake)
    done = run_pitwatch("vacuum", "--lake", lake, "--retention-days", "0", "--no-config-holds")
    assert done.returncode == exits.DONE, done.stderr
    assert all(f.exists() for f in files)
    assert [r["reviewer"] for r in lake_reviews.read_all(Lake.at(lake)).to_pylist()] == ["A", "B", "C"]
    result, report = verify(lake)
    assert result.returncode == exits.DONE and report["problems"] == [], report["problems"]


def test_a_clock_that_stepped_back_does_not_reorder_the_reviews(lake, monkeypatch):
    import datetime as dt

    first, _ = finding_ids(lake)
    assert review(lake, first, "--disposition", "confirmed", "--by", "A").returncode == exits.DONE
    monkeypatch.setattr(lake_reviews, "clock", lambda: dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))
    assert review(lake, first, "--disposition", "dismissed", "--by", "B").returncode == exits.DONE
    monkeypatch.undo()
    rows = lake_reviews.read_all(Lake.at(lake)).to_pylist()
    assert [r["reviewer"] for r in rows] == ["A", "B"] and rows[1]["reviewed_at"] > rows[0]["reviewed_at"]
    assert statuses(lake)[first][:2] == ("dismissed", "B")


def test_verify_since_checks_the_reviews_after_the_anchor_only(tmp_path):
    from tests.pipelines.test_verify import named, verify

    (tmp_path / "a.jsonl").write_text(_day(DAY, range(1, 6)))
    (tmp_path / "b.jsonl").write_text(_day("2026-11-29", range(1, 3), device_id="SHOE-2"))
    key, anchor, lake = tmp_path / "anchor.key", tmp_path / "anchor.jsonl", tmp_path / "lake"
    key.write_text("k" * 40 + "\n")
    _run(lake, tmp_path / "a.jsonl", anchor=anchor, key=key)
    first = finding_ids(lake)[0]
    for by in ("A", "B"):
        assert review(lake, first, "--disposition", "confirmed", "--by", by).returncode == exits.DONE
    _run(lake, tmp_path / "b.jsonl", anchor=anchor, key=key)           # anchors a head after the two reviews
    assert review(lake, first, "--disposition", "dismissed", "--by", "C").returncode == exits.DONE
    at = Lake.at(lake)
    files = [Path(at.path("reviews", delta.added_paths(delta.read_commit(at, "reviews", v)[1])[0])) for v in range(3)]
    result, report = verify(lake, "--since", anchor, "--key", key)
    assert result.returncode == exits.DONE, report["problems"]

    _rewrite(files[0], lambda r: {**r, "note": "before the anchor"})      # the anchor vouches for it: --since
    result, report = verify(lake, "--since", anchor, "--key", key)       # does not look, the full verify does
    assert result.returncode == exits.DONE, report["problems"]
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT and f"reviews/{files[0].name}" in named(report, "changed")

    _rewrite(files[2], lambda r: {**r, "note": "after the anchor"})
    result, report = verify(lake, "--since", anchor, "--key", key)
    assert result.returncode == exits.NOT_INTACT
    assert any(p["what"] == f"reviews/{files[2].name}" and "review " in p["detail"] for p in report["problems"])
    assert f"reviews/{files[0].name}" not in named(report)


def test_as_of_a_reviews_run_id_says_it_is_a_review_not_a_night(lake):
    first, _ = finding_ids(lake)
    assert review(lake, first, "--disposition", "confirmed", "--by", "A").returncode == exits.DONE
    review_run = lake_reviews.read_all(Lake.at(lake)).to_pylist()[0]["review_id"].rsplit("-", 1)[0]
    result = run_pitwatch("sql", "FROM findings", "--lake", lake, "--as-of", review_run)
    assert result.returncode == exits.USAGE and "that is a pitwatch review" in result.stderr, result.stderr
    night = runs.latest_records(lake_parquet.read_table(Lake.at(lake), "runs"))
    batch = [r["run_id"] for r in night if r["table_versions"]][-1]
    assert run_pitwatch("sql", "FROM findings", "--lake", lake, "--as-of", batch).returncode == exits.DONE


def test_verify_says_a_deleted_review_file_is_gone_and_still_named_by_the_table(lake):
    from tests.pipelines.test_verify import verify

    files = _three_reviews(lake)
    files[1].chmod(0o644)
    files[1].unlink()
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    problem = next(p for p in report["problems"] if p["what"] == f"reviews/{files[1].name}")
    assert problem["kind"] == "removed"
    assert problem["detail"].endswith("added it; the file is gone, and the table's current version still names it")
    assert "it is in the table now" not in problem["detail"]


def _batch_cycling_dispositions(lake: Path, finding_id: str, count: int) -> Path:
    """A batch file of ``count`` reviews of one finding, the dispositions in turn (no two in a row
    the same), so the last row's differs from the 9,999th's."""
    dispositions = lake_reviews.DISPOSITIONS
    path = lake.parent / "batch.csv"
    path.write_text("finding_id,disposition,by,reason,note,video,amount\n" + "".join(
        f"{finding_id},{dispositions[i % 3]},R{i},,,,\n" for i in range(1, count + 1)))
    return path


@pytest.mark.parametrize("count", [10_001, 4])
def test_the_status_after_a_batch_is_its_last_rows_whatever_the_batch_size(lake, count):
    first, _second = finding_ids(lake)
    result = run_pitwatch("review", "--from", _batch_cycling_dispositions(lake, first, count), "--lake", lake)
    assert result.returncode == exits.DONE, result.stderr
    last = (lake_reviews.DISPOSITIONS[count % 3], f"R{count}")
    assert statuses(lake)[first][:2] == last
    latest = lake_reviews.latest_of(Lake.at(lake), [first])[first]
    assert (latest["disposition"], latest["reviewer"]) == last
    rows = lake_reviews.read_all(Lake.at(lake)).to_pylist()
    assert [r["reviewer"] for r in rows] == [f"R{i}" for i in range(1, count + 1)]      # recorded order
    incidents = run_pitwatch("incidents", "--day", DAY, "--lake", lake, "--format", "json")
    assert incidents.returncode == exits.DONE, incidents.stderr
    shown = [(r["disposition"], r["reviewer"]) for r in json.loads(incidents.stdout) if r["finding_id"] == first]
    assert shown == ([last] if last[0] in ("confirmed", "escalated") else [])


def test_a_call_of_more_reviews_than_an_id_can_number_in_order_is_refused(lake):
    first, _second = finding_ids(lake)
    before = lake_bytes(lake)
    too_many = [lake_reviews.Asked(first, "confirmed", "A")] * (lake_reviews.MOST_PER_CALL + 1)
    with pytest.raises(lake_reviews.ReviewRefused, match="at most 999,999"):
        lake_reviews.check(Lake.at(lake), too_many)
    assert lake_bytes(lake) == before


def test_the_largest_batch_file_the_cap_admits_is_numbered_in_order():
    from pitwatch.cli.review import BATCH_COLUMNS, MAX_BATCH_BYTES

    shortest_row = len("x," + min(lake_reviews.DISPOSITIONS, key=len) + ",y" + "," * (len(BATCH_COLUMNS) - 3) + "\n")
    assert shortest_row == 18
    assert MAX_BATCH_BYTES // shortest_row <= lake_reviews.MOST_PER_CALL


def _reviewed_then_reviews_deleted(lake: Path) -> str:
    first, _second = finding_ids(lake)
    assert review(lake, first, "--disposition", "confirmed", "--by", "A").returncode == exits.DONE
    shutil.rmtree(lake / "reviews")
    return first


def _refused_naming_the_reviews_and_verify(result) -> None:
    assert result.returncode == exits.USAGE, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the lake's reviews table is gone"), result.stderr
    assert "pitwatch verify" in lines[0]


def test_a_deleted_reviews_table_is_refused_by_the_readers_and_the_lake_left_as_it_was(lake):
    _reviewed_then_reviews_deleted(lake)
    before = lake_bytes(lake)
    _refused_naming_the_reviews_and_verify(run_pitwatch("query", "open_findings", "--lake", lake))
    _refused_naming_the_reviews_and_verify(run_pitwatch("sql", "SELECT status FROM findings", "--lake", lake))
    assert lake_bytes(lake) == before


def test_a_deleted_reviews_table_is_refused_by_the_writer_and_no_second_chain_begins(lake):
    first = _reviewed_then_reviews_deleted(lake)
    before = lake_bytes(lake)
    _refused_naming_the_reviews_and_verify(review(lake, first, "--disposition", "dismissed", "--by", "B"))
    assert lake_bytes(lake) == before and not (lake / "reviews").exists()


def test_a_night_after_reviews_names_their_version_and_readers_still_read_them(lake, tmp_path):
    first, _second = finding_ids(lake)
    assert review(lake, first, "--disposition", "confirmed", "--by", "A").returncode == exits.DONE
    (tmp_path / "b.jsonl").write_text(_day("2026-11-29", range(21, 24)))
    _run(lake, tmp_path / "b.jsonl")
    named, _run_id = runs.newest_naming(Lake.at(lake), lake_reviews.VERSION_KEY)
    assert named == 0 == delta.current_version(Lake.at(lake), "reviews")
    assert statuses(lake)[first][0] == "confirmed"
    shutil.rmtree(lake / "reviews")
    _refused_naming_the_reviews_and_verify(run_pitwatch("query", "open_findings", "--lake", lake))


def test_a_lake_never_reviewed_opens_with_every_finding_open(lake):
    assert {s for s, _by, _at in statuses(lake).values()} == {"open"}
    assert run_pitwatch("query", "open_findings", "--lake", lake).returncode == exits.DONE
