"""The fault registry covers every rule of the catalogue, for every game the rule applies to."""
from __future__ import annotations

import pytest

from pitwatch.simulator.faults import FAULT_NAMES, REGISTRY, SPECS, build_rates


def test_every_declared_fault_and_game_has_an_implementation():
    for name, spec in SPECS.items():
        assert set(REGISTRY[name]) == set(spec.games), name


def test_every_rule_of_the_catalogue_can_be_injected_for_its_games():
    from pitwatch.rules.catalog import RULES

    file_rules = {r.rule_id for r in RULES if r.key == "file"}   # INPUT_DAMAGED: a damaged file, no day's fault
    assert set(FAULT_NAMES) == {r.rule_id for r in RULES} - file_rules
    # stud is dealt by hand (no shoe stream to compare); rules.md gives MISDEAL counts for 000 and 001 only
    not_for_stud = {"SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD", "MISDEAL"}
    for rule in (r for r in RULES if r.rule_id not in file_rules):
        missing = set(rule.games) - set(REGISTRY[rule.rule_id])
        assert missing <= ({"stud", "stud8", "razz"} if rule.rule_id in not_for_stud else set()), rule.rule_id
        assert set(REGISTRY[rule.rule_id]) <= set(rule.games), rule.rule_id


def test_rates_mixed_then_per_fault():
    rates = build_rates(0.01, {"PAYOUT": 1.0, "DRAWING_RULE": 0})
    assert rates["PAYOUT"] == 1.0 and "DRAWING_RULE" not in rates and rates["BRING_IN"] == 0.01
    with pytest.raises(ValueError, match="unknown fault"):
        build_rates(None, {"NOPE": 0.5})
