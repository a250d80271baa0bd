"""``--reuse-ids`` (issue 36, contract 2.1): pack ids numbered per gaming day and wrapped, round ids
per pack, as a pure renaming of the unique-id floor of the same seed.

Two floors of every game, same seed and faults, one with ``reuse_ids``: they cross a gaming day's
cutoff (06:00 UTC), so pack ids come back within a day and on the next one.  Everything is checked
from the files both write: the events are the same events but for ``pack_id`` / ``round_id``, an id
comes back only once its earlier pack / round is out of play at that table, and the truth names
each finding's use and maps onto the unique floor's truth.
"""
from __future__ import annotations

import collections
import datetime as _dt
import hashlib

import orjson
import pytest
from click.testing import CliRunner

from pitwatch.simulator import SPECS, simulate
from pitwatch.simulator.clock import GamingDays, to_ms
from pitwatch.simulator.reuse import ID_MAP_FILE, PACK_WRAP, TableIds, first_of_day, pack_number, read_id_map

GAMES = {"baccarat": 2, "three_bet_poker": 2, "combate": 1, "stud": 2, "stud8": 1, "razz": 1}
START = _dt.datetime(2026, 11, 29, 1, 30, tzinfo=_dt.timezone.utc)    # 06:00 UTC, the cutoff, after 4.5 h
HOURS = 8.0
# every fault now and then, and the pack-level ones often, so that some fall on a reused id
FAULTS = {**{name: 0.02 for name in SPECS},
          **{name: 0.3 for name in ("UNSHUFFLED_PACK", "PACK_COMPOSITION", "UNSHUFFLED_SEQUENCE", "BURN_COUNT",
                                    "CUT_PLACEMENT", "LAST_COUP_NOT_ANNOUNCED", "SHOE_SILENT")}}


def _files(out) -> dict[str, list[dict]]:
    return {str(p.relative_to(out)): [orjson.loads(x) for x in p.read_bytes().splitlines()]
            for p in sorted(out.glob("*/*.jsonl"))}


class Pair:
    def __init__(self, tmp):
        kw = dict(tables=GAMES, hours=HOURS, start=START, seed=17, faults=FAULTS)
        self.unique_out, self.reuse_out = tmp / "unique", tmp / "reuse"
        self.unique_summary = simulate(self.unique_out, **kw)
        self.reuse_summary = simulate(self.reuse_out, reuse_ids=True, **kw)
        self.unique = _files(self.unique_out)
        self.reuse = _files(self.reuse_out)
        self.map = read_id_map(self.reuse_out)
        self.unique_truth = [orjson.loads(x) for x in (self.unique_out / "truth.jsonl").read_bytes().splitlines()]
        self.reuse_truth = [orjson.loads(x) for x in (self.reuse_out / "truth.jsonl").read_bytes().splitlines()]
        self._events: dict[str, list[tuple[str, dict]]] = {}
        self._terminals: dict[str, list[dict]] = {}

    def renamed(self, ev: dict) -> dict:
        """A unique-id event under the reuse floor's ids."""
        out = dict(ev)
        for field in ("pack_id", "round_id"):
            if out.get(field) is not None:
                out[field] = self.map[(ev["table_id"], ev[field])][0]
        return out

    def events(self, which: str) -> list[tuple[str, dict]]:
        """(gaming day, event) of every file of one floor (listed once: the tests read it many times)."""
        if which not in self._events:
            self._events[which] = [(rel.split("/")[0], ev) for rel, evs in getattr(self, which).items() for ev in evs]
        return self._events[which]

    def terminal(self, table_id: str) -> list[dict]:
        """The dealer terminal's events of a table in the unique floor, in seq order (over the days)."""
        if not self._terminals:
            for _, ev in self.events("unique"):
                if ev["source"] == "dealer":
                    self._terminals.setdefault(ev["table_id"], []).append(ev)
            for evs in self._terminals.values():
                evs.sort(key=lambda e: e["seq"])
        return self._terminals.get(table_id, [])

    def tables(self) -> dict[str, str]:
        return {ev["table_id"]: ev["game"] for _, ev in self.events("unique") if ev["type"] == "table_opened"}


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Pair:
    return Pair(tmp_path_factory.mktemp("reuse"))


