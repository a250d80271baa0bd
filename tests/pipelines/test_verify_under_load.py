"""``pitwatch verify`` never aborts (issue 35, item 7): 200 runs under load, every exit 0, one JSON.

What was seen: under load, ``verify`` printed ``"intact": true`` and then died with ``terminate
called without an active exception`` (exit -6).  The core dump showed why: one of Arrow's pool
threads dropped the last reference to a ``pq.read_table(pa.BufferReader(bytes))`` scan of a runs
record after the rows had come back; that reference held the Python ``bytes`` (``PyBuffer``), whose
release takes the GIL; the main thread was already finalizing the interpreter, so Python ended the
pool thread (``PyThread_exit_thread``) inside a C++ destructor and the process aborted.  Fixed at
its root in :func:`pitwatch.lake.chain.parquet_rows` (Arrow-owned memory, read on the calling thread).

The abort happens at interpreter exit, so every run must be a process that exits: a loop inside
one process would never see it.  What a run must not pay 200 times is the start-up: importing
pyarrow, numpy and pitwatch is ~0.35 s of the ~0.5 s of a ``pitwatch verify`` of a small lake on
an idle 2-core machine (1.7 s of ~2 s on a loaded one), ~0.5 s of CPU per fresh process against
~0.12 s per forked run (measured: 10 fresh runs 5.1 s user, 30 forked runs 2.8 s user with one
import), so the 200 runs cost ~25 s of CPU instead of ~100 s.  So one real ``python``
process imports the command once (nothing else: no Arrow thread is started before a fork), then
forks 200 children one after the other; each child runs ``pitwatch verify --format json`` through
the command line's own entry point and exits exactly as a fresh ``pitwatch`` does (``SystemExit``,
interpreter finalization, static destructors).  Two processes burn a CPU each beside it.

The abort itself is a race (seen about once in 70 to 250 fresh runs under load before the fix), so
each run also records the threads alive when its interpreter starts to exit: before the fix, two
of Arrow's pool threads; after it, the main thread alone.  That part fails on every run of a
regression, whatever the timing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pitwatch.cli import exits
from tests.pipelines.test_verify import _day, _run

ROOT = Path(__file__).resolve().parents[2]
RUNS = 200

# one process: import once, then fork RUNS children one after the other, each a whole `pitwatch verify`
FORK_RUNS = r"""
import atexit, os, sys
runs, lake, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def threads_at_exit(path):      # the threads alive as the interpreter starts to exit (atexit runs first)
    names = []
    for t in sorted(os.listdir("/proc/self/task")):
        with open(f"/proc/self/task/{t}/comm") as f:
            names.append(("main " if int(t) == os.getpid() else "") + f.read().strip())
    with open(path, "w") as f:
        f.write(" ".join(names))

from pitwatch.cli import main
import pitwatch.cli.verify, pitwatch.lake.verify            # imported, not run: no Arrow thread before a fork
codes = []
for i in range(runs):
    pid = os.fork()
    if pid == 0:                                            # the child: a whole pitwatch verify, then its exit
        fd = os.open(os.path.join(out, f"{i}.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.close(fd)
        atexit.register(threads_at_exit, os.path.join(out, f"{i}.threads"))
        sys.argv = ["pitwatch", "verify", "--lake", lake, "--format", "json"]
        main()                                              # click ends it with sys.exit: the interpreter exits
        os._exit(99)                                        # never reached
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(" ".join(map(str, codes)))
"""

BURN = "while True:\n    pass\n"


@pytest.mark.slow          # the lake is written by a pitwatch run process (a Beam pipeline)
def test_verify_200_times_under_load_exits_0_with_the_same_json(tmp_path):
    lake, feed = tmp_path / "lake", tmp_path / "a.jsonl"
    feed.write_text(_day("2026-11-28", range(1, 6)))
    _run(lake, feed)                  # one run: its two runs records are what verify reads with Parquet
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    env["PYTHONPATH"] = str(ROOT)
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    try:
        result = subprocess.run([sys.executable, "-c", FORK_RUNS, str(RUNS), str(lake), str(out)],
                                capture_output=True, text=True, env=env, timeout=900)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert result.returncode == 0, result.stderr
    codes = [int(c) for c in result.stdout.split()]
    assert len(codes) == RUNS
    assert codes == [exits.DONE] * RUNS, (f"{sum(c != 0 for c in codes)} of {RUNS} runs did not exit 0: "
                                          f"{sorted(set(codes))}; stderr: {result.stderr[-2000:]}")
    assert "terminate called" not in result.stderr and "Fatal Python error" not in result.stderr
    # the cause itself, checked on every run whatever the timing: no library thread (Arrow's pool
    # workers were two) is alive when the interpreter exits
    threads = {(out / f"{i}.threads").read_text() for i in range(RUNS)}
    assert threads == {"main python"}, threads
    outputs = {(out / f"{i}.json").read_text() for i in range(RUNS)}
    assert len(outputs) == 1                                       # every run printed the same JSON
    report = json.loads(outputs.pop())
    assert report["intact"] is True and report["problems"] == [] and report["leftovers"] == []
    assert report["checked"]["runs_records"] == 3 and report["checked"]["data_files"] > 5   # start, intent, end
