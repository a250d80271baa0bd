"""With Beam's worker processes, `pitwatch run` still prints its steps' progress and nothing of Beam's
(:mod:`pitwatch.pipelines.progress`), on Beam's own FnApiRunner, named explicitly."""
from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time

import pytest

from pitwatch.pipelines import progress
from pitwatch.simulator import simulate

_WORKER = """
import sys
import pitwatch.pipelines.progress as progress
log = progress.step_log()                      # what a step of pitwatch does before it reports
tag = sys.argv[2] if len(sys.argv) > 2 else "T"
for i in range(int(sys.argv[1])):
    log.info("replayed %s-%d: %d events, é", tag, i, i)
print(progress.route_worker_reports())
"""


def _worker(lines: int, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _WORKER, str(lines)], capture_output=True, text=True,
                          timeout=120, env=env)


def test_reports_of_two_worker_processes_reach_the_run_whole_and_in_their_order(caplog):
    with caplog.at_level(logging.INFO, logger="pitwatch"):
        with progress.WorkerReports():
            env = dict(os.environ)
            workers = [subprocess.Popen([sys.executable, "-c", _WORKER, "300", tag], env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True) for tag in ("A", "B")]
            outs = [w.communicate(timeout=120) for w in workers]
        assert os.environ.get(progress.ENV) is None       # unset once the run is over
    assert [w.returncode for w in workers] == [0, 0], outs
    assert [o.strip() for o, _ in outs] == ["True", "True"]
    assert [e for _, e in outs] == ["", ""]               # nothing through Beam's (or any other) logging
    got = [r.getMessage() for r in caplog.records if r.name == "pitwatch"]
    for tag in ("A", "B"):      # every line of each worker once, whole, in the order it wrote them
        assert [m for m in got if m.startswith(f"replayed {tag}-")] == [
            f"replayed {tag}-{i}: {i} events, é" for i in range(300)]
    assert len(got) == 600


def test_reports_are_printed_while_the_run_lasts():
    seen = []

    class Seen(logging.Handler):
        def emit(self, record):
            seen.append((time.monotonic(), record.getMessage()))

    log = logging.getLogger("pitwatch")
    handler, level = Seen(), log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        with progress.WorkerReports():
            assert _worker(1, dict(os.environ)).returncode == 0
            deadline = time.monotonic() + 10
            while not seen and time.monotonic() < deadline:
                time.sleep(0.05)
            assert [m for _, m in seen] == ["replayed T-0: 0 events, é"]   # before the run ended
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def test_outside_a_run_or_in_the_runs_own_process_the_logger_is_left_alone(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != progress.ENV}
    assert _worker(0, env).stdout.strip() == "False"
    assert _worker(0, {**env, progress.ENV: f"{os.getpid()}:{tmp_path / 'gone.txt'}"}).stdout.strip() == "False"
    assert progress.route_worker_reports({progress.ENV: f"{os.getpid()}:{tmp_path}"}) is False   # our own pid
    assert progress.route_worker_reports({progress.ENV: "not a pid:/x"}) is False


@pytest.mark.slow
def test_cli_run_with_worker_processes_prints_only_pitwatch_lines(tmp_path):
    """With --verbose the workers' own lines (DEBUG: per file, table, partition) reach the terminal."""
    feeds = tmp_path / "feeds"
    simulate(feeds, tables={"baccarat": 1, "stud": 1}, hours=1, seed=5, faults={})
    out = subprocess.run(
        [sys.executable, "-m", "pitwatch.cli", "run", str(feeds / "2026-11-28"), "--lake", str(tmp_path / "lake"),
         "--verbose", "--direct_num_workers=2", "--direct_running_mode=multi_processing"],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")   # every log line is timestamped
    lines = [stamp.sub("", l, count=1) for l in out.stderr.splitlines() if l.strip()]
    assert "pitwatch: embedded runner: 2 worker processes" in lines
    assert any(l.startswith("pitwatch: read 5 input files (") for l in lines)       # the phase's line
    assert any(l.startswith("pitwatch: read /") for l in lines)             # progress from the workers:
    assert any(l.startswith("pitwatch: replayed BAC-") for l in lines)     # each step's own lines
    assert any(l.startswith("pitwatch: wrote events/gaming_day=") for l in lines)
    assert [l for l in lines if not l.startswith("pitwatch: ")] == []       # and nothing else
    assert "succeeded" in out.stdout


def test_the_embedded_default_is_beams_own_fn_api_runner_named_explicitly():
    from apache_beam.options.pipeline_options import StandardOptions
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.runners.runner import create_runner

    from pitwatch.pipelines.batch import DEFAULT_RUNNER, beam_options, worker_processes, worker_reports

    options = beam_options([])
    assert options.view_as(StandardOptions).runner == DEFAULT_RUNNER == "FnApiRunner"    # never Prism
    assert type(create_runner(DEFAULT_RUNNER)) is FnApiRunner
    assert not worker_processes(options)
    big = beam_options(["--direct_num_workers=2", "--direct_running_mode=multi_processing"])
    assert worker_processes(big)
    with worker_reports(big):
        assert os.environ[progress.ENV].startswith(f"{os.getpid()}:")
    assert not worker_processes(beam_options(["--runner=FlinkRunner", "--direct_running_mode=multi_processing"]))
