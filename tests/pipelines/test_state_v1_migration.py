"""Version 1 of the engine state (before ids used again): how :func:`pitwatch.rules.migrations.migrate`
treats the state ``main`` at 5470725 saved (``tests/data/state-v1-clean-floor.json.gz``) and which
nights' manifests the lake reads.  That the rest of the night then gives the rows of a fresh replay, in
the batch and in the watcher: ``tests/pipelines/test_states_saved_by_main.py``.
"""
from __future__ import annotations

import gzip
import json
import pathlib

import pytest

from pitwatch.lake.state import StateError, check_versions
from pitwatch.rules.migrations import migrate
from pitwatch.rules.state import STATE_VERSION

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "data" / "state-v1-clean-floor.json.gz"


def _saved() -> dict:
    with gzip.open(FIXTURE, "rt") as f:
        return json.load(f)


def test_migrate_leaves_its_argument_and_keys_as_they_were():
    state = _saved()["states"]["BAC-01"]
    before = json.dumps(state, sort_keys=True)
    now = migrate(state)
    assert json.dumps(state, sort_keys=True) == before
    assert now["v"] == STATE_VERSION and set(now["packs"]) == set(state["packs"])
    assert set(now["rounds"]) == set(state["rounds"]) and all(p["use"] == 1 for p in now["packs"].values())
    assert migrate(now) is now
    with pytest.raises(ValueError, match="replay state version 0"):
        migrate({**state, "v": 0})


def test_a_nights_manifest_of_engine_state_1_is_read_and_another_is_refused():
    check_versions("2026-11-28", {"format": 2, "engine_state": 1})
    check_versions("2026-11-28", {"format": 2, "engine_state": STATE_VERSION})
    with pytest.raises(StateError):
        check_versions("2026-11-28", {"format": 2, "engine_state": STATE_VERSION + 1})
