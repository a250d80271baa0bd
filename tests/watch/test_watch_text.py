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

import pytest

from pitwatch.live.alert_text import alert_line, printable, video_window
from tests.conftest import process_env
from tests.watch.conftest import WATCH_MAIN, append_lines
from tests.watch.scenario import interleave, write_batch_input
from tests.watch.test_watch_local import _in_puerto_rico

LINE = re.compile(r"(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d\.\d{3}) (?P<offset>[+-]\d\d:\d\d)  "
                  r"(?P<table>\S+)  (?P<place>.+?)  (?P<severity>[A-Z]+)  (?P<title>[^:]+): "
                  r"expected (?P<expected>.*); actual (?P<actual>.*); "
                  r"video (?P<vfrom>[\d: .-]+) to (?P<vto>[\d: .-]+); (?P<rule>[A-Z_]+) (?P<fid>[0-9a-f]{32}|live-[0-9a-f]+)$")   # live-…: a provisional alert


def _env():
    return process_env()


@pytest.mark.slow
def test_text_lines_show_the_tables_own_time_and_the_video_window_of_findings_video(tmp_path, scenario,
                                                                                     start_watch):
    devices = {d: [_in_puerto_rico(x) for x in lines] if d.startswith("DT-") else lines
               for d, lines in scenario.items()}
    # the next morning's view: the batch's lake and the named query, --video-pad 7, --local
    write_batch_input(devices, tmp_path / "in")
    subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(tmp_path / "in"), "--lake",
                    str(tmp_path / "batch")], check=True, env=_env(), capture_output=True, timeout=300)
    q = subprocess.run([sys.executable, "-m", "pitwatch.cli", "query", "findings_video", "--lake",
                        str(tmp_path / "batch"), "--param", "gaming_day=2026-11-28", "--video-pad", "7", "--local",
                        "--format", "json"], check=True, env=_env(), capture_output=True, timeout=120)
    video = {r["finding_id"]: r for r in map(json.loads, q.stdout.decode().splitlines())}
    assert video

    feeds = tmp_path / "feeds"
    feeds.mkdir()
    w = start_watch(feeds, "--lake", tmp_path / "lake", "--finalize-at-stop", "--format", "text",
                    "--video-pad", "7", "--alerts-file", tmp_path / "alerts.jsonl")
    order = interleave(devices, seed=3)
    append_lines(feeds, order)
    w.caught_up(len(order))
    assert w.stop(signal.SIGTERM) == 0
    records = [json.loads(x) for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert len(w.everything) == len(records) >= 5
    seen_pr = False
    for text, rec in zip(w.everything, records):
        m = LINE.fullmatch(text)
        assert m, text
        assert m["fid"] == rec["finding_id"] and m["rule"] == rec["rule_id"] and m["table"] == rec["table_id"]
        assert m["title"] == rec["title"] and m["severity"] == rec["severity"].upper()
        assert m["expected"] == rec["expected"] and m["actual"] == rec["actual"]
        assert m["place"] == (f"seat {rec['seat']}" if rec["seat"] is not None else "table")
        # the time the table's terminal wrote (its offset), the same instant as the alert's ts
        want_offset = {-240: "-04:00", 0: "+00:00", None: "+00:00"}[rec["ts_offset"]]
        assert m["offset"] == want_offset
        seen_pr = seen_pr or want_offset == "-04:00"
        shown = _dt.datetime.fromisoformat(f"{m['date']}T{m['time']}{m['offset']}")
        assert shown == _dt.datetime.fromisoformat(rec["ts"].replace("Z", "+00:00"))
        # the video window: findings_video's video_from/video_to (batch findings only: DEVICE_SILENT is live)
        if rec["finding_id"] in video:
            row = video[rec["finding_id"]]
            frm = _dt.datetime.fromisoformat(row["video_from"])
            to = _dt.datetime.fromisoformat(row["video_to"])
            assert m["vfrom"] == _shown(frm, shown), (text, row)
            assert m["vto"] == _shown(to, frm), (text, row)
    assert seen_pr
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
    common = ["--stop-after-idle", "1", "--gap-wait", "0.2", "--no-lake-alerts"]
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
