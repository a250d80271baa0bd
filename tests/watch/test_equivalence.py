"""Whole-row equivalence: the nightly batch, the live service and the Beam streaming form give the
same rows — every column of findings, rounds and packs — except the differences the driver lists
(:data:`pitwatch.engine.driver.LIVE_DIFFERENCES`), each excluded here by name where it applies."""
from __future__ import annotations

import heapq
import json

import pytest

from pitwatch.lake import Lake
from tests.watch import equivalence as eq
from tests.watch.scenario import conflicting_copy, interleave, plain_ids, write_batch_input


def cross_pack_repeat(f: dict) -> bool:
    """LIVE_DIFFERENCES "cross-pack repeat": live raises it at the completing card (pitwatch.live.repeats);
    the Beam streaming form does not: there the batch decides it."""
    return f["rule_id"] == "UNSHUFFLED_SEQUENCE" and "an earlier pack" in f["expected"]


@pytest.mark.slow
def test_rows_equal_on_a_simulated_day_with_every_fault_kind(tmp_path):
    from pitwatch.simulator import GAMES, SPECS, simulate

    feeds = tmp_path / "sim"
    simulate(feeds, tables={game: 1 for game in GAMES}, hours=0.5, seed=4,
             faults={name: 0.1 for name in SPECS}, workers=1)
    days = sorted(d for d in feeds.iterdir() if d.is_dir())
    batch = eq.batch(days, tmp_path / "lake")
    rules = {dict(r)["rule_id"] for r in batch["findings"]}
    assert len(rules) >= 15 and batch["rounds"] and batch["packs"]   # every fault kind was enabled
    expected = eq.without(batch, lambda f: not cross_pack_repeat(f))
    assert any(cross_pack_repeat(dict(r)) for r in batch["findings"])   # the live index is exercised

    assert eq.live(days, tmp_path / "live") == batch              # cross-pack repeats included

    streams = [[(json.loads(line)["ts"], path.stem, line) for line in path.read_text().splitlines()]
               for path in sorted(feeds.glob("20*/*.jsonl"))]
    eq.beam_streaming([line for _ts, _dev, line in heapq.merge(*streams)], expected)


@pytest.mark.slow
def test_rows_equal_with_shared_event_ids_duplicates_gaps_rejects_and_a_conflict(scenario, tmp_path):
    """Hidden structure: every device numbers its events E-<seq> (ids shared across devices), a lost
    line (SEQ_GAP), a rejected line, duplicate deliveries (the scenario), random interleavings, and a
    conflicting copy of the first shuffler report arriving last."""
    devices = plain_ids(scenario)
    shuffler = next(d for d in devices if d.startswith("SHF-"))
    copy = conflicting_copy(devices[shuffler][0], card_count=415)
    attacked = {**devices, shuffler: devices[shuffler] + [copy]}

    write_batch_input(devices, tmp_path / "without-copy")
    expected = eq.batch([tmp_path / "without-copy"], tmp_path / "lake-a")
    assert {dict(r)["rule_id"] for r in expected["findings"]} >= {
        "SEQ_GAP", "SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD", "UNSHUFFLED_PACK", "PAYOUT", "BURN_SKIPPED"}

    # LIVE_DIFFERENCES "conflict, first copy": the batch rejects both copies ...
    from pitwatch.lake.parquet import read_table

    write_batch_input(attacked, tmp_path / "with-copy")
    assert eq.batch([tmp_path / "with-copy"], tmp_path / "lake-b") != expected
    rejects = read_table(Lake.at(tmp_path / "lake-b"), "rejects").to_pylist()
    conflicts = [r for r in rejects if r["reason"].startswith("conflicting duplicate")]
    assert [(r["device_id"], r["event_id"]) for r in conflicts] == [(shuffler, "E-00001")] * 2

    # ... live and Beam streaming reject the copy that came second: the batch's rows without it
    eq.write_device_files(attacked, tmp_path / "live-in")
    rows, summary = eq.live_run([tmp_path / "live-in"], tmp_path / "live")
    assert rows == expected and summary["conflict"] == 1 and summary["duplicate"] == 4   # SHOE-1-BAC-A, SHOE-1-BAC-B: two each
    for seed in (9, 10):
        eq.beam_streaming([line for _d, line in interleave(devices, seed)] + [copy], expected)
