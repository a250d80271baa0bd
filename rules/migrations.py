"""Saved replay states of older versions, brought to :data:`pitwatch.rules.state.STATE_VERSION`.

A nightly run hands its tables' states to the next night (the lake's ``state``
table) and the live service checkpoints them; after an upgrade they are read
by the new version.  :func:`migrate` takes a saved state as plain data (what
``json`` reads) and returns it in this version's layout, one step per
version, each step a function of its own; :meth:`pitwatch.rules.table.TableReplay.from_state`
then reads it into the typed records (checking every field).  A state of an
unknown version is refused.

=======  ==========================================================================
version  what changed
=======  ==========================================================================
1        the first layout (pitwatch before ids used again, ``main`` at e586e4f)
2        ids used again: packs and rounds keyed by use, the streams' use records
3        typed records (:mod:`pitwatch.rules.state`): a pack's "stream passed" is
         kept once (the alignment's, ``s_done`` / ``t_done``; version 2 also had
         ``shoe_done`` / ``term_done``); the feed-health record has no version of
         its own and its SHOE_SILENT mark is a bool; a game with no state keeps
         None instead of ``{}``
=======  ==========================================================================

Records whose layout did not change (a shoe draw, a terminal card …) need no
step: they read as they were written, and a field added to a positional record
after version 1 has a default, so the shorter arrays of an old state read too.
"""
from __future__ import annotations

import copy
from typing import Any, Callable

from pitwatch.rules.state import STATE_VERSION
from pitwatch.rules.uses import DEALT, KEEP_USES, LEFT, NAMED, ROUND_ENDED, ROUND_NAMED, ROUND_STARTED, prune

_STREAMS = ("shuffler", "shoe", "term", "round")


def migrate(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` (plain data) in this version's layout: a new dict, the argument unchanged.  A
    state of this version is returned as it is; ValueError for a version this one cannot read."""
    v = state.get("v")
    if v == STATE_VERSION:
        return state
    if v not in _STEPS:
        raise ValueError(f"replay state version {v!r}: this pitwatch reads versions "
                         f"{', '.join(str(k) for k in sorted(_STEPS))} and {STATE_VERSION}")
    while v != STATE_VERSION:
        state = _STEPS[v](state)
        v = state["v"]
    return state


def _v1_to_v2(state: dict[str, Any]) -> dict[str, Any]:
    """Version 1 brought to version 2 (a new dict; the
    argument is not changed).  Version 1 (before ids used again) keyed packs and rounds by their
    raw ids: those keys are the first uses' keys of version 2, so the open packs and rounds stay
    as they are and gain their use number 1; each stream's use counter starts from what the state
    shows the stream named (the recently finished packs and rounds, ``done_packs`` and
    ``done_rounds``, as named and left by every stream; an open pack as named by the streams that
    have events in it, left by those that passed it), so an id named again after the upgrade is a
    new use exactly when version 2 would have made it one, but for a finished pack the table
    shuffled by hand, which version 1 does not tell (``table_shuffled`` starts empty: the
    shuffler's next report of its id is taken as that pack's use, as version 1 did).  Version 1 kept the last 64 finished
    packs and rounds (this version's streams remember the last ``KEEP_USES`` ids): an id finished
    before those is a new use all the same, numbered 1 again where a replay of the whole feed by
    this version would number it 2 or more — its rows and findings are the same apart from that
    number."""
    st = copy.deepcopy(state)
    uses: dict[str, dict[str, Any]] = {name: {} for name in _STREAMS}
    for pid in st["done_packs"]:
        uses["shuffler"][pid] = 1
        uses["shoe"][pid] = [1, LEFT]
        uses["term"][pid] = [1, LEFT]
    for pid, pack in st["packs"].items():
        pack["use"] = 1
        if pack["shuffler"] is not None:
            uses["shuffler"][pid] = 1
        if pack["shoe_loaded"] is not None or pack["shoe_seen"] or pack["al"]["s"]:
            uses["shoe"][pid] = [1, LEFT if pack["shoe_done"] else DEALT if pack["al"]["s"] else NAMED]
        if pack["open_ordinal"] is not None or pack["dealt"] or pack["rounds"]:
            uses["term"][pid] = [1, LEFT if pack["term_done"] else DEALT if pack["dealt"] else NAMED]
    for rid in st["done_rounds"]:
        uses["round"][rid] = [1, ROUND_ENDED]
    for rid, rnd in st["rounds"].items():
        rnd["use"] = 1
        uses["round"][rid] = [1, ROUND_ENDED if rnd["done"] else ROUND_STARTED if rnd["started"] is not None
                              else ROUND_NAMED]
    for rnd in st["out_rounds"]:
        rnd["use"] = 1
    for pack in st["out_packs"]:
        pack["use"] = 1
    for name in _STREAMS:
        prune(uses[name], KEEP_USES)
    st["uses"] = uses
    st["keys"] = {}
    st["table_shuffled"] = {}
    st["v"] = 2
    return st


def _v2_to_v3(state: dict[str, Any]) -> dict[str, Any]:
    """Version 2 brought to version 3: each pack's ``shoe_done`` / ``term_done`` dropped (the
    alignment's ``s_done`` / ``t_done`` said the same: version 2 set both together), the
    feed-health record's own version dropped, and a game state of ``{}`` (a game that keeps
    none) becomes None."""
    st = copy.deepcopy(state)
    for pack in (*st["packs"].values(), *st["out_packs"]):
        al, shoe_done, term_done = pack["al"], pack.pop("shoe_done", False), pack.pop("term_done", False)
        al["s_done"], al["t_done"] = bool(al["s_done"] or shoe_done), bool(al["t_done"] or term_done)
        if "shoe_silent" in pack:   # the feed-health check's mark: "done" once decided
            pack["shoe_silent"] = True
        if pack.get("g") == {}:
            pack["g"] = None
    for rnd in (*st["rounds"].values(), *st["out_rounds"]):
        if rnd.get("g") == {}:
            rnd["g"] = None
    if st.get("g") == {}:
        st["g"] = None
    feed = st.get("feed")
    if feed is not None:
        feed.pop("v", None)
    st["v"] = 3
    return st


#: version -> the step to the next version
_STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2, 2: _v2_to_v3}
#: the older state versions this one reads
MIGRATES_FROM = tuple(sorted(_STEPS))
