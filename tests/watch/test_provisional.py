"""Issue 30, items 1-2: card switches alerted while the round is on the felt (``CARD_DISAGREEMENT``,
live/provisional.py), and ``UNSHUFFLED_PACK`` at the pack's first card (live/early.py) — the batch's
findings unchanged."""
from __future__ import annotations

import io
import json
import re
import signal
from pathlib import Path

import pytest

from pitwatch.lake import Lake
from pitwatch.live.engine import LiveEngine
from pitwatch.rules.table import TableReplay
from pitwatch.schemas.decode import GamingDayConfig
from tests.data import clean_floor_lines
from tests.rules.stream import Baccarat
from tests.watch.conftest import append_lines
from tests.watch.floor_feed import FINAL, InputOrder, instant, late_provisionals, merged_lines

CARD = re.compile(r"(?<![A-Za-z0-9])[A2-9TJQK][cdhs](?![A-Za-z0-9])")


def _feed(events, now_of=None):
    """A LiveEngine fed ``events`` in order: per event its index, the provisional and clearing alerts,
    the findings; then the findings of finalize()."""
    engine = LiveEngine(GamingDayConfig())
    log = []
    for n, ev in enumerate(events):
        now = None if now_of is None else now_of(ev)
        found = engine.feed(ev, now)
        found += engine.due(now) if now is not None else []
        log.append((n, list(engine.raised), list(engine.cleared), found))
    closing = engine.finalize()
    log.append((len(events), list(engine.raised), list(engine.cleared), closing))
    return engine, log


def _batch(b: Baccarat) -> list:
    rp = TableReplay(b.table_id)
    out = []
    for ev in b.events:
        out += rp.feed(ev)
    return out + rp.close()


def _where(log, pred):
    return [(n, x) for n, raised, cleared, found in log for x in (*raised, *cleared, *found)
            if pred(x)]


def _rule(x):
    return x["rule_id"] if isinstance(x, dict) else x.rule_id


# --- the moment the streams disagree ------------------------------------------------------------

def switched_in_round_3(table_id: str) -> tuple[Baccarat, object]:
    """Twelve coups of one pack, the terminal recording another card than the shoe's for the first card
    of round R-3: the game and the event as it was before the switch."""
    b = Baccarat(table_id=table_id, seed=3)
    b.prepare("P-1")
    for _ in range(12):
        b.coup(bets=())
    k = next(n for n, e in enumerate(b.events) if e.type == "card_dealt" and e.round_id == "R-3")
    switched = b.events[k]
    b.events[k] = _with_card(switched)                      # the terminal records another card
    return b, switched


def test_a_switched_card_is_alerted_at_the_terminal_card_and_its_final_finding_carries_the_id():
    b, switched = switched_in_round_3("BAC-P")
    k = next(n for n, e in enumerate(b.events) if e.event_id == switched.event_id and e.source == "dealer")
    end = next(n for n, e in enumerate(b.events) if e.type == "round_ended" and e.round_id == "R-3")
    engine, log = _feed(b.events)

    [(at, p)] = _where(log, lambda x: _rule(x) == "CARD_DISAGREEMENT")
    assert at == k < end                                    # at the terminal's card, the round still open
    assert p["severity"] == "critical" and p["round_id"] == "R-3" and p["pack_id"] == "P-1"
    assert p["terminal_card"] == b.events[k].card and p["shoe_card"] == switched.card != p["terminal_card"]
    assert p["shoe_draw"] == p["terminal_place"]
    [(decided, final)] = _where(log, lambda x: _rule(x) in FINAL)
    assert decided > end                                     # the alignment waits for 7 more cards
    assert final.rule_id == "SHOE_CARD_MISMATCH" and switched.event_id in final.event_ids
    assert engine.provisional_of[final.finding_id] == p["provisional_id"] == p["finding_id"]
    assert _where(log, lambda x: _rule(x) == "CARD_DISAGREEMENT_CLEARED") == []
    assert engine.cards.counts == {"raised": 1, "confirmed": 1, "cleared": 0}
    batch = _batch(b)                                        # the batch's findings are unchanged
    assert [f for f in batch if f.rule_id in FINAL] == [final]


