"""``pitwatch incidents`` end to end: a simulated floor with injected faults (``simulate``, its
truth file), the nightly batch, reviews recorded through ``pitwatch review``, and the incident
records checked against the simulator's ground truth, the input files and the rule catalogue."""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import shutil
import zoneinfo

import pytest

from pitwatch.lake import Lake
from pitwatch.queries.catalog import run_query
from pitwatch.queries.incidents import FIELDS
from pitwatch.queries.lake_views import connect, run_sql
from pitwatch.rules.catalog import RULE_BY_ID
from pitwatch.simulator import simulate
from tests.conftest import run_pitwatch as pitwatch
from tests.test_readable_findings import unreadable

pytestmark = pytest.mark.slow

DAY = "2026-11-28"
ZONE = "America/Puerto_Rico"        # the lake's: the combate terminal writes -04:00, its shoe and baccarat Z


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    """One baccarat and one combate table (its terminal writes -04:00) for an hour, with wrong
    payouts (a seat, a round) and a skipped burn (a pack), replayed by the nightly batch; then
    reviews: confirmed, escalated, dismissed, confirmed then dismissed, dismissed then confirmed."""
    base = tmp_path_factory.mktemp("incidents")
    inbox, lake = base / "inbox", base / "lake"
    simulate(inbox, tables={"baccarat": 1, "combate": 1}, hours=1.0, seed=3,
             faults={"PAYOUT": 0.2, "BURN_SKIPPED": 1.0})
    run = pitwatch("run", "--day", DAY, "--inbox", inbox, "--lake", lake, "--timezone", ZONE, "--quiet")
    assert run.returncode == 0, run.stderr
    con = connect(Lake.at(lake))
    answer = run_sql(con, "select * from findings order by ts, finding_id")
    con.close()
    findings = [dict(zip(answer.columns, r)) for r in answer.rows]
    payouts = [f for f in findings if f["rule_id"] == "PAYOUT"]
    burn = next(f for f in findings if f["rule_id"] == "BURN_SKIPPED")
    combate = next(f for f in payouts if f["game"] == "combate")
    baccarat = [f for f in payouts if f["game"] == "baccarat"]
    assert len(baccarat) >= 3, "the floor needs three wrong baccarat payouts"
    reviews = [
        (baccarat[0], "confirmed", "DEALER_ERROR", "=HYPERLINK(\"http://x\",\"paid twice\")", "CAM-12/clip-881", "25"),
        (combate, "escalated", "PATRON", "claimed, see \"floor log\"\nline two", None, "-40.5"),
        (burn, "dismissed", "DEVICE_FAULT", None, None, None),
        (baccarat[1], "confirmed", "DEALER_ERROR", None, None, None),
        (baccarat[1], "dismissed", "DATA_ERROR", "the feed, not the dealer", None, None),
        (baccarat[2], "dismissed", "OTHER", None, None, None),
        (baccarat[2], "confirmed", "TRAINING", "trainee, supervised", None, "5"),
    ]
    for f, disposition, reason, note, video, amount in reviews:
        args = [f["finding_id"], "--lake", lake, "--disposition", disposition, "--by", "A. Ortiz", "--reason", reason]
        args += ["--note", note] if note is not None else []
        args += ["--video", video] if video is not None else []
        args += ["--amount", amount] if amount is not None else []
        r = pitwatch("review", *args)
        assert r.returncode == 0, r.stderr
    incidents = {baccarat[0]["finding_id"]: reviews[0], combate["finding_id"]: reviews[1],
                 baccarat[2]["finding_id"]: reviews[6]}
    return {"inbox": inbox, "lake": lake, "findings": {f["finding_id"]: f for f in findings},
            "incidents": incidents}


def floor_lake(floor):
    return floor["inbox"].parent / "lake"


