"""Benchmark of ``pitwatch watch``: append-to-alert latency, CPU and memory at a fixed event rate.

    .venv/bin/python bench/watch.py                       # 2,000 events/s, 100 tables, 240 s per run
    .venv/bin/python bench/watch.py --seconds 120 --only watch
    .venv/bin/python bench/watch.py --seconds 60 --rate 4000 --table-count 600 --tables all

Input: the clean example ``tests/data/clean-floor-2h.jsonl.gz`` (six tables,
every game; by default only its shoe tables BAC, COM, TBP — the stud/razz
tables' engine state grows until ``close()``, docs/watch.md) replicated
under new table, device and event ids until there are ``--table-count``
tables (default 100; the last copy may be partial), with faults injected by
editing lines (a card switched on a shoe, a payout amount, a lost line, a cut
out of limits, a duplicate delivery), so alerts come all along the run.
Each table's stream is played again ("laps": later timestamps, the same
devices with their ``seq`` going on, new event, pack and round ids) as often
as needed to fill ``--seconds`` at ``--rate``, so every table stays live for
the whole run.  Lines are appended, in time order across all
copies, to one file per (10 copies, stream), at ``--rate`` lines per second
(a flush every 10 ms).

Two runs in one invocation, each a separate process measured from outside
(``/proc``: CPU time, RSS sampled every second):

* ``baseline``: the bare follow-and-decode loop (``FileFollower`` +
  ``decode_line``), raising a pseudo-alert for every 500th line;
* ``watch``: ``pitwatch watch --with-trigger`` (engine, order, checkpoints
  every 5 s, stdout and lake sinks).

Latency of an alert = the moment the bench reads it from the child's stdout
− the moment the bench flushed its trigger line (the line whose arrival
raised it).  Printed: alerts, p50, p99, max latency; CPU %; RSS at each
quarter of the run and its peak (flat memory = the quarters do not climb).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLEAN = ROOT / "tests" / "data" / "clean-floor-2h.jsonl.gz"
WATCH_MAIN = "from pipelines.cli.watch import watch; watch(prog_name='pitwatch watch')"
GROUP = 10
CARDS = [r + s for r in "A23456789TJQK" for s in "cdhs"]


def _base(tables: tuple, laps: int) -> list[dict]:
    """The clean floor (only ``tables`` prefixes if given), played ``laps`` times one after the other."""
    with gzip.open(CLEAN, "rt") as f:
        base = [json.loads(x) for x in f]
    if tables:
        base = [e for e in base if e["table_id"].startswith(tables)]
    for e in base:
        e["_t"] = _dt.datetime.fromisoformat(e["ts"].replace("Z", "+00:00"))
    t0, t1 = min(e["_t"] for e in base), max(e["_t"] for e in base)
    span = (t1 - t0) + _dt.timedelta(minutes=10)
    seqs: dict[str, list] = {}
    for e in base:
        seqs.setdefault(e["device_id"], []).append(e["seq"])
    seq_span = {d: max(v) - min(v) + 1 for d, v in seqs.items()}   # each lap's seqs follow the last's
    out = []
    for lap in range(laps):
        for e in base:
            r = dict(e)
            if lap:
                r["_t"] = e["_t"] + lap * span
                r["ts"] = r["_t"].astimezone(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
                r["seq"] = e["seq"] + lap * seq_span[e["device_id"]]
                r["event_id"] = f"{e['event_id']}-L{lap}"
                for k in ("pack_id", "round_id"):
                    if r.get(k):
                        r[k] = f"{r[k]}-L{lap}"
            out.append(r)
    out.sort(key=lambda e: (e["_t"], e["device_id"], e["seq"]))
    for e in out:
        e["_t"] = e["_t"].timestamp()   # the order of lines across copies (popped before writing)
    return out


def build_lines(table_count: int, faults_per_copy: int, horizon: float, seed: int = 1,
                tables: tuple = (), laps: int = 1) -> list[tuple[str, str]]:
    """(file key, line) in time order over all copies, faults injected in the first ``horizon`` of each."""
    base = _base(tables, laps)
    per_copy = sorted({e["table_id"] for e in base})
    rng = random.Random(seed)
    out = []
    copies = -(-table_count // len(per_copy))
    for k in range(copies):
        keep = set(per_copy[:table_count - k * len(per_copy)])
        rows = [dict(e, table_id=f"{e['table_id']}-{k:03d}", device_id=f"{e['device_id']}-{k:03d}",
                     event_id=f"{e['event_id']}-{k:03d}") for e in base if e["table_id"] in keep]
        limit = max(10, int(len(rows) * horizon))
        for _ in range(faults_per_copy):
            i = rng.randrange(limit)
            e = rows[i]
            if e is None:
                continue
            kind = rng.choice(["card", "payout", "lost", "cut", "dup"])
            if kind == "card" and e["type"] == "card_drawn" and e.get("card"):
                e["card"] = rng.choice([c for c in CARDS if c != e["card"]])
            elif kind == "payout" and e["type"] == "payout":
                e["amount"] = e["amount"] + 1000
            elif kind == "cut":
                cut = next((j for j in range(i, limit) if rows[j] and rows[j]["type"] == "cut"), None)
                if cut is not None:
                    rows[cut]["position"] = 3
            elif kind == "lost":
                rows[i] = None
            else:
                rows.insert(i + 1, dict(e))
        for e in rows:
            if e is not None:
                key = f"g{k // GROUP:02d}-{e['source']}"
                t = e.pop("_t")
                out.append((t, k, key, json.dumps(e, separators=(",", ":"))))
    out.sort(key=lambda x: (x[0], x[1]))
    return [(key, line) for _ts, _k, key, line in out]


class Proc:
    """Sample a child's CPU time and RSS from /proc."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK")
        self.rss: list[float] = []
        self.hwm = 0.0

    def cpu(self) -> float:
        with open(f"/proc/{self.pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / self.tick

    def sample(self) -> None:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    self.rss.append(int(line.split()[1]) / 1024)
                elif line.startswith("VmHWM:"):
                    self.hwm = int(line.split()[1]) / 1024


def run(mode: str, lines, seconds: float, rate: float, work: Path) -> dict:
    feeds = work / f"feeds-{mode}"
    feeds.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if mode == "watch":
        cmd = [sys.executable, "-c", WATCH_MAIN, str(feeds), "--lake", str(work / f"lake-{mode}"),
               "--with-trigger", "--quiet"]
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--baseline-child", str(feeds)]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)
    proc = Proc(child.pid)
    appended: dict[tuple[str, int], float] = {}
    latencies: list[float] = []
    by_rule: dict[str, list] = {}

    def reader():
        for raw in child.stdout:
            now = time.perf_counter()
            rec = json.loads(raw)
            trig = rec.get("trigger")
            if trig is not None:
                t0 = appended.get((os.path.basename(trig["file"]), trig["line"]))
                if t0 is not None:
                    latencies.append(now - t0)
                    by_rule.setdefault(rec.get("rule_id", "-"), []).append(now - t0)

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    time.sleep(1.5)  # the child's start-up (imports) is not part of the measure
    handles: dict[str, object] = {}
    numbers: dict[str, int] = {}
    cpu0, start = proc.cpu(), time.perf_counter()
    written, next_sample = 0, start + 1
    total = min(len(lines), int(seconds * rate))
    while written < total:
        now = time.perf_counter()
        due = min(total, int((now - start) * rate))
        t = time.perf_counter()   # stamped before the write: a latency is never flattered
        touched = set()
        for key, line in lines[written:due]:
            f = handles.get(key)
            if f is None:
                f = handles[key] = open(feeds / f"{key}.jsonl", "a")
            numbers[key] = numbers.get(key, 0) + 1
            appended[(f"{key}.jsonl", numbers[key])] = t
            f.write(line + "\n")
            touched.add(key)
        for key in touched:
            handles[key].flush()
        written = due
        if now >= next_sample:
            proc.sample()
            next_sample += 1
        time.sleep(0.01)
    time.sleep(2.0)  # let the last alerts out
    proc.sample()
    elapsed = time.perf_counter() - start
    cpu = proc.cpu() - cpu0
    child.terminate()
    child.wait(60)
    th.join(5)
    for f in handles.values():
        f.close()
    q = len(proc.rss)
    return {"mode": mode, "lines": written, "seconds": elapsed, "alerts": len(latencies),
            "p50": statistics.median(latencies) if latencies else None,
            "p99": statistics.quantiles(latencies, n=100, method="inclusive")[98] if len(latencies) >= 2 else None,
            "max": max(latencies) if latencies else None, "cpu": cpu / elapsed,
            "rss_quarters": [proc.rss[min(q - 1, q * i // 4)] for i in (1, 2, 3, 4)] if q else [],
            "rss_peak": proc.hwm,
            "by_rule": {k: (len(v), round(statistics.median(v) * 1000, 1)) for k, v in sorted(by_rule.items())}}


def baseline_child(folder: str) -> None:
    """The bare loop: follow the files, decode every line, a pseudo-alert per 500th line."""
    import orjson

    from live.sources import FileFollower
    from schemas.decode import GamingDayConfig, Reject, decode_line

    follower, cfg, n = FileFollower([folder]), GamingDayConfig(), 0
    out = sys.stdout.buffer
    while True:
        lines = follower.read()
        for line in lines:
            res = decode_line(line.raw, line.file, line.line, cfg)
            n += 1
            if n % 500 == 0 and not isinstance(res, Reject):
                out.write(orjson.dumps({"trigger": {"file": line.file, "line": line.line}}) + b"\n")
                out.flush()
        if not lines:
            time.sleep(0.02)


def fmt(r: dict) -> str:
    ms = lambda v: "-" if v is None else f"{v * 1000:7.1f} ms"  # noqa: E731
    quarters = " ".join(f"{v:.0f}" for v in r["rss_quarters"])
    return (f"{r['mode']:<9} {r['lines']:>8,} lines {r['seconds']:6.1f} s  alerts {r['alerts']:>5}  "
            f"p50 {ms(r['p50'])}  p99 {ms(r['p99'])}  max {ms(r['max'])}  CPU {r['cpu'] * 100:5.1f}%  "
            f"RSS MB by quarter {quarters}  peak {r['rss_peak']:.0f}\n"
            f"          alerts and p50 ms by rule: {r['by_rule']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=240.0)
    ap.add_argument("--rate", type=float, default=2000.0)
    ap.add_argument("--table-count", type=int, default=100, help="tables on the floor (copies of the example's)")
    ap.add_argument("--faults", type=int, default=10, help="faults injected per copy of the example's tables")
    ap.add_argument("--tables", default="BAC,COM,TBP",
                    help="the example's tables to copy, by id prefix ('all': the six, stud and razz included)")
    ap.add_argument("--only", choices=("baseline", "watch"), help="run only this one")
    ap.add_argument("--baseline-child", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.baseline_child:
        baseline_child(args.baseline_child)
        return
    total = int(args.seconds * args.rate)
    tables = () if args.tables == "all" else tuple(t for t in args.tables.split(",") if t)
    one_lap = len(build_lines(args.table_count, 0, 1.0, tables=tables))
    laps = max(1, -(-total // one_lap))
    horizon = min(1.0, total / (laps * one_lap) * 0.9)
    lines = build_lines(args.table_count, args.faults, horizon, tables=tables, laps=laps)
    print(f"input: {args.table_count} tables ({', '.join(tables) or 'all 6'} copied), {laps} lap(s), "
          f"{len(lines):,} lines; playing {min(total, len(lines)):,} at {args.rate:,.0f}/s", flush=True)
    with tempfile.TemporaryDirectory(prefix="pitwatch-bench-") as tmp:
        for mode in ("baseline", "watch"):
            if args.only in (None, mode):
                print(fmt(run(mode, lines, args.seconds, args.rate, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
