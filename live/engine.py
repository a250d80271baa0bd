"""The live engine: one :class:`pitwatch.engine.driver.TableDriver` per table and one SEQ_GAP tracker.

The driver is the nightly batch's (:func:`pitwatch.pipelines.replay.replay_table`,
:class:`pitwatch.pipelines.replay.ReplayDeviceSeq`): the same references, gaming-day
function, ``feed(event)`` for every accepted event in per-device ``seq``
order, the tracker fed every event and every rejected line whose device and
seq could be read.  So a finding raised here is the row the batch writes
(where live must differ, :data:`pitwatch.engine.driver.LIVE_DIFFERENCES`).

Rows (``rounds``, ``packs``, pack card sequences) are taken from the driver
as they become final and handed to ``on_rows(table_id, rows)`` when given
(else dropped: the nightly batch writes those tables; draining keeps a
long-running replay's state bounded).

Finalizing: two decisions of the engine come only at ``close()`` ("no shuffle
recorded" ``UNSHUFFLED_PACK``, and on tables without a shoe some pack and
round decisions).  :meth:`LiveEngine.finalize` calls ``close()`` on a table:
at the end of input (``--finalize-at-stop``), or for a table silent for
``--finalize-after-idle`` seconds (a closed table).  A table that speaks
again after that goes on with the same replay (packs and rounds already
decided stay decided); a shuffler report arriving after its table was
finalized can no longer withdraw a "no shuffle" alert — the reason the
option is off by default (see docs/watch.md).

Live-only additions (issue 30), read from the engine's state after each
event, never changing its decisions: :mod:`pitwatch.live.provisional` (the
provisional ``CARD_DISAGREEMENT`` the moment the streams disagree, its
``CARD_DISAGREEMENT_CLEARED``, and ``provisional_of``: the final finding's
link to it; :attr:`raised` / :attr:`cleared` hold the last feed's),
:mod:`pitwatch.live.early` (``UNSHUFFLED_PACK`` once the gap wait after the pack's
first card ran out, not at ``close()``; :meth:`due` on the loop's idle turn)
and :mod:`pitwatch.live.repeats` (the cross-pack ``UNSHUFFLED_SEQUENCE`` at the card
that completes the repeat).

State: ``state_fragments()`` serialises only the tables fed since the last
call (bytes cached per table), so a checkpoint's snapshot of a floor of
hundreds of tables costs what changed, not what exists.
"""
from __future__ import annotations

import collections
import time

from pitwatch.engine.driver import SEQ_GAP_GAME, TableDriver, new_seq_tracker
from pitwatch.live.early import EarlyUnshuffled
from pitwatch.live.provisional import SKEW, CardWatch
from pitwatch.live.redact import DealtGuard
from pitwatch.live.repeats import LiveRepeats
from pitwatch.rules.finding import gaming_day_from_config


def _as_replayed(replay, ev):
    """``ev`` with its ``pack_id`` and ``round_id`` as the use keys the engine gave them (its
    stream's latest use of each id, :meth:`pitwatch.rules.table.TableReplay.current_key`): the first use of
    an id is the id itself, so nothing changes for a feed that never uses an id again."""
    stream = "term" if ev.source == "dealer" else ev.source
    fields = {}
    if ev.pack_id is not None:
        key = replay.current_key(stream, ev.pack_id)
        if key != ev.pack_id:
            fields["pack_id"] = key
    if ev.round_id is not None:
        key = replay.current_key("round", ev.round_id)
        if key != ev.round_id:
            fields["round_id"] = key
    return ev._replace(**fields) if fields else ev


