"""The nightly batch against DuckDB's bare JSONL → Parquet conversion, in one run.

Usage::

    .venv/bin/python bench/batch.py                    # 2M events, 3 repeats, one file per device
    .venv/bin/python bench/batch.py --events 20000000 --repeat 1
    .venv/bin/python bench/batch.py --layout one       # the same events as one time-ordered file
    .venv/bin/python bench/batch.py --layout both      # both layouts, one after the other, and a summary
    .venv/bin/python bench/batch.py --events 500000 --beam-arg=--direct_num_workers=2 \\
        --beam-arg=--direct_running_mode=multi_processing
    git worktree add /tmp/before 819993f && make -C /tmp/before install
    .venv/bin/python bench/batch.py --before /tmp/before    # (c): the other checkout, same repeats
    .venv/bin/python bench/batch.py --lake s3://bench/lake  # the lake on an S3 API against the disk
    .venv/bin/python bench/batch.py --lake s3://my-bucket/bench --s3-endpoint https://minio:9000

Simulates a floor of about ``--events`` events (default mix, 24 h, scaled by
tables) as one JSONL file per device (``WORK/feeds/<gaming-day>/``), and for
``--layout one`` (or ``both``) also writes, once, every line of those files
into one time-ordered file, ``WORK/one/all.jsonl`` (what a collector or a broker
export gives: the lines byte for byte, stably sorted by their ``ts``). Then, for
each layout, times, each ``--repeat`` times in child processes (so peak memory
is each one's own):

(a) DuckDB: ``COPY (SELECT * FROM read_json(files)) TO … (FORMAT parquet)``;
(b) ``pitwatch run`` over the same files into a fresh lake.

``--lake s3://BUCKET/PATH`` measures the lake's store instead: the same
``pitwatch run --verbose`` (a process, as an operator runs it) over the
per-device files, each repeat once onto a fresh lake on local disk and once
onto a fresh lake under ``s3://BUCKET/PATH``, on the S3 API of ``--s3-endpoint``
(credentials from the standard AWS variables), or, without it, of a moto
server this script starts on 127.0.0.1 (``moto[server]``, the test extra: the
test suite's own ``tests.object_store.S3Server``). Prints both times, the
ratio S3/disk with its spread, and where the difference goes: each run's time
cut at its own log lines into start (imports, the lock or lease, the lake's
state), read+stage (inputs read, decoded and staged in the lake's
``_staging``), replay+write (the days replayed and their data files written),
commit (the Delta commits and the runs record, to the process's end).

Prints, per layout, events/s of both, the ratio (b)/(a) with its spread over the
repeats, peak memory (max RSS of the process tree) of both and the events
pitwatch accepted; with ``--layout both`` a two-line summary after. Then
pitwatch's time per phase on the per-device files, measured by
running the pipeline's own functions outside Beam on the same files:
read+decode, group (dedup, feed order and events per table), replay, write (each table's
day slices sorted, then the partitions).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EVENTS_PER_TABLE_HOUR = 2600     # the simulator's default mix: 750k events from 12 tables in 24 h


def floor_for(events: float) -> dict[str, int]:
    """Tables per game for about ``events`` events in 24 h: the default mix, scaled."""
    from pitwatch.simulator import DEFAULT_TABLES

    scale = max(1, round(events / (EVENTS_PER_TABLE_HOUR * 24))) / sum(DEFAULT_TABLES.values())
    return {g: max(1, round(n * scale)) for g, n in DEFAULT_TABLES.items()}


def _instant(ts: str) -> datetime:
    """An event's ``ts`` (RFC 3339) as an instant."""
    return datetime.fromisoformat(ts[:-1] + "+00:00" if ts.endswith("Z") else ts)


def one_file(files: list[str], path: Path) -> Path:
    """Every line of ``files`` in one time-ordered JSONL file at ``path``, as a collector or a broker
    export gives: the lines byte for byte (a last line without its line end gets one), stably
    sorted by the instant of their ``ts``, so ties keep the order of (file name, line). Written
    once: an existing ``path`` is reused, like the simulated feeds."""
    if path.exists():
        return path
    t = time.perf_counter()
    lines: list[bytes] = []
    instants: list[datetime] = []
    for f in sorted(files):
        with open(f, "rb") as fh:
            for line in fh:
                lines.append(line if line.endswith(b"\n") else line + b"\n")
                instants.append(_instant(orjson.loads(line)["ts"]))
    order = sorted(range(len(lines)), key=instants.__getitem__)   # sorted() is stable
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")   # an interrupted write is not taken for the file
    with open(partial, "wb") as out:
        out.writelines(lines[i] for i in order)
    partial.replace(path)
    print(f"  wrote {path}: {len(lines):,} lines from {len(files)} files in {time.perf_counter() - t:.0f} s",
          flush=True)
    return path


