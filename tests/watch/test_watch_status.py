"""Quiet, useful stderr (issue 30 item 5): a status line at most every --status-every seconds,
and only when something changed; new files (and gone ones) announced once each.

Replays what was seen on the floor: 1,494 ``caught up`` lines in 70 s while lines trickled in,
and nothing said when files appeared after ``watching 0 file(s)``.
"""
from __future__ import annotations

import datetime as _dt
import os
import signal
import time

import pytest

from pitwatch.live.sources import FileFollower
from pitwatch.live.status import HEARTBEAT, StatusLine
from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave


def _stamp(line: str) -> float:
    return _dt.datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00")).timestamp()


@pytest.mark.slow
def test_trickling_lines_give_a_status_line_at_most_every_interval_and_new_files_are_announced_once(
        tmp_path, scenario, start_watch):
    feeds = tmp_path / "feeds"
    feeds.mkdir()
    w = start_watch(feeds, "--lake", tmp_path / "lake", "--status-every", "0.5", "--gap-wait", "0.2")
    w.wait_for(lambda: any("watching 0 file(s)" in e for e in w.errors), "the start")
    order = interleave(scenario, seed=11)
    # the lines trickle in for about 3 s: the watcher catches up between nearly every two of them
    t0 = time.monotonic()
    step = 3.0 / len(order)
    for i, item in enumerate(order):
        append_lines(feeds, [item])
        time.sleep(max(0.0, t0 + (i + 1) * step - time.monotonic()))
    w.caught_up(len(order))
    idle_from = len(w.errors)
    time.sleep(2.0)                                # idle: nothing changes, nothing is said
    quiet = w.errors[idle_from:]
    assert w.stop(signal.SIGTERM) == 0
    status = [e for e in w.errors if " pitwatch: status: " in e]
    assert status and not [e for e in w.errors if "caught up" in e and " status: " not in e]
    stamps = [_stamp(e) for e in status]
    assert all(b - a >= 0.45 for a, b in zip(stamps, stamps[1:])), stamps
    assert len(status) <= (stamps[-1] - stamps[0]) / 0.5 + 2
    assert not [e for e in quiet if " status: " in e], quiet
    last = status[-1]
    assert f"caught up: {len(order):,} lines, " in last and " alerts" in last and "lag 0 s" in last
    assert f"files: {len(scenario)} ({len(scenario)} new, 0 damaged, 0 gone)" in last
    # every device's file was announced once, by name
    for dev in scenario:
        said = [e for e in w.errors if e.endswith(f"new file: {feeds / (dev + '.jsonl')}")]
        assert len(said) == 1, (dev, said)
    # and, all in all, a few lines, not one per catch-up
    assert len(w.errors) < 40 + sum("rejected" in e for e in w.errors), w.errors


@pytest.mark.slow
def test_many_new_files_at_once_are_named_up_to_five_and_counted_and_a_gone_file_is_said_once(tmp_path, start_watch):
    feeds = tmp_path / "feeds"
    feeds.mkdir()
    (feeds / "first.jsonl").write_text("")
    w = start_watch(feeds, "--lake", tmp_path / "lake", "--status-every", "0.2")
    w.wait_for(lambda: any("watching 1 file(s)" in e for e in w.errors), "the start")
    for i in range(12):
        (feeds / f"dev-{i:02d}.jsonl").write_text("")
    w.wait_for(lambda: any("and 7 more new file(s)" in e for e in w.errors), "the new files counted")
    os.unlink(feeds / "first.jsonl")
    w.wait_for(lambda: any("first.jsonl is gone" in e for e in w.errors), "the gone file")
    time.sleep(1.5)                               # many looks later: said once
    w.wait_for(lambda: any("(12 new, 0 damaged, 1 gone)" in e for e in w.errors), "the status line")
    assert w.stop(signal.SIGTERM) == 0
    assert sum("new file: " in e for e in w.errors) == 5
    assert sum("first.jsonl is gone" in e for e in w.errors) == 1


def test_file_status_counts_unread_bytes_and_how_long_they_wait(tmp_path):
    f = tmp_path / "DT-1.jsonl"
    f.write_bytes(b'{"a": 1}\n' * 10)
    old = time.time() - 40
    os.utime(f, (old, old))
    src = FileFollower([str(tmp_path)])
    src.describe()
    st = src.status()
    assert st["unread"] == 90 and abs(st["since"] - old) < 1
    src.read()
    st = src.status()
    assert st["unread"] == 0 and st["since"] is None
    src.close()


def _counts(lines, alerts=0):
    return {"lines": lines, "findings": alerts, "notices": 0}


def test_status_line_says_the_lag_and_stays_quiet_while_nothing_changes():
    s = StatusLine(10.0)
    waiting = [{"what": "files", "files": 2, "new": 0, "damaged": 0, "gone": 0, "unread": 4096,
                "unread_unit": "B", "since": time.time() - 35}]
    text = s.line(0.0, _counts(100, 2), False, 3, waiting, [("webhook:http://x", "ok", (False, 0))])
    assert text.startswith("status: reading: 100 lines, 2 alerts, lag 35 s (4,096 B unread), 3 held for a gap; ")
    assert text.endswith("; files: 2 (0 new, 0 damaged, 0 gone); webhook:http://x: ok")
    assert not s.due(5.0) and s.due(10.0)
    done = [{**waiting[0], "unread": 0, "since": None}]
    assert "caught up: 150 lines" in s.line(10.0, _counts(150, 2), True, 0, done, [])
    assert s.line(20.0, _counts(150, 2), True, 0, done, []) is None          # unchanged: nothing said
    assert s.line(30.0, _counts(151, 2), True, 0, done, []) is not None      # a line more: said
    # a sink failing for longer is no change; failing at all is
    sink = [("syslog:udp://x:514", "failing for 3 s (refused), 1 queued", (True, 1))]
    assert s.line(40.0, _counts(151, 2), True, 0, done, sink) is not None
    later = [("syslog:udp://x:514", "failing for 13 s (refused), 1 queued", (True, 1))]
    assert s.line(50.0, _counts(151, 2), True, 0, done, later) is None
    # an unchanged status is said again after HEARTBEAT intervals
    assert s.line(40.0 + HEARTBEAT * 10.0, _counts(151, 2), True, 0, done, later) is not None
