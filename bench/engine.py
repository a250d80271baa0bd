"""The replay engine on its own: events per second per game, a table's saved state, a floor's snapshot.

Plain script (no pytest, no assertion: it prints figures)::

    .venv/bin/python bench/engine.py                          # 24 tables x 3 h (~100k events), 5 repeats
    .venv/bin/python bench/engine.py --per-game 2 --hours 1 --repeat 3 --snapshot-tables 40   # a quick look
    .venv/bin/python bench/engine.py --before main            # main's engine too, same run, same input
    git worktree add --detach /tmp/before 3a97806
    .venv/bin/python bench/engine.py --before /tmp/before     # a checkout made beforehand

Input: a clean floor written by the simulator (:func:`pitwatch.simulator.simulate`; ``--per-game``
tables of each of the six games, ``--hours`` of play, ``--faults`` per opportunity, ``--seed``;
``--floor DIR`` keeps it for the next run).  Each measuring process decodes the floor's lines once
(:func:`pitwatch.schemas.decode.decode_line`, as the live service does), puts each table's events in
the batch's feed order (:func:`pitwatch.engine.driver.feed_order`), and moves them out of the cyclic
collector's sight (``gc.freeze()``) — none of that is timed.  The engine is reached only through
its public entry, the driver the batch and the live service use
(:class:`pitwatch.engine.driver.TableDriver`), so the same measurement runs on an engine whose
state is dicts (today) or typed records.  Three measurements:

1. **Events per second**, per game and overall: per table, ``feed_all`` of its events (the
   batch's entry: the cyclic collector paused), ``close()``, ``take_rows()`` and
   ``take_rejects()``; the median of ``--repeat`` runs.  Beside it, a plain loop reading every
   event's main fields into a dict (the least any consumer of the events pays) and the engine's
   time as a multiple of it.
2. **A table's saved state, in bytes**, at a busy moment: each table fed up to the middle of the
   pack open at the middle of its events (a baccarat shoe half dealt, a poker hand half dealt),
   its final rows taken (as both savers do), then its state as the nightly batch saves it
   (``json.dumps(state(), sort_keys=True)``, the ``payload`` of a ``tables`` row of the lake's
   ``state`` table: :mod:`pitwatch.pipelines.replay`, :mod:`pitwatch.lake.state`) and as the
   watcher's checkpoint saves it (``state_json()``, one table's fragment of ``checkpoint.json``:
   :meth:`pitwatch.live.engine.LiveEngine.state_fragments`,
   :meth:`pitwatch.live.checkpoint.StateDir.write_partial`).  Median and max over the tables.
3. **A snapshot of ``--snapshot-tables`` busy tables** (400: ``bench/watch.py``'s floor): that many
   drivers, each built by feeding a floor table's events up to its busy moment (the floor's tables
   in turn), then timed: the checkpoint's serialisation of every table (every table changed since
   the last one, as on a busy floor: ``state_json()`` of each, joined as ``write_partial`` joins
   them; no file written), the nightly form of all of them (the cyclic collector off, as in the
   batch's replay step), and the watcher's restore of all of them from the checkpoint's fragments
   read back (``TableDriver(table_id, gaming_day, state)``, collector on).  Medians of ``--repeat``
   runs.  Before those, untimed but counted: how many objects the tables' state adds to the cyclic
   collector's heap, and the time of a full collection over it (what the watcher's ``gc.freeze``,
   :mod:`pitwatch.live.heap`, spares it).

``--before CHECKOUT`` (a folder holding another checkout of the repository, or a git revision,
checked out for the run into a temporary worktree and removed after) runs the same measuring
part with that checkout's ``pitwatch`` packages (mapped from its ``pyproject.toml`` ahead of this
checkout's, in this virtual environment) on the same floor, right after this checkout's, and
prints the ratio now/before of every line (events per second: above 1 is faster now; times and
bytes: below 1 is faster, smaller now).  Both sides run in child processes of their own, one after the other.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLAIN_FIELDS = ("event_id", "ts", "source", "type", "table_id", "device_id", "seq", "pack_id",
                "round_id", "card", "target", "face", "seat", "spot", "amount", "result")


# --- the measuring part (a child process, with one checkout's pitwatch) ----------------------------

def use_checkout(checkout: Path) -> None:
    """Import ``pitwatch.*`` from ``checkout`` (its ``pyproject.toml``'s package folders), ahead of
    the editable install of this virtual environment.  Call before any pitwatch import."""
    import importlib.util
    import tomllib

    folders = tomllib.loads((checkout / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    mapping = {name: checkout / folder for name, folder in folders.items()}

    class CheckoutFinder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            folder = mapping.get(name)
            if folder is None:      # submodules: found by the default finder in the package's folder
                return None
            return importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                          submodule_search_locations=[str(folder)])

    sys.meta_path.insert(0, CheckoutFinder)


def load_floor(floor: Path):
    """Every line of the floor decoded (untimed): table_id -> events in the batch's feed order."""
    from pitwatch.engine.driver import feed_order
    from pitwatch.schemas.decode import GamingDayConfig, decode_line

    config = GamingDayConfig()
    by_table: dict[str, list] = {}
    rejected = 0
    for path in sorted(floor.glob("*/*.jsonl")):
        with open(path, "rb") as f:
            for i, raw in enumerate(f, 1):
                decoded = decode_line(raw.rstrip(b"\r\n"), path.name, i, config)
                if isinstance(decoded, tuple) and decoded[0].table_id is not None:
                    by_table.setdefault(decoded[0].table_id, []).append(decoded[0])
                else:
                    rejected += 1
    return {tid: list(feed_order(evs)) for tid, evs in sorted(by_table.items())}, config, rejected


def busy_cut(events) -> int:
    """How many of a table's events (feed order) reach its busy moment: the middle of the pack
    whose span (first to last event naming it) lies nearest the middle of the table's events."""
    spans: dict[str, list[int]] = {}
    for i, ev in enumerate(events):
        if ev.pack_id is not None:
            spans.setdefault(ev.pack_id, [i, i])[1] = i
    if not spans:
        return len(events) // 2
    mid = len(events) // 2
    first, last = min(spans.values(), key=lambda s: abs((s[0] + s[1]) // 2 - mid))
    return (first + last) // 2 + 1


def as_bytes(text) -> bytes:
    """``state_json()``'s JSON as bytes (a checkout before the driver's ``state_json`` gave bytes: str)."""
    return text if isinstance(text, bytes) else text.encode()


def plain_loop(events) -> None:
    sink = []
    for ev in events:
        sink.append({n: getattr(ev, n) for n in PLAIN_FIELDS})


def measure(floor: Path, repeat: int, snapshot_tables: int) -> dict:
    import gc

    import orjson

    from pitwatch.engine import driver as driver_module
    from pitwatch.engine.driver import TableDriver
    from pitwatch.rules.finding import gaming_day_from_config

    t0 = time.perf_counter()
    tables, config, rejected = load_floor(floor)
    gaming_day = gaming_day_from_config(config)
    games, counts = {}, {}
    for tid, evs in tables.items():
        probe = TableDriver(tid, gaming_day)
        probe.feed_all(evs[:200])
        games[tid] = probe.game or "?"
        counts[games[tid]] = counts.get(games[tid], 0) + len(evs)
    cuts = {tid: busy_cut(evs) for tid, evs in tables.items()}
    prepared = time.perf_counter() - t0
    gc.collect()
    gc.freeze()             # the prepared events out of the collector's sight: the figures are the engine's

    # 1. events per second
    engine_runs, plain_runs = [], []
    for _ in range(repeat):
        spent: dict[str, float] = {}
        plain: dict[str, float] = {}
        for tid, evs in tables.items():
            game = games[tid]
            d = TableDriver(tid, gaming_day)
            gc.collect()
            t = time.perf_counter()
            d.feed_all(evs)
            d.close()
            d.take_rows()
            d.take_rejects()
            spent[game] = spent.get(game, 0.0) + time.perf_counter() - t
            t = time.perf_counter()
            plain_loop(evs)
            plain[game] = plain.get(game, 0.0) + time.perf_counter() - t
        engine_runs.append(spent)
        plain_runs.append(plain)

    def medians(runs):
        out = {g: statistics.median(r[g] for r in runs) for g in runs[0]}
        out["overall"] = statistics.median(sum(r.values()) for r in runs)
        return out

    # 2. a table's saved state at its busy moment
    busy = {}
    for tid, evs in tables.items():
        d = TableDriver(tid, gaming_day)
        d.feed_all(evs[:cuts[tid]])
        d.take_rows()
        d.take_rejects()
        busy[tid] = d
    state_bytes = {tid: {"nightly": len(json.dumps(d.state(), sort_keys=True).encode()),
                         "checkpoint": len(as_bytes(d.state_json()))} for tid, d in busy.items()}

    # 3. a snapshot of many busy tables, each built by feeding
    order = list(tables)
    floor_tables = []
    gc.collect()
    tracked_before = len(gc.get_objects())
    for k in range(snapshot_tables):
        tid = order[k % len(order)]
        d = TableDriver(tid, gaming_day)
        d.feed_all(tables[tid][:cuts[tid]])
        d.take_rows()
        d.take_rejects()
        floor_tables.append((f"{tid}#{k // len(order)}", tid, d))
    gc.collect()
    tracked = len(gc.get_objects()) - tracked_before   # what the tables' state adds to the collector's heap
    collections = []
    for _ in range(repeat):     # a full collection walking that heap: what gc.freeze spares the watcher
        t = time.perf_counter()
        gc.collect()
        collections.append(time.perf_counter() - t)
    gc.freeze()
    snap = {"checkpoint": [], "nightly": [], "restore": [], "full_collection": collections}
    size = 0
    for _ in range(repeat):
        t = time.perf_counter()
        fragments = {key: as_bytes(d.state_json()) for key, _tid, d in floor_tables}
        data = b"".join([b'{"v":1,"tables":{', b",".join(orjson.dumps(key) + b":" + blob
                                                          for key, blob in sorted(fragments.items())), b"}}"])
        snap["checkpoint"].append(time.perf_counter() - t)
        size = len(data)
        gc.disable()                                    # as the batch's replay step runs (WithoutCyclicGC)
        t = time.perf_counter()
        nightly = [json.dumps(d.state(), sort_keys=True) for _key, _tid, d in floor_tables]
        snap["nightly"].append(time.perf_counter() - t)
        gc.enable()
        del nightly
        loaded = orjson.loads(data)["tables"]          # untimed: the checkpoint file read back
        gc.collect()
        t = time.perf_counter()
        restored = [TableDriver(tid, gaming_day, loaded[key]) for key, tid, _d in floor_tables]
        snap["restore"].append(time.perf_counter() - t)
        del restored, loaded, fragments, data
    return {"engine": str(Path(driver_module.__file__).resolve().parents[1]),
            "prepared_s": prepared, "rejected": rejected, "tables": len(tables), "counts": counts,
            "games": games, "engine_s": medians(engine_runs), "plain_s": medians(plain_runs),
            "state_bytes": state_bytes, "cut_events": cuts,
            "snapshot_s": {k: statistics.median(v) for k, v in snap.items()}, "snapshot_bytes": size,
            "snapshot_tables": snapshot_tables, "tracked_objects": tracked}


# --- the parent: the floor, the children, the table --------------------------------------------------

def run_child(checkout: Path, args) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", str(checkout), "--floor", str(args.floor),
           "--repeat", str(args.repeat), "--snapshot-tables", str(args.snapshot_tables)]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def checkout_of(before: str, keep: list) -> Path:
    """``before`` as a folder, or a git revision checked out into a temporary worktree (removed at the end)."""
    if Path(before, "pyproject.toml").is_file():
        return Path(before).resolve()
    folder = Path(tempfile.mkdtemp(prefix="pitwatch-before-")) / "checkout"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(folder), before], check=True)
    keep.append(folder)
    return folder


