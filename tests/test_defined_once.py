"""Games, severities and the findings columns are each defined once and derived everywhere (issue 25):
the lists are the same objects, and the per-game tables (plug-ins, simulators, prefixes, default
floor) cover exactly the contract's games, so a game added or dropped in one place fails here.

Issue 38 ("each thing once"): the source is scanned so that a second literal of a defined-once list
(the games, the shoe games, the stud games, the severities, the card ranks and suits, the device
sources, the dealer roster's columns), a second ``def plural``, a second UNSHUFFLED_PACK text, a second reader of the operator's
small files, an ``ImportError`` fallback for a required dependency, or the dead ``games`` side input
of the batch's SEQ_GAP pass coming back fails here."""
from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
import tomllib
from pathlib import Path

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
    from pitwatch.schemas.arrow import FINDINGS, RUN_STAMPS

    # the finding's own columns; the batch run adds the runs that first wrote and last changed it (issue 42)
    own = tuple(n for n in FINDINGS.names if n not in RUN_STAMPS)
    assert COLUMNS == own
    assert tuple(f.name for f in dataclasses.fields(Finding)) == own


# --- issue 38: the source holds each of them once ------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
FOLDERS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]


@functools.cache
def _sources() -> dict[str, ast.Module]:
    """Every module of the installed package (folder-relative path → its tree), parsed once for the
    module's tests (they only read the trees)."""
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text(encoding="utf-8"))
            for folder in sorted(set(FOLDERS.values())) for p in sorted((ROOT / folder).glob("*.py"))}


def literal_places(trees: dict[str, ast.Module], values) -> list[str]:
    """Where a literal of exactly ``values`` is written: a tuple/list/set of those strings (in any
    order), or the one string itself when ``values`` is a str."""
    want = values if isinstance(values, str) else sorted(values)
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(want, str):
                hit = isinstance(node, ast.Constant) and node.value == want
            else:
                hit = (isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) == len(want)
                       and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
                       and sorted(e.value for e in node.elts) == want)
            if hit:
                found.append(f"{path}:{node.lineno}")
    return found


def test_each_list_is_written_once():
    from pitwatch.config import SEVERITIES
    from pitwatch.schemas import contract

    trees = _sources()
    once = {"the games": (contract.GAMES, "schemas/contract.py"),
            "the stud games": (contract.STUD_GAMES, "schemas/contract.py"),
            "the shoe games": (contract.SHOE_GAMES, None),          # derived: not even once as a literal
            "the severities": (SEVERITIES, "pitwatch/config.py"),
            "the ranks": (contract.RANKS, "schemas/contract.py"),
            "the suits": (contract.SUITS, "schemas/contract.py"),
            "the device sources": (contract.SOURCES, "schemas/contract.py"),
            "the three bets": (contract.THREE_BETS, "schemas/contract.py"),
            "the dealer roster's columns": (contract.DEALER_ROSTER_COLUMNS, "schemas/contract.py")}
    for what, (values, home) in once.items():
        places = literal_places(trees, values)
        assert [p.split(":")[0] for p in places] == ([home] if home else []), (what, places)


def test_a_second_literal_is_found():
    # the check itself: a copy of the shoe games or of the severities, in any order, is seen
    trees = {"a.py": ast.parse('SHOE = ("combate", "baccarat", "three_bet_poker")'),
             "b.py": ast.parse('def f(g):\n    return g in ["info", "minor", "major", "critical"]'),
             "c.py": ast.parse('RANKS = "A23456789TJQK"')}
    assert literal_places(trees, ("baccarat", "three_bet_poker", "combate")) == ["a.py:1"]
    assert literal_places(trees, ("critical", "major", "minor", "info")) == ["b.py:2"]
    assert literal_places(trees, "A23456789TJQK") == ["c.py:1"]


def test_the_shared_lists_are_the_contracts():
    from pitwatch.config import SEVERITIES
    from pitwatch.inputs import devices
    from pitwatch.lake import runs
    from pitwatch.rules import cards, feed_health, stud_showing
    from pitwatch.schemas import contract
    from pitwatch.simulator import cards as sim_cards
    from pitwatch.simulator import faults

    assert contract.SHOE_GAMES == tuple(g for g in GAMES if g not in STUD_GAMES)
    assert feed_health.SHOE_GAMES is faults.SHOE_GAMES is contract.SHOE_GAMES
    assert stud_showing.GAMES is STUD_GAMES
    assert cards.RANKS is stud_showing.RANKS is sim_cards.RANKS is contract.RANKS
    assert stud_showing.SUITS is sim_cards.SUITS is contract.SUITS
    assert set(devices.SOURCES) == set(contract.SOURCES)
    assert runs.SEVERITIES is SEVERITIES


