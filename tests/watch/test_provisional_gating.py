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
from zoneinfo import ZoneInfo

import pytest

from pitwatch.live.alert_text import alert_line
from pitwatch.live.engine import LiveEngine
from pitwatch.live.order import DeviceOrder
from pitwatch.live.provisional import alert_records
from pitwatch.live.sinks import DisplayZones
from pitwatch.live.sources import Line
from pitwatch.schemas.decode import GamingDayConfig
from tests.rules.stream import Baccarat
from tests.watch.conftest import append_lines
from tests.watch.floor_feed import FINAL
from tests.watch.scenario import event_json
from tests.watch.test_provisional import _feed, _rule, _where, switched_in_round_3
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


# --- the other stream behind by less than --skew --------------------------------------------------

def test_a_shoe_clock_a_second_behind_the_terminals_raises_no_alert_at_the_next_rounds_start():
    """Found on the old rule "a draw made after round_ended, not recorded by the terminal's next event":
    the shoe stamps the next round's first draw 1.2 s early, before the terminal's round_started, and the
    terminal records the card a moment later — a critical alert and its clearing at every round."""
    b = Baccarat(table_id="BAC-SK", seed=3)
    b.prepare("P-1")
    for _ in range(12):
        b.coup(bets=())
    evs = _on_a_skewed_floor(b, -1.2)
    between = [n for n, e in enumerate(evs) if e.type == "card_drawn" and evs[n + 1].type == "round_started"]
    assert len(between) >= 5                              # the case arises: a draw stamped before its round starts
    engine, log = _feed(evs)
    assert _provisional(log) == []
    assert engine.cards.counts == {"raised": 0, "confirmed": 0, "cleared": 0}
    assert _where(log, lambda x: _rule(x) in FINAL) == []


def test_a_shoe_clock_a_second_ahead_on_settled_rounds_raises_nothing():
    b = Baccarat(table_id="BAC-SA", seed=3)
    b.prepare("P-1")
    for _ in range(12):
        b.coup()                                          # two bets settled after the cards: the round ends 1.5 s on
    engine, log = _feed(_on_a_skewed_floor(b, 1.2))
    assert _provisional(log) == []


def test_a_card_drawn_between_rounds_and_hidden_is_still_alerted_before_the_rounds_end_under_skew():
    """The hidden draw is held by the skew allowance at the round's start (a clean shoe's first draw of the
    round looks the same), and alerted by the end of the round it was drawn into (here at round_ended: the
    terminal writes nothing else --skew past it); the final finding carries its id."""
    b = Baccarat(table_id="BAC-HS", seed=5)
    b.prepare("P-1")
    for _ in range(3):
        b.coup(bets=())
    b.draw()                                              # drawn, never recorded
    hidden_id = b.events[-1].event_id
    for _ in range(8):
        b.coup(bets=())
    evs = _on_a_skewed_floor(b, -1.2)
    hidden = next(n for n, e in enumerate(evs) if e.event_id == hidden_id and e.source == "shoe")
    end = next(n for n, e in enumerate(evs) if n > hidden and e.type == "round_ended")
    engine, log = _feed(evs)

    [(at, p)] = _where(log, lambda x: _rule(x) == PROVISIONAL)
    assert hidden < at <= end
    assert not [n for n, e in enumerate(evs[hidden:at], hidden) if e.source == "dealer" and e.type != "card_dealt"
                and e.ts >= evs[hidden].ts + 2_000_000]         # at the first terminal event --skew past it
    assert p["shoe_card"] == "??" and hidden_id in p["event_ids"]
    [(_n, final)] = _where(log, lambda x: _rule(x) in FINAL)
    assert final.rule_id == "UNACCOUNTED_CARD" and engine.provisional_of[final.finding_id] == p["finding_id"]
    assert _where(log, lambda x: _rule(x) == CLEARED) == []


def test_a_switched_card_with_both_streams_current_is_alerted_at_once_under_skew():
    b, original = switched_in_round_3("BAC-SW")
    switched = original.event_id
    evs = _on_a_skewed_floor(b, -1.2)
    dealt = next(n for n, e in enumerate(evs) if e.event_id == switched and e.source == "dealer")
    engine, log = _feed(evs)

    [(at, p)] = _where(log, lambda x: _rule(x) == PROVISIONAL)
    assert at == dealt                                    # the second of the two cards, the round on the felt
    [(_n, final)] = _where(log, lambda x: _rule(x) in FINAL)
    assert final.rule_id == "SHOE_CARD_MISMATCH" and engine.provisional_of[final.finding_id] == p["finding_id"]


# --- the lacking stream's open seq hole ---------------------------------------------------------------

def _through_the_gate(events, wait: float) -> list:
    """Each event offered to the real per-device order (``--gap-wait`` = ``wait``) then the engine, the
    arrival clock = the event's time: per offered event, its index, the alerts raised and the findings."""
    engine, gate = LiveEngine(GamingDayConfig()), DeviceOrder(wait=wait)
    log = []
    for n, ev in enumerate(events):
        now = ev.ts / 1e6
        released, _why = gate.offer(ev, str(n), Line(b"", "floor", n), now)
        found, raised, cleared = [], [], []
        for got, _line in released + gate.due(now):
            found += engine.feed(got, now)
            raised, cleared = raised + engine.raised, cleared + engine.cleared
        log.append((n, raised, cleared, found))
    return log


