"""Ids used again: the use keys of packs and rounds (see "Ids used again" in :mod:`pitwatch.rules.table`).

A device may use a ``pack_id`` again once the pack it named left play, and a
terminal a ``round_id`` once its round ended (events.md, version 2.1): each
use is a pack or round of its own.  The engine keys use ``n`` of id ``X`` as
``X`` for the first use and ``X#n`` after (:func:`use_key`), so a feed that
never uses an id again is keyed (finding ids included) as before.
"""
from __future__ import annotations

from typing import TypeVar, overload

_K = TypeVar("_K")
_V = TypeVar("_V")

# how far a stream is with the latest use of a pack id (the state's ``uses[stream][id]``: [use, this]),
# and how far it must be for an event to start the next use (pitwatch.rules.table.TableReplay.stream_key)
NAMED, DEALT, LEFT = 0, 1, 2
PREPARES, STARTS, NOTES = DEALT, LEFT, 3
# how far the latest use of a round id is (the state's ``uses["round"][id]``: [use, this])
ROUND_NAMED, ROUND_STARTED, ROUND_ENDED = 0, 1, 2

KEEP_USES = 256      # per stream, the ids it named last whose use number is remembered (as _KEEP_DONE)
KEEP_KEYS = 4096    # use keys (uses 2 and up) whose id and use number are remembered, for the rows


def use_key(raw_id: str, use: int) -> str:
    """The engine's key of use ``use`` of id ``raw_id``: the id itself for the first use, ``id#n`` after."""
    return raw_id if use == 1 else f"{raw_id}#{use}"


def prune(d: dict[_K, _V], keep: int) -> None:
    """Forget the oldest entries of ``d`` (insertion order) beyond ``keep``."""
    while len(d) > keep:
        del d[next(iter(d))]


def again(d: dict[str, _V], key: str, value: _V) -> None:
    """(Re)insert ``d[key] = value`` as the newest entry, forgetting the oldest beyond :data:`KEEP_USES`."""
    d.pop(key, None)
    d[key] = value
    if len(d) > KEEP_USES:
        prune(d, KEEP_USES)


@overload
def split_key(key: str) -> tuple[str, int]: ...
@overload
def split_key(key: None) -> tuple[None, None]: ...
@overload
def split_key(key: str | None) -> tuple[str, int] | tuple[None, None]: ...
def split_key(key: str | None) -> tuple[str, int] | tuple[None, None]:
    """``(id, use)`` read back from a use key alone (None: ``(None, None)``), for display where the
    use number is not at hand (live provisional alerts): an id that itself ends in ``#`` and digits
    reads as a later use of a shorter id.  The engine's rows use the number it remembers
    (:meth:`pitwatch.rules.table.TableReplay.id_use`)."""
    if key is None:
        return None, None
    head, sep, tail = key.rpartition("#")
    if sep and tail.isdigit() and int(tail) > 1 and str(int(tail)) == tail:
        return head, int(tail)
    return key, 1
