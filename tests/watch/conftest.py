"""Fixtures for the live tests: the scenario's batch findings, a running ``pitwatch watch``."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pitwatch.lake import Lake
from tests.watch.scenario import floor, write_batch_input

ROOT = Path(__file__).resolve().parents[2]
# The real command line, as `pitwatch watch …` runs it.
WATCH_MAIN = ["-m", "pitwatch.cli", "watch"]


@pytest.fixture(scope="session")
def scenario():
    return floor()


@pytest.fixture(scope="session")
def batch_lake(scenario, tmp_path_factory):
    """The lake the nightly batch writes for the scenario (run in-process, FnApiRunner)."""
    from pitwatch.pipelines.batch import run_batch

    base = tmp_path_factory.mktemp("batch")
    write_batch_input(scenario, base / "in")
    run_batch([str(base / "in")], Lake.at(base / "lake"))
    return base / "lake"


@pytest.fixture(scope="session")
def batch_ids(batch_lake):
    """finding_ids the nightly batch writes for the scenario."""
    from pitwatch.lake.parquet import read_table

    ids = read_table(Lake.at(batch_lake), "findings").column("finding_id").to_pylist()
    assert len(ids) == len(set(ids)) >= 10
    return sorted(ids)


@pytest.fixture(scope="session")
def batch_rule_of(batch_lake):
    """finding_id -> rule_id of the nightly batch's findings for the scenario."""
    from pitwatch.lake.parquet import read_table

    t = read_table(Lake.at(batch_lake), "findings")
    return dict(zip(t.column("finding_id").to_pylist(), t.column("rule_id").to_pylist()))


@pytest.fixture(scope="session")
def batch_rows(scenario, tmp_path_factory):
    """Every row (findings, rounds, packs) the nightly batch writes for the scenario."""
    from tests.watch.equivalence import batch

    base = tmp_path_factory.mktemp("batch-rows")
    write_batch_input(scenario, base / "in")
    return batch([base / "in"], base / "lake")


PROVISIONAL = ("CARD_DISAGREEMENT", "CARD_DISAGREEMENT_CLEARED")   # live/provisional.py: live-only


class Watch:
    """A ``pitwatch watch`` subprocess; its stdout alerts and stderr lines collected by threads.

    ``alerts``: the findings' alerts and the feed-health notices; ``provisional``: the provisional card
    alerts and their clearing (live-only, never findings: tests/watch/test_provisional.py checks them)."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if "--status-every" not in args:      # the status line says "caught up: N lines" (caught_up) at once
            args = [*args, "--status-every", "0.05"]
        if "--create-lake" not in args:       # a fresh tmp_path lake is made (and recorded) on purpose;
            args = [*args, "--create-lake"]   # test_watch_mistakes.py runs the watcher without it
        self.proc = subprocess.Popen([sys.executable, *WATCH_MAIN, *args], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.alerts: list[dict] = []
        self.provisional: list[dict] = []
        self.everything: list = []      # every stdout line in arrival order: alerts, provisional ones, text lines
        self.errors: list[str] = []
        self._threads = [threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True)]
        for t in self._threads:
            t.start()

    def _read(self, stream, is_out: bool) -> None:
        for raw in stream:
            if is_out:   # JSON alerts (provisional ones apart); a text line (--format text) is kept as its text
                try:
                    alert = json.loads(raw)
                except ValueError:
                    self.alerts.append(raw.decode().rstrip("\n"))
                    self.everything.append(self.alerts[-1])
                    continue
                self.everything.append(alert)
                (self.provisional if isinstance(alert, dict) and alert.get("rule_id") in PROVISIONAL
                 else self.alerts).append(alert)
            else:
                self.errors.append(raw.decode().rstrip())

    def wait_for(self, predicate, what: str, timeout: float = 30.0) -> None:
        """Wait until ``predicate()`` holds (a liveness guard, not a timing assertion)."""
        end = time.monotonic() + timeout
        while not predicate():
            if self.proc.poll() is not None:
                raise AssertionError(f"watch exited ({self.proc.returncode}) waiting for {what}: {self.errors[-5:]}")
            if time.monotonic() > end:
                raise AssertionError(f"gave up waiting for {what}; stderr: {self.errors[-5:]}")
            time.sleep(0.02)

    def caught_up(self, lines: int) -> None:
        """Wait until the watcher's status line reports it processed ``lines`` lines in all, caught up."""
        want = f"caught up: {lines:,} lines"
        self.wait_for(lambda: any(want in e for e in self.errors), want)

    def stop(self, sig=signal.SIGTERM, timeout: float = 30.0) -> int:
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout)
        for t in self._threads:
            t.join(5)
        return rc


@pytest.fixture
def start_watch(tmp_path):
    started: list[Watch] = []

    def start(*args) -> Watch:
        w = Watch([str(a) for a in args], tmp_path)
        started.append(w)
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()


def append_lines(folder: Path, order: list[tuple[str, str]]) -> None:
    """Append each (device, line) to ``folder/<device>.jsonl``, one write + flush per line."""
    folder.mkdir(parents=True, exist_ok=True)
    handles = {}
    try:
        for dev, line in order:
            f = handles.get(dev)
            if f is None:
                f = handles[dev] = open(folder / f"{dev}.jsonl", "a")
            f.write(line + "\n")
            f.flush()
    finally:
        for f in handles.values():
            f.close()
