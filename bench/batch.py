"""The nightly batch against DuckDB's bare JSONL → Parquet conversion, in one run.

Usage::

    .venv/bin/python bench/batch.py                    # 2M events, 3 repeats
    .venv/bin/python bench/batch.py --events 20000000 --repeat 1
    .venv/bin/python bench/batch.py --events 500000 --beam-arg=--direct_num_workers=2 \\
        --beam-arg=--direct_running_mode=multi_processing
    git worktree add /tmp/before 819993f && make -C /tmp/before install
    .venv/bin/python bench/batch.py --before /tmp/before    # (c): the other checkout, same repeats

Simulates a floor of about ``--events`` events (default mix, 24 h, scaled by
tables), then times, each ``--repeat`` times in child processes (so peak
memory is each one's own):

(a) DuckDB: ``COPY (SELECT * FROM read_json(files)) TO … (FORMAT parquet)``;
(b) ``pitwatch run`` over the same files into a fresh lake.

Prints events/s of both, the ratio (b)/(a) with its spread over the repeats,
peak memory (max RSS) of both, and pitwatch's time per phase, measured by
running the pipeline's own functions outside Beam on the same files:
read+decode, group (dedup, feed order and events per table), replay, write (each table's
day slices sorted, then the partitions).
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

EVENTS_PER_TABLE_HOUR = 2600     # the simulator's default mix: 750k events from 12 tables in 24 h


def floor_for(events: float) -> dict[str, int]:
    """Tables per game for about ``events`` events in 24 h: the default mix, scaled."""
    from pitwatch.simulator import DEFAULT_TABLES

    scale = max(1, round(events / (EVENTS_PER_TABLE_HOUR * 24))) / sum(DEFAULT_TABLES.values())
    return {g: max(1, round(n * scale)) for g, n in DEFAULT_TABLES.items()}


_PEAK = """
import atexit, json, os, resource, sys, threading, time
_tree_peak = [0]
def _tree_rss_kb():
    # RSS of this process and all its descendants (Beam's worker processes), from /proc
    parent, rss = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as f:
                fields = dict(l.split(":", 1) for l in f if ":" in l)
            parent[int(pid)] = int(fields["PPid"])
            rss[int(pid)] = int(fields.get("VmRSS", "0 kB").split()[0])
        except (OSError, KeyError, ValueError):
            pass
    tree, me = 0, os.getpid()
    for pid in rss:
        p = pid
        while p not in (0, 1, me) and p in parent:
            p = parent[p]
        if p == me:
            tree += rss[pid]
    return tree
def _sample():
    while True:
        _tree_peak[0] = max(_tree_peak[0], _tree_rss_kb())
        time.sleep(0.5)
threading.Thread(target=_sample, daemon=True).start()
def _peak():
    own = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    sys.stderr.write("PEAK_KB " + str(max(own, _tree_peak[0])) + "\\n")
