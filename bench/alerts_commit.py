"""How long an alerts commit holds the watcher's loop: a commit in a thread of the watcher against a
committer process the loop only hands a batch file over to (issue 41, deliverable 1).

Usage::

    .venv/bin/python bench/alerts_commit.py                      # 3,000 earlier commits, 20 s a case
    .venv/bin/python bench/alerts_commit.py --commits 300 --seconds 5   # a quick look

**The lakes.**  *young*: an empty one; *aged*: ``--commits`` earlier watcher commits of one alert
each, made through :class:`pitwatch.live.alerts_table.AlertsTable` as a watcher makes them (data
file, Delta commit, chained ``runs`` record, the table's checkpoints and log archive).  Each case
runs on a fresh copy.

**The loop.**  What the watcher's loop does to a line, in this process: the clean example floor's
lines (``tests/data``) decoded (:func:`pitwatch.schemas.decode.decode_line`) and fed to a
:class:`pitwatch.live.engine.LiveEngine`, line after line, again from the start with a new engine
when they run out.  Every ``--every`` seconds it hands ``--alerts`` alerts to the lake:

* ``thread``: what the watcher did before: :meth:`AlertsTable.send`, then :meth:`AlertsTable.flush`
  in a thread of this process (one at a time, as the checkpoint's writer);
* ``process``: :class:`pitwatch.live.alerts_committer.LakeSink`: the alerts appended to a batch
  file, the batch sealed and handed to the committer process;
* ``none``: no commit (the loop's own gaps).

Printed per case, the median of ``--repeat`` runs (the cases interleaved: a shared machine's load
drifts): lines fed a second, the gaps between two consecutive lines (p99.9, max), the milliseconds a
second lost in gaps of 2 ms or more (the loop held: by the interpreter lock, or by the CPU), and the
median commit time (the thread's ``flush``; the committer's own measure), the commit's CPU time in the
loop's process (the thread's ``time.thread_time``: Python work holding the interpreter lock the loop
waits for; the committer process: none) and the hand-over's time on the loop (``send`` + ``seal``).
On a machine other work shares, the gaps and lines/s move with that work (compare ``none``); the
CPU in the loop's process and the hand-over do not.  Never needs the network.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pitwatch.lake import Lake  # noqa: E402

DAY = _dt.date(2026, 11, 1)
HELD = 0.002        # a gap this long or longer counts as the loop held
WATCH_ID = "bench"
ALERT = {"rule_id": "BURN_SKIPPED", "title": "Burn card skipped", "severity": "high", "table_id": "BAC-01",
         "event_ids": ["e1"], "evidence": [{"device_id": "SHOE-1", "event_id": "e1"}], "expected": "a burn",
         "actual": "none", "source": "live"}


def alert(k: int) -> dict:
    return {**ALERT, "finding_id": f"{k:064d}", "gaming_day": DAY.isoformat(),
            "ts": f"{DAY.isoformat()}T{k % 24:02d}:00:00.000Z"}


def age(lake: Lake, commits: int) -> None:
    from pitwatch.live.alerts_table import AlertsTable

    sink = AlertsTable(lake, WATCH_ID, compaction=False)
    sink.recover({})
    t0 = time.perf_counter()
    for k in range(commits):
        sink.send([alert(k)])
        sink.flush()
        if (k + 1) % 1000 == 0:
            print(f"  aged: {k + 1:,} commits ({time.perf_counter() - t0:.0f} s)", flush=True)


class Loop:
    """The loop's work, one line at a time."""

    def __init__(self) -> None:
        from tests.data import clean_floor_lines

        self.lines = clean_floor_lines()
        self.k = len(self.lines)
        self.step()                     # imports and the first engine: not the loop's gaps

    def step(self) -> None:
        from pitwatch.live.engine import LiveEngine
        from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line

        if self.k == len(self.lines):
            self.config = GamingDayConfig()
            self.engine, self.k = LiveEngine(self.config), 0
        out = decode_line(self.lines[self.k], "floor", self.k + 1, self.config)
        if not isinstance(out, Reject):
            self.engine.feed(out[0])
        self.k += 1


