"""Issue 29 item 2 and issue 43 item 1, the table's own time: ``--local``, ``--show-tz``, the video
window, old lake files.

A small lake written with the lake's own writer (:func:`pitwatch.lake.parquet.write_partition`):
TBP-01's terminal writes ``-04:00`` (``ts_offset`` -240), its shoe ``Z`` (0); one finding
per table.  Its settings (:mod:`pitwatch.lake.settings`) file gaming days in America/Puerto_Rico
and show BAC-07 in America/New_York (a ``[display.tables]`` override).  A second lake holds files
written before ``ts_offset`` and ``evidence_from`` existed, and no settings (UTC).  Every command
runs through the real CLI; every test that queries checks the lake's bytes are unchanged.
"""
from __future__ import annotations

import datetime as dt

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.lake import Lake
from pitwatch.lake import settings as lake_settings
from pitwatch.lake.parquet import file_schema, write_partition
from pitwatch.schemas.arrow import rows_to_table
from pitwatch.schemas.decode import GamingDayConfig
from tests.queries.test_read_only import tree

DAY = dt.date(2026, 11, 28)
UTC = dt.timezone.utc


def _at(hour, minute, second=0):
    return dt.datetime(2026, 11, 28, hour, minute, second, tzinfo=UTC)


def _event(seq, device, source, type_, when, offset, **kw):
    return {"event_id": f"{device}-{seq}", "ts": when, "ts_offset": offset, "source": source, "type": type_,
            "table_id": "TBP-01", "device_id": device, "seq": seq, **kw}


EVENTS = [
    _event(1, "DT-TBP01", "dealer", "round_started", _at(20, 0, 0), -240, dealer_id="D-3", round_id="T-1",
           game="three_bet_poker", pack_id="P-1"),
    _event(2, "DT-TBP01", "dealer", "card_dealt", _at(20, 0, 40), -240, dealer_id="D-3", round_id="T-1",
           target="seat:1", face="down", card="7h"),
    _event(1, "SHOE-9", "shoe", "card_drawn", _at(20, 0, 39), 0, pack_id="P-1", index=1, card="7h"),
]

FINDINGS = [{
    "finding_id": "f-tbp", "rule_id": "SHOE_CARD_MISMATCH", "title": "Card switched between shoe and table",
    "severity": "critical", "game": "three_bet_poker", "table_id": "TBP-01", "pack_id": "P-1", "round_id": "T-1",
    "seat": 1, "dealer_id": "D-3", "ts": _at(20, 0, 40), "ts_offset": -240, "evidence_from": _at(20, 0, 0),
    "expected": "the shoe drew 7h", "actual": "the terminal recorded 7d", "event_ids": ["DT-TBP01-1", "DT-TBP01-2"],
    "source": "003 4.7", "evidence": [{"device_id": "DT-TBP01", "event_id": "DT-TBP01-1"},
                                      {"device_id": "DT-TBP01", "event_id": "DT-TBP01-2"}],
}, {
    "finding_id": "f-utc", "rule_id": "BURN_SKIPPED", "title": "Burn skipped", "severity": "major",
    "game": "baccarat", "table_id": "BAC-07", "pack_id": "P-2", "ts": _at(21, 0, 0), "ts_offset": None,
    "evidence_from": _at(21, 0, 0), "expected": "a burn", "actual": "none", "event_ids": ["x-1"],
    "source": "003 4.7", "evidence": [{"device_id": "DT-07", "event_id": "x-1"}],
}]


def _write(lake: str, name: str, rows: list[dict], without: tuple[str, ...] = ()) -> None:
    schema = file_schema(name)
    for column in without:     # a file written before the column existed
        schema = schema.remove(schema.get_field_index(column))
    write_partition(Lake.at(lake), name, DAY, [rows_to_table(rows, schema)])


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    lake = str(tmp_path_factory.mktemp("lake"))
    _write(lake, "events", EVENTS)
    _write(lake, "findings", FINDINGS)
    lake_settings.record(Lake.at(lake), GamingDayConfig(timezone="America/Puerto_Rico"), "20261129T070000Z-00000000",
                         display={"BAC-07": "America/New_York"})
    return lake


