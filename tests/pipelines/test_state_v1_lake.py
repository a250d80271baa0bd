"""A lake a night of ``main`` (engine state 1, before ids used again) left, taken up by this pitwatch.

``tests/data/lake-main-v1-state.tar.gz``: the lake ``pitwatch run --day 2026-11-28`` of ``main`` at
5470725 wrote from the first night of :func:`two_nights` (its pack P-1 still open, its state
carried: engine state 1).  This pitwatch's next night goes on from that state (migrated) and
adds the use columns to the old tables; the lake then holds the rows a lake this pitwatch wrote
both nights into holds — whole rows, the old night's use columns read as null (it predates them:
they are first uses).
"""
from __future__ import annotations

import datetime as dt
import json
import tarfile

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.schemas.events import datetime_to_micros
from tests import lake_rows
from tests.data import HERE
from tests.rules.stream import Baccarat
from tests.watch.scenario import event_json

pytestmark = pytest.mark.slow
FIXTURE = HERE / "lake-main-v1-state.tar.gz"
NIGHT_1, NIGHT_2 = "2026-11-28", "2026-11-29"
USE_COLUMNS = {"findings": ("pack_use", "round_use"), "rounds": ("round_use", "pack_use"), "packs": ("pack_use",)}


def two_nights() -> Baccarat:
    """Night 1 deals P-1 (R-1..R-3) and leaves it open; night 2 deals two more coups of it, takes its
    stub out, deals a new pack named P-1 again with the round numbers restarting, closes the table."""
    b = Baccarat()
    b.prepare("P-1")
    for _ in range(3):
        b.coup()
    b.ts = datetime_to_micros(dt.datetime(2026, 11, 29, 6, 30, tzinfo=dt.timezone.utc))
    for _ in range(2):
        b.coup()
    b.empty()
    b.round_no = 0
    b.prepare("P-1")
    for _ in range(3):
        b.coup()
    b.empty()
    b.dealer("table_closed")
    return b


def write_inbox(inbox, days=(NIGHT_1, NIGHT_2)):
    cut = datetime_to_micros(dt.datetime(2026, 11, 29, 6, 0, tzinfo=dt.timezone.utc))
    for ev in two_nights().events:
        day = NIGHT_1 if ev.ts < cut else NIGHT_2
        if day in days:
            f = inbox / day / f"{ev.device_id}.jsonl"
            f.parent.mkdir(parents=True, exist_ok=True)
            with f.open("a") as out:
                out.write(json.dumps(event_json(ev)) + "\n")


def declared(lake, name) -> list[str]:
    """The columns the Delta table's schema declares."""
    from deltalake import DeltaTable

    return list(DeltaTable(str(lake / name)).schema().to_arrow().names)


def night(day, inbox, lake) -> str:
    result = CliRunner().invoke(main, ["run", "--day", day, "--inbox", str(inbox), "--lake", str(lake)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_next_night_on_mains_lake_gives_the_rows_of_this_pitwatchs_two_nights(tmp_path):
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path / "old", filter="data")
    old = tmp_path / "old" / "lake"
    assert all(not set(uses) & set(declared(old, name)) for name, uses in USE_COLUMNS.items())
    write_inbox(tmp_path / "inbox-2", days=(NIGHT_2,))    # night 1 as main left it: not replayed again
    out = night(NIGHT_2, tmp_path / "inbox-2", old)
    assert f"gaming days {NIGHT_2}\n" in out, out
    assert all(set(uses) <= set(declared(old, name)) for name, uses in USE_COLUMNS.items())   # added

    write_inbox(tmp_path / "inbox")
    fresh = tmp_path / "fresh"
    night(NIGHT_1, tmp_path / "inbox", fresh)
    night(NIGHT_2, tmp_path / "inbox", fresh)

    for name, uses in USE_COLUMNS.items():
        got, want = lake_rows.dicts(old, name, with_runs=False), lake_rows.dicts(fresh, name, with_runs=False)
        for r in got:
            if r[uses[0]] is None:       # written by main: before the use columns, first uses
                assert str(r["gaming_day"]) == NIGHT_1, r
                r.update({c: (None if r[c.replace("_use", "_id")] is None else 1) for c in uses})
        key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
        assert sorted(map(key, got)) == sorted(map(key, want)), name
    packs = lake_rows.dicts(old, "packs")
    assert sorted((p["pack_id"], p["pack_use"]) for p in packs) == [("P-1", 1), ("P-1", 2)]
    rounds = lake_rows.dicts(old, "rounds")
    assert sorted((r["round_id"], r["round_use"]) for r in rounds if r["round_use"] is not None) == [
        ("R-1", 2), ("R-2", 2), ("R-3", 1), ("R-3", 2), ("R-4", 1), ("R-5", 1)]
    assert sum(1 for r in rounds if r["round_use"] is None) == 2      # main's night