def _defs(trees: dict[str, ast.Module], name: str) -> list[str]:
    return [f"{path}:{node.lineno}" for path, tree in trees.items() for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name]


def test_plural_is_defined_once():
    from pitwatch import wording
    from pitwatch.rules import words

    assert [p.split(":")[0] for p in _defs(_sources(), "plural")] == ["pitwatch/wording.py"]
    assert words.plural is wording.plural
    assert wording.plural(3, "pass") == "3 passes"          # rules/words.py's, the one kept


def test_the_unshuffled_pack_finding_is_built_once():
    """UNSHUFFLED_PACK's texts, and the card-stream findings' expected texts the live service's
    provisional alerts share, are written once (rules/packs.py)."""
    trees = _sources()
    for text in ("the pack should be shuffled before play",
                 "cards were dealt from it with no shuffle recorded, by the shuffler or the dealer",
                 "the shoe and the dealer terminal should show the same card at draw ",
                 "every card the shoe draws should be recorded by the dealer terminal",
                 "every card the dealer terminal records should have been drawn by the shoe"):
        assert [p.split(":")[0] for p in literal_places(trees, text)] == ["rules/packs.py"], text


def test_the_operators_small_files_have_one_reader():
    """The config file, the anchor's key, the device registry, the dealers' roster and a batch of
    reviews are read by ``read_small`` (regular files only: a FIFO never hangs them) — the CSV ones
    through ``read_operator_csv``, which calls it — and by no ``open`` of their own."""
    trees = _sources()
    readers = {"pitwatch/config.py": ("load", "read_small"), "lake/anchor.py": ("read_key", "read_small"),
               "inputs/files.py": ("read_operator_csv", "read_small"),
               "inputs/devices.py": ("load_registry", "read_operator_csv"),
               "inputs/dealers.py": ("load_roster", "read_operator_csv"),
               "cli/review.py": ("read_batch", "read_operator_csv")}
    for path, (name, reader) in readers.items():
        fn = next(n for n in ast.walk(trees[path]) if isinstance(n, ast.FunctionDef) and n.name == name)
        called = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", None)
                  for n in ast.walk(fn) if isinstance(n, ast.Call)}
        assert reader in called and not called & {"open", "os.open", "open_stored", "read_bytes", "read_text"}, path
    assert [p.split(":")[0] for p in _defs(trees, "read_small")] == ["pitwatch/config.py"]
    assert [p.split(":")[0] for p in _defs(trees, "read_operator_csv")] == ["inputs/files.py"]
    assert [p.split(":")[0] for p in _defs(trees, "NotRegularFile")] == ["pitwatch/config.py"]


def test_no_fallback_for_a_required_dependency():
    """``try: import orjson / except ImportError`` guards nothing: a required dependency is installed."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    required = {re.split(r"[\[<>=!~ ;]", d, maxsplit=1)[0].replace("-", "_").lower() for d in deps}
    guarded = []
    for path, tree in _sources().items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Try):
                continue
            names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
            if not names & {"ImportError", "ModuleNotFoundError"}:
                continue
            for stmt in node.body:
                mods = ([a.name for a in stmt.names] if isinstance(stmt, ast.Import)
                        else [stmt.module or ""] if isinstance(stmt, ast.ImportFrom) else [])
                guarded += [f"{path}:{stmt.lineno} {m}" for m in mods if m.split(".")[0] in required]
    assert guarded == []


def test_the_seq_gap_pass_takes_no_games_side_input():
    """The batch's SEQ_GAP game is the driver's (SEQ_GAP_GAME), so the tables' games are no input of it."""
    from pitwatch.pipelines import replay
    from pitwatch.pipelines.replay import ReplayDeviceSeq

    assert list(inspect.signature(ReplayDeviceSeq.process).parameters) == ["self", "kv"]
    assert not hasattr(replay, "TAG_GAMES")
    trees = {p: t for p, t in _sources().items() if p in ("pipelines/replay.py", "pipelines/graph.py")}
    assert literal_places(trees, "games") == [], "a 'games' output tag or side input is back"


def test_no_unused_constant_in_the_lake_writer():
    from pitwatch.lake import parquet

    assert not hasattr(parquet, "PART_FILE")     # part-0.parquet is migrate's old layout, not the writer's