@pytest.fixture(scope="module")
def old_lake(tmp_path_factory) -> str:
    lake = str(tmp_path_factory.mktemp("old"))
    _write(lake, "events", EVENTS, without=("ts_offset",))
    _write(lake, "findings", FINDINGS, without=("ts_offset", "evidence_from"))
    return lake


@pytest.fixture
def untouched(lake, old_lake):
    before = tree(lake, old_lake)
    yield
    assert tree(lake, old_lake) == before


def cli(*args):
    return CliRunner().invoke(main, list(args))


def csv_rows(output: str) -> list[list[str]]:
    return [line.split(",") for line in output.splitlines()[1:]]


def test_local_shows_one_zone_per_table_whichever_device_wrote_the_row(lake, untouched):
    sql = "SELECT table_id, device_id, ts, ts_offset FROM events ORDER BY device_id, seq"
    utc = cli("sql", sql, "--lake", lake, "--format", "csv")
    assert utc.exit_code == 0, utc.output
    assert csv_rows(utc.output) == [["TBP-01", "DT-TBP01", "2026-11-28 20:00:00+00:00", "-240"],
                                    ["TBP-01", "DT-TBP01", "2026-11-28 20:00:40+00:00", "-240"],
                                    ["TBP-01", "SHOE-9", "2026-11-28 20:00:39+00:00", "0"]]
    local = cli("sql", sql, "--lake", lake, "--format", "csv", "--local")
    assert local.exit_code == 0, local.output
    assert csv_rows(local.output) == [["TBP-01", "DT-TBP01", "2026-11-28 16:00:00 AST", "-240"],
                                      ["TBP-01", "DT-TBP01", "2026-11-28 16:00:40 AST", "-240"],
                                      ["TBP-01", "SHOE-9", "2026-11-28 16:00:39 AST", "0"]]    # the shoe's Z too


def test_local_shows_a_tables_override_and_the_lakes_zone_for_the_others(lake, untouched):
    got = cli("sql", "SELECT table_id, ts FROM findings ORDER BY table_id", "--lake", lake, "--format", "csv",
              "--local")
    assert got.exit_code == 0, got.output
    assert csv_rows(got.output) == [["BAC-07", "2026-11-28 16:00:00 EST"],      # [display.tables] BAC-07
                                    ["TBP-01", "2026-11-28 16:00:40 AST"]]      # the lake's zone


def test_show_tz_shows_that_zone_whatever_the_rows_offset(lake, untouched):
    got = cli("sql", "SELECT device_id, ts FROM events ORDER BY device_id, seq", "--lake", lake,
              "--format", "csv", "--show-tz", "America/Puerto_Rico")
    assert got.exit_code == 0, got.output
    assert csv_rows(got.output) == [["DT-TBP01", "2026-11-28 16:00:00-04:00"],
                                    ["DT-TBP01", "2026-11-28 16:00:40-04:00"],
                                    ["SHOE-9", "2026-11-28 16:00:39-04:00"]]
    kathmandu = cli("sql", "SELECT ts FROM findings WHERE finding_id = 'f-utc'", "--lake", lake,
                    "--format", "csv", "--show-tz", "Asia/Kathmandu")
    assert csv_rows(kathmandu.output) == [["2026-11-29 02:45:00+05:45"]]


@pytest.mark.parametrize("statement", ["SET TimeZone = 'America/Puerto_Rico'", "SET TimeZone TO 'UTC'",
                                       "RESET TimeZone", "SELECT 1; SET TimeZone = 'UTC'"])
def test_set_timezone_is_still_refused_with_show_tz_or_local(lake, untouched, statement):
    for how in (["--show-tz", "America/Puerto_Rico"], ["--local"], []):
        got = cli("sql", statement, "--lake", lake, *how)
        assert got.exit_code == 2, (statement, how, got.output)
        assert got.output.startswith("Error: ") and "Traceback" not in got.output


