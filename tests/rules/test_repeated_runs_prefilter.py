"""003 4.1 / 000 A at scale: the cheap pre-pass keeps every pack a repeated run can involve."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from pitwatch.rules.repeated_runs import PackCards, RunKeys, _windows, packs_sharing_a_run, repeated_runs, run_keys

DECK = [r + s for r in "A23456789TJQK" for s in "cdhs"]


def _record(table, pack, cards, t0, gaps=()):
    out, index = [], 0
    for i, c in enumerate(cards):
        index += 2 if i in gaps else 1
        out.append([index, c, f"{table}-{pack}-{i}", t0 + i])
    return {"table_id": table, "pack_id": pack, "game": "baccarat", "first_ts": t0, "cards": out}


def test_run_keys_are_the_windows_of_the_pack():
    cards = random.Random(1).sample(DECK, 40)
    cards[17] = None
    rec = _record("T", "P", cards, 0, gaps=(30,))
    windows = [key for key, _w in _windows(PackCards.from_record(rec), 10)]
    assert len(run_keys(rec)) == len(windows) == 8 + 3 + 1   # 0-16, 18-29, 30-39
    assert len(set(run_keys(rec))) == len(set(windows))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_prefilter_keeps_every_pack_repeated_runs_flags(data):
    rnd = random.Random(data.draw(st.integers(0, 10_000)))
    packs = []
    source = rnd.sample(DECK, 52)
    for n in range(data.draw(st.integers(2, 6))):
        cards = rnd.sample(DECK, 52)
        if rnd.random() < 0.6:     # copy a stretch of another pack's order
            start, length = rnd.randrange(0, 40), rnd.randrange(8, 13)
            at = rnd.randrange(0, 52 - length)
            cards[at:at + length] = source[start:start + length]
        if rnd.random() < 0.3:
            cards[rnd.randrange(52)] = None
        packs.append(_record(f"T{n % 2}", f"P-{n}", cards, rnd.randrange(0, 10) * 1000,
                             gaps=(rnd.randrange(52),) if rnd.random() < 0.3 else ()))
    everyone = repeated_runs(packs)
    kept = packs_sharing_a_run(packs)
    # the same packs reduced to their keys where they were replayed (one RunKeys per table), shipped as
    # bytes, some left as records (nightly: the packs carried from earlier days): the same answer
    by_table = {}
    for p in packs[1:]:
        by_table.setdefault(p["table_id"], []).append(p)
    reduced = [RunKeys.from_bytes(RunKeys.of(ps).to_bytes()) for ps in by_table.values()]
    assert packs_sharing_a_run(packs[:1], reduced=reduced) == kept
    assert {(f.table_id, f.pack_id) for f in everyone} <= kept
    subset = [p for p in packs if (p["table_id"], p["pack_id"]) in kept]
    assert repeated_runs(subset) == everyone


def test_prefilter_drops_packs_with_no_shared_run():
    rnd = random.Random(3)
    packs = [_record("T", f"P-{i}", rnd.sample(DECK, 52), i) for i in range(5)]
    assert packs_sharing_a_run(packs) == set()
    copy = _record("U", "P-copy", [c[1] for c in packs[2]["cards"]][5:20] + rnd.sample(DECK, 10), 99)
    assert packs_sharing_a_run(packs + [copy]) == {("T", "P-2"), ("U", "P-copy")}


def test_run_keys_travel_as_bytes_unchanged():
    rnd = random.Random(5)
    packs = [_record("T", f"P-{i}", rnd.sample(DECK, 52), i) for i in range(3)] + [_record("T", "short", DECK[:5], 9)]
    keys = RunKeys.of(packs)
    back = RunKeys.from_bytes(keys.to_bytes())
    assert back.keys.tolist() == keys.keys.tolist() == [k for p in packs for k in run_keys(p)]
    assert back.owners.tolist() == keys.owners.tolist() == [i for i in range(3) for _ in range(43)]
    assert back.names == keys.names == [("T", "P-0"), ("T", "P-1"), ("T", "P-2")]   # a pack with no run: no name
    empty = RunKeys.from_bytes(RunKeys.of([]).to_bytes())
    assert (empty.keys.tolist(), empty.names) == ([], [])
    assert packs_sharing_a_run(reduced=[empty]) == set()
