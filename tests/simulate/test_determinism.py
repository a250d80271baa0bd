"""Same seed and options: byte-identical files.  Another seed: another floor."""
from __future__ import annotations

import hashlib

from pitwatch.simulator import simulate
from tests.simulate.conftest import START


def _digest(folder) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*.jsonl"))}


def test_same_seed_and_options_give_identical_bytes(tmp_path):
    kw = dict(tables={"baccarat": 1, "three_bet_poker": 2, "stud": 2, "combate": 1}, hours=1.0, start=START, seed=9,
              faults={"PAYOUT": 0.2, "SEQ_GAP": 0.05, "BRING_IN": 0.3, "UNSHUFFLED_SEQUENCE": 0.2})
    simulate(tmp_path / "a", **kw)
    simulate(tmp_path / "b", **kw)
    a, b = _digest(tmp_path / "a"), _digest(tmp_path / "b")
    assert a == b
    assert "truth.jsonl" in a and len(a) > 10


def test_another_seed_gives_another_floor(tmp_path):
    kw = dict(tables={"baccarat": 1}, hours=0.5, start=START)
    simulate(tmp_path / "a", seed=1, **kw)
    simulate(tmp_path / "b", seed=2, **kw)
    assert _digest(tmp_path / "a") != _digest(tmp_path / "b")
