"""A consistent checkpoint snapshot taken a little at a time: serialised copy-before-write.

A checkpoint must hold every table's and every device's state *as of one instant* (the input
positions it records): a restart reads on from those positions.  Serialising 400 busy tables and
1,300 devices at that instant took 170-300 ms on the service's loop (bench/watch.py, 5,000 lines/s),
and every line arriving meanwhile waited for it — the largest share of the alert latency's p99.

So the snapshot is taken in steps.  At the instant (:meth:`Fragments.begin`) nothing is copied:
the keys changed since the last snapshot become *pending*.  Then, before anything changes a
pending key, its owner calls :meth:`Fragments.touch`, which serialises it first (its bytes are
still those of the instant); between lines the loop serialises a few more
(:meth:`Fragments.advance`, for a bounded time per turn) until none is pending.  A key unchanged
since the last snapshot keeps its cached bytes, which are its state at the instant too.  Keys made
after the instant are not in this snapshot (they did not exist then); keys gone at the instant
leave it.  The bytes are what a snapshot taken at once would give (tested:
``tests/watch/test_snapshot.py``).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable


class Fragments:
    """Per key, its JSON bytes as of the last snapshot's instant."""

    def __init__(self, serialise: Callable[[str], bytes]) -> None:
        self._serialise = serialise
        self.cache: dict[str, bytes] = {}   # key -> bytes at the instant of the snapshot (being) taken
        self.dirty: set[str] = set()        # changed since that instant
        self.pending: set[str] = set()      # changed before it, not serialised yet

    def touch(self, key: str) -> None:
        """``key`` is about to change: if the snapshot still needs its present state, take it now."""
        if key in self.pending:
            self.cache[key] = self._serialise(key)
            self.pending.discard(key)
        self.dirty.add(key)

    def begin(self, alive: Iterable[str]) -> None:
        """The snapshot's instant: ``alive`` are the keys that exist now."""
        if self.pending:
            self.finish()                   # the previous snapshot is not done: finish it first
        alive = set(alive)
        for key in [k for k in self.cache if k not in alive]:
            del self.cache[key]
        self.pending = (self.dirty & alive) | (alive - self.cache.keys())
        self.dirty = set()

    def advance(self, deadline: float) -> bool:
        """Serialise pending keys until ``time.perf_counter()`` passes ``deadline``; True when none is left."""
        pending = self.pending
        while pending:
            key = pending.pop()
            self.cache[key] = self._serialise(key)
            if time.perf_counter() >= deadline:
                break
        return not pending

    def finish(self) -> dict[str, bytes]:
        """Every pending key serialised now; the snapshot's bytes (a copy of the mapping)."""
        self.advance(float("inf"))
        return dict(self.cache)

    def forget(self, key: str) -> None:
        """``key`` is about to go (a device forgotten): kept in a snapshot being taken, not in later ones."""
        self.touch(key)
        self.dirty.discard(key)
