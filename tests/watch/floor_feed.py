"""A simulated floor's device files as the lines arrive live (merged by their instant), and the checks
of issue 30 items 1-2 against that input order: provisional card alerts in the round, UNSHUFFLED_PACK
at the first card."""
from __future__ import annotations

import bisect
import datetime as _dt
import heapq
import json
from pathlib import Path

FINAL = ("SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD")


def instant(ts: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))


def merged_lines(feeds: Path) -> list[str]:
    """Every device file's lines, merged by the instant of their ``ts`` (ties: device, then file order)."""
    streams = []
    for path in sorted(feeds.glob("20*/*.jsonl")):
        streams.append([(instant(json.loads(l)["ts"]), path.stem, k, l)
                        for k, l in enumerate(path.read_text().splitlines())])
    return [l for *_key, l in heapq.merge(*streams)]


class InputOrder:
    """Where each event, round end and terminal event of the merged input is (1-based line numbers)."""

    def __init__(self, lines: list[str], skew: float = 2.0) -> None:
        self.events = [json.loads(l) for l in lines]
        self.skew = skew        # watch --skew (its default)
        self.line = {(e["device_id"], e["event_id"]): n for n, e in enumerate(self.events, 1)}
        self.round_end: dict[tuple, int] = {}
        self.terminal: dict[str, list[int]] = {}     # a table's terminal events other than cards
        for n, e in enumerate(self.events, 1):
            if e["source"] == "dealer":
                if e["type"] != "card_dealt":
                    self.terminal.setdefault(e["table_id"], []).append(n)
                if e["type"] == "round_ended":
                    self.round_end.setdefault((e["table_id"], e.get("round_id")), n)

    def deadline(self, finding: dict) -> int:
        """The line by which the finding's provisional alert is due: its round's ``round_ended``;
        for evidence that arrived after that (a draw made between rounds), the table's first terminal
        event other than a card ``--skew`` later than the evidence, or its next ``round_ended``, whichever
        comes first (the evidence's own line when the terminal wrote neither)."""
        last = max(self.line[(x["device_id"], x["event_id"])] for x in finding["evidence"])
        end = self.round_end.get((finding["table_id"], finding["round_id"]))
        if end is not None and last <= end:
            return end
        lines = self.terminal.get(finding["table_id"], [])
        due = instant(self.events[last - 1]["ts"]).timestamp() + self.skew
        for n in lines[bisect.bisect_right(lines, last):]:
            e = self.events[n - 1]
            if e["type"] == "round_ended" or instant(e["ts"]).timestamp() >= due:
                return n
        return last


def late_provisionals(alerts: list[dict], order: InputOrder) -> list[str]:
    """Every final card-integrity alert whose provisional alert is missing or was raised after its
    deadline (``--with-trigger`` lines), said in words; [] when every one was in time."""
    provisional = {a["finding_id"]: a for a in alerts if a["rule_id"] == "CARD_DISAGREEMENT"}
    late = []
    for f in alerts:
        if f["rule_id"] not in FINAL:
            continue
        p = provisional.get(f.get("provisional_id"))
        due = order.deadline(f)
        at = p["trigger"]["line"] if p is not None and p.get("trigger") else None
        if at is None or at > due:
            late.append(f"{f['rule_id']} {f['finding_id']} ({f['actual']}): provisional at line {at}, due by {due}")
    return late