class LiveEngine:
    def __init__(self, config, finalize_after: float | None = None, guard: bool = True, devices=None,
                 early_wait: float = 5.0, skew: float = SKEW) -> None:
        self.gaming_day = gaming_day_from_config(config)
        self.devices = devices                   # the device registry (UNKNOWN_DEVICE, SHOE_SILENT) or None
        self.finalize_after = finalize_after
        self.tables: dict[str, TableDriver] = {}
        self.seq = new_seq_tracker(self.gaming_day)
        self.on_rows = None                      # on_rows(table_id, pitwatch.engine.driver.Rows), or rows dropped
        self.guard = DealtGuard() if guard else None
        self.cards = CardWatch(self.guard, self.gaming_day, skew)   # CARD_DISAGREEMENT (pitwatch.live.provisional)
        self.early = EarlyUnshuffled(self.gaming_day, early_wait)  # UNSHUFFLED_PACK at the first card
        self.repeats = LiveRepeats(self.gaming_day)   # the cross-pack UNSHUFFLED_SEQUENCE (pitwatch.live.repeats)
        self.raised: list[dict] = []      # provisional alerts raised by the last feed/finalize (before its findings)
        self.cleared: list[dict] = []     # CARD_DISAGREEMENT_CLEARED alerts of the last feed/finalize
        self.provisional_of: dict[str, str] = {}   # finding_id -> the provisional alert's id (taken by the service)
        self.refused: list = []           # (event, reason) the last feed's replay refused (TableDriver.take_rejects)
        # table -> monotonic time of its last event, finalized tables out, the longest silent first
        self.last_seen: collections.OrderedDict[str, float] = collections.OrderedDict()
        self.finalized: set[str] = set()         # finalized and silent since
        self._cache: dict[str, bytes] = {}
        self._dirty: set[str] = set()
        self.events = 0

    def _replay(self, table_id: str) -> TableDriver:
        rp = self.tables.get(table_id)
        if rp is None:
            rp = self.tables[table_id] = TableDriver(table_id, self.gaming_day, devices=self.devices)
        return rp

    def feed(self, ev, now: float | None = None) -> list:
        """One accepted event (its device's events in seq order): the findings it completes."""
        tid = ev.table_id
        rp = self._replay(tid)
        self.early.observe(ev)
        snap = self.cards.before(tid, rp.replay)
        out = self._early(rp.feed(ev))
        self.refused = rp.take_rejects()
        if self.guard is not None and not self.refused:
            # after the replay, with the pack and round as the use the engine gave them (ids used again)
            self.guard.observe(_as_replayed(rp.replay, ev))
        self._provisional(rp, ev, out, snap)
        out += self.early.after(rp, ev, now)
        out += self.repeats.after(rp, ev)
        out += self.seq.feed_event(ev, SEQ_GAP_GAME)
        self._drain(rp)
        self._dirty.add(tid)
        self.last_seen[tid] = time.monotonic() if now is None else now
        self.last_seen.move_to_end(tid)
        self.finalized.discard(tid)
        self.events += 1
        return out

    def feed_reject(self, reject) -> list:
        """A rejected line: only its device's seq matters (it arrived: no SEQ_GAP)."""
        if reject.device_id is None or reject.seq is None:
            return []
        return self.seq.feed(reject.device_id, reject.seq, reject.table_id, reject.event_id, None, SEQ_GAP_GAME)

    def _drain(self, rp: TableDriver) -> None:
        rows = rp.take_rows()
        if rows and self.on_rows is not None:
            self.on_rows(rp.table_id, rows)

    def finalize(self, table_ids=None) -> list:
        """``close()`` the given tables (all by default): the decisions kept for the end of input."""
        out = []
        self.raised, self.cleared = [], []
        for tid in sorted(self.tables if table_ids is None else table_ids):
            rp = self.tables[tid]
            snap = self.cards.before(tid, rp.replay)
            got = self._early(rp.close())
            raised, cleared = self.raised, self.cleared
            self._provisional(rp, None, got, snap)
            self.raised, self.cleared = raised + self.raised, cleared + self.cleared
            out += got
            self._drain(rp)
            self._dirty.add(tid)
            self.finalized.add(tid)
            self.last_seen.pop(tid, None)
        return out

    def _early(self, findings: list) -> list:
        """The engine's findings less those raised early (pitwatch.live.early): not sent twice."""
        raised = self.early.raised
        return [f for f in findings if f.finding_id not in raised] if raised else findings

    def _provisional(self, rp: TableDriver, ev, findings: list, snap: dict) -> None:
        self.raised, self.cleared, links = self.cards.after(rp.table_id, rp.game, rp.replay, ev, findings, snap)
        if links:
            self.provisional_of.update(links)

    def due(self, now: float | None = None) -> list:
        """Early UNSHUFFLED_PACK findings whose wait ran out on the watcher's clock (the loop's idle turn)."""
        out = []
        for tid in list(self.early.pending):
            rp = self.tables.get(tid)
            if rp is not None:
                out += self.early.due(rp, now)
        return out

    def idle_tables(self, now: float | None = None) -> list[str]:
        """The tables not finalized and silent for ``finalize_after`` seconds: the longest silent
        first, up to the first that is not (a turn costs what is idle, not how many tables exist)."""
        if not self.finalize_after:
            return []
        now = time.monotonic() if now is None else now
        out = []
        for t, seen in self.last_seen.items():
            if now - seen < self.finalize_after:
                break
            out.append(t)
        return out

    def alert_view(self, finding):
        return self.guard.apply(finding) if self.guard is not None else finding

    # --- checkpoint ---------------------------------------------------------
    def state_fragments(self) -> dict[str, bytes]:
        """Per table, its replay state as JSON bytes (re-serialised only when it changed)."""
        for tid in self._dirty:
            self._cache[tid] = self.tables[tid].state_json()
        self._dirty.clear()
        return self._cache

    def other_state(self) -> dict:
        return {"seq": self.seq.state(), "finalized": sorted(self.finalized),
                "guard": self.guard.state() if self.guard is not None else {},
                "cards": self.cards.state(), "early": self.early.state()}

    def restore(self, tables: dict, other: dict) -> None:
        for tid, st in tables.items():
            self.tables[tid] = TableDriver(tid, self.gaming_day, st, devices=self.devices)
            self._dirty.add(tid)
        self.seq = new_seq_tracker(self.gaming_day, other.get("seq", {"last": {}}))
        self.finalized = set(other.get("finalized", []))
        if self.guard is not None:
            self.guard.restore(other.get("guard", {}))
        self.cards.restore(other.get("cards", {}))
        self.early.restore(other.get("early", {}))
        now = time.monotonic()
        self.last_seen = collections.OrderedDict((t, now) for t in self.tables if t not in self.finalized)
