"""The matrix: for every rule, a simulated day with only that fault raises exactly the
findings its ground truth lists; a clean simulated day raises none.

Each day is simulated with ``pitwatch simulate``'s library, replayed by the
real batch pipeline (Beam, FnApiRunner) into a real lake, and the lake's
findings are compared with ``truth.jsonl`` by rule, table and key
(:mod:`pitwatch.simulator.truth`).  Every run is given the simulator's device registry
(``OUT/devices.csv``), as ``pitwatch run --devices`` would be: the feed-health rules
(``SHOE_SILENT``, ``UNKNOWN_DEVICE``) are in the matrix like any other, and the clean
day, registry and all, raises neither.

The reuse variant (issue 36, contract 2.1) plays the same days with ``reuse_ids``: pack ids numbered
per gaming day and wrapped at 2, round ids per pack (:mod:`pitwatch.simulator.reuse`), so a finding must name
the use of its pack / round (``pack_use``, ``round_use``) and the lake must never merge two packs or
rounds of one id.  It covers every rule keyed by a pack or a round (``SEQ_GAP`` and ``UNKNOWN_DEVICE``
are keyed by device: reusing ids cannot change their key, and the rest of their day is a clean day,
which the clean reuse day covers), each on a day just long enough for its findings to fall on reused
ids too (each asserts that some of its findings do): 1.5 h without baccarat (a stud or three_bet_poker
pack id comes back every other round, a combate one every other shoe, within the first hour), 3 h with
it (the third shoe, about 2.2 h in, takes the first shoe's id) and 4 h for the rules that need that
third shoe to reach its cutting card.  Locally it costs about as much as the matrix itself.
"""
from __future__ import annotations

import pytest

from pitwatch.inputs.devices import load_registry
from pitwatch.lake import Lake
from pitwatch.pipelines.batch import run_batch
from pitwatch.rules.catalog import RULES
from pitwatch.simulator import SPECS, simulate
from pitwatch.simulator.reuse import read_id_map
from pitwatch.simulator.truth import compare, lake_findings, read_truth

HOURS = 3.0


def _day(tmp_path, games, faults, seed=11, hours=HOURS, reuse_ids=False):
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    simulate(feeds, tables={g: 1 for g in games}, hours=hours, seed=seed, faults=faults, reuse_ids=reuse_ids)
    days = sorted(str(d) for d in feeds.iterdir() if d.is_dir())
    summary = run_batch(days, Lake.at(lake), devices=load_registry(str(feeds / "devices.csv")))
    assert summary.status == "succeeded" and summary.rejected == 0
    return lake_findings(Lake.at(lake)), read_truth(feeds / "truth.jsonl")


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


# --------------------------------------------------------------------------- ids used again (issue 36)
DEVICE_KEYED = {r.rule_id for r in RULES if r.key == "table, device"}
END_OF_SHOE = {"LAST_COUP_NOT_ANNOUNCED", "COUPS_AFTER_CUT_CARD", "CUT_CARD_MISMATCH"}


def reuse_hours(rule_id: str) -> float:
    games = SPECS[rule_id].games
    return 4.0 if rule_id in END_OF_SHOE else 3.0 if "baccarat" in games else 1.5


def test_the_reuse_variant_covers_every_rule_keyed_by_pack_or_round():
    assert DEVICE_KEYED == {"SEQ_GAP", "UNKNOWN_DEVICE"}
    assert set(SPECS) - DEVICE_KEYED == {r.rule_id for r in RULES if r.key not in ("file", "table, device")}


@pytest.mark.slow
@pytest.mark.parametrize("rule_id", sorted(set(SPECS) - DEVICE_KEYED))
def test_a_day_with_one_fault_and_reused_ids_raises_exactly_its_ground_truth(rule_id, tmp_path):
    hours = reuse_hours(rule_id)
    findings, truth = _day(tmp_path, SPECS[rule_id].games, {rule_id: 1.0}, hours=hours, reuse_ids=True)
    mine = [t for t in truth if t["rule_id"] == rule_id]
    assert any((t["pack_use"] or 1) > 1 or (t["round_use"] or 1) > 1 for t in mine), \
        f"no {rule_id} on a reused pack or round id in {hours} h"
    result = compare(findings, truth)
    wrong = {r: (c.missed[:3], c.extra[:3]) for r, c in result.items() if not c.matches}
    assert not wrong, f"missed / extra findings: {wrong}"


@pytest.mark.slow
def test_a_clean_day_of_every_game_with_reused_ids_raises_nothing(tmp_path):
    findings, truth = _day(tmp_path, ("baccarat", "three_bet_poker", "combate", "stud", "stud8", "razz"), {}, seed=5,
                           reuse_ids=True)
    assert truth == []
    reused = {(table, kind) for (table, unique), (_, use) in read_id_map(tmp_path / "feeds").items() if use > 1
              for kind in ["round" if unique.startswith(table) else "pack"]}
    assert {t for t, kind in reused if kind == "pack"} == {t for t, kind in reused if kind == "round"} == {
        "BAC-01", "TBP-01", "COM-01", "STU-01", "ST8-01", "RAZ-01"}
    assert [(f["rule_id"], f["table_id"], f["actual"]) for f in findings] == []
