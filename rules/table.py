"""``TableReplay``: the per-table replay driver (pure, incremental, checkpointable).

Feed it one table's accepted events; it returns the findings each event
completes, and hands out the table's ``rounds`` and ``packs`` rows (and each
pack's drawn-card sequence, for the cross-pack repeat check of
:mod:`rules.repeated_runs`) once they are final.  Game procedures plug in
through :class:`rules.game.GameProcedure` (chosen by ``table_opened.game``,
see :mod:`rules.procedures`); this module does what every game shares:
seats, pack attribution, rounds, the shoe/terminal card matching and the
shared rules (:mod:`rules.packs`, :mod:`rules.rounds`).  ``SEQ_GAP`` is not
here: a device may serve several tables, so it is tracked per device by
:class:`rules.sequence.SeqTracker`.

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
   with resynchronisation (:mod:`rules.alignment`); never by time.
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
   come, see ``PACK_COMPOSITION`` in :mod:`rules.packs`), decided once both
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
reference ``shoe``, default by game, :meth:`rules.reference.TableReference.has_shoe`).
On such a table the shoe side of every pack counts as passed from the start
(``pack["shoe_done"]`` is True when the pack is created, or when the game
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
terminal per table is assumed (its ``seq`` order is the table's order).

State is plain data (``state()``: dicts, lists, str, int, float, bool,
None; JSON-serialisable) so a nightly run hands it to the next night and a
live service checkpoints it: ``TableReplay.from_state(json.loads(...))``;
``state_json()`` gives the same as JSON text without copying the state first.
"""
from __future__ import annotations

import copy

from rules import machines, packs, rounds
from rules.dealer import HANDLERS, round_event
from rules.finding import Finding, GamingDay, default_gaming_day, make_finding
from rules.procedures import checks_for, procedure_for
from rules.reference import DEFAULT_REFERENCE, TableReference
from schemas.events import Event

STATE_VERSION = 1
_KEEP_DONE = 64  # finished pack/round ids remembered, to ignore late stragglers


def _new_state(table_id: str) -> dict:
    return {
        "v": STATE_VERSION, "table_id": table_id, "game": None, "decks": None, "dealer_id": None,
        "dealer_pos": 0, "seated": [], "seat_counter": 0, "packs_since_open": 0,
        "prep_pack": None, "play_pack": None, "shoe_pack": None, "unnamed_prep": [],
        "packs": {}, "rounds": {}, "ending": [], "done_packs": [], "done_rounds": [],
        "fired": [], "out_rounds": [], "out_packs": [], "out_seqs": [], "g": {}, "early": [],
    }