def test_the_same_events_but_for_the_ids(pair):
    assert pair.unique_summary.gaming_days == pair.reuse_summary.gaming_days == ["2026-11-28", "2026-11-29"]
    assert pair.unique.keys() == pair.reuse.keys()
    for rel, evs in pair.unique.items():
        assert [pair.renamed(ev) for ev in evs] == pair.reuse[rel], rel
    # the rest of what a floor writes is byte for byte the same
    for name in ("devices.csv", "dealers.csv"):
        assert (pair.unique_out / name).read_bytes() == (pair.reuse_out / name).read_bytes()
    assert not (pair.unique_out / ID_MAP_FILE).exists()


def test_the_map_names_every_id_once_and_each_use_once(pair):
    ids = {(ev["table_id"], ev[f]) for _, ev in pair.events("unique") for f in ("pack_id", "round_id")
           if ev.get(f) is not None}
    assert ids == set(pair.map)
    per_table = collections.Counter((t, written, use) for (t, _), (written, use) in pair.map.items())
    assert max(per_table.values()) == 1      # (table, id, use) names one pack / round of the unique floor
    # uses count from 1, with no hole
    uses = collections.defaultdict(set)
    for (t, _), (written, use) in pair.map.items():
        uses[(t, written)].add(use)
    assert all(u == set(range(1, len(u) + 1)) for u in uses.values())


def test_uses_follow_the_order_of_play(pair):
    """The n-th round started with id X at a table is X's use n; the n-th pack of id X the terminal
    deals from is X's use n (counted over the gaming days)."""
    for table_id in pair.tables():
        seen_rounds = collections.Counter()
        seen_packs: dict[str, list[str]] = collections.defaultdict(list)
        for ev in pair.terminal(table_id):
            if ev["type"] == "round_started":
                written, use = pair.map[(table_id, ev["round_id"])]
                seen_rounds[written] += 1
                assert use == seen_rounds[written], (table_id, ev["round_id"])
            pid = ev.get("pack_id")
            if pid is not None:
                written, use = pair.map[(table_id, pid)]
                if pid not in seen_packs[written]:
                    seen_packs[written].append(pid)
                assert use == seen_packs[written].index(pid) + 1, (table_id, pid)


def test_round_numbers_restart_with_each_pack(pair):
    """In the reuse floor, a pack's rounds are numbered 1, 2, 3, … (the round that brings a pack in is
    its round 1): a stud or three_bet_poker round, dealt from its own pack, is always round 1."""
    for table_id, game in pair.tables().items():
        per_pack = collections.defaultdict(list)
        for ev in pair.terminal(table_id):
            if ev["type"] == "round_started":
                per_pack[ev["pack_id"]].append(int(pair.map[(table_id, ev["round_id"])][0].split("-")[-1].lstrip("RH")))
        assert per_pack and all(n == list(range(1, len(n) + 1)) for n in per_pack.values()), table_id
        if game in ("three_bet_poker", "stud", "stud8", "razz"):
            assert {len(n) for n in per_pack.values()} == {1}
        else:
            assert max(len(n) for n in per_pack.values()) > 10


def test_ids_really_repeat_within_a_day_and_across_days(pair):
    by_table = collections.defaultdict(list)
    for day, ev in pair.events("unique"):
        by_table[ev["table_id"]].append((day, ev))
    for table_id, game in pair.tables().items():
        days_of = collections.defaultdict(set)     # (kind, id, use) -> gaming days it appears on
        for day, ev in by_table[table_id]:
            for kind, field in (("pack", "pack_id"), ("round", "round_id")):
                if ev.get(field) is not None:
                    days_of[(kind, *pair.map[(table_id, ev[field])])].add(day)
        by_id = collections.defaultdict(lambda: collections.defaultdict(set))   # (kind, id) -> day -> uses
        for (kind, written, use), days in days_of.items():
            for day in days:
                by_id[(kind, written)][day].add(use)
        pack_within = any(len(uses) > 1 for (kind, _), per_day in by_id.items() if kind == "pack"
                          for uses in per_day.values())
        pack_across = any(len(per_day) > 1 and len(set().union(*per_day.values())) > 1
                          for (kind, _), per_day in by_id.items() if kind == "pack")
        round_within = any(len(uses) > 1 for (kind, _), per_day in by_id.items() if kind == "round"
                           for uses in per_day.values())
        assert pack_within and pack_across and round_within, (table_id, game, pack_within, pack_across,
                                                              round_within)


