"""The engine as a whole: catalogue, findings, state, the clean floor, and order independence."""
from __future__ import annotations

import collections
import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pitwatch.rules.catalog import RULES, rule, rule_rows
from pitwatch.rules.finding import default_gaming_day, make_finding
from pitwatch.rules.state import Ref
from pitwatch.schemas.arrow import FINDINGS, PACKS, ROUNDS, rows_to_table
from pitwatch.schemas.arrow import RULES as RULES_SCHEMA
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from tests.data import RULES_MD, clean_floor_lines
from tests.rules.stream import Baccarat, replay


def test_catalog_holds_every_rule_of_rules_md():
    spec = RULES_MD
    ids = set(re.findall(r"^\| `([A-Z_0-9]+)` \|", spec.read_text(), re.M))
    assert ids and ids == {r.rule_id for r in RULES}
    sev = dict(re.findall(r"^\| `([A-Z_0-9]+)` \| (critical|major|minor|info) \|", spec.read_text(), re.M))
    assert all(rule(i).severity == s for i, s in sev.items())
    assert rows_to_table(rule_rows(), RULES_SCHEMA).num_rows == len(RULES)


def test_finding_id_and_ts_come_from_the_evidence_not_its_order():
    a = make_finding("SEQ_GAP", table_id="T", game=None, key=("D", 3, 4), evidence=[Ref("e2", 20, None), Ref("e1", 10, "D-1")],
                     expected="x", actual="y", device_id="D")
    b = make_finding("SEQ_GAP", table_id="T", game=None, key=("D", 3, 4), evidence=[Ref("e1", 10, "D-1"), Ref("e2", 20, None)],
                     expected="x", actual="y", device_id="D")
    assert a == b and a.ts == 20 and a.event_ids == ("e1", "e2") and a.dealer_id == "D-1"
    assert a.gaming_day == default_gaming_day(20)
    table = rows_to_table([a.to_row()], FINDINGS)
    assert table.num_rows == 1 and table.column("ts").type.tz == "UTC"


def _clean_tables():
    cfg = GamingDayConfig()
    by = collections.defaultdict(list)
    for n, raw in enumerate(clean_floor_lines(), 1):
        ev, _digest = decode_line(raw, "clean-floor-2h.jsonl", n, cfg)
        by[ev.table_id].append(ev)
    return by


def _replay(table_id, events, checkpoint_every=0):
    findings, rounds, packs, _rejects = replay(events, table_id, checkpoint_every)
    return findings, rounds, packs


def test_clean_floor_raises_no_finding():
    for table_id, events in _clean_tables().items():
        findings, rounds, packs = _replay(table_id, events)
        assert findings == [], (table_id, [(f.rule_id, f.actual) for f in findings[:5]])
        assert rows_to_table(rounds, ROUNDS).num_rows == len({e.round_id for e in events if e.type == "round_started"})
        assert rows_to_table(packs, PACKS).num_rows > 0
        assert all(r["undecided"] == [] for r in rounds)


def _merge(events, rng: random.Random):
    """A random interleaving that keeps every device's own order."""
    queues = collections.OrderedDict()
    for ev in events:
        queues.setdefault(ev.device_id, collections.deque()).append(ev)
    out = []
    while queues:
        dev = rng.choice(sorted(queues))
        out.append(queues[dev].popleft())
        if not queues[dev]:
            del queues[dev]
    return out


def test_clean_floor_in_another_interleaving_with_checkpoints():
    for table_id, events in _clean_tables().items():
        base = _replay(table_id, events)
        shuffled = _replay(table_id, _merge(events, random.Random(table_id)), checkpoint_every=997)
        assert shuffled == base, table_id


def faulty_shoe() -> Baccarat:
    """Two packs with one fault of each cross-stream kind."""
    b = Baccarat(seats=(2, 3, 6))
    b.shuffle(preshuffled=True, dealer=False)
    b.dealer("riffle_requested", by="seat:6")
    b.cut(from_back=380)              # cutting card after card 36
    b.cut_at = 38                     # ... but the shoe finds it after 38
    b.load(415)                       # the shoe counts one card short
    b.burn()
    for _ in range(3):
        b.coup()
    b.draw()                          # a card the terminal never records
    b.coup()
    b.shoe_misses = 1                 # a card the shoe never reads
    b.coup()
    for _ in range(3):
        b.coup()
    b.coup()                          # the coup of the cutting card: no announcement follows
    b.coup()
    b.coup()                          # one coup too many
    b.empty()
    b.shuffle("P-2", dealer=True)
    b.cut(by="seat:3", offers=("seat:3",))
    b.load()
    b.burn(face_down=2)
    b.coup()
    b.coup(payouts={(3, "banker"): ("win", 100)})
    i, changed = [(i, e) for i, e in enumerate(b.events) if e.type == "card_dealt" and e.round_id == "R-13"][0]
    b.events[i] = changed._replace(card="Kh" if changed.card != "Kh" else "Ks")
    return b


def test_faulty_shoe_raises_each_fault_once():
    b = faulty_shoe()
    findings, _rounds, _packs = _replay(b.table_id, b.events)
    got = collections.Counter(f.rule_id for f in findings)
    for rule_id in ("RIFFLE_SKIPPED", "PACK_COMPOSITION", "UNACCOUNTED_CARD", "CUT_CARD_MISMATCH",
                    "CUT_OFFER", "BURN_COUNT", "SHOE_CARD_MISMATCH"):
        assert got[rule_id] >= 1, (rule_id, got)
    assert got["UNACCOUNTED_CARD"] == 2


FAULTY = faulty_shoe()
FAULTY_BASE = _replay(FAULTY.table_id, FAULTY.events)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), every=st.sampled_from([0, 37, 101]))
def test_any_per_device_interleaving_gives_the_same_findings_and_rows(seed, every):
    events = _merge(FAULTY.events, random.Random(seed))
    assert _replay(FAULTY.table_id, events, checkpoint_every=every) == FAULTY_BASE
