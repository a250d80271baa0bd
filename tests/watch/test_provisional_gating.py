"""Issue 41, deliverable 3: a provisional ``CARD_DISAGREEMENT`` only where a switch is possible.

* a stream that lacks the card while its device has an open ``seq`` hole raises nothing until the hole is
  filled or its ``--gap-wait`` runs out (the per-device order, live/order.py, holds the lines after it), and
  never later than the round's end;
* a shoe whose clock is about a second off the terminal's raises nothing on a clean round (``--skew``);
* a real switch, both streams current, is alerted at once;
* a clearing alert is written in the time zone of the alert it clears.

Streams are the engine tests' builder (tests/rules/stream.py): one event a second; ``_on_a_skewed_floor``
plays them at two events a second with the shoe's clock shifted, taken in their stamped time as the
watcher takes a read's lines."""
from __future__ import annotations

import json
import signal

import pytest

from pitwatch.live.alert_text import alert_line
from pitwatch.live.provisional import alert_records
from tests.rules.stream import Baccarat
from tests.watch.conftest import append_lines
from tests.watch.scenario import event_json
from tests.watch.test_provisional import _feed, _rule, _where
from tests.watch.test_watch_local import _in_puerto_rico

PROVISIONAL = "CARD_DISAGREEMENT"
CLEARED = "CARD_DISAGREEMENT_CLEARED"


def _on_a_skewed_floor(b: Baccarat, shoe_s: float) -> list:
    """``b``'s events at two a second, the shoe's stamped ``shoe_s`` seconds off the terminal's clock, in
    their stamped time (each device's own order kept: its stamps still grow)."""
    t0 = b.events[0].ts
    evs = [e._replace(ts=t0 + (e.ts - t0) // 2 + (int(shoe_s * 1_000_000) if e.source == "shoe" else 0))
           for e in b.events]
    return sorted(evs, key=lambda e: e.ts)


def _provisional(log) -> list:
    return _where(log, lambda x: _rule(x) in (PROVISIONAL, CLEARED))


# --- the clearing alert's time zone -----------------------------------------------------------------------

def _late_shoe_round(table_id: str) -> tuple[list, int]:
    """The terminal writes in Puerto Rico time (-04:00, the shoe in UTC); the shoe's lines of R-2's end
    arrive after the terminal's round_ended (a provisional alert, then its clearing): (events, the index of
    the first late shoe line)."""
    b = Baccarat(table_id=table_id, seed=9)
    b.prepare("P-1")
    for _ in range(4):
        b.coup(bets=())
    evs = [e._replace(ts_offset=-240) if e.source == "dealer" else e._replace(ts_offset=0) for e in b.events]
    end = next(n for n, e in enumerate(evs) if e.type == "round_ended" and e.round_id == "R-2")
    last_dealt = max(n for n, e in enumerate(evs[:end]) if e.type == "card_dealt")
    late_from = max(n for n, e in enumerate(evs[:last_dealt]) if e.source == "shoe")
    held = [e for n, e in enumerate(evs[:end + 1]) if n >= late_from and e.source == "shoe"]
    order = [e for e in evs[:end + 1] if e not in held] + held + evs[end + 1:]
    return order, end + 1 - len(held)


def test_a_clearing_alert_is_written_in_the_time_zone_of_the_alert_it_clears():
    """Found in issue 41: the clearing line printed +00:00, the alert it cleared -04:00."""
    order, _late = _late_shoe_round("BAC-TZ")
    engine, log = _feed(order)
    [(_a, p)] = _where(log, lambda x: _rule(x) == PROVISIONAL)
    [(_c, c)] = _where(log, lambda x: _rule(x) == CLEARED)
    assert p["ts_offset"] == c["ts_offset"] == -240
    alert, clearing = alert_records([p, c], engine.gaming_day, local=True)
    assert alert["ts"].endswith("-04:00") and clearing["ts"].endswith("-04:00")
    assert alert_line(alert, 30)[:29] == alert_line(clearing, 30)[:29]   # the same date, time and offset
    utc = alert_records([p, c], engine.gaming_day)                        # without --local: both UTC
    assert utc[0]["ts"].endswith("Z") and utc[1]["ts"].endswith("Z")


@pytest.mark.slow
def test_the_watcher_prints_a_clearing_line_at_its_alerts_offset(tmp_path, start_watch):
    """The real command with --local: the terminal's round end taken before the shoe's late lines (they
    are written once the watcher has caught up), a provisional alert and its clearing, both at -04:00."""
    order, late = _late_shoe_round("BAC-TZ")
    lines = []
    for ev in order:
        row = json.dumps(event_json(ev))
        lines.append((ev.device_id, _in_puerto_rico(row) if ev.source == "dealer" else row))
    feeds = tmp_path / "live"
    w = start_watch(feeds, "--lake", tmp_path / "lake", "--no-lake-alerts", "--local", "--gap-wait", "0")
    append_lines(feeds, lines[:late])
    w.caught_up(late)
    append_lines(feeds, lines[late:])
    w.caught_up(len(lines))
    assert w.stop(signal.SIGTERM) == 0
    [p] = [a for a in w.provisional if a["rule_id"] == PROVISIONAL]
    [c] = [a for a in w.provisional if a["rule_id"] == CLEARED]
    assert c["provisional_id"] == p["finding_id"]
    assert p["ts"].endswith("-04:00") and c["ts"].endswith("-04:00"), (p["ts"], c["ts"])
