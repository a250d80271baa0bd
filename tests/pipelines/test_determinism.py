"""Findings do not depend on how the input is cut into files, ordered or delivered twice."""
from __future__ import annotations

import random

import pytest

from pipelines.batch import run_batch
from pipelines.simulate import simulate
from pipelines.truth import lake_findings


@pytest.fixture(scope="module")
def faulty_day(tmp_path_factory):
    feeds = tmp_path_factory.mktemp("det") / "feeds"
    simulate(feeds, tables={"baccarat": 1, "three_bet_poker": 1, "combate": 1, "stud": 1}, hours=2, seed=3,
             faults={"BURN_COUNT": 0.5, "SHOE_CARD_MISMATCH": 0.05, "STUB_MISCOUNT": 0.3, "PAYOUT": 0.05,
                     "BRING_IN": 0.3, "SEQ_GAP": 0.01, "UNSHUFFLED_SEQUENCE": 0.3})
    lines = [l for p in sorted(feeds.glob("20*/*.jsonl")) for l in p.read_bytes().splitlines()]
    return feeds, lines


def _ids(lake) -> list[tuple]:
    return sorted((f["finding_id"], f["rule_id"], f["ts"], f["actual"]) for f in lake_findings(str(lake)))


def test_split_shuffled_and_redelivered_input_gives_the_same_findings(faulty_day, tmp_path):
    feeds, lines = faulty_day
    run_batch(sorted(str(d) for d in feeds.iterdir() if d.is_dir()), str(tmp_path / "a"))
    reference = _ids(tmp_path / "a")
    assert len({r[1] for r in reference}) >= 5          # the day holds several kinds of finding

    rng = random.Random(7)
    shuffled = lines + rng.sample(lines, len(lines) // 10)   # a tenth delivered twice
    rng.shuffle(shuffled)
    other = tmp_path / "other"
    other.mkdir()
    for k in range(7):                                        # cut into seven files
        (other / f"part-{k}.jsonl").write_bytes(b"\n".join(shuffled[k::7]) + b"\n")
    summary = run_batch([str(other)], str(tmp_path / "b"))
    assert summary.duplicates == len(lines) // 10 and summary.accepted == len(lines)
    assert _ids(tmp_path / "b") == reference
