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

State is an :class:`pitwatch.rules.state.Alignment` record; outcomes are tuples
``(kind, shoe_pos, term_pos)`` with kind ``match``, ``mismatch``,
``shoe_only`` (term_pos = the terminal card just before it, or -1) and
``term_only`` (shoe_pos None); positions index ``al.shoe`` / ``al.term``.
"""
from __future__ import annotations

from pitwatch.rules.state import Alignment, ShoeDraw, TermCard

MAX_SKIP = 3
CONFIRM = 3
WINDOW = MAX_SKIP + CONFIRM + 1
_CANDIDATES = [(1, 1)] + [c for k in range(1, MAX_SKIP + 1) for c in ((k, 0), (0, k))]


def add_shoe(al: Alignment, draw: ShoeDraw) -> bool:
    """Append a shoe draw; False when its index is not after the last one (ignored)."""
    shoe = al.shoe
    last = shoe[-1].index if shoe else 0
    if draw.index <= last:
        return False
    for missing in range(last + 1, draw.index):
        shoe.append(ShoeDraw(missing))
    shoe.append(draw)
    return True


def add_term(al: Alignment, card: TermCard) -> int:
    """Append a terminal card; its place in the pack's terminal cards."""
    al.term.append(card)
    return len(al.term) - 1


def _agree(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


def _score(s: list[ShoeDraw], t: list[TermCard], i: int, j: int) -> int:
    n = 0
    for m in range(CONFIRM):
        si, tj = i + m, j + m
        has_s, has_t = si < len(s), tj < len(t)
        if has_s and has_t:
            n += _agree(s[si].card, t[tj].card)
        elif not has_s and not has_t:
            n += 1  # both sequences end here: they agree
    return n


def idle(al: Alignment) -> bool:
    """Nothing can be decided now (:func:`step` would return nothing): neither stream has a
    card left to place, or one has none and has not passed the pack (its next card may come)."""
    s_left, t_left = al.shoe_at < len(al.shoe), al.term_at < len(al.term)
    return (not s_left and (not t_left or not al.shoe_passed)) or (not t_left and not al.term_passed)


Outcome = tuple[str, "int | None", int]   # (kind, shoe_pos, term_pos): see the module doc


def step(al: Alignment) -> list[Outcome]:
    """Decide every place that can be decided now; returns the outcomes in order."""
    s, t = al.shoe, al.term
    i, j = al.shoe_at, al.term_at
    ns, nt = len(s), len(t)
    out: list[Outcome] = []
    while True:
        has_s, has_t = i < ns, j < nt
        if has_s and has_t:
            a, b = s[i].card, t[j].card
            if a is None or b is None or a == b:  # _agree
                out.append(("match", i, j))
                i += 1
                j += 1
                continue
        elif not has_s and not has_t:
            break
        if not has_s:
            if not al.shoe_passed:
                break
            out.append(("term_only", None, j))
            j += 1
            continue
        if not has_t:
            if not al.term_passed:
                break
            out.append(("shoe_only", i, j - 1))
            i += 1
            continue
        if not ((ns - i >= WINDOW or al.shoe_passed) and (nt - j >= WINDOW or al.term_passed)):
            break
        skip_s, skip_t = next(((a, b) for a, b in _CANDIDATES if _score(s, t, i + a, j + b) == CONFIRM), (1, 1))
        if (skip_s, skip_t) == (1, 1):
            out.append(("mismatch", i, j))
            i += 1
            j += 1
        else:
            for k in range(skip_s):
                out.append(("shoe_only", i + k, j - 1))
            for k in range(skip_t):
                out.append(("term_only", None, j + k))
            i += skip_s
            j += skip_t
    al.shoe_at, al.term_at = i, j
    return out


def complete(al: Alignment) -> bool:
    """Both streams are done with the pack and every card is decided."""
    return al.shoe_passed and al.term_passed and al.shoe_at >= len(al.shoe) and al.term_at >= len(al.term)


# --- reporting only (the live service's provisional alert, live/provisional.py) -------------------
# Pure reads of the state: they never change what step() decides or when.

def disagreement(al: Alignment) -> tuple[int, int] | None:
    """Where the aligner waits at a disagreement now: ``(shoe_pos, term_pos)`` when both
    sequences hold a card at the undecided place and both are read and differ, else None.
    (Equal or unknown cards there are matched at once by :func:`step`, so after a step the
    undecided place is either this disagreement or the end of one sequence.)"""
    i, j = al.shoe_at, al.term_at
    s, t = al.shoe, al.term
    if i < len(s) and j < len(t):
        a, b = s[i].card, t[j].card
        if a is not None and b is not None and a != b:
            return i, j
    return None


def decided_since(al: Alignment, i0: int, j0: int) -> list[Outcome]:
    """The outcomes (as :func:`step` returns them) of the places decided since the undecided
    place was ``(i0, j0)``, up to today's ``(al.shoe_at, al.term_at)``: recomputed on a copy (the
    aligner's answers depend only on the two sequences, so they are the ones it took)."""
    i1, j1 = al.shoe_at, al.term_at
    if (i1, j1) == (i0, j0):
        return []
    copy = Alignment(al.shoe, al.term, i0, j0, al.shoe_passed, al.term_passed)
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
