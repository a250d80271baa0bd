"""Findings a person can read: every rule's title, and the ``expected`` / ``actual`` of
every finding the simulator's rule-by-rule matrix raises, are words, not code.

The people who act on a finding are a surveillance operator at a video console
and a compliance analyst (issue 29).  The readability check rejects what made
findings unreadable before: ``seat:6: 6``-style keys, bare Python lists, dicts
and reprs, ``None``, lazy plurals (``card(s)``, ``1 decks``), event-stream
tokens (``bets_closed``), a procedure reference inside ``expected`` /
``actual`` (it belongs in ``source``), a ``source`` citing several references,
and empty text.

The matrix is the one of ``tests/test_matrix.py`` (every rule injected alone by
``pitwatch simulate``'s library), replayed here by the engine itself
(:func:`pitwatch.pipelines.replay.replay_table`, the cross-pack runs and the device
``seq`` tracker), without Beam: the texts are the engine's, the pipeline only
carries them.
"""
from __future__ import annotations

import collections
import re
import subprocess
import sys

import orjson
import pytest

from pitwatch.rules.catalog import RULE_BY_ID, RULES

CODE_LIKE = [
    (re.compile(r"\b[a-z]+:[0-9A-Za-z]"), "a key:value token like seat:6"),
    (re.compile(r"\b[a-z]+: \d+(?:,|;|$)"), "a key: count pair like community: 2"),
    (re.compile(r"[\[\]{}]"), "a bare list or dict"),
    (re.compile(r"<[a-zA-Z_.]+[ >]|\b[A-Za-z_]+\(.*=|\b\w+=\S"), "a Python repr or keyword argument"),
    (re.compile(r"\b(None|True|False|nan|NaN|null)\b"), "a Python/JSON literal"),
    (re.compile(r"\b[a-z0-9]+_[a-z0-9_]+\b"), "an identifier of the event stream (snake_case)"),
    (re.compile(r"\(s\)|\(es\)"), "a lazy plural"),
    (re.compile(r"(?<![\d.,])1 (cards|decks|findings|rounds|coups|seats|events|burns|hands|passes)\b"),
     "a plural after 1"),
    (re.compile(r"(?<![\d.,])(?<!seat )(?<!hand )(?<!card )(?<!draw )(?<!coup )(?<!number )"
                r"(?:0|[2-9]|[1-9]\d+) (card|deck|finding|round|coup|seat|event|burn|hand)\b(?! card)(?!')"),
     "a singular after a count other than 1"),
    (re.compile(r"\b00\d(?:\s+(?:\d+(?:\.\d+)*|[A-K]\d?\b))"), "a procedure reference (it belongs in source)"),
    (re.compile(r"\s{2,}|^\s|\s$"), "stray whitespace"),
]


def unreadable(text) -> list[str]:
    """Why ``text`` is not a sentence a person reads (empty list: it is)."""
    if not isinstance(text, str):
        return [f"not text: {text!r}"]
    if not text.strip():
        return ["empty"]
    return [why for pattern, why in CODE_LIKE if pattern.search(text)]


def finding_problems(f) -> list[str]:
    """What is unreadable in one finding (a :class:`pitwatch.rules.finding.Finding`)."""
    problems = []
    for name in ("title", "expected", "actual"):
        problems += [f"{name} {getattr(f, name, None)!r}: {why}" for why in unreadable(getattr(f, name, None))]
    rule = RULE_BY_ID[f.rule_id]
    if getattr(f, "title", None) != rule.title:
        problems.append(f"title {getattr(f, 'title', None)!r} is not the catalogue's")
    if ";" in f.source or f.source != rule.source_for(f.game):
        problems.append(f"source {f.source!r}: not the game's one reference")
    for name in ("expected", "actual"):  # a document's reference ("003 4.7"), not the word "tableau"
        if f.source[:1].isdigit() and f.source in getattr(f, name):
            problems.append(f"{name} repeats the source {f.source!r}")
    if f.expected == f.actual:
        problems.append("expected and actual say the same")
    return problems


# --- the checker itself: it rejects the texts findings carried before issue 29 ------------
OLD_TEXTS = [
    "seat:6: 6", "community: 2",                                     # MISDEAL
    "a burn (003 4.7) before the first coup of the pack",            # BURN_SKIPPED
    "street 3 began with a card to seat:1 and no burn",
    "\"no more bets\" (bets_closed) before any card of the round",   # CARDS_BEFORE_BETS_CLOSED
    "seat 2 doubled holding 3 card(s): 9h 2c 5d",                    # ILLEGAL_DOUBLE
    "416 cards (1 decks), none missing or extra",
    "['Ah', 'Kd']", "{'seat': 6}", "None", "", "   ",
    "Finding(rule_id='MISDEAL')", "card 5 of the round to seat:3 or community",
]


@pytest.mark.parametrize("text", OLD_TEXTS)
def test_the_check_rejects_code_like_text(text):
    assert unreadable(text), f"{text!r} passed the readability check"


@pytest.mark.parametrize("text", [
    "seat 6 should hold 6 cards", "seat 6 holds 5 cards", "1 card", "2 cards", "8 decks",
    "the shoe read Kh; the terminal recorded Qs", "the cut offered to seat 3, the designated player",
    "3 face-down burn cards after the 3s", "a win paying 95", "seat 2's 1st hand received 3s",
    "card 5 of the round should go to seat 3 or the community spot",
])
def test_the_check_accepts_sentences(text):
    assert unreadable(text) == []


