"""The floor: builds the tables and their devices, runs them side by side, writes.

Tables are stepped in order of their clocks (a heap), so the whole floor
moves forward in time together and nothing but the current round of each
table is held in memory.  A shared shuffler's events (one ``seq`` across
several tables) wait in a small heap until every table's clock has passed
them (a watermark), then are written in time order.

Devices: every table has a dealer terminal; baccarat, three_bet_poker and
combate tables have a card-reading shoe; baccarat tables have their own
shuffler plus one back-room shuffler shared by all of them (pre-shuffled
packs); three_bet_poker tables share a shuffler by pairs; combate tables
have their own; stud tables share a deck machine by pairs (stud has no shoe:
packs are dealt by hand).
"""
from __future__ import annotations

import collections
import dataclasses
import datetime as _dt
import heapq
import random
import time
from pathlib import Path

import orjson

from pitwatch.inputs.devices import write_registry
from pitwatch.schemas.contract import SHOE_GAMES
from pitwatch.simulator import baccarat_faults, combate_faults, feed_faults  # noqa: F401  (register their faults)
from pitwatch.simulator.baccarat import MAIN_BETS, Baccarat
from pitwatch.simulator.clock import HOUR, MINUTE, GamingDays, to_ms
from pitwatch.simulator.combate import Combate
from pitwatch.simulator.dealers import write_dealers
from pitwatch.simulator.devices import Device, DeviceFactory, Port
from pitwatch.simulator.faults import TruthLog
from pitwatch.simulator.hold_skew import NAME as HOLD_SKEW
from pitwatch.simulator.hold_skew import TRUTH_FILE, HoldSkew
from pitwatch.simulator.reuse import ID_MAP_FILE, write_id_map
from pitwatch.simulator.stud import Razz, Stud, Stud8
from pitwatch.simulator.table import TableConfig
from pitwatch.simulator.three_bet_poker import ThreeBetPoker
from pitwatch.simulator.writer import StreamWriter

REGISTRY_FILE = "devices.csv"   # OUT/devices.csv: the device registry of the floor (pitwatch.inputs.devices)

GAMES = {"baccarat": Baccarat, "three_bet_poker": ThreeBetPoker, "combate": Combate,
         "stud": Stud, "stud8": Stud8, "razz": Razz}
PREFIX = {"baccarat": "BAC", "three_bet_poker": "TBP", "combate": "COM", "stud": "STU", "stud8": "ST8", "razz": "RAZ"}
LOCAL_TIME = {"three_bet_poker": -240, "combate": -240}  # Puerto Rico terminals write -04:00
DEFAULT_TABLES = {"baccarat": 4, "three_bet_poker": 2, "combate": 2, "stud": 2, "stud8": 1, "razz": 1}
DEFAULT_START = _dt.datetime(2026, 11, 28, 20, 0, tzinfo=_dt.timezone.utc)
DEFAULT_HOURS = 8.0


@dataclasses.dataclass
class Summary:
    out_dir: str
    tables: int
    devices: int
    files: int
    events: int
    gaming_days: list[str]
    findings: int
    faults: dict[str, int]
    rules: dict[str, int]
    seconds: float

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


