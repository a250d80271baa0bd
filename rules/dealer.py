"""The dealer terminal's stream: table, seats, pack preparation and rounds.

Part of :class:`pitwatch.rules.table.TableReplay` (split out to keep modules small):
:data:`HANDLERS` routes one dealer event by its type.  Pack attribution and "the terminal
has passed a pack" are decided here from the terminal's own order only; see
the ordering policy in :mod:`pitwatch.rules.table`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from pitwatch.rules import packs, rounds
from pitwatch.rules.finding import ref
from pitwatch.rules.state import Action, Bet, IdUse, Pack, Payout, Round, Seat, Shuffle
from pitwatch.rules.uses import LEFT, NOTES, PREPARES, ROUND_ENDED, ROUND_NAMED, ROUND_STARTED, STARTS, again, use_key
from pitwatch.schemas.events import Event

if TYPE_CHECKING:
    from pitwatch.rules.table import TableReplay

_PREP = {"shuffle", "riffle_requested", "cut_offered", "cut_refused", "cut", "cut_card_inserted"}
_TABLE = {"table_opened", "table_closed", "dealer_in", "player_seated", "player_left"}
# how a terminal event's pack_id names a use (pitwatch.rules.table.TableReplay.stream_key); any other type: STARTS
_HOW = {"last_coup_announced": NOTES, "stub_counted": NOTES, "stub_discarded": NOTES, "reshuffle": PREPARES,
        **{t: PREPARES for t in _PREP}}
_NAMED, _STARTED, _ENDED = ROUND_NAMED, ROUND_STARTED, ROUND_ENDED


def resolve(rp: TableReplay, ev: Event) -> Event | None:
    """The terminal's event with its ``pack_id`` and ``round_id`` as the use keys they name (see
    "Ids used again" in :mod:`pitwatch.rules.table`), or None when it is refused: a ``round_started``
    naming a round still open (kept with its reason for :meth:`pitwatch.rules.table.TableReplay.drain_rejects`;
    nothing of the state changed)."""
    rid = rkey = ev.round_id
    if rid is not None:
        rkey = _round_key(rp, ev, rid)
        if rkey is None:
            return None
    raw = key = ev.pack_id
    if raw is not None:
        key = rp.stream_key("term", raw, _HOW.get(ev.type, STARTS))
    if rkey == rid and key == raw:
        return ev               # the first uses: the event as it came (a feed never using an id again)
    return ev._replace(round_id=rkey, pack_id=key)


def _round_key(rp: TableReplay, ev: Event, rid: str) -> str | None:
    """The use of round id ``rid`` the event names: a ``round_started`` starts a new use of an id
    whose round ended (or never started one), any other event names the latest use."""
    uses = rp.table.uses.round
    rec = uses.get(rid)
    t = ev.type
    if rec is not None and t != "round_started" and t != "round_ended":
        return rid if rec.n == 1 else use_key(rid, rec.n)    # the usual case: the latest use
    if rec is None and t == "round_started" and rid in rp.table.done_rounds:
        rec = IdUse(1, _ENDED)       # its count forgotten, its first use still remembered as finished
        again(uses, rid, rec)
    if rec is None:
        again(uses, rid, IdUse(1, _STARTED if ev.type == "round_started" else _ENDED if ev.type == "round_ended"
                          else _NAMED))
        return rid
    if ev.type == "round_started":
        if rec.status == _STARTED:
            rnd = rp.table.rounds.get(use_key(rid, rec.n))
            since = f" (started by event {rnd.start_ref.event_id})" if rnd is not None and rnd.start_ref else ""
            rp.reject(ev, f"round_started names round {rid!r}, which is still open on table "
                                    f"{rp.table_id}{since}: a round id is used again only after its round "
                                    "ended (round_ended); this line is rejected and the round goes on")
            return None
        if rec.status == _ENDED:
            again(uses, rid, rec)
            rec.n += 1
            rec.status = _STARTED
            return rp.new_use(rid, rec.n)
        rec.status = _STARTED
    elif ev.type == "round_ended":
        rec.status = _ENDED
    return use_key(rid, rec.n)


def _table_event(rp: TableReplay, ev: Event) -> None:
    st = rp.table
    t = ev.type
    if t == "table_opened":
        rp.set_game(ev.game)
        st.decks = ev.decks
        st.seated = []
        st.packs_since_open = 0
    elif t == "table_closed":
        for rec in st.uses.term.values():   # every pack has left play
            rec.status = LEFT
        for pid in list(st.packs):
            rp.passes(pid, "term")
        st.play_pack = st.prep_pack = None
        st.seated = []
    elif t == "player_seated":
        if ev.seat not in [s.seat for s in st.seated]:
            st.seat_counter += 1
            st.seated.append(Seat(ev.seat, st.seat_counter))
    elif t == "player_left":
        st.seated = [s for s in st.seated if s.seat != ev.seat]
    rp.proc.on_table_event(rp, ev)


def names(rp: TableReplay, pack_id: str, ev: Event) -> Pack:
    """The terminal names ``pack_id``: number it among the table's packs and hand it
    the preparation events that were waiting for a pack name."""
    st = rp.table
    pack = rp.open_pack(pack_id, ev)
    if pack.open_ordinal is None:
        st.packs_since_open += 1
        pack.open_ordinal = st.packs_since_open
        if not pack.dealt:
            st.prep_pack = pack_id
        waiting, st.unnamed_prep = st.unnamed_prep, []
        for raw in waiting:
            rp.proc.on_pack_event(rp, pack, Event.from_row(raw))
    return pack


def plays(rp: TableReplay, pack_id: str) -> None:
    """The terminal deals from ``pack_id``: it has passed the pack it dealt from before."""
    st = rp.table
    if st.play_pack not in (None, pack_id):
        rp.left("term", st.play_pack)
        rp.passes(st.play_pack, "term")
    st.play_pack = pack_id
    if st.prep_pack == pack_id:
        st.prep_pack = None


def _prep(rp: TableReplay, ev: Event) -> None:
    st = rp.table
    pid = ev.pack_id
    if pid is None:
        prep = st.prep_pack
        if prep is None or prep not in st.packs or st.packs[prep].dealt:
            st.unnamed_prep.append({n: getattr(ev, n) for n in ("event_id", "ts", "source", "type", "table_id",
                                       "device_id", "seq", "dealer_id", "by", "to", "position", "stack_size",
                                       "from_back", "method") if getattr(ev, n) is not None})
            return
        pid = prep
    pack = names(rp, pid, ev)
    if not pack.dealt:
        st.prep_pack = pid
    pack = rp.open_pack(pid, ev)
    if ev.type == "shuffle":
        rp.terminal_shuffled(pid, ev.method)
        pack.shuffles.append(Shuffle("dealer", ev.method, ref(ev)))
    rp.proc.on_pack_event(rp, pack, ev)
    rp.settle(pack)


def _loose_card(rp: TableReplay, ev: Event) -> None:
    """A card_dealt outside any round: a burn of the pack being started (003 4.7)."""
    st = rp.table
    pid = ev.pack_id or st.prep_pack or st.play_pack
    if pid is None:
        return
    names(rp, pid, ev)
    plays(rp, pid)
    pack = rp.open_pack(pid, ev)
    rp.dealt("term", pid)
    packs.record_term_card(pack, ev, None, st.dealer_pos)
    rp.proc.on_pack_event(rp, pack, ev)
    rp.align(pack)
    rp.settle(pack)


def _pack_note(rp: TableReplay, ev: Event) -> None:
    st = rp.table
    rnd = st.rounds.get(ev.round_id) if ev.round_id else None
    pid = ev.pack_id or (rnd.packs[-1] if rnd and rnd.packs else None) or st.play_pack
    if pid is None:
        return
    pack = rp.open_pack(pid, ev)
    if ev.type == "stub_counted":
        pack.stub_counts.append(ev.stub)
    rp.proc.on_pack_event(rp, pack, ev)
    rp.settle(pack)


def round_event(rp: TableReplay, ev: Event) -> None:
    """A dealer event of a round (other than a card: :func:`_card_dealt`), by its type."""
    rid = ev.round_id
    if rid is None:
        return
    _ROUND.get(ev.type, _round_other)(rp, rp.open_round(rid, ev), ev)


def _round_started(rp: TableReplay, rnd: Round, ev: Event) -> None:
    st = rp.table
    if st.game is None:
        rp.set_game(ev.game)
    pid = ev.pack_id
    rnd.pack_id, rnd.game, rnd.dealer_id, rnd.started = pid, ev.game, ev.dealer_id, ev.ts
    rnd.start_ref, rnd.start_pos = ref(ev), st.dealer_pos
    if pid not in rnd.packs:
        rnd.packs.append(pid)
    names(rp, pid, ev)
    plays(rp, pid)
    pack = rp.open_pack(pid, ev)
    pack.rounds.append(ev.round_id)
    rp.proc.on_round_start(rp, rnd, ev)
    rp.settle(pack)


def _bet_placed(rp: TableReplay, rnd: Round, ev: Event) -> None:
    rnd.bets.append(Bet(ev.seat, ev.spot, ev.amount, bool(ev.all_in), ref(ev)))
    rp.proc.on_bet(rp, rnd, ev)


def _bets_closed(rp: TableReplay, rnd: Round, ev: Event) -> None:
    if rnd.bets_closed is None:
        rnd.bets_closed = ref(ev)
    rp.proc.on_bets_closed(rp, rnd, ev)


def _payout(rp: TableReplay, rnd: Round, ev: Event) -> None:
    rounds.check_payout(rp, rnd, ev)
    rnd.payouts.append(Payout(ev.seat, ev.spot, ev.hand or 1, ev.result, ev.amount, ref(ev)))
    rp.proc.on_payout(rp, rnd, ev)


def _reshuffle(rp: TableReplay, rnd: Round, ev: Event) -> None:
    pid = ev.pack_id
    names(rp, pid, ev)
    plays(rp, pid)
    pack = rp.open_pack(pid, ev)
    pack.shuffles.append(Shuffle("reshuffle", None, ref(ev)))
    if pid not in rnd.packs:
        rnd.packs.append(pid)
    pack.rounds.append(ev.round_id)
    rp.proc.on_round_event(rp, rnd, ev)
    rp.settle(pack)


def _round_ended(rp: TableReplay, rnd: Round, ev: Event) -> None:
    st = rp.table
    rounds.check_misdeal(rp, rnd)
    rnd.ended = ev.ts
    rnd.done = True
    rp.proc.on_round_end(rp, rnd, ev)
    rid = ev.round_id
    if rid not in st.ending and rid in st.rounds:
        st.ending.append(rid)


def _player_action(rp: TableReplay, rnd: Round, ev: Event) -> None:
    rnd.actions.append(Action(ev.seat, ev.hand or 1, ev.action, ev.amount, bool(ev.all_in), ev.street, ref(ev)))
    rp.proc.on_round_event(rp, rnd, ev)


def _round_voided(rp: TableReplay, rnd: Round, ev: Event) -> None:
    rnd.voided = True
    rp.proc.on_round_event(rp, rnd, ev)


def _round_other(rp: TableReplay, rnd: Round, ev: Event) -> None:
    rp.proc.on_round_event(rp, rnd, ev)


def _card_dealt(rp: TableReplay, ev: Event) -> None:
    """A card of a round; outside any round, a burn (:func:`_loose_card`)."""
    rid = ev.round_id
    if rid is None:
        _loose_card(rp, ev)
        return
    rnd = rp.open_round(rid, ev)
    st = rp.table
    pid = ev.pack_id or (rnd.packs[-1] if rnd.packs else None) or st.play_pack
    tpos: int | None = None
    pack: Pack | None = None
    if pid is not None:
        named = st.packs.get(pid)
        if named is None or named.open_ordinal is None:  # else names() changes nothing
            names(rp, pid, ev)
        if st.play_pack != pid or st.prep_pack == pid:  # else plays() changes nothing
            plays(rp, pid)
        pack = rp.open_pack(pid, ev)
        if not pack.dealt:
            rp.dealt("term", pid)
        tpos = packs.record_term_card(pack, ev, ev.round_id, st.dealer_pos)
        if pid not in rnd.packs:
            rnd.packs.append(pid)
            pack.rounds.append(ev.round_id)
        if rnd.pack_id is None:
            rnd.pack_id = pid
    rounds.on_card(rp, rnd, ev, pid, tpos)
    if rnd.done:
        rp.round_may_end()  # a card after round_ended: the round's finality is to be looked at again
    rp.proc.on_card(rp, rnd, ev)
    if pack is not None:
        rp.align(pack)
        rp.settle(pack)


# dealer event type -> what replays it (any other type: :func:`round_event`); TableReplay.feed routes by it
HANDLERS: dict[str, Callable[[TableReplay, Event], None]] = {
    **{t: _table_event for t in _TABLE}, **{t: _prep for t in _PREP}, "card_dealt": _card_dealt,
    "last_coup_announced": _pack_note, "stub_counted": _pack_note, "stub_discarded": _pack_note}
# a round's event type -> its handler (:func:`round_event`; any other type: :func:`_round_other`)
_ROUND: dict[str, Callable[[TableReplay, Round, Event], None]] = {
    "round_started": _round_started, "bet_placed": _bet_placed, "bets_closed": _bets_closed,
    "payout": _payout, "reshuffle": _reshuffle, "round_ended": _round_ended,
    "player_action": _player_action, "round_voided": _round_voided}
