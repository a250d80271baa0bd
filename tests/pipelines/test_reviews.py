"""``pitwatch review`` and the lake's ``reviews`` table (issue 42, deliverable 1): a review is one
chained commit under the lake's lock; what must not be recorded is one ``Error:`` line, exit 2,
and the lake's bytes unchanged; the findings view shows each finding's latest review as its status."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pitwatch.cli import exits
from pitwatch.lake import Lake, chain, delta, runs
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
    record = runs.latest_records(__import__("pitwatch.lake.parquet", fromlist=["x"]).read_table(at, "runs"))[-1]
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
    ("a_non_finite_amount", [0, "--disposition", "confirmed", "--by", "A", "--amount", "nan"], "finite"),
    ("an_infinite_amount", [0, "--disposition", "confirmed", "--by", "A", "--amount", "inf"], "finite"),
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
