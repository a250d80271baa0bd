"""Replay states saved by ``main`` at each earlier engine state version go on in this pitwatch.

``tests/data/state-v1-e586e4f-clean-floor.json.gz`` (engine state 1, ``main`` at e586e4f),
``tests/data/state-v1-clean-floor.json.gz`` (engine state 1, ``main`` at 5470725, before ids used
again; no watcher checkpoint in it: its driver states stand for one) and
``tests/data/state-v2-clean-floor.json.gz`` (engine state 2, ``main`` at 555ec7e, the last before the
typed records), the first and last written with ``tests/data/make_saved_states.py`` under that
checkout (how: its docstring) — the clean floor's first three fifths of
every table (in the batch's feed order) replayed through its driver, nightly (no close), rows
taken: the states a night leaves for the next; and the live engine's checkpoint of the same
instant (the table fragments and the rest of the engine's state, as ``checkpoint.json`` holds
them).  Loaded by this pitwatch (:func:`pitwatch.rules.migrations.migrate`, then the typed
records), the rest of the night gives exactly the findings and rows — whole rows — a replay of
the whole feed by this pitwatch gives after the cut, in the batch and in the watcher, also when
the rest uses the first part's pack and round ids again.
"""
from __future__ import annotations

import collections
import gzip
import json
import pathlib

import pytest

from pitwatch.engine.driver import TableDriver, feed_order
from pitwatch.live.engine import LiveEngine
from pitwatch.rules.finding import gaming_day_from_config
from pitwatch.rules.state import STATE_VERSION
from pitwatch.rules.table import TableReplay
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from tests.data import clean_floor_lines

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
#: commit -> (file, engine state version it wrote)
SAVED = {"e586e4f": ("state-v1-e586e4f-clean-floor.json.gz", 1), "5470725": ("state-v1-clean-floor.json.gz", 1),
         "555ec7e": ("state-v2-clean-floor.json.gz", 2)}
CFG = GamingDayConfig()
by_commit = pytest.mark.parametrize("commit", list(SAVED))
reuses = pytest.mark.parametrize("reuse", [False, True], ids=["same-ids", "ids-used-again"])


def _saved(commit: str = "555ec7e") -> dict:
    with gzip.open(DATA / SAVED[commit][0], "rt") as f:
        return json.load(f)


def _tables() -> dict:
    by = collections.defaultdict(list)
    for n, raw in enumerate(clean_floor_lines(), 1):
        ev, _ = decode_line(raw, "clean-floor-2h.jsonl", n, CFG)
        by[ev.table_id].append(ev)
    return {tid: list(feed_order(evs)) for tid, evs in by.items()}


def _rest(driver: TableDriver, events) -> tuple:
    findings = driver.feed_all(events) + driver.end_of_input()
    rows = driver.take_rows()
    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    return (sorted((f.to_row() for f in findings), key=key), sorted(rows.rounds, key=key),
            sorted(rows.packs, key=key), sorted(rows.sequences, key=key))


def _reusing(first, rest, state):
    """``rest`` with every pack and round id it names first renamed to the first part's ids, in
    order (the first part's oldest pack and round ids used again).  Only ids the version 1
    ``state`` remembers are used again: it kept the last 64 finished packs and rounds, this
    engine's streams remember 256 ids (pitwatch.rules.uses.KEEP_USES), and an id the old state forgot
    starts again at use 1 after the upgrade (pitwatch.rules.migrations.migrate).  Only ids of packs the
    shuffler reported are used again: the shuffler's next report of an id whose last use was
    shuffled at the table names the use after it (pitwatch.rules.table, "Ids used again",
    ``table_shuffled``), which version 1's finished-pack list cannot tell; the upgrade takes
    every finished pack as reported by the shuffler."""
    def ids(events, field):
        seen = []
        for e in events:
            v = getattr(e, field)
            if v is not None and v not in seen:
                seen.append(v)
        return seen

    out = rest
    reported = {e.pack_id for e in first if e.type == "shuffle_completed"}
    known = {"pack_id": set(state["done_packs"]) | set(state["packs"]),
             "round_id": set(state["done_rounds"]) | set(state["rounds"])}
    for field in ("pack_id", "round_id"):
        old = [v for v in ids(first, field) if v in known[field] and (field == "round_id" or v in reported)]
        new = [v for v in ids(rest, field) if v not in old]
        mapping = dict(zip(new, old))
        out = [e._replace(**{field: mapping[getattr(e, field)]}) if getattr(e, field) in mapping else e
               for e in out]
    return out