def count_lines(files: list[str]) -> tuple[int, int]:
    """(lines, bytes) of ``files``."""
    n = 0
    for f in files:
        with open(f, "rb") as fh:
            n += sum(1 for _ in fh)
    return n, sum(Path(f).stat().st_size for f in files)


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
    out = subprocess.run([python, "-c", _PEAK + code], cwd=checkout, capture_output=True, text=True)
    if out.returncode:      # what it said last: a failed run's own error, not only its exit status
        sys.exit(f"the measured process ({python}) ended with {out.returncode}:\n" + "\n".join(out.stderr.splitlines()[-25:]))
    result = json.loads(out.stdout.strip().splitlines()[-1])
    peak = [l for l in out.stderr.splitlines() if l.startswith("PEAK_KB ")][-1]
    result["max_rss_mb"] = int(peak.split()[1]) / 1024
    return result


DUCKDB = """
import duckdb, json, time, sys
files, out = {files!r}, {out!r}
t = time.perf_counter()
duckdb.sql(f"COPY (SELECT * FROM read_json({{files!r}}, format='newline_delimited'{sample})) TO '{{out}}' (FORMAT parquet)")
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
from pitwatch.pipelines.ingest import DecodeChunk, ReadChunks, deduplicate, split_by_key
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
            if isinstance(out, pa.Table):      # a chunk's events: every table's
                for table_id, rows in split_by_key(out, "table_id"):
                    by_table[table_id].append(rows)
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


def _accepted(runs: list[dict]) -> str:
    """The events a pitwatch accepted: one number if every repeat agrees, else each repeat's."""
    counts = [r["accepted"] for r in runs]
    return f"{counts[0]:,}" if len(set(counts)) == 1 else " / ".join(f"{c:,}" for c in counts)


def measure(layout: str, files: list[str], inputs: list[str], work: Path, args) -> dict:
    """Time (a) DuckDB's COPY and (b) pitwatch run (and (c) ``--before``'s) over one layout's
    input, alternated in each of ``--repeat`` repeats; print the layout's block of results and
    return its summary."""
    n_events, size = count_lines(files)
    print(f"layout {layout}: {len(files)} file(s), {n_events:,} events, {size / 1e6:,.0f} MB", flush=True)
    beam_args = ["--runner=FnApiRunner", *args.beam_arg]
    duck, pit, before = [], [], []
    for r in range(args.repeat):
        out = work / f"duck-{r}.parquet"
        # one file: DuckDB infers its columns from all of it (its default, the first 20,480 lines, misses
        # the fields of games that deal later in the day and fails); one file per device: as it always ran
        sample = ", sample_size=-1" if layout == "one" else ""
        duck.append(child(DUCKDB.format(files=files, out=str(out), sample=sample)))
        out.unlink(missing_ok=True)
        lake = work / f"lake-{r}"
        pit.append(child(PITWATCH.format(inputs=inputs, lake=str(lake), beam_args=beam_args)))
        shutil.rmtree(lake, ignore_errors=True)
        said = (f"  repeat {r + 1}: duckdb {duck[-1]['seconds']:.1f} s, "
                f"pitwatch {pit[-1]['seconds']:.1f} s ({pit[-1]['accepted']:,} accepted)")
        if args.before:
            before.append(child(PITWATCH.format(inputs=inputs, lake=str(lake), beam_args=beam_args), args.before))
            shutil.rmtree(lake, ignore_errors=True)
            said += f", before {before[-1]['seconds']:.1f} s ({before[-1]['accepted']:,} accepted)"
        print(said, flush=True)

    ratios = [p["seconds"] / d["seconds"] for p, d in zip(pit, duck)]
    d_s = statistics.median(d["seconds"] for d in duck)
    p_s = statistics.median(p["seconds"] for p in pit)
    p_peak = max(p["max_rss_mb"] for p in pit)
    print()
    print(f"{'layout ' + layout:24}{'events/s':>12}{'median s':>10}{'peak MB':>10}{'accepted':>14}")
    print(f"{'(a) duckdb COPY':24}{n_events / d_s:>12,.0f}{d_s:>10.1f}{max(d['max_rss_mb'] for d in duck):>10,.0f}")
    print(f"{'(b) pitwatch run':24}{n_events / p_s:>12,.0f}{p_s:>10.1f}{p_peak:>10,.0f}{_accepted(pit):>14}")
    if before:
        b_s = statistics.median(b["seconds"] for b in before)
        print(f"{'(c) before: ' + args.before.name:24}{n_events / b_s:>12,.0f}{b_s:>10.1f}"
              f"{max(b['max_rss_mb'] for b in before):>10,.0f}{_accepted(before):>14}")
    spread = f"{min(ratios):.1f}-{max(ratios):.1f}" if len(ratios) > 1 else "n/a"
    print(f"ratio (b)/(a): {statistics.median(ratios):.1f} (range {spread} over {len(ratios)} repeat(s))")
    if before:
        after_before = [p["seconds"] / b["seconds"] for p, b in zip(pit, before)]
        print(f"ratio (b)/(c), this pitwatch against the one before: {statistics.median(after_before):.3f} "
              f"(range {min(after_before):.3f}-{max(after_before):.3f}); peak memory "
              f"{p_peak:,.0f} MB against {max(b['max_rss_mb'] for b in before):,.0f} MB")
    print(flush=True)
    return {"layout": layout, "ratio": statistics.median(ratios), "events_s": n_events / p_s, "peak_mb": p_peak}


