"""Shared test helpers: build contract-valid event lines tersely; every Beam test marked ``slow``."""
from __future__ import annotations

import json

import pytest

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
