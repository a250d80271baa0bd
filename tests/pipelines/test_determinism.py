"""Findings do not depend on how the input is cut into files, ordered or delivered twice."""
from __future__ import annotations

import random

import pytest

from pitwatch.lake import Lake
from pitwatch.pipelines.batch import run_batch
from pitwatch.simulator import simulate
from pitwatch.simulator.truth import lake_findings
from tests import lake_rows


@pytest.fixture(scope="module")
def faulty_day(tmp_path_factory):
    feeds = tmp_path_factory.mktemp("det") / "feeds"
    simulate(feeds, tables={"baccarat": 1, "three_bet_poker": 1, "combate": 1, "stud": 1}, hours=2, seed=3,
             faults={"BURN_COUNT": 0.5, "SHOE_CARD_MISMATCH": 0.05, "STUB_MISCOUNT": 0.3, "PAYOUT": 0.05,
                     "BRING_IN": 0.3, "SEQ_GAP": 0.01, "UNSHUFFLED_SEQUENCE": 0.3})
    lines = [l for p in sorted(feeds.glob("20*/*.jsonl")) for l in p.read_bytes().splitlines()]
    return feeds, lines


def _ids(lake) -> list[tuple]:
    return sorted((f["finding_id"], f["rule_id"], f["ts"], f["actual"]) for f in lake_findings(Lake.at(lake)))


@pytest.mark.slow
def test_split_shuffled_and_redelivered_input_gives_the_same_findings(faulty_day, tmp_path):
    feeds, lines = faulty_day
    run_batch(sorted(str(d) for d in feeds.iterdir() if d.is_dir()), Lake.at(tmp_path / "a"))
    reference = _ids(tmp_path / "a")
    assert len({r[1] for r in reference}) >= 5          # the day holds several kinds of finding

    rng = random.Random(7)
    shuffled = lines + rng.sample(lines, len(lines) // 10)   # a tenth delivered twice
    rng.shuffle(shuffled)
    other = tmp_path / "other"
    other.mkdir()
    for k in range(7):                                        # cut into seven files
        (other / f"part-{k}.jsonl").write_bytes(b"\n".join(shuffled[k::7]) + b"\n")
    summary = run_batch([str(other)], Lake.at(tmp_path / "b"))
    assert summary.duplicates == len(lines) // 10 and summary.accepted == len(lines)
    assert _ids(tmp_path / "b") == reference


@pytest.mark.slow
def test_worker_processes_write_the_same_lake_as_one_process(faulty_day, tmp_path):
    """The embedded runner's multi-process mode (the default for large inputs) changes nothing written."""
    feeds, _lines = faulty_day
    inputs = sorted(str(d) for d in feeds.iterdir() if d.is_dir())
    run_batch(inputs, Lake.at(tmp_path / "one"), beam_args=["--direct_num_workers=1"])
    run_batch(inputs, Lake.at(tmp_path / "two"),
              beam_args=["--direct_num_workers=2", "--direct_running_mode=multi_processing"])
    one, two = (lake_rows.data_files(tmp_path / name, across_lakes=True) for name in ("one", "two"))
    assert len(one) >= 6 and one == two


def test_large_inputs_use_one_worker_process_per_cpu_unless_told(monkeypatch):
    from apache_beam.options.pipeline_options import DirectOptions

    from pitwatch.pipelines.batch import PARALLEL_FROM_BYTES, beam_options

    monkeypatch.setattr("os.cpu_count", lambda: 4)

    def workers(args, size):
        direct = beam_options(args, size).view_as(DirectOptions)
        return direct.direct_num_workers, direct.direct_running_mode

    assert workers([], PARALLEL_FROM_BYTES) == (4, "multi_processing")
    assert workers([], PARALLEL_FROM_BYTES - 1) == (1, "in_memory")
    assert workers(["--direct_num_workers=1"], PARALLEL_FROM_BYTES) == (1, "in_memory")
    assert workers(["--runner=FlinkRunner"], PARALLEL_FROM_BYTES) == (1, "in_memory")