def test_a_round_id_comes_back_only_after_its_round_ended(pair):
    """On each terminal of the reuse floor: no round_started for an open id, and every event naming a
    round falls between its round_started and its round_ended."""
    by_terminal = collections.defaultdict(list)
    for _, ev in pair.events("reuse"):
        if ev["source"] == "dealer":
            by_terminal[ev["device_id"]].append(ev)
    for device, evs in by_terminal.items():
        evs.sort(key=lambda e: e["seq"])
        open_rounds: set[str] = set()
        started = 0
        for ev in evs:
            rid = ev.get("round_id")
            if ev["type"] == "round_started":
                assert rid not in open_rounds, (device, ev["seq"], rid)
                open_rounds.add(rid)
                started += 1
            elif rid is not None:
                assert rid in open_rounds, (device, ev["seq"], ev["type"], rid)
                if ev["type"] == "round_ended":
                    open_rounds.remove(rid)
        assert started and not open_rounds, device


def _ms(ts: str) -> int:
    return to_ms(_dt.datetime.fromisoformat(ts.replace("Z", "+00:00")))


def test_a_pack_id_comes_back_only_after_its_pack_left_play(pair):
    """Per table, over every device that names its packs (terminal, shoe, its own and shared shufflers):
    two packs given one id never overlap in time, with more than the 2 s two device clocks may disagree
    between them, and the terminal deals from another pack in between."""
    spans: dict[tuple[str, str], list[int]] = {}
    for _, ev in pair.events("unique"):
        if ev.get("pack_id") is not None:
            t = _ms(ev["ts"])
            span = spans.setdefault((ev["table_id"], ev["pack_id"]), [t, t])
            span[0], span[1] = min(span[0], t), max(span[1], t)
    by_id = collections.defaultdict(list)
    for (table_id, pid), span in spans.items():
        by_id[(table_id, pair.map[(table_id, pid)][0])].append(span)
    gaps = []
    for key, uses in by_id.items():
        uses.sort()
        for (_, end), (begin, _) in zip(uses, uses[1:]):
            gaps.append(begin - end)
            assert begin - end > 2000, key
    assert gaps and min(gaps) > 60_000      # in fact over a minute: a whole pack or round in between
    for table_id in pair.tables():
        dealt = [ev["pack_id"] for ev in pair.terminal(table_id)
                 if ev["type"] == "round_started" or ev.get("pack_id") is not None]
        runs = [pid for k, pid in enumerate(dealt) if pid is not None and (k == 0 or dealt[k - 1] != pid)]
        for a, b in zip(runs, runs[1:]):
            if not b.endswith("-R") and not a.endswith("-R"):
                assert pair.map[(table_id, a)][0] != pair.map[(table_id, b)][0], (table_id, a, b)


def test_the_truth_names_uses_and_maps_onto_the_unique_floors(pair):
    assert len(pair.reuse_truth) == len(pair.unique_truth) > 50
    for u, r in zip(pair.unique_truth, pair.reuse_truth):
        assert (u["pack_use"], u["round_use"]) == (1 if u["pack_id"] else None, 1 if u["round_id"] else None)
        want = dict(u)
        for field, use in (("pack_id", "pack_use"), ("round_id", "round_use")):
            if u[field] is not None:
                want[field], want[use] = pair.map[(u["table_id"], u[field])]
        assert r == want
    assert any((t["pack_use"] or 0) > 1 for t in pair.reuse_truth)
    assert any((t["round_use"] or 0) > 1 for t in pair.reuse_truth)
    games_reused = {t["game"] for t in pair.reuse_truth if (t["pack_use"] or 0) > 1}
    assert "baccarat" in games_reused and "stud" in games_reused


