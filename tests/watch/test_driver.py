"""The one driver around the engine (engine/driver.py): only it feeds TableReplay; one identity
and one conflict rule (per device_id, event_id) for the batch, live and Beam; bounded memory."""
from __future__ import annotations

import ast
import json
import random
import re
import tomllib
from pathlib import Path

import pytest

from pitwatch.engine.driver import CONFLICT, DUPLICATE, RECENT_WINDOW, STALE, DeviceGate, line_hash

ROOT = Path(__file__).resolve().parents[2]
# The engine itself (rules/), its unit tests and its own benchmark drive TableReplay directly by
# design; every product path goes through the driver: every package's folder (pyproject.toml) and bench/.
FOLDERS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
SCANNED = tuple(sorted({*FOLDERS.values(), "bench"} - {FOLDERS["pitwatch.rules"]}))
ENGINE_ITSELF = {"bench/engine.py"}
REPLAY_ONLY = {"drain_rounds", "drain_packs", "drain_pack_sequences"}   # TableReplay's row hand-out


# code held in strings (a benchmark's phases run with exec) is not in the syntax tree: read as text
CALL_TEXT = re.compile(r"\bTableReplay(\.from_state)?\(|\.(drain_rounds|drain_packs|drain_pack_sequences)\(|"
                       r"from rules\.table import[^\n]*\bTableReplay\b")