def test_a_card_drawn_between_rounds_and_never_recorded_is_alerted_a_skew_later_in_the_next_round_masked():
    """Not at the terminal's very next event (a shoe clock behind the terminal's stamps the next round's
    first draw before its round_started, tests/watch/test_provisional_gating.py): at the first terminal
    event at least --skew (2 s) after the draw, before the next round's end."""
    b = Baccarat(table_id="BAC-H", seed=5)
    b.prepare("P-1")
    for _ in range(3):
        b.coup(bets=())
    b.draw()                                                 # drawn, never recorded
    hidden = b.events[-1]
    for _ in range(8):
        b.coup(bets=())
    after = b.events.index(hidden)
    nxt = next(n for n, e in enumerate(b.events) if n > after and e.source == "dealer" and e.ts >= hidden.ts + 2e6)
    end = next(n for n, e in enumerate(b.events) if n > after and e.type == "round_ended")
    engine, log = _feed(b.events)

    [(at, p)] = _where(log, lambda x: _rule(x) == "CARD_DISAGREEMENT")
    assert at == nxt < end and b.events[at].type != "card_dealt"
    assert p["shoe_card"] == "??" and p["terminal_card"] is None and p["shoe_draw"] == hidden.index
    assert CARD.findall(p["expected"] + " " + p["actual"]) == []      # the undealt card is not shown
    assert hidden.event_id in p["event_ids"]
    [(_n, final)] = _where(log, lambda x: _rule(x) in FINAL)
    assert final.rule_id == "UNACCOUNTED_CARD" and engine.provisional_of[final.finding_id] == p["finding_id"]
    assert [f for f in _batch(b) if f.rule_id in FINAL] == [final]


def test_a_shoe_line_late_past_the_round_end_is_alerted_then_cleared_with_the_reason():
    """The shoe's stream runs behind: at R-2's round_ended the terminal has a card the shoe has not
    reported yet (provisional); the shoe's line then arrives and matches (cleared, not a finding)."""
    b = Baccarat(table_id="BAC-L", seed=9)
    b.prepare("P-1")
    for _ in range(4):
        b.coup(bets=())
    evs = b.events
    end = next(n for n, e in enumerate(evs) if e.type == "round_ended" and e.round_id == "R-2")
    last_dealt = max(n for n, e in enumerate(evs[:end]) if e.type == "card_dealt")
    late_from = max(n for n, e in enumerate(evs[:last_dealt]) if e.source == "shoe")   # its draw
    held = [e for n, e in enumerate(evs[:end + 1]) if n >= late_from and e.source == "shoe"]
    order = [e for e in evs[:end + 1] if e not in held] + held + evs[end + 1:]
    engine, log = _feed(order)

    [(at, p)] = _where(log, lambda x: _rule(x) == "CARD_DISAGREEMENT")
    assert order[at].type == "round_ended" and p["shoe_card"] is None and p["terminal_place"] is not None
    [(cleared_at, c)] = _where(log, lambda x: _rule(x) == "CARD_DISAGREEMENT_CLEARED")
    assert order[cleared_at] is held[0] and c["provisional_id"] == p["finding_id"] and c["severity"] == "info"
    assert "the shoe's draw came after all" in c["actual"] and f"card {p['terminal_place']} " in c["actual"]
    assert _where(log, lambda x: _rule(x) in FINAL) == [] == [f for f in _batch(b) if f.rule_id in FINAL]
    assert engine.cards.counts == {"raised": 1, "confirmed": 0, "cleared": 1}


def test_an_open_provisional_alert_survives_a_checkpoint_restore():
    """The open alert is in the engine's checkpoint state: a restarted engine links the final to it."""
    b = Baccarat(table_id="BAC-R", seed=4)
    b.prepare("P-1")
    for _ in range(10):
        b.coup(bets=())
    k = next(n for n, e in enumerate(b.events) if e.type == "card_dealt" and e.round_id == "R-2")
    b.events[k] = _with_card(b.events[k])
    first = LiveEngine(GamingDayConfig())
    for ev in b.events[:k + 1]:
        first.feed(ev)
    [p] = first.raised
    tables = {t: json.loads(s) for t, s in first.state_fragments().items()}
    other = json.loads(json.dumps(first.other_state()))
    again = LiveEngine(GamingDayConfig())
    again.restore(tables, other)
    found = []
    for ev in b.events[k + 1:]:
        found += again.feed(ev)
    found += again.finalize()
    [final] = [f for f in found if f.rule_id in FINAL]
    assert again.provisional_of[final.finding_id] == p["finding_id"]


def _with_card(ev):
    return ev._replace(card="Ks" if ev.card != "Ks" else "Kh")   # pitwatch.schemas.events.Event: a named tuple


# --- UNSHUFFLED_PACK at the first card ------------------------------------------------------------