def test_pack_numbers_restart_each_gaming_day_and_wrap():
    assert [pack_number(k, 1) for k in range(5)] == [1, 2, 1, 2, 1] and PACK_WRAP == 2
    assert [pack_number(k, 2, wrap=3) for k in range(5)] == [2, 3, 1, 2, 3]
    assert first_of_day(None) == 1 and first_of_day(2) == 1 and first_of_day(1) == 2
    day1, day2 = to_ms(_dt.datetime(2026, 11, 29, 5, 0, tzinfo=_dt.timezone.utc)), to_ms(
        _dt.datetime(2026, 11, 29, 7, 0, tzinfo=_dt.timezone.utc))
    for wrap, first_day, second_day in ((2, 3, ["P-BAC01-02", "P-BAC01-01"]), (3, 3, ["P-BAC01-01", "P-BAC01-02"]),
                                        (3, 4, ["P-BAC01-02", "P-BAC01-03"])):
        ids = TableIds("BAC-01", "BAC01", True, GamingDays(), wrap=wrap)
        took = [ids.pack(2, day1 + k) for k in range(first_day)] + [ids.pack(2, day2 + k) for k in range(2)]
        assert took[first_day:] == second_day, (wrap, first_day, took)
        assert all(a != b for a, b in zip(took, took[1:]))     # consecutive packs never share an id
    with pytest.raises(ValueError):
        TableIds("BAC-01", "BAC01", True, wrap=1)


def test_rounds_restart_with_each_pack():
    ids = TableIds("COM-01", "COM01", True)
    ids.pack(2, 0)
    first = [ids.round(4, "R") for _ in range(3)]
    ids.pack(2, 1)
    assert first == ["COM-01-R0001", "COM-01-R0002", "COM-01-R0003"] and ids.round(4, "R") == "COM-01-R0001"
    assert ids.use("round", "COM-01-R0001") == 2 and ids.use("round", "COM-01-R0003") == 1
    plain = TableIds("COM-01", "COM01", False)
    plain.pack(2, 0)
    plain.round(4, "R")
    plain.pack(2, 1)
    assert plain.round(4, "R") == "COM-01-R0002" and plain.use("round", "COM-01-R0002") == 1 and not plain.rows


def _digest(folder) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_workers_do_not_change_a_reuse_floor(tmp_path):
    kw = dict(tables={"baccarat": 1, "three_bet_poker": 2, "stud": 2, "combate": 1}, hours=2.5, seed=3,
              faults={"PAYOUT": 0.2, "PACK_COMPOSITION": 0.3}, reuse_ids=True)
    simulate(tmp_path / "a", workers=1, **kw)
    simulate(tmp_path / "b", workers=3, **kw)
    a, b = _digest(tmp_path / "a"), _digest(tmp_path / "b")
    assert a == b and ID_MAP_FILE in a


def test_the_cli_flag(tmp_path):
    from pitwatch.cli import main

    r = CliRunner().invoke(main, ["simulate", "--help"])
    assert r.exit_code == 0 and "--reuse-ids" in r.output and "--reuse-ids --fault" in r.output
    out = tmp_path / "day"
    r = CliRunner().invoke(main, ["simulate", "--out", str(out), "--tables", "stud=1,combate=1", "--hours", "1",
                                  "--fault", "PACK_COMPOSITION=0.5", "--reuse-ids", "--quiet", "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert f"{out / ID_MAP_FILE}" in r.output
    truth = [orjson.loads(x) for x in (out / "truth.jsonl").read_bytes().splitlines()]
    assert truth and any(t["pack_use"] > 1 for t in truth)
    ids = read_id_map(out)
    assert any(use > 1 for _, use in ids.values())