def print_phases(inputs: list[str], n_events: int, work: Path) -> None:
    """pitwatch's time per phase: its own functions, outside Beam, in one process."""
    phases = child(PHASES.format(inputs=inputs, lake=str(work / "lake-phases")))
    shutil.rmtree(work / "lake-phases", ignore_errors=True)
    total = sum(v for k, v in phases.items() if k != "max_rss_mb")
    print("pitwatch per phase (its own functions, run outside Beam, one core; one file per device):")
    for k, v in phases.items():
        if k != "max_rss_mb":
            print(f"  {k:<12} {v:7.1f} s  {100 * v / total:4.0f} %  {n_events / v:>12,.0f} events/s")
    print(f"  {'total':<12} {total:7.1f} s   (one core; (b) runs the same work in Beam, in one worker"
          " process per CPU for inputs of 32 MB or more)")


_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z pitwatch: (.*)$")
STORE_PHASES = ("start", "read+stage", "replay+write", "commit")


def run_phases(args: list[str], env: dict) -> dict:
    """``pitwatch ARGS --verbose`` as a process: its wall time and that time cut at its own log lines
    (:data:`STORE_PHASES`): start (to its "run …" line), read+stage (to "read N input files"),
    replay+write (to the last "gaming day D replayed"), commit (to the process's end)."""
    started = time.time()
    out = subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", *args, "--verbose"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    ended = time.time()
    if out.returncode:
        sys.exit(f"pitwatch run ended with {out.returncode}:\n" + "\n".join(out.stderr.splitlines()[-25:]))
    marks = {}
    for line in out.stderr.splitlines():
        m = _STAMP.match(line)
        if not m:
            continue
        at = datetime.fromisoformat(m.group(1) + "+00:00").timestamp()
        said = m.group(2)
        if said.startswith("run ") and "start" not in marks:
            marks["start"] = at
        elif re.match(r"read [\d,]+ input files? \(", said):
            marks["read+stage"] = at
        elif re.match(r"gaming day \S+ replayed:", said):
            marks["replay+write"] = at           # the last one: every day written
    if set(marks) != set(STORE_PHASES[:3]):
        sys.exit(f"pitwatch run's log lines were not those expected (found {sorted(marks)}):\n{out.stderr[-3000:]}")
    cuts = [started, marks["start"], marks["read+stage"], marks["replay+write"], ended]
    return {"seconds": ended - started, **{name: cuts[i + 1] - cuts[i] for i, name in enumerate(STORE_PHASES)}}