def _unshuffled_second_pack(late_shuffle_s: float | None = None) -> Baccarat:
    b = Baccarat(table_id="BAC-U", seed=6)
    b.prepare("P-1")
    for _ in range(3):
        b.coup(bets=())
    b.empty()
    b.shuffle("P-2", shuffler=False, dealer=False)            # no shuffle recorded
    b.cut()
    b.load()
    b.burn()
    for _ in range(6):
        b.coup(bets=())
    if late_shuffle_s is not None:      # the shuffler's report, written late_shuffle_s after the first card
        report = b.shuffler("shuffle_completed", pack_id="P-2", decks=8, card_count=416, missing=[], extra=[],
                            preshuffled=False)
        b.events.pop()
        first = next(e for e in b.events if e.pack_id == "P-2" and e.type == "card_drawn")
        report = report._replace(ts=first.ts + int(late_shuffle_s * 1_000_000) + 1)
        b.events.insert(next(n for n, e in enumerate(b.events) if e.ts > report.ts), report)
    return b


def test_unshuffled_pack_is_raised_once_the_wait_after_its_first_card_ran_out_not_at_stop():
    """Arrival clock = the events' time (lines as they arrive live): the alert comes at the first
    line 5 s (the gap wait) after the pack's first card, is the batch's finding, and is not sent again
    at finalize."""
    b = _unshuffled_second_pack()
    engine, log = _feed(b.events, now_of=lambda ev: ev.ts / 1e6)
    [(at, f)] = _where(log, lambda x: _rule(x) == "UNSHUFFLED_PACK")
    first = next(n for n, e in enumerate(b.events) if e.pack_id == "P-2" and e.type in ("card_drawn", "card_dealt"))
    due = next(n for n, e in enumerate(b.events) if e.ts >= b.events[first].ts + 5_000_000)
    assert first < at <= due
    assert at < len(b.events)                                  # raised by a line, not by finalize()
    [batch] = [x for x in _batch(b) if x.rule_id == "UNSHUFFLED_PACK"]
    assert f == batch                                          # every column, the finding_id too


def test_a_shuffle_report_within_the_wait_raises_no_unshuffled_pack():
    b = _unshuffled_second_pack(late_shuffle_s=1.0)
    engine, log = _feed(b.events, now_of=lambda ev: ev.ts / 1e6)
    assert _where(log, lambda x: _rule(x) == "UNSHUFFLED_PACK") == []
    assert [x for x in _batch(b) if x.rule_id == "UNSHUFFLED_PACK"] == []


# --- a simulated day with every fault, lines as they arrive live ------------------------------------

def _simulate(folder: Path, seed: int, hours: float = 1.0):
    from pitwatch.simulator import SPECS, simulate

    card = ("SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD", "UNSHUFFLED_PACK", "UNSHUFFLED_SEQUENCE")
    simulate(folder, tables={"baccarat": 2, "three_bet_poker": 1, "combate": 1, "stud": 1}, hours=hours,
             seed=seed, faults={n: 0.2 if n in card else 0.05 for n in SPECS}, workers=1)
    return merged_lines(folder)


def _live(lines: list[str]) -> list[dict]:
    """The live components fed ``lines`` with the arrival clock = each line's time: every alert, each
    with the number of the line whose arrival raised it (``trigger.line``; None: at the end)."""
    from pitwatch.live.order import DeviceOrder
    from pitwatch.live.sources import Line
    from pitwatch.schemas.decode import Reject, decode_line

    config = GamingDayConfig()
    engine, gate = LiveEngine(config), DeviceOrder(wait=5.0)
    alerts = []

    def take(found, line_no):
        for a in engine.raised + engine.cleared:
            alerts.append({**a, "trigger": {"line": line_no}})
        for f in found:
            alerts.append({**f.to_row(), "evidence": [{"device_id": d, "event_id": e} for d, e in f.evidence],
                           "provisional_id": engine.provisional_of.get(f.finding_id), "trigger": {"line": line_no}})
        engine.raised, engine.cleared = [], []

    for n, raw in enumerate(lines, 1):
        now = instant(json.loads(raw)["ts"]).timestamp()
        out = decode_line(raw.encode(), "floor", n, config)
        if isinstance(out, Reject):
            continue
        released, _why = gate.offer(out[0], out[1], Line(raw.encode(), "floor", n), now)
        for ev, ln in released + gate.due(now):
            take(engine.feed(ev, now), ln.line)
        take(engine.due(now), n)
    for ev, ln in gate.due(everything=True):
        take(engine.feed(ev), ln.line)
    take(engine.finalize(), None)
    return alerts


