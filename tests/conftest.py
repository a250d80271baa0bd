"""Shared test helpers: build contract-valid event lines tersely; every Beam test marked ``slow``."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# --- Hypothesis: HYPOTHESIS_PROFILE=ci (.ci/run sets it) makes the property tests deterministic: the
# same examples on every run (derandomize: a red CI run is red again on a laptop, no example database),
# no deadline (a shared CI machine's timings say nothing), the tests' own max_examples or 100.
settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=100,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# --- Every test that runs a Beam pipeline in this process is marked slow (`make check` leaves them out):
# a test (or a fixture it sets up) that runs one unmarked fails, saying so.  Pipelines run in a child
# process (`pitwatch run` through subprocess) are not seen here: such tests are marked by hand.
_current: list = [None]      # the test whose set-up or call is running


def pytest_configure(config):
    import apache_beam.pipeline

    if getattr(apache_beam.pipeline.Pipeline.run, "_slow_guard", False):
        return
    real_run = apache_beam.pipeline.Pipeline.run

    def run(self, *args, **kwargs):
        item = _current[0]
        if item is not None and item.get_closest_marker("slow") is None:
            item.stash[_UNMARKED] = True
            raise AssertionError(f"{item.nodeid} runs a Beam pipeline: mark it @pytest.mark.slow")
        return real_run(self, *args, **kwargs)

    run._slow_guard = True
    apache_beam.pipeline.Pipeline.run = run


_UNMARKED = pytest.StashKey[bool]()


def _guarded(item):
    _current[0] = item
    try:
        outcome = yield
    finally:
        _current[0] = None
    if item.stash.get(_UNMARKED, False):    # even if the test caught the error the guard raised
        outcome.force_exception(pytest.fail.Exception(
            f"{item.nodeid} runs a Beam pipeline: mark it @pytest.mark.slow", pytrace=False))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _guarded(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _guarded(item)

BASE = {
    "shuffle_completed": {"source": "shuffler", "device_id": "SHF-1", "pack_id": "P-1", "decks": 8,
                          "card_count": 416, "missing": [], "extra": []},
    "card_drawn": {"source": "shoe", "device_id": "SHOE-1", "pack_id": "P-1", "index": 1, "card": "7h"},
    "card_dealt": {"source": "dealer", "device_id": "DT-1", "dealer_id": "D-1", "round_id": "R-1",
                   "target": "player", "face": "up", "card": "7h"},
    "bet_placed": {"source": "dealer", "device_id": "DT-1", "dealer_id": "D-1", "round_id": "R-1",
                   "seat": 3, "spot": "banker", "amount": 100},
    "table_opened": {"source": "dealer", "device_id": "DT-1", "dealer_id": "D-1", "game": "baccarat", "decks": 8},
    "hand_declared": {"source": "dealer", "device_id": "DT-1", "dealer_id": "D-1", "round_id": "R-1",
                      "seat": 2, "cards": ["As", "Ks", "Qs", "Js", "Ts"]},
}


def event(type_: str = "card_drawn", seq: int = 1, **fields) -> dict:
    """A valid event of ``type_`` with ``fields`` overriding (None deletes a field)."""
    ev = {"event_id": f"e-{type_}-{seq}", "ts": "2026-11-28T20:00:01.000Z", "type": type_,
          "table_id": "BAC-07", "seq": seq, **BASE[type_]}
    for k, v in fields.items():
        if v is None:
            ev.pop(k, None)
        else:
            ev[k] = v
    return ev


def line(type_: str = "card_drawn", seq: int = 1, **fields) -> str:
    return json.dumps(event(type_, seq, **fields))


@pytest.fixture
def make_line():
    return line


# --- `pitwatch` in the test's own process (click's CliRunner) and as a real process -----------------
# In process a command costs its own work only (no interpreter start, no imports again: 2-3.5 s a
# process on a loaded machine); tests of what only a real process shows (the console script, signals,
# a Beam pipeline's workers, `watch`) use `run_pitwatch_process`.  Both return a
# subprocess.CompletedProcess: returncode, stdout, stderr.
ROOT = Path(__file__).resolve().parents[1]


def process_env(env: dict | None = None) -> dict:
    """The environment a real ``pitwatch`` process gets: this one without the PITWATCH_* settings,
    this checkout first on its path, then ``env``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}, "PYTHONPATH": str(ROOT),
            **(env or {})}


def _forget_process_state() -> None:
    """What pitwatch keeps between commands in one process: the lake snapshots and delta-rs handles
    (a process normally runs one command; a test may rewrite a lake's files between two)."""
    from pitwatch.lake import delta, delta_log

    delta_log.forget()
    delta.forget_handles()


def run_pitwatch(*args, env: dict | None = None, cwd=None, input=None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """``pitwatch ARGS`` in this process through click's CliRunner, as a real process would see it: no
    PITWATCH_* variable but those of ``env``, its own working directory, fresh lake caches, the
    logging set-up it changes put back; an uncaught exception is a traceback on stderr and exit 1
    (``timeout``: taken for the real process's signature, not enforced)."""
    from click.testing import CliRunner

    from pitwatch.cli import main

    argv = [str(a) for a in args]
    unset = {k: None for k in os.environ if k.startswith("PITWATCH_")}
    root, log = logging.getLogger(), logging.getLogger("pitwatch")
    saved = (root.level, root.handlers[:], log.level, log.handlers[:], log.propagate)
    _forget_process_state()
    try:
        with contextlib.chdir(cwd or os.getcwd()):
            result = CliRunner().invoke(main, argv, env={**unset, **(env or {})}, input=input, prog_name="pitwatch")
    finally:
        _forget_process_state()
        for h in log.handlers:
            if h not in saved[3] and isinstance(h, logging.FileHandler):
                h.close()
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]
        log.setLevel(saved[2])
        log.handlers[:] = saved[3]
        log.propagate = saved[4]
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["pitwatch", *argv], result.exit_code, result.stdout, stderr)


def run_pitwatch_process(*args, env: dict | None = None, cwd=None, input=None,
                         timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m pitwatch.cli ARGS`` as a real process (this checkout first on its path), without the
    PITWATCH_* variables but those of ``env``."""
    return subprocess.run([sys.executable, "-m", "pitwatch.cli", *map(str, args)], capture_output=True, text=True,
                          env=process_env(env), cwd=cwd, input=input, timeout=timeout)


@pytest.fixture
def pitwatch():
    """``pitwatch(*args, env=None, cwd=None, input=None)``: the command in this process (run_pitwatch)."""
    return run_pitwatch


# --- A real S3 API (moto's server, tests/object_store.py): one server a session, a bucket a test.
@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A moto S3 server process on 127.0.0.1 (:class:`tests.object_store.S3Server`), stopped at the end."""
    from tests.object_store import S3Server

    server = S3Server(str(tmp_path_factory.mktemp("s3") / "moto.log")).start()
    yield server
    server.stop()


@pytest.fixture
def s3_lake(s3_server, monkeypatch):
    """``s3://BUCKET/lake`` on a new bucket of :func:`s3_server`, this process's AWS variables pointed
    at it for the test (a subprocess gets them through ``process_env``, which copies os.environ)."""
    from tests.object_store import set_variables

    set_variables(s3_server, monkeypatch)
    return f"s3://{s3_server.bucket()}/lake"
