"""Incident records (``pitwatch incidents``, :mod:`pitwatch.queries.incidents`): the number, the
description, the table's time, the formats and the refusals, from the hand-built lake's real
findings (:mod:`tests.queries.lakes`, read through the analysts' connection).  The end to end
records of a simulated floor with real reviews are in ``test_incidents_floor.py``."""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os

import pytest

from pitwatch.cli.incidents import csv_text, json_text
from pitwatch.queries.incidents import FIELDS, description, incident_number, incident_record, same_numbers
from pitwatch.queries.lake_views import run_sql
from tests.queries.lakes import DAY2
from tests.test_readable_findings import unreadable

FID = "3f2a9c71d04e4b6f8a0c1d2e3f405162"


def finding_rows(con, **extra) -> list[dict]:
    """The hand-built lake's findings of DAY2 as rows of the connection, with ``extra`` columns."""
    answer = run_sql(con, "select f.*, d.name as dealer_name from findings f "
                          "left join seeds_dealers d on d.id = f.dealer_id "
                          "where gaming_day = $day order by finding_id", {"day": DAY2})
    return [{**dict(zip(answer.columns, r)), **extra} for r in answer.rows]


# ---------------------------------------------------------------- the incident number


def test_incident_number_is_the_gaming_day_and_the_first_12_hex_of_the_finding_id():
    assert incident_number(dt.date(2026, 11, 28), FID) == "PW-20261128-3f2a9c71d04e"
    assert incident_number(dt.date(2026, 11, 29), FID) == "PW-20261129-3f2a9c71d04e"


def test_adding_findings_to_a_day_never_changes_a_number():
    """The number is the finding's alone: a late finding sharing 8, or even 12, hex digits with it
    (the old scheme lengthened both numbers then) leaves it as it was given out."""
    records = [{"incident_number": incident_number(DAY2, FID), "finding_id": FID}]
    given = records[0]["incident_number"]
    for late in (FID[:8] + "0" * 24, "0" * 32, FID[:12] + "f" * 20):
        records.append({"incident_number": incident_number(DAY2, late), "finding_id": late})
        assert incident_number(DAY2, FID) == given == "PW-20261128-3f2a9c71d04e"
    assert records[1]["incident_number"] == "PW-20261128-3f2a9c710000"      # 8 digits alike: two numbers


def test_findings_sharing_12_hex_digits_are_named_as_sharing_a_number():
    twin = FID[:12] + "f" * 20
    records = [{"incident_number": incident_number(DAY2, f), "finding_id": f} for f in (FID, "0" * 32, twin)]
    assert same_numbers(records) == {"PW-20261128-3f2a9c71d04e": [FID, twin]}


def test_findings_with_different_numbers_are_not_named():
    records = [{"incident_number": incident_number(DAY2, f), "finding_id": f} for f in (FID, FID[:11] + "0" * 21)]
    assert same_numbers(records) == {}


# ---------------------------------------------------------------- the record


def test_description_is_sentences_naming_what_where_who_and_the_expected_and_seen(con):
    rows = {r["finding_id"]: r for r in finding_rows(con)}
    assert description(rows["f-4"]) == (
        f"{rows['f-4']['title']} at table BAC-07 (baccarat), pack P-1, round R-1, at 20:06:21 UTC on 2026-11-28. "
        "Dealer D-1 was dealing. Expected: The terminal's card 8c (shoe draw 4). Seen: The shoe read 9c at draw 4.")
    for fid, row in rows.items():
        text = description(row)
        assert not unreadable(text), (fid, text, unreadable(text))
        assert ("round " in text) == (row["round_id"] is not None), text
        assert "seat " not in text                      # no finding of the lake names a seat


def test_description_names_the_seat_and_the_dealers_name_when_the_finding_has_them(con):
    row = finding_rows(con)[0]
    with_them = description({**row, "seat": 3, "dealer_name": "Ana Rivera"})
    without = description({**row, "seat": None, "dealer_name": None})
    assert "seat 3" in with_them and "(Ana Rivera)" in with_them
    assert "seat" not in without and "(" + "Ana" not in without


