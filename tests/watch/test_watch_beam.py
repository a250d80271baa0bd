"""The Beam streaming form (live/beam.py) with TestStream: the batch's rows, every column."""
from __future__ import annotations

import pytest

from tests.watch.equivalence import beam_streaming
from tests.watch.scenario import interleave


@pytest.mark.slow
def test_beam_streaming_replay_gives_the_batch_rows(scenario, batch_rows):
    # lines out of order across devices and within a bundle: the DoFns restore per-device order
    beam_streaming([line for _d, line in interleave(scenario, seed=9)], batch_rows)


@pytest.mark.slow
def test_beam_streaming_a_seq_jump_never_mutes_the_device(scenario, batch_rows):
    """issue 28, the driver's gap rule in Beam as live: a forged jump of the terminal's seq waits,
    is released once the watermark passes its wait, and the terminal's genuine later lines (all far
    below the forged seq) are replayed as late lines, not dropped as stale: the same rows as the
    batch of the genuine lines (SEQ_GAP aside: the jump is one more).  Before, every one of them
    was dropped as stale: the rounds after the jump had no cards."""
    import json

    dealer = scenario["DT-1-BAC-A"]
    cut_ts = json.loads(dealer[40])["ts"]
    forged = {**json.loads(dealer[1]), "event_id": "FORGED-JUMP", "seq": 2 ** 63 - 1,
              "ts": json.loads(dealer[30])["ts"]}
    lines = [line for _d, line in interleave(scenario, seed=9)]
    first = [x for x in lines if json.loads(x)["ts"] < cut_ts] + [json.dumps(forged)]
    rest = [x for x in lines if json.loads(x)["ts"] >= cut_ts]
    assert sum(x in rest for x in dealer) >= 60                   # the genuine lines after the jump
    # the late lines are replayed as they arrive (the driver's rule): here in their order, as a
    # device's file or partition gives them (LIVE_DIFFERENCES, "late line")
    beam_streaming(first + rest, batch_rows, half=len(first), skip_rules=("SEQ_GAP",), second_in_order=True)
