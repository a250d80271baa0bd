"""Replay states saved by ``main`` at each earlier engine state version go on in this pitwatch.

``tests/data/state-v1-e586e4f-clean-floor.json.gz`` (engine state 1, ``main`` at e586e4f) and
``tests/data/state-v2-clean-floor.json.gz`` (engine state 2, ``main`` at 555ec7e, the last before the
typed records), each written with ``tests/data/make_saved_states.py`` under that checkout (how:
its docstring) — the clean floor's first three fifths of
every table (in the batch's feed order) replayed through its driver, nightly (no close), rows
taken: the states a night leaves for the next; and the live engine's checkpoint of the same
instant (the table fragments and the rest of the engine's state, as ``checkpoint.json`` holds
them).  Loaded by this pitwatch (:func:`pitwatch.rules.migrations.migrate`, then the typed
records), the rest of the night gives exactly the findings and rows — whole rows — a replay of
the whole feed by this pitwatch gives after the cut, in the batch and in the watcher, also when
the rest uses the first part's pack and round ids again.
"""
from __future__ import annotations

import gzip
import json
import pathlib

import pytest

from pitwatch.engine.driver import TableDriver
from pitwatch.live.engine import LiveEngine
from pitwatch.rules.finding import gaming_day_from_config
from pitwatch.rules.state import STATE_VERSION
from pitwatch.rules.table import TableReplay
from pitwatch.schemas.decode import GamingDayConfig
from tests.pipelines.test_state_v1_migration import _rest, _reusing, _tables

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
#: commit -> (file, engine state version it wrote)
SAVED = {"e586e4f": ("state-v1-e586e4f-clean-floor.json.gz", 1), "555ec7e": ("state-v2-clean-floor.json.gz", 2)}
CFG = GamingDayConfig()
by_commit = pytest.mark.parametrize("commit", list(SAVED))
reuses = pytest.mark.parametrize("reuse", [False, True], ids=["same-ids", "ids-used-again"])


def _saved(commit: str = "555ec7e") -> dict:
    with gzip.open(DATA / SAVED[commit][0], "rt") as f:
        return json.load(f)


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
    assert all(json.loads(t)["v"] == version for t in saved["checkpoint"]["tables"].values())
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
    checkpoint = saved["checkpoint"]
    restored.restore({tid: json.loads(text) for tid, text in checkpoint["tables"].items()}, checkpoint["engine"])
    assert all(d.replay.table.v == STATE_VERSION for d in restored.tables.values())
    rest = [ev for tid in sorted(rests) for ev in rests[tid]]
    want = _watch(fresh, rest)
    assert _watch(restored, rest) == want
    assert want[1] and want[2]      # rows came: the comparison is not of two empty lists

