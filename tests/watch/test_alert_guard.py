"""Live alerts never show a shoe card beyond the last place of its pack the terminal has recorded
(live/redact.py), whatever the order the files are read in and whatever the shoe claims."""
from __future__ import annotations

import json
import re

from pitwatch.live.engine import LiveEngine
from pitwatch.live.redact import KEEP_PACKS, MASK, DealtGuard
from pitwatch.schemas.decode import GamingDayConfig
from tests.rules.stream import Baccarat, eight_decks, new_deck_pack

RUN = ["2h", "3h", "4h", "5h", "6h", "7h", "8h", "9h"]
CARD = re.compile(r"(?<![A-Za-z0-9])[A2-9TJQK][cdhs](?![A-Za-z0-9])")


class Witness:
    """Feeds a LiveEngine one event at a time and checks every alert against what the terminal has recorded
    at that moment, counted here independently of the guard (every test event names its pack)."""

    def __init__(self) -> None:
        self.engine = LiveEngine(GamingDayConfig())
        self.term: dict[str, int] = {}
        self.draws: dict[str, tuple[str, int]] = {}    # shoe card_drawn event_id -> (pack, index)
        self.alerts, self.raw, self.undealt_alerts = [], [], 0

    def feed(self, events) -> None:
        for ev in events:
            if ev.type == "card_dealt":
                self.term[ev.pack_id] = self.term.get(ev.pack_id, 0) + 1
            elif ev.type == "card_drawn":
                self.draws[ev.event_id] = (ev.pack_id, ev.index)
            for f in self.engine.feed(ev):
                alert = self.engine.alert_view(f)
                self.raw.append(f)
                self.alerts.append(alert)
                undealt = [e for e in f.event_ids if e in self.draws
                           and self.draws[e][1] > self.term.get(self.draws[e][0], 0)]
                if undealt:
                    self.undealt_alerts += 1
                    shown = CARD.findall(alert.expected + " " + alert.actual)
                    assert shown == [], f"{alert.rule_id} shows {shown} with undealt draws {undealt}: {alert.actual}"
                assert alert.finding_id == f.finding_id and alert.event_ids == f.event_ids


def _run_pack(b: Baccarat, pack_id: str, seed: int) -> None:
    """A pack whose cards 21-28 are RUN (new-deck order), dealt to card 40, then emptied."""
    b.shuffle(pack_id)
    deck = eight_decks(seed)
    for c in RUN:
        deck.remove(c)
    b.cards = deck[:20] + RUN + deck[20:]
    b.cut()
    b.load()
    b.burn()
    while b.pos < 40:
        b.coup(bets=())
    b.empty()


def test_mid_shift_start_the_shoe_file_read_first_and_table_opened_triggering_the_alerts():
    b = Baccarat()
    packs = KEEP_PACKS // 4 + 6   # more packs than the earlier guard kept (4): its first ones were shown
    for n in range(1, packs + 1):
        _run_pack(b, f"P-{n}", n)
    shoe = [e for e in b.events if e.source == "shoe"]
    others = [e for e in b.events if e.source != "shoe"]
    w = Witness()
    w.feed(shoe)                          # the shoe's file first: held until the game is known
    assert w.alerts == []
    w.feed(others[:1])                    # the terminal's table_opened releases them
    assert others[0].type == "table_opened"
    runs = [a for a in w.alerts if a.rule_id == "UNSHUFFLED_SEQUENCE"]
    assert len(runs) == packs and w.undealt_alerts == packs
    assert all(MASK in a.actual and not CARD.search(a.actual) for a in runs)
    assert all(all(c in f.actual for c in RUN) for f in w.raw)      # the engine's (the batch's) text is whole
    w.feed(others[1:])
    assert w.engine.guard.masked >= packs


def test_a_spurious_shoe_emptied_does_not_unmask_the_cards_the_terminal_never_recorded():
    b = Baccarat()
    b.prepare("P-1")
    for _ in range(3):
        b.coup(bets=())
    hidden = [b.draw() for _ in range(6)]     # drawn by the shoe, never recorded by the terminal
    b.empty()                                 # the shoe claims the pack is out: it is not "dealt"
    b.dealer("table_closed")                  # the terminal passes the pack: the draws are unaccounted
    w = Witness()
    w.feed(b.events)
    unaccounted = [a for a in w.alerts if a.rule_id == "UNACCOUNTED_CARD"]
    assert unaccounted and w.undealt_alerts == len(unaccounted)
    for a in unaccounted:
        assert not any(c in a.actual for c in hidden) and MASK in a.actual
    assert any(c in " ".join(f.actual for f in w.raw) for c in hidden)   # the engine names them; the alert not