def build_tables(tables: dict[str, int], start_ms: int, end_ms: int, seed: int, rates, truth,
                 reuse_ids: bool = False, gaming_days: GamingDays | None = None) -> tuple[list, list]:
    rng = random.Random(f"{seed}:floor")
    factory = DeviceFactory(rng)
    dealer_pool = list(range(1000, 1000 + 8 * max(1, sum(tables.values())) + 50))
    rng.shuffle(dealer_pool)
    sims = []
    backrooms: dict[int, Device] = {}  # one back-room shuffler per pit of four baccarat tables
    pair_shuffler = {}
    shared_counts = {"tbp": 0, "stud": 0}
    for game, count in tables.items():
        for i in range(1, count + 1):
            code = f"{PREFIX[game]}{i:02d}"
            table_id = f"{PREFIX[game]}-{i:02d}"
            terminal = Port(factory.terminal(code, LOCAL_TIME.get(game, 0)), table_id)
            shoe = Port(factory.shoe(), table_id) if game in SHOE_GAMES else None
            backroom = None
            if game == "baccarat":
                pit = (i - 1) // 4
                if pit not in backrooms:
                    backrooms[pit] = factory.shuffler(shared=True)
                backroom = Port(backrooms[pit], table_id)
            if game in ("baccarat", "combate"):
                shuffler = Port(factory.shuffler(), table_id)
            else:
                kind = "tbp" if game == "three_bet_poker" else "stud"
                group = (kind, shared_counts[kind] // 2)
                shared_counts[kind] += 1
                if group not in pair_shuffler:
                    pair_shuffler[group] = (factory.shuffler(shared=True) if group[0] == "tbp"
                                            else factory.deck_machine(shared=True))
                shuffler = Port(pair_shuffler[group], table_id)
            n_dealers = 4 + int(rng.random() * 3)
            dealers = [f"D-{dealer_pool.pop()}" for _ in range(n_dealers)]
            open_ms = start_ms + int(rng.random() * 10 * MINUTE)
            close_ms = end_ms - int(rng.random() * 10 * MINUTE)
            cfg = TableConfig(table_id, code, open_ms, max(open_ms + MINUTE, close_ms), f"{seed}:{table_id}", dealers,
                              terminal, shoe, shuffler, backroom, rates, truth,
                              reuse_ids=reuse_ids, gaming_days=gaming_days)
            sims.append(GAMES[game](cfg))
    for dev in factory.devices:  # a "shared" device serving one table is just a device
        dev.shared = dev.shared and len(dev.tables) > 1
    skewed = next((sim for sim in sims if isinstance(sim, Baccarat)), None) if rates.get(HOLD_SKEW) else None
    if skewed is not None:    # HOLD_SKEW: the first baccarat table's first dealer (pitwatch.simulator.hold_skew)
        skewed.skew = HoldSkew(skewed.table_id, skewed.cfg.dealers[0], rates[HOLD_SKEW], skewed.cfg.seed,
                               max(MAIN_BETS))
    if rates.get("UNKNOWN_DEVICE"):  # rogue shufflers last: the floor's own devices stay as they were
        for sim in sims:
            sim.cfg.rogue = Port(factory.shuffler(), sim.table_id)
    return sims, factory.devices


def simulate(out_dir, tables: dict[str, int] | None = None, hours: float = DEFAULT_HOURS,
             start: _dt.datetime = DEFAULT_START, seed: int = 1, faults: dict[str, float] | None = None,
             gaming_days: GamingDays | None = None, progress=None, workers: int = 1,
             reuse_ids: bool = False) -> Summary:
    """Write a simulated floor to ``out_dir``: event files per device per gaming day, ``truth.jsonl``
    the device registry ``devices.csv`` (:mod:`pitwatch.simulator.feed_faults`)
    and ``dealers.csv`` (the dealers' roster, :mod:`pitwatch.simulator.dealers`).

    ``tables``: game -> number of tables; ``faults``: fault name -> rate per
    opportunity (see :func:`pitwatch.simulator.faults.build_rates`);
    ``progress(fraction)`` is called now and then with the share of simulated
    time done.  ``workers`` > 1 runs independent groups of tables (tables that
    share no device) in that many processes; the bytes written do not depend
    on it.  ``reuse_ids``: pack and round ids used again as real floors do (packs numbered per
    gaming day and wrapped, rounds per pack, :mod:`pitwatch.simulator.reuse`); the same events as without
    it but for those ids, with ``OUT/reused_ids.csv`` mapping one run's ids onto the other's and
    each id's use in the truth.
    """
    began = time.perf_counter()
    tables = {g: n for g, n in (tables or DEFAULT_TABLES).items() if n}
    for game in tables:
        if game not in GAMES:
            raise ValueError(f"unknown game {game!r}; known: {', '.join(GAMES)}")
    if (faults or {}).get(HOLD_SKEW) and "baccarat" not in tables:    # nothing to skew: say so, write nothing
        raise ValueError(f"{HOLD_SKEW} arranges baccarat coups and the floor has no baccarat table "
                         "(add one to --tables, e.g. baccarat=1)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    args = (str(out), tables, hours, start, seed, faults or {}, gaming_days, reuse_ids)
    floor = build_tables(tables, 0, HOUR, seed, {}, None)[0]
    groups = table_groups(floor)
    from_day = (gaming_days or GamingDays()).day(to_ms(start) - HOUR)[0]
    write_registry(out / REGISTRY_FILE, feed_faults.registry_rows(floor, from_day))
    write_dealers(out, (d for sim in floor for d in sim.cfg.dealers), start)   # the roster, dealers.csv
    parts: list[list] = [[] for _ in range(max(1, min(workers, len(groups))))]
    for k, group in enumerate(sorted(groups, key=lambda g: (-len(g), g))):
        min(parts, key=lambda p: (len(p), parts.index(p))).extend(group)
    jobs = [(args, sorted(p), n, progress if n == 0 else None) for n, p in enumerate(parts)]
    if len(jobs) == 1:
        results = [_run_part(jobs[0])]
    else:
        import multiprocessing

        # "spawn", never "fork": the caller may hold threads (Beam's gRPC, a test runner),
        # and a forked copy of a threaded process can crash.
        with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
            results = pool.map(_run_part, [(a, p, n, None) for a, p, n, _ in jobs])
    findings, by_fault, by_rule = _merge_truth(out, len(jobs))
    if (faults or {}).get(HOLD_SKEW):
        _merge_hold_skew(out, len(jobs))
    if reuse_ids:   # in table order (the floor's), each table's ids in the order it took them
        by_table = sorted((pair for r in results for pair in r[3]), key=lambda pair: pair[0])
        write_id_map(out / ID_MAP_FILE, [row for _, rows in by_table for row in rows])
    files = [f for r in results for f in r[1]]
    days = sorted({Path(f).parent.name for f in files})
    return Summary(str(out), sum(tables.values()), results[0][2], len(files), sum(r[0] for r in results), days,
                   findings, by_fault, by_rule, time.perf_counter() - began)


def table_groups(sims) -> list[list[int]]:
    """Indexes of tables linked by a shared device (they must run in one process)."""
    owner: dict[int, int] = {}
    parent = list(range(len(sims)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, sim in enumerate(sims):
        for port in (sim.dt, sim.shoe_port, sim.cfg.shuffler, sim.cfg.backroom):
            if port is not None:
                j = owner.setdefault(id(port.dev), i)
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(sims)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _run_part(job) -> tuple[int, list[str], int, list]:
    (out, tables, hours, start, seed, faults, gaming_days, reuse_ids), indexes, part, progress = job
    out = Path(out)
    start_ms = to_ms(start)
    end_ms = start_ms + int(hours * HOUR)
    truth = TruthLog(out / f"truth.part-{part}.jsonl")
    days = gaming_days or GamingDays()
    sims, devices = build_tables(tables, start_ms, end_ms, seed, faults, truth, reuse_ids, days)
    mine = [sims[i] for i in indexes]
    writer = StreamWriter(out, days)
    run_floor(mine, writer, start_ms, end_ms, progress)
    writer.close(devices)
    truth.close()
    if faults.get(HOLD_SKEW):
        with open(out / f"hold_skew.part-{part}.jsonl", "wb") as fh:
            for sim in mine:
                if isinstance(sim, Baccarat) and sim.skew is not None:
                    fh.write(orjson.dumps(sim.skew.truth()) + b"\n")
    return writer.events, writer.files, len(devices), [(i, sims[i].ids.rows) for i in indexes]


def _merge_truth(out: Path, parts: int) -> tuple[int, dict, dict]:
    """One ``truth.jsonl`` in a fixed order (table, fault number, finding), whatever the workers."""
    rows = []
    for n in range(parts):
        path = out / f"truth.part-{n}.jsonl"
        rows += [orjson.loads(line) for line in path.read_bytes().splitlines()]
        path.unlink()

    def order(k_row):
        k, row = k_row
        table, number = row["fault_id"].split("/F")
        return (table, int(number), k)

    rows = [row for _, row in sorted(enumerate(rows), key=order)]
    by_fault = collections.Counter(r["fault"].split("/")[0] for r in {r["fault_id"]: r for r in rows}.values())
    by_rule = collections.Counter(r["rule_id"] for r in rows)
    with open(out / "truth.jsonl", "wb") as fh:
        for r in rows:
            fh.write(orjson.dumps(r) + b"\n")
    return len(rows), dict(sorted(by_fault.items())), dict(sorted(by_rule.items()))


def _merge_hold_skew(out: Path, parts: int) -> None:
    """``OUT/hold_skew.json``: the skewed tables' ground truth (a list), in table order, whatever the workers."""
    rows = []
    for n in range(parts):
        path = out / f"hold_skew.part-{n}.jsonl"
        rows += [orjson.loads(line) for line in path.read_bytes().splitlines()]
        path.unlink()
    (out / TRUTH_FILE).write_bytes(orjson.dumps(sorted(rows, key=lambda r: r["table_id"]), option=orjson.OPT_INDENT_2))


def run_floor(sims, writer: StreamWriter, start_ms: int, end_ms: int, progress=None) -> None:
    heap = [(s.t, i) for i, s in enumerate(sims)]
    heapq.heapify(heap)
    held: list = []  # shared-device events waiting for the watermark
    n_held = 0
    steps = 0
    span = max(1, end_ms - start_ms)
    write = writer.write
    while heap:
        _, i = heapq.heappop(heap)
        sim = sims[i]
        alive = sim.step()
        events = sim.out
        sim.out = []
        mine = []
        for ev in events:
            if ev[1].dev.shared:
                n_held += 1
                heapq.heappush(held, (ev[0], i, n_held, ev))
            else:
                mine.append(ev)
        write(mine)
        if alive:
            heapq.heappush(heap, (sim.t, i))
        if held:
            mark = heap[0][0] if heap else float("inf")
            ready = []
            while held and held[0][0] < mark:
                ready.append(heapq.heappop(held)[3])
            if ready:
                write(ready)
        steps += 1
        if progress is not None and steps % 2000 == 0 and heap:
            progress(min(1.0, (heap[0][0] - start_ms) / span))
    if progress is not None:
        progress(1.0)
