"""``watch --format text`` (issue 30 item 3): one line per alert for the people at the console.

The line's time is the table's own (the offset its terminal wrote), and its video window is the
one ``pitwatch query findings_video`` gives the next morning for the same finding (checked
against the query's SQL on the batch's lake, not against our own arithmetic).  JSON stays the
default for a pipe; a terminal gets text.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from zoneinfo import ZoneInfo

import pytest

from pitwatch.live.alert_text import alert_line, printable, video_window
from tests.conftest import process_env
from tests.watch.conftest import WATCH_MAIN, append_lines
from tests.watch.scenario import interleave, write_batch_input
from tests.watch.test_watch_local import _in_puerto_rico

LINE = re.compile(r"(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d) "
                  r"(?P<zone>UTC|UTC[+-]\d\d:\d\d|[A-Za-z]+ \(UTC[+-]\d\d:\d\d\))  "
                  r"(?P<table>\S+)  (?P<place>.+?)  dealer (?P<dealer>.+?)  (?P<severity>[A-Z]+)  (?P<title>[^:]+): "
                  r"expected (?P<expected>.*); actual (?P<actual>.*); "
                  r"video (?P<vfrom>[\d: .-]+) to (?P<vto>[\d: .-]+); (?P<rule>[A-Z_]+) (?P<fid>[0-9a-f]{32}|live-[0-9a-f]+)$")   # live-…: a provisional alert


def _env():
    return process_env()


PR_ZONE = ZoneInfo("America/Puerto_Rico")


@pytest.mark.slow
def test_text_lines_show_the_dealer_the_lakes_local_time_and_the_video_window_of_findings_video(
        tmp_path, scenario, start_watch):
    devices = {d: [_in_puerto_rico(x) for x in lines] if d.startswith("DT-") else lines
               for d, lines in scenario.items()}
    # the next morning's view: the batch's lake and the named query, --video-pad 7, in the floor's zone
    write_batch_input(devices, tmp_path / "in")
    subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(tmp_path / "in"), "--lake",
                    str(tmp_path / "batch")], check=True, env=_env(), capture_output=True, timeout=300)
    q = subprocess.run([sys.executable, "-m", "pitwatch.cli", "query", "findings_video", "--lake",
                        str(tmp_path / "batch"), "--param", "gaming_day=2026-11-28", "--video-pad", "7",
                        "--show-tz", "America/Puerto_Rico", "--format", "json"],
                       check=True, env=_env(), capture_output=True, timeout=120)
    video = {r["finding_id"]: r for r in map(json.loads, q.stdout.decode().splitlines())}
    assert video
    roster = tmp_path / "dealers.csv"
    roster.write_text("id,name,shift\nD-1,Ana Ruiz,swing\n")          # the roster `pitwatch query --dealers` reads

    feeds = tmp_path / "feeds"
    feeds.mkdir()
    w = start_watch(feeds, "--lake", tmp_path / "lake", "--timezone", "America/Puerto_Rico", "--finalize-at-stop",
                    "--format", "text", "--video-pad", "7", "--alerts-file", tmp_path / "alerts.jsonl",
                    "--dealers", roster)
    order = interleave(devices, seed=3)
    append_lines(feeds, order)
    w.caught_up(len(order))
    assert w.stop(signal.SIGTERM) == 0
    records = [json.loads(x) for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert len(w.everything) == len(records) >= 5
    named = 0
    for text, rec in zip(w.everything, records):
        m = LINE.fullmatch(text)
        assert m, text
        assert m["fid"] == rec["finding_id"] and m["rule"] == rec["rule_id"] and m["table"] == rec["table_id"]
        assert m["title"] == rec["title"] and m["severity"] == rec["severity"].upper()
        assert m["expected"] == rec["expected"] and m["actual"] == rec["actual"]
        assert m["place"] == (f"seat {rec['seat']}" if rec["seat"] is not None else "table")
        # the dealer: the roster's name beside the id; the id alone for one the roster does not list
        assert m["dealer"] == {"D-1": "Ana Ruiz (D-1)", None: "-"}.get(rec["dealer_id"], rec["dealer_id"])
        named += m["dealer"] == "Ana Ruiz (D-1)"
        # the lake's time zone, named, to the second: the same instant as the alert's ts
        assert m["zone"] == "AST (UTC-04:00)"
        shown = _dt.datetime.fromisoformat(f"{m['date']}T{m['time']}").replace(tzinfo=PR_ZONE)
        ts = _dt.datetime.fromisoformat(rec["ts"].replace("Z", "+00:00"))
        assert shown == ts.replace(microsecond=0)
        # the video window: findings_video's video_from/video_to (batch findings only: DEVICE_SILENT is live)
        if rec["finding_id"] in video:
            row = video[rec["finding_id"]]
            frm = _dt.datetime.fromisoformat(row["video_from"]).astimezone(PR_ZONE)
            to = _dt.datetime.fromisoformat(row["video_to"]).astimezone(PR_ZONE)
            assert m["vfrom"] == _shown(frm, shown), (text, row)
            assert m["vto"] == _shown(to, frm), (text, row)
    assert named
    assert {r["finding_id"] for r in records} & set(video)


def _shown(when: _dt.datetime, before: _dt.datetime) -> str:
    clock = when.strftime("%H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    return clock if when.date() == before.date() else f"{when.date()} {clock}"


def test_text_line_makes_hostile_texts_printable_on_one_line():
    rec = {"finding_id": "a" * 32, "rule_id": "PAYOUT", "title": "Wrong payout", "severity": "major",
           "table_id": "BAC-01\n2026-11-28 20:00:00.000 +00:00  BAC-02", "seat": None, "spot": "player",
           "ts": "2026-11-28T23:59:50.000Z", "evidence_from": "2026-11-28T23:59:40.000Z", "ts_offset": 0,
           "expected": "a win paying 95\r", "actual": "\u202egnorw\u202c \x1b[31mred\x00"}
    line = alert_line(rec, 30)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line and "\u202e" not in line
    assert "BAC-01\\x0a2026-11-28" in line and "\\u202egnorw\\u202c \\x1b[31mred\\x00" in line
    assert "  the player hand  " in line
    # the window crosses midnight: the end says its date
    assert "video 23:59:10.000 to 2026-11-29 00:00:20.000;" in line
    assert printable("seat 3") == "seat 3"
    named = alert_line({**rec, "dealer_id": "D-9\x1b[2J"}, 30, dealers={"D-9\x1b[2J": "Eve\u202e evil"})
    assert "  dealer Eve\\u202e evil (D-9\\x1b[2J)  " in named and "\x1b" not in named


GLANCE = {"finding_id": "b" * 32, "rule_id": "DEAL_ORDER", "title": "Card dealt out of order", "severity": "major",
          "table_id": "BAC-01", "seat": 3, "spot": None, "dealer_id": "D-7", "ts": "2026-11-28T20:10:48.247Z",
          "evidence_from": "2026-11-28T20:10:11.163Z", "ts_offset": 0,
          "expected": "the player's 3rd card 7♠", "actual": "the banker's 3rd card 7♠"}


def test_text_line_names_the_dealer_the_lakes_zone_the_title_the_cards_and_the_video():
    line = alert_line(GLANCE, 30, zone=ZoneInfo("America/Puerto_Rico"), dealers={"D-7": "Ana Ruiz"})
    assert line == ("2026-11-28 16:10:48 AST (UTC-04:00)  BAC-01  seat 3  dealer Ana Ruiz (D-7)  MAJOR  "
                    "Card dealt out of order: expected the player's 3rd card 7♠; actual the banker's 3rd card 7♠; "
                    "video 16:09:41.163 to 16:11:18.247; DEAL_ORDER " + "b" * 32)
    assert LINE.fullmatch(line)


def test_text_line_of_a_table_with_a_display_zone_is_in_that_zone_and_the_others_in_the_lakes():
    tables = {"COM-01": "America/New_York"}
    overridden = alert_line({**GLANCE, "table_id": "COM-01", "ts_offset": -240}, 30, zone=PR_ZONE, tables=tables)
    assert overridden.startswith("2026-11-28 15:10:48 EST (UTC-05:00)  COM-01  ") and LINE.fullmatch(overridden)
    assert "video 15:09:41.163 to 15:11:18.247;" in overridden
    other = alert_line(GLANCE, 30, zone=PR_ZONE, tables=tables)
    assert other.startswith("2026-11-28 16:10:48 AST (UTC-04:00)  BAC-01  ")
    no_table = alert_line({**GLANCE, "table_id": None, "seat": None}, 30, zone=PR_ZONE, tables=tables)
    assert no_table.startswith("2026-11-28 16:10:48 AST (UTC-04:00)  -  ")


def test_text_line_without_a_roster_shows_the_dealer_id_and_without_a_dealer_a_dash():
    assert "  seat 3  dealer D-7  MAJOR  " in alert_line(GLANCE, 30)
    assert "  seat 3  dealer D-7  MAJOR  " in alert_line(GLANCE, 30, dealers={"D-8": "Someone Else"})
    assert "  seat 3  dealer -  MAJOR  " in alert_line({**GLANCE, "dealer_id": None}, 30)


@pytest.mark.parametrize("zone, shown", [
    ("UTC", "2026-11-28 20:10:48 UTC  "), ("America/Sao_Paulo", "2026-11-28 17:10:48 UTC-03:00  "),
    ("Asia/Macau", "2026-11-29 04:10:48 CST (UTC+08:00)  "), ("Asia/Kathmandu", "2026-11-29 01:55:48 UTC+05:45  ")])
def test_text_line_names_the_zone_unambiguously(zone, shown):
    line = alert_line(GLANCE, 30, zone=ZoneInfo(zone))
    assert line.startswith(shown) and LINE.fullmatch(line)


def test_text_line_of_an_alert_without_a_title_takes_the_catalogues_and_without_a_table_a_dash():
    line = alert_line({**GLANCE, "title": None, "rule_id": "SEQ_GAP", "table_id": None, "seat": None}, 30)
    assert "  -  -  dealer D-7  MAJOR  Events lost from a device: " in line


def test_text_line_of_an_alert_about_no_table_has_no_place_and_no_video_window():
    lost = {"ts": "2026-11-28T20:10:48.000Z", "table_id": None, "seat": None, "dealer_id": None,
            "severity": "major", "rule_id": "SOURCE_LOST", "title": "An input of the watcher cannot be read",
            "expected": "the watcher reads /data/live", "actual": "/data/live unreadable for 5 s",
            "finding_id": "live-" + "c" * 24}
    line = alert_line(lost, 30)
    assert line == ("2026-11-28 20:10:48 UTC  -  -  dealer -  MAJOR  An input of the watcher cannot be read: "
                    "expected the watcher reads /data/live; actual /data/live unreadable for 5 s; "
                    "SOURCE_LOST live-" + "c" * 24)
    assert "video" not in alert_line({**GLANCE, "table_id": None}, 30)
    assert "video" in alert_line(GLANCE, 30)


def test_video_window_without_evidence_from_is_around_ts():
    rec = {"ts": "2026-11-28T20:00:00.000-04:00", "evidence_from": None}
    start, end = video_window(rec, 30)
    assert (end - start).total_seconds() == 60 and start.utcoffset() == _dt.timedelta(hours=-4)


def _run_on_terminal(args: list[str], feed_dir, timeout: float = 60.0) -> str:
    """Run watch with stdout on a pseudo-terminal; what it wrote there."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, *WATCH_MAIN, *args], stdout=slave, stderr=subprocess.DEVNULL,
                         env=_env())
    os.close(slave)
    out = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    p.wait(10)
    os.close(master)
    return out.decode()


