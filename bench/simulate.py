"""Benchmark ``pitwatch simulate`` against a baseline measured in the same run.

Usage::

    .venv/bin/python bench/simulate.py --events 1000000
    .venv/bin/python bench/simulate.py --events 10000000 --out /tmp/bench-day

The floor is the default mix of games scaled to reach about ``--events``
events over a day.  The baseline writes the same number of events the plain
way: one dict per event, ``orjson.dumps``, written to one file.  Both write
to disk in the same folder.  Prints events/s of each, their ratio and the
peak memory (the simulator streams: memory must not grow with ``--events``).
"""
from __future__ import annotations

import argparse
import math
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson  # noqa: E402

from pitwatch.simulator import DEFAULT_TABLES, simulate  # noqa: E402

EVENTS_PER_TABLE_HOUR = 1900  # measured on the default mix


def baseline(n: int, path: Path) -> float:
    """Seconds to build and write ``n`` event dicts with orjson (the plain way)."""
    ev = {"event_id": "", "ts": "2026-11-28T20:00:01.000Z", "source": "dealer", "type": "card_dealt",
          "table_id": "BAC-01", "device_id": "DT-BAC01", "seq": 0, "dealer_id": "D-1015", "pack_id": "P-BAC01-01",
          "round_id": "BAC-01-0001", "target": "player", "face": "up", "card": "8h"}
    began = time.perf_counter()
    with open(path, "wb") as fh:
        chunk = []
        for i in range(n):
            d = dict(ev)
            d["event_id"] = f"dt-bac01-{i:07d}"
            d["seq"] = i
            chunk.append(orjson.dumps(d))
            if len(chunk) == 10_000:
                fh.write(b"\n".join(chunk) + b"\n")
                chunk.clear()
        fh.write(b"\n".join(chunk) + b"\n" if chunk else b"")
    return time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000, help="about how many events to generate")
    ap.add_argument("--hours", type=float, default=None, help="hours of play (default: 24 from 2M events, else 8)")
    ap.add_argument("--out", type=Path, default=None, help="folder to write into (default: a temporary one)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1, help="processes (the bytes do not depend on it)")
    args = ap.parse_args()
    hours = args.hours or (24.0 if args.events >= 2_000_000 else 8.0)
    base_tables = sum(DEFAULT_TABLES.values())
    scale = max(1, math.ceil(args.events / (EVENTS_PER_TABLE_HOUR * base_tables * hours)))
    tables = {g: n * scale for g, n in DEFAULT_TABLES.items()}
    root = args.out or Path(tempfile.mkdtemp(prefix="pitwatch-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        sim = simulate(root / "floor", tables=tables, hours=hours, seed=args.seed, workers=args.workers)
        base = baseline(sim.events, root / "baseline.jsonl")
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        sim_rate = sim.events / sim.seconds
        base_rate = sim.events / base
        print(f"floor: {sum(tables.values())} tables x {hours:g} h, {sim.files} files, "
              f"{sim.events:,} events, {args.workers} worker(s)")
        print(f"simulate : {sim.seconds:7.2f} s  {sim_rate:12,.0f} events/s")
        print(f"baseline : {base:7.2f} s  {base_rate:12,.0f} events/s  (orjson.dumps of one dict per event)")
        print(f"ratio    : {sim_rate / base_rate:7.2f}x the baseline; 10M events in ~{1e7 / sim_rate:,.0f} s")
        print(f"peak RSS : {peak_mb:,.0f} MB")
    finally:
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
