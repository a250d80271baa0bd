"""Live alerts equal the batch's findings on a simulated day with every kind of fault."""
from __future__ import annotations

import heapq
import json
import signal

from tests.watch.conftest import append_lines


def test_live_alerts_equal_the_batch_on_a_simulated_day_with_every_fault(tmp_path, start_watch):
    from pipelines.batch import run_batch
    from pipelines.simulate import SPECS, simulate
    from pipelines.truth import lake_findings

    feeds = tmp_path / "sim"
    simulate(feeds, tables={"baccarat": 1, "three_bet_poker": 1, "combate": 1, "stud": 1, "razz": 1},
             hours=1.5, seed=4, faults={name: 0.05 for name in SPECS}, workers=1)
    day_folders = sorted(str(d) for d in feeds.iterdir() if d.is_dir())
    run_batch(day_folders, str(tmp_path / "batch"))
    # the cross-pack 10-card repeat needs every pack of the night: the batch decides it
    batch = {f["finding_id"]: f["rule_id"] for f in lake_findings(str(tmp_path / "batch"))
             if not (f["rule_id"] == "UNSHUFFLED_SEQUENCE" and "of pack" in f["actual"])}
    assert len(set(batch.values())) >= 15

    # the devices' lines arrive as they were recorded, devices interleaved by time
    streams = []
    for path in sorted(feeds.glob("20*/*.jsonl")):
        streams.append([(json.loads(l)["ts"], path.stem, l) for l in path.read_text().splitlines()])
    order = [(dev, line) for _ts, dev, line in heapq.merge(*streams)]
    w = start_watch(tmp_path / "live", "--lake", tmp_path / "lake", "--finalize-at-stop", "--no-lake-alerts")
    append_lines(tmp_path / "live", order)
    w.caught_up(len(order))
    assert w.stop(signal.SIGTERM) == 0
    live = {a["finding_id"]: a["rule_id"] for a in w.alerts}
    assert sorted(live.items()) == sorted(batch.items())
