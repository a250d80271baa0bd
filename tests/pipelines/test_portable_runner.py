"""The batch on Beam's portable runner (issue 44): the rehearsal for a Flink or Spark cluster, on one machine.

Flink and Spark clusters take a Python pipeline through Beam's portable Job API: a job service the
launching process submits the pipeline to, and SDK workers that run its Python steps.  Here both
are real processes on 127.0.0.1, as ``docs/scale-out.md`` ("The rehearsal") tells an operator to
start them: Beam's local job service (``local_job_service_main``) and an EXTERNAL worker pool
(``worker_pool_main``), and ``pitwatch run … --runner=PortableRunner --job_endpoint=…
--environment_type=EXTERNAL --environment_config=…`` is a real process too.  What it writes must be
what the embedded FnApiRunner writes from the same feeds: every table's whole rows, its data files
byte for byte, and the run's record but for what names the run.  A pitwatch step that held state
outside Beam, or read a file only the launching process can see, would show here first.

Nothing is downloaded: the runner is named, and the SDK's default ``--sdk_location`` stages nothing
for an EXTERNAL environment (the workers run this checkout's own Python and pitwatch).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pitwatch.lake import parquet
from pitwatch.simulator import simulate
from tests import lake_rows
from tests.conftest import process_env, run_pitwatch_process
from tests.object_store import free_port

# The runs record's fields that differ between two runs of the same feeds whatever runner ran them:
# the run's id and times, its command line and options (the runner), and the hashes chaining its
# record to the lake's earlier ones (they hash those).  Every other field must be equal.
RUN_NAMING = ("run_id", "command", "options", "started", "ended", "record_sha256", "prev_record_sha256",
              "prev_record_file_sha256", "prev_runs_commit_sha256", "commits")


class PortableServices:
    """Beam's local job service and an EXTERNAL worker pool, each a process on a free port of
    127.0.0.1, their output in ``logs`` (kept with the test's tmp_path, and shown when a run fails).

    The worker pool starts each SDK worker as ``python`` from its PATH: this interpreter's folder
    comes first, so the workers run this environment's Beam and pitwatch; they inherit the pool's
    environment (``env``: where an object-store lake's AWS variables reach them)."""

    def __init__(self, logs: Path, env: dict | None = None) -> None:
        self.logs = logs
        self.job_port, self.worker_port = free_port(), free_port()
        bin_dir = str(Path(sys.executable).parent)
        self.env = process_env({**(env or {}), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"})
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self, timeout: float = 60.0) -> "PortableServices":
        logs = self.logs
        logs.mkdir(parents=True, exist_ok=True)
        for name, module, port_flag, port in (
                ("job-service", "apache_beam.runners.portability.local_job_service_main", "--port", self.job_port),
                ("worker-pool", "apache_beam.runners.worker.worker_pool_main", "--service_port", self.worker_port)):
            with open(logs / f"{name}.log", "wb") as log:
                self.processes[name] = subprocess.Popen([sys.executable, "-m", module, f"{port_flag}={port}"],
                                                        stdout=log, stderr=subprocess.STDOUT, env=self.env)
            self._wait_listening(name, port, timeout)
        return self

    def _wait_listening(self, name: str, port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if self.processes[name].poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"Beam's {name} did not listen on 127.0.0.1:{port}:\n{self.log(name)}")
                time.sleep(0.1)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    @property
    def runner_args(self) -> list[str]:
        """What ``pitwatch run`` is given to run on these services (the rehearsal's flags)."""
        return ["--runner=PortableRunner", f"--job_endpoint=localhost:{self.job_port}",
                "--environment_type=EXTERNAL", f"--environment_config=localhost:{self.worker_port}"]

    def jobs_run(self) -> int:
        """Jobs the job service ran to the end (each of a run's pipelines is one)."""
        return self.log("job-service").count("with state DONE")

    def workers_started(self) -> int:
        return self.log("worker-pool").count("Starting worker")


@pytest.fixture(scope="module")
def short_day(tmp_path_factory):
    """A short simulated gaming day with faults (findings of several rules), and the lake the embedded
    runner writes from it: the reference."""
    base = tmp_path_factory.mktemp("portable")
    simulate(base / "floor", tables={"baccarat": 1, "three_bet_poker": 1, "stud": 1}, hours=2, seed=11,
             faults={"BURN_COUNT": 0.5, "STUB_MISCOUNT": 0.3, "PAYOUT": 0.05, "BRING_IN": 0.3, "SEQ_GAP": 0.01})
    feeds = base / "floor" / "2026-11-28"
    embedded = base / "embedded"
    out = run_pitwatch_process("run", feeds, "--lake", embedded, "--quiet", timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert len({r["rule_id"] for r in lake_rows.dicts(embedded, "findings")}) >= 3, \
        "the day must raise findings of several rules, or an equal lake proves little"
    return feeds, embedded


@pytest.fixture
def portable(tmp_path):
    """The job service and worker pool, started for the test and stopped after it."""
    services = PortableServices(tmp_path / "beam-logs").start()
    yield services
    services.stop()


@pytest.fixture
def portable_s3(s3_lake, tmp_path):
    """``(services, lake)``: the job service and worker pool started once :func:`s3_lake` has pointed this
    process's AWS variables at the test's S3 server, so the workers, started by the pool, inherit them
    (as a cluster's workers get the store's settings from their image)."""
    services = PortableServices(tmp_path / "beam-logs").start()
    yield services, s3_lake
    services.stop()


def _run_portable(services: PortableServices, feeds: Path, lake: str) -> subprocess.CompletedProcess:
    out = run_pitwatch_process("run", feeds, "--lake", lake, "--quiet", *services.runner_args,
                               env={"PATH": services.env["PATH"]}, timeout=600)
    assert out.returncode == 0, (f"{out.stderr[-3000:]}\n--- job service:\n{services.log('job-service')[-3000:]}"
                                 f"\n--- worker pool:\n{services.log('worker-pool')[-3000:]}")
    return out


def _assert_same_lake(lake, reference) -> None:
    """Every table's whole rows, the data files byte for byte, and the run's record but its naming fields."""
    for name in parquet.LAKE_TABLES:
        if name != "runs":
            assert lake_rows.rows(lake, name) == lake_rows.rows(reference, name), name
    files = lake_rows.data_files(lake, across_lakes=True)
    assert len(files) >= 9 and files == lake_rows.data_files(reference, across_lakes=True)
    record, expected = (lake_rows.last_run(x) for x in (lake, reference))
    assert record["status"] == "succeeded"
    mine = lambda r: {k: v for k, v in r.items() if k not in (*RUN_NAMING, "added_files")}  # noqa: E731
    assert mine(record) == mine(expected)
    assert _added_files(record) == _added_files(expected)


def _added_files(record: dict) -> list[tuple]:
    """The run's added files without its run id in their names; without its hash, a file that names
    the run that wrote it (a state manifest; a table with run stamps: :data:`lake_rows.RUN_NAMED`,
    its rows compared above)."""
    def names_run(f: dict) -> bool:
        return f["path"].endswith("-manifest.parquet") or f["table"] in lake_rows.RUN_NAMED

    return sorted((f["table"], f["path"].replace(record["run_id"], ""), f["rows"], "" if names_run(f) else f["sha256"])
                  for f in record["added_files"])


@pytest.mark.slow
def test_a_day_on_the_portable_runner_writes_the_embedded_runners_lake(short_day, portable, tmp_path):
    feeds, embedded = short_day
    started = time.monotonic()
    _run_portable(portable, feeds, str(tmp_path / "lake"))
    seconds = time.monotonic() - started
    # it went through the job service and its workers, not the embedded runner in the launching process
    assert portable.jobs_run() >= 2 and portable.workers_started() >= 2, portable.log("job-service")
    _assert_same_lake(tmp_path / "lake", embedded)
    print(f"portable run: {seconds:.1f} s")


@pytest.mark.slow
def test_a_day_on_the_portable_runner_onto_s3_writes_the_embedded_runners_lake(short_day, portable_s3):
    """The rehearsal's whole path: the launching process commits to the object store (its lease, its
    Delta commits), the workers write the data files there; the rows equal the embedded run's on disk."""
    feeds, embedded = short_day
    services, lake = portable_s3
    started = time.monotonic()
    _run_portable(services, feeds, lake)
    seconds = time.monotonic() - started
    assert services.jobs_run() >= 2 and services.workers_started() >= 2, services.log("job-service")
    _assert_same_lake(lake, embedded)
    verified = run_pitwatch_process("verify", "--lake", lake)     # the rehearsal's step 3 (docs/scale-out.md)
    assert verified.returncode == 0 and f"lake {lake}: intact" in verified.stdout, verified.stdout + verified.stderr
    print(f"portable run onto s3: {seconds:.1f} s")


@pytest.mark.slow
def test_a_job_endpoint_nobody_listens_on_fails_the_run_and_writes_no_rows(short_day, tmp_path):
    feeds, _ = short_day
    lake = tmp_path / "lake"
    out = run_pitwatch_process("run", feeds, "--lake", lake, "--quiet", "--runner=PortableRunner",
                               f"--job_endpoint=localhost:{free_port()}", "--environment_type=EXTERNAL",
                               f"--environment_config=localhost:{free_port()}", "--job_server_timeout=5",
                               timeout=300)
    assert out.returncode == 3, out.stderr[-3000:]
    assert out.stderr.startswith("Error: the run failed: FutureTimeoutError: the runner's job service did not "
                                 "answer in time (is it running at --job_endpoint?"), out.stderr
    assert lake_rows.last_run(lake)["status"].startswith("failed: FutureTimeoutError: the runner's job service")
    for name in ("events", "rounds", "packs", "findings", "rejects"):
        assert lake_rows.rows(lake, name) == [], name