# --- the catalogue -------------------------------------------------------------------------
@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.rule_id)
def test_every_rule_has_a_plain_title_and_one_reference_per_game(rule):
    assert unreadable(rule.title) == [], rule.title
    assert rule.title[0].isupper() and not rule.title.endswith(".") and rule.title != rule.rule_id
    assert len(rule.title) <= 50
    for game in rule.games:
        cite = rule.source_for(game)
        assert cite and ";" not in cite and cite != "per game", (game, cite)


def test_titles_are_distinct():
    titles = collections.Counter(r.title for r in RULES)
    assert [t for t, n in titles.items() if n > 1] == []


def test_pitwatch_rules_shows_every_title():
    out = subprocess.run([sys.executable, "-m", "pitwatch.cli", "rules", "--format", "json"],
                         capture_output=True, check=True).stdout
    rows = [orjson.loads(line) for line in out.splitlines()]
    assert {r["rule_id"]: r["title"] for r in rows} == {r.rule_id: r.title for r in RULES}
    table = subprocess.run([sys.executable, "-m", "pitwatch.cli", "rules", "--game", "baccarat"],
                           capture_output=True, check=True, text=True).stdout
    assert table.splitlines()[0].split()[:3] == ["rule_id", "title", "severity"]
    assert "Burn skipped" in table and "Card switched between shoe and table" in table
    stud = subprocess.run([sys.executable, "-m", "pitwatch.cli", "rules", "--game", "stud", "--format", "json"],
                          capture_output=True, check=True).stdout
    sources = {orjson.loads(line)["rule_id"]: orjson.loads(line)["source"] for line in stud.splitlines()}
    assert sources["BURN_SKIPPED"] == "004" and sources["MISDEAL"] == "004" and sources["UNSHUFFLED_PACK"] == "003 4.1"


# --- the simulator's matrix ------------------------------------------------------------------
def matrix_findings(tmp_path, rule_id: str):
    """Every finding the engine raises on a simulated day with only ``rule_id``'s fault."""
    from pitwatch.inputs.devices import load_registry
    from pitwatch.pipelines.replay import replay_table
    from pitwatch.rules.repeated_runs import repeated_runs
    from pitwatch.rules.sequence import SeqTracker
    from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line
    from pitwatch.simulator import SPECS, simulate

    long = rule_id in ("LAST_COUP_NOT_ANNOUNCED", "COUPS_AFTER_CUT_CARD", "CUT_CARD_MISMATCH", "SHORT_DECK_PROCEDURE")
    tables = {g: 2 if rule_id == "SHORT_DECK_PROCEDURE" else 1 for g in SPECS[rule_id].games}
    simulate(tmp_path, tables=tables, hours=2.5 if long else 1.5, seed=5, faults={rule_id: 1.0})
    config = GamingDayConfig()
    registry = load_registry(str(tmp_path / "devices.csv"))    # the simulator's registry, as pitwatch demo runs
    events = []
    for path in sorted(tmp_path.glob("*/*.jsonl")):
        for n, raw in enumerate(path.read_bytes().splitlines(), 1):
            decoded = decode_line(raw, str(path), n, config)
            assert not isinstance(decoded, Reject), decoded
            events.append(decoded[0])
    by_table = collections.defaultdict(list)
    for ev in events:
        by_table[ev.table_id].append(ev)
    findings, packs = [], []
    for table_id, table_events in sorted(by_table.items()):
        replay, found = replay_table(table_id, table_events, config, devices=registry)
        findings += found
        packs += replay.take_rows().sequences
    findings += repeated_runs(packs)
    game_of = {ev.table_id: ev.game for ev in events if ev.type == "table_opened"}
    seq = SeqTracker()
    for ev in sorted(events, key=lambda e: (e.device_id, e.seq)):
        findings += seq.feed_event(ev, game_of.get(ev.table_id))
    return findings


def _fault_names():
    from pitwatch.simulator import SPECS

    return sorted(SPECS)


@pytest.mark.slow
@pytest.mark.parametrize("rule_id", _fault_names())
def test_every_finding_of_the_matrix_reads_as_words(rule_id, tmp_path):
    findings = matrix_findings(tmp_path, rule_id)
    games = {f.game for f in findings if f.rule_id == rule_id}
    assert games, f"the simulator raised no {rule_id}"
    problems = {}
    for f in findings:
        for p in finding_problems(f):
            problems.setdefault(f"{f.rule_id} ({f.game}): {p}", f"{f.expected!r} / {f.actual!r}")
    assert not problems, "\n".join(f"{k}\n    {v}" for k, v in sorted(problems.items()))


# --- counts for people ------------------------------------------------------------------------
def test_plural_counts():
    from pitwatch.wording import plural

    assert [plural(n, "finding") for n in (0, 1, 2, 1234)] == ["0 findings", "1 finding", "2 findings",
                                                              "1,234 findings"]
    assert [plural(n, "deck") for n in (1, 8)] == ["1 deck", "8 decks"]
    assert [plural(n, "pass") for n in (1, 3)] == ["1 pass", "3 passes"]


def test_pitwatch_simulate_summary_counts_one_table_in_the_singular(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pitwatch.cli", "simulate", "--out", str(tmp_path / "day"),
                          "--tables", "stud=1", "--hours", "0.1", "--workers", "1", "--quiet"],
                         capture_output=True, text=True, check=True).stdout
    assert " on 1 table " in out and " 1 tables" not in out, out
    assert re.search(r"from \d+ devices on", out), out
