"""The analysts' commands on a lake on an S3 API (issue 44): ``sql``, ``query``, ``export-duckdb``,
``incidents``, ``report``, ``dealers show``, ``verify`` and a refused ``review``, each run on the
lake ``pitwatch demo`` simulated and replayed (on disk) and on its copy in a bucket of moto's S3
server (tests/object_store.py), their whole outputs compared but for the lake's name.

The demo's lake is built once a session (a real process running the batch: these tests are slow);
each test copies it into a new bucket.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from pitwatch.cli import exits
from tests.conftest import run_pitwatch as pitwatch
from tests.object_store import copy_lake, same_but_the_lake

DAY = "2026-11-28"
pytestmark = pytest.mark.slow           # demo_run: a real pitwatch process replays a simulated floor


@pytest.fixture
def lakes(demo_run, s3_lake) -> tuple[Path, str]:
    """(the demo's lake on disk, its copy on the S3 server)."""
    folder, _ = demo_run
    on_disk = Path(folder) / "demo" / "lake"
    copy_lake(on_disk, s3_lake)
    return on_disk, s3_lake


def bucket_of(lake: str) -> str:
    return lake[len("s3://"):].split("/", 1)[0]


def both(lakes, *args, lake_flag: str = "--lake") -> tuple[str, str]:
    """``pitwatch ARGS --lake L`` on each lake (exit 0 both): their outputs, the lake's name replaced."""
    on_disk, on_s3 = lakes
    out = []
    for lake in (on_disk, on_s3):
        result = pitwatch(*args, lake_flag, lake)
        assert result.returncode == exits.DONE, result.stderr
        out.append(same_but_the_lake(result.stdout, lake))
    return out[0], out[1]


@pytest.mark.parametrize("args", [
    ("sql", "SELECT rule_id, table_id, round_id, ts, actual FROM findings ORDER BY finding_id"),
    ("sql", "SELECT table_id, count(*) AS n FROM rounds GROUP BY ALL ORDER BY table_id", "--format", "json"),
    ("sql", "FROM events ORDER BY event_id LIMIT 50", "--format", "csv", "--local"),
    ("query", "open_findings", "--format", "text", "--local"),
    ("query", "review_log"),
    ("query", "hold", "--param", f"from_day={DAY}", "--param", f"to_day={DAY}"),
    ("dealers", "show"),
], ids=["sql-findings", "sql-json", "sql-events-csv", "open_findings", "review_log", "hold", "dealers-show"])
def test_a_read_command_prints_on_an_s3_lake_exactly_what_it_prints_on_disk(lakes, args):
    on_disk, on_s3 = both(lakes, *args)
    assert on_s3 == on_disk and len(on_disk.splitlines()) > 2


def test_incidents_on_an_s3_lake_are_the_records_they_are_on_disk(lakes):
    for fmt in ("csv", "json"):
        on_disk, on_s3 = both(lakes, "incidents", "--day", DAY, "--format", fmt)
        assert on_s3 == on_disk and "PW-20261128-" in on_disk


def test_the_report_of_an_s3_lake_is_the_report_of_its_copy_on_disk(lakes, tmp_path):
    pages = []
    for name, lake in zip(("disk", "s3"), lakes):
        out = tmp_path / f"report-{name}.html"
        result = pitwatch("report", "--day", DAY, "--lake", lake, "--out", out)
        assert result.returncode == exits.DONE, result.stderr
        made = re.sub(r" · made \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</p>", " · made WHEN</p>",
                      out.read_text(encoding="utf-8"), count=1)   # the time it was written
        pages.append(same_but_the_lake(made, lake))
    assert pages[1] == pages[0] and " · made WHEN</p>" in pages[0] and "intact" in pages[0]


def test_export_duckdb_of_an_s3_lake_holds_the_rows_it_holds_from_disk(lakes, tmp_path):
    import duckdb

    files = []
    for name, lake in zip(("disk", "s3"), lakes):
        out = tmp_path / f"{name}.duckdb"
        result = pitwatch("export-duckdb", "--lake", lake, "--out", out)
        assert result.returncode == exits.DONE, result.stderr
        files.append(out)
    contents = []
    for path in files:
        con = duckdb.connect(str(path), read_only=True)
        try:
            tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                                "WHERE table_name <> 'pitwatch_export' ORDER BY 1").fetchall()]
            contents.append({t: sorted(map(repr, con.execute(f'FROM "{t}"').fetchall())) for t in tables})
        finally:
            con.close()
    assert contents[1] == contents[0] and len(contents[0]["findings"]) > 100


