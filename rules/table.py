"""``TableReplay``: the per-table replay driver (pure, incremental, checkpointable).

Feed it one table's accepted events; it returns the findings each event
completes, and hands out the table's ``rounds`` and ``packs`` rows (and each
pack's drawn-card sequence, for the cross-pack repeat check of
:mod:`pitwatch.rules.repeated_runs`) once they are final.  Game procedures plug in
through :class:`pitwatch.rules.game.GameProcedure` (chosen by ``table_opened.game``,
see :mod:`pitwatch.rules.procedures`); this module does what every game shares:
seats, pack attribution, rounds, the shoe/terminal card matching and the
shared rules (:mod:`pitwatch.rules.packs`, :mod:`pitwatch.rules.rounds`).  ``SEQ_GAP`` is not
here: a device may serve several tables, so it is tracked per device by
:class:`pitwatch.rules.sequence.SeqTracker`.

Ordering policy
---------------
The engine receives each device's events in ``seq`` order, but the events of
different devices (shuffler, shoe, dealer terminal) interleaved in any way:
clocks skew by seconds and live feeds lag.  Findings are identical (same ids,
same rows) for every interleaving that keeps each device's order, because:

1. **No timestamps across devices.**  ``ts`` is used only as data (finding
   ``ts`` = the latest evidence ``ts``; gaming days).  Order *within* the
   dealer stream is the terminal's own order (a per-table position counter).
2. **Cards are matched by index, per pack**: the shoe's ``card_drawn`` by
   ``index`` against the terminal's ``card_dealt`` in order (burns included),
   with resynchronisation (:mod:`pitwatch.rules.alignment`); never by time.
3. **Cross-stream decisions wait for both sides' evidence**: a mismatch, a
   cutting card against its insertion, a riffle against the shuffler's
   "pre-shuffled", the coup in which the cutting card surfaced.
4. **Absence decisions wait until both streams have passed the point**: a
   stream has passed a pack when it moved on — shoe: ``shoe_emptied`` or an
   event of another pack; terminal: a card dealt or a round started from
   another pack, a ``reshuffle`` to another pack, ``table_closed`` — or at
   ``close()``.  An unaccounted card, "no run on the shoe, look at the
   terminal", the end of a pack are such decisions.  A shuffler's report may
   lag without bound, so "no shuffle recorded" (``UNSHUFFLED_PACK``) and a
   shoe count needing the shuffler's ``decks`` are decided at ``close()``
   unless the report arrives — except for a pack shuffled only at the table
   (by hand, riffle, or rebuilt by ``reshuffle``: no shuffler report is to
   come, see ``PACK_COMPOSITION`` in :mod:`pitwatch.rules.packs`), decided once both
   streams passed it.
5. **Rows are final**: a round row is handed out once the round ended and the
   matching has decided every card of it (its findings count can no longer
   change); a pack row once both card streams passed the pack and every
   pack decision is taken.  At ``close()`` everything open is decided and
   handed out.  (Rows and findings may come out at different calls under
   different interleavings; their contents do not differ.)

Tables without a shoe
---------------------
Stud, stud8 and razz are dealt by hand: there is no shoe stream (the table's
reference ``shoe``, default by game, :meth:`pitwatch.rules.reference.TableReference.has_shoe`).
On such a table the shoe side of every pack counts as passed from the start
(``pack.shoe_passed`` is True when the pack is created, or when the game
becoming known makes the table shoeless), exactly as if the shoe had emptied
before drawing a card: nothing is matched across streams, so a pack and its
rounds are final once the terminal has passed the pack, and what needs both
streams (the terminal's 8-card run, a count that looks at the shoe) is
decided from the terminal alone as ``close()`` would decide it.  Shoe events
that arrive anyway are **ignored** (no finding, no state): the alternative,
taking them in, would let their arrival before or after the terminal passed
a pack change the results.  The mode follows the table's game when it is
known (shoe events held until then are dropped if the game has no shoe);
packs still open when a table changes game keep the mode they were given.

Pack attribution on the terminal: an event's own ``pack_id`` first; a
preparation event without one (``cut_offered`` …) belongs to the pack being
prepared, or, when none is named yet, waits for the next pack the terminal
names; a burn without ``pack_id`` belongs to the pack being prepared; a
round's card to the round's pack (changed by ``reshuffle``).  One dealer
terminal per table is assumed (its ``seq`` order is the table's order).  Which
*use* of a pack id (or round id) an event names, when devices use ids again, is
decided per stream from that stream's own order: "Ids used again" below.

Ids used again
--------------
events.md 2.1: a device "may use the id again once the pack it named has left
play (its stub taken out, or the table dealing from another pack) ... that is a
new pack", and a terminal "uses an id again only after the earlier round
ended: that is a new round".  Each use is a pack or round of its own, with a
use number (1 for the first) in its rows (``pack_use``, ``round_use``) and, from
the second use on, in its key: the engine keys use ``n`` of id ``X`` as ``X``
for ``n = 1`` and ``X#n`` after (:mod:`pitwatch.rules.uses`), so a feed that never uses
an id again gives the rows and ``finding_id`` s it gave before; every internal
reference (a round's packs, a card's round, the keys of findings) holds the
use key; rows and findings show the id and the use number
(:meth:`TableReplay.id_use`).  Which use an event names is decided **per
stream, from that stream's own order** (so any interleaving of the devices
gives the same uses, as the ordering policy above needs); the n-th uses of all
streams are one pack ``X#n``:

* shuffler: its n-th ``shuffle_completed`` of an id is use n (a report is the
  shuffle of a new pack);
* shoe: an event naming an id the shoe has left (``shoe_emptied`` of it, or an
  event of another pack, as "the shoe has passed a pack" above) starts the next
  use; so does a ``shoe_loaded`` of an id it already drew from;
* terminal: an event that starts a pack (a preparation event, a burn, a card,
  ``round_started``, ``reshuffle``) naming an id the terminal has left (dealt
  from another pack, ``table_closed``) starts the next use; so does a
  preparation event (``shuffle``, a cut, ``riffle_requested``, ``reshuffle`` …)
  naming an id the terminal already dealt from (a pack is prepared before it is
  dealt: preparing it again is preparing a new pack — the table dealing the
  same id again after the stub went out has no other pack in between); the
  notes ``stub_counted``, ``stub_discarded``, ``last_coup_announced`` name the
  latest use;
* ``close()`` leaves every pack and ends every round (a table that speaks
  again after a live idle close starts new uses).

A straggler of a finished use (an event naming the stream's latest use after
that pack was handed out: a shuffler's late first report, a late stub note) is
detached as before, not a new pack.  Rounds live on the terminal alone: only a
``round_started`` starts a use, of an id whose round ended (``round_ended``, or
never started); any other event names the latest use.  A ``round_started``
naming a round still open (started, not ended) is **refused**: the state does
not change (the event is as if it never came) and :meth:`TableReplay.drain_rejects`
hands it out with its reason, for the caller to store the line as rejected.
Each stream remembers the use numbers of the last ``KEEP_USES`` (256: a shoe of coups numbered per shoe) ids it
named; an id it named longer ago starts again at use 1 (a new pack or round all
the same: its key was handed out long before, so it is not taken as a
straggler).  A pack the terminal shuffled at the table alone (``shuffle`` by
``hand`` or ``riffle``, no ``machine``) is one the shuffler never reports
(events.md: "a machine shuffle is also seen by the shuffler"): the terminal
remembers such uses (``table_shuffled``, :meth:`TableReplay.terminal_shuffled`)
and the shuffler's next report of the id names the use after them
(:meth:`TableReplay.shuffler_key`) — a hand-shuffled stud pack whose id the
shuffler's counter later gives to another pack no longer puts that pack's deck
count on the wrong use (issue 36's reuse matrix, razz ``PACK_COMPOSITION``).
This reads the terminal's shuffle before the shuffler's next report: a feed
whose shuffler report of use n+1 comes before the terminal's hand shuffle of use
n (a device late by a whole pack) numbers that report n.  A stream that skips a
use otherwise — a shuffler report lost (the ``seq`` gap is reported,
``SEQ_GAP``) — numbers its later uses of that id one behind the other streams:
its report then goes to a finished pack (a straggler, detached) or to an open
one, and which depends on the interleaving.  That is the per-stream rule's limit
(no cross-device timestamps decide, point 1 above).  Ids are taken
as they are: a device id holding ``#`` and digits could meet another id's use
key (``X#2``); none of the contract's examples does.

State is one typed record, :class:`pitwatch.rules.state.Table` (its packs,
rounds, card matching … are records of :mod:`pitwatch.rules.state`, each
game's own records are its plug-in's), so a nightly run hands it to the next
night and a live service checkpoints it: ``state_json()`` writes it as JSON
(msgspec), ``TableReplay.from_state(...)`` reads it back — an older version's
state through :mod:`pitwatch.rules.migrations` — checking every field's type.

**What other modules may touch.**  Game plug-ins (:mod:`pitwatch.rules.game`)
read ``ctx.table`` and their own records, and act through the plug-in API
(``emit``, ``undecided``, ``check_misdeal``, ``composition_decided``, ``pack``,
``round``, ``open_packs``, ``occupied``, ``label``).  The engine's streams
(:mod:`pitwatch.rules.dealer`, :mod:`pitwatch.rules.machines`) also use the
stream API (``open_pack``, ``open_round``, ``passes``, ``align``, ``settle``,
``set_game``, ``new_use``, ``reject``, ``round_may_end`` and the use keys).
The live service reads only the views (``open_packs``, ``open_rounds``,
``finished_packs``, ``pack``, ``round``, ``current_key``, ``id_use``) and never
changes anything.  Nothing outside this class touches its ``_`` attributes:
``tests/rules/test_plugin_api.py`` fails if a module does.
"""
from __future__ import annotations

