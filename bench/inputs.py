"""Inputs bounded (issue 37, deliverable 1): many small files, and a gzip bomb's memory.

Usage::

    .venv/bin/python bench/inputs.py             # 10,000 one-line files; a 4M-line gzip bomb
    .venv/bin/python bench/inputs.py --quick     # 1,000 files; a 400k-line bomb

Each measure is a real ``pitwatch run`` child process, timed from outside; its peak RSS is
the child's ``ru_maxrss`` (``os.wait4``):

(a) the same ``--files`` lines (a dealer terminal's events) in one ``.jsonl`` file;
(b) those lines as ``--files`` one-line files in one folder: the target is (b) ≤ 5 × (a);
(c) a gzip bomb: ``--bomb-lines`` lines of ``{}`` (each rejected) gzipped, with
    ``--max-rejects-in-a-row 0`` so that every line is read and rejected: the target is a peak
    RSS ≤ 500 MB whatever the number of lines (the rejects are written as they stream);
(d) the same bomb with the default guard (10,000 rejects in a row): read no further, one
    ``INPUT_DAMAGED`` finding.

Prints seconds and peak RSS of each, (b)/(a), and (c)'s RSS against its bound.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def pitwatch_run(*args) -> dict:
    """``pitwatch run ARGS`` in a child process: exit code, seconds, peak RSS (MB), its summary."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "run", *map(str, args), "--quiet"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t
        out.seek(0)
        summary = out.read().decode()
    return {"exit": os.waitstatus_to_exitcode(status), "seconds": seconds, "rss_mb": usage.ru_maxrss / 1024,
            "summary": summary}


def dealer_lines(n: int) -> list[bytes]:
    from tests.pipelines.test_input_damaged import dealer_events

    return [json.dumps(e).encode() + b"\n" for e in dealer_events(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1,000 files and a 400k-line bomb")
    ap.add_argument("--files", type=int, default=None)
    ap.add_argument("--bomb-lines", type=int, default=None)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    files = args.files or (1_000 if args.quick else 10_000)
    bomb_lines = args.bomb_lines or (400_000 if args.quick else 4_000_000)
    work = Path(args.work or tempfile.mkdtemp(prefix="pitwatch-inputs-"))

    lines = dealer_lines(files)
    one = work / "one" / "DT.jsonl"
    many = work / "many"
    bomb = work / "bomb" / "bomb.jsonl.gz"
    if not one.exists():
        one.parent.mkdir(parents=True)
        one.write_bytes(b"".join(lines))
        many.mkdir()
        for i, line in enumerate(lines):
            (many / f"DT-{i:06d}.jsonl").write_bytes(line)
        bomb.parent.mkdir()
        with gzip.open(bomb, "wb", compresslevel=9) as f:
            for done in range(0, bomb_lines, 100_000):
                f.write(b"{}\n" * min(100_000, bomb_lines - done))
    print(f"work folder {work}; bomb {bomb.stat().st_size:,} bytes of {bomb_lines:,} lines", flush=True)

    results = {}
    for name, source, extra in (("one file", one.parent, ()), (f"{files:,} one-line files", many, ()),
                                ("gzip bomb, guard off", bomb.parent, ("--max-rejects-in-a-row", 0)),
                                ("gzip bomb, guard on", bomb.parent, ())):
        lake = work / f"lake-{len(results)}"
        shutil.rmtree(lake, ignore_errors=True)    # a fresh lake each time (a rerun would carry the rows)
        r = pitwatch_run(source, "--lake", lake, *extra)
        results[name] = r
        read = next((line.strip() for line in r["summary"].splitlines() if "lines read" in line), "")
        print(f"{name:<28} exit {r['exit']}  {r['seconds']:7.1f} s  peak RSS {r['rss_mb']:7.0f} MB  {read}",
              flush=True)
    a, b = results["one file"], results[f"{files:,} one-line files"]
    c = results["gzip bomb, guard off"]
    print(f"small files: {b['seconds'] / a['seconds']:.1f}x the one file (target ≤ 5x), "
          f"{1000 * (b['seconds'] - a['seconds']) / files:.2f} ms a file more")
    print(f"gzip bomb of {bomb_lines:,} lines: peak RSS {c['rss_mb']:.0f} MB (target ≤ 500 MB)")


if __name__ == "__main__":
    main()