def run_case(lake: Lake, how: str, seconds: float, every: float, alerts: int, first: int) -> dict:
    from pitwatch.live.alerts_committer import LakeSink
    from pitwatch.live.alerts_table import AlertsTable

    state = tempfile.mkdtemp(prefix="bench-state-")
    loop = Loop()
    commit_seconds: list[float] = []
    commit_cpu: list[float] = []        # thread: the commit's CPU time in this process (the lock it holds)
    hand_over: list[float] = []         # process: send + seal, on the loop
    thread: threading.Thread | None = None
    sink = None
    if how == "thread":
        sink = AlertsTable(lake, WATCH_ID)
        sink.recover({"n": first})
    elif how == "process":
        sink = LakeSink(lake, WATCH_ID, state)
        sink.recover({"n": first})
    k = first
    gaps = []
    start = last = time.perf_counter()
    next_hand = start + every
    lines = 0
    while last - start < seconds:
        loop.step()
        lines += 1
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
        if how != "none" and now >= next_hand:
            next_hand = now + every
            batch = [alert(k + i) for i in range(alerts)]
            k += alerts
            if how == "thread":
                assert isinstance(sink, AlertsTable)
                sink.send(batch)
                if thread is None or not thread.is_alive():
                    def flush(table=sink) -> None:
                        t0, cpu0 = time.perf_counter(), time.thread_time()
                        table.flush()
                        commit_seconds.append(time.perf_counter() - t0)
                        commit_cpu.append(time.thread_time() - cpu0)
                    thread = threading.Thread(target=flush)
                    thread.start()
            else:
                assert isinstance(sink, LakeSink)
                t0 = time.perf_counter()
                sink.send(batch)
                done = sink.commits
                sink.seal()
                hand_over.append(time.perf_counter() - t0)
                if sink.commits > done:        # the answer of the commit before, collected by seal()
                    commit_seconds.append(sink.last_seconds)
            last = time.perf_counter()      # the hand-over itself counts in the next gap
    if thread is not None:
        thread.join()
    if isinstance(sink, LakeSink):
        sink.seal(force=True)
        sink.wait()
        sink.close()
    shutil.rmtree(state, ignore_errors=True)
    took = last - start
    held = sum(g for g in gaps if g >= HELD) / took * 1000
    gaps.sort()
    return {"lines": lines / took, "p999": gaps[int(len(gaps) * 0.999)] * 1000, "max": gaps[-1] * 1000,
            "held": held, "commits": len(commit_seconds),
            "commit": statistics.median(commit_seconds) * 1000 if commit_seconds else 0.0,
            "commit_cpu": statistics.median(commit_cpu) * 1000 if commit_cpu else 0.0,
            "commit_cpu_max": max(commit_cpu) * 1000 if commit_cpu else 0.0,
            "hand_over": statistics.median(hand_over) * 1000 if hand_over else 0.0,
            "hand_over_max": max(hand_over) * 1000 if hand_over else 0.0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commits", type=int, default=3000, help="earlier watcher commits of the aged lake")
    p.add_argument("--seconds", type=float, default=20.0, help="each case's length")
    p.add_argument("--every", type=float, default=0.5, help="a hand-over this often (the watcher: --commit-every)")
    p.add_argument("--alerts", type=int, default=20, help="alerts per hand-over")
    p.add_argument("--cases", default="none,thread,process")
    p.add_argument("--repeat", type=int, default=3, help="each case this many times, interleaved")
    p.add_argument("--keep", help="build the lakes here (kept)")
    args = p.parse_args()
    base = Path(args.keep or tempfile.mkdtemp(prefix="bench-alerts-commit-"))
    young, aged = Lake.at(base / "young"), Lake.at(base / "aged")
    if not (base / "aged" / "alerts").exists():
        print(f"ageing {aged}: {args.commits:,} commits", flush=True)
        age(aged, args.commits)
    results: dict[tuple[str, str], list[dict]] = {}
    for k in range(args.repeat):                  # the cases interleaved: a shared machine's load drifts
        for name, lake, first in (("young", young, 0), ("aged", aged, args.commits)):
            for how in args.cases.split(","):
                copy = base / f"run-{name}-{how}"
                shutil.rmtree(copy, ignore_errors=True)
                if (base / name).exists():
                    shutil.copytree(base / name, copy)
                r = run_case(Lake.at(copy), how, args.seconds, args.every, args.alerts, first)
                results.setdefault((name, how), []).append(r)
                print(f"  repeat {k + 1} {name} {how}: {r}", flush=True)
                shutil.rmtree(copy, ignore_errors=True)
    print(f"medians of {args.repeat}: lines/s fed; gaps between two lines (p99.9, max); ms per second lost in "
          f"gaps of {HELD * 1000:.0f} ms or more; commits; median commit (wall); the commit's CPU in the "
          "loop's process (median, max: the interpreter lock it holds); the hand-over on the loop (median, max)")
    print(f"{'lake':6} {'case':8} {'lines/s':>8} {'p99.9':>8} {'max':>8} {'held':>10} {'commits':>7} {'commit':>8} "
          f"{'cpu in':>8} {'cpu max':>8} {'handover':>9} {'hand max':>9}")
    for (name, how), rs in results.items():
        m = {key: statistics.median(r[key] for r in rs) for key in rs[0]}
        print(f"{name:6} {how:8} {m['lines']:>8,.0f} {m['p999']:>6.2f}ms {m['max']:>6.1f}ms {m['held']:>6.1f}ms/s "
              f"{m['commits']:>7.0f} {m['commit']:>6.1f}ms {m['commit_cpu']:>6.1f}ms {m['commit_cpu_max']:>6.1f}ms "
              f"{m['hand_over']:>7.3f}ms {m['hand_over_max']:>7.3f}ms", flush=True)


if __name__ == "__main__":
    main()
