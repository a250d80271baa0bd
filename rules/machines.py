"""The shoe's and the shuffler's streams of one table.

Part of :class:`pitwatch.rules.table.TableReplay` (split out to keep modules small,
like :mod:`pitwatch.rules.dealer` for the terminal): :func:`shoe` and :func:`shuffler`
replay one event of those devices; events that arrive before the table's
game is known are held (:func:`hold`) and replayed by :func:`release_early`.
"The shoe has passed a pack" is decided here from the shoe's own order
(``shoe_emptied`` or an event of another pack).  On a table without a shoe
(:attr:`pitwatch.rules.table.TableReplay.shoeless`) shoe events are ignored: see
"Tables without a shoe" in :mod:`pitwatch.rules.table`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pitwatch.rules import packs
from pitwatch.rules.finding import ref
from pitwatch.rules.state import ShoeLoad, Shuffle, ShufflerReport
from pitwatch.rules.uses import PREPARES, STARTS
from pitwatch.schemas.events import EVENT_FIELDS, Event

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay


def hold(rp: TableReplay, ev: Event) -> None:
    """Keep a shoe/shuffler event until the game (its plug-in) is known, as its row (field name → value)."""
    rp.table.early.append({n: getattr(ev, n) for n in EVENT_FIELDS
                           if getattr(ev, n) is not None and n not in ("gaming_day", "file", "line")})


def release_early(rp: TableReplay) -> None:
    """Shoe and shuffler events that came before the game was known, in their arrival order."""
    early, rp.table.early = rp.table.early, []
    for raw in early:
        ev = Event.from_row(raw)
        (shoe if ev.source == "shoe" else shuffler)(rp, ev)


def shuffler(rp: TableReplay, ev: Event) -> None:
    if ev.type != "shuffle_completed" or ev.pack_id is None:
        return
    key = rp.shuffler_key(ev.pack_id)   # its n-th report of an id is the id's use n
    if key != ev.pack_id:
        ev = ev._replace(pack_id=key)
    pack = rp.open_pack(ev.pack_id, ev)
    if pack.shuffler is None:
        pack.shuffler = ShufflerReport(ev.decks, ev.card_count, list(ev.missing or []), list(ev.extra or []),
                                       bool(ev.preshuffled), ref(ev))
    pack.shuffles.append(Shuffle("shuffler", None, ref(ev)))
    rp.proc.on_pack_event(rp, pack, ev)
    rp.settle(pack)


def shoe(rp: TableReplay, ev: Event) -> None:
    if rp.shoeless:
        return  # no shoe at this table: its events are ignored (see pitwatch.rules.table)
    st = rp.table
    if ev.pack_id is None:
        return
    # a new use once the shoe left the id's latest (or loads it again after drawing from it)
    key = rp.stream_key("shoe", ev.pack_id, PREPARES if ev.type == "shoe_loaded" else STARTS)
    if key != ev.pack_id:
        ev = ev._replace(pack_id=key)
    if st.shoe_pack not in (None, ev.pack_id):
        rp.left("shoe", st.shoe_pack)
        rp.passes(st.shoe_pack, "shoe")
    pack = rp.open_pack(ev.pack_id, ev)
    st.shoe_pack = ev.pack_id
    t = ev.type
    if t == "shoe_loaded":
        if pack.shoe_loaded is None:
            pack.shoe_loaded = ShoeLoad(ev.card_count, ref(ev))
        rp.proc.on_pack_event(rp, pack, ev)
    elif t == "card_drawn":
        if not pack.shoe_seen:
            rp.dealt("shoe", ev.pack_id)
        pack.shoe_seen = True
        packs.record_shoe_card(rp, pack, ev)
        rp.proc.on_shoe_card(rp, pack, ev)
        rp.align(pack)
    else:  # cut_card_drawn, shoe_emptied
        if not pack.shoe_seen:
            rp.dealt("shoe", ev.pack_id)
        pack.shoe_seen = True
        if t == "shoe_emptied":
            pack.stub_remaining = ev.remaining
        rp.proc.on_pack_event(rp, pack, ev)
    rp.settle(pack)
    if t == "shoe_emptied":
        rp.left("shoe", ev.pack_id)
        rp.passes(ev.pack_id, "shoe")
        if st.shoe_pack == ev.pack_id:
            st.shoe_pack = None