@pytest.mark.slow
def test_default_format_is_text_on_a_terminal_and_json_on_a_pipe(tmp_path, scenario):
    feeds = tmp_path / "feeds"
    order = interleave(scenario, seed=9)
    append_lines(feeds, order)
    common = ["--stop-after-idle", "1", "--gap-wait", "0.2", "--no-lake-alerts", "--create-lake"]
    on_tty = _run_on_terminal([str(feeds), "--lake", str(tmp_path / "lake1"), *common], feeds)
    rows = [x for x in on_tty.replace("\r\n", "\n").splitlines() if x]
    assert rows and all(LINE.fullmatch(x) for x in rows), rows[:3]
    piped = subprocess.run([sys.executable, *WATCH_MAIN, str(feeds), "--lake", str(tmp_path / "lake2"), *common],
                           capture_output=True, env=_env(), timeout=120)
    assert piped.returncode == 0
    alerts = [json.loads(x) for x in piped.stdout.decode().splitlines()]
    assert sorted(a["finding_id"] for a in alerts) == sorted(LINE.fullmatch(x)["fid"] for x in rows)


def test_watch_refuses_a_video_pad_the_query_would_refuse(tmp_path):
    feeds = tmp_path / "feeds"
    feeds.mkdir()
    for pad in ("3601", "-1"):
        p = subprocess.run([sys.executable, *WATCH_MAIN, str(feeds), "--lake", str(tmp_path / "lake"),
                            "--video-pad", pad], capture_output=True, env=_env(), timeout=60)
        err = p.stderr.decode().strip().splitlines()
        assert p.returncode == 2 and len(err) == 1 and err[0].startswith("Error: --video-pad:"), err
        assert "0 to 3600" in err[0]
    assert not (tmp_path / "lake").exists()


