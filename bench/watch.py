"""Benchmark of ``pitwatch watch``: append-to-alert latency, CPU and memory over a long run at a fixed rate.

    .venv/bin/python bench/watch.py                         # 30 min, 5,000 events/s, 400 tables, all six games
    .venv/bin/python bench/watch.py --minutes 4             # a short run
    .venv/bin/python bench/watch.py --minutes 10 --rate 2000 --tables baccarat=60,combate=40 --layout device

Input: a floor written by ``pitwatch simulate`` (``--table-count`` tables, by default 400: a quarter
baccarat, the rest three-bet poker, combate, stud, stud8 and razz in equal shares; ``--tables`` to
choose), long enough for the run at ``--rate`` (about 2,000 events per table-hour), with every fault
kind at ``--faults`` per opportunity (card switches, unaccounted cards, lost lines, payouts …) so
alerts — provisional ones too — come all along the run, and every table deals its own cards (copies
of one table would repeat each other's packs: an ``UNSHUFFLED_SEQUENCE`` at every pack).
``--floor DIR`` keeps the simulated floor for the next run.  The devices' files are merged by the
instant of each line (streamed, day after day: the bench's own memory stays flat) and appended at
``--rate`` lines per second (a flush every 10 ms) to one file per (10 tables, stream) —
``--layout device`` one file per device, ``one`` one file for the floor.

Two children fed the same lines at the same moments, side by side (``--only`` runs one), each a
separate process measured from outside (``/proc``: CPU time, RSS sampled every second):

* ``baseline``: the bare follow-and-decode loop (``FileFollower`` + ``decode_line``), raising a
  pseudo-alert for every 500th line;
* ``watch``: ``pitwatch watch --with-trigger`` with its defaults (engine, order, provisional card
  checks, checkpoints every 5 s, the alerts table committed every 30 s).

Latency of an alert = the moment the bench reads it from the child's stdout − the moment the bench
flushed its trigger line (the line whose arrival raised it; for a provisional alert the line that
showed the disagreement).  Printed per child, for every alert and apart: the alerts decided on
their line's arrival (the target's), those that waited by the contract (``SEQ_GAP`` and
``UNSHUFFLED_PACK`` are decided by waiting ``--gap-wait``, 5 s, for what did not come, and a line
written less than the gap wait after a hole in its device's ``seq`` is held that long), the
provisional ones, and per rule: count, p50, p99, max; CPU %; RSS at the end of each quarter of the
run and the peak.  Targets (issue 30): p99 ≤ 100 ms; the last quarter's RSS within 5 % of the second's.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import heapq
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pitwatch.schemas.contract import GAMES

ROOT = Path(__file__).resolve().parents[1]
WATCH_MAIN = "from pitwatch.cli.watch import watch; watch(prog_name='pitwatch watch')"
PROVISIONAL = "CARD_DISAGREEMENT"
WAITED = ("SEQ_GAP", "UNSHUFFLED_PACK")   # decided by waiting --gap-wait for what did not come
GAP_WAIT = 5.0                            # pitwatch watch's default --gap-wait
GROUP = 10


MIX = (0.25, 0.15, 0.15, 0.15, 0.15, 0.15)        # the default floor's share of each game's tables (GAMES' order)
EVENTS_PER_TABLE_HOUR = 2000                       # about what the simulator writes (measured: 2,090)
FIELD = {k: re.compile(rf'"{k}":"([^"]*)"') for k in ("ts", "table_id", "source", "device_id")}
SEQ = re.compile(r'"seq":(-?\d+)')


def table_mix(count: int) -> str:
    """``--tables`` for ``pitwatch simulate``: ``count`` tables, every game, in :data:`MIX`'s shares."""
    n = [max(1, round(count * share)) for share in MIX]
    n[0] += count - sum(n)
    return ",".join(f"{g}={k}" for g, k in zip(GAMES, n) if k > 0)