def _json(floor, *extra) -> list[dict]:
    r = pitwatch("incidents", "--day", DAY, "--lake", floor["lake"], "--format", "json", *extra)   # names: the
    # roster the nightly run kept from INBOX/dealers.csv, no --dealers
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _truth(inbox) -> list[dict]:
    return [json.loads(line) for line in (inbox / "truth.jsonl").read_text().splitlines()]


def test_one_record_per_finding_whose_latest_review_confirms_or_escalates_it(floor):
    records = _json(floor)
    assert sorted(r["finding_id"] for r in records) == sorted(floor["incidents"])
    assert [r["disposition"] for r in records] == [floor["incidents"][r["finding_id"]][1] for r in records]


def test_records_match_the_simulators_truth_and_the_catalogue(floor):
    truth = _truth(floor["inbox"])
    dealers = {row["id"]: row["name"] for row in csv.DictReader((floor["inbox"] / "dealers.csv").open())}
    for record in _json(floor):
        f = floor["findings"][record["finding_id"]]
        assert any((t["rule_id"], t["table_id"], t["round_id"], t["seat"]) ==
                   (record["rule_id"], record["table_id"], record["round_id"], record["seat"]) for t in truth), record
        rule = RULE_BY_ID[record["rule_id"]]
        assert (record["type"], record["severity"], record["procedure"]) == (rule.title, rule.severity,
                                                                               rule.source_for(record["game"]))
        assert record["dealer_id"] == f["dealer_id"] and record["dealer_name"] == dealers[f["dealer_id"]]
        assert record["incident_number"] == f"PW-{DAY.replace('-', '')}-{record['finding_id'][:12]}"
        assert f"seat {record['seat']}" in record["description"] and record["round_id"] in record["description"]
        assert not unreadable(record["description"]), record["description"]


def test_times_are_the_tables_own_clock_whichever_device_wrote_the_evidence(floor):
    records = _json(floor)
    for record in records:
        f = floor["findings"][record["finding_id"]]
        at = f["ts"].astimezone(zoneinfo.ZoneInfo(ZONE))
        assert (record["local_date"], record["local_time"]) == (f"{at:%Y-%m-%d}", f"{at:%H:%M:%S}")
        assert (record["utc_offset"], record["time_zone"]) == ("-04:00", ZONE)
        assert f"{at:%H:%M:%S} AST on" in record["description"]
    assert {floor["findings"][r["finding_id"]]["ts_offset"] for r in records} == {0, -240}   # both kinds shown


def test_evidence_names_the_input_lines_that_hold_the_findings_events(floor):
    for record in _json(floor):
        f = floor["findings"][record["finding_id"]]
        assert len(record["evidence"]) == len(f["evidence"])
        for place in record["evidence"]:
            path, _, line = place.rpartition(":")
            event = json.loads(open(path, encoding="utf-8").read().splitlines()[int(line) - 1])
            assert event["event_id"] in f["event_ids"]


def test_the_video_window_is_the_findings_video_querys(floor):
    con = connect(Lake.at(floor["lake"]))
    answer = run_query(con, "findings_video", {"gaming_day": DAY, "video_pad": "45"})
    con.close()
    at = {c: answer.columns.index(c) for c in ("finding_id", "video_from", "video_to")}
    windows = {r[at["finding_id"]]: (r[at["video_from"]], r[at["video_to"]]) for r in answer.rows}
    for record in _json(floor, "--video-pad", "45"):
        start, end = windows[record["finding_id"]]
        shown = (dt.datetime.fromisoformat(record["video_from"]), dt.datetime.fromisoformat(record["video_to"]))
        assert shown == (start.replace(microsecond=0), end.replace(microsecond=0) + dt.timedelta(
            seconds=1 if end.microsecond else 0))             # to the second, never narrower
        assert record["video_from"][-6:] == record["utc_offset"]