def test_every_final_card_alert_had_its_provisional_in_the_round_and_unshuffled_packs_at_the_first_card(tmp_path):
    """The live components fed the merged lines with the arrival clock = each line's time: every final
    SHOE_CARD_MISMATCH / UNACCOUNTED_CARD had its CARD_DISAGREEMENT by its round's end; every
    UNSHUFFLED_PACK came by the first line 5 s after its pack's first card (and its evidence); every
    cross-pack repeat at the line of the card that completed it."""
    lines = _simulate(tmp_path / "sim", seed=7)
    order, alerts = InputOrder(lines), _live(lines)

    finals = [a for a in alerts if a["rule_id"] in FINAL]
    assert len(finals) >= 8 and {a["rule_id"] for a in finals} == set(FINAL)
    assert late_provisionals(alerts, order) == []
    # what the provisional alerts are for: several finals themselves came after their round's end
    assert sum(a["trigger"]["line"] is None or a["trigger"]["line"] > order.deadline(a) for a in finals) >= 3
    repeats = [a for a in alerts if a["rule_id"] == "UNSHUFFLED_SEQUENCE" and "an earlier pack" in a["expected"]]
    assert repeats
    for a in repeats:                                        # at the card completing the repeat
        assert a["trigger"]["line"] == max(order.line[(x["device_id"], x["event_id"])] for x in a["evidence"])
    unshuffled = [a for a in alerts if a["rule_id"] == "UNSHUFFLED_PACK"]
    assert len(unshuffled) >= 2
    ts = [instant(e["ts"]) for e in order.events]
    for a in unshuffled:
        ev_lines = sorted(order.line[(x["device_id"], x["event_id"])] for x in a["evidence"])
        start = ts[ev_lines[0] - 1]
        wait_over = next((n for n, t in enumerate(ts, 1) if (t - start).total_seconds() >= 5.0), len(ts))
        assert a["trigger"]["line"] is not None, a            # raised by a line, not at stop
        assert ev_lines[-1] <= a["trigger"]["line"] <= max(wait_over, ev_lines[-1]), (a, ev_lines, wait_over)


@pytest.mark.slow
def test_the_service_on_a_simulated_day_sends_provisional_alerts_in_the_round_and_the_batchs_finals(tmp_path):
    """The service class (real file, real loop, --with-trigger) over the merged lines of a day with every
    fault: the final card alerts are the batch's rows, each after a provisional alert raised by its
    round's end; the cleared ones are counted in the stop summary."""
    from pitwatch.live.service import WatchOptions, WatchService
    from tests.watch.equivalence import assert_alerts_are_rows, batch, without

    lines = _simulate(tmp_path / "sim", seed=11, hours=1.5)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "floor.jsonl").write_text("\n".join(lines) + "\n")
    out = io.BytesIO()
    svc = WatchService(WatchOptions(inputs=[str(tmp_path / "in")], lake=Lake.at(tmp_path / "lake"),
                                    state_dir=str(tmp_path / "st"), stop_after_idle=0.3, finalize_at_stop=True,
                                    lake_alerts=False, with_trigger=True, poll=0.01, checkpoint_every=3600),
                       stdout=out)
    summary = svc.run(install_signals=False)
    alerts = [json.loads(x) for x in out.getvalue().splitlines()]

    rows = batch(sorted(str(d) for d in (tmp_path / "sim").iterdir() if d.is_dir()), tmp_path / "batch")
    card_rows = without(rows, lambda f: f["rule_id"] in FINAL)["findings"]
    assert len(card_rows) >= 8
    assert_alerts_are_rows([a for a in alerts if a["rule_id"] in FINAL], card_rows)
    order = InputOrder(lines)
    assert late_provisionals(alerts, order) == []
    finals = [a for a in alerts if a["rule_id"] in FINAL]
    assert sum(a["trigger"]["line"] is None or a["trigger"]["line"] > order.deadline(a) for a in finals) >= 3
    provisional = [a for a in alerts if a["rule_id"] == "CARD_DISAGREEMENT"]
    cleared = [a for a in alerts if a["rule_id"] == "CARD_DISAGREEMENT_CLEARED"]
    assert summary["provisional"] == len(provisional) and summary["provisional_cleared"] == len(cleared)
    assert {c["provisional_id"] for c in cleared} <= {p["finding_id"] for p in provisional}
    confirmed = {a["provisional_id"] for a in alerts if a["rule_id"] in FINAL}
    assert not confirmed & {c["provisional_id"] for c in cleared}
    assert all(a.get("live_only") is True for a in provisional + cleared)


