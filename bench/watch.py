"""Benchmark of ``pitwatch watch``: append-to-alert latency, CPU and memory over a long run at a fixed rate.

    .venv/bin/python bench/watch.py                         # 30 min, 5,000 events/s, 400 tables, all six games
    .venv/bin/python bench/watch.py --minutes 4             # a short run
    .venv/bin/python bench/watch.py --minutes 10 --rate 2000 --tables baccarat=60,combate=40 --layout device
    .venv/bin/python bench/watch.py --scenario skew         # a clean floor, device clocks up to 2 s apart, real speed, 10 min
    .venv/bin/python bench/watch.py --scenario faults       # every fault kind, real speed, 10 min

Scenarios (issue 41), each a set of defaults the other options override:

* ``busy`` (the default): 400 tables, 5,000 lines/s, 30 min, faults 0.002 — latency and memory under load;
* ``skew``: the same floor with no fault, each device's clock off by a constant drawn from
  [−``--skew``, +``--skew``] (2 s), streamed at real speed (each line written when its true
  instant comes), 10 min — a clean floor must raise **no** provisional alert;
* ``faults``: every fault kind at ``--faults`` 0.01, real speed, 10 min — the provisional alerts'
  truth: the share confirmed by their final finding (target ≥ 95 %), and every final card alert
  preceded by its provisional one, decided no later than its round's ``round_ended`` line arrived.

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
run and the peak; and the provisional alerts' truth (raised, cleared, confirmed by a final
``SHOE_CARD_MISMATCH``/``UNACCOUNTED_CARD`` naming them; final card alerts without their provisional
one, or with it decided after the round's end).  Targets (issue 41): p99 ≤ 100 ms on arrival, ≤ 150 ms
for provisional alerts, max ≤ 500 ms; the last quarter's RSS within 5 % of the second's; ``skew``:
0 provisional alerts; ``faults``: ≥ 95 % confirmed, every final card alert preceded by its round's end.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import heapq
import json
import os
import random
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
CLEARED = "CARD_DISAGREEMENT_CLEARED"
FINAL_CARD_RULES = ("SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD")
SCENARIOS = {     # the defaults of each --scenario: minutes, rate (None: real speed), faults, skew
    "busy": {"minutes": 30.0, "rate": 5000.0, "faults": 0.002, "skew": 0.0},
    "skew": {"minutes": 10.0, "rate": None, "faults": 0.0, "skew": 2.0},
    "faults": {"minutes": 10.0, "rate": None, "faults": 0.01, "skew": 0.0},
}
WAITED = ("SEQ_GAP", "UNSHUFFLED_PACK")   # decided by waiting --gap-wait for what did not come
GAP_WAIT = 5.0                            # pitwatch watch's default --gap-wait
GROUP = 10


MIX = (0.25, 0.15, 0.15, 0.15, 0.15, 0.15)        # the default floor's share of each game's tables (GAMES' order)
EVENTS_PER_TABLE_HOUR = 2000                       # about what the simulator writes (measured: 2,090)
FIELD = {k: re.compile(rf'"{k}":"([^"]*)"') for k in ("ts", "table_id", "source", "device_id", "type", "round_id")}
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


def _skewed(line: str, seconds: float) -> str:
    """``line`` with its ``ts`` moved by ``seconds``, written as the device wrote it (its offset, ms)."""
    m = FIELD["ts"].search(line)
    text = m.group(1)
    when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00")) + _dt.timedelta(seconds=seconds)
    moved = when.isoformat(timespec="milliseconds")
    if text.endswith("Z"):
        moved = moved.replace("+00:00", "Z")
    return line[:m.start(1)] + moved + line[m.end(1):]


class Floor:
    """A simulated floor's lines, every device's merged in time order, day after day (streamed:
    one line of each device file in memory), each with the feed file it is appended to.

    ``layout``: ``pit`` — one file per (10 tables, stream), as a pit's collector writes them;
    ``device`` — one file per device, as the devices write them; ``one`` — one file for the floor.
    """

    def __init__(self, folder: Path, layout: str, skew: float = 0.0, seed: int = 1) -> None:
        self.days = sorted(p for p in folder.iterdir() if p.is_dir())
        tables, devices = set(), []
        with open(folder / "devices.csv") as f:
            for row in f.read().splitlines()[1:]:
                tables.add(row.split(",")[2])
                devices.append(row.split(",")[0])
        tables.discard("*")
        self.card_faults = frozenset(       # the rounds where the simulator switched or hid a card
            (f["table_id"], f["round_id"]) for f in map(json.loads, (folder / "truth.jsonl").read_text().splitlines())
            if f["rule_id"] in FINAL_CARD_RULES)
        rng = random.Random(seed)       # each device's clock off by a constant (seconds): --skew
        self.skew = {d: rng.uniform(-skew, skew) for d in sorted(devices)} if skew else {}
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
        """(true instant, feed file key, device, seq, line) in time order (ties: by device file name);
        a skewed device's line carries its clock's time (``ts`` moved by its skew), not the true one."""
        for day in self.days:
            files = [open(p) for p in sorted(day.glob("*.jsonl"))]
            streams = [((_instant(line), k, line.rstrip("\n")) for line in f) for k, f in enumerate(files)]
            for t, _k, line in heapq.merge(*streams):
                seq = SEQ.search(line)
                device = FIELD["device_id"].search(line).group(1)
                if self.skew.get(device):
                    line = _skewed(line, self.skew[device])
                yield t, self._key(line), device, int(seq.group(1)) if seq else None, line
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

    def __init__(self, mode: str, work: Path, watch_args: tuple = (), card_faults: frozenset = frozenset()) -> None:
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
        self.truth = Truth(card_faults)
        self.appended: dict[tuple[str, int], float] = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            now = time.perf_counter()
            rec = json.loads(raw)
            trig = rec.get("trigger")
            got = None if trig is None else self.appended.get((os.path.basename(trig["file"]), trig["line"]))
            self.truth.seen(rec, now, None if got is None else got[0])
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
        if '"type":"round_ended"' in line:
            self.truth.round_ended(FIELD["table_id"].search(line).group(1), FIELD["round_id"].search(line).group(1),
                                   stamp)
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


class Truth:
    """What the provisional alerts turned out to be: raised, cleared, confirmed by a final card alert
    that names them; final card alerts without their provisional alert, or with one decided (its
    trigger line written) after the round's ``round_ended`` line."""

    def __init__(self, card_faults: frozenset = frozenset()) -> None:
        self.card_faults = card_faults      # (table, round) where the simulator switched or hid a card
        self.lock = threading.Lock()
        self.provisional: dict[str, tuple] = {}    # id -> (table, round, trigger stamp or None)
        self.cleared: set[str] = set()
        self.finals: list[tuple] = []              # (rule, provisional id or None, table, round)
        self.ends: dict[tuple[str, str], float] = {}   # (table, round) -> when its round_ended line was written

    def round_ended(self, table: str, round_id: str, stamp: float) -> None:
        with self.lock:
            self.ends.setdefault((table, round_id), stamp)

    def seen(self, rec: dict, now: float, trigger_stamp: float | None) -> None:
        rule = rec.get("rule_id")
        with self.lock:
            if rule == PROVISIONAL:
                self.provisional[rec["provisional_id"]] = (rec.get("table_id"), rec.get("round_id"), trigger_stamp)
            elif rule == CLEARED:
                self.cleared.add(rec["provisional_id"])
            elif rule in FINAL_CARD_RULES:
                self.finals.append((rule, rec.get("provisional_id"), rec.get("table_id"), rec.get("round_id")))

    def figures(self) -> dict:
        with self.lock:
            confirmed = {pid for _r, pid, _t, _rd in self.finals if pid in self.provisional}
            without = [f for f in self.finals if f[1] not in self.provisional]
            late = []
            for _rule, pid, table, round_id in self.finals:
                p = self.provisional.get(pid)
                end = self.ends.get((table, round_id))
                if p is not None and p[2] is not None and end is not None and p[2] > end:
                    late.append(pid)
            on_fault = [pid for pid, (table, round_id, _s) in self.provisional.items()
                        if (table, round_id) in self.card_faults]
            return {"provisional": len(self.provisional), "cleared": len(self.cleared & set(self.provisional)),
                    "confirmed": len(confirmed), "on_a_card_fault": len(on_fault),
                    "undecided": len(set(self.provisional) - confirmed - self.cleared), "finals": len(self.finals),
                    "finals_without_provisional": len(without), "finals_provisional_after_round_end": len(late)}