def _key(row) -> str:
    return json.dumps(row, sort_keys=True, default=str)


@by_commit
def test_the_fixture_is_a_state_main_wrote_at_that_commit(commit):
    saved, (name, version) = _saved(commit), SAVED[commit]
    assert saved["engine_state"] == version and saved["written_by"] == f"pitwatch main {commit}"
    states = saved["states"].values()
    assert all(s["v"] == version and ("uses" in s) == (version >= 2) for s in states)
    # the shapes version 3 changed: a pack's passes kept twice; every table has an open pack
    assert all(s["packs"] for s in states)
    assert any("shoe_done" in p for s in states for p in s["packs"].values())
    checkpoint = _checkpoint(saved)
    assert all(s["v"] == version for s in checkpoint[0].values())
    assert (DATA / name).stat().st_size < 100_000


@by_commit
@reuses
def test_a_night_on_a_saved_state_gives_the_rows_of_a_fresh_replay(commit, reuse):
    saved, tables = _saved(commit), _tables()
    gd = gaming_day_from_config(CFG)
    reused_any = 0
    for tid, order in sorted(tables.items()):
        first_id, k = saved["cut"][tid]
        assert order[k].event_id == first_id     # the same feed order as main's
        rest = _reusing(order[:k], order[k:], saved["states"][tid]) if reuse else order[k:]
        fresh = TableDriver(tid, gd)
        fresh.feed_all(order[:k])
        fresh.take_rows()
        want = _rest(fresh, rest)
        migrated = TableDriver(tid, gd, saved["states"][tid])
        assert migrated.replay.table.v == STATE_VERSION
        assert _rest(migrated, rest) == want, tid
        reused_any += sum(1 for r in want[2] if r["pack_use"] > 1) + sum(1 for r in want[1] if r["round_use"] > 1)
    assert reused_any > 0 if reuse else reused_any == 0


@by_commit
def test_a_migrated_state_saves_as_this_versions_state_and_reads_back_the_same(commit):
    saved = _saved(commit)
    for tid, state in saved["states"].items():
        rp = TableReplay.from_state(state)
        text = rp.state_json()
        again = TableReplay.from_state(text)
        assert json.loads(text)["v"] == STATE_VERSION and "shoe_done" not in text.decode()
        assert again.state() == rp.state(), tid


def _checkpoint(saved: dict) -> tuple[dict, dict]:
    """The watcher's checkpoint of the cut as ``LiveEngine.restore`` takes it: (tables, the engine's other
    state).  5470725's file predates the checkpoint in it: its driver states are the tables, with no other
    state (a checkpoint's tables are those states; its SEQ_GAP trackers start empty)."""
    if "checkpoint" not in saved:
        return saved["states"], {}
    return {tid: json.loads(text) for tid, text in saved["checkpoint"]["tables"].items()}, saved["checkpoint"]["engine"]


def _watch(engine: LiveEngine, events) -> tuple:
    rows = {"rounds": [], "packs": []}

    def on_rows(_table_id, got):
        rows["rounds"] += got.rounds
        rows["packs"] += got.packs

    engine.on_rows = on_rows
    found = [f for ev in events for f in engine.feed(ev)] + engine.finalize()
    return (sorted((_key(f.to_row()) for f in found)), sorted(map(_key, rows["rounds"])),
            sorted(map(_key, rows["packs"])))


@by_commit
@reuses
def test_a_watchers_checkpoint_goes_on_as_a_watcher_that_saw_everything(commit, reuse):
    saved, tables = _saved(commit), _tables()
    fresh, restored = LiveEngine(CFG), LiveEngine(CFG)
    rests = {}
    for tid, order in tables.items():
        k = saved["cut"][tid][1]
        for ev in order[:k]:
            fresh.feed(ev)
        rests[tid] = _reusing(order[:k], order[k:], saved["states"][tid]) if reuse else order[k:]
    restored.restore(*_checkpoint(saved))
    assert all(d.replay.table.v == STATE_VERSION for d in restored.tables.values())
    rest = [ev for tid in sorted(rests) for ev in rests[tid]]
    want = _watch(fresh, rest)
    assert _watch(restored, rest) == want
    assert want[1] and want[2]      # rows came: the comparison is not of two empty lists

