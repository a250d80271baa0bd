"""The Live page's second source: the alerts a real ``pitwatch watch`` commits to the lake's ``alerts``
table reach the page and its event stream (no alerts file followed)."""
from __future__ import annotations

import threading
import time

import pytest

from pitwatch.lake import Lake
from pitwatch.lake import settings as lake_settings
from tests.console.conftest import add_people
from tests.console.test_serve import _events
from tests.watch.conftest import append_lines


@pytest.mark.slow
def test_an_alert_the_watcher_commits_to_the_alerts_table_reaches_the_stream_and_the_page(
        tmp_path, scenario, start_watch, serve, client):
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    feeds.mkdir()           # the watcher follows the folder from its start
    w = start_watch(feeds, "--lake", lake, "--commit-every", "0.2", "--reorder-wait", "0")
    w.wait_for(lambda: lake_settings.is_lake(Lake.at(str(lake))), "the watcher's new lake")
    add_people(str(lake))
    served = serve(lake)
    c = client(served)
    c.login("vera")
    status, _url, body, _ = c.get("/live")
    assert status == 200 and 'id="no-alerts"' in body
    got: list = []
    stop = threading.Event()
    cookie = "; ".join(f"{k.name}={k.value}" for k in c.jar)
    threading.Thread(target=_events, args=(served.url + "/live/events", cookie, got, stop), daemon=True).start()
    time.sleep(1.0)
    dealer = scenario["DT-1-BAC-A"]
    cut = next(i for i, line in enumerate(dealer) if '"type": "cut"' in line)
    append_lines(feeds, [("DT-1-BAC-A", line) for line in dealer[:cut + 1]])
    w.wait_for(lambda: any(a["rule_id"] == "CUT_PLACEMENT" for a in w.alerts), "CUT_PLACEMENT")
    wanted = {a["finding_id"] for a in w.alerts}
    end = time.monotonic() + 20
    while not wanted <= {g["finding_id"] for _, g in got} and time.monotonic() < end:
        time.sleep(0.05)
    stop.set()
    assert {g["finding_id"] for _, g in got} == wanted          # each once, none but the watcher's
    assert len(got) == len(wanted)
    status, _url, body, _ = c.get("/live")                       # the page, opened now, lists them from the table
    assert all(f'data-finding="{f}"' in body for f in wanted) and 'id="no-alerts"' not in body
    assert w.stop() == 0


def _line(finding_id: str) -> str:
    import json

    return json.dumps({"finding_id": finding_id, "rule_id": "BURN_SKIPPED", "ts": "2026-11-28T20:03:00Z"}) + "\n"


def test_a_followed_alerts_file_is_read_again_from_its_start_when_rotated_or_truncated(tmp_path):
    from pitwatch.console.live import FileFollower

    path = tmp_path / "alerts.jsonl"
    path.write_text(_line("old"))
    follower = FileFollower(str(path), from_end=True)
    assert follower.read() == []                                  # what was there before is not new
    with open(path, "a") as f:
        f.write(_line("a") + _line("b")[:20])                     # b's line not complete yet
    assert [r["finding_id"] for r in follower.read()] == ["a"]
    with open(path, "a") as f:
        f.write(_line("b")[20:])
    assert [r["finding_id"] for r in follower.read()] == ["b"]
    rotated = tmp_path / "alerts.jsonl.1"
    path.rename(rotated)
    path.write_text(_line("c"))                                   # a new file under the name
    assert [r["finding_id"] for r in follower.read()] == ["c"]
    path.write_text("")                                           # truncated, then written again
    assert follower.read() == []
    with open(path, "a") as f:
        f.write(_line("d"))
    assert [r["finding_id"] for r in follower.read()] == ["d"]


def test_a_stream_remembers_only_the_newest_keys_it_sent(monkeypatch):
    from pitwatch.console import live

    monkeypatch.setattr(live, "REMEMBERED", 3)
    sent = live.Sent(["a", "b"])
    for k in ("c", "d", "c"):
        sent.add(k)
    assert "a" not in sent
    assert all(k in sent for k in ("b", "c", "d"))


def test_the_pages_tail_of_a_file_skips_the_line_it_starts_in_and_reads_the_rest(tmp_path):
    from pitwatch.console.live import FileFollower

    path = tmp_path / "alerts.jsonl"
    path.write_text(_line("a") + _line("b") + _line("c"))
    cut = len(_line("c")) + len(_line("b")) + 5                   # five bytes into a's line
    assert [r["finding_id"] for r in FileFollower(str(path), from_end=True, tail=cut).read()] == ["b", "c"]
    whole = len(_line("c")) + len(_line("b"))                     # exactly at b's line's start
    assert [r["finding_id"] for r in FileFollower(str(path), from_end=True, tail=whole).read()] == ["b", "c"]