def _types_only(tree: ast.AST) -> set[ast.AST]:
    """The nodes that only name types: ``if TYPE_CHECKING:`` blocks and annotations (a module may
    say it takes a replay to read its views; it may not make or feed one)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            roots.extend(node.body)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {n for root in roots for n in ast.walk(root)}


def engine_callers(source: str) -> list[str]:
    """What in ``source`` reaches ``TableReplay`` or its row hand-out: ``name (line)``."""
    found = [f"{m.group(0)} (line {source.count(chr(10), 0, m.start()) + 1})" for m in CALL_TEXT.finditer(source)]
    tree = ast.parse(source)
    skip = _types_only(tree)
    for node in ast.walk(tree):
        if node in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "pitwatch.rules.table":
            found += [f"import {a.name} ({node.lineno})" for a in node.names if a.name in ("TableReplay", "*")]
        elif isinstance(node, ast.Import):
            found += [f"import {a.name} ({node.lineno})" for a in node.names if a.name == "pitwatch.rules.table"]
        elif isinstance(node, ast.Name) and node.id == "TableReplay":
            found.append(f"TableReplay ({node.lineno})")
        elif isinstance(node, ast.Attribute) and (node.attr == "TableReplay" or node.attr in REPLAY_ONLY):
            found.append(f".{node.attr} ({node.lineno})")
    return found


def test_the_scan_sees_a_second_driver():
    """The scanner itself: each way of reaching the engine past the driver is seen."""
    for snippet in ("from pitwatch.rules.table import TableReplay\nTableReplay('T').feed(ev)",
                    "import pitwatch.rules.table\nrules.table.TableReplay('T')",
                    "rp.drain_rounds()", "from pitwatch.rules.table import TableReplay as R", "from pitwatch.rules.table import *",
                    'PHASES = """\nrp = TableReplay(k)\nrp.drain_packs()\n"""'):
        assert engine_callers(snippet), snippet
    assert engine_callers("from pitwatch.rules.table import STATE_VERSION\ndriver.feed(ev)\nTableDriver('T', day)") == []
    types_only = ("if TYPE_CHECKING:\n    from pitwatch.rules.table import TableReplay\n"
                  "def before(table_id: str, replay: TableReplay) -> TableReplay | None:\n    return replay.pack('P')\n")
    assert engine_callers(types_only) == []
    assert "TableReplay (5)" in engine_callers(types_only + "TableReplay('T')\n")


def test_only_the_driver_feeds_table_replay():
    callers = {}
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in ENGINE_ITSELF or rel == "engine/driver.py":
                continue
            found = engine_callers(path.read_text())
            if found:
                callers[rel] = found
    assert callers == {}
    assert engine_callers((ROOT / "engine/driver.py").read_text())   # the driver does reach it


# --- one identity, one conflict rule ------------------------------------------------------------

def _line(**over) -> str:
    row = {"event_id": "E-1", "ts": "2026-11-28T20:00:00Z", "source": "shoe", "type": "card_drawn",
           "table_id": "BAC-1", "device_id": "SHOE-1", "seq": 1, "pack_id": "P-1", "index": 1, "card": "7h"}
    row.update(over)
    return json.dumps(row)


def _events_table(lines, path):
    from pitwatch.schemas.arrow import events_to_table
    from pitwatch.schemas.decode import GamingDayConfig, decode_line

    path.write_text("".join(line + "\n" for line in lines))
    return events_to_table([decode_line(line, str(path), i + 1, GamingDayConfig())[0] for i, line in enumerate(lines)])


def test_batch_dedup_one_event_id_on_two_devices_is_two_events(tmp_path):
    from pitwatch.pipelines.coders import pack
    from pitwatch.pipelines.ingest import deduplicate

    lines = [_line(), _line(device_id="SHOE-2"), _line(device_id="SHOE-2")]   # SHOE-2's is delivered twice
    out = deduplicate([pack(_events_table(lines, tmp_path / "a.jsonl"))], frozenset())
    assert sorted(out.events.column("device_id").to_pylist()) == ["SHOE-1", "SHOE-2"]
    assert out.duplicates == 1 and out.conflicts == []


def test_batch_conflict_within_a_device_rejects_every_copy_with_the_device_in_the_reason(tmp_path):
    from pitwatch.pipelines.coders import pack
    from pitwatch.pipelines.ingest import deduplicate

    lines = [_line(), _line(card="Ks"), _line(device_id="SHOE-2")]
    out = deduplicate([pack(_events_table(lines, tmp_path / "a.jsonl"))], frozenset())
    assert out.events.column("device_id").to_pylist() == ["SHOE-2"]
    assert [(c["device_id"], c["line"]) for c in out.conflicts] == [("SHOE-1", 1), ("SHOE-1", 2)]
    assert all("'SHOE-1'" in c["reason"] and "every copy is rejected" in c["reason"] for c in out.conflicts)


def test_the_gate_judges_per_pair_same_hash_duplicate_other_content_conflict():
    gate = DeviceGate()
    assert gate.admit("E-1", 1, line_hash("E-1", "a"), None) is None
    assert gate.admit("E-1", 1, line_hash("E-1", "a"), 1) == DUPLICATE
    assert gate.admit("E-1", 1, line_hash("E-1", "b"), 1) == CONFLICT
    assert gate.admit("E-1", 7, line_hash("E-1", "c"), 1) == CONFLICT       # same pair at another seq
    assert gate.admit("E-2", 2, line_hash("E-2", "a"), 1) is None


def test_live_order_two_devices_one_event_id_both_released_a_conflicting_copy_rejected():
    from pitwatch.live.order import DeviceOrder
    from pitwatch.live.sources import Line
    from pitwatch.schemas.decode import GamingDayConfig, decode_line

    order = DeviceOrder(wait=0)
    got = []
    for n, raw in enumerate([_line(), _line(device_id="SHOE-2"), _line(card="Ks"), _line(seq=2, event_id="E-2")], 1):
        ev, digest = decode_line(raw.encode(), "a.jsonl", n, GamingDayConfig())
        released, why = order.offer(ev, digest, Line(raw.encode(), "a.jsonl", n))
        got.append((ev.device_id, [e.event_id for e, _l in released], why))
    assert got == [("SHOE-1", ["E-1"], None), ("SHOE-2", ["E-1"], None), ("SHOE-1", [], CONFLICT),
                   ("SHOE-1", ["E-2"], None)]
    assert order.counts[CONFLICT] == 1


def test_live_memory_per_device_is_bounded_whatever_the_seq_jumps():
    """DeviceOrder.prune was never called: a device's remembered copies grew with every seq jump."""
    gate = DeviceGate()
    last = 0
    rng = random.Random(3)
    for n in range(20 * RECENT_WINDOW):
        last += rng.choice((1, 1, 2, 5, 300))                    # holes of every size
        assert gate.admit(f"E-{n}", last, line_hash(f"E-{n}", ""), last) is None
        assert len(gate.recent) <= 2 * RECENT_WINDOW
    assert gate.admit("E-old", last - RECENT_WINDOW, "h", last) == STALE


