"""A small floor with injected faults, as per-device JSON lines, for the live tests.

Built with the engine tests' builder (``tests/rules/stream.py``, imported
read-only).  Two baccarat tables, each with its own dealer terminal, shoe and
shuffler (device ids and event ids made unique per table), and faults whose
evidence completes at different moments: a cut out of limits (at the cut), a
switched card (a few cards later: alignment window), a burn skipped (at the
first card of the first coup), a wrong payout, a card drawn by the shoe and
never recorded, a pack with no shuffle record (only at the end of input),
a lost line (``SEQ_GAP``), a rejected line (no gap), and duplicate deliveries.
"""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from pitwatch.schemas.events import micros_to_datetime
from tests.rules.stream import Baccarat

SKIP = {"gaming_day", "file", "line", "unknown_fields"}


def event_json(ev) -> dict:
    out = {}
    for name, v in ev.to_row().items():
        if v is None or name in SKIP:
            continue
        if name == "ts":
            v = micros_to_datetime(v).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        out[name] = v
    return out


def _unique(b: Baccarat) -> list[dict]:
    rows = []
    for ev in b.events:
        row = event_json(ev)
        row["device_id"] = f"{row['device_id']}-{b.table_id}"
        row["event_id"] = f"{row['device_id']}-{row['seq']:05d}"
        rows.append(row)
    return rows


def table_a() -> list[dict]:
    b = Baccarat(table_id="BAC-A", seed=11)
    b.prepare("P-1", position=10)                  # CUT_PLACEMENT
    b.coup()
    b.coup()
    b.coup()
    b.coup()
    b.empty()
    b.shuffle("P-2")
    b.cut()
    b.load()                                       # no burn: BURN_SKIPPED
    b.coup()
    b.coup(payouts={(2, "player"): ("win", 250.0)})  # PAYOUT (whatever the coup's result)
    b.coup()
    b.coup()
    rows = _unique(b)
    # a switched card: the terminal records another card than the shoe read
    for row in rows:
        if row["type"] == "card_dealt" and row.get("round_id") == "R-2":
            row["card"] = "Ks" if row["card"] != "Ks" else "Kh"
            break
    return rows


def table_b() -> list[dict]:
    b = Baccarat(table_id="BAC-B", seats=(1, 4), seed=21)
    b.shuffle("Q-1", shuffler=False, dealer=False)  # no shuffle record: UNSHUFFLED_PACK at the end
    b.cut(by="seat:1", offers=("seat:1",))
    b.load()
    b.burn()
    b.coup(bets=((1, "banker", 50),))
    b.draw()                                       # drawn, never recorded: UNACCOUNTED_CARD
    b.coup(bets=((4, "player", 20),))
    b.coup(bets=((4, "tie", 5),))
    b.coup()
    b.coup()
    return _unique(b)


def floor() -> dict[str, list[str]]:
    """Per device, its lines in seq order (with the faults of the line stream applied)."""
    devices: dict[str, list[str]] = {}
    for rows in (table_a(), table_b()):
        for row in rows:
            devices.setdefault(row["device_id"], []).append(row)
    out: dict[str, list[str]] = {}
    for dev, rows in devices.items():
        lines = [json.dumps(r) for r in rows]
        if dev == "DT-1-BAC-A":
            lost = next(i for i, r in enumerate(rows) if r["type"] == "player_seated")
            del lines[lost]                                          # SEQ_GAP
            bad = next(i for i, r in enumerate(rows) if r["type"] == "bets_closed" and i > lost)
            lines[bad - 1] = lines[bad - 1].replace('"bets_closed"', '"bets_clozed"')  # rejected, no gap
        if dev.startswith("SHOE-1"):
            lines.insert(30, lines[10])                              # duplicate deliveries
            lines.insert(31, lines[11])
        out[dev] = lines
    return out


def interleave(devices: dict[str, list[str]], seed: int) -> list[tuple[str, str]]:
    """One random arrival order of (device, line) keeping each device's own order."""
    rng = random.Random(seed)
    queues = {d: list(lines) for d, lines in devices.items()}
    order = []
    while queues:
        d = rng.choice(sorted(queues))
        take = rng.randint(1, 6)
        for _ in range(take):
            if queues[d]:
                order.append((d, queues[d].pop(0)))
        if not queues[d]:
            del queues[d]
    return order


def write_batch_input(devices: dict[str, list[str]], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for dev, lines in devices.items():
        with gzip.open(folder / f"{dev}.jsonl.gz", "wt") as f:
            f.write("\n".join(lines) + "\n")


def plain_ids(devices: dict[str, list[str]]) -> dict[str, list[str]]:
    """Every device numbering its events ``E-<seq>``: the same event_ids on every device (contract
    version 2: an event_id is unique only within its device), so events of different devices share ids."""
    out = {}
    for dev, lines in devices.items():
        rows = [json.loads(line) for line in lines]
        out[dev] = [json.dumps({**r, "event_id": f"E-{r['seq']:05d}"}) if "seq" in r else json.dumps(r)
                    for r in rows]
    return out


def conflicting_copy(line: str, **changes) -> str:
    """A copy of ``line`` (same device_id, event_id) with other content."""
    return json.dumps({**json.loads(line), **changes})


FORGER = "DT-ZZ99"


def forged_dealer_in(devices: dict[str, list[str]], reuse: list[tuple[str, str]], table_id: str) -> list[str]:
    """Lines of an invented terminal ``DT-ZZ99``: a ``dealer_in`` on ``table_id`` per
    (genuine device, genuine event_id) in ``reuse``, reusing that event_id, at that event's time."""
    by_key = {(r["device_id"], r["event_id"]): r for lines in devices.values() for r in map(json.loads, lines)}
    return [json.dumps({"event_id": eid, "ts": by_key[(dev, eid)]["ts"], "source": "dealer", "type": "dealer_in",
                        "table_id": table_id, "device_id": FORGER, "seq": n, "dealer_id": "D-FORGED"})
            for n, (dev, eid) in enumerate(reuse, 1)]
