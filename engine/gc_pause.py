"""The cyclic garbage collector paused around hot loops (no Beam: the driver and the DoFns share it)."""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector around hot loops (decoding a chunk, replaying a table).

    Replaying allocates many small objects (events, state dicts) that are
    freed by reference counting; the cyclic collector would walk the whole
    heap again and again for nothing (measured: a large share of the time).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
