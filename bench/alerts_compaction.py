"""What the watcher's compaction of closed gaming days buys the alerts table's readers (issue 35).

Usage::

    .venv/bin/python bench/alerts_compaction.py                  # 10,000 files over 4 closed days
    .venv/bin/python bench/alerts_compaction.py --files 2000 --repeat 1   # a quick look

**Built** through ``pitwatch.live.alerts_table.AlertsTable`` itself, as a watcher writes: ``--files``
commits of one alert each (one data file, one Delta commit, one chained ``runs`` record each),
spread evenly over ``--days`` gaming days that are closed, then a few (:data:`OPEN_COMMITS`) of the
open day after them; the table is written with compaction off (``AlertsTable(compaction=False)``:
a lake from before compaction, or a watcher that could not keep up).

**Measured** on that lake before, then after compaction, in the same run, each a child process
(interpreter start included), the median of ``--repeat``:

1. ``pitwatch sql "select count(*) from alerts"``;
2. ``pitwatch sql "select * from alerts where gaming_day = DATE 'D'"`` (D: the first closed day);
3. ``pitwatch verify --lake L`` (once each: it hashes every data file, the replaced ones too).

Between the two, the compaction itself: a watcher (``compaction=True``) restarted on the lake, its
``compact()`` called once per closed day (what its next commits do, one day each), each timed.
The answers of (1) and (2) must be the same before and after (checked); the table's file count
before and after is printed.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pitwatch.lake import Lake

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIRST_DAY = _dt.date(2026, 11, 1)
OPEN_COMMITS = 5
WATCH_ID = "bench"
ALERT = {"rule_id": "BURN_SKIPPED", "title": "Burn card skipped", "severity": "high", "table_id": "BAC-01",
         "event_ids": ["e1"], "evidence": [{"device_id": "SHOE-1", "event_id": "e1"}], "expected": "a burn",
         "actual": "none", "source": "live"}


def alert(day: _dt.date, k: int) -> dict:
    return {**ALERT, "finding_id": f"{k:064d}", "gaming_day": day.isoformat(),
            "ts": f"{day.isoformat()}T{k % 24:02d}:00:00.000Z"}


def build(lake: Lake, files: int, days: int) -> None:
    from pitwatch.live.alerts_table import AlertsTable

    sink = AlertsTable(lake, WATCH_ID, compaction=False)
    sink.recover({})
    per_day = files // days
    k = 0
    started = time.perf_counter()
    for d in range(days + 1):
        for _ in range(per_day if d < days else OPEN_COMMITS):
            sink.send([alert(FIRST_DAY + _dt.timedelta(days=d), k)])
            sink.flush()
            k += 1
            if k % 1000 == 0:
                print(f"  built {k:,} commits ({time.perf_counter() - started:.0f} s)", flush=True)


def timed(args: list[str], repeat: int) -> tuple[float, str]:
    """The median seconds of ``pitwatch ARGS`` run ``repeat`` times, and its output (the same each time)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    seconds, outputs = [], set()
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "pitwatch.cli", *args], capture_output=True, text=True, env=env)
        seconds.append(time.perf_counter() - t0)
        if out.returncode not in (0,):
            raise SystemExit(f"pitwatch {' '.join(args[:2])} exited {out.returncode}: {out.stderr[-1000:]}")
        outputs.add(out.stdout)
    if len(outputs) != 1:
        raise SystemExit(f"pitwatch {' '.join(args[:2])} answered differently from one run to the next")
    return statistics.median(seconds), outputs.pop()


def table_files(lake: Lake) -> int:
    from pitwatch.lake import delta, delta_log

    delta_log.forget(lake)
    return len(delta.files_at(lake, "alerts", delta.current_version(lake, "alerts")))


def measure(lake: Lake, repeat: int) -> dict:
    at = str(lake)
    day = FIRST_DAY.isoformat()
    count, count_out = timed(["sql", "select count(*) from alerts", "--lake", at, "--format", "csv"], repeat)
    select, select_out = timed(["sql", f"select * from alerts where gaming_day = DATE '{day}' order by finding_id",
                                "--lake", at, "--format", "csv", "--max-rows", "1000000"], repeat)
    verify, _out = timed(["verify", "--lake", at], 1)
    return {"files": table_files(lake), "count": count, "select": select, "verify": verify,
            "answers": (count_out, select_out)}


def compact(lake: Lake) -> list[tuple[str, int, float]]:
    """A restarted watcher's compactions, one closed day each: (day, files replaced, seconds)."""
    from pitwatch.live.alerts_table import AlertsTable

    sink = AlertsTable(lake, WATCH_ID)
    sink.recover({"n": 10 ** 7})
    out = []
    while (due := sink.compaction_due()) is not None:
        t0 = time.perf_counter()
        if sink.compact() is None:
            raise SystemExit(f"gaming day {due[0]} was not compacted")
        out.append((due[0], len(due[1]), time.perf_counter() - t0))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000, help="alerts commits (files) over the closed days")
    parser.add_argument("--days", type=int, default=4, help="closed gaming days they are spread over")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each sql statement (the median)")
    parser.add_argument("--keep", metavar="DIR", help="build the lake in DIR (kept) rather than a temporary folder")
    opts = parser.parse_args()
    base = opts.keep or tempfile.mkdtemp(prefix="pitwatch-compaction-")
    lake = Lake.at(os.path.join(base, "lake"))
    print(f"building {opts.files:,} alerts commits over {opts.days} closed days (+{OPEN_COMMITS} of the open day) "
          f"in {lake}", flush=True)
    t0 = time.perf_counter()
    build(lake, opts.files, opts.days)
    print(f"  built in {time.perf_counter() - t0:.0f} s", flush=True)
    before = measure(lake, opts.repeat)
    done = compact(lake)
    after = measure(lake, opts.repeat)
    if before["answers"] != after["answers"]:
        raise SystemExit("the answers differ after compaction")
    print(f"\nalerts table files: {before['files']:,} before, {after['files']:,} after")
    for day, files, seconds in done:
        print(f"compaction of gaming day {day}: {files:,} files into one in {seconds:.2f} s")
    print(f"{'':42} {'before':>9} {'after':>9} {'ratio':>7}")
    for key, what in (("count", "pitwatch sql select count(*) from alerts"),
                      ("select", "pitwatch sql select * ... gaming_day = D"),
                      ("verify", "pitwatch verify (whole lake)")):
        print(f"{what:42} {before[key]:8.2f}s {after[key]:8.2f}s {before[key] / after[key]:6.1f}x")
    print("answers of both sql statements: the same before and after")


if __name__ == "__main__":
    main()
