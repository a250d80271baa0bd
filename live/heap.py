"""The live state kept out of the cyclic garbage collector's full collections.

A watcher over hundreds of tables holds millions of small long-lived objects (each table's packs,
alignments and rounds; each device's recent copies).  Python's cyclic collector walks all of them
at every full collection, and those come more often as the state grows: measured on 400 tables at
5,000 lines/s, one full collection took 70 ms at the start and 470 ms after 80 s — the loop does
nothing else meanwhile, so every line arriving then waits.  The state is plain data (dicts, lists,
str, numbers) freed by reference counting; it never needs the cyclic collector.

So at each checkpoint's instant the objects alive are moved out of the collector's sight
(:func:`gc.freeze`, the standard library's own tool for this): later collections look only at
what was made since.  An object frozen and later freed by reference counting is freed as usual;
only a reference *cycle* among frozen objects would wait, so once every ``full_every`` seconds
(default 1 h) the frozen objects are handed back and one full
collection runs (one pause of that length per hour, not one every few seconds).
"""
from __future__ import annotations

import gc
import time

FULL_EVERY = 3600.0


class LongLivedHeap:
    def __init__(self, full_every: float = FULL_EVERY) -> None:
        self.full_every = full_every
        self._next_full = time.monotonic() + full_every
        self.full_collections = 0

    def settle(self, now: float | None = None) -> None:
        """After a snapshot: freeze what is alive; a full collection first when one is due."""
        now = time.monotonic() if now is None else now
        if now >= self._next_full:
            gc.unfreeze()
            gc.collect()
            self.full_collections += 1
            self._next_full = now + self.full_every
        gc.freeze()