def s3_environment(args) -> tuple[dict, object]:
    """The child processes' environment for the S3 lake, and the moto server started for it (or None:
    ``--s3-endpoint``, with this environment's credentials)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    if args.s3_endpoint:
        env["AWS_ENDPOINT_URL"] = args.s3_endpoint
        if args.s3_endpoint.startswith("http://"):
            env["AWS_ALLOW_HTTP"] = "true"
        return env, None
    from tests.object_store import S3Server

    server = S3Server(str(Path(tempfile.gettempdir()) / f"pitwatch-bench-moto-{os.getpid()}.log")).start()
    env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    env.update(server.variables, AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    bucket = args.lake.removeprefix("s3://").split("/", 1)[0]
    server.client().create_bucket(Bucket=bucket)
    return env, server


def remove_s3_lake(uri: str, env: dict) -> None:
    """The bench's lake of one repeat, gone (moto keeps every object in its memory)."""
    import pyarrow.fs as pafs

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
        fs.delete_dir(path)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def measure_store(days: list[str], n_events: int, work: Path, args) -> None:
    """Each repeat: pitwatch run onto a fresh lake on local disk, then onto a fresh lake on S3; the
    ratio and where the difference goes."""
    env, server = s3_environment(args)
    where = args.s3_endpoint or f"moto {server.endpoint}"
    print(f"lake on local disk ({work}) against {args.lake} ({where}); {args.repeat} repeat(s)", flush=True)
    beam_args = [*args.beam_arg]
    disk, s3 = [], []
    try:
        for r in range(args.repeat):
            lake = work / f"lake-disk-{r}"
            disk.append(run_phases([*days, "--lake", str(lake), *beam_args], env))
            shutil.rmtree(lake, ignore_errors=True)
            uri = f"{args.lake.rstrip('/')}-{r}"
            s3.append(run_phases([*days, "--lake", uri, *beam_args], env))
            remove_s3_lake(uri, env)
            print(f"  repeat {r + 1}: disk {disk[-1]['seconds']:.1f} s, s3 {s3[-1]['seconds']:.1f} s", flush=True)
    finally:
        if server is not None:
            server.stop()
    ratios = [b["seconds"] / a["seconds"] for a, b in zip(disk, s3)]
    spread = f"{min(ratios):.2f}-{max(ratios):.2f}" if len(ratios) > 1 else "n/a"
    print()
    print(f"{'phase (median s)':20}{'disk':>9}{'s3':>9}{'s3 - disk':>11}")
    for name in ("seconds", *STORE_PHASES):
        a, b = (statistics.median(x[name] for x in runs) for runs in (disk, s3))
        print(f"{'whole run' if name == 'seconds' else name:20}{a:>9.1f}{b:>9.1f}{b - a:>+11.1f}")
    d_s = statistics.median(x["seconds"] for x in disk)
    print(f"events/s: disk {n_events / d_s:,.0f}, s3 {n_events / statistics.median(x['seconds'] for x in s3):,.0f}")
    print(f"ratio s3/disk: {statistics.median(ratios):.2f} (range {spread} over {len(ratios)} repeat(s); target <= 1.5)",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=float, default=2e6)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--layout", choices=("one", "device", "both"), default="device",
                    help="the input's layout: one JSONL file per device (as simulated), one time-ordered "
                         "file of all events (as a collector or a broker export gives), or both in turn")
    ap.add_argument("--work", default=None, help="folder for the simulated day and the outputs (default: a temp dir)")
    ap.add_argument("--beam-arg", action="append", default=[], help="extra Beam option for pitwatch run")
    ap.add_argument("--no-phases", action="store_true", help="skip the per-phase measurement")
    ap.add_argument("--lake", default=None, metavar="s3://BUCKET/PATH",
                    help="measure the lake on an S3 API against the same run onto local disk (see above)")
    ap.add_argument("--s3-endpoint", default=None, metavar="URL",
                    help="with --lake: the S3 API to use (credentials from the AWS variables); default: a moto "
                         "server started on 127.0.0.1")
    ap.add_argument("--before", type=Path, default=None,
                    help="another pitwatch checkout with its own .venv (e.g. a git worktree of an older commit, "
                         "`make install`ed): timed in the same repeats, its ratio printed beside this one's")
    args = ap.parse_args()
    if args.lake is not None and not re.match(r"s3://[^/]+/.", args.lake):
        ap.error(f"--lake must be s3://BUCKET/PATH, got {args.lake!r}")
    if args.s3_endpoint and args.lake is None:
        ap.error("--s3-endpoint goes with --lake")

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
    days = [str(feeds / d.name) for d in sorted(feeds.iterdir()) if d.is_dir()]
    n_events, size = count_lines(files)
    print(f"input: {len(files)} files, {n_events:,} events, {size / 1e6:,.0f} MB\n", flush=True)

    if args.lake:
        measure_store(days, n_events, work, args)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
        return
    summaries = []
    if args.layout in ("device", "both"):
        summaries.append(measure("device", files, days, work, args))
    if args.layout in ("one", "both"):
        one = str(one_file(files, work / "one" / "all.jsonl"))
        summaries.append(measure("one", [one], [one], work, args))
    if len(summaries) > 1:
        print(f"{'layout':10}{'ratio (b)/(a)':>15}{'(b) events/s':>14}{'(b) peak MB':>13}")
        for s in summaries:
            print(f"{s['layout']:10}{s['ratio']:>15.1f}{s['events_s']:>14,.0f}{s['peak_mb']:>13,.0f}")
        print(flush=True)
    if not args.no_phases:
        print_phases(days, n_events, work)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
