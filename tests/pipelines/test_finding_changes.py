"""Issue 42, deliverable 2 (the change half): a later run that changes an earlier day's findings
leaves a trace — ``first_seen_run`` / ``last_changed_run`` on every finding, the ``finding_changes``
table (added, removed, changed, with the run that did it) and the named query
``findings_changed_since``.

The scenario in small: two nights of the clean example, the second bringing late files of the first's
day (``tests/pipelines/late_nights.py``): a ``CUT_PLACEMENT`` added to 2026-11-27, a ``SEQ_GAP`` removed."""
from __future__ import annotations

import csv
import io
import shutil

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from tests import lake_rows
from tests.pipelines.late_nights import DAY1, DAY2, build
from tests.pipelines.test_nightly import _invoke

STAMPS = ("first_seen_run", "last_changed_run")


def _query(lake, since: str):
    return CliRunner().invoke(main, ["query", "findings_changed_since", "--lake", str(lake),
                                     "--param", f"since={since}", "--format", "csv"])


def _csv(result) -> list[dict]:
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.fixture(scope="module")
def late_nights(tmp_path_factory):
    return build(tmp_path_factory.mktemp("changes"))


def _expected_changes(night1: dict, night2: dict, day: str) -> dict[str, str]:
    """The ground truth of the day's changes, from the findings before and after: {finding_id: change}."""
    before = {i for i, r in night1.items() if r["gaming_day"].isoformat() == day}
    after = {i for i, r in night2.items() if r["gaming_day"].isoformat() == day}
    return {**{i: "added" for i in after - before}, **{i: "removed" for i in before - after}}


@pytest.mark.slow
def test_a_late_file_adds_and_removes_findings_of_an_earlier_day_and_the_query_names_the_run(late_nights):
    _base, _inbox, lake, night1, night2, run1, run2 = late_nights
    truth = _expected_changes(night1, night2, DAY1)
    assert sorted((night2.get(i) or night1[i])["rule_id"] for i in truth) == ["CUT_PLACEMENT", "SEQ_GAP"]
    assert truth[next(i for i in truth if (night2.get(i) or night1[i])["rule_id"] == "SEQ_GAP")] == "removed"
    result = _query(lake, run1)
    assert result.exit_code == 0, result.output
    rows = _csv(result)
    assert {r["finding_id"]: r["change"] for r in rows} == truth
    assert {r["run_id"] for r in rows} == {run2} and {r["gaming_day"] for r in rows} == {DAY1}
    started = lake_rows.run_records(lake)[1]["started"]
    assert {r["run_started"][:19] for r in rows} == {started.strftime("%Y-%m-%d %H:%M:%S")}
    # whole rows: the added finding as the lake holds it, the removed one as night 1 held it
    for r in rows:
        f = night2.get(r["finding_id"]) or night1[r["finding_id"]]
        assert (r["rule_id"], r["severity"], r["table_id"], r["dealer_id"] or None, r["round_id"] or None) == \
            (f["rule_id"], f["severity"], f["table_id"], f["dealer_id"], f["round_id"])


@pytest.mark.slow
def test_a_days_first_write_and_the_runs_up_to_since_are_no_change(late_nights):
    _base, _inbox, lake, _night1, night2, run1, run2 = late_nights
    assert _csv(_query(lake, run2)) == []               # nothing after the last run
    everything = _csv(_query(lake, "2026-01-01"))        # a date: every run since, night 1 included
    assert {r["gaming_day"] for r in everything} == {DAY1}     # DAY2's first write (night 2) is no change
    assert len(everything) == len(_csv(_query(lake, run1)))   # night 1 wrote DAY1 first: no change of its own
    assert any(r["gaming_day"].isoformat() == DAY2 for r in night2.values())


@pytest.mark.slow
def test_findings_unchanged_by_a_later_run_keep_the_run_that_first_wrote_them(late_nights):
    _base, _inbox, _lake, night1, night2, run1, run2 = late_nights
    kept = [i for i in night1 if i in night2]
    assert kept
    assert all(night2[i]["first_seen_run"] == run1 and night2[i]["last_changed_run"] == run1 for i in kept)
    assert all(night2[i] == night1[i] for i in kept)     # whole rows, stamps included
    new = [r for i, r in night2.items() if i not in night1]
    assert new and all((r["first_seen_run"], r["last_changed_run"]) == (run2, run2) for r in new)


@pytest.mark.slow
def test_a_rerun_over_the_same_input_changes_no_finding_and_records_no_change(late_nights, tmp_path):
    _base, inbox, lake, _night1, night2, _run1, run2 = late_nights
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    before = lake_rows.rows(copy, "findings", with_runs=True)
    _invoke("--day", DAY2, "--inbox", inbox, "--lake", copy)
    assert lake_rows.rows(copy, "findings", with_runs=True) == before      # whole rows, the run stamps included
    rerun = lake_rows.last_run(copy)["run_id"]
    assert rerun != run2 and _csv(_query(copy, run2)) == []


