"""Hand values the dealer needs: Combate's poker bet, stud showing hands, bring-in cards.

Written for speed (the simulator evaluates every seat of every round), and
kept deliberately close to the words of ``docs/spec/rules.md``:

* Combate poker bet: best five of the six cards, pair of aces or better wins,
  default paytable of rules.md; five of a kind pays as four of a kind; the
  ace plays high or low in a straight (A2345 is a straight).
* Stud / stud8 showing hand: quads, trips, two pair, pair, high card, ranks
  compared with the ace high, no straights or flushes.
* Razz showing hand: "fewer paired cards is better, then the lower highest
  card, then the next" (ace low).  :func:`razz_key_standard` is the usual
  lowball order (no pair < pair < two pair < trips …, pair rank first); the
  simulator steers clear of boards where the two orders disagree.
* Equal showing hands: the one holding the highest single card by suit goes
  first (ace low in razz).
"""
from __future__ import annotations

from itertools import combinations

from pitwatch.simulator.cards import CARD_HIGH, CARD_LOW, CARD_SUIT

# Combate category numbers and the default paytable (rules.md)
NOTHING, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS, STRAIGHT_FLUSH, ROYAL = range(10)
PAYTABLE = {TWO_PAIR: 2, TRIPS: 3, STRAIGHT: 4, FLUSH: 5, FULL_HOUSE: 7, QUADS: 20,
            STRAIGHT_FLUSH: 50, ROYAL: 100}


def eval5(cards) -> tuple:
    """(category, tiebreak ranks…) of five cards, comparable with ``>``."""
    ranks = sorted((CARD_HIGH[c] for c in cards), reverse=True)
    counts: dict[int, int] = {}
    for r in ranks:
        counts[r] = counts.get(r, 0) + 1
    groups = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    shape = [n for _, n in groups]
    order = tuple(r for r, _ in groups)
    flush = len({c[1] for c in cards}) == 1
    straight_high = 0
    if len(counts) == 5:
        if ranks[0] - ranks[4] == 4:
            straight_high = ranks[0]
        elif ranks == [14, 5, 4, 3, 2]:
            straight_high = 5
    if straight_high and flush:
        return (ROYAL if straight_high == 14 else STRAIGHT_FLUSH, straight_high)
    if shape[0] >= 4:
        return (QUADS,) + order  # five of a kind pays as four of a kind
    if shape == [3, 2]:
        return (FULL_HOUSE,) + order
    if flush:
        return (FLUSH,) + tuple(ranks)
    if straight_high:
        return (STRAIGHT, straight_high)
    if shape[0] == 3:
        return (TRIPS,) + order
    if shape[:2] == [2, 2]:
        return (TWO_PAIR,) + order
    if shape[0] == 2:
        return (PAIR,) + order
    return (NOTHING,) + order


def best_five(cards) -> tuple[tuple, list[str]]:
    """Best five of up to six cards ("cards speak"): (value, the five cards)."""
    if len(cards) <= 5:
        return eval5(cards), list(cards)
    best: tuple | None = None
    best_cards: list[str] = []
    for five in combinations(cards, 5):
        v = eval5(five)
        if best is None or v > best:
            best, best_cards = v, list(five)
    assert best is not None     # six cards or more: there was a five
    return best, best_cards


def combate_multiplier(value: tuple) -> int:
    """Net multiple won by the ``third`` bet, 0 for a losing hand (pair of aces or better wins)."""
    cat = value[0]
    if cat == PAIR:
        return 1 if value[1] == 14 else 0
    return PAYTABLE.get(cat, 0)


# ---------------------------------------------------------------- stud boards

def _groups(values):
    counts: dict[int, int] = {}
    for r in values:
        counts[r] = counts.get(r, 0) + 1
    return sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def stud_key(up) -> tuple:
    """Higher is better: (category, ranks by group), ace high, no straights or flushes."""
    groups = _groups(CARD_HIGH[c] for c in up)
    shape = [n for _, n in groups]
    if shape[0] >= 4:
        cat = 4
    elif shape[0] == 3:
        cat = 3
    elif shape[:2] == [2, 2]:
        cat = 2
    elif shape[0] == 2:
        cat = 1
    else:
        cat = 0
    return (cat,) + tuple(r for r, _ in groups)


def razz_key_text(up) -> tuple:
    """Lower is better: paired cards, then highest card, then the next (ace low)."""
    lows = [CARD_LOW[c] for c in up]
    counts: dict[int, int] = {}
    for r in lows:
        counts[r] = counts.get(r, 0) + 1
    paired = sum(n for n in counts.values() if n >= 2)
    return (paired,) + tuple(sorted(lows, reverse=True))


def razz_key_standard(up) -> tuple:
    """Lower is better: the usual ace-to-five order (no pair < pair < two pair < trips …)."""
    groups = _groups(CARD_LOW[c] for c in up)
    shape = [n for _, n in groups]
    cat = {1: 0, 2: 1, 3: 3, 4: 5}[shape[0]]
    if shape[:2] == [2, 2]:
        cat = 2
    elif shape[:2] == [3, 2]:
        cat = 4
    return (cat,) + tuple(r for r, _ in groups)


def high_card_by_suit(up, razz: bool) -> tuple:
    table = CARD_LOW if razz else CARD_HIGH
    return max((table[c], CARD_SUIT[c]) for c in up)


def best_showing(boards: dict[int, list[str]], razz: bool, standard: bool = False) -> int | None:
    """Seat with the best showing hand (ties: highest single card by suit); None when there is no board."""
    best_seat = None
    best = None
    for seat, up in boards.items():
        if razz:
            k = razz_key_standard(up) if standard else razz_key_text(up)
            k = tuple(-x for x in k)  # lower is better -> negate for max
        else:
            k = stud_key(up)
        full = (k, high_card_by_suit(up, razz))
        if best is None or full > best:
            best, best_seat = full, seat
    return best_seat


def bring_in_card_key(card: str, razz: bool) -> tuple:
    """Order of bring-in candidates, smallest brings in.

    stud, stud8: lowest card, ace high, rank ties to the lower suit;
    razz: highest card, ace low, rank ties to the higher suit.
    """
    if razz:
        return (-CARD_LOW[card], -CARD_SUIT[card])
    return (CARD_HIGH[card], CARD_SUIT[card])