def test_live_a_silent_device_is_forgotten_one_holding_lines_is_not():
    from pitwatch.live.order import FORGET_AFTER, DeviceOrder
    from pitwatch.live.sources import Line
    from pitwatch.schemas.decode import GamingDayConfig, decode_line

    order = DeviceOrder(wait=60)
    for n, (dev, seq, file) in enumerate([("SHOE-1", 1, "a"), ("SHOE-2", 1, "a"), ("SHOE-2", 3, "b")], 1):
        raw = _line(device_id=dev, seq=seq, event_id=f"E-{seq}").encode()
        ev, digest = decode_line(raw, file, n, GamingDayConfig())
        order.offer(ev, digest, Line(raw, file, n), now=0.0)
    assert order.held == 1                                     # SHOE-2's seq 3, after a hole, second file
    assert order.forget_silent(now=FORGET_AFTER - 1) == 0
    assert order.forget_silent(now=FORGET_AFTER) == 1 and sorted(order.devices) == ["SHOE-2"]


# --- findings identified per device ---------------------------------------------------------------

def test_finding_id_hashes_device_event_pairs_and_rows_carry_the_evidence_column():
    from pitwatch.rules.finding import make_finding
    from pitwatch.rules.state import Ref
    from pitwatch.schemas.arrow import FINDINGS, rows_to_table

    def card(device):
        return make_finding("UNACCOUNTED_CARD", table_id="BAC-1", game="baccarat", key=(),
                            evidence=[Ref("E-1", 10, None, device)], expected="x", actual="y")

    a, b = card("SHOE-1"), card("SHOE-2")
    assert a.event_ids == b.event_ids == ("E-1",) and a.finding_id != b.finding_id
    row = rows_to_table([a.to_row()], FINDINGS).to_pylist()[0]
    assert row["evidence"] == [{"device_id": "SHOE-1", "event_id": "E-1"}]
    both = make_finding("SEQ_GAP", table_id="BAC-1", game=None, key=("D", 2, 2), expected="x", actual="y",
                        evidence=[Ref("E-1", 10, None, "SHOE-1"), Ref("E-1", 20, None, "SHOE-2")])
    assert both.evidence == (("SHOE-1", "E-1"), ("SHOE-2", "E-1")) and both.event_ids == ("E-1", "E-1")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_live_components_give_the_batch_drivers_rows_for_any_interleaving(scenario, seed):
    """The live engine and order, fed a random interleaving (each device in seq order), end with the
    rows the batch's driver call gives over the same events (no Beam: the engines, compared row for row)."""
    from pitwatch.live.engine import LiveEngine
    from pitwatch.live.order import DeviceOrder
    from pitwatch.live.sources import Line
    from pitwatch.pipelines.replay import replay_table
    from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line
    from tests.watch.equivalence import canon
    from tests.watch.scenario import interleave, plain_ids

    config = GamingDayConfig()
    devices = plain_ids(scenario)
    engine, order = LiveEngine(config), DeviceOrder(wait=0)
    rows = {"rounds": [], "packs": []}
    engine.on_rows = lambda _t, got: (rows["rounds"].extend(got.rounds), rows["packs"].extend(got.packs))
    live = []
    for n, (dev, raw) in enumerate(interleave(devices, seed)):
        out = decode_line(raw.encode(), dev, n, config)
        item, digest = (out, out.digest or "") if isinstance(out, Reject) else out
        if isinstance(out, Reject) and (out.device_id is None or out.seq is None):
            continue
        released, _why = order.offer(item, digest, Line(raw.encode(), dev, n))
        for ev, _line in released:
            live += engine.feed_reject(ev) if isinstance(ev, Reject) else engine.feed(ev)
    live += engine.finalize()

    accepted, seen = [], set()
    for dev, lines in devices.items():
        for n, raw in enumerate(lines):
            out = decode_line(raw.encode(), dev, n, config)
            if not isinstance(out, Reject) and (out[0].device_id, out[0].event_id) not in seen:
                seen.add((out[0].device_id, out[0].event_id))
                accepted.append(out[0])
    batch, batch_rows = [], {"rounds": [], "packs": []}
    for table_id in sorted({e.table_id for e in accepted}):
        driver, found = replay_table(table_id, [e for e in accepted if e.table_id == table_id], config)
        got = driver.take_rows()
        batch += found
        batch_rows["rounds"] += got.rounds
        batch_rows["packs"] += got.packs
    table_findings = [f for f in live if f.rule_id != "SEQ_GAP"]
    assert canon("findings", [f.to_row() for f in table_findings]) == canon("findings", [f.to_row() for f in batch])
    assert {f.rule_id for f in live} >= {"SEQ_GAP", "SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD", "UNSHUFFLED_PACK"}
    for name in ("rounds", "packs"):
        assert canon(name, rows[name]) == canon(name, batch_rows[name]) != []


