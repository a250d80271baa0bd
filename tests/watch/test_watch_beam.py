"""The Beam streaming form (live/beam.py) with TestStream: the batch's rows, every column."""
from __future__ import annotations

import pytest

from tests.watch.equivalence import beam_streaming
from tests.watch.scenario import interleave


@pytest.mark.slow
def test_beam_streaming_replay_gives_the_batch_rows(scenario, batch_rows):
    # lines out of order across devices and within a bundle: the DoFns restore per-device order
    beam_streaming([line for _d, line in interleave(scenario, seed=9)], batch_rows)
