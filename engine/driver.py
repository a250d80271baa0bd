"""The one driver around the engine: the only code that makes and feeds a ``pitwatch.rules.table.TableReplay``.

The nightly batch (:mod:`pitwatch.pipelines.replay`), the live service
(:mod:`pitwatch.live.engine`, :mod:`pitwatch.live.order`) and the Beam
streaming form (:mod:`pitwatch.live.beam`) all go through this module, so
the policy around the engine is written once:

**Identity** (contract version 2): an event is identified by
(``device_id``, ``event_id``) — :func:`event_key`.  Copies of one pair that
are equal as parsed JSON are one delivery (the later copies are dropped and
counted as duplicates); copies that differ are a conflict: a conflicting copy
is rejected with the reason :func:`conflict_reason` and counted.  The same
``event_id`` from two devices is two events.  The batch applies the rule on
columns (:func:`pitwatch.pipelines.ingest.deduplicate`, keyed by :func:`event_key`'s
columns); live and Beam streaming apply it line by line (:class:`DeviceGate`).

**Per-device order**: each device's events reach its table's replay in
``seq`` order; devices interleave in any way (the engine gives the same rows
for any interleaving that keeps each device's order, see :mod:`pitwatch.rules.table`).
The batch sorts (:func:`feed_order`); live and Beam release each device's
lines in ``seq`` order as they arrive (:mod:`pitwatch.live.order`,
``watch_beam.OrderDevice``).

**SEQ_GAP** (:func:`new_seq_tracker`): one tracker per device across its
tables, fed every arrival (accepted events and readable rejected lines).
Its ``game`` is None everywhere (:data:`SEQ_GAP_GAME`): a device's gap is no
game's, a shuffler may serve tables of several games, and the table's game
when the lost lines were written is not known live (the batch used the
table's final game, live the game known so far, Beam None: three answers).

**Closing** (:meth:`TableDriver.end_of_input`): a plain run closes every
table at the end of its input; a nightly run only a table whose terminal's
last event is ``table_closed`` (or that sent nothing), carrying its state to
the next night.  Live closes at stop with ``--finalize-at-stop`` (the
batch's end of input), or a table silent for ``--finalize-after-idle``
seconds (:meth:`TableDriver.close`, the idle close).

**Rows**: :meth:`TableDriver.take_rows` hands out the table's final
``rounds`` and ``packs`` rows and packs' card sequences, the same rows
whichever form drives it.

**Where live must differ** (it cannot wait for the end of its input), named
here once and listed in ``docs/watch.md``: :data:`LIVE_DIFFERENCES`.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from pitwatch.inputs.devices import DeviceRegistry
    from pitwatch.rules.finding import Finding, GamingDay
    from pitwatch.rules.reference import TableReference
    from pitwatch.rules.sequence import SeqTracker
    from pitwatch.schemas.events import Event

DUPLICATE, CONFLICT, STALE, LATE = "duplicate", "conflict", "stale", "late"

RECENT_WINDOW = 128      # live: per device, copies of the last N seqs are checked for duplicates/conflicts
MAX_HOLES = 64           # live: per device, the holes in its seq whose late lines are still replayed
SEQ_GAP_GAME = None      # the ``game`` of every SEQ_GAP finding (see the module doc)

LIVE_DIFFERENCES = (
    ("conflict, first copy", "the batch rejects every copy of a conflicting (device_id, event_id); live "
     "rejects the copies after the first, since the first was replayed when it arrived and cannot be "
     "taken back (the night's run rejects them all)"),
    ("stale line", f"live checks a device's copies only over its last {RECENT_WINDOW} seqs; an older line "
     "that is in no hole of its seq (its seq was released already) is dropped as stale and counted (the "
     "batch sees every copy at once and takes it)"),
    ("gap wait", "a device's line after a hole in its seq is held at most --gap-wait seconds (default 5) for "
     "the missing seqs; then the hole is a SEQ_GAP (of the seqs still missing then) and the held lines go "
     "on; the batch sees the whole night and reports only the seqs that never came"),
    ("late line", "a line of a hole arriving after the gap wait (say the genuine lines after a forged seq "
     "jump) is replayed when it arrives, out of its device's order, and counted as late, however far "
     f"below the last seq; its own holes are not reported live; the batch sorts it into place (at most "
     f"{MAX_HOLES} holes per device are kept: a line of an older one is stale; Beam replays late lines in "
     "the order the runner hands them)"),
    ("end-of-input decisions", "what the engine decides only at close() (packs and rounds of tables without "
     "a shoe) comes live only with --finalize-at-stop or --finalize-after-idle; no shuffle recorded "
     "(UNSHUFFLED_PACK) comes live once the gap wait after the pack's first card ran out (pitwatch.live.early)"),
    ("early no shuffle", "a shuffle record arriving more than the gap wait after the pack's first card no "
     "longer withdraws the UNSHUFFLED_PACK alert already sent live (the batch: it does)"),
    ("late report of a table-shuffled pack", "a pack shuffled only at the table (by hand, riffle, a rebuilt stud "
     "stack) is decided once both card streams passed it (pitwatch.rules.packs); a shuffler report naming it that arrives "
     "later is a straggler (the batch merges by ts: a report stamped before the play is in before the pass)"),
    ("cross-pack repeat", "the 10-card repeat of UNSHUFFLED_SEQUENCE across packs is raised live at the card "
     "completing it against the last 512 packs seen since the start (pitwatch.live.repeats); older packs, packs seen "
     "before a restart, and a pack that had a within-pack run are left to the batch"),
    ("alert texts", "a live alert's expected/actual mask (??) the shoe cards the terminal has not dealt yet "
     "(pitwatch.live.redact); every other column is the batch's"),
)


def event_key(ev: Event) -> tuple[str, str]:
    """What identifies an event: (device_id, event_id)."""
    return ev.device_id, ev.event_id


def line_hash(event_id: str, digest: str) -> str:
    """A short hash of an event's id and content digest (equal copies: equal hashes)."""
    return hashlib.blake2b(f"{event_id}\x00{digest}".encode(), digest_size=8).hexdigest()