def test_shoe_ahead_of_the_terminal_an_alert_naming_an_undealt_draw_names_no_card():
    b = new_deck_pack(RUN)
    shoe = [e for e in b.events if e.source == "shoe"]
    others = [e for e in b.events if e.source != "shoe"]
    run_end = next(e for e in shoe if e.type == "card_drawn" and e.card == RUN[-1] and e.index > 20)
    # the terminal is slow: it has dealt up to the run's 3rd card when the shoe draws the 8th
    dealt_before = next(i for i, e in enumerate(others) if e.type == "card_dealt" and e.card == RUN[2]) + 1
    w = Witness()
    w.feed(others[:dealt_before])
    w.feed(shoe[:shoe.index(run_end) + 1])
    live = [a for a in w.alerts if a.rule_id == "UNSHUFFLED_SEQUENCE"]
    assert len(live) == 1 and len(w.raw) == 1 and w.raw[0].finding_id == live[0].finding_id
    text = json.dumps([live[0].expected, live[0].actual])
    # 2h 3h 4h are dealt, but "2h 3h 4h ?? …" in new-deck order would tell the rest: no card is shown
    assert not CARD.search(text) and MASK in text
    assert all(c in w.raw[0].actual for c in RUN)            # the engine's own text (the batch's) is whole
    assert live[0].event_ids == w.raw[0].event_ids and w.engine.guard.masked == 1


def test_cards_already_dealt_are_not_masked_and_state_round_trips():
    b = new_deck_pack(RUN)
    w = Witness()
    # the terminal's stream ahead of the shoe's: every card named was dealt, nothing to hide
    w.feed([e for e in b.events if e.source != "shoe"] + [e for e in b.events if e.source == "shoe"])
    seq = [a for a in w.alerts if a.rule_id == "UNSHUFFLED_SEQUENCE"]
    assert seq and all(c in seq[0].actual for c in RUN) and w.engine.guard.masked == 0
    state = json.loads(json.dumps(w.engine.guard.state()))
    again = DealtGuard()
    again.restore(state)
    assert again.state() == w.engine.guard.state()


def test_a_pack_the_guard_let_go_is_masked_whole():
    b = new_deck_pack(RUN)
    w = Witness()
    w.feed([e for e in b.events if e.source != "shoe"] + [e for e in b.events if e.source == "shoe"])
    f = next(x for x in w.raw if x.rule_id == "UNSHUFFLED_SEQUENCE")
    guard = w.engine.guard
    assert guard.apply(f) is f                          # dealt: shown as it is
    guard.tables[f.table_id].packs.pop(f.pack_id)       # as if let go after KEEP_PACKS later packs
    shown = guard.apply(f)
    assert not CARD.search(shown.actual) and shown.finding_id == f.finding_id


def test_the_earlier_guard_state_is_read_and_its_finished_packs_count_as_unknown():
    old = {"BAC-T": {"round_pack": [["R-1", "P-1"]], "term_pack": "P-2", "term_last": "P-2",
                     "term_count": {"P-2": 3}, "done": ["P-1"], "draws": {"P-2": [["so-9", 5, "Kd"]]}}}
    g = DealtGuard()
    g.restore(old)
    t = g.tables["BAC-T"]
    assert "P-1" not in t.packs and t.packs["P-2"].term == 3 and t.packs["P-2"].undealt == {"so-9": (5, "Kd")}


def test_a_pack_id_used_again_counts_its_own_dealt_places():
    """Issue 36: P-1 dealt to card 40, its stub out, then a new pack named P-1 again whose shoe runs
    ahead of the terminal: the second pack's undealt draws are masked, though the first P-1's
    terminal recorded 40 places (a guard counting by the id alone would show them)."""
    b = Baccarat()
    _run_pack(b, "P-1", 1)
    first = len(b.events)
    _run_pack(b, "P-1", 2)
    again = b.events[first:]
    shoe = [e for e in again if e.source == "shoe"]
    others = [e for e in again if e.source != "shoe"]
    run_end = next(e for e in shoe if e.type == "card_drawn" and e.card == RUN[-1] and e.index > 20)
    dealt_before = next(i for i, e in enumerate(others) if e.type == "card_dealt" and e.card == RUN[2]) + 1
    w = Witness()
    w.feed(b.events[:first])
    w.term.clear()                       # the witness counts the second pack's places on their own
    w.feed(others[:dealt_before])
    w.feed(shoe[:shoe.index(run_end) + 1])
    live = [a for a in w.alerts if a.rule_id == "UNSHUFFLED_SEQUENCE" and a.pack_use == 2]
    assert len(live) == 1 and live[0].pack_id == "P-1" and w.undealt_alerts >= 1
    assert not CARD.search(live[0].actual) and MASK in live[0].actual