atexit.register(_peak)
"""


def child(code: str, checkout: Path = ROOT) -> dict:
    """Run python code in its own process (with ``checkout``'s venv and code: another pitwatch for
    ``--before``); it prints one JSON line; returns it with that
    process's peak memory: the largest sum of the RSS of it and its descendants (Beam's
    worker processes), sampled every 0.5 s, or its own max RSS if larger."""
    python = sys.executable if checkout == ROOT else str(checkout / ".venv" / "bin" / "python")
    out = subprocess.run([python, "-c", _PEAK + code], cwd=checkout, check=True, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    peak = [l for l in out.stderr.splitlines() if l.startswith("PEAK_KB ")][-1]
    result["max_rss_mb"] = int(peak.split()[1]) / 1024
    return result


DUCKDB = """
import duckdb, json, time, sys
files, out = {files!r}, {out!r}
t = time.perf_counter()
duckdb.sql(f"COPY (SELECT * FROM read_json({{files!r}}, format='newline_delimited')) TO '{{out}}' (FORMAT parquet)")
print(json.dumps({{"seconds": time.perf_counter() - t}}))
"""

PITWATCH = """
import json, time, logging
from pitwatch.lake import Lake
from pitwatch.pipelines.batch import run_batch
t = time.perf_counter()
s = run_batch({inputs!r}, Lake.at({lake!r}), beam_args={beam_args!r})
print(json.dumps({{"seconds": time.perf_counter() - t, "accepted": s.accepted, "findings": s.findings}}))
"""

PHASES = """
import json, time, gc
from collections import defaultdict
import pyarrow as pa
from pitwatch.inputs.files import expand_inputs
from pitwatch.pipelines.ingest import DecodeChunk, ReadChunks, deduplicate
from pitwatch.pipelines.replay import replay_table, rows_and_events, split_by_day, finding_rows
from pitwatch.lake import Lake, parquet as lakelib
from pitwatch.schemas.arrow import FINDINGS, ROUNDS, PACKS, drop_empty_columns, rows_to_table
from pitwatch.schemas.decode import GamingDayConfig
cfg = GamingDayConfig()
LAKE = Lake.at({lake!r})
files = expand_inputs({inputs!r})
gc.disable()   # as the pipeline's heavy steps run (pitwatch.pipelines.ingest.WithoutCyclicGC)
t = time.perf_counter()
by_table = defaultdict(list)
read, decode = ReadChunks(20000), DecodeChunk(cfg)
for f in files:
    for chunk in read.process(f):
        for out in decode.process(chunk):
            if isinstance(out, tuple):
                by_table[out[0]].append(out[1])
read_decode = time.perf_counter() - t
t = time.perf_counter()
tables = {{k: drop_empty_columns(deduplicate(v, frozenset()).events) for k, v in by_table.items()}}
events, ordered, presorted = {{}}, {{}}, {{}}
for k, v in tables.items():   # as ReplayTable does
    tables[k], events[k], ordered[k], presorted[k] = rows_and_events(v)
group = time.perf_counter() - t
t = time.perf_counter()
outs = defaultdict(list)
for k, evs in events.items():
    rp, findings = replay_table(k, evs, cfg, ordered=ordered[k])
    outs["findings"].append(rows_to_table(finding_rows(findings), FINDINGS))
    rows = rp.take_rows()
    outs["rounds"].append(rows_to_table(rows.rounds, ROUNDS))
    outs["packs"].append(rows_to_table(rows.packs, PACKS))
replay = time.perf_counter() - t
t = time.perf_counter()
pieces = defaultdict(list)   # each table's events per day, sorted for the writer as ReplayTable does (not packed here)
for k, v in tables.items():
    for key, rows in split_by_day("events", v, slices=True):
        pieces[key[1]].append(lakelib.sorted_piece("events", drop_empty_columns(rows), presorted=presorted[k]))
for day, rows in pieces.items():
    lakelib.write_partition(LAKE, "events", day, rows)
for name, parts in outs.items():
    for key, rows in split_by_day(name, pa.concat_tables(parts)):
        lakelib.write_partition(LAKE, name, key[1], [rows])
