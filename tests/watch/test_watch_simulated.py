"""Live alerts (the real command, a subprocess) are the batch's finding rows, every column, on a
simulated day with every kind of fault."""
from __future__ import annotations

import heapq
import json
import signal

import pytest

from tests.watch.conftest import append_lines


@pytest.mark.slow
def test_live_alerts_equal_the_batch_on_a_simulated_day_with_every_fault(tmp_path, start_watch):
    from pitwatch.simulator import SPECS, simulate
    from tests.watch.equivalence import assert_alerts_are_rows, batch

    feeds = tmp_path / "sim"
    simulate(feeds, tables={"baccarat": 1, "three_bet_poker": 1, "combate": 1, "stud": 1, "razz": 1},
             hours=1.5, seed=4, faults={name: 0.05 for name in SPECS}, workers=1)
    day_folders = sorted(str(d) for d in feeds.iterdir() if d.is_dir())
    # the cross-pack 10-card repeat included: live raises it at the card completing it (pitwatch.live.repeats)
    rows = batch(day_folders, tmp_path / "batch")
    assert len({dict(r)["rule_id"] for r in rows["findings"]}) >= 15

    # the devices' lines arrive as they were recorded, devices interleaved by time
    streams = []
    for path in sorted(feeds.glob("20*/*.jsonl")):
        streams.append([(json.loads(l)["ts"], path.stem, l) for l in path.read_text().splitlines()])
    order = [(dev, line) for _ts, dev, line in heapq.merge(*streams)]
    w = start_watch(tmp_path / "live", "--lake", tmp_path / "lake", "--finalize-at-stop", "--no-lake-alerts")
    append_lines(tmp_path / "live", order)
    w.caught_up(len(order))
    assert w.stop(signal.SIGTERM) == 0
    assert_alerts_are_rows(w.alerts, rows["findings"])