def conflict_reason(device_id: str | None, event_id: str, copies: int = 2, every_copy: bool = True) -> str:
    """The reject reason of a conflicting copy (batch: every copy; live: the copies after the first)."""
    which = ("every copy is rejected" if every_copy else
             "this copy is rejected (the first copy was already replayed live; the nightly run rejects every copy)")
    return (f"conflicting duplicate: event_id {event_id!r} of device {device_id!r} arrived in "
            f"{'copies' if copies > 1 else 'another copy'} with different content; {which}")


#: a copy ``DeviceGate.recent`` remembers: ``[hash (str), seq (int)]``, a list of two types (plain data: it lives
#: in a checkpoint and in Beam state as JSON), which a list type cannot spell element by element
_Copy = list[Any]


class DeviceGate:
    """Duplicates, conflicts and holes of one device's lines, line by line, in bounded memory.

    ``recent`` is plain data (``{event_id: [hash, seq]}``: it lives in a
    checkpoint and in Beam state); it keeps the copies whose ``seq`` is
    within ``window`` of the device's last released ``seq`` and is pruned
    whenever it holds twice that, so a device costs at most ``2 * window``
    entries whatever its ``seq`` jumps.

    **The gap rule** (live and Beam streaming alike): a line after a hole in
    its device's ``seq`` is held for at most the gap wait (``--gap-wait``);
    when the wait runs out the hole is taken as lost (``SEQ_GAP``) and the
    held lines go on (:meth:`advance` records the hole).  ``holes`` (plain
    data, ``[[first, last], …]``, at most :data:`MAX_HOLES`, the oldest
    forgotten first) are the seqs never released below the last released
    one: a line of a hole that arrives after the wait is *late*: it is
    replayed when it arrives, out of its device's order (:meth:`fill`), and
    counted as late, however far below the last seq it is — so a jump of
    +1000 or to ``2**63 - 1`` never mutes the device's genuine lines that
    follow.  A line below the window that is in no hole is *stale* (its seq
    was released already and its copy is no longer remembered: a
    re-delivery) and dropped, counted.
    """

    __slots__ = ("recent", "window", "holes")

    def __init__(self, recent: dict[str, _Copy] | None = None, window: int = RECENT_WINDOW,
                 holes: list[list[int]] | None = None) -> None:
        self.recent: dict[str, _Copy] = {} if recent is None else recent
        self.window = window
        self.holes: list[list[int]] = [] if holes is None else holes

    def admit(self, event_id: str | None, seq: int, h: str, last: int | None) -> str | None:
        """None: a new event (remembered); else why the line goes no further:
        :data:`DUPLICATE`, :data:`CONFLICT` (same pair, other content) or :data:`STALE`."""
        rec = self.recent.get(event_id) if event_id is not None else None
        if rec is not None:
            return DUPLICATE if rec[0] == h else CONFLICT
        if last is not None and seq <= last - self.window and not self.in_hole(seq):
            return STALE
        if event_id is not None:
            self.recent[event_id] = [h, seq]
            if last is not None and len(self.recent) > 2 * self.window:
                self.forget_below(last - self.window)
        return None

    def forget_below(self, floor: int) -> None:
        for eid in [e for e, (_h, s) in self.recent.items() if s <= floor]:
            del self.recent[eid]

    def in_hole(self, seq: int) -> bool:
        return any(lo <= seq <= hi for lo, hi in self.holes)

    def advance(self, last: int | None, seq: int) -> None:
        """``seq`` is released after ``last`` (the wait ran out): the seqs between are a hole."""
        if last is not None and seq > last + 1:
            self.holes.append([last + 1, seq - 1])
            if len(self.holes) > MAX_HOLES:
                self.holes.sort()
                del self.holes[0]

    def fill(self, seq: int) -> bool:
        """A late line of a hole was released: its seq is no longer missing.  Whether it was in one."""
        for i, (lo, hi) in enumerate(self.holes):
            if lo <= seq <= hi:
                parts = [p for p in ([lo, seq - 1], [seq + 1, hi]) if p[0] <= p[1]]
                self.holes[i:i + 1] = parts
                return True
        return False


