"""The live engine: one ``rules.table.TableReplay`` per table and one ``rules.sequence.SeqTracker``.

Exactly the objects and the wiring of the nightly batch
(:func:`pipelines.replay.replay_table`, :class:`pipelines.replay.ReplayDeviceSeq`):
``seeds.load_reference(table_id)``, ``gaming_day_from_config(config)``,
``feed(event)`` for every accepted event in per-device ``seq`` order, the
tracker fed every event and every rejected line whose device and seq could
be read.  So a finding raised here has the ``finding_id`` the batch writes.

Rows (``rounds``, ``packs``, pack card sequences) are drained and dropped as
they come: the nightly batch writes those tables; the live path only alerts,
and draining keeps a long-running replay's state bounded.

Finalizing: two decisions of the engine come only at ``close()`` ("no shuffle
recorded" ``UNSHUFFLED_PACK``, and on tables without a shoe some pack and
round decisions).  :meth:`LiveEngine.finalize` calls ``close()`` on a table:
at the end of input (``--finalize-at-stop``), or for a table silent for
``--finalize-after-idle`` seconds (a closed table).  A table that speaks
again after that goes on with the same replay (packs and rounds already
decided stay decided); a shuffler report arriving after its table was
finalized can no longer withdraw a "no shuffle" alert — the reason the
option is off by default (see docs/watch.md).

State: ``state_fragments()`` serialises only the tables fed since the last
call (``TableReplay.state_json()`` where the engine has it, else orjson of
its plain-JSON ``st``; bytes cached per table), so a checkpoint's snapshot of
a floor of hundreds of tables costs what changed, not what exists.
"""
from __future__ import annotations

import time

import orjson

from pipelines.watch.redact import DealtGuard
from rules.finding import gaming_day_from_config
from rules.sequence import SeqTracker
from rules.table import TableReplay


def _reference(table_id: str):
    import seeds

    return seeds.load_reference(table_id)


def _state_json(rp: TableReplay) -> bytes:
    """The replay's state as JSON bytes: ``TableReplay.state_json()`` where the engine has it;
    else ``st`` serialised at once (what ``state()``'s deep copy would give, 5-10x cheaper)."""
    fast = getattr(rp, "state_json", None)
    if fast is None:
        return orjson.dumps(rp.st)
    out = fast()
    return out.encode() if isinstance(out, str) else out


class LiveEngine:
    def __init__(self, config, finalize_after: float | None = None, guard: bool = True) -> None:
        self.gaming_day = gaming_day_from_config(config)
        self.finalize_after = finalize_after
        self.tables: dict[str, TableReplay] = {}
        self.seq = SeqTracker(self.gaming_day)
        self.guard = DealtGuard() if guard else None
        self.last_seen: dict[str, float] = {}   # table -> monotonic time of its last event
        self.finalized: set[str] = set()         # finalized and silent since
        self._cache: dict[str, bytes] = {}
        self._dirty: set[str] = set()
        self.events = 0

    def _replay(self, table_id: str) -> TableReplay:
        rp = self.tables.get(table_id)
        if rp is None:
            rp = self.tables[table_id] = TableReplay(
                table_id, reference=_reference(table_id), gaming_day=self.gaming_day)
        return rp

    def feed(self, ev, now: float | None = None) -> list:
        """One accepted event (its device's events in seq order): the findings it completes."""
        tid = ev.table_id
        rp = self._replay(tid)
        if self.guard is not None:
            self.guard.observe(ev)
        out = rp.feed(ev)
        out += self.seq.feed_event(ev, rp.game)
        self._drain(rp)
        self._dirty.add(tid)
        self.last_seen[tid] = time.monotonic() if now is None else now
        self.finalized.discard(tid)
        self.events += 1
        return out

    def feed_reject(self, reject) -> list:
        """A rejected line: only its device's seq matters (it arrived: no SEQ_GAP)."""
        if reject.device_id is None or reject.seq is None:
            return []
        rp = self.tables.get(reject.table_id) if reject.table_id else None
        return self.seq.feed(reject.device_id, reject.seq, reject.table_id, reject.event_id, None,
                             rp.game if rp is not None else None)

    @staticmethod
    def _drain(rp: TableReplay) -> None:
        if rp.st["out_rounds"]:
            rp.drain_rounds()
        if rp.st["out_packs"]:
            rp.drain_packs()
        if rp.st["out_seqs"]:
            rp.drain_pack_sequences()

    def finalize(self, table_ids=None) -> list:
        """``close()`` the given tables (all by default): the decisions kept for the end of input."""
        out = []
        for tid in sorted(self.tables if table_ids is None else table_ids):
            rp = self.tables[tid]
            out += rp.close()
            self._drain(rp)
            self._dirty.add(tid)
            self.finalized.add(tid)
        return out

    def idle_tables(self, now: float | None = None) -> list[str]:
        if not self.finalize_after:
            return []
        now = time.monotonic() if now is None else now
        return [t for t, seen in self.last_seen.items()
                if t not in self.finalized and now - seen >= self.finalize_after]

    def alert_view(self, finding):
        return self.guard.apply(finding) if self.guard is not None else finding

    # --- checkpoint ---------------------------------------------------------
    def state_fragments(self) -> dict[str, bytes]:
        """Per table, its replay state as JSON bytes (re-serialised only when it changed)."""
        for tid in self._dirty:
            self._cache[tid] = _state_json(self.tables[tid])
        self._dirty.clear()
        return self._cache

    def other_state(self) -> dict:
        return {"seq": self.seq.state(), "finalized": sorted(self.finalized),
                "guard": self.guard.state() if self.guard is not None else {}}

    def restore(self, tables: dict, other: dict) -> None:
        for tid, st in tables.items():
            self.tables[tid] = TableReplay.from_state(st, reference=_reference(tid), gaming_day=self.gaming_day)
            self._dirty.add(tid)
        self.seq = SeqTracker.from_state(other.get("seq", {"last": {}}), self.gaming_day)
        self.finalized = set(other.get("finalized", []))
        if self.guard is not None:
            self.guard.restore(other.get("guard", {}))
        now = time.monotonic()
        self.last_seen = {t: now for t in self.tables}