def test_a_shoe_reporting_each_card_after_the_terminal_raises_no_provisional_alert(tmp_path):
    """Found by bench/watch.py: the simulator's combate shoe reports a card ~1 s after the terminal
    recorded it, and its draw of the card before was taken for "the shoe moved past a card it lacks":
    ~1,000 CARD_DISAGREEMENT (each cleared at the next line) per hour of six clean combate tables.
    A clean simulated floor of every game, lines as they arrive: not one provisional alert."""
    from pitwatch.simulator import simulate

    simulate(tmp_path / "sim", tables={"baccarat": 1, "three_bet_poker": 1, "combate": 2, "stud": 1}, hours=1.0,
             seed=2, faults={}, workers=1)
    lines = merged_lines(tmp_path / "sim")
    ahead, dealt = 0, {}
    for e in map(json.loads, lines):    # the replayed input: the terminal two cards ahead of the shoe
        if e["type"] == "card_drawn":
            ahead += dealt.get((e["table_id"], e["pack_id"]), 0) > e["index"]
        elif e["type"] == "card_dealt" and e.get("pack_id"):
            dealt[e["table_id"], e["pack_id"]] = dealt.get((e["table_id"], e["pack_id"]), 0) + 1
    assert ahead > 20
    alerts = _live(lines)
    assert [a for a in alerts if a["rule_id"].startswith("CARD_DISAGREEMENT")] == []
    assert [a for a in alerts if a["rule_id"] in FINAL] == []


def test_a_clean_floor_raises_no_provisional_alert(tmp_path, start_watch):
    """The real command over the clean example floor, line by line: no alert at all, and the stop
    summary says 0 provisional (0 cleared)."""
    lines = [l.decode() for l in clean_floor_lines()]
    w = start_watch(tmp_path / "live", "--lake", tmp_path / "lake", "--no-lake-alerts", "--with-trigger")
    append_lines(tmp_path / "live", [("floor", l) for l in lines])
    w.caught_up(len(lines))
    assert w.stop(signal.SIGTERM) == 0
    assert w.alerts == []
    stopped = next(e for e in reversed(w.errors) if "stopped:" in e)
    assert "0 findings, 0 provisional (0 cleared)" in stopped


# --- the cross-pack repeat at the card that completes it --------------------------------------------

def test_a_pack_repeating_an_earlier_packs_order_is_alerted_at_its_tenth_repeated_card():
    """Pack P-2 is dealt in P-1's order (a pack re-used unshuffled): the cross-pack UNSHUFFLED_SEQUENCE
    comes at P-2's draw that completes 10 repeated cards, and is the batch's finding, every column."""
    from pitwatch.rules.repeated_runs import one_per_key, repeated_runs
    from tests.rules.stream import eight_decks

    b = Baccarat(table_id="BAC-X", seed=8)
    order = eight_decks(21)
    b.shuffle("P-1", cards=order)
    b.cut()
    b.load()
    b.burn()
    for _ in range(8):
        b.coup(bets=())
    b.empty()
    b.shuffle("P-2", cards=order)          # the shuffler and the dealer say "shuffled"; the order repeats
    b.cut()
    b.load()
    b.burn()
    for _ in range(6):
        b.coup(bets=())
    engine, log = _feed(b.events)
    [(at, f)] = _where(log, lambda x: _rule(x) == "UNSHUFFLED_SEQUENCE")
    tenth = [n for n, e in enumerate(b.events) if e.type == "card_drawn" and e.pack_id == "P-2"][9]
    assert at == tenth and f.pack_id == "P-2" and "repeat cards 1 to 10 of pack P-1" in f.actual

    rp = TableReplay(b.table_id)
    for ev in b.events:
        rp.feed(ev)
    within = [x for x in rp.close() if x.rule_id == "UNSHUFFLED_SEQUENCE"]
    batch = [x for x in one_per_key(within + repeated_runs(rp.drain_pack_sequences()))
             if x.rule_id == "UNSHUFFLED_SEQUENCE"]
    assert batch == [f]


def test_a_shoe_inventing_packs_keeps_the_early_wait_bounded():
    """A hostile shoe line per invented pack (drawn, never dealt, never shuffled): the packs waiting for
    the early UNSHUFFLED_PACK stay at most MAX_PENDING per table, and none is alerted (no terminal
    evidence: the batch's finding would name the terminal's first card too)."""
    from pitwatch.live.early import MAX_PENDING

    b = Baccarat(table_id="BAC-F", seed=2)
    for n in range(3 * MAX_PENDING):
        b.shoe("card_drawn", pack_id=f"FORGED-{n}", index=1, card="Ah")
    engine, log = _feed(b.events, now_of=lambda ev: ev.ts / 1e6)
    assert 0 < len(engine.early.pending["BAC-F"]) <= MAX_PENDING
    assert _where(log[:-1], lambda x: _rule(x) == "UNSHUFFLED_PACK") == []