def test_the_review_shows_with_its_reason_error_type_note_video_and_amount(floor):
    by_id = {r["finding_id"]: r for r in _json(floor)}
    for fid, (_f, disposition, reason, note, video, amount) in floor["incidents"].items():
        r = by_id[fid]
        assert (r["disposition"], r["reviewer"], r["reason"], r["note"], r["video"]) == (
            disposition, "A. Ortiz", reason, note, video)
        assert r["amount"] == (None if amount is None else float(amount))
        assert r["error_type"] == {"DEALER_ERROR": "dealer", "PATRON": "patron", "TRAINING": "dealer"}[reason]


def test_csv_holds_the_same_records_as_json_with_formulas_neutralised(floor):
    r = pitwatch("incidents", "--day", DAY, "--lake", floor["lake"])
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert list(rows[0]) == list(FIELDS)

    def as_csv(v) -> str:
        if v is None:
            return ""
        if isinstance(v, list):
            return "; ".join(v)
        if isinstance(v, float):
            return f"{v:g}"
        text = str(v).replace("\n", "\\x0a")
        return "'" + text if text.startswith(("=", "+", "-", "@")) else text

    assert rows == [{k: as_csv(v) for k, v in rec.items()} for rec in _json(floor)]
    assert any(row["note"].startswith("'=HYPERLINK") for row in rows)


def test_a_new_review_keeps_the_incident_number_and_shows_the_new_note(floor, tmp_path):
    floor = {**floor, "lake": tmp_path / "lake"}           # a copy: the module's lake keeps its reviews
    shutil.copytree(floor_lake(floor), floor["lake"])
    fid = next(iter(floor["incidents"]))
    before = {r["finding_id"]: r for r in _json(floor)}[fid]
    r = pitwatch("review", fid, "--lake", floor["lake"], "--disposition", "confirmed", "--by", "B. Cruz",
                 "--reason", "DEALER_ERROR", "--note", "seen again on camera 14")
    assert r.returncode == 0, r.stderr
    after = {r["finding_id"]: r for r in _json(floor)}[fid]
    assert after["incident_number"] == before["incident_number"]
    assert (after["reviewer"], after["note"]) == ("B. Cruz", "seen again on camera 14")
    assert {k: v for k, v in after.items() if k not in ("reviewer", "reviewed_at", "note", "video", "amount")} == {
        k: v for k, v in before.items() if k not in ("reviewer", "reviewed_at", "note", "video", "amount")}


def test_a_day_without_incidents_is_the_header_alone_or_an_empty_array(floor):
    r = pitwatch("incidents", "--day", "2026-11-20", "--lake", floor["lake"])
    assert (r.returncode, r.stdout) == (0, ",".join(FIELDS) + "\n")
    assert _json_day(floor, "2026-11-20") == []


def _json_day(floor, day) -> list:
    r = pitwatch("incidents", "--day", day, "--lake", floor["lake"], "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_out_writes_the_file_and_says_how_many(floor, tmp_path):
    out = tmp_path / "itrak.json"
    r = pitwatch("incidents", "--day", DAY, "--lake", floor["lake"], "--format", "json", "--out", out)
    assert r.returncode == 0 and r.stdout == ""
    assert f"3 incidents of gaming day {DAY}" in r.stderr
    assert json.loads(out.read_text()) == _json(floor)


def test_a_replay_of_the_day_keeps_every_incident_whole(floor, tmp_path):
    before = _json(floor)
    copy = {**floor, "lake": tmp_path / "lake"}
    shutil.copytree(floor_lake(floor), copy["lake"])
    run = pitwatch("run", "--day", DAY, "--inbox", floor["inbox"], "--lake", copy["lake"], "--timezone", ZONE,
                   "--quiet")
    assert run.returncode == 0, run.stderr
    con = connect(Lake.at(copy["lake"]))
    (runs,), = run_sql(con, "select count(*) from runs where starts_with(command, 'pitwatch run ') and status = 'succeeded'").rows
    con.close()
    assert runs >= 2, "the day was not replayed"
    assert _json(copy) == before
