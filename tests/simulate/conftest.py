"""Simulated floors shared by the simulator tests (real files under tmp_path, no mocks)."""
from __future__ import annotations

import collections
import datetime as _dt
from pathlib import Path

import orjson
import pytest

from pitwatch.schemas.decode import GamingDayConfig, Reject, decode_line
from pitwatch.simulator import simulate

ALL_GAMES = {"baccarat": 2, "three_bet_poker": 2, "combate": 1, "stud": 1, "stud8": 1, "razz": 1}
START = _dt.datetime(2026, 11, 28, 20, 0, tzinfo=_dt.timezone.utc)


class Floor:
    """A simulated output folder, decoded: events by table, per device, and the truth."""

    def __init__(self, out: Path, summary):
        self.out = out
        self.summary = summary
        self.events = []
        self.rejects = []
        cfg = GamingDayConfig()
        for path in sorted(out.glob("*/*.jsonl")):
            for n, raw in enumerate(path.read_bytes().splitlines(), 1):
                r = decode_line(raw, str(path), n, cfg)
                if isinstance(r, Reject):
                    self.rejects.append(r)
                else:
                    self.events.append(r[0])
        self.truth = [orjson.loads(x) for x in (out / "truth.jsonl").read_bytes().splitlines()]

    def by_device(self):
        d = collections.defaultdict(list)
        for e in self.events:
            d[e.device_id].append(e)
        for evs in d.values():
            evs.sort(key=lambda e: e.seq)
        return d

    def table(self, table_id: str, source: str | None = None):
        evs = [e for e in self.events if e.table_id == table_id and (source is None or e.source == source)]
        evs.sort(key=lambda e: (e.device_id, e.seq))
        return evs

    def dealer(self, table_id: str):
        return self.table(table_id, "dealer")

    def tables(self, game: str):
        return sorted({e.table_id for e in self.events if e.type == "table_opened" and e.game == game})


def make_floor(out: Path, **kw) -> Floor:
    kw.setdefault("start", START)
    summary = simulate(out, **kw)
    return Floor(out, summary)


@pytest.fixture(scope="session")
def clean_floor(tmp_path_factory) -> Floor:
    """Three hours of every game, no faults."""
    return make_floor(tmp_path_factory.mktemp("clean"), tables=ALL_GAMES, hours=3, seed=21)


@pytest.fixture(scope="session")
def fault_floor_factory(tmp_path_factory):
    cache = {}

    def build(name: str, games: dict, hours: float = 2.0, seed: int = 5) -> Floor:
        key = (name, tuple(sorted(games.items())), hours, seed)
        if key not in cache:
            cache[key] = make_floor(tmp_path_factory.mktemp(name.lower()), tables=games, hours=hours, seed=seed,
                                    faults={name: 1.0})
        return cache[key]

    return build