def _forget_old(appended: dict, before: float) -> None:
    """Lines flushed long ago that raised nothing (most of them): dropped, so the bench stays flat."""
    for k in [k for k, (t, _held) in appended.items() if t < before]:
        del appended[k]


def play(floor: Floor, modes: tuple, seconds: float, rate: float | None, work: Path, progress: bool,
         watch_args: tuple = ()) -> list[dict]:
    """Feed the children the floor's lines: ``rate`` lines a second, or (``rate`` None) at real speed,
    each line when its true instant comes (the floor's first line at the start), for ``seconds``."""
    children = [Child(m, work, watch_args, floor.card_faults) for m in modes]
    time.sleep(2.0)  # the children's start-up (imports) is not part of the measure
    lines = floor.lines()
    numbers: dict[str, int] = {}
    last_seq: dict[str, int] = {}
    hold_until: dict[str, float] = {}    # device -> until when its lines wait behind a hole in its seq
    cpu0 = [c.stats.cpu() for c in children]
    start = time.perf_counter()
    written, next_sample, next_forget, next_note = 0, start + 1, start + 60, start + 60
    total = int(seconds * rate) if rate else floor.count
    pending = next(lines, None)          # the next line (real speed: written once its instant comes)
    first = pending[0] if pending else 0.0
    while written < total and pending is not None:
        now = time.perf_counter()
        if rate is None and now - start >= seconds:
            break
        due = min(total, int((now - start) * rate)) if rate else total
        stamp = time.perf_counter()   # before the write: a latency is never flattered
        touched = set()
        while written < due and pending is not None:
            if rate is None and pending[0] - first > now - start:
                break
            _t, key, device, seq, line = pending
            pending = next(lines, None)
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
        results.append({**_result(c, written, elapsed, cpu), "truth": c.truth.figures()})
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
            + (_truth_line(r["truth"]) if r["mode"] == "watch" else "")
            + "    by rule:\n" + "".join(row("  " + k, v) for k, v in r["by_rule"].items()))


