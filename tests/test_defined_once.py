"""Games, severities and the findings columns are each defined once and derived everywhere (issue 25):
the lists are the same objects, and the per-game tables (plug-ins, simulators, prefixes, default
floor) cover exactly the contract's games, so a game added or dropped in one place fails here."""
from __future__ import annotations

import dataclasses

from pitwatch.schemas.contract import GAMES, STUD_GAMES


def test_the_games_are_the_contracts_everywhere():
    from pitwatch.cli import rules as cli_rules
    from pitwatch.cli import simulate as cli_simulate
    from pitwatch.rules import catalog, procedures
    from pitwatch.simulator import faults, floor

    assert catalog.ALL_GAMES is GAMES and catalog.STUD_GAMES is STUD_GAMES
    assert faults.ALL is GAMES and faults.STUD is STUD_GAMES
    assert cli_simulate.GAME_NAMES is GAMES
    game_option = next(p for p in cli_rules.rules.params if p.name == "game")
    assert tuple(game_option.type.choices) == GAMES
    # the per-game tables: one entry for each game of the contract, no more, no less
    for table in (procedures.PROCEDURES, floor.GAMES, floor.PREFIX, floor.DEFAULT_TABLES):
        assert set(table) == set(GAMES), table
    assert set(STUD_GAMES) < set(GAMES)
    assert {g for r in catalog.RULES for g in r.games} == set(GAMES)


def test_every_game_has_its_own_plug_in():
    """Deleting a game from rules/procedures.py would leave it with the shared rules only."""
    from pitwatch.rules.game import GameProcedure
    from pitwatch.rules.procedures import procedure_for

    for game in GAMES:
        proc = procedure_for(game)
        assert type(proc) is not GameProcedure and proc.game == game, game


def test_the_severities_are_the_catalogues_everywhere():
    from pitwatch.cli import rules as cli_rules
    from pitwatch.config import SEVERITIES
    from pitwatch.lake import runs
    from pitwatch.rules.catalog import RULES

    assert runs.SEVERITIES is SEVERITIES
    severity_option = next(p for p in cli_rules.rules.params if p.name == "severity")
    assert tuple(severity_option.type.choices) == SEVERITIES
    assert {r.severity for r in RULES} <= set(SEVERITIES)


def test_the_findings_columns_are_the_lakes_everywhere():
    from pitwatch.live.sinks import COLUMNS
    from pitwatch.rules.finding import Finding
    from pitwatch.schemas.arrow import FINDINGS

    assert COLUMNS == tuple(FINDINGS.names)
    assert tuple(f.name for f in dataclasses.fields(Finding)) == tuple(FINDINGS.names)