class TableReplay:
    """Replay of one table.  ``feed(event) -> findings``; ``close() -> findings``."""

    def __init__(self, table_id: str, reference: TableReference | None = None,
                 gaming_day: GamingDay | None = None) -> None:
        self.table_id = table_id
        self.ref = reference or DEFAULT_REFERENCE
        self.gaming_day = gaming_day or default_gaming_day
        self.st = _new_state(table_id)
        self.proc = procedure_for(None, self.ref)
        self.checks = checks_for(self.ref)  # table checks beside the game's plug-in (rules.procedures.CHECKS)
        self._out: list[Finding] = []
        self._caches()

    def _is_shoeless(self) -> bool:
        """The table deals without a card-reading shoe (see "Tables without a shoe"); while
        the game is unknown, only a table whose reference says so.  Kept in ``shoeless``."""
        if self.st["game"] is None and self.ref.shoe is None:
            return False
        return not self.ref.has_shoe(self.proc.dealt_from_shoe)

    def _no_shoe_passes(self) -> None:
        """On a table without a shoe, mark the shoe side of every open pack passed."""
        if self.shoeless:
            for pid in list(self.st["packs"]):
                self._passes(pid, "shoe_done")

    def _caches(self) -> None:
        """Bookkeeping that only saves work (derived from ``st``, never part of the state).

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
        self._fclean = None
        passed = [(pid, p) for pid, p in self.st["packs"].items() if p["shoe_done"] and p["term_done"]]
        self._ready = {pid for pid, p in passed if p["composition"] == "done"}
        self._held = {pid for pid, p in passed if p["composition"] != "done"}

    # --- public API ----------------------------------------------------------
    @property
    def game(self) -> str | None:
        return self.st["game"]

    def feed(self, ev: Event) -> list[Finding]:
        """Replay one event; returns the findings it completes."""
        if ev.table_id != self.table_id:
            raise ValueError(f"event {ev.event_id} is for table {ev.table_id}, not {self.table_id}")
        st = self.st
        source = ev.source
        if source == "dealer":  # the terminal's stream: rules.dealer
            st["dealer_pos"] += 1
            st["dealer_id"] = ev.dealer_id
            HANDLERS.get(ev.type, round_event)(self, ev)
        elif st["game"] is None:
            machines.hold(self, ev)  # held until the game (its plug-in) is known
        elif source == "shoe":
            machines.shoe(self, ev)
        elif source == "shuffler":
            machines.shuffler(self, ev)
        for check in self.checks:
            check.on_event(self, ev)
        ending = st["ending"]
        if self._ready or ending and self._fclean != (self._fver, len(ending)):
            self._flush(False)  # else it would find nothing to do
        out = self._out
        self._out = []
        return out

    def close(self) -> list[Finding]:
        """End of input: decide everything pending; every open round and pack is handed out."""
        st = self.st
        st["unnamed_prep"] = []
        machines.release_early(self)
        for pack in list(st["packs"].values()):
            for flag, al_flag in (("shoe_done", "s_done"), ("term_done", "t_done")):
                pack[flag] = pack["al"][al_flag] = True
            self._ready.add(pack["pack_id"])
            self._held.discard(pack["pack_id"])
            self._fver += 1
            packs.align(self, pack)
            packs.settle(self, pack, closing=True)
        self.proc.on_close(self)
        for check in self.checks:
            check.on_close(self)
        for rid in list(st["rounds"]):
            if rid not in st["ending"]:
                st["ending"].append(rid)
        self._flush(True)
        out, self._out = self._out, []
        return out

    def drain_rounds(self) -> list[dict]:
        """Completed rows of the ``rounds`` table (schemas.arrow.ROUNDS), removed once returned."""
        out = [rounds.row(self, r) for r in self.st["out_rounds"]]
        self.st["out_rounds"] = []
        return out

    def drain_packs(self) -> list[dict]:
        """Completed rows of the ``packs`` table (schemas.arrow.PACKS), removed once returned."""
        out = [packs.row(self, p) for p in self.st["out_packs"]]
        self.st["out_packs"] = []
        return out

    def drain_pack_sequences(self) -> list[dict]:
        """Per completed pack: table_id, pack_id, game, first_ts, source and cards
        ``[index, card, event_id, ts]`` — the input of :func:`rules.repeated_runs.repeated_runs`."""
        out, self.st["out_seqs"] = self.st["out_seqs"], []
        return out

    def state(self) -> dict:
        """The replay state as plain, JSON-serialisable data (a copy)."""
        return copy.deepcopy(self.st)

    def state_json(self) -> str:
        """The replay state as JSON text (what ``json.dumps(state())`` gives, compact), without
        the deep copy of :meth:`state`: for checkpoints.  ``from_state(json.loads(text))``
        restores it.  Uses orjson when installed (same data, faster), else :mod:`json`."""
        try:
            import orjson
        except ImportError:  # rules/ needs only the standard library
            import json
            return json.dumps(self.st, separators=(",", ":"), ensure_ascii=False)
        return orjson.dumps(self.st).decode("utf-8")

    @classmethod
    def from_state(cls, state: dict, reference: TableReference | None = None,
                   gaming_day: GamingDay | None = None) -> "TableReplay":
        if state.get("v") != STATE_VERSION:
            raise ValueError(f"replay state version {state.get('v')!r}, expected {STATE_VERSION}")
        obj = cls(state["table_id"], reference, gaming_day)
        obj.st = copy.deepcopy(state)
        obj.proc = procedure_for(obj.st["game"], obj.ref)
        obj._caches()
        obj._no_shoe_passes()  # a state saved before the table was known to be shoeless
        return obj

    # --- the plug-in API (ctx) ----------------------------------------------
    def occupied(self) -> list[int]:
        return sorted(s for s, _order in self.st["seated"])

    def emit(self, rule_id: str, *, key, evidence, expected: str, actual: str, rnd: dict | None = None,
             pack: dict | None = None, round_id: str | None = None, seat: int | None = None,
             spot: str | None = None, device_id: str | None = None, dealer_id: str | None = None):
        """Raise a finding (at most once per rule + pack + round + key); returns it or None."""
        st = self.st
        if rnd is None and round_id is not None:
            rnd = st["rounds"].get(round_id)
        if rnd is not None:
            round_id = rnd["round_id"]
        pack_id = pack["pack_id"] if pack is not None else (rnd["pack_id"] if rnd is not None else None)
        holder = rnd if rnd is not None else pack if pack is not None else st
        fired_key = [rule_id, pack_id, round_id] + [None if k is None else str(k) for k in key]
        if fired_key in holder["fired"]:
            return None
        holder["fired"].append(fired_key)
        if dealer_id is None and rnd is not None and not any(e[2] for e in evidence):
            dealer_id = rnd["dealer_id"]
        f = make_finding(rule_id, table_id=self.table_id, game=self.game, key=fired_key[1:],
                         evidence=evidence, expected=expected, actual=actual, gaming_day=self.gaming_day,
                         pack_id=pack_id, round_id=round_id, seat=seat, spot=spot,
                         device_id=device_id, dealer_id=dealer_id)
        if rnd is not None:
            rnd["findings"] += 1
        elif pack is not None:
            pack["findings"] += 1
        self._out.append(f)
        return f

    def undecided(self, rnd: dict, rule_id: str) -> None:
        if rule_id not in rnd["undecided"]:
            rnd["undecided"].append(rule_id)

    def check_misdeal(self, rnd: dict) -> None:
        rounds.check_misdeal(self, rnd)

    def pack(self, pack_id: str | None) -> dict | None:
        return self.st["packs"].get(pack_id)

    def round(self, round_id: str | None) -> dict | None:
        return self.st["rounds"].get(round_id)

    # --- packs and rounds ---------------------------------------------------
    def _pack(self, pack_id: str, ev: Event) -> dict:
        st = self.st
        pack = st["packs"].get(pack_id)
        if pack is None:
            pack = packs.new_pack(pack_id, self.proc.new_pack_state())
            if self.shoeless:  # no shoe stream: its side of the pack is passed from the start
                pack["shoe_done"] = pack["al"]["s_done"] = True
            if pack_id in st["done_packs"]:
                return pack  # a straggler for a finished pack: detached, not kept
            st["packs"][pack_id] = pack
        if pack["min_ts"] is None or ev.ts < pack["min_ts"]:  # packs.touch
            pack["min_ts"] = ev.ts
        return pack

    def _round(self, round_id: str, ev: Event) -> dict:
        st = self.st
        rnd = st["rounds"].get(round_id)
        if rnd is None:
            rnd = rounds.new_round(round_id, self.proc.new_round_state())
            rnd["dealer_id"] = ev.dealer_id
            if round_id not in st["done_rounds"]:
                st["rounds"][round_id] = rnd
        if rnd["first_ts"] is None or ev.ts < rnd["first_ts"]:  # rounds.touch
            rnd["first_ts"] = ev.ts
        return rnd

    def composition_decided(self, pack: dict) -> None:
        """PACK_COMPOSITION is decided for ``pack`` (``rules.packs``): it may become final."""
        pack["composition"] = "done"
        if pack["pack_id"] in self._held:
            self._held.discard(pack["pack_id"])
            self._ready.add(pack["pack_id"])

    def _settle(self, pack: dict) -> None:
        packs.settle(self, pack)
        self.proc.settle_pack(self, pack)

    def _align(self, pack: dict) -> None:
        if packs.align(self, pack):
            self._fver += 1
            self.proc.settle_pack(self, pack)

    def _passes(self, pack_id: str | None, side: str) -> None:
        pack = self.st["packs"].get(pack_id)
        if pack is None or pack[side]:
            return
        pack[side] = True
        pack["al"]["s_done" if side == "shoe_done" else "t_done"] = True
        self._fver += 1
        if pack["shoe_done"] and pack["term_done"]:
            (self._ready if pack["composition"] == "done" else self._held).add(pack_id)
        self._align(pack)
        self._settle(pack)
        if pack["shoe_done"] and pack["term_done"]:
            self.proc.on_pack_done(self, pack)
            for check in self.checks:
                check.on_pack_done(self, pack)
            self._settle(pack)

    def _flush(self, closing: bool) -> None:
        st = self.st
        ending = st["ending"]
        if ending and (closing or self._fclean != (self._fver, len(ending))):
            live = st["rounds"]
            waiting = True  # every round left waits on the card matching
            for rid in list(ending):
                rnd = live.get(rid)
                if rnd is None:
                    ending.remove(rid)
                    continue
                status = True if closing else rounds.final_status(self, rnd)
                if status is True:
                    ending.remove(rid)
                    st["out_rounds"].append(live.pop(rid))
                    st["done_rounds"] = (st["done_rounds"] + [rid])[-_KEEP_DONE:]
                elif status is not rounds.ALIGNING:
                    waiting = False
            self._fclean = (self._fver, len(ending)) if waiting else None
        ready = self._ready
        if not (ready or closing):
            return  # a pack is final only once both card streams passed it
        if closing or len(ready) > 1:
            candidates = [pid for pid in st["packs"] if closing or pid in ready]   # in the order packs began
        else:
            candidates = list(ready)
        for pid in candidates:
            pack = st["packs"].get(pid)
            if pack is None:    # left the table's packs another way
                ready.discard(pid)
                continue
            if packs.final(self, pack, closing):
                st["out_packs"].append(st["packs"].pop(pid))
                ready.discard(pid)
                self._fver += 1
                st["out_seqs"].append(packs.sequence(self, pack))
                st["done_packs"] = (st["done_packs"] + [pid])[-_KEEP_DONE:]
                for key in ("prep_pack", "play_pack", "shoe_pack"):
                    if st[key] == pid:
                        st[key] = None

    # --- streams (terminal: rules.dealer, from feed; shoe and shuffler: rules.machines)
    def _set_game(self, game: str | None) -> None:
        if game and game != self.st["game"]:
            was_unknown = self.st["game"] is None
            self.st["game"] = game
            self.proc = procedure_for(game, self.ref)
            self.shoeless = self._is_shoeless()
            self.st["g"] = self.proc.new_table_state()
            for pack in self.st["packs"].values():
                if not pack["g"]:
                    pack["g"] = self.proc.new_pack_state()
            for rnd in self.st["rounds"].values():
                if not rnd["g"]:
                    rnd["g"] = self.proc.new_round_state()
            if was_unknown:  # packs named before the game was known
                self._no_shoe_passes()
            machines.release_early(self)
