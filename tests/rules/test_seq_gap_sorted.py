"""``SeqTracker.feed_sorted`` (the batch's per-device pass) against feeding one arrival at a time."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pitwatch.rules.sequence import SeqTracker

arrivals = st.lists(st.tuples(st.integers(1, 40), st.sampled_from(["BAC-1", "BAC-2", None]),
                              st.one_of(st.none(), st.integers(0, 10**6))), max_size=60)
prior = st.one_of(st.none(), st.integers(0, 45))


def _both(rows, prior_seq):
    one, many = SeqTracker(), SeqTracker()
    if prior_seq is not None:
        for t in (one, many):
            t.feed("DT-1", prior_seq, "BAC-1", "p", 5)
    # the pipeline's order: by seq, accepted (with ts) before rejected, then event_id
    rows = sorted(((s, tab, f"e{k}", ts) for k, (s, tab, ts) in enumerate(rows)),
                  key=lambda r: (r[0], r[3] is None, r[2]))
    expected = []
    for seq, tab, eid, ts in rows:
        expected += one.feed("DT-1", seq, tab, eid, ts, {"BAC-1": "baccarat"}.get(tab))
    first = [r for k, r in enumerate(rows) if k == 0 or r[0] != rows[k - 1][0]]
    got = many.feed_sorted("DT-1", np.array([r[0] for r in first], np.int64),
                           lambda i: (*first[i][1:], None), {"BAC-1": "baccarat"}) if first else []
    return expected, got, one.state(), many.state()


@settings(max_examples=300, deadline=None)
@given(arrivals, prior)
def test_contract_seq_gap_sorted_pass_equals_one_by_one(rows, prior_seq):
    expected, got, state_one, state_many = _both(rows, prior_seq)
    assert [f.to_row() for f in got] == [f.to_row() for f in expected]
    assert state_many == state_one


def test_contract_seq_gap_sorted_pass_finds_each_gap():
    expected, got, _, state = _both([(1, "BAC-1", 1), (2, "BAC-1", 2), (5, "BAC-2", 5), (6, "BAC-1", 6),
                                     (9, "BAC-1", 9)], None)
    assert [f.actual for f in got] == ["the next event was numbered 5: 2 events lost (number 3 to 4)",
                                       "the next event was numbered 9: 2 events lost (number 7 to 8)"]
    assert got[0].table_id == "BAC-2" and state["last"]["DT-1"][0] == 9