def test_a_dealers_file_that_is_no_roster_is_one_error_line_and_nothing_is_written(tmp_path, pitwatch):
    feeds = tmp_path / "feeds"
    feeds.mkdir()
    roster = tmp_path / "dealers.csv"
    roster.write_text("dealer,name\nD-1,Ana Ruiz\n")
    out = pitwatch("watch", feeds, "--lake", tmp_path / "lake", "--create-lake", "--dealers", roster)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"Error: dealers file {roster}: the header is 'dealer,name'; "
                                               "it must name the columns id, name and shift"]
    assert not (tmp_path / "lake").exists()     # a good roster: the slow test above (--dealers, a real process)


@pytest.mark.slow
def test_text_lines_name_the_dealer_from_the_lakes_roster_without_a_dealers_flag(
        tmp_path, scenario, batch_lake, start_watch, pitwatch):
    """Issue 42: the roster kept in the lake (``pitwatch dealers import``) names the dealer in the
    text alerts of a watcher given no ``--dealers``; the lake's roster is the casino's, so an id
    it does not list is shown alone."""
    import shutil

    lake = tmp_path / "lake"
    shutil.copytree(batch_lake, lake, symlinks=True)
    roster = tmp_path / "dealers.csv"
    roster.write_text("id,name,shift\nD-1,Ana Ruiz,swing\n")
    assert pitwatch("dealers", "import", roster, "--lake", lake).returncode == 0
    feeds = tmp_path / "feeds"
    feeds.mkdir()
    w = start_watch(feeds, "--lake", lake, "--finalize-at-stop", "--format", "text",
                    "--alerts-file", tmp_path / "alerts.jsonl")
    order = interleave(scenario, seed=3)
    append_lines(feeds, order)
    w.caught_up(len(order))
    assert w.stop(signal.SIGTERM) == 0
    records = [json.loads(x) for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    dealers = [LINE.fullmatch(text)["dealer"] for text in w.everything]
    assert len(dealers) == len(records) and any(r["dealer_id"] == "D-1" for r in records)
    assert dealers == [{"D-1": "Ana Ruiz (D-1)", None: "-"}.get(r["dealer_id"], r["dealer_id"]) for r in records]
