"""A checkpoint's snapshot taken a little at a time (live/snapshot.py): the bytes it gives are the
state at its instant, whatever changed, appeared or went while it was being taken.

Found by bench/watch.py: serialising 400 tables and 1,300 devices at once stalled the loop
170-300 ms every checkpoint (the alert latency's p99)."""
from __future__ import annotations

import json
import random

import orjson

from live.engine import LiveEngine
from live.order import DeviceOrder
from live.snapshot import Fragments
from live.sources import Line
from schemas.decode import GamingDayConfig, Reject, decode_line
from tests.watch.floor_feed import instant, merged_lines


def test_fragments_give_the_instants_bytes_whatever_changes_after_it():
    things = {f"k{i}": {"n": i, "xs": []} for i in range(50)}
    frags = Fragments(lambda k: orjson.dumps(things[k]))
    frags.begin(things)
    frags.finish()
    rng = random.Random(5)
    for i in rng.sample(range(50), 20):                 # changed before the instant
        frags.touch(f"k{i}")
        things[f"k{i}"]["xs"].append("before")
    things["k50"] = {"n": 50, "xs": []}                 # made before the instant
    frags.touch("k50")
    instant = {k: orjson.dumps(v) for k, v in things.items()}
    frags.begin(things)
    assert frags.pending                                 # nothing serialised at the instant itself
    for step in range(200):                              # one key per turn, changes in between
        frags.advance(0.0)
        k = f"k{rng.randrange(52)}"
        if k in things and rng.random() < 0.3:
            frags.forget(k)
            del things[k]                                # gone after the instant
        elif k in things:
            frags.touch(k)
            things[k]["xs"].append(step)
        else:
            frags.touch(k)
            things[k] = {"new": step, "xs": []}          # made after the instant: not in it
    assert frags.finish() == instant
    again = {k: orjson.dumps(v) for k, v in things.items()}
    frags.begin(things)
    assert frags.finish() == again                       # the next snapshot: today's state


def _floor(tmp_path):
    from simulator import SPECS, simulate

    simulate(tmp_path / "sim", tables={"baccarat": 2, "combate": 1, "stud": 1}, hours=0.5, seed=4,
             faults={n: 0.05 for n in SPECS}, workers=1)
    return merged_lines(tmp_path / "sim")


def test_the_engine_and_order_snapshot_taken_over_many_lines_is_the_state_at_its_instant(tmp_path):
    lines = _floor(tmp_path)
    config = GamingDayConfig()
    engine, order = LiveEngine(config), DeviceOrder(wait=5.0)

    def feed(n, raw):
        now = instant(json.loads(raw)["ts"]).timestamp()
        out = decode_line(raw.encode(), "floor", n, config)
        if isinstance(out, Reject):
            return
        released, _why = order.offer(out[0], out[1], Line(raw.encode(), "floor", n), now)
        for ev, _ln in released + order.due(now):
            engine.feed(ev, now)

    cut = len(lines) // 2
    for n, raw in enumerate(lines[:cut], 1):
        feed(n, raw)
    tables_then = {t: d.state_json() for t, d in engine.tables.items()}
    order_then = {"counts": dict(order.counts),          # the whole state at the instant ...
                  "devices": {k: json.loads(order._device_json(k)) for k in order.devices}}
    engine.snapshot.begin(engine.tables)                 # ... and the one taken over the next lines
    order.begin_snapshot()
    assert engine.snapshot.pending and order.snapshot.pending
    for n, raw in enumerate(lines[cut:cut + 3000], cut + 1):
        feed(n, raw)
        engine.snapshot.advance(0.0)                     # one table and one device per line at most
        order.snapshot.advance(0.0)
    assert engine.snapshot.finish() == tables_then
    assert json.loads(order.snapshot_json()) == order_then
    assert engine.tables.keys() == tables_then.keys() and any(   # the tables did change meanwhile
        engine.tables[t].state_json() != tables_then[t] for t in tables_then)