@pytest.mark.slow
@pytest.mark.parametrize("since", ["last night", "20261399T070000Z-ffffffff", "2026-11-31"])
def test_since_that_is_neither_a_run_id_nor_a_time_is_one_error_line(late_nights, since):
    """A since that names no time must not read as "nothing changed"."""
    lake = late_nights[2]
    result = _query(lake, since)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "neither a run id" in lines[0], result.stderr


@pytest.mark.slow
def test_a_run_id_is_read_as_its_start_to_the_second(late_nights):
    """The query reads no runs record (its cost must not grow with the lake's age): a run id is the
    time at its head, so one of this lake's runs and another id of the same second answer alike,
    never "nothing changed" for a mistyped id."""
    _base, _inbox, lake, _night1, _night2, run1, _run2 = late_nights
    known = _query(lake, run1)
    same_second = _query(lake, run1[:-8] + "ffffffff")
    assert known.exit_code == same_second.exit_code == 0, same_second.output
    assert _csv(known) and _csv(same_second) == _csv(known)


def test_the_run_stamps_are_findings_columns_and_no_alerts():
    from pitwatch.schemas.arrow import ALERTS, FINDINGS, LAKE_TABLES, PARTITIONED

    assert FINDINGS.names[-2:] == list(STAMPS)
    assert not set(STAMPS) & set(ALERTS.names)           # a live alert is no run's
    assert "finding_changes" in LAKE_TABLES and "finding_changes" in PARTITIONED


@pytest.mark.slow
def test_verify_names_an_edited_finding_changes_file_and_passes_the_lake_as_written(late_nights, tmp_path):
    """The changes are chained like every table's files: a removed finding's record cannot be edited away."""
    from pitwatch.cli import exits
    from tests.pipelines.test_verify import named, verify

    _base, _inbox, lake, *_ = late_nights
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    result, report = verify(copy)
    assert result.returncode == 0 and report["problems"] == [], report
    target = sorted((copy / "finding_changes").rglob("*.parquet"))[0]
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    result, report = verify(copy)
    assert result.returncode == exits.NOT_INTACT
    assert named(report, "changed") == [str(target.relative_to(copy))]


@pytest.mark.slow
def test_a_finding_written_again_with_a_column_changed_keeps_its_first_run_and_is_a_change(late_nights):
    """A replay that writes a finding again with another column changed (here its ``actual``, as a late
    file that corrects an event would): ``first_seen_run`` stays, ``last_changed_run`` is the new run, and
    the day's changes hold it as ``changed``, naming the column; the others are no change."""
    import pyarrow as pa

    from pitwatch.lake import finding_changes
    from pitwatch.lake.parquet import file_schema

    _base, _inbox, _lake, _night1, night2, run1, _run2 = late_nights
    schema = file_schema("findings")
    prior = [{k: v for k, v in r.items() if k != "gaming_day"} for r in night2.values()
             if r["gaming_day"].isoformat() == DAY1]
    target = next(r for r in prior if r["first_seen_run"] == run1)
    new = [{**r, "actual": r["actual"] + " (corrected)"} if r is target else r for r in prior]
    stamped = finding_changes.stamp(pa.Table.from_pylist(new, schema=schema), prior, "R3").to_pylist()
    by_id = {r["finding_id"]: r for r in stamped}
    assert (by_id[target["finding_id"]]["first_seen_run"], by_id[target["finding_id"]]["last_changed_run"]) == \
        (run1, "R3")
    assert all(by_id[r["finding_id"]] == r for r in prior if r is not target)      # whole rows, unchanged
    changes = finding_changes.day_changes(prior, [{**r, "gaming_day": None} for r in stamped], "R3", DAY1)
    assert [(c["finding_id"], c["change"], c["changed_columns"], c["run_id"]) for c in changes] == \
        [(target["finding_id"], "changed", ["actual"], "R3")]


@pytest.mark.slow
def test_export_duckdb_carries_the_changes_and_the_run_columns(late_nights, tmp_path):
    """The export an analyst takes away holds what changed, whole rows as the lake's."""
    import duckdb

    _base, _inbox, lake, *_ = late_nights
    out = tmp_path / "night.duckdb"
    result = CliRunner().invoke(main, ["export-duckdb", "--lake", str(lake), "--out", str(out)])
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(out), read_only=True)
    try:
        cursor = con.execute("select * from finding_changes")
        exported = [dict(zip([d[0] for d in cursor.description], row)) for row in cursor.fetchall()]
        stamps = con.execute("select finding_id, first_seen_run, last_changed_run from findings").fetchall()
    finally:
        con.close()
    key = lambda r: (r["finding_id"], r["change"])      # noqa: E731
    assert sorted(exported, key=key) == sorted(lake_rows.dicts(lake, "finding_changes"), key=key)
    assert sorted(stamps) == sorted((r["finding_id"], r["first_seen_run"], r["last_changed_run"])
                                    for r in lake_rows.dicts(lake, "findings"))
