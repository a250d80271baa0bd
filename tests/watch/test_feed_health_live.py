"""Feed health live: the live engine runs SHOE_SILENT as the batch does (same finding_id), once the
table is finalized (a silent shoe never passes its pack); rules/feed_health.py, docs/watch.md."""
from __future__ import annotations

from pipelines.replay import replay_table
from live.engine import LiveEngine
from schemas.decode import GamingDayConfig
from tests.rules.test_feed_health import two_packs


def test_shoe_silent_live_has_the_batch_finding_id():
    _b, events = two_packs()
    engine = LiveEngine(GamingDayConfig())
    live = [f for ev in events for f in engine.feed(ev)]
    assert "SHOE_SILENT" not in {f.rule_id for f in live}     # the shoe never passed the silent pack
    live += engine.finalize()
    _rp, batch = replay_table("BAC-T", events, GamingDayConfig())
    assert [f.finding_id for f in live if f.rule_id == "SHOE_SILENT"] == \
        [f.finding_id for f in batch if f.rule_id == "SHOE_SILENT"] != []