def test_verify_of_an_s3_lake_says_intact_as_on_disk(lakes):
    on_disk, on_s3 = both(lakes, "verify")
    assert on_s3 == on_disk and on_disk.startswith("lake LAKE: intact\n")


def test_verify_catches_a_data_file_overwritten_in_the_bucket_as_on_disk(lakes, s3_server, tmp_path):
    import shutil

    on_disk, on_s3 = lakes
    tampered = tmp_path / "lake"
    shutil.copytree(on_disk, tampered)
    victim = sorted(p for p in (tampered / "findings").rglob("*.parquet") if "_delta_log" not in p.parts)[0]
    rel = victim.relative_to(tampered).as_posix()
    data = victim.read_bytes()
    forged = data[:-200] + bytes(200)           # the same size, another content
    victim.write_bytes(forged)
    s3_server.client().put_object(Bucket=bucket_of(on_s3), Key=f"lake/{rel}", Body=forged)
    results = [pitwatch("verify", "--lake", lake) for lake in (tampered, on_s3)]
    assert [r.returncode for r in results] == [exits.NOT_INTACT] * 2
    assert hashlib.sha256(forged).hexdigest() != hashlib.sha256(data).hexdigest()
    assert same_but_the_lake(results[1].stdout, on_s3) == same_but_the_lake(results[0].stdout, tampered)
    assert results[0].stdout.startswith("lake LAKE: NOT INTACT: 1 problem\n  changed ".replace("LAKE", str(tampered)))
    assert f"{rel}: its SHA-256 is {hashlib.sha256(forged).hexdigest()}" in results[1].stdout


@pytest.mark.parametrize("args, message", [
    (("sql", "CREATE TABLE x AS SELECT 1"), "Error: "),
    (("sql", "COPY findings TO 'x.csv'"), "Error: "),
    (("review", "0" * 32, "--disposition", "confirmed", "--by", "M.Ortiz"), "is not in the lake's findings"),
    (("review", "--from", "no-such-file.csv"), "Error: "),
], ids=["sql-create", "sql-copy", "review-unknown-finding", "review-no-file"])
def test_a_refused_command_on_an_s3_lake_leaves_every_object_as_it_was(lakes, s3_server, args, message):
    on_disk, on_s3 = lakes
    before = s3_server.keys(bucket_of(on_s3))
    results = [pitwatch(*args, "--lake", lake) for lake in lakes]
    assert [r.returncode for r in results] == [exits.USAGE] * 2, results[1].stderr
    assert same_but_the_lake(results[1].stderr, on_s3) == same_but_the_lake(results[0].stderr, on_disk)
    assert results[1].stderr.startswith("Error: ") and message in results[1].stderr
    assert results[1].stderr.count("\n") == 1
    assert s3_server.keys(bucket_of(on_s3)) == before


# --- writers: the lake's lock on an object store is a lease (pitwatch.lake.lock) ----------------------

@pytest.fixture
def writable(demo_run, s3_lake, tmp_path) -> tuple[Path, str]:
    """(a copy of the demo's lake on disk, a copy of it on the S3 server): both may be written."""
    import shutil

    folder, _ = demo_run
    on_disk = tmp_path / "lake"
    shutil.copytree(Path(folder) / "demo" / "lake", on_disk)
    copy_lake(on_disk, s3_lake)
    return on_disk, s3_lake


# each review's own id, time and hash (its run's id and the clock's): the rest of the row is compared
_OWN = ("review_id", "reviewed_at", "review_sha256")


