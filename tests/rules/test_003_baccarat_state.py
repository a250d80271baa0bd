"""Document 003's pack procedure keeps a typed record (issue 39): a state saved as the old dict still reads."""
from __future__ import annotations

import msgspec

from pitwatch.rules.baccarat import Baccarat as Plugin
from pitwatch.rules.baccarat_shoe import (
    Announce,
    Burn,
    Coup,
    Cut,
    CutCardDrawn,
    CutCardInsert,
    Offer,
    RiffleCandidate,
    ShoeChecks,
    ShoePack,
)
from pitwatch.rules.state import Ref


def _old_ref(n: int, dealer: str | None = "D-1") -> list:
    return [f"dt-{n:05d}", 1_000 + n, dealer, "DT-1", None]   # a version-2 ref: a plain list


def _old_pack_state() -> dict:
    """The pack state of a shoe in play as version 2 saved it (the old ``baccarat_shoe.new_state()`` dict and its updates)."""
    return {
        "offers": [["seat:3", _old_ref(1)], ["seat:5", _old_ref(3)]], "refused": ["seat:3"],
        "cut": {"by": "seat:5", "position": 200, "stack_size": 416, "ref": _old_ref(4)},
        "insert": {"from_back": 410, "stack_size": 416, "ref": _old_ref(5)},
        "riffle_req": None, "riffle_candidate": [_old_ref(0), _old_ref(4)],
        "cut_card": {"index": 6, "ref": [f"sh-{7:05d}", 2_000, None, "SHOE-1", 12]},
        "burns": [["up", "5h", _old_ref(8)], ["down", None, _old_ref(9)]], "first_coup": "R-1",
        "coups": [["R-1", 14, _old_ref(10)], ["R-2", 30, _old_ref(26)]], "announces": [[25, _old_ref(21)]],
        "checks": {"cut_card": "done", "riffle": "open", "last_coup": "done", "after_cut": "open", "burn": "done"},
    }


def test_003_a_pack_state_saved_as_the_old_dict_reads_as_the_record():
    def r(n: int) -> Ref:
        return Ref(f"dt-{n:05d}", 1_000 + n, "D-1", "DT-1", None)

    old = _old_pack_state()
    g = msgspec.convert(old, ShoePack)
    assert g == ShoePack(
        offers=[Offer("seat:3", r(1)), Offer("seat:5", r(3))], refused=["seat:3"],
        cut=Cut("seat:5", 200, 416, r(4)), insert=CutCardInsert(410, 416, r(5)), riffle_req=None,
        riffle_candidate=RiffleCandidate(r(0), r(4)), cut_card=CutCardDrawn(6, Ref("sh-00007", 2_000, None, "SHOE-1", 12)),
        burns=[Burn("up", "5h", r(8)), Burn("down", None, r(9))], first_coup="R-1",
        coups=[Coup("R-1", 14, r(10)), Coup("R-2", 30, r(26))], announces=[Announce(25, r(21))],
        checks=ShoeChecks(cut_card="done", riffle="open", last_coup="done", after_cut="open", burn="done"))
    assert g.coups[1].round_id == "R-2" and g.burns[1].card is None and g.cut_card.ref.ts_offset == 12
    # written back, it is the old dict again: old and new states are the same JSON
    assert msgspec.to_builtins(g) == old
    assert msgspec.json.decode(msgspec.json.encode(g), type=ShoePack) == g
    # a fresh pack state is the old new_state()'s
    fresh = Plugin().new_pack_state()
    assert isinstance(fresh, ShoePack) and Plugin.pack_state_type is ShoePack
    assert msgspec.to_builtins(fresh) == {
        "offers": [], "refused": [], "cut": None, "insert": None, "riffle_req": None,
        "riffle_candidate": None, "cut_card": None, "burns": [], "first_coup": None,
        "coups": [], "announces": [],
        "checks": {"cut_card": "open", "riffle": "open", "last_coup": "open", "after_cut": "open", "burn": "open"}}


def test_003_a_pack_state_of_a_version_1_checkpoint_reads():
    """Version 1 wrote three-item refs (no device, no offset): they read with ``device_id`` None."""
    old = _old_pack_state()
    old["coups"] = [["R-1", 14, ["dt-00010", 1010, "D-1"]]]
    old["riffle_req"] = ["dt-00000", 1000, "D-1", "DT-1"]
    g = msgspec.convert(old, ShoePack)
    assert g.coups[0].ref.device_id is None and g.coups[0].ref.ts_offset is None
    assert g.riffle_req.device_id == "DT-1" and g.riffle_req.ts_offset is None