import copy
from typing import Any, Sequence, overload

import msgspec

from pitwatch.rules import machines, packs, rounds
from pitwatch.rules.dealer import HANDLERS, resolve, round_event
from pitwatch.rules.finding import Finding, GamingDay, default_gaming_day, make_finding
from pitwatch.rules.migrations import migrate
from pitwatch.rules.procedures import checks_for, procedure_for
from pitwatch.rules.reference import DEFAULT_REFERENCE, TableReference
from pitwatch.rules.state import IdUse, KeyUse, Pack, Ref, Round, Table
from pitwatch.rules.uses import (
    DEALT,
    KEEP_KEYS,
    LEFT,
    NAMED,
    ROUND_ENDED,
    STARTS,
    again,
    prune,
    use_key,
)
from pitwatch.schemas.events import Event

_KEEP_DONE = 64  # finished pack/round keys remembered, to ignore late stragglers
_ENCODER = msgspec.json.Encoder()


class TableReplay:
    """Replay of one table.  ``feed(event) -> findings``; ``close() -> findings``."""

    def __init__(self, table_id: str, reference: TableReference | None = None,
                 gaming_day: GamingDay | None = None) -> None:
        self.table_id = table_id
        self.ref = reference or DEFAULT_REFERENCE
        self.gaming_day = gaming_day or default_gaming_day
        self.table = Table(table_id)
        self.proc = procedure_for(None, self.ref)
        self.checks = checks_for(self.ref)  # table checks beside the game's plug-in (pitwatch.rules.procedures.CHECKS)
        self._out: list[Finding] = []
        self._rejects: list[tuple[Event, str]] = []    # (event, reason): events the replay refused (drain_rejects)
        self._caches()

    def _is_shoeless(self) -> bool:
        """The table deals without a card-reading shoe (see "Tables without a shoe"); while
        the game is unknown, only a table whose reference says so.  Kept in ``shoeless``."""
        if self.table.game is None and self.ref.shoe is None:
            return False
        return not self.ref.has_shoe(self.proc.dealt_from_shoe)

    def _no_shoe_passes(self) -> None:
        """On a table without a shoe, mark the shoe side of every open pack passed."""
        if self.shoeless:
            for pid in list(self.table.packs):
                self.passes(pid, "shoe")

    def _caches(self) -> None:
        """Bookkeeping that only saves work (derived from ``table``, never part of the state).

        ``_fver`` counts changes that can make a round waiting on the card matching final
        (matching progress, a stream passing a pack, a pack handed out, a card to an ended
        round); ``_fclean`` is ``(_fver, len(ending))`` after a flush found every ending round
        waiting on the matching, so the next flush can skip them while nothing changed.
        ``_ready`` holds the packs both card streams have passed (only those can be final)
        whose composition is decided; ``_held`` those still waiting on it (on a table
        without a shoe or shuffler count that is the end of input, so a day's packs can
        wait there: they are not scanned on every event).  ``shoeless``: :meth:`_is_shoeless`,
        asked on every shoe event; it changes only with the game (:meth:`_set_game`).
        """
        self.shoeless = self._is_shoeless()
        self._fver = 0
        self._fclean: tuple[int, int] | None = None
        passed = [(pid, p) for pid, p in self.table.packs.items() if p.shoe_passed and p.term_passed]
        self._ready = {pid for pid, p in passed if p.composition == "done"}
        self._held = {pid for pid, p in passed if p.composition != "done"}

    # --- public API ----------------------------------------------------------
    @property
    def game(self) -> str | None:
        return self.table.game

    def feed(self, ev: Event) -> list[Finding]:
        """Replay one event; returns the findings it completes."""
        if ev.table_id != self.table_id:
            raise ValueError(f"event {ev.event_id} is for table {ev.table_id}, not {self.table_id}")
        st = self.table
        source = ev.source
        if source == "dealer":  # the terminal's stream: pitwatch.rules.dealer
            if ev.pack_id is not None or ev.round_id is not None:
                resolved = resolve(self, ev)  # which use of its pack and round (see "Ids used again")
                if resolved is None:
                    return []   # refused (drain_rejects): as if it never came
                ev = resolved
            st.dealer_pos += 1
            st.dealer_id = ev.dealer_id
            HANDLERS.get(ev.type, round_event)(self, ev)
        elif st.game is None:
            machines.hold(self, ev)  # held until the game (its plug-in) is known
        elif source == "shoe":
            machines.shoe(self, ev)
        elif source == "shuffler":
            machines.shuffler(self, ev)
        for check in self.checks:
            check.on_event(self, ev)
        ending = st.ending
        if self._ready or ending and self._fclean != (self._fver, len(ending)):
            self._flush(False)  # else it would find nothing to do
        out = self._out
        self._out = []
        return out

    def close(self) -> list[Finding]:
        """End of input: decide everything pending; every open round and pack is handed out."""
        st = self.table
        st.unnamed_prep = []
        for rec in (*st.uses.shoe.values(), *st.uses.term.values()):
            rec.status = LEFT           # every pack has left play: an id named again is a new use
        for rec in st.uses.round.values():
            rec.status = ROUND_ENDED    # ... and every round has ended
        machines.release_early(self)
        for pack in list(st.packs.values()):
            pack.alignment.shoe_passed = pack.alignment.term_passed = True
            self._ready.add(pack.pack_id)
            self._held.discard(pack.pack_id)
            self._fver += 1
            packs.align(self, pack)
            packs.settle(self, pack, closing=True)
        self.proc.on_close(self)
        for check in self.checks:
            check.on_close(self)
        for rid in list(st.rounds):
            if rid not in st.ending:
                st.ending.append(rid)
        self._flush(True)
        out, self._out = self._out, []
        return out

    def drain_rounds(self) -> list[dict[str, Any]]:
        """Completed rows of the ``rounds`` table (pitwatch.schemas.arrow.ROUNDS), removed once returned."""
        out = [rounds.row(self, r) for r in self.table.out_rounds]
        self.table.out_rounds = []
        return out

    def drain_packs(self) -> list[dict[str, Any]]:
        """Completed rows of the ``packs`` table (pitwatch.schemas.arrow.PACKS), removed once returned."""
        out = [packs.row(self, p) for p in self.table.out_packs]
        self.table.out_packs = []
        return out

    def drain_rejects(self) -> list[tuple[Event, str]]:
        """``(event, reason)`` of each event the replay refused since the last call (a
        ``round_started`` naming a round still open): the caller stores the line as rejected
        with that reason; the replay went on as if it never came."""
        out, self._rejects = self._rejects, []
        return out

    def drain_pack_sequences(self) -> list[dict[str, Any]]:
        """Per completed pack: table_id, pack_id, game, first_ts, source and cards
        ``[index, card, event_id, ts, device_id, ts_offset]`` — the input of
        :func:`pitwatch.rules.repeated_runs.repeated_runs` (output rows, like the other drains)."""
        out: list[dict[str, Any]] = [msgspec.to_builtins(s) for s in self.table.out_sequences]
        self.table.out_sequences = []
        return out

    def state(self) -> dict[str, Any]:
        """The replay state as plain data (JSON types: what :meth:`state_json` writes)."""
        data: dict[str, Any] = msgspec.to_builtins(self.table)
        return data

    def state_json(self) -> bytes:
        """The replay state as JSON (UTF-8 bytes), for the nightly state and the live checkpoints;
        :meth:`from_state` reads it back."""
        return _ENCODER.encode(self.table)

    @classmethod
    def from_state(cls, state: dict[str, Any] | str | bytes, reference: TableReference | None = None,
                   gaming_day: GamingDay | None = None) -> "TableReplay":
        """The replay of a saved state: :meth:`state_json`'s JSON or :meth:`state`'s data, of this
        version or an older one (:func:`pitwatch.rules.migrations.migrate`).  A state that is not
        a table's state of a known version raises ValueError (``msgspec.ValidationError`` is one)."""
        if isinstance(state, (str, bytes)):
            state = msgspec.json.decode(state)
        if not isinstance(state, dict):
            raise ValueError(f"a replay state is a JSON object, not {type(state).__name__}")
        table = msgspec.convert(migrate(state), Table)
        # convert copies every typed field; the held events' rows are field name -> any value, kept
        # as given: copied, so that nothing the caller still holds is shared with the replay
        table.early, table.unnamed_prep = copy.deepcopy(table.early), copy.deepcopy(table.unnamed_prep)
        obj = cls(table.table_id, reference, gaming_day)
        obj.table = table
        obj.proc = procedure_for(table.game, obj.ref)
        obj._typed_game_states()
        obj._caches()
        obj._no_shoe_passes()  # a state saved before the table was known to be shoeless
        return obj

    def _typed_game_states(self) -> None:
        """A saved state holds each game's records as plain data: read them into the plug-in's types."""
        proc, table = self.proc, self.table

        def typed(kind: type[msgspec.Struct] | None, data: object) -> object:
            if kind is None or data is None or isinstance(data, kind):
                return None if kind is None else data
            return msgspec.convert(data, kind)

        table.game_state = typed(proc.table_state_type, table.game_state)
        for pack in (*table.packs.values(), *table.out_packs):
            pack.game_state = typed(proc.pack_state_type, pack.game_state)
        for rnd in (*table.rounds.values(), *table.out_rounds):
            rnd.game_state = typed(proc.round_state_type, rnd.game_state)

    # --- the plug-in API (ctx) ----------------------------------------------
    def occupied(self) -> list[int]:
        return sorted(s.seat for s in self.table.seated)

    def emit(self, rule_id: str, *, key: Sequence[object], evidence: list[Ref], expected: str, actual: str,
             rnd: Round | None = None, pack: Pack | None = None, round_id: str | None = None, seat: int | None = None,
             spot: str | None = None, device_id: str | None = None,
             dealer_id: str | None = None) -> Finding | None:
        """Raise a finding (at most once per rule + pack + round + key); returns it or None."""
        st = self.table
        if rnd is None and round_id is not None:
            rnd = st.rounds.get(round_id)
        if rnd is not None:
            round_id = rnd.round_id
        pack_id = pack.pack_id if pack is not None else (rnd.pack_id if rnd is not None else None)
        # pack_id, round_id: the use keys (the finding's key); its columns show the ids and use numbers
        holder = rnd if rnd is not None else pack if pack is not None else st
        fired_key = [rule_id, pack_id, round_id] + [None if k is None else str(k) for k in key]
        if fired_key in holder.fired:
            return None
        holder.fired.append(fired_key)
        if dealer_id is None and rnd is not None and not any(e.dealer_id for e in evidence):
            dealer_id = rnd.dealer_id
        raw_pack, pack_use = self.id_use(pack_id)
        raw_round, round_use = self.id_use(round_id)
        f = make_finding(rule_id, table_id=self.table_id, game=self.game, key=fired_key[1:],
                         evidence=evidence, expected=expected, actual=actual, gaming_day=self.gaming_day,
                         pack_id=raw_pack, round_id=raw_round, seat=seat, spot=spot,
                         device_id=device_id, dealer_id=dealer_id, pack_use=pack_use, round_use=round_use)
        if rnd is not None:
            rnd.findings += 1
        elif pack is not None:
            pack.findings += 1
        self._out.append(f)
        return f

    def undecided(self, rnd: Round, rule_id: str) -> None:
        if rule_id not in rnd.undecided:
            rnd.undecided.append(rule_id)

    def check_misdeal(self, rnd: Round) -> None:
        rounds.check_misdeal(self, rnd)

    def pack(self, pack_id: str | None) -> Pack | None:
        """The open pack of a use key (an event's ``pack_id`` as the engine resolved it)."""
        return None if pack_id is None else self.table.packs.get(pack_id)

    @overload
    def id_use(self, key: str) -> tuple[str, int]: ...
    @overload
    def id_use(self, key: None) -> tuple[None, None]: ...
    @overload
    def id_use(self, key: str | None) -> tuple[str, int] | tuple[None, None]: ...
    def id_use(self, key: str | None) -> tuple[str, int] | tuple[None, None]:
        """``(id, use number)`` of a pack's or round's use key (None: ``(None, None)``)."""
        if key is None:
            return None, None
        known = self.table.keys.get(key)
        return (key, 1) if known is None else (known.raw, known.n)

    def label(self, key: str | None) -> str | None:
        """A use key as a person reads it in a finding's text: the id the devices wrote."""
        return self.id_use(key)[0]

    # --- ids used again (see the module doc) ---------------------------------
    def new_use(self, raw: str, n: int) -> str:
        """The key of use ``n`` of ``raw``, remembered for the rows when it is not the id itself."""
        key = use_key(raw, n)
        if n > 1:
            keys = self.table.keys
            keys[key] = KeyUse(raw, n)
            if len(keys) > KEEP_KEYS:
                prune(keys, KEEP_KEYS)
        return key

    def stream_key(self, stream: str, raw: str, how: int = STARTS) -> str:
        """The use of pack id ``raw`` that an event of ``stream`` (``shoe``, ``term``) names.

        ``how``: :data:`NOTES` (a note about a pack: the stream's latest use of the id),
        :data:`STARTS` (an event that can start a pack: the next use once the stream has left the
        latest), :data:`PREPARES` (an event that prepares a pack — a shuffle, a cut, a shoe's
        load: the next use once the stream has dealt or drawn from the latest, or left it)."""
        uses = self.table.uses.of(stream)
        rec = uses.get(raw)
        if rec is None:
            again(uses, raw, IdUse(1, NAMED))
            return raw
        if rec.status >= how:
            again(uses, raw, rec)   # the most recently started last: the oldest are forgotten first
            rec.n += 1
            rec.status = NAMED
            return self.new_use(raw, rec.n)
        return raw if rec.n == 1 else use_key(raw, rec.n)

    def current_key(self, stream: str, raw: str | None) -> str | None:
        """The use key of ``stream``'s latest use of pack id ``raw`` (``shoe``, ``term``,
        ``shuffler``) or round id (``round``): where its last event of that id went."""
        if raw is None:
            return None
        rec = self.table.uses.shuffler.get(raw) if stream == "shuffler" else self.table.uses.of(stream).get(raw)
        n = 1 if rec is None else rec if isinstance(rec, int) else rec.n
        return raw if n == 1 else use_key(raw, n)

    def _mark(self, stream: str, key: str | None, what: int) -> None:
        if key is None:
            return
        raw, n = self.id_use(key)
        rec = self.table.uses.of(stream).get(raw)
        if rec is not None and rec.n == n and rec.status < what:
            rec.status = what

    def left(self, stream: str, key: str | None) -> None:
        """``stream`` (``shoe``, ``term``) has left the pack of use key ``key``."""
        self._mark(stream, key, LEFT)

    def dealt(self, stream: str, key: str | None) -> None:
        """``stream`` (``shoe``, ``term``) drew or dealt a card of the pack of use key ``key``."""
        self._mark(stream, key, DEALT)

    def shuffler_key(self, raw: str) -> str:
        """The use of pack id ``raw`` a shuffler report names: the next use after its last report of
        the id that the terminal has not shuffled at the table alone (:meth:`terminal_shuffled`: a
        pack shuffled by hand or riffled, which the shuffler never reports)."""
        uses = self.table.uses.shuffler
        n = uses.get(raw, 0) + 1
        at_table = self.table.table_shuffled.get(raw, ())
        while n in at_table:
            n += 1
        again(uses, raw, n)
        return self.new_use(raw, n)

    def terminal_shuffled(self, key: str, method: str | None) -> None:
        """The terminal shuffled the pack of use key ``key`` by ``method``: a use whose every
        shuffle so far is the table's own (``hand``, ``riffle``) is one the shuffler will not report
        (events.md: a machine shuffle is also seen by the shuffler), so the shuffler's next report
        of the id names the use after it (:meth:`shuffler_key`).  Remembered for the last
        ``KEEP_USES`` ids, a few uses each."""
        raw, n = self.id_use(key)
        shuffled = self.table.table_shuffled
        at_table = shuffled.get(raw, [])
        if method in ("hand", "riffle"):
            pack = self.table.packs.get(key)
            if n not in at_table and not (pack is not None and pack.shuffler is not None) \
                    and not (pack is not None and any(sh.method == "machine" for sh in pack.shuffles)):
                again(shuffled, raw, (at_table + [n])[-4:])
        elif n in at_table:
            again(shuffled, raw, [u for u in at_table if u != n])

    def round(self, round_id: str | None) -> Round | None:
        """The open round of a use key."""
        return None if round_id is None else self.table.rounds.get(round_id)

    def open_packs(self) -> list[Pack]:
        """The open packs, in the order they began (read them; change them only through this API)."""
        return list(self.table.packs.values())

    def open_rounds(self) -> list[Round]:
        """The open rounds, in the order they began."""
        return list(self.table.rounds.values())

    def finished_packs(self) -> list[Pack]:
        """The packs finished since the last :meth:`drain_packs` (their rows not yet handed out)."""
        return list(self.table.out_packs)

    def composition_decided(self, pack: Pack) -> None:
        """PACK_COMPOSITION is decided for ``pack`` (``pitwatch.rules.packs``): it may become final."""
        pack.composition = "done"
        if pack.pack_id in self._held:
            self._held.discard(pack.pack_id)
            self._ready.add(pack.pack_id)

    # --- the streams' API (pitwatch.rules.dealer, pitwatch.rules.machines) ----------
    def open_pack(self, pack_id: str, ev: Event) -> Pack:
        """The open pack of use key ``pack_id``, begun by ``ev`` if it is new (a straggler of a
        finished pack gets a detached pack, not kept)."""
        st = self.table
        pack = st.packs.get(pack_id)
        if pack is None:
            pack = Pack(pack_id, use=self.id_use(pack_id)[1], game_state=self.proc.new_pack_state())
            if self.shoeless:  # no shoe stream: its side of the pack is passed from the start
                pack.alignment.shoe_passed = True
            if pack_id in st.done_packs:
                return pack  # a straggler for a finished pack: detached, not kept
            st.packs[pack_id] = pack
        if pack.min_ts is None or ev.ts < pack.min_ts:
            pack.min_ts = ev.ts
        return pack

    def open_round(self, round_id: str, ev: Event) -> Round:
        """The open round of use key ``round_id``, begun by ``ev`` if it is new."""
        st = self.table
        rnd = st.rounds.get(round_id)
        if rnd is None:
            rnd = Round(round_id, use=self.id_use(round_id)[1], dealer_id=ev.dealer_id,
                        game_state=self.proc.new_round_state())
            if round_id not in st.done_rounds:
                st.rounds[round_id] = rnd
        if rnd.first_ts is None or ev.ts < rnd.first_ts:
            rnd.first_ts = ev.ts
        return rnd

    def settle(self, pack: Pack) -> None:
        """Decide what the pack's facts decide now (shared rules, then the game's)."""
        packs.settle(self, pack)
        self.proc.settle_pack(self, pack)

    def align(self, pack: Pack) -> None:
        """Advance the pack's card matching (and settle the game's checks if it moved)."""
        if packs.align(self, pack):
            self._fver += 1
            self.proc.settle_pack(self, pack)

    def round_may_end(self) -> None:
        """Something changed that can make an ended round final (a card after its ``round_ended``)."""
        self._fver += 1

    def reject(self, ev: Event, reason: str) -> None:
        """Refuse ``ev``: the state does not change; :meth:`drain_rejects` hands it out with ``reason``."""
        self._rejects.append((ev, reason))

    def passes(self, pack_id: str | None, stream: str) -> None:
        """Card stream ``stream`` (``shoe``, ``term``) has passed the pack: all its cards of it are in."""
        pack = None if pack_id is None else self.table.packs.get(pack_id)
        if pack is None:
            return
        al = pack.alignment
        if al.shoe_passed if stream == "shoe" else al.term_passed:
            return
        if stream == "shoe":
            al.shoe_passed = True
        else:
            al.term_passed = True
        self._fver += 1
        if pack.shoe_passed and pack.term_passed:
            (self._ready if pack.composition == "done" else self._held).add(pack.pack_id)
        self.align(pack)
        self.settle(pack)
        if pack.shoe_passed and pack.term_passed:
            self.proc.on_pack_done(self, pack)
            for check in self.checks:
                check.on_pack_done(self, pack)
            self.settle(pack)

    def _flush(self, closing: bool) -> None:
        st = self.table
        ending = st.ending
        if ending and (closing or self._fclean != (self._fver, len(ending))):
            live = st.rounds
            waiting = True  # every round left waits on the card matching
            for rid in list(ending):
                rnd = live.get(rid)
                if rnd is None:
                    ending.remove(rid)
                    continue
                status = True if closing else rounds.final_status(self, rnd)
                if status is True:
                    ending.remove(rid)
                    st.out_rounds.append(live.pop(rid))
                    st.done_rounds = (st.done_rounds + [rid])[-_KEEP_DONE:]
                elif status is not rounds.ALIGNING:
                    waiting = False
            self._fclean = (self._fver, len(ending)) if waiting else None
        ready = self._ready
        if not (ready or closing):
            return  # a pack is final only once both card streams passed it
        if closing or len(ready) > 1:
            candidates = [pid for pid in st.packs if closing or pid in ready]   # in the order packs began
        else:
            candidates = list(ready)
        for pid in candidates:
            pack = st.packs.get(pid)
            if pack is None:    # left the table's packs another way
                ready.discard(pid)
                continue
            if packs.final(self, pack, closing):
                st.out_packs.append(st.packs.pop(pid))
                ready.discard(pid)
                self._fver += 1
                st.out_sequences.append(packs.sequence(self, pack))
                st.done_packs = (st.done_packs + [pid])[-_KEEP_DONE:]
                if st.prep_pack == pid:
                    st.prep_pack = None
                if st.play_pack == pid:
                    st.play_pack = None
                if st.shoe_pack == pid:
                    st.shoe_pack = None

    # --- streams (terminal: pitwatch.rules.dealer, from feed; shoe and shuffler: pitwatch.rules.machines)
    def set_game(self, game: str | None) -> None:
        """The table's game is known (or changed): its plug-in takes over."""
        if game and game != self.table.game:
            was_unknown = self.table.game is None
            self.table.game = game
            self.proc = procedure_for(game, self.ref)
            self.shoeless = self._is_shoeless()
            self.table.game_state = self.proc.new_table_state()
            # an open pack or round without the new plug-in's record gets a new one (begun before the
            # game was known, or under another game: another plug-in's record is no use to this one)
            pack_kind, round_kind = self.proc.pack_state_type, self.proc.round_state_type
            for pack in self.table.packs.values():
                if pack_kind is None or not isinstance(pack.game_state, pack_kind):
                    pack.game_state = self.proc.new_pack_state()
            for rnd in self.table.rounds.values():
                if round_kind is None or not isinstance(rnd.game_state, round_kind):
                    rnd.game_state = self.proc.new_round_state()
            if was_unknown:  # packs named before the game was known
                self._no_shoe_passes()
            machines.release_early(self)
