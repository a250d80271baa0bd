"""With Beam's worker processes, `pitwatch run` still prints its own progress and nothing of Beam's,
and the workers end at once when the run is done (:mod:`pipelines.embedded`)."""
from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys

from apache_beam.portability.api import beam_fn_api_pb2

from pipelines.batch import _WorkerProgress
from pipelines.simulate import simulate


def test_worker_progress_is_relayed_and_beam_chatter_dropped(caplog):
    ours = beam_fn_api_pb2.LogEntry(message='wrote events/gaming_day=2026-11-28: 1,204 rows → "ok"',
                                    log_location="/site-packages/pipelines/graph.py:104")
    theirs = beam_fn_api_pb2.LogEntry(message="Data channel established.",
                                      log_location="/site-packages/apache_beam/runners/worker/data_plane.py:7")
    relay = _WorkerProgress()
    with caplog.at_level(logging.INFO, logger="pitwatch"):
        for entry in (ours, theirs):
            relay.emit(logging.LogRecord("x", logging.INFO, "f", 1, "Worker: %s",
                                         (str(entry).replace("\n", " "),), None))
    assert [r.getMessage() for r in caplog.records if r.name == "pitwatch"] == [
        'wrote events/gaming_day=2026-11-28: 1,204 rows → "ok"']


def test_cli_run_with_worker_processes_prints_only_pitwatch_lines(tmp_path):
    feeds = tmp_path / "feeds"
    simulate(feeds, tables={"baccarat": 1, "stud": 1}, hours=1, seed=5, faults={})
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "run", str(feeds / "2026-11-28"), "--lake", str(tmp_path / "lake"),
         "--direct_num_workers=2", "--direct_running_mode=multi_processing"],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")   # every log line is timestamped
    lines = [stamp.sub("", l, count=1) for l in out.stderr.splitlines() if l.strip()]
    assert "pitwatch: embedded runner: 2 worker processes" in lines
    assert any(l.startswith("pitwatch: replayed BAC-") for l in lines)     # progress from the workers
    assert [l for l in lines if not l.startswith("pitwatch: ")] == []       # and nothing else
    assert "succeeded" in out.stdout


_SPY_WORKERS = """
import json, os, subprocess, sys, threading, time, types
from apache_beam.runners.portability import local_job_service
from pipelines import zygote
from pipelines.batch import run_batch

started = []
class Recorded(subprocess.Popen):       # the real process, its command and exit status remembered
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        started.append(self)
local_job_service.subprocess = types.SimpleNamespace(Popen=Recorded)

zygotes, forked, done = [], set(), threading.Event()
real_start = zygote.WorkerZygote.start.__func__
def start(cls):
    z = real_start(cls)
    zygotes.append(z.pid if z is not None else None)
    return z
zygote.WorkerZygote.start = classmethod(start)
def watch():                            # the zygote's children while the run lasts: the forked workers
    while not done.is_set():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent in zygotes:
                forked.add(int(pid))
        time.sleep(0.02)
watcher = threading.Thread(target=watch, daemon=True)
watcher.start()
run_batch([sys.argv[1]], sys.argv[2], beam_args=["--direct_num_workers=2", "--direct_running_mode=multi_processing"])
done.set()
watcher.join()
print(json.dumps({"workers": [[p.args, p.returncode] for p in started], "forked": len(forked)}))
"""


def _spy_run(feeds, lake, **env) -> tuple[list, int]:
    """The workers Beam started ([command, exit status]) and how many processes the zygote forked."""
    out = subprocess.run([sys.executable, "-c", _SPY_WORKERS, str(feeds), str(lake)],
                         capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    return got["workers"], got["forked"]


def test_worker_processes_are_forked_or_quick_exit_ones_and_exit_cleanly(tmp_path):
    """The runner starts each worker as the shim of a zygote (pipelines.zygote), or, with
    PITWATCH_WORKER_ZYGOTE=0, afresh as `python -m pipelines.embedded`; either way each ends with
    status 0 after the run (a non-zero status would raise in the runner's worker thread), and the
    two runs write the same lake, byte for byte."""
    feeds = tmp_path / "feeds"
    simulate(feeds, tables={"baccarat": 1, "combate": 1}, hours=1, seed=5, faults={})
    forked, n_forked = _spy_run(feeds / "2026-11-28", tmp_path / "forked")
    fresh, n_fresh = _spy_run(feeds / "2026-11-28", tmp_path / "fresh", PITWATCH_WORKER_ZYGOTE="0")
    assert len(forked) == len(fresh) == 2
    assert (n_forked, n_fresh) == (2, 0)     # the shims' workers were the zygote's forks, not fresh ones
    assert all(" -m pipelines.worker_shim " in cmd and status == 0 for cmd, status in forked), forked
    assert all(cmd.endswith(" -m pipelines.embedded") and status == 0 for cmd, status in fresh), fresh
    written = sorted(p.relative_to(tmp_path / "forked") for p in (tmp_path / "forked").rglob("*.parquet")
                     if "runs" not in p.parts)
    assert len(written) >= 5
    for rel in written:
        assert (tmp_path / "forked" / rel).read_bytes() == (tmp_path / "fresh" / rel).read_bytes(), rel


def test_a_failing_worker_still_exits_with_its_error():
    """No control service to talk to: Beam's worker main raises, and the process exits non-zero."""
    env = {k: v for k, v in os.environ.items() if "API_SERVICE_DESCRIPTOR" not in k}
    out = subprocess.run([sys.executable, "-m", "pipelines.embedded"], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode != 0 and "Traceback" in out.stderr


def test_only_the_embedded_default_gets_the_quick_exit_runner():
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.batch import beam_options, embedded_runner
    from pipelines.embedded import EmbeddedRunner

    assert isinstance(embedded_runner(beam_options([])), EmbeddedRunner)
    assert embedded_runner(PipelineOptions(["--runner=FlinkRunner"])) is None