def simulate(folder: Path, tables: str, hours: float, faults: float, seed: int) -> None:
    """``pitwatch simulate`` into ``folder`` unless it holds that floor, at least ``hours`` long,
    already (``bench-floor.json``)."""
    wanted = {"tables": tables, "hours": hours, "faults": faults, "seed": seed}
    stamp = folder / "bench-floor.json"
    if stamp.exists():
        have = json.loads(stamp.read_text())
        if have["hours"] >= hours and {**have, "hours": hours} == wanted:
            return                              # that floor, at least as long: its start is played
    if folder.exists():
        shutil.rmtree(folder)
    subprocess.run([sys.executable, "-m", "pitwatch.cli", "simulate", "--out", str(folder), "--tables", tables,
                    "--hours", str(hours), "--faults", str(faults), "--seed", str(seed), "--quiet"],
                   check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    stamp.write_text(json.dumps(wanted))


def _instant(line: str) -> float:
    return _dt.datetime.fromisoformat(FIELD["ts"].search(line).group(1).replace("Z", "+00:00")).timestamp()


class Floor:
    """A simulated floor's lines, every device's merged in time order, day after day (streamed:
    one line of each device file in memory), each with the feed file it is appended to.

    ``layout``: ``pit`` — one file per (10 tables, stream), as a pit's collector writes them;
    ``device`` — one file per device, as the devices write them; ``one`` — one file for the floor.
    """

    def __init__(self, folder: Path, layout: str) -> None:
        self.days = sorted(p for p in folder.iterdir() if p.is_dir())
        tables = set()
        with open(folder / "devices.csv") as f:
            for row in f.read().splitlines()[1:]:
                tables.add(row.split(",")[2])
        tables.discard("*")
        self.pit = {t: k // GROUP for k, t in enumerate(sorted(tables))}
        self.layout = layout
        self.count = sum(1 for day in self.days for p in day.glob("*.jsonl") for _ in open(p, "rb"))
        self.tables = len(tables)

    def _key(self, line: str) -> str:
        if self.layout == "one":
            return "floor"
        if self.layout == "device":
            return FIELD["device_id"].search(line).group(1)
        table = FIELD["table_id"].search(line).group(1)
        return f"g{self.pit.get(table, 999):03d}-{FIELD['source'].search(line).group(1)}"

    def lines(self):
        """(feed file key, device, seq, line) in time order (ties: by device file name)."""
        for day in self.days:
            files = [open(p) for p in sorted(day.glob("*.jsonl"))]
            streams = [((_instant(line), k, line.rstrip("\n")) for line in f) for k, f in enumerate(files)]
            for _t, _k, line in heapq.merge(*streams):
                seq = SEQ.search(line)
                yield (self._key(line), FIELD["device_id"].search(line).group(1),
                       int(seq.group(1)) if seq else None, line)
            for f in files:
                f.close()


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
        return sum(int(x) for x in parts[11:15]) / self.tick   # its own and its waited-for children's

    def sample(self) -> None:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    self.rss.append(int(line.split()[1]) / 1024)
                elif line.startswith("VmHWM:"):
                    self.hwm = int(line.split()[1]) / 1024


class Child:
    """One measured process, its feed folder, and the latencies of the alerts it printed."""

    def __init__(self, mode: str, work: Path, watch_args: tuple = ()) -> None:
        self.mode = mode
        self.feeds = work / f"feeds-{mode}"
        self.feeds.mkdir(parents=True)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if mode == "watch":
            cmd = [sys.executable, "-c", WATCH_MAIN, str(self.feeds), "--lake", str(work / "lake"), "--create-lake",
                   "--state-dir", str(work / "state"), "--with-trigger", "--quiet", *watch_args]
        else:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--baseline-child", str(self.feeds)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)
        self.stats = Proc(self.proc.pid)
        self.handles: dict[str, object] = {}
        self.latency: dict[str, list[float]] = {"all": [], "on arrival": [], "waited": [], "provisional": []}
        self.by_rule: dict[str, list[float]] = {}
        self.unmatched = 0     # alerts whose trigger line is not among the last minute's lines
        self.appended: dict[tuple[str, int], float] = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            now = time.perf_counter()
            rec = json.loads(raw)
            trig = rec.get("trigger")
            got = None if trig is None else self.appended.get((os.path.basename(trig["file"]), trig["line"]))
            if got is None:
                self.unmatched += 1
                continue
            t0, held = got
            rule = rec.get("rule_id", "-")
            self.latency["all"].append(now - t0)
            self.latency["waited" if held or rule in WAITED else "on arrival"].append(now - t0)
            if rule == PROVISIONAL:
                self.latency["provisional"].append(now - t0)
            self.by_rule.setdefault(rule, []).append(now - t0)

    def write(self, key: str, number: int, line: str, stamp: float, held: bool) -> None:
        f = self.handles.get(key)
        if f is None:
            f = self.handles[key] = open(self.feeds / f"{key}.jsonl", "a")
        self.appended[(f"{key}.jsonl", number)] = (stamp, held)
        f.write(line + "\n")

    def flush(self, keys) -> None:
        for key in keys:
            self.handles[key].flush()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(120)
        self.reader.join(5)
        for f in self.handles.values():
            f.close()


def _forget_old(appended: dict, before: float) -> None:
    """Lines flushed long ago that raised nothing (most of them): dropped, so the bench stays flat."""
    for k in [k for k, (t, _held) in appended.items() if t < before]:
        del appended[k]


def play(floor: Floor, modes: tuple, seconds: float, rate: float, work: Path, progress: bool,
         watch_args: tuple = ()) -> list[dict]:
    children = [Child(m, work, watch_args) for m in modes]
    time.sleep(2.0)  # the children's start-up (imports) is not part of the measure
    lines = floor.lines()
    numbers: dict[str, int] = {}
    last_seq: dict[str, int] = {}
    hold_until: dict[str, float] = {}    # device -> until when its lines wait behind a hole in its seq
    cpu0 = [c.stats.cpu() for c in children]
    start = time.perf_counter()
    written, next_sample, next_forget, next_note = 0, start + 1, start + 60, start + 60
    total = int(seconds * rate)
    while written < total:
        now = time.perf_counter()
        due = min(total, int((now - start) * rate))
        stamp = time.perf_counter()   # before the write: a latency is never flattered
        touched = set()
        for _ in range(due - written):
            item = next(lines, None)
            if item is None:
                total = written
                break
            key, device, seq, line = item
            if seq is not None:
                last = last_seq.get(device)
                if last is not None and seq > last + 1:
                    hold_until[device] = stamp + GAP_WAIT + 1.0
                last_seq[device] = max(seq, last if last is not None else seq)
            held = hold_until.get(device, 0.0) > stamp
            numbers[key] = n = numbers.get(key, 0) + 1
            for c in children:
                c.write(key, n, line, stamp, held)
            touched.add(key)
            written += 1
        for c in children:
            c.flush(touched)
        if now >= next_sample:
            for c in children:
                c.stats.sample()
            next_sample += 1
        if now >= next_forget:
            for c in children:
                _forget_old(c.appended, now - 60)
            next_forget += 60
        if progress and now >= next_note:
            print(f"  {now - start:5.0f} s  {written:,} lines", file=sys.stderr, flush=True)
            next_note += 60
        time.sleep(0.01)
    time.sleep(3.0)  # let the last alerts out
    elapsed = time.perf_counter() - start
    results = []
    for c, c0 in zip(children, cpu0):
        c.stats.sample()
        cpu = c.stats.cpu() - c0
        c.stop()
        results.append(_result(c, written, elapsed, cpu))
    return results


def _figures(values: list[float]) -> dict:
    return {"n": len(values),
            "p50": statistics.median(values) if values else None,
            "p99": statistics.quantiles(values, n=100, method="inclusive")[98] if len(values) >= 2 else None,
            "max": max(values) if values else None}


def _result(c: Child, written: int, elapsed: float, cpu: float) -> dict:
    rss = c.stats.rss
    q = len(rss)
    return {"mode": c.mode, "lines": written, "seconds": elapsed, "cpu": cpu / elapsed,
            **{k: _figures(v) for k, v in c.latency.items()},
            "rss_quarters": [rss[min(q - 1, q * i // 4 - 1)] for i in (1, 2, 3, 4)] if q >= 4 else [],
            "rss_peak": c.stats.hwm, "unmatched": c.unmatched,
            "by_rule": {k: _figures(v) for k, v in sorted(c.by_rule.items())}}


def baseline_child(folder: str) -> None:
    """The bare loop: follow the files, decode every line, a pseudo-alert per 500th line."""
    import orjson

    from pitwatch.live.sources import FileFollower
    from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line

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
    ms = lambda v: "      -" if v is None else f"{v * 1000:7.1f}"  # noqa: E731
    quarters = " ".join(f"{v:.0f}" for v in r["rss_quarters"])
    growth = ""
    if len(r["rss_quarters"]) == 4:
        growth = f" (last vs second {(r['rss_quarters'][3] / r['rss_quarters'][1] - 1) * 100:+.1f} %)"

    def row(name, v):
        return f"    {name:<28} {v['n']:>7}  p50 {ms(v['p50'])}  p99 {ms(v['p99'])}  max {ms(v['max'])} ms\n"
    return (f"{r['mode']}: {r['lines']:,} lines in {r['seconds']:.1f} s, CPU {r['cpu'] * 100:.1f} %\n"
            + "".join(row(k, r[k]) for k in ("all", "on arrival", "waited", "provisional"))
            + f"    not timed (no trigger, or over a minute late): {r['unmatched']}\n"
            f"    RSS MB at the end of each quarter {quarters}{growth}, peak {r['rss_peak']:.0f}\n"
            + "    by rule:\n" + "".join(row("  " + k, v) for k, v in r["by_rule"].items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30.0, help="length of the run (default 30)")
    ap.add_argument("--rate", type=float, default=5000.0, help="lines per second (default 5,000)")
    ap.add_argument("--table-count", type=int, default=400, help="tables on the floor, every game (default 400)")
    ap.add_argument("--tables", metavar="GAME=N,…", help="the floor's tables per game instead (pitwatch simulate)")
    ap.add_argument("--faults", type=float, default=0.002, help="pitwatch simulate --faults (default 0.002)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layout", choices=("pit", "device", "one"), default="pit",
                    help="feed files: per (10 tables, stream) (default), per device, or one for the floor")
    ap.add_argument("--floor", metavar="DIR", type=Path,
                    help="keep the simulated floor here and reuse it when the options match (default: a temp dir)")
    ap.add_argument("--only", choices=("baseline", "watch"), help="run only this one")
    ap.add_argument("--watch-args", default="", metavar="'ARGS'",
                    help="more options for pitwatch watch, e.g. '--checkpoint-every 30 --log-file w.log'")
    ap.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    ap.add_argument("--baseline-child", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.baseline_child:
        baseline_child(args.baseline_child)
        return
    tables = args.tables or table_mix(args.table_count)
    count = sum(int(x.split("=")[1]) for x in tables.split(","))
    seconds = args.minutes * 60
    hours = round(seconds * args.rate / (count * EVENTS_PER_TABLE_HOUR) * 1.15 + 0.2, 2)
    modes = ("baseline", "watch") if args.only is None else (args.only,)
    with tempfile.TemporaryDirectory(prefix="pitwatch-bench-") as tmp:
        folder = args.floor or Path(tmp) / "floor"
        simulate(folder, tables, hours, args.faults, args.seed)
        floor = Floor(folder, args.layout)
        print(f"input: {floor.tables} tables ({tables}), {hours} h of play, {floor.count:,} lines, faults "
              f"{args.faults}; playing {min(floor.count, int(seconds * args.rate)):,} at {args.rate:,.0f}/s "
              f"for {args.minutes:g} min, files per {args.layout}", flush=True)
        results = play(floor, modes, seconds, args.rate, Path(tmp), progress=sys.stderr.isatty(),
                       watch_args=tuple(shlex.split(args.watch_args)))
    for r in results:
        print(fmt(r), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