def by_game(result: dict, per_table: dict) -> dict[str, list]:
    out: dict[str, list] = {}
    for tid, value in per_table.items():
        out.setdefault(result["games"][tid], []).append(value)
    return out


def lines(result: dict, games: tuple) -> list[tuple[str, list[tuple[str, float, str]]]]:
    """(section, [(label, value, format)]): every figure of one side, in print order."""
    eng, plain, counts = result["engine_s"], result["plain_s"], result["counts"]
    total = sum(counts.values())
    rows = []
    for game in [g for g in games if g in counts] + ["overall"]:
        n = total if game == "overall" else counts[game]
        rows.append((f"{game} ({n:,} events)", n / eng[game], "{:,.0f} ev/s"))
        rows.append((f"{game}: x plain loop", eng[game] / plain[game], "{:.1f}"))
    sections = [("1. events per second (median of repeats)", rows)]
    rows = []
    nightly = by_game(result, {t: b["nightly"] for t, b in result["state_bytes"].items()})
    checkpoint = by_game(result, {t: b["checkpoint"] for t, b in result["state_bytes"].items()})
    for game in [g for g in games if g in checkpoint]:
        rows.append((f"{game}: checkpoint, median", statistics.median(checkpoint[game]), "{:,.0f} B"))
        rows.append((f"{game}: checkpoint, max", max(checkpoint[game]), "{:,.0f} B"))
    for form, values in (("nightly", nightly), ("checkpoint", checkpoint)):
        every = sum(values.values(), [])
        rows.append((f"all tables: {form}, median", statistics.median(every), "{:,.0f} B"))
        rows.append((f"all tables: {form}, max", max(every), "{:,.0f} B"))
    sections.append(("2. a table's saved state at a busy moment (mid-pack)", rows))
    n, snap = result["snapshot_tables"], result["snapshot_s"]
    sections.append((f"3. {n} busy tables (median of repeats)", [
        ("checkpoint: serialise all", snap["checkpoint"] * 1000, "{:,.1f} ms"),
        ("checkpoint: bytes", result["snapshot_bytes"], "{:,.0f} B"),
        ("nightly form of all", snap["nightly"] * 1000, "{:,.1f} ms"),
        ("restore all from the checkpoint", snap["restore"] * 1000, "{:,.1f} ms"),
        ("objects the collector tracks for them", result["tracked_objects"], "{:,.0f}"),
        ("a full collection over them", snap["full_collection"] * 1000, "{:,.1f} ms"),
    ]))
    return sections


