"""Ids used again (issue 36) in the three forms of the driver: the nightly batch, the live service
and the Beam streaming form give the same rows — every column of findings, rounds and packs — on a
simulated floor whose pack and round ids are numbered again and again (a shuffler counting packs
modulo 2, terminals counting rounds modulo 3), with one ``round_started`` naming a round still
open: the batch moves it to ``rejects``, live counts it rejected, Beam hands it out as a reject."""
from __future__ import annotations

import heapq
import json

import pytest

from pitwatch.lake import Lake
from tests.watch import equivalence as eq
from tests.watch.test_equivalence import cross_pack_repeat

pytestmark = pytest.mark.slow


def reused_floor(folder, rename: bool = True):
    """Simulate a small floor and number its ids again in place (``rename``; else the ids stay
    unique); returns the day folders, the refused line's (device_id, event_id) and, per
    (table_id, field), the ids renamed ``{old: new}``."""
    from pitwatch.simulator import simulate

    simulate(folder, tables={"baccarat": 1, "three_bet_poker": 1, "stud": 1}, hours=0.5, seed=5,
             faults={"PAYOUT": 0.1, "SHOE_CARD_MISMATCH": 0.2, "UNACCOUNTED_CARD": 0.2}, workers=1)
    files = sorted(folder.glob("20*/*.jsonl"))
    rows = {f: [json.loads(line) for line in f.read_text().splitlines()] for f in files}
    ordered = sorted((r["ts"], r["device_id"], r["seq"], r) for f in files for r in rows[f]
                     if isinstance(r, dict) and "table_id" in r)
    # the shuffler's packs are numbered again (a pack rebuilt or shuffled at the table keeps its id:
    # a stream that skips a use of an id numbers its next ones behind, pitwatch.rules.table "Ids used again")
    reported = {r["pack_id"] for *_k, r in ordered if r["type"] == "shuffle_completed"}
    names: dict = {}
    for _ts, _dev, _seq, r in ordered:
        for field, prefix, cycle in (("pack_id", "P", 2), ("round_id", "R", 3)):
            v = r.get(field)
            if v is not None and (field == "round_id" or v in reported):
                seen = names.setdefault((r["table_id"], field), {})
                seen.setdefault(v, f"{prefix}-{len(seen) % cycle + 1}")
    for f, lines in rows.items():
        for r in lines:
            for field in ("pack_id", "round_id"):
                if rename and isinstance(r, dict) and r.get(field) is not None:
                    r[field] = names[(r["table_id"], field)].get(r[field], r[field])
    # one round_started naming its round while it is open: a copy of the 5th start, right after it
    dealer = next(f for f in files if f.name.startswith("DT-BAC"))
    lines = rows[dealer]
    at = [i for i, r in enumerate(lines) if r.get("type") == "round_started"][4]
    again = {**lines[at], "event_id": lines[at]["event_id"] + "-again"}
    lines.insert(at + 1, again)
    for r in lines[at + 1:]:
        r["seq"] += 1
    for f, lines in rows.items():
        f.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return sorted(d for d in folder.iterdir() if d.is_dir()), (again["device_id"], again["event_id"]), names


def test_batch_live_and_beam_give_the_same_rows_on_a_floor_using_ids_again(tmp_path):
    from pitwatch.lake.parquet import read_table

    days, refused, _names = reused_floor(tmp_path / "sim")
    batch = eq.batch(days, tmp_path / "lake")
    packs = [dict(r) for r in batch["packs"]]
    rounds = [dict(r) for r in batch["rounds"]]
    assert max(p["pack_use"] for p in packs) >= 3 and max(r["round_use"] for r in rounds) >= 3
    assert len({(p["table_id"], p["pack_id"], p["pack_use"]) for p in packs}) == len(packs)
    assert len({(r["table_id"], r["round_id"], r["round_use"]) for r in rounds}) == len(rounds)
    rejects = read_table(Lake.at(tmp_path / "lake"), "rejects").to_pylist()
    assert [(r["device_id"], r["event_id"]) for r in rejects] == [refused]
    assert "still open" in rejects[0]["reason"]

    rows, summary = eq.live_run(days, tmp_path / "live")
    assert rows == batch
    assert summary["rejected"] == 1, summary

    streams = [[(json.loads(line)["ts"], path.stem, line) for line in path.read_text().splitlines()]
               for path in sorted((tmp_path / "sim").glob("20*/*.jsonl"))]
    eq.beam_streaming([line for _ts, _dev, line in heapq.merge(*streams)],
                      eq.without(batch, lambda f: not cross_pack_repeat(f)), refused=[refused])


def test_a_floor_numbering_its_ids_again_writes_the_rows_of_the_same_floor_with_unique_ids(tmp_path):
    """Row for row, whole rows (findings but their ids), once each (id, use) is mapped back to the
    unique id it stands for: the n-th id renamed to X on a table is use n of X."""
    days, _refused, names = reused_floor(tmp_path / "sim")
    unique_days, _r, _n = reused_floor(tmp_path / "unique", rename=False)
    reused, unique = eq.batch(days, tmp_path / "lake"), eq.batch(unique_days, tmp_path / "lake-unique")
    back = {}
    for (table_id, field), mapping in names.items():
        count: dict = {}
        for old, new in mapping.items():        # in the order the ids came: their use numbers
            count[new] = count.get(new, 0) + 1
            back[(table_id, field, new, count[new])] = old

    def as_unique(rows, drop=()):
        out = []
        for row in rows:
            r = dict(row)
            for field, use in (("pack_id", "pack_use"), ("round_id", "round_use")):
                if r.get(field) is not None:
                    r[field] = back.get((r["table_id"], field, r[field], r[use]), r[field])
                r.pop(use, None)
            for k in drop:
                r.pop(k, None)
            out.append(json.dumps(r, sort_keys=True, default=str))
        return sorted(out)

    for name in ("rounds", "packs"):
        assert as_unique(reused[name]) == as_unique(unique[name]), name
    assert as_unique(reused["findings"], ["finding_id"]) == as_unique(unique["findings"], ["finding_id"])
    assert len(reused["findings"]) == len(unique["findings"]) > 0


def test_any_interleaving_of_the_floor_numbering_ids_again_gives_the_same_rows(tmp_path):
    """The engine alone, per table: random interleavings keeping each device's order, with state
    checkpoints (JSON) on the way, give the rows and findings of the batch's feed order."""
    import collections
    import random

    from pitwatch.engine.driver import feed_order
    from pitwatch.schemas.decode import GamingDayConfig, decode_line
    from tests.rules.test_engine import _merge
    from tests.rules.test_ids_used_again import replay

    days, _refused, _names = reused_floor(tmp_path / "sim")
    config = GamingDayConfig()
    by = collections.defaultdict(list)
    for f in sorted((tmp_path / "sim").glob("20*/*.jsonl")):
        for n, raw in enumerate(f.read_bytes().splitlines(), 1):
            out = decode_line(raw, f.name, n, config)
            if isinstance(out, tuple):
                by[out[0].table_id].append(out[0])
    for table_id, events in sorted(by.items()):
        base = replay(list(feed_order(events)), table_id)
        assert any(r["round_use"] > 1 for r in base[1]), table_id
        for seed in range(4):
            assert replay(_merge(events, random.Random(seed)), table_id, checkpoint_every=[0, 97][seed % 2]) \
                == base, (table_id, seed)
