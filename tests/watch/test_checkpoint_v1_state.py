"""A live checkpoint written before ids used again (its tables' engine state version 1) is taken
up by this watcher: each table's state is migrated as it is restored (pitwatch.rules.table.migrate_state,
through pitwatch.engine.driver.TableDriver), and the rest of the feed gives the findings and rows a
watcher that saw the whole feed gives.  The states: ``tests/data/state-v1-clean-floor.json.gz``
(written by main's driver, see tests/pipelines/test_state_v1_migration.py)."""
from __future__ import annotations

import json

from pitwatch.live.engine import LiveEngine
from pitwatch.rules.state import STATE_VERSION
from pitwatch.schemas.decode import GamingDayConfig
from tests.pipelines.test_state_v1_migration import _reusing, _saved, _tables


def _rest(engine: LiveEngine, events) -> tuple:
    rows = {"rounds": [], "packs": []}

    def on_rows(_table_id, got):
        rows["rounds"] += got.rounds
        rows["packs"] += got.packs

    engine.on_rows = on_rows
    found = [f for ev in events for f in engine.feed(ev)] + engine.finalize()
    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    return (sorted(f.finding_id for f in found), sorted(map(key, rows["rounds"])), sorted(map(key, rows["packs"])))


def test_a_checkpoint_of_version_1_states_goes_on_as_a_watcher_that_saw_everything():
    saved, tables = _saved(), _tables()
    for reuse in (False, True):
        fresh, restored = LiveEngine(GamingDayConfig()), LiveEngine(GamingDayConfig())
        rests = {}
        for tid, order in tables.items():
            k = saved["cut"][tid][1]
            for ev in order[:k]:
                fresh.feed(ev)
            rests[tid] = _reusing(order[:k], order[k:], saved["states"][tid]) if reuse else order[k:]
        restored.restore(saved["states"], {})
        assert all(d.replay.table.v == STATE_VERSION for d in restored.tables.values())
        rest = [ev for tid in sorted(rests) for ev in rests[tid]]
        assert _rest(restored, rest) == _rest(fresh, rest), reuse
