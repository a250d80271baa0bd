"""What it costs to add one small file to a lake of 7 gaming days, against running that file alone.

Usage::

    .venv/bin/python bench/lake_add.py                       # 7 days of 4 tables, 3 repeats
    .venv/bin/python bench/lake_add.py --tables 12 --repeat 1

Simulates 7 gaming days (``--tables`` tables of the default mix), writes them into a lake with
seven nightly runs (``pitwatch run --day D --inbox …``), then times, each ``--repeat`` times on a
copy of that lake, in child processes:

(a) baseline: ``pitwatch run`` of the small file (one device's file of the *first* day, cut to
    its first 200 lines) into an empty lake;
(b) the same file added to the 7-day lake: its day is replayed (the lake's events of the day
    read back, deduplicated with the new ones), then each later day until one ends with the state
    the lake holds (the early stop: docs/nightly.md, "Late files"), and the last day, which a
    one-off run closes at its end;
(c) a file of the *last* day added: only that day is replayed;
(d) the file of (a) and (b) added to a lake holding only its own day (one nightly run): the
    issue's yardstick for (b), which should stay within 1.5x of it.

Prints the median seconds of each and its ratio to (a), and (b)/(d).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RUN = """
import json, time
from pitwatch.lake import Lake
from pitwatch.pipelines.batch import run_batch
t = time.perf_counter()
s = run_batch({inputs!r}, Lake.at({lake!r}), beam_args=["--runner=FnApiRunner"])
print(json.dumps({{"seconds": time.perf_counter() - t, "days": s.gaming_days, "status": s.status}}))
"""


def child(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()

    from pitwatch.simulator import simulate

    work = Path(args.work or tempfile.mkdtemp(prefix="pitwatch-lake-add-"))
    inbox, lake = work / "inbox", work / "lake"
    games = ["baccarat", "three_bet_poker", "combate", "stud"]
    tables = {g: max(1, args.tables // len(games)) for g in games}
    if not inbox.exists():
        print(f"simulating 7 days of {sum(tables.values())} tables …", flush=True)
        simulate(inbox, tables=tables, hours=24 * 7, seed=2, faults={}, workers=2)
    days = sorted(d.name for d in inbox.iterdir() if d.is_dir())[:7]
    if not lake.exists():
        for day in days:
            subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", "--day", day, "--inbox", str(inbox),
                            "--lake", str(lake), "--quiet"], cwd=ROOT, check=True, capture_output=True)
    own_day = work / "lake-first-day"
    if not own_day.exists():
        subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", "--day", days[0], "--inbox", str(inbox),
                        "--lake", str(own_day), "--quiet"], cwd=ROOT, check=True, capture_output=True)
    events = sum(1 for d in days for f in (inbox / d).glob("*.jsonl") for _ in open(f, "rb"))
    print(f"lake: {len(days)} gaming days, {events:,} events", flush=True)

    def small(day: str) -> str:
        src = sorted((inbox / day).glob("DT-*.jsonl"))[0]
        out = work / f"small-{day}.jsonl"
        out.write_bytes(b"".join(open(src, "rb").readlines()[:200]))
        return str(out)

    first, last = small(days[0]), small(days[-1])
    rows = {"(a) the file alone, empty lake": [], "(b) into the lake, first day": [],
            "(c) into the lake, last day": [], "(d) into a lake of its day only": []}
    for r in range(args.repeat):
        for label, file, base in (("(a) the file alone, empty lake", first, None),
                                  ("(b) into the lake, first day", first, lake),
                                  ("(c) into the lake, last day", last, lake),
                                  ("(d) into a lake of its day only", first, own_day)):
            target = work / f"try-{r}"
            shutil.rmtree(target, ignore_errors=True)
            if base is not None:
                shutil.copytree(base, target)
            result = child(RUN.format(inputs=[file], lake=str(target)))
            assert result["status"] == "succeeded", result
            rows[label].append(result["seconds"])
            shutil.rmtree(target, ignore_errors=True)
        print(f"  repeat {r + 1}: " + ", ".join(f"{k[:3]} {v[-1]:.1f} s" for k, v in rows.items()), flush=True)
    base_s = statistics.median(rows["(a) the file alone, empty lake"])
    print()
    for label, times in rows.items():
        s = statistics.median(times)
        print(f"{label:36}{s:8.1f} s   {s / base_s:5.1f} x (a)")
    b, d = (statistics.median(rows[k]) for k in ("(b) into the lake, first day", "(d) into a lake of its day only"))
    print(f"(b) / (d): {b / d:.2f} (target: 1.5 at most)")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
