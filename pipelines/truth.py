"""Compare a lake's findings with a simulator's ground truth (``truth.jsonl``).

A finding and a truth line match when they name the same rule, table and key
(the fields ``docs/spec/rules.md`` keys the rule by: pack, round, round + seat +
spot, device).  Both sides are multisets: a device with two gaps must show
two ``SEQ_GAP`` findings.
"""
from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path

KEY_FIELDS = {
    "pack": ("pack_id",),
    "round": ("round_id",),
    "pack, round": ("pack_id", "round_id"),
    "round, seat, spot": ("round_id", "seat", "spot"),
    "table, device": ("device_id",),
}


def key_fields(rule_id: str, game: str | None) -> tuple[str, ...]:
    from rules.catalog import rule

    key = rule(rule_id).key
    if key == "pack (baccarat), round (stud)":
        return ("pack_id",) if game == "baccarat" else ("round_id",)
    return KEY_FIELDS[key]


def finding_key(row: dict) -> tuple:
    fields = key_fields(row["rule_id"], row.get("game"))
    return (row["rule_id"], row["table_id"]) + tuple(row.get(f) for f in fields)


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
    from rules.catalog import rule

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


def lake_findings(lake_path: str) -> list[dict]:
    from pipelines.lake import read_table

    return read_table(lake_path, "findings").to_pylist()
