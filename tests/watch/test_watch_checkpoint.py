"""The checkpoint written in the background while alerts go on, then ``kill -9``: nothing lost, nothing twice.

The writer thread is held at a gate (``PITWATCH_CHECKPOINT_GATE``, a test seam of
:class:`pitwatch.live.checkpoint.CheckpointWriter`): write *k* creates ``waiting-<k>``
and waits for ``go-<k>``, then creates ``done-<k>``.  So the test knows a snapshot was
taken, feeds lines (alerts delivered and journalled after the snapshot) while that
checkpoint is still being written, lets it finish (it renames and drops the older
journals), and kills the watcher while the next one is in flight — no timing involved.
"""
from __future__ import annotations

import collections
import json
import os
import signal

import pytest

from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave
from tests.watch.test_watch_files import _lake_alert_ids


@pytest.mark.slow
def test_checkpoint_in_flight_then_kill_9_loses_and_repeats_nothing(
        tmp_path, scenario, batch_ids, start_watch, monkeypatch):
    feeds, lake, gate = tmp_path / "feeds", tmp_path / "lake", tmp_path / "gate"
    gate.mkdir()
    order = interleave(scenario, seed=7)
    cuts = [len(order) // 3, len(order) * 2 // 3]
    args = [feeds, "--lake", lake, "--alerts-file", tmp_path / "alerts.jsonl", "--finalize-at-stop",
            "--checkpoint-every", "0.05"]

    monkeypatch.setenv("PITWATCH_CHECKPOINT_GATE", str(gate))
    w = start_watch(*args)
    monkeypatch.delenv("PITWATCH_CHECKPOINT_GATE")

    def step(name: str) -> None:
        w.wait_for(lambda: (gate / name).exists(), name)

    append_lines(feeds, order[:cuts[0]])
    w.caught_up(cuts[0])
    step("waiting-1")
    (gate / "go-1").touch()
    step("done-1")
    step("waiting-2")              # snapshot 2 taken (all of part 1), its write held
    before = len(w.alerts)
    append_lines(feeds, order[cuts[0]:cuts[1]])
    w.caught_up(cuts[1])           # part 2's alerts: delivered and journalled while checkpoint 2 is in flight
    in_flight = len(w.alerts) - before
    (gate / "go-2").touch()
    step("done-2")                 # checkpoint 2 renamed, journals older than its snapshot dropped
    step("waiting-3")              # snapshot 3 taken (its lake batch handed over), never written
    assert in_flight > 0
    state = lake / "_watch" / "default"
    ck = json.loads((state / "checkpoint.json").read_text())
    assert [j for j in os.listdir(state) if j.startswith("journal")] == [f"journal-{ck['rest']['journal']:08d}.log"]
    assert w.stop(signal.SIGKILL) == -signal.SIGKILL
    first = list(w.alerts)

    w = start_watch(*args)         # from checkpoint 2 + the journal of what came after it
    w.caught_up(cuts[1])
    append_lines(feeds, order[cuts[1]:])
    w.caught_up(len(order))
    assert w.stop() == 0
    stdout_ids = [a["finding_id"] for a in first + w.alerts]
    # killed while idle (every alert journalled): not even the one stdout repeat a kill may cause
    assert not [i for i, n in collections.Counter(stdout_ids).items() if n > 1]
    assert sorted(stdout_ids) == batch_ids
    with open(tmp_path / "alerts.jsonl") as f:
        assert sorted(a["finding_id"] for a in map(json.loads, f) if not a.get("live_only")) == batch_ids
    lake_ids, _schema = _lake_alert_ids(lake)
    assert lake_ids == batch_ids


def test_order_state_round_trips_and_reads_older_checkpoints():
    from pitwatch.live.order import DeviceOrder
    from pitwatch.live.sources import Line
    from pitwatch.schemas.decode import GamingDayConfig, decode_line

    lines = [json.dumps({"event_id": f"e{s}", "ts": "2026-11-28T07:00:00Z", "source": "dealer",
                         "type": "table_opened", "table_id": "BAC-1", "device_id": "DT-1", "seq": s,
                         "dealer_id": "D-1", "game": "baccarat", "decks": 8}).encode() for s in (1, 2, 5)]
    order = DeviceOrder(wait=60)
    for n, raw in enumerate(lines, 1):
        ev, digest = decode_line(raw, "a.jsonl" if n < 3 else "b.jsonl", n, GamingDayConfig())
        order.offer(ev, digest, Line(raw, "a.jsonl" if n < 3 else "b.jsonl", n))
    assert order.held == 1                      # seq 5 after a hole, from a second file

    def decode(raw, file, number):
        return decode_line(raw, file, number, GamingDayConfig())[0], Line(raw, file, number)

    state = json.loads(order.state_json())
    again = DeviceOrder(wait=60)
    again.restore(state, decode)
    assert again.state_json() == order.state_json() and again.held == 1
    recent = json.loads(order.state_json())["devices"]["DT-1"]["recent"]   # {event_id: [hash, seq]}
    for form in ({str(q): [h, e] for e, (h, q) in recent.items()},      # before contract v2: by seq
                 [[q, h, e] for e, (h, q) in recent.items()]):           # the list form, older still
        old = json.loads(order.state_json())
        old["devices"]["DT-1"]["recent"] = form
        older = DeviceOrder(wait=60)
        older.restore(old, decode)
        assert older.state_json() == order.state_json()
