"""Throughput of the replay engine (``pitwatch.rules.table.TableReplay``), per game and overall.

Plain script (no pytest, no assertion: it prints figures)::

    .venv/bin/python bench/engine.py                 # ~500k events, best of 3
    .venv/bin/python bench/engine.py --copies 5 --repeat 1 --game combate

The clean example ``tests/data/clean-floor-2h.jsonl.gz`` (six tables, one per
game) is decoded with :func:`pitwatch.schemas.decode.decode_line` and replicated over
``--copies`` table ids: copy *k* suffixes ``table_id``, ``device_id``,
``event_id``, ``pack_id`` and ``round_id`` with ``~k``.  Each table is fed in
the example's order (each device's events in ``seq`` order), then closed and
drained, as the nightly batch does.

Two timings in the same run, on the same events:

* baseline: a plain loop reading every event's main fields into a dict (the
  least any consumer of the events pays);
* engine: ``TableReplay(table_id, reference)``, ``feed`` of every event,
  ``close()``, ``drain_rounds()`` / ``drain_packs()`` / ``drain_pack_sequences()``.

Figures are events per second (best of ``--repeat`` runs) and the engine's
slowdown against the baseline.  The prepared events are frozen out of the cyclic
garbage collector (``gc.freeze()``) before timing, so full collections do not
walk them: the figures measure the engine, not the bench's own heap.
"""
from __future__ import annotations

import argparse
import gc
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pitwatch import seeds  # noqa: E402
from pitwatch.rules.finding import gaming_day_from_config  # noqa: E402
from pitwatch.rules.table import TableReplay  # noqa: E402
from pitwatch.schemas.decode import GamingDayConfig, decode_line  # noqa: E402
from pitwatch.schemas.events import Event  # noqa: E402
from tests.data import clean_floor_lines  # noqa: E402

SUFFIXED = ("table_id", "device_id", "event_id", "pack_id", "round_id")
BASELINE_FIELDS = ("event_id", "ts", "source", "type", "table_id", "device_id", "seq", "pack_id",
                   "round_id", "card", "target", "face", "seat", "spot", "amount", "result")


def load_example(config: GamingDayConfig) -> list[Event]:
    events = []
    for i, raw in enumerate(clean_floor_lines(), 1):
        decoded = decode_line(raw, "clean-floor-2h.jsonl", i, config)
        if isinstance(decoded, tuple):
            events.append(decoded[0])
    return events


def replicate(events: list[Event], copies: int) -> dict[str, tuple[str, str, list[Event]]]:
    """table_id -> (original table_id, game, events in feed order), ``copies`` times the example."""
    games: dict[str, str] = {}
    by_table: dict[str, list[Event]] = {}
    for ev in events:
        by_table.setdefault(ev.table_id, []).append(ev)
        if ev.game and ev.table_id not in games:
            games[ev.table_id] = ev.game
    out = {}
    for k in range(copies):
        for tid, evs in by_table.items():
            rows = []
            for ev in evs:
                row = ev.to_row()
                for name in SUFFIXED:
                    if row[name] is not None:
                        row[name] = f"{row[name]}~{k}"
                rows.append(Event.from_row(row))
            out[f"{tid}~{k}"] = (tid, games.get(tid, "?"), rows)
    return out


def baseline(tables) -> dict[str, float]:
    """Seconds per game of a plain loop touching each event's fields."""
    spent: dict[str, float] = {}
    for _tid, (_orig, game, evs) in tables.items():
        t0 = time.perf_counter()
        sink = []
        for ev in evs:
            sink.append({n: getattr(ev, n) for n in BASELINE_FIELDS})
        spent[game] = spent.get(game, 0.0) + time.perf_counter() - t0
    return spent


def engine(tables, references, gaming_day) -> tuple[dict[str, float], dict[str, int]]:
    """Seconds per game of feed + close + drain, and the findings count per game."""
    spent: dict[str, float] = {}
    findings: dict[str, int] = {}
    for tid, (orig, game, evs) in tables.items():
        ref = references[orig]
        t0 = time.perf_counter()
        rp = TableReplay(tid, reference=ref, gaming_day=gaming_day)
        n = 0
        feed = rp.feed
        for ev in evs:
            n += len(feed(ev))
        n += len(rp.close())
        rp.drain_rounds()
        rp.drain_packs()
        rp.drain_pack_sequences()
        spent[game] = spent.get(game, 0.0) + time.perf_counter() - t0
        findings[game] = findings.get(game, 0) + n
    return spent, findings


def best(runs: list[dict[str, float]]) -> dict[str, float]:
    return {g: min(r[g] for r in runs) for g in runs[0]}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--copies", type=int, default=37, help="copies of the example (37: ~500k events)")
    p.add_argument("--repeat", type=int, default=3, help="runs; the best is shown")
    p.add_argument("--game", action="append", help="only these games (repeatable)")
    args = p.parse_args(argv)

    config = GamingDayConfig()
    t0 = time.perf_counter()
    example = load_example(config)
    tables = replicate(example, args.copies)
    if args.game:
        tables = {k: v for k, v in tables.items() if v[1] in args.game}
    references = {orig: seeds.load_reference(orig) for orig, _g, _e in tables.values()}
    gaming_day = gaming_day_from_config(config)
    counts: dict[str, int] = {}
    for _orig, game, evs in tables.values():
        counts[game] = counts.get(game, 0) + len(evs)
    total = sum(counts.values())
    print(f"example: {len(example)} events; {args.copies} copies -> {len(tables)} tables, {total} events "
          f"(prepared in {time.perf_counter() - t0:.1f} s); best of {args.repeat}")

    # The prepared events (and everything loaded so far) are moved out of the collector's sight:
    # the figures are the engine's, not the cost of the cyclic GC walking the bench's own
    # half-million prepared events on every full collection.
    gc.collect()
    gc.freeze()
    base_runs, eng_runs, found = [], [], {}
    for _ in range(args.repeat):
        gc.collect()
        base_runs.append(baseline(tables))
        gc.collect()
        spent, found = engine(tables, references, gaming_day)
        eng_runs.append(spent)
    base, eng = best(base_runs), best(eng_runs)

    print(f"{'game':<18}{'events':>9}{'baseline ev/s':>15}{'engine ev/s':>13}{'engine s':>10}"
          f"{'x baseline':>12}{'findings':>10}")
    for game in sorted(counts):
        n = counts[game]
        print(f"{game:<18}{n:>9}{n / base[game]:>15,.0f}{n / eng[game]:>13,.0f}{eng[game]:>10.2f}"
              f"{eng[game] / base[game]:>12.1f}{found.get(game, 0):>10}")
    tb, te = sum(base.values()), sum(eng.values())
    print(f"{'overall':<18}{total:>9}{total / tb:>15,.0f}{total / te:>13,.0f}{te:>10.2f}"
          f"{te / tb:>12.1f}{sum(found.values()):>10}")


if __name__ == "__main__":
    main()