def report(now: dict, before: dict | None, games: tuple) -> None:
    theirs = {label: value for _s, rows in lines(before, games) for label, value, _f in rows} if before else {}
    width = 42
    head = f"{'':{width}}{'now':>16}" + (f"{'before':>16}{'now/before':>12}" if before else "")
    for section, rows in lines(now, games):
        print(f"\n{section}\n{head}")
        for label, value, fmt in rows:
            text = f"{label:{width}}{fmt.format(value):>16}"
            if before:
                other = theirs.get(label)
                text += f"{fmt.format(other):>16}{value / other:>12.3f}" if other else f"{'-':>16}"
            print(text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-game", type=int, default=4, help="simulated tables of each game (default 4)")
    ap.add_argument("--hours", type=float, default=3.0, help="hours of play simulated (default 3)")
    ap.add_argument("--faults", type=float, default=0.0, help="every fault at this rate per opportunity (default 0)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--floor", type=Path, default=None,
                    help="folder of the simulated floor: made if missing, kept (default: a temporary folder)")
    ap.add_argument("--repeat", type=int, default=5, help="repeats of each timing; the median is shown")
    ap.add_argument("--snapshot-tables", type=int, default=400, help="busy tables in the snapshot (default 400)")
    ap.add_argument("--before", default=None, metavar="CHECKOUT",
                    help="another checkout (folder) or a git revision: measured too, in the same run")
    ap.add_argument("--measure", type=Path, default=None, help=argparse.SUPPRESS)   # the child's part
    args = ap.parse_args(argv)

    if args.measure is not None:
        use_checkout(args.measure)
        print(json.dumps(measure(args.floor, args.repeat, args.snapshot_tables)))
        return

    from pitwatch.schemas.contract import GAMES

    temp, worktrees = None, []
    try:
        if args.floor is None:
            temp = Path(tempfile.mkdtemp(prefix="pitwatch-bench-engine-"))
            args.floor = temp / "floor"
        stamp = args.floor / "bench-floor.json"
        wanted = {"per_game": args.per_game, "hours": args.hours, "faults": args.faults, "seed": args.seed}
        if not (stamp.exists() and json.loads(stamp.read_text()) == wanted):
            from pitwatch.simulator import build_rates, simulate

            shutil.rmtree(args.floor, ignore_errors=True)
            sim = simulate(args.floor, tables=dict.fromkeys(GAMES, args.per_game), hours=args.hours,
                           seed=args.seed, faults=build_rates(args.faults, None), workers=1)
            stamp.write_text(json.dumps(wanted))
            print(f"simulated {sim.tables} tables x {args.hours:g} h: {sim.events:,} events", flush=True)
        now = run_child(ROOT, args)
        print(f"now:    {now['engine']} ({now['tables']} tables, {sum(now['counts'].values()):,} events, "
              f"{now['rejected']} lines not fed; decoded in {now['prepared_s']:.1f} s)", flush=True)
        before = None
        if args.before:
            checkout = checkout_of(args.before, worktrees)
            before = run_child(checkout, args)
            print(f"before: {before['engine']} ({before['tables']} tables, "
                  f"{sum(before['counts'].values()):,} events, {before['rejected']} lines not fed)", flush=True)
        print(f"median of {args.repeat} repeats; busy moment: the middle of the pack open mid-table "
              f"(median {statistics.median(now['cut_events'].values()):,.0f} events fed a table)")
        report(now, before, GAMES)
    finally:
        for folder in worktrees:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], check=False)
            shutil.rmtree(folder.parent, ignore_errors=True)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
