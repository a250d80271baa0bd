"""Compare a lake's findings with a simulator's ground truth (``truth.jsonl``).

A finding and a truth line match when they name the same rule, table and key
(the fields ``docs/spec/rules.md`` keys the rule by: pack, round, round + seat +
spot, device), a pack or round by its id and its use (``pack_use``,
``round_use``: an id used again is a new pack / round, events.md 2.1; a
missing or null use is 1, so truth files and lakes from before compare as
they did).  Both sides are multisets: a device with two gaps must show
two ``SEQ_GAP`` findings.
"""
from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path

from pitwatch.lake import Lake

KEY_FIELDS = {
    "pack": ("pack_id",),
    "round": ("round_id",),
    "pack, round": ("pack_id", "round_id"),
    "round, seat, spot": ("round_id", "seat", "spot"),
    "table, device": ("device_id",),
}


def key_fields(rule_id: str, game: str | None) -> tuple[str, ...]:
    from pitwatch.rules.catalog import rule

    key = rule(rule_id).key
    if key == "pack (baccarat), round (stud)":
        return ("pack_id",) if game == "baccarat" else ("round_id",)
    return KEY_FIELDS[key]


# a reused pack / round id (events.md 2.1) names a new pack / round: the key holds its use
USE_OF = {"pack_id": "pack_use", "round_id": "round_use"}


def finding_key(row: dict) -> tuple:
    """(rule_id, table_id, key fields…), each ``pack_id`` / ``round_id`` followed by its use:
    a missing or null ``pack_use`` / ``round_use`` is use 1 (lakes and truth files written before
    ids were reused have no such column)."""
    fields = key_fields(row["rule_id"], row.get("game"))
    key = [row["rule_id"], row["table_id"]]
    for f in fields:
        key.append(row.get(f))
        if f in USE_OF:
            key.append(row.get(USE_OF[f]) or 1)
    return tuple(key)


@dataclasses.dataclass
class RuleComparison:
    rule_id: str
    severity: str
    expected: int
    found: int
    missed: list[tuple]
    extra: list[tuple]

    @property
    def matches(self) -> bool:
        return not self.missed and not self.extra


def read_truth(path: str | Path) -> list[dict]:
    with open(path, "rb") as f:
        return [json.loads(line) for line in f if line.strip()]


def compare(findings: list[dict], truth: list[dict]) -> dict[str, RuleComparison]:
    """Per rule_id (every rule of either side): expected vs found, with the keys that differ."""
    from pitwatch.rules.catalog import rule

    want = collections.Counter(finding_key(t) for t in truth)
    got = collections.Counter(finding_key(f) for f in findings)
    out: dict[str, RuleComparison] = {}
    for rule_id in sorted({k[0] for k in want} | {k[0] for k in got}):
        w = collections.Counter({k: n for k, n in want.items() if k[0] == rule_id})
        g = collections.Counter({k: n for k, n in got.items() if k[0] == rule_id})
        out[rule_id] = RuleComparison(
            rule_id, rule(rule_id).severity, sum(w.values()), sum(g.values()),
            sorted((w - g).elements(), key=str), sorted((g - w).elements(), key=str))
    return out


def lake_findings(lake_path: Lake) -> list[dict]:
    from pitwatch.lake.parquet import read_table

    return read_table(lake_path, "findings").to_pylist()


def read_hold_skew(out_dir: str | Path) -> list[dict]:
    """The ground truth of ``HOLD_SKEW`` (``OUT/hold_skew.json``, :mod:`pitwatch.simulator.hold_skew`): one
    row per skewed table (``table_id``, ``dealer_id``, ``seat``, ``spot``, ``p``, ``opportunities``,
    ``arranged``, ``expected_extra_win``, ``arranged_extra_win``); empty when the fault was not asked for."""
    from pitwatch.simulator.hold_skew import TRUTH_FILE

    path = Path(out_dir) / TRUTH_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