def new_seq_tracker(gaming_day: GamingDay, state: dict[str, Any] | None = None) -> SeqTracker:
    """The SEQ_GAP tracker (one per device, over all its tables)."""
    from pitwatch.rules.sequence import SeqTracker

    return SeqTracker(gaming_day) if state is None else SeqTracker.from_state(state, gaming_day)


def feed_order(events: Iterable[Event]) -> Iterator[Event]:
    """The batch's feed order: each device's events by seq, devices merged by ts (ties: device, seq)."""
    import heapq
    import itertools

    by_device = sorted(events, key=lambda e: (e.device_id, e.seq, e.event_id))
    streams = [list(g) for _, g in itertools.groupby(by_device, key=lambda e: e.device_id)]
    return heapq.merge(*streams, key=lambda e: (e.ts, e.device_id, e.seq))


@dataclasses.dataclass
class Rows:
    rounds: list[dict[str, Any]]
    packs: list[dict[str, Any]]
    sequences: list[dict[str, Any]]

    def __bool__(self) -> bool:
        return bool(self.rounds or self.packs or self.sequences)


def load_reference(table_id: str, devices: DeviceRegistry | None = None) -> TableReference:
    """The table's reference (seeds), with its rows of the device registry (``pitwatch.inputs.devices``) if any."""
    import dataclasses

    from pitwatch import seeds
    reference = seeds.load_reference(table_id)
    if devices is not None:
        reference = dataclasses.replace(reference, devices=devices.for_table(table_id))
    return reference


class TableDriver:
    """One table's replay: made, restored, fed, closed and its rows handed out only here."""

    __slots__ = ("table_id", "replay")

    def __init__(self, table_id: str, gaming_day: GamingDay | None, state: dict[str, Any] | None = None,
                 devices: DeviceRegistry | None = None) -> None:
        from pitwatch.rules.table import TableReplay

        self.table_id = table_id
        reference = load_reference(table_id, devices)
        self.replay = (TableReplay(table_id, reference=reference, gaming_day=gaming_day) if state is None
                       else TableReplay.from_state(state, reference=reference, gaming_day=gaming_day))

    @property
    def game(self) -> str | None:
        return self.replay.game

    def feed(self, ev: Event) -> list[Finding]:
        """One accepted event (its device's events in seq order): the findings it completes."""
        return self.replay.feed(ev)

    def feed_all(self, events: Iterable[Event]) -> list[Finding]:
        """Events in feed order (:func:`feed_order`): every finding they complete."""
        from pitwatch.engine.gc_pause import no_cyclic_gc

        findings: list[Finding] = []
        feed, found = self.replay.feed, findings.extend
        with no_cyclic_gc():
            for ev in events:
                found(feed(ev))
        return findings

    def take_rejects(self) -> list[tuple[Event, str]]:
        """``(event, reason)`` of each event the engine refused since the last call (a
        ``round_started`` naming a round still open, events.md ``round_id``): the caller stores
        its line as rejected with the reason and counts it so (not accepted); the replay went on
        as if it never came.  The batch, live and Beam streaming all take them here."""
        return self.replay.drain_rejects()

    def close(self) -> list[Finding]:
        """Decide everything kept for the end of input (also the live idle close)."""
        return self.replay.close()

    def end_of_input(self, nightly: bool = False, last_dealer_type: str | None = None) -> list[Finding]:
        """The batch's close policy: a plain run closes; a nightly run closes only a table whose
        terminal's last event was ``table_closed`` (or that sent none): see the module doc."""
        if not nightly or last_dealer_type in (None, "table_closed"):
            return self.close()
        return []

    def take_rows(self) -> Rows:
        """The rows final since the last call (removed from the replay's state)."""
        rp, table = self.replay, self.replay.table
        return Rows(rp.drain_rounds() if table.out_rounds else [],
                    rp.drain_packs() if table.out_packs else [],
                    rp.drain_pack_sequences() if table.out_sequences else [])

    def state(self) -> dict[str, Any]:
        return self.replay.state()

    def state_json(self) -> bytes:
        """The state as JSON bytes (``TableReplay.state_json()``: no deep copy first)."""
        return self.replay.state_json()