def test_record_shows_the_tables_display_zone_whatever_offset_its_device_wrote(con):
    row = next(r for r in finding_rows(con) if r["finding_id"] == "f-1")    # 20:01:00 UTC
    window = (row["ts"] - dt.timedelta(seconds=30, microseconds=250_000), row["ts"] + dt.timedelta(seconds=30))
    reviewed = dt.datetime(2026, 11, 29, 12, 0, 5, 900_000, tzinfo=dt.timezone.utc)
    for offset in (-240, 0, None):      # the device's offset does not decide how the table's time is shown
        local = incident_record({**row, "ts_offset": offset, "reviewed_at": reviewed}, "PW-1", window,
                                "America/Puerto_Rico")
        assert (local["local_date"], local["local_time"], local["utc_offset"], local["time_zone"]) == (
            "2026-11-28", "16:01:00", "-04:00", "America/Puerto_Rico")
        assert (local["video_from"], local["video_to"]) == (   # to the second, widened: no frame lost
            "2026-11-28T16:00:29-04:00", "2026-11-28T16:01:30-04:00")
        assert local["reviewed_at"] == "2026-11-29T08:00:05-04:00"
        assert "at 16:01:00 AST on 2026-11-28." in local["description"]
    utc = incident_record({**row, "ts_offset": -240}, "PW-1", window)      # the lake's zone UTC
    assert (utc["local_time"], utc["utc_offset"], utc["time_zone"], utc["video_from"]) == (
        "20:01:00", "+00:00", "UTC", "2026-11-28T20:00:29+00:00")
    assert "20:01:00 UTC on 2026-11-28." in utc["description"]


def test_record_has_every_field_and_the_evidence_as_file_and_line(con):
    row = next(r for r in finding_rows(con) if r["finding_id"] == "f-4")
    events = [{"device_id": "SHOE-1", "event_id": "sh-5", "file": "in/SHOE-1.jsonl", "line": 5},
              {"device_id": "DT-07", "event_id": "dt-9", "file": None, "line": None}]
    record = incident_record({**row, "evidence_events": events, "disposition": "confirmed", "amount": 25},
                             "PW-20261128-f-4", None)
    assert list(record) == list(FIELDS)
    assert record["evidence"] == ["in/SHOE-1.jsonl:5", "DT-07 event dt-9 (not among the lake's events)"]
    assert (record["type"], record["procedure"], record["amount"]) == (row["title"], row["source"], 25.0)


# ---------------------------------------------------------------- the formats


def _record(con, **extra) -> dict:
    return incident_record(finding_rows(con)[0], "PW-20261128-00000001", None) | extra


@pytest.mark.parametrize("note", ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)"])
def test_csv_writes_a_formula_looking_cell_after_a_quote(con, note):
    rows = list(csv.DictReader(io.StringIO(csv_text([_record(con, note=note, amount=-5.0)]))))
    assert rows[0]["note"] == "'" + note
    assert rows[0]["amount"] == "-5"                    # a number stays a number


def test_csv_leaves_a_plain_note_as_it_is_and_joins_the_evidence(con):
    rec = _record(con, note="Dealer retrained, 2 cards", evidence=["a.jsonl:1", "b.jsonl:7"])
    rows = list(csv.DictReader(io.StringIO(csv_text([rec]))))
    assert rows[0]["note"] == "Dealer retrained, 2 cards"
    assert rows[0]["evidence"] == "a.jsonl:1; b.jsonl:7"
    assert list(rows[0]) == list(FIELDS)


def test_csv_of_no_incident_is_the_header_alone_and_json_an_empty_array():
    assert csv_text([]) == ",".join(FIELDS) + "\n"
    assert json.loads(json_text([])) == []


@pytest.mark.parametrize("note", ["quote \" back\\slash", "line\nbreak\r\ttab", "esc \x1b[31m red",
                                  "\u2028 \u202e bidi \U0001f0a1", "\ud800 lone surrogate"])
def test_json_is_valid_for_any_note_and_keeps_it_exactly(con, note):
    out = json.loads(json_text([_record(con, note=note)]))
    assert out[0]["note"] == note
    assert list(out[0]) == list(FIELDS)


# ---------------------------------------------------------------- the command's refusals


def _one_error_line(result) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert result.stdout == ""
    return lines[0]


@pytest.mark.parametrize("day", ["2026-13-01", "28/11/2026", "2026-11-28T00:00", "", "２０２６-11-28"])
def test_a_bad_day_is_one_error_line(pitwatch, lake, day):
    assert "--day" in _one_error_line(pitwatch("incidents", "--day", day, "--lake", lake))


def test_a_folder_that_is_not_a_lake_is_one_error_line(pitwatch, tmp_path):
    (tmp_path / "notes.txt").write_text("not a lake")
    assert "not a pitwatch lake" in _one_error_line(pitwatch("incidents", "--day", "2026-11-28", "--lake", tmp_path))
    assert "no lake" in _one_error_line(pitwatch("incidents", "--day", "2026-11-28", "--lake", tmp_path / "notes.txt"))
    assert "no lake" in _one_error_line(pitwatch("incidents", "--day", "2026-11-28", "--lake", tmp_path / "absent"))


def test_out_refuses_to_replace_a_file_without_force(pitwatch, lake, tmp_path):
    out = tmp_path / "incidents.csv"
    out.write_text("the analyst's own file\n")
    assert "--force" in _one_error_line(pitwatch("incidents", "--day", "2026-11-28", "--lake", lake, "--out", out))
    assert out.read_text() == "the analyst's own file\n"


