"""Live alerts never show a shoe card the terminal has not dealt yet (pipelines/watch/redact.py)."""
from __future__ import annotations

import json

from pipelines.watch.engine import LiveEngine
from schemas.decode import GamingDayConfig
from tests.rules.stream import new_deck_pack

RUN = ["2h", "3h", "4h", "5h", "6h", "7h", "8h", "9h"]


def test_shoe_ahead_of_the_terminal_masks_the_cards_not_dealt_yet():
    b = new_deck_pack(RUN)
    shoe = [e for e in b.events if e.source == "shoe"]
    others = [e for e in b.events if e.source != "shoe"]
    run_end = next(e for e in shoe if e.type == "card_drawn" and e.card == RUN[-1] and e.index > 20)
    engine = LiveEngine(GamingDayConfig())
    # the terminal is slow: it has dealt up to the run's 3rd card when the shoe draws the 8th
    dealt_before = next(i for i, e in enumerate(others) if e.type == "card_dealt" and e.card == RUN[2]) + 1
    alerts = []
    for ev in others[:dealt_before]:
        alerts += [engine.alert_view(f) for f in engine.feed(ev)]
    raw = []
    for ev in shoe[:shoe.index(run_end) + 1]:
        found = engine.feed(ev)
        raw += found
        alerts += [engine.alert_view(f) for f in found]
    live = [a for a in alerts if a.rule_id == "UNSHUFFLED_SEQUENCE"]
    assert len(live) == 1 and len(raw) == 1 and raw[0].finding_id == live[0].finding_id
    text = json.dumps([live[0].expected, live[0].actual])
    assert all(c not in text for c in RUN[3:])            # not dealt yet: masked
    assert all(c in text for c in RUN[:3])                # dealt: shown
    assert all(c in raw[0].actual for c in RUN)            # the engine's own text (the batch's) is whole
    assert live[0].event_ids == raw[0].event_ids and engine.guard.masked == 1


def test_cards_already_dealt_are_not_masked_and_state_round_trips():
    b = new_deck_pack(RUN)
    engine = LiveEngine(GamingDayConfig())
    out = []
    # the terminal's stream ahead of the shoe's: every card named was dealt, nothing to hide
    for ev in [e for e in b.events if e.source != "shoe"] + [e for e in b.events if e.source == "shoe"]:
        out += [engine.alert_view(f) for f in engine.feed(ev)]
    seq = [a for a in out if a.rule_id == "UNSHUFFLED_SEQUENCE"]
    assert seq and all(c in seq[0].actual for c in RUN) and engine.guard.masked == 0
    state = json.loads(json.dumps(engine.guard.state()))
    again = LiveEngine(GamingDayConfig())
    again.guard.restore(state)
    assert again.guard.state() == engine.guard.state()
