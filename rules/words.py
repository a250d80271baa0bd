"""Words for people: counts with the right plural, and the places cards go to.

A finding's ``expected`` and ``actual`` are read by a surveillance operator
at a video console, not by a programmer, so the rules write them with these
helpers instead of the event stream's own tokens: ``seat 6``, not
``seat:6``; ``1 card``, ``2 cards``, not ``2 card(s)``.  The CLI's
summaries use :func:`plural` too (it is :func:`pitwatch.wording.plural`).  Standard
library only, no I/O.
"""
from __future__ import annotations

from typing import Iterable

from pitwatch.wording import plural


def place(target: str | None) -> str:
    """A card's destination as a person says it: ``seat 6``, ``the community spot``,
    ``the dealer``, ``the player hand``, ``the banker hand``, ``a burn``."""
    if target is None:
        return "an unknown place"
    if target.startswith("seat:"):
        return f"seat {target[5:]}"
    return _PLACES.get(target, target.replace("_", " "))


_PLACES = {
    "community": "the community spot", "dealer": "the dealer", "player": "the player hand",
    "banker": "the banker hand", "burn": "a burn", "supervisor": "the supervisor",
}


def places(targets: Iterable[str | None], joiner: str = "or") -> str:
    """``seat 1``, ``seat 1 or seat 2``, ``seat 1, seat 2 or the community spot``."""
    words = [place(t) for t in targets]
    if not words:
        return "nobody"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + f" {joiner} " + words[-1]


def listing(items: Iterable[str], joiner: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    if not items:
        return "none"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {joiner} " + items[-1]


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``21st``."""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{_SUFFIX.get(n % 10, 'th')}"


_SUFFIX = {1: "st", 2: "nd", 3: "rd"}


def street(n: int | str | None) -> str:
    """A stud street by its name: ``3rd street``, ``7th street``."""
    if n is None:  # what int(None)'s TypeError below gave
        return "an unknown street"
    try:
        return f"{ordinal(int(n))} street"
    except (TypeError, ValueError):
        return "an unknown street"


def amount(x: float) -> str:
    """A bet or payout amount: ``100``, ``95``, ``2.50``, ``1,250``; never ``1e+06``."""
    x = abs(float(x))
    return f"{x:,.0f}" if x == int(x) else f"{x:,.2f}"


def cards(n: int) -> str:
    """``no cards``, ``1 card``, ``2 cards``."""
    return "no cards" if n == 0 else plural(n, "card")


def settlement(result: str, value: float) -> str:
    """A payout as a person says it: ``a win paying 95``, ``a loss (100 collected)``, ``a push``."""
    if result == "win":
        return f"a win paying {amount(value)}"
    if result == "lose":
        return f"a loss ({amount(value)} collected)"
    if result == "half_lose":
        return f"half lost ({amount(value)} collected)"
    if result == "push":
        return "a push (the bet returned)"
    if result == "no bet":
        return "no payout (no bet was placed)"
    return f"{result.replace('_', ' ')} ({amount(value)})"
