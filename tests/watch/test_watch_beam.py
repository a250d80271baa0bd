"""The Beam streaming form (pipelines/watch_beam.py) with TestStream: the batch's findings, same ids."""
from __future__ import annotations

import datetime as _dt
import json
import pytest

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing.test_stream import TestStream as BeamTestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.utils.timestamp import Timestamp

from pipelines.watch_beam import ReplayLive
from tests.watch.scenario import interleave


def _ts(line: str) -> Timestamp:
    try:
        when = _dt.datetime.fromisoformat(json.loads(line)["ts"].replace("Z", "+00:00"))
    except (ValueError, KeyError):
        return Timestamp(0)
    return Timestamp.from_utc_datetime(when)


@pytest.mark.slow
def test_beam_streaming_replay_gives_the_batch_findings(scenario, batch_ids):
    order = interleave(scenario, seed=9)
    half = len(order) // 2
    mid = min(_ts(line) for _d, line in order[half:])   # a correct watermark: no later line is behind it
    stream = BeamTestStream()
    for chunk in (order[:half], order[half:]):
        # out of order across devices and within a bundle: the DoFns restore per-device order
        stream = stream.add_elements([beam.window.TimestampedValue(line.encode(), _ts(line))
                                      for _d, line in reversed(chunk)])
        if chunk is order[:half]:
            stream = stream.advance_watermark_to(mid - 1)   # a finite watermark first
    # a finite watermark past every hole wait and the finalize delay: the timers fire (and their
    # findings reach the assertion) before the watermark's end closes the global window
    end = max(_ts(line) for _d, line in order)
    stream = stream.advance_watermark_to(end + 2 * 3600).advance_watermark_to_infinity()
    options = PipelineOptions(["--runner=BundleBasedDirectRunner"])
    options.view_as(StandardOptions).streaming = True
    with beam.Pipeline(options=options) as p:
        ids = (p | stream
               | ReplayLive(wait_seconds=5.0, finalize_after_seconds=3600.0)
               | beam.Map(lambda f: f.finding_id))
        assert_that(ids, equal_to(batch_ids))
