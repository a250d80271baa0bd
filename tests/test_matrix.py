"""The matrix: for every rule, a simulated day with only that fault raises exactly the
findings its ground truth lists; a clean simulated day raises none.

Each day is simulated with ``pitwatch simulate``'s library, replayed by the
real batch pipeline (Beam, FnApiRunner) into a real lake, and the lake's
findings are compared with ``truth.jsonl`` by rule, table and key
(:mod:`pipelines.truth`).  Every run is given the simulator's device registry
(``OUT/devices.csv``), as ``pitwatch run --devices`` would be: the feed-health rules
(``SHOE_SILENT``, ``UNKNOWN_DEVICE``) are in the matrix like any other, and the clean
day, registry and all, raises neither.
"""
from __future__ import annotations

import pytest

from pipelines.batch import run_batch
from pipelines.devices import load_registry
from simulator import SPECS, simulate
from pipelines.truth import compare, lake_findings, read_truth
from rules.catalog import RULES

HOURS = 3.0


def _day(tmp_path, games, faults, seed=11):
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    simulate(feeds, tables={g: 1 for g in games}, hours=HOURS, seed=seed, faults=faults)
    days = sorted(str(d) for d in feeds.iterdir() if d.is_dir())
    summary = run_batch(days, str(lake), devices=load_registry(str(feeds / "devices.csv")))
    assert summary.status == "succeeded" and summary.rejected == 0
    return lake_findings(str(lake)), read_truth(feeds / "truth.jsonl")


# A rule about a file, not about the events of a table (INPUT_DAMAGED: a file that cannot be read to its
# end) is no fault of a simulated day's events: tests/pipelines/test_input_damaged.py damages real files.
FILE_RULES = {r.rule_id for r in RULES if r.key == "file"}


def test_every_rule_can_be_injected():
    assert FILE_RULES == {"INPUT_DAMAGED"}
    assert sorted(SPECS) == sorted(r.rule_id for r in RULES if r.rule_id not in FILE_RULES)


@pytest.mark.slow
@pytest.mark.parametrize("rule_id", sorted(SPECS))
def test_a_day_with_one_fault_raises_exactly_its_ground_truth(rule_id, tmp_path):
    findings, truth = _day(tmp_path, SPECS[rule_id].games, {rule_id: 1.0})
    assert any(t["rule_id"] == rule_id for t in truth), f"the simulator injected no {rule_id} in {HOURS} h"
    result = compare(findings, truth)
    wrong = {r: (c.missed[:3], c.extra[:3]) for r, c in result.items() if not c.matches}
    assert not wrong, f"missed / extra findings: {wrong}"


@pytest.mark.slow
def test_a_clean_day_of_every_game_raises_nothing(tmp_path):
    findings, truth = _day(tmp_path, ("baccarat", "three_bet_poker", "combate", "stud", "stud8", "razz"), {}, seed=5)
    assert truth == []
    assert [(f["rule_id"], f["table_id"], f["actual"]) for f in findings] == []
