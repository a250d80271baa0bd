"""Issue 41, deliverable 2: one turn's lines taken in the floor's order — per-device runs merged by
event time, each device's own order kept (live/order.py ``in_floor_order``, live/service.py ``take``)."""
from __future__ import annotations

import io
import json

from hypothesis import given
from hypothesis import strategies as st

from pitwatch.lake import Lake
from pitwatch.live.order import in_floor_order
from pitwatch.live.service import WatchOptions, WatchService
from pitwatch.live.sources import Line
from pitwatch.schemas.decode import GamingDayConfig, decode_line
from tests.conftest import line as event_line
from tests.data import clean_floor_lines


def _service(tmp_path, **opts) -> tuple[WatchService, io.BytesIO]:
    out = io.BytesIO()
    (tmp_path / "in").mkdir(exist_ok=True)
    svc = WatchService(WatchOptions(inputs=[str(tmp_path / "in")], lake=Lake.at(tmp_path / "lake"),
                                    state_dir=str(tmp_path / "st"), lake_alerts=False, **opts), stdout=out)
    return svc, out


def _decoded(lines: list[Line]) -> list[tuple]:
    return [(ln, decode_line(ln.raw, ln.file, ln.line, GamingDayConfig())) for ln in lines]


def _ts(second: int) -> str:
    return f"2026-11-28T20:00:{second:02d}.000Z"


def test_a_read_that_takes_the_terminals_file_before_the_shoes_raises_no_provisional_alert(tmp_path):
    """Found by bench/watch.py (445 of 861 provisional alerts cleared a moment later): one read takes
    each file's new lines one file after the other, so a round's ``round_ended`` in the terminal's
    file came before the shoe's last draws of that round, read in the same turn from the next file.
    The clean example floor read 40 lines at a time, every terminal's lines first in each read:
    no provisional alert, no finding, every line accepted."""
    lines = clean_floor_lines()
    svc, out = _service(tmp_path)
    try:
        for start in range(0, len(lines), 40):
            window = [(json.loads(raw)["source"], k, raw) for k, raw in enumerate(lines[start:start + 40], start)]
            window.sort(key=lambda w: (w[0] != "dealer", w[1]))      # the terminals' file read first
            svc.take([Line(raw, f"{source}.jsonl", k + 1) for source, k, raw in window])
        assert svc.counts["accepted"] == len(lines)
        assert (svc.counts["provisional"], svc.counts["findings"]) == (0, 0), out.getvalue()[:500]
    finally:
        svc.close()


def test_a_rejected_line_keeps_its_place_among_its_devices_lines(tmp_path):
    """The cause of the 12 watch tests the earlier attempt broke (a read sorted by time, rejected
    lines first): a device's rejected line taken before its own earlier lines set the device's last
    ``seq``, so those lines became late ones — the hole before them (a lost line) was never waited
    for nor reported (no ``SEQ_GAP``).  Here the terminal loses seq 2 and writes a rejected seq 4;
    the shoe's lines of the same read are earlier.  The rejected line stays after seq 3."""
    dealer = [event_line("bet_placed", seq=1, event_id="D1", ts=_ts(5)),
              event_line("bet_placed", seq=3, event_id="D3", ts=_ts(6)),
              event_line("bet_placed", seq=4, event_id="D4", ts=_ts(7)).replace('"bet_placed"', '"bet_plazed"'),
              event_line("bet_placed", seq=5, event_id="D5", ts=_ts(8))]
    shoe = [event_line("card_drawn", seq=k, event_id=f"S{k}", ts=_ts(k)) for k in (1, 2, 3)]
    read = ([Line(r.encode(), "dt.jsonl", k) for k, r in enumerate(dealer, 1)]
            + [Line(r.encode(), "shoe.jsonl", k) for k, r in enumerate(shoe, 1)])
    ordered = [(ln.file, ln.line) for ln, _ in in_floor_order(_decoded(read))]
    assert ordered == [("shoe.jsonl", 1), ("shoe.jsonl", 2), ("shoe.jsonl", 3),
                       ("dt.jsonl", 1), ("dt.jsonl", 2), ("dt.jsonl", 3), ("dt.jsonl", 4)]
    svc, out = _service(tmp_path, reorder_wait=0.0)
    try:
        svc.take(read)
        alerts = [json.loads(a) for a in out.getvalue().splitlines()]
        assert [a["actual"] for a in alerts if a["rule_id"] == "SEQ_GAP"] == [
            "the next event was numbered 3: 1 event lost (number 2)"]
        assert (svc.counts["late"], svc.counts["rejected"], svc.counts["accepted"]) == (0, 1, 6)
    finally:
        svc.close()


def test_a_device_whose_clock_goes_back_keeps_its_own_order():
    """A device's own lines are never reordered by time (its ``seq`` order is the reorder buffer's
    business): a re-sent line of an earlier time stays where it was read, only other devices' lines
    are merged around it."""
    a = [event_line("card_drawn", seq=k, event_id=f"A{k}", device_id="SHOE-A", ts=_ts(s))
         for k, s in ((1, 10), (2, 3), (3, 12))]
    b = [event_line("card_drawn", seq=1, event_id="B1", device_id="SHOE-B", ts=_ts(11))]
    read = [Line(r.encode(), "a.jsonl", k) for k, r in enumerate(a, 1)] + [Line(b[0].encode(), "b.jsonl", 1)]
    ordered = [(ln.file, ln.line) for ln, _ in in_floor_order(_decoded(read))]
    assert ordered == [("a.jsonl", 1), ("a.jsonl", 2), ("b.jsonl", 1), ("a.jsonl", 3)]


def test_lines_naming_no_device_go_first_and_are_all_taken():
    """Undecodable lines (no device, no time) reach no engine: they go first, nothing is dropped."""
    read = [Line(event_line("card_drawn", seq=1, event_id="A1", ts=_ts(4)).encode(), "a.jsonl", 1),
            Line(b"\xff\xfe not json", "a.jsonl", 2),
            Line(event_line("card_drawn", seq=1, event_id="B1", device_id="SHOE-B", ts=_ts(2)).encode(), "b.jsonl", 1)]
    ordered = [(ln.file, ln.line) for ln, _ in in_floor_order(_decoded(read))]
    assert ordered == [("a.jsonl", 2), ("b.jsonl", 1), ("a.jsonl", 1)]


@given(st.lists(st.tuples(st.sampled_from("ABCD"), st.integers(0, 50)), max_size=40))
def test_the_floors_order_keeps_each_devices_order_and_merges_sorted_runs_sorted(arrivals):
    """Any read: a permutation of it, each device's lines in the order read; when each device's
    times only go forward, the whole is in time order."""
    seqs: dict[str, int] = {}
    read = []
    for device, second in arrivals:
        seqs[device] = seqs.get(device, 0) + 1
        raw = event_line("card_drawn", seq=seqs[device], event_id=f"{device}{seqs[device]}",
                         device_id=f"SHOE-{device}", ts=_ts(second))
        read.append(Line(raw.encode(), f"{device}.jsonl", seqs[device]))
    out = in_floor_order(_decoded(read))
    assert sorted((ln.file, ln.line) for ln, _ in out) == sorted((ln.file, ln.line) for ln in read)
    for device in "ABCD":
        assert [ln.line for ln, _ in out if ln.file == f"{device}.jsonl"] == list(range(1, seqs.get(device, 0) + 1))
    times = [ev.ts for _ln, (ev, _digest) in out]
    forward = all([s for d, s in arrivals if d == device] == sorted(s for d, s in arrivals if d == device)
                  for device in "ABCD")
    assert not forward or times == sorted(times)
