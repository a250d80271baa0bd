"""Write the replay states a pitwatch checkout saves, for the migration tests (run under that checkout).

    git worktree add /tmp/old <commit> && cd /tmp/old && python3 -m venv .venv && PITWATCH_PURE=1 .venv/bin/pip install -e .
    .venv/bin/python /path/to/this/file OUT.json.gz

What it writes is what a night of that pitwatch leaves for the next, for each table of the clean
floor (``tests/data/clean-floor-2h.jsonl.gz``): the first three fifths of the table's events in the
batch's feed order, replayed through its driver, nightly (no close), rows taken — ``states``
(table → ``TableDriver.state()``), ``cut`` (table → the first event of the rest and its position),
``engine_state`` (its ``STATE_VERSION``) and ``written_by``.  Also, under ``checkpoint``, a watcher's
checkpoint of the same instant: the live engine's table fragments and other state as the service's
``checkpoint.json`` holds them (``tables``: table → the fragment's JSON text; ``engine``).

It uses only what every version since e586e4f has (then in top-level packages: ``pipelines.driver`` …):
``TableDriver``, ``feed_order``, ``decode_line``, ``GamingDayConfig`` and, for the checkpoint, ``LiveEngine``.
"""
from __future__ import annotations

import collections
import gzip
import json
import subprocess
import sys

try:
    from pitwatch.engine.driver import TableDriver, feed_order
    from pitwatch.live.engine import LiveEngine
    from pitwatch.rules.finding import gaming_day_from_config
    from pitwatch.schemas.decode import GamingDayConfig, decode_line
except ImportError:     # a checkout before the one pitwatch package (e586e4f: top-level packages)
    from pipelines.driver import TableDriver, feed_order

    from live.engine import LiveEngine
    from rules.finding import gaming_day_from_config
    from schemas.decode import GamingDayConfig, decode_line

try:
    from pitwatch.rules.state import STATE_VERSION
except ImportError:     # a checkout before the typed records
    try:
        from pitwatch.rules.table import STATE_VERSION
    except ImportError:
        from rules.table import STATE_VERSION


def clean_floor_lines():
    with gzip.open("tests/data/clean-floor-2h.jsonl.gz", "rb") as f:
        return f.read().splitlines()


def main(out: str) -> None:
    cfg = GamingDayConfig()
    by = collections.defaultdict(list)
    for n, raw in enumerate(clean_floor_lines(), 1):
        ev, _ = decode_line(raw, "clean-floor-2h.jsonl", n, cfg)
        by[ev.table_id].append(ev)
    states, cut = {}, {}
    live = LiveEngine(cfg)
    for tid, evs in sorted(by.items()):
        order = list(feed_order(evs))
        k = len(order) * 3 // 5
        driver = TableDriver(tid, gaming_day_from_config(cfg))
        driver.feed_all(order[:k])
        driver.take_rows()
        states[tid] = driver.state()
        cut[tid] = [order[k].event_id, k]
        for ev in order[:k]:
            live.feed(ev)
    fragments = {tid: (frag.decode() if isinstance(frag, bytes) else frag)
                 for tid, frag in live.state_fragments().items()}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    doc = {"written_by": f"pitwatch main {commit}", "engine_state": STATE_VERSION, "cut": cut, "states": states,
           "checkpoint": {"tables": fragments, "engine": live.other_state()}}
    with gzip.open(out, "wt") as f:
        json.dump(doc, f, sort_keys=True, default=str)


if __name__ == "__main__":
    main(sys.argv[1])