def _truth_line(t: dict) -> str:
    def share(n: int) -> str:
        return f"{n / t['provisional'] * 100:.1f} %" if t["provisional"] else "-"
    return (f"    provisional alerts {t['provisional']}: cleared later {t['cleared']}, confirmed by their final "
            f"finding {t['confirmed']} ({share(t['confirmed'])}), undecided when the run ended {t['undecided']}; "
            f"on a round where the simulator switched or hid a card {t['on_a_card_fault']} "
            f"({share(t['on_a_card_fault'])})\n"
            f"    final card alerts {t['finals']}: without their provisional "
            f"one {t['finals_without_provisional']}, with it decided after the round's end "
            f"{t['finals_provisional_after_round_end']}\n")



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), default="busy",
                    help="the defaults below: busy (30 min, 5,000 lines/s, faults 0.002), skew (a clean floor, "
                         "clocks up to 2 s apart, real speed, 10 min), faults (faults 0.01, real speed, 10 min)")
    ap.add_argument("--minutes", type=float, help="length of the run (busy: 30; skew, faults: 10)")
    ap.add_argument("--rate", type=float, help="lines per second (busy: 5,000); 0: real speed (skew, faults)")
    ap.add_argument("--skew", type=float, help="each device's clock off by up to this many seconds (skew: 2)")
    ap.add_argument("--table-count", type=int, default=400, help="tables on the floor, every game (default 400)")
    ap.add_argument("--tables", metavar="GAME=N,…", help="the floor's tables per game instead (pitwatch simulate)")
    ap.add_argument("--faults", type=float, help="pitwatch simulate --faults (busy: 0.002; skew: 0; faults: 0.01)")
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
    preset = SCENARIOS[args.scenario]
    minutes = args.minutes if args.minutes is not None else preset["minutes"]
    rate = (args.rate if args.rate is not None else preset["rate"]) or None     # None: real speed
    faults = args.faults if args.faults is not None else preset["faults"]
    skew = args.skew if args.skew is not None else preset["skew"]
    tables = args.tables or table_mix(args.table_count)
    count = sum(int(x.split("=")[1]) for x in tables.split(","))
    seconds = minutes * 60
    hours = round((seconds * rate / (count * EVENTS_PER_TABLE_HOUR) if rate else seconds / 3600) * 1.15 + 0.2, 2)
    modes = ("baseline", "watch") if args.only is None else (args.only,)
    with tempfile.TemporaryDirectory(prefix="pitwatch-bench-") as tmp:
        folder = args.floor or Path(tmp) / "floor"
        simulate(folder, tables, hours, faults, args.seed)
        floor = Floor(folder, args.layout, skew, args.seed)
        speed = f"{rate:,.0f}/s" if rate else "real speed"
        print(f"scenario {args.scenario}: {floor.tables} tables ({tables}), {hours} h of play, {floor.count:,} lines, "
              f"faults {faults}, device clocks off by up to {skew:g} s; playing at {speed} for {minutes:g} min, "
              f"files per {args.layout}", flush=True)
        results = play(floor, modes, seconds, rate, Path(tmp), progress=sys.stderr.isatty(),
                       watch_args=tuple(shlex.split(args.watch_args)))
    for r in results:
        print(fmt(r), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