def test_the_user_cannot_change_the_display_zone_from_sql(lake, untouched):
    got = cli("sql", "SELECT current_setting('TimeZone') AS zone", "--lake", lake, "--format", "csv",
              "--show-tz", "America/Puerto_Rico")
    assert got.exit_code == 0 and csv_rows(got.output) == [["America/Puerto_Rico"]]
    assert csv_rows(cli("sql", "SELECT current_setting('TimeZone')", "--lake", lake, "--format", "csv").output) \
        == [["UTC"]]


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "", " UTC", "UTC'; SELECT 1; --", "../../etc/passwd",
                                  "America/Puerto_Rico\n"])
def test_an_unknown_show_tz_is_one_error_line(lake, untouched, zone):
    got = cli("sql", "SELECT 1", "--lake", lake, "--show-tz", zone)
    assert got.exit_code == 2, got.output
    assert got.output.startswith("Error: --show-tz") and got.output.count("\n") == 1, got.output


def test_local_and_show_tz_together_are_refused(lake, untouched):
    got = cli("sql", "SELECT ts, ts_offset FROM events", "--lake", lake, "--local", "--show-tz", "UTC")
    assert got.exit_code == 2 and got.output.startswith("Error: --local and --show-tz")


def test_local_without_table_id_in_the_result_shows_the_lakes_zone(lake, untouched):
    got = cli("sql", "SELECT ts FROM findings ORDER BY ts", "--lake", lake, "--local", "--format", "csv")
    assert got.exit_code == 0, got.output
    assert csv_rows(got.output) == [["2026-11-28 16:00:40 AST"], ["2026-11-28 17:00:00 AST"]]
    plain = cli("sql", "SELECT count(*) AS n FROM events", "--lake", lake, "--local", "--format", "csv")
    assert plain.exit_code == 0 and csv_rows(plain.output) == [["3"]]     # no time to show: nothing to say


def test_findings_video_gives_the_window_around_the_evidence_in_the_tables_time(lake, untouched):
    got = cli("query", "findings_video", "--lake", lake, "--param", "gaming_day=2026-11-28", "--format", "csv",
              "--local")
    assert got.exit_code == 0, got.output
    header = got.output.splitlines()[0].split(",")
    rows = [dict(zip(header, r)) for r in csv_rows(got.output)]
    tbp, bac = rows
    assert (tbp["table_id"], tbp["video_from"], tbp["video_to"], tbp["ts"]) == (
        "TBP-01", "2026-11-28 15:59:30 AST", "2026-11-28 16:01:10 AST", "2026-11-28 16:00:40 AST")
    assert (bac["table_id"], bac["video_from"], bac["video_to"]) == (   # its override, no offset needed
        "BAC-07", "2026-11-28 15:59:30 EST", "2026-11-28 16:00:30 EST")
    padded = cli("query", "findings_video", "--lake", lake, "--param", "gaming_day=2026-11-28", "--format", "csv",
                 "--video-pad", "120", "--show-tz", "America/Puerto_Rico")
    assert padded.exit_code == 0, padded.output
    first = dict(zip(header, csv_rows(padded.output)[0]))
    assert (first["video_from"], first["video_to"]) == ("2026-11-28 15:58:00-04:00", "2026-11-28 16:02:40-04:00")


def test_findings_evidence_carries_the_video_window(lake, untouched):
    got = cli("query", "findings_evidence", "--lake", lake, "--param", "gaming_day=2026-11-28", "--format", "csv",
              "--local")
    assert got.exit_code == 0, got.output
    header = got.output.splitlines()[0].split(",")
    rows = [dict(zip(header, r)) for r in csv_rows(got.output)]
    assert [(r["event_id"], r["event_ts"], r["video_from"], r["video_to"]) for r in rows] == [
        ("DT-TBP01-1", "2026-11-28 16:00:00 AST", "2026-11-28 15:59:30 AST", "2026-11-28 16:01:10 AST"),
        ("DT-TBP01-2", "2026-11-28 16:00:40 AST", "2026-11-28 15:59:30 AST", "2026-11-28 16:01:10 AST")]


