"""A checkpoint's state serialised by a forked child (live/fork_snapshot.py): the file is the state
of the instant the loop forked at, whatever the loop changed after it; a failed child stops the
service like a failed write.

Found by bench/watch.py: serialising 400 busy tables on the loop stalled it 170-300 ms every 5 s."""
from __future__ import annotations

import dataclasses
import io
import json

import pytest

from pitwatch.lake import Lake
from pitwatch.live.service import WatchOptions, WatchService
from tests.watch.floor_feed import merged_lines


def _service(tmp_path, lines):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "floor.jsonl").write_text("\n".join(lines) + "\n")
    return WatchService(WatchOptions(inputs=[str(tmp_path / "in")], lake=Lake.at(tmp_path / "lake"),
                                     state_dir=str(tmp_path / "st"), lake_alerts=False, poll=0.01,
                                     checkpoint_every=3600), stdout=io.BytesIO())


def _feed(svc) -> int:
    """Read the input to its end and replay it (as the loop does, turn after turn: a turn reads a
    bounded number of lines of each file); how many lines."""
    n, got = 0, True
    while got:
        got = False
        for src in svc.sources:
            lines = src.read()
            svc.take(lines)
            n += len(lines)
            got = got or bool(lines)
    return n


def _checkpoint(svc) -> dict:
    with open(svc.state.file, "rb") as f:
        state = json.loads(f.read())
    for key in ("journal", "written"):
        state["rest"].pop(key)
    return state


@pytest.fixture()
def floor(tmp_path):
    from pitwatch.simulator import SPECS, simulate

    simulate(tmp_path / "sim", tables={"baccarat": 2, "combate": 1, "stud": 1}, hours=0.4, seed=6,
             faults={n: 0.05 for n in SPECS}, workers=1)
    return merged_lines(tmp_path / "sim")


def test_the_forked_checkpoint_is_the_state_of_the_instant_not_of_what_came_after(tmp_path, floor):
    cut = len(floor) // 2
    svc = _service(tmp_path, floor[:cut])
    assert svc.opts.fork_snapshot
    try:
        assert _feed(svc) == cut
        svc.opts = dataclasses.replace(svc.opts, fork_snapshot=False)
        svc.checkpoint(wait=True)                      # serialised on the loop: the reference
        here = _checkpoint(svc)
        svc.opts = dataclasses.replace(svc.opts, fork_snapshot=True)
        svc.checkpoint()                               # the same instant, serialised by a child ...
        with open(tmp_path / "in" / "floor.jsonl", "a") as f:
            f.write("\n".join(floor[cut:]) + "\n")
        assert _feed(svc) == len(floor) - cut          # ... while the loop changes every table
        svc.writer.wait()
        forked = _checkpoint(svc)
        assert forked == here and forked["tables"]
        svc.checkpoint(wait=True)                      # and the next one has what came after
        assert _checkpoint(svc)["tables"] != here["tables"]
    finally:
        svc.close()


def test_a_failed_checkpoint_child_stops_the_service_and_leaves_the_last_checkpoint(tmp_path, floor):
    svc = _service(tmp_path, floor[:2000])
    try:
        _feed(svc)
        svc.checkpoint(wait=True)
        before = open(svc.state.file, "rb").read()

        def broken(*_args):
            raise OSError(28, "No space left on device")
        svc.state.write_partial = broken               # the child's write fails
        svc.checkpoint()
        with pytest.raises(RuntimeError, match="checkpoint failed: the process writing the checkpoint"):
            svc.writer.wait()
        assert open(svc.state.file, "rb").read() == before
    finally:
        svc.close()
