"""A replay state saved by the pitwatch before ids used again (engine state version 1) goes on.

``tests/data/state-v1-clean-floor.json.gz``: the clean floor's first three fifths of every
table (in the batch's feed order) replayed by ``main`` at 5470725 through its driver, nightly
(no close), rows taken: the states a night of that pitwatch leaves for the next
(``written_by``, ``cut``: the first event of the rest and its position).  Loaded by this
pitwatch (:func:`pitwatch.rules.migrations.migrate`), the rest gives exactly the findings and rows a
replay of the whole feed by this pitwatch gives after the cut — also when the rest uses the
first part's pack and round ids again.
"""
from __future__ import annotations

import collections
import gzip
import json
import pathlib

import pytest

from pitwatch.engine.driver import TableDriver, feed_order
from pitwatch.lake.state import StateError, check_versions
from pitwatch.rules.finding import gaming_day_from_config
from pitwatch.rules.migrations import migrate
from pitwatch.rules.state import STATE_VERSION
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from tests.data import clean_floor_lines

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "data" / "state-v1-clean-floor.json.gz"
CFG = GamingDayConfig()


def _saved() -> dict:
    with gzip.open(FIXTURE, "rt") as f:
        return json.load(f)


def _tables() -> dict:
    by = collections.defaultdict(list)
    for n, raw in enumerate(clean_floor_lines(), 1):
        ev, _ = decode_line(raw, "clean-floor-2h.jsonl", n, CFG)
        by[ev.table_id].append(ev)
    return {tid: list(feed_order(evs)) for tid, evs in by.items()}


def _rest(driver: TableDriver, events) -> tuple:
    findings = driver.feed_all(events) + driver.end_of_input()
    rows = driver.take_rows()
    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    return (sorted((f.to_row() for f in findings), key=key), sorted(rows.rounds, key=key),
            sorted(rows.packs, key=key), sorted(rows.sequences, key=key))


def _reusing(first, rest, state):
    """``rest`` with every pack and round id it names first renamed to the first part's ids, in
    order (the first part's oldest pack and round ids used again).  Only ids the version 1
    ``state`` remembers are used again: it kept the last 64 finished packs and rounds, this
    engine's streams remember 256 ids (pitwatch.rules.uses.KEEP_USES), and an id the old state forgot
    starts again at use 1 after the upgrade (pitwatch.rules.migrations.migrate).  Only ids of packs the
    shuffler reported are used again: the shuffler's next report of an id whose last use was
    shuffled at the table names the use after it (pitwatch.rules.table, "Ids used again",
    ``table_shuffled``), which version 1's finished-pack list cannot tell; the upgrade takes
    every finished pack as reported by the shuffler."""
    def ids(events, field):
        seen = []
        for e in events:
            v = getattr(e, field)
            if v is not None and v not in seen:
                seen.append(v)
        return seen

    out = rest
    reported = {e.pack_id for e in first if e.type == "shuffle_completed"}
    known = {"pack_id": set(state["done_packs"]) | set(state["packs"]),
             "round_id": set(state["done_rounds"]) | set(state["rounds"])}
    for field in ("pack_id", "round_id"):
        old = [v for v in ids(first, field) if v in known[field] and (field == "round_id" or v in reported)]
        new = [v for v in ids(rest, field) if v not in old]
        mapping = dict(zip(new, old))
        out = [e._replace(**{field: mapping[getattr(e, field)]}) if getattr(e, field) in mapping else e
               for e in out]
    return out


def test_the_fixture_is_a_state_of_version_1_written_by_main():
    saved = _saved()
    assert saved["engine_state"] == 1 and saved["written_by"].startswith("pitwatch main")
    assert all(s["v"] == 1 and "uses" not in s for s in saved["states"].values())
    assert FIXTURE.stat().st_size < 100_000


@pytest.mark.parametrize("reuse", [False, True], ids=["same-ids", "ids-used-again"])
def test_a_night_on_a_version_1_state_gives_the_rows_of_a_fresh_replay(reuse):
    saved = _saved()
    tables = _tables()
    gd = gaming_day_from_config(CFG)
    reused_any = 0
    for tid, order in sorted(tables.items()):
        first_id, k = saved["cut"][tid]
        assert order[k].event_id == first_id     # the same feed order as main's
        rest = _reusing(order[:k], order[k:], saved["states"][tid]) if reuse else order[k:]
        fresh = TableDriver(tid, gd)
        fresh.feed_all(order[:k])
        fresh.take_rows()
        want = _rest(fresh, rest)
        migrated = TableDriver(tid, gd, saved["states"][tid])
        assert migrated.replay.table.v == STATE_VERSION
        got = _rest(migrated, rest)
        assert got == want, tid
        reused_any += sum(1 for r in want[2] if r["pack_use"] > 1) + sum(1 for r in want[1] if r["round_use"] > 1)
    assert reused_any > 0 if reuse else reused_any == 0


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