@pytest.mark.parametrize("pad, why", [("-1", "--video-pad"), ("3601", "--video-pad"), ("x", "--video-pad")])
def test_a_bad_video_pad_is_refused(lake, untouched, pad, why):
    got = cli("query", "findings_video", "--lake", lake, "--param", "gaming_day=2026-11-28", "--video-pad", pad)
    assert got.exit_code == 2 and why in got.output, got.output


def test_video_pad_twice_is_refused(lake, untouched):
    got = cli("query", "findings_video", "--lake", lake, "--param", "gaming_day=2026-11-28", "--video-pad", "5",
              "--param", "video_pad=6")
    assert got.exit_code == 2 and got.output.startswith("Error: --video-pad and --param video_pad"), got.output


def test_an_old_lake_without_ts_offset_still_queries(old_lake, untouched):
    events = cli("sql", "SELECT device_id, ts, ts_offset FROM events ORDER BY device_id, seq", "--lake", old_lake,
                 "--format", "csv", "--local")
    assert events.exit_code == 0, events.output
    assert csv_rows(events.output) == [["DT-TBP01", "2026-11-28 20:00:00 UTC", ""],      # no settings: UTC
                                       ["DT-TBP01", "2026-11-28 20:00:40 UTC", ""],
                                       ["SHOE-9", "2026-11-28 20:00:39 UTC", ""]]
    video = cli("query", "findings_video", "--lake", old_lake, "--param", "gaming_day=2026-11-28", "--format", "csv")
    assert video.exit_code == 0, video.output
    header = video.output.splitlines()[0].split(",")
    first = dict(zip(header, csv_rows(video.output)[0]))
    assert (first["video_from"], first["video_to"], first["ts_offset"]) == (   # around ts alone
        "2026-11-28 20:00:10+00:00", "2026-11-28 20:01:10+00:00", "")
    described = cli("sql", "DESCRIBE findings", "--lake", old_lake, "--format", "csv")
    assert "ts_offset,BIGINT" in described.output and "evidence_from,TIMESTAMP WITH TIME ZONE" in described.output


def test_in_table_time_shows_a_row_without_a_table_in_the_lakes_zone_and_the_querys_table_in_its_own():
    from pitwatch.queries.lake_views import Answer, in_table_time

    when = _at(20, 0)
    got = in_table_time(Answer(["table_id", "ts", "ts_offset"], [("CMB-01", when, 0), ("BAC-01", when, -240),
                                                                   (None, when, None), ("BAC-01", None, 0)]),
                        "America/Puerto_Rico", {"CMB-01": "America/New_York"})
    assert got.rows == [("CMB-01", "2026-11-28 15:00:00 EST", 0), ("BAC-01", "2026-11-28 16:00:00 AST", -240),
                        (None, "2026-11-28 16:00:00 AST", None), ("BAC-01", None, 0)]
    one_table = in_table_time(Answer(["ts"], [(when,)]), "America/Puerto_Rico", {"CMB-01": "America/New_York"},
                              table_id="CMB-01")
    assert one_table.rows == [("2026-11-28 15:00:00 EST",)]
    untimed = Answer(["n"], [(1,)])
    assert in_table_time(untimed, "UTC") is untimed


def test_video_pad_on_a_query_without_a_video_window_names_those_with_one(lake, untouched):
    got = cli("query", "findings_by_rule", "--lake", lake, "--param", "from_day=2026-11-28",
              "--param", "to_day=2026-11-28", "--video-pad", "10")
    assert got.exit_code == 2, got.output
    assert got.output == ("Error: --video-pad: query findings_by_rule shows no video window "
                          "(these do: findings_evidence, findings_video)\n")