@pytest.mark.parametrize("day", ["0001-01-01", "9999-12-31"])
def test_the_first_and_last_days_there_are_are_days_like_another(pitwatch, lake, day):
    result = pitwatch("incidents", "--day", day, "--lake", lake)
    assert (result.returncode, result.stdout, result.stderr) == (0, ",".join(FIELDS) + "\n", "")


def test_evidence_is_looked_for_from_the_day_before_or_the_first_day_there_is():
    from pitwatch.queries.incidents import evidence_from

    assert evidence_from(dt.date(2026, 11, 28)) == dt.date(2026, 11, 27)
    assert evidence_from(dt.date.min) == dt.date.min


@pytest.mark.parametrize("inside", ["settings.json", "findings/new.csv", "."])
def test_out_inside_the_lake_is_refused_and_the_lake_left_byte_identical(pitwatch, lake, inside):
    from tests.pipelines.test_devices import _lake_bytes

    before = _lake_bytes(lake)
    said = _one_error_line(pitwatch("incidents", "--day", "2026-11-28", "--lake", lake,
                                    "--out", os.path.join(lake, inside), "--force"))
    assert "--out" in said and "inside the lake" in said
    assert _lake_bytes(lake) == before


def test_out_beside_the_lake_is_written(pitwatch, lake, tmp_path):
    out = tmp_path / "beside.csv"
    result = pitwatch("incidents", "--day", "2026-11-28", "--lake", lake, "--out", out)
    assert result.returncode == 0, result.stderr
    assert out.read_text() == ",".join(FIELDS) + "\n"


def test_help_shows_an_example(pitwatch):
    result = pitwatch("incidents", "--help")
    assert result.returncode == 0 and "pitwatch incidents --day 2026-11-28 --lake lake" in result.stdout


def test_findings_nobody_reviewed_are_no_incident(pitwatch, lake):
    csv_out = pitwatch("incidents", "--day", "2026-11-28", "--lake", lake)
    assert (csv_out.returncode, csv_out.stdout, csv_out.stderr) == (0, ",".join(FIELDS) + "\n", "")
    json_out = pitwatch("incidents", "--day", "2026-11-28", "--lake", lake, "--format", "json")
    assert (json_out.returncode, json.loads(json_out.stdout)) == (0, [])


# ---------------------------------------------------------------- the evidence of an event read twice


def _lake_with_an_event_in_two_files(path: str, copies: list[tuple[str, int]]) -> str:
    """The hand-built lake, its DAY2 events written again with a file and a line each, event dt-2
    (finding f-1's evidence) once per ``copies`` (file, line), and f-1 confirmed."""
    from pitwatch.lake import Lake
    from pitwatch.lake.parquet import write_partition
    from tests.queries import lakes

    lake = lakes.build_lake(path)
    rows = []
    for i, e in enumerate(lakes.BAC07_EVENTS + lakes.TBP_EVENTS, 1):
        if e["event_id"] == "dt-2":
            rows.extend({**e, "file": f, "line": n} for f, n in copies)
        else:
            rows.append({**e, "file": "in/day.jsonl", "line": 100 + i})
    write_partition(Lake.at(lake), "events", DAY2, [lakes._table("events", rows)], run_id="two-files")
    lakes.add_reviews(lake, [{"review_id": "rv-1", "finding_id": "f-1", "disposition": "confirmed",
                              "reviewer": "A", "reviewed_at": dt.datetime(2026, 11, 29, 8, tzinfo=dt.timezone.utc),
                              "rule_id": "CUT_PLACEMENT", "table_id": "BAC-07", "gaming_day": DAY2}])
    return lake


def _evidence_of_f1(pitwatch, lake) -> list[str]:
    result = pitwatch("incidents", "--day", str(DAY2), "--lake", lake, "--format", "json")
    assert result.returncode == 0, result.stderr
    return [r["evidence"] for r in json.loads(result.stdout) if r["finding_id"] == "f-1"][0]


def test_an_event_in_two_files_is_cited_by_the_file_and_line_of_one_row(pitwatch, tmp_path):
    lake = _lake_with_an_event_in_two_files(str(tmp_path / "lake"), [("in/b.jsonl", 3), ("in/a.jsonl", 9)])
    assert _evidence_of_f1(pitwatch, lake) == ["in/a.jsonl:9"]      # not a.jsonl's name with b.jsonl's line


def test_an_event_in_one_file_is_cited_by_its_file_and_line(pitwatch, tmp_path):
    lake = _lake_with_an_event_in_two_files(str(tmp_path / "lake"), [("in/b.jsonl", 3)])
    assert _evidence_of_f1(pitwatch, lake) == ["in/b.jsonl:3"]