# --- the gap rule (issue 28): a jump waits, then is a hole whose late lines are still replayed ------

def _offer(order, seq, n, now, event_id=None, file="a.jsonl"):
    from pitwatch.live.sources import Line
    from pitwatch.schemas.decode import GamingDayConfig, decode_line

    raw = _line(seq=seq, event_id=event_id or f"E-{seq}").encode()
    ev, digest = decode_line(raw, file, n, GamingDayConfig())
    released, why = order.offer(ev, digest, Line(raw, file, n), now=now)
    return [e.seq for e, _l in released], why


def test_gap_rule_a_jump_waits_then_its_hole_takes_late_lines_and_survives_a_restart():
    from pitwatch.engine.driver import LATE
    from pitwatch.live.order import DeviceOrder

    order = DeviceOrder(wait=5.0)
    assert [_offer(order, s, s, 0.0) for s in (1, 2)] == [([1], None), ([2], None)]
    assert _offer(order, 1002, 3, 0.0) == ([], None)            # one file: it waits all the same
    assert _offer(order, 3, 4, 1.0) == ([3], None)              # within the wait: in order
    assert order.due(now=4.9) == []
    assert [e.seq for e, _l in order.due(now=5.0)] == [1002]    # the wait ran out: the hole is lost
    assert order.devices["SHOE-1"].gate.holes == [[4, 1001]]
    state = order.state_json()
    again = DeviceOrder(wait=5.0)
    again.restore(json.loads(state), lambda raw, f, n: None)
    assert again.devices["SHOE-1"].gate.holes == [[4, 1001]]
    assert [_offer(again, s, 10 + s, 9.0) for s in (4, 5)] == [([4], LATE), ([5], LATE)]   # replayed
    assert _offer(again, 4, 20, 9.0) == ([], DUPLICATE)          # a second copy of a late line
    assert _offer(again, 4, 21, 9.0, event_id="E-other") == ([], STALE)   # released seq, other id
    assert again.devices["SHOE-1"].gate.holes == [[6, 1001]]
    assert again.counts[LATE] == 2 and again.counts[STALE] == 1


def test_gap_rule_holes_are_bounded_the_oldest_forgotten_first():
    from pitwatch.engine.driver import MAX_HOLES

    gate = DeviceGate()
    last = 0
    for _ in range(MAX_HOLES + 10):
        gate.advance(last, last + 3)                               # a hole of 2 seqs each time
        last += 3
    assert len(gate.holes) == MAX_HOLES
    assert gate.holes[0] == [10 * 3 + 1, 10 * 3 + 2]
    assert gate.admit("E-first-hole", 1, "h", last) == STALE       # too old: forgotten
    assert gate.admit("E-kept-hole", gate.holes[0][0], "h", last) is None