def test_a_review_on_an_s3_lake_records_the_row_it_records_on_disk_and_verify_checks_it(writable):
    from pitwatch.lake import Lake
    from pitwatch.lake.reviews import dataset

    finding = pitwatch("sql", "SELECT finding_id FROM findings WHERE status = 'open' ORDER BY finding_id LIMIT 1",
                       "--format", "csv", "--lake", writable[0]).stdout.splitlines()[1]
    args = ("review", finding, "--disposition", "escalated", "--by", "M.Ortiz", "--reason", "DEALER_ERROR",
            "--note", "seen on the video", "--amount", "125.5")
    said, rows = [], []
    for lake in writable:
        result = pitwatch(*args, "--lake", lake)
        assert result.returncode == exits.DONE, result.stderr
        said.append(re.sub(r"review \S+,", "review ID,", result.stdout))
        table = dataset(Lake.at(str(lake))).to_table().to_pylist()
        rows.append(sorted(({k: v for k, v in r.items() if k not in _OWN} for r in table), key=repr))
        assert pitwatch("verify", "--lake", lake).returncode == exits.DONE
    assert said[1] == said[0] == f"{finding}: escalated (review ID, by M.Ortiz)\n"
    assert rows[1] == rows[0] and len(rows[0]) == 3           # the demo's two reviews and this one
    assert {"finding_id": finding, "disposition": "escalated", "amount": 125.5}.items() <= \
        [r for r in rows[0] if r["finding_id"] == finding][0].items()


def test_dealers_import_on_an_s3_lake_keeps_the_roster_it_keeps_on_disk(writable, tmp_path):
    roster = tmp_path / "dealers.csv"
    roster.write_text("id,name,shift\nD-1001,José Rosario,grave\nD-9999,New Dealer,day\n", encoding="utf-8")
    imported, shown = [], []
    for lake in writable:
        result = pitwatch("dealers", "import", roster, "--lake", lake)
        assert result.returncode == exits.DONE, result.stderr
        imported.append(same_but_the_lake(result.stdout, lake))
        show = pitwatch("dealers", "show", "--lake", lake)
        assert show.returncode == exits.DONE, show.stderr
        shown.append(show.stdout)
        assert pitwatch("verify", "--lake", lake).returncode == exits.DONE
    assert imported[1] == imported[0] and "as version 2 (2 dealers" in imported[0]
    assert shown[1] == shown[0] and shown[0].endswith("D-1001,José Rosario,grave\nD-9999,New Dealer,day\n")


@pytest.mark.parametrize("args", [
    ("review", "FINDING", "--disposition", "dismissed", "--by", "M.Ortiz"),
    ("dealers", "import", "ROSTER"),
    ("vacuum", "--retention-days", "0", "--no-config-holds"),
], ids=["review", "dealers-import", "vacuum"])
def test_a_writer_on_an_s3_lake_another_holds_exits_4_naming_it_and_changes_no_object(
        writable, s3_server, tmp_path, args):
    from tests.pipelines.test_lake_lock import start_holder

    on_disk, on_s3 = writable
    finding = pitwatch("sql", "SELECT finding_id FROM findings WHERE status = 'open' ORDER BY finding_id LIMIT 1",
                       "--format", "csv", "--lake", on_s3).stdout.splitlines()[1]
    roster = tmp_path / "dealers.csv"
    roster.write_text("id,name,shift\nD-9999,New Dealer,day\n", encoding="utf-8")
    args = tuple(finding if a == "FINDING" else str(roster) if a == "ROSTER" else a for a in args)
    holder = start_holder(on_s3, seconds="until-told")        # a real process holding the lease
    try:
        before = s3_server.keys(bucket_of(on_s3))
        result = pitwatch(*args, "--lake", on_s3, "--lock-timeout", "1")
        after = s3_server.keys(bucket_of(on_s3))
    finally:
        holder.stdin.write("go\n")
        holder.stdin.flush()
        holder.wait(30)
    assert result.returncode == exits.LOCKED, result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"Error: the lake {on_s3} is locked by run 20261129T061502Z-1a2b3c4d")
    assert after == before
    again = pitwatch(*args, "--lake", on_s3, "--lock-timeout", "1")        # the lease let go: it goes through
    assert again.returncode == exits.DONE, again.stderr