write = time.perf_counter() - t
print(json.dumps({{"read+decode": read_decode, "group": group, "replay": replay, "write": write}}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=float, default=2e6)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default=None, help="folder for the simulated day and the outputs (default: a temp dir)")
    ap.add_argument("--beam-arg", action="append", default=[], help="extra Beam option for pitwatch run")
    ap.add_argument("--no-phases", action="store_true", help="skip the per-phase measurement")
    ap.add_argument("--before", type=Path, default=None,
                    help="another pitwatch checkout with its own .venv (e.g. a git worktree of an older commit, "
                         "`make install`ed): timed in the same repeats, its ratio printed beside this one's")
    args = ap.parse_args()

    from pitwatch.simulator import simulate

    work = Path(args.work or tempfile.mkdtemp(prefix="pitwatch-bench-"))
    feeds = work / "feeds"
    hours = 24.0
    tables = floor_for(args.events)
    if not feeds.exists():
        print(f"simulating {sum(tables.values())} tables x {hours:g} h …", flush=True)
        sim = simulate(feeds, tables=tables, hours=hours, seed=1, faults={}, workers=2)
        print(f"  {sim.events:,} events in {sim.seconds:.0f} s", flush=True)
    files = sorted(str(p) for p in feeds.rglob("*.jsonl"))
    n_events = sum(1 for f in files for _ in open(f, "rb"))
    size = sum(Path(f).stat().st_size for f in files)
    print(f"input: {len(files)} files, {n_events:,} events, {size / 1e6:,.0f} MB\n", flush=True)

    duck, pit, before = [], [], []
    inputs = [str(feeds / d.name) for d in sorted(feeds.iterdir()) if d.is_dir()]
    for r in range(args.repeat):
        out = work / f"duck-{r}.parquet"
        duck.append(child(DUCKDB.format(files=files, out=str(out))))
        out.unlink(missing_ok=True)
        lake = work / f"lake-{r}"
        pit.append(child(PITWATCH.format(inputs=inputs, lake=str(lake), beam_args=["--runner=FnApiRunner", *args.beam_arg])))
        shutil.rmtree(lake, ignore_errors=True)
        said = f"  repeat {r + 1}: duckdb {duck[-1]['seconds']:.1f} s, pitwatch {pit[-1]['seconds']:.1f} s"
        if args.before:
            before.append(child(PITWATCH.format(inputs=inputs, lake=str(lake),
                                                beam_args=["--runner=FnApiRunner", *args.beam_arg]), args.before))
            shutil.rmtree(lake, ignore_errors=True)
            said += f", before {before[-1]['seconds']:.1f} s"
        print(said, flush=True)

    ratios = [p["seconds"] / d["seconds"] for p, d in zip(pit, duck)]
    d_s = statistics.median(d["seconds"] for d in duck)
    p_s = statistics.median(p["seconds"] for p in pit)
    print()
    print(f"{'':24}{'events/s':>12}{'median s':>10}{'peak MB':>10}")
    print(f"{'(a) duckdb COPY':24}{n_events / d_s:>12,.0f}{d_s:>10.1f}{max(d['max_rss_mb'] for d in duck):>10,.0f}")
    print(f"{'(b) pitwatch run':24}{n_events / p_s:>12,.0f}{p_s:>10.1f}{max(p['max_rss_mb'] for p in pit):>10,.0f}")
    if before:
        b_s = statistics.median(b["seconds"] for b in before)
        print(f"{'(c) before: ' + args.before.name:24}{n_events / b_s:>12,.0f}{b_s:>10.1f}"
              f"{max(b['max_rss_mb'] for b in before):>10,.0f}")
    spread = f"{min(ratios):.1f}-{max(ratios):.1f}" if len(ratios) > 1 else "n/a"
    print(f"ratio (b)/(a): {statistics.median(ratios):.1f} (range {spread} over {len(ratios)} repeat(s))")
    if before:
        after_before = [p["seconds"] / b["seconds"] for p, b in zip(pit, before)]
        print(f"ratio (b)/(c), this pitwatch against the one before: {statistics.median(after_before):.3f} "
              f"(range {min(after_before):.3f}-{max(after_before):.3f}); peak memory "
              f"{max(p['max_rss_mb'] for p in pit):,.0f} MB against {max(b['max_rss_mb'] for b in before):,.0f} MB")
    if not args.no_phases:
        phases = child(PHASES.format(inputs=[str(feeds / d.name) for d in sorted(feeds.iterdir()) if d.is_dir()],
                                     lake=str(work / "lake-phases")))
        total = sum(v for k, v in phases.items() if k != "max_rss_mb")
        print("\npitwatch per phase (its own functions, run outside Beam, one core):")
        for k, v in phases.items():
            if k != "max_rss_mb":
                print(f"  {k:<12} {v:7.1f} s  {100 * v / total:4.0f} %  {n_events / v:>12,.0f} events/s")
        print(f"  {'total':<12} {total:7.1f} s   (one core; (b) runs the same work in Beam, in one worker"
              " process per CPU for inputs of 32 MB or more)")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