def _lost_first_draw_of(round_id: str, coups: int) -> tuple[list, int, int]:
    """A clean shoe game whose shoe lost (upstream) its first draw of ``round_id``: (events, the round's
    ``round_ended`` index, the index of the terminal's record of the lost card)."""
    b = Baccarat(table_id="BAC-G", seed=4)
    b.prepare("P-1")
    for _ in range(coups):
        b.coup(bets=())
    started = next(n for n, e in enumerate(b.events) if e.type == "round_started" and e.round_id == round_id)
    lost = next(n for n, e in enumerate(b.events) if n > started and e.type == "card_drawn")
    card = b.events[lost].card
    del b.events[lost]
    end = next(n for n, e in enumerate(b.events) if e.type == "round_ended" and e.round_id == round_id)
    dealt = next(n for n, e in enumerate(b.events) if n > lost - 1 and e.type == "card_dealt")
    assert b.events[dealt].card == card
    return b.events, end, dealt


def test_a_shoe_draw_lost_upstream_raises_nothing_while_its_hole_is_open_and_is_alerted_at_the_rounds_end():
    """--gap-wait 30: the shoe's lines after its hole are held through the round; the terminal's record
    of the lost card raises nothing then, the round's end does (a terminal card the shoe lacks), and the
    alert is cleared when the hole's wait runs out (the alignment reads the lost draw as an unknown card)."""
    evs, end, dealt = _lost_first_draw_of("R-3", coups=10)
    log = _through_the_gate(evs, wait=30.0)

    alerts = _provisional(log)
    assert [n for n, a in alerts if n < end] == []        # the hole open since the card: nothing in the round
    [(at, p)] = [(n, a) for n, a in alerts if _rule(a) == PROVISIONAL]
    assert at == end and p["terminal_card"] == evs[dealt].card and p["shoe_card"] is None
    [(cleared_at, c)] = [(n, a) for n, a in alerts if _rule(a) == CLEARED]
    assert evs[cleared_at].ts >= evs[dealt].ts + 30_000_000 - 2_000_000 and c["provisional_id"] == p["finding_id"]
    assert [f.rule_id for _n, _r, _c, found in log for f in found] == ["SEQ_GAP"]


def test_a_shoe_hole_closed_by_the_gap_wait_within_the_round_raises_nothing():
    evs, _end, _dealt = _lost_first_draw_of("R-3", coups=10)
    log = _through_the_gate(evs, wait=2.0)
    assert _provisional(log) == []
    assert [f.rule_id for _n, _r, _c, found in log for f in found] == ["SEQ_GAP"]


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
    alert, clearing = alert_records([p, c], engine.gaming_day, local=DisplayZones(ZoneInfo("America/Puerto_Rico")))
    assert alert["ts"].endswith("-04:00") and clearing["ts"].endswith("-04:00")
    assert alert_line(alert, 30)[:29] == alert_line(clearing, 30)[:29]   # the same date, time and offset
    utc = alert_records([p, c], engine.gaming_day)                        # without --local: both UTC
    assert utc[0]["ts"].endswith("Z") and utc[1]["ts"].endswith("Z")
    # a [display.tables] zone for the table: both there, whatever offset the devices wrote
    ny = alert_records([p, c], engine.gaming_day, local=DisplayZones(ZoneInfo("UTC"), {"BAC-TZ": "America/New_York"}))
    assert ny[0]["ts"].endswith("-05:00") and ny[1]["ts"].endswith("-05:00")


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
    w = start_watch(feeds, "--lake", tmp_path / "lake", "--no-lake-alerts", "--local", "--gap-wait", "0",
                    "--timezone", "America/Puerto_Rico")    # the lake's zone: the table's display zone
    append_lines(feeds, lines[:late])
    w.caught_up(late)
    append_lines(feeds, lines[late:])
    w.caught_up(len(lines))
    assert w.stop(signal.SIGTERM) == 0
    [p] = [a for a in w.provisional if a["rule_id"] == PROVISIONAL]
    [c] = [a for a in w.provisional if a["rule_id"] == CLEARED]
    assert c["provisional_id"] == p["finding_id"]
    assert p["ts"].endswith("-04:00") and c["ts"].endswith("-04:00"), (p["ts"], c["ts"])


# --- the option ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "-1", "61", "inf", "two"])
def test_a_skew_that_is_not_seconds_is_an_error_and_nothing_is_created(tmp_path, pitwatch, value):
    (tmp_path / "live").mkdir()
    got = pitwatch("watch", tmp_path / "live", "--lake", tmp_path / "lake", "--skew", value)
    assert got.returncode == 2
    [error] = [line for line in got.stderr.splitlines() if line.startswith("Error:")]
    assert "'--skew'" in error
    assert not (tmp_path / "lake").exists()
