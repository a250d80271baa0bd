"""The heavy steps pause the cyclic garbage collector for a whole bundle (pitwatch.pipelines.ingest.WithoutCyclicGC)."""
from __future__ import annotations

import gc

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from pitwatch.pipelines.ingest import DecodeChunk, WithoutCyclicGC
from pitwatch.pipelines.replay import ReplayTable
from pitwatch.schemas.decode import GamingDayConfig


def test_fused_steps_share_the_pause_and_the_first_one_restores_it():
    assert gc.isenabled()
    read, decode = WithoutCyclicGC(), DecodeChunk(GamingDayConfig())
    read.start_bundle()
    decode.start_bundle()
    assert not gc.isenabled()
    decode.finish_bundle()      # found it off: leaves it off
    assert not gc.isenabled()
    read.finish_bundle()
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_host_stays_off():
    gc.disable()
    try:
        step = ReplayTable(GamingDayConfig())
        step.start_bundle()
        step.finish_bundle()
        assert not gc.isenabled()
    finally:
        gc.enable()


class _SeesCollector(WithoutCyclicGC):
    def process(self, x):
        yield gc.isenabled()


@pytest.mark.slow
def test_the_collector_is_off_while_a_bundle_runs_on_the_embedded_runner():
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        seen = p | beam.Create([1, 2, 3]) | beam.ParDo(_SeesCollector())
        assert_that(seen, equal_to([False, False, False]))
    assert gc.isenabled()
