"""Cross-stream card matching of one pack: the shoe's draws against the terminal's cards.

rules.md "Counting and matching": the shoe's ``card_drawn`` sequence (by
``index``) is aligned with the terminal's ``card_dealt`` sequence (burns
included) *by order, never by time*.  A card in one sequence and not the other
is unaccounted and the alignment resumes after it; a different card at an
aligned place is a mismatch.

The aligner is incremental and its answers depend only on the two sequences,
never on how their events were interleaved:

* equal cards (or an unknown card on either side, which is never guessed and
  so agrees with anything) are matched at once;
* at a disagreement it waits until both sequences hold ``WINDOW`` more cards
  (or the stream is done with the pack), then tries, in this order, a
  mismatch (both advance), then skipping 1, 2, 3 cards of the shoe or of the
  terminal (those cards are unaccounted).  The first candidate after which
  the next ``CONFIRM`` places all agree wins; if none does, it is a mismatch;
* a stream that is done with the pack leaves the other's remaining cards
  unaccounted.

A ``card_drawn`` index skipped by the shoe (an event lost upstream) becomes an
unknown placeholder: the shoe did draw a card there.

State is a plain dict (see :func:`new`); outcomes are tuples
``(kind, shoe_pos, term_pos)`` with kind ``match``, ``mismatch``,
``shoe_only`` (term_pos = the terminal card just before it, or -1) and
``term_only`` (shoe_pos None); positions index ``al["s"]`` / ``al["t"]``.
"""
from __future__ import annotations

MAX_SKIP = 3
CONFIRM = 3
WINDOW = MAX_SKIP + CONFIRM + 1
_CANDIDATES = [(1, 1)] + [c for k in range(1, MAX_SKIP + 1) for c in ((k, 0), (0, k))]


def new() -> dict:
    # s: [index, card, event_id, ts, device_id, ts_offset]; t: [card, event_id, ts, dealer_id, round_id,
    # dealer_pos, device_id, ts_offset] (the newest last: a state written before them has shorter lists)
    return {"s": [], "t": [], "i": 0, "j": 0, "s_done": False, "t_done": False}


def add_shoe(al: dict, index: int, card: str | None, event_id: str, ts: int, device_id: str | None = None,
             ts_offset: int | None = None) -> bool:
    """Append a shoe draw; False when its index is not after the last one (ignored)."""
    s = al["s"]
    last = s[-1][0] if s else 0
    if index <= last:
        return False
    for missing in range(last + 1, index):
        s.append([missing, None, None, None, None, None])
    s.append([index, card, event_id, ts, device_id, ts_offset])
    return True


def add_term(al: dict, card: str | None, event_id: str, ts: int, dealer_id, round_id, pos: int,
             device_id: str | None = None, ts_offset: int | None = None) -> int:
    al["t"].append([card, event_id, ts, dealer_id, round_id, pos, device_id, ts_offset])
    return len(al["t"]) - 1


def shoe_ref(c: list) -> list:
    """The evidence ref (:func:`pitwatch.rules.finding.ref`) of a shoe draw ``al["s"][i]``."""
    return [c[2], c[3], None, c[4] if len(c) > 4 else None, c[5] if len(c) > 5 else None]


def term_ref(c: list) -> list:
    """The evidence ref (:func:`pitwatch.rules.finding.ref`) of a terminal card ``al["t"][j]``."""
    return [c[1], c[2], c[3], c[6] if len(c) > 6 else None, c[7] if len(c) > 7 else None]


def _agree(a, b) -> bool:
    return a is None or b is None or a == b


def _score(s, t, i, j, al) -> int:
    n = 0
    for m in range(CONFIRM):
        si, tj = i + m, j + m
        has_s, has_t = si < len(s), tj < len(t)
        if has_s and has_t:
            n += _agree(s[si][1], t[tj][0])
        elif not has_s and not has_t:
            n += 1  # both sequences end here: they agree
    return n


def idle(al: dict) -> bool:
    """Nothing can be decided now (:func:`step` would return nothing): neither stream has a
    card left to place, or one has none and has not passed the pack (its next card may come)."""
    s_left, t_left = al["i"] < len(al["s"]), al["j"] < len(al["t"])
    return (not s_left and (not t_left or not al["s_done"])) or (not t_left and not al["t_done"])


def step(al: dict) -> list[tuple]:
    """Decide every place that can be decided now; returns the outcomes in order."""
    s, t = al["s"], al["t"]
    i, j = al["i"], al["j"]
    ns, nt = len(s), len(t)
    out = []
    while True:
        has_s, has_t = i < ns, j < nt
        if has_s and has_t:
            a, b = s[i][1], t[j][0]
            if a is None or b is None or a == b:  # _agree
                out.append(("match", i, j))
                i += 1
                j += 1
                continue
        elif not has_s and not has_t:
            break
        if not has_s:
            if not al["s_done"]:
                break
            out.append(("term_only", None, j))
            j += 1
            continue
        if not has_t:
            if not al["t_done"]:
                break
            out.append(("shoe_only", i, j - 1))
            i += 1
            continue
        if not ((ns - i >= WINDOW or al["s_done"]) and (nt - j >= WINDOW or al["t_done"])):
            break
        a, b = next(((a, b) for a, b in _CANDIDATES if _score(s, t, i + a, j + b, al) == CONFIRM), (1, 1))
        if (a, b) == (1, 1):
            out.append(("mismatch", i, j))
            i += 1
            j += 1
        else:
            for k in range(a):
                out.append(("shoe_only", i + k, j - 1))
            for k in range(b):
                out.append(("term_only", None, j + k))
            i += a
            j += b
    al["i"], al["j"] = i, j
    return out


def complete(al: dict) -> bool:
    """Both streams are done with the pack and every card is decided."""
    return al["s_done"] and al["t_done"] and al["i"] >= len(al["s"]) and al["j"] >= len(al["t"])


# --- reporting only (the live service's provisional alert, live/provisional.py) -------------------
# Pure reads of the state: they never change what step() decides or when.

def disagreement(al: dict) -> tuple[int, int] | None:
    """Where the aligner waits at a disagreement now: ``(shoe_pos, term_pos)`` when both
    sequences hold a card at the undecided place and both are read and differ, else None.
    (Equal or unknown cards there are matched at once by :func:`step`, so after a step the
    undecided place is either this disagreement or the end of one sequence.)"""
    i, j = al["i"], al["j"]
    s, t = al["s"], al["t"]
    if i < len(s) and j < len(t):
        a, b = s[i][1], t[j][0]
        if a is not None and b is not None and a != b:
            return i, j
    return None


def decided_since(al: dict, i0: int, j0: int) -> list[tuple]:
    """The outcomes (as :func:`step` returns them) of the places decided since the undecided
    place was ``(i0, j0)``, up to today's ``(al["i"], al["j"])``: recomputed on a copy (the
    aligner's answers depend only on the two sequences, so they are the ones it took)."""
    i1, j1 = al["i"], al["j"]
    if (i1, j1) == (i0, j0):
        return []
    copy = {"s": al["s"], "t": al["t"], "i": i0, "j": j0, "s_done": al["s_done"], "t_done": al["t_done"]}
    out = []
    i, j = i0, j0
    for o in step(copy):
        if i >= i1 and j >= j1:
            break
        out.append(o)
        if o[0] in ("match", "mismatch"):
            i, j = i + 1, j + 1
        elif o[0] == "shoe_only":
            i += 1
        else:
            j += 1
    return out
