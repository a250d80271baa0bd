"""Poker hands for the third bet of combate (document 001 G–K): the best five of six.

    "Cada jugador determinará cuáles son sus mejores cinco (5) cartas,
    desechando la carta que tenga adicional ... Toda 'mano' con un par de
    Ases o mayor resultará ganadora ... Las cartas hablarán por sí solas."

:func:`best_five` ranks every five-card subset of n >= 5 known cards and
returns the best one ("cards speak": what the player declares does not
matter).  :func:`poker_multiplier` says what that hand pays on a
:class:`Paytable` (``None`` when it does not qualify: below a pair of aces).

Library: **pokerkit** 0.7 (``StandardHighHand.lookup``, a
``StandardLookup``).  It is a project dependency already, MIT, pure Python
with no dependencies, typed, and its hand ranking is exercised by its own
test-suite over whole decks; phevaluator would need a C extension and knows
one deck only.  The lookup keys a hand by the product of one prime per rank
plus a single "all five suited" flag, so a card repeated from another deck of
a multi-deck shoe is ranked like any card of that rank (``9h 9h Kh Ks 3c`` is
two pair, kings and nines).  It has *no entry* for two shapes that only exist
with several decks, and ``from_game`` silently skips such subsets:

* five of a kind (``Ah Ad Ac As Ah``): rules.md says it "pays as four of a
  kind"; it is kept as its own :class:`Category` ranked just above four of a
  kind (and paid as four of a kind);
* five cards of one suit with a repeated rank (``Ah Ah Kh Qh Jh``): five
  cards of one suit are a flush, so the hand is the better of a flush and
  what its ranks make alone (full house and four of a kind beat a flush;
  pair, two pair and three of a kind do not).

Both are handled here, around the library.  Within a category, hands are
ordered by pokerkit's lookup index, except flushes (ordered by their ranks,
highest first, so that flushes with a repeated rank compare with ordinary
ones) and five of a kind (by rank).
"""
from __future__ import annotations

import dataclasses
from enum import IntEnum
from itertools import combinations
from typing import Iterable, Mapping, Sequence

from pokerkit import Card, Label, StandardHighHand

from pitwatch.schemas.contract import SUITS

RANK_ORDER = "23456789TJQKA"  # ace high
RANK_VALUE = {r: i for i, r in enumerate(RANK_ORDER, start=2)}
RANK_NAMES = {
    "2": "twos", "3": "threes", "4": "fours", "5": "fives", "6": "sixes", "7": "sevens",
    "8": "eights", "9": "nines", "T": "tens", "J": "jacks", "Q": "queens", "K": "kings", "A": "aces",
}


class Category(IntEnum):
    """Hand categories, weakest first.  ``ROYAL_FLUSH`` is the ace-high straight flush."""

    HIGH_CARD = 0
    ONE_PAIR = 1
    TWO_PAIR = 2
    THREE_OF_A_KIND = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    FIVE_OF_A_KIND = 8  # several decks only; pays as four of a kind
    STRAIGHT_FLUSH = 9
    ROYAL_FLUSH = 10

    @property
    def words(self) -> str:
        return self.name.lower().replace("_", " ")


_FROM_LABEL = {
    Label.HIGH_CARD: Category.HIGH_CARD,
    Label.ONE_PAIR: Category.ONE_PAIR,
    Label.TWO_PAIR: Category.TWO_PAIR,
    Label.THREE_OF_A_KIND: Category.THREE_OF_A_KIND,
    Label.STRAIGHT: Category.STRAIGHT,
    Label.FLUSH: Category.FLUSH,
    Label.FULL_HOUSE: Category.FULL_HOUSE,
    Label.FOUR_OF_A_KIND: Category.FOUR_OF_A_KIND,
    Label.STRAIGHT_FLUSH: Category.STRAIGHT_FLUSH,
}
_LOOKUP = StandardHighHand.lookup
_CARD_CACHE: dict[str, Card] = {}
_ROYAL = frozenset("TJQKA")

# A hand's ordering key: its category, then pokerkit's lookup index (five of a kind: the rank's value)
# or, for a flush, its rank values highest first.
_Key = tuple[Category, int | tuple[int, ...]]
# What a hand's shape decides: (key, category, pair_rank).
_Shape = tuple[_Key, Category, str | None]


def _card(code: str) -> Card:
    card = _CARD_CACHE.get(code)
    if card is None:
        if len(code) != 2 or code[0] not in RANK_VALUE or code[1] not in SUITS:
            raise ValueError(f"not a card code: {code!r}")
        (card,) = Card.parse(code)
        _CARD_CACHE[code] = card
    return card


@dataclasses.dataclass(frozen=True, order=True)
class PokerHand:
    """The best five cards found, their category and an ordering key.

    Hands compare by ``key`` (category first); ``pair_rank`` is the rank
    of the pair of a one-pair hand (``"A"`` for a pair of aces), else ``None``.
    """

    key: _Key
    category: Category = dataclasses.field(compare=False)
    cards: tuple[str, ...] = dataclasses.field(compare=False)
    pair_rank: str | None = dataclasses.field(compare=False, default=None)

    def describe(self) -> str:
        what = self.category.words
        if self.category is Category.ONE_PAIR:
            assert self.pair_rank is not None       # a pair's hand names its rank
            what = f"pair of {RANK_NAMES[self.pair_rank]}"
        return f"{what} ({' '.join(self.cards)})"


def rank_five(cards: Sequence[str]) -> PokerHand:
    """Rank exactly five known cards (duplicates from several decks allowed)."""
    if len(cards) != 5:
        raise ValueError(f"a poker hand is five cards, got {len(cards)}")
    five = tuple(cards)
    for code in five:
        if code not in _CODES:
            _card(code)  # raises: not a card code
    a, b, c, d, e = five
    shape_key = (tuple(sorted((a[0], b[0], c[0], d[0], e[0]))), a[1] == b[1] == c[1] == d[1] == e[1])
    shape = _SHAPES.get(shape_key)
    if shape is None:
        shape = _SHAPES[shape_key] = _shape(five)
    return PokerHand(shape[0], shape[1], five, shape[2])


# A hand's (key, category, pair_rank) depends on its ranks and whether all five are suited only
# (pokerkit keys its lookup by the ranks' prime product and that flag): computed once per shape.
_CODES = frozenset(r + s for r in RANK_ORDER for s in SUITS)
_SHAPES: dict[tuple[tuple[str, ...], bool], _Shape] = {}


def _shape(five: tuple[str, ...]) -> _Shape:
    parsed = tuple(_card(c) for c in five)
    ranks = [c[0] for c in five]
    suited = len({c[1] for c in five}) == 1
    entry = _LOOKUP.get_entry_or_none(parsed)
    if entry is not None:
        category = _FROM_LABEL[entry.label]
        if category is Category.STRAIGHT_FLUSH and set(ranks) == _ROYAL:
            category = Category.ROYAL_FLUSH
        if category is Category.FLUSH:
            return (category, _ranks_high_first(ranks)), category, None
        return (category, entry.index), category, _pair_rank(category, ranks)
    if len(set(ranks)) == 1:
        return (Category.FIVE_OF_A_KIND, RANK_VALUE[ranks[0]]), Category.FIVE_OF_A_KIND, None
    if not suited:  # pragma: no cover - pokerkit covers every unsuited shape but five of a kind
        raise ValueError(f"pokerkit cannot rank {five}")
    # Five cards of one suit with a repeated rank: rank the same ranks as if unsuited.
    unsuited = list(parsed)
    other = "c" if five[0][1] != "c" else "d"
    unsuited[0] = _card(five[0][0] + other)
    alone = _LOOKUP.get_entry(tuple(unsuited))
    category = _FROM_LABEL[alone.label]
    if category > Category.FLUSH:  # full house, four of a kind
        return (category, alone.index), category, None
    return (Category.FLUSH, _ranks_high_first(ranks)), Category.FLUSH, None


def best_five(cards: Iterable[str]) -> PokerHand:
    """The best five-card hand among n >= 5 known cards ("cards speak")."""
    cards = tuple(cards)
    if len(cards) < 5:
        raise ValueError(f"need at least five cards, got {len(cards)}")
    return max(rank_five(five) for five in combinations(cards, 5))


def best_category(cards: Sequence[str]) -> tuple[Category, str | None]:
    """``best_five(cards)``'s category and pair rank, read from rank and suit counts.

    No five-card subset is ranked (the payout needs only these two): the best
    hand's category is the highest any subset reaches.  Several decks allowed.
    """
    if len(cards) < 5:
        raise ValueError(f"need at least five cards, got {len(cards)}")
    counts: dict[str, int] = {}
    suits: dict[str, set[int]] = {}
    per_suit: dict[str, int] = {}
    for code in cards:
        if code not in _CODES:
            _card(code)  # raises: not a card code
        r, s = code[0], code[1]
        counts[r] = counts.get(r, 0) + 1
        per_suit[s] = per_suit.get(s, 0) + 1
        suits.setdefault(s, set()).add(RANK_VALUE[r])
    best = None
    for s, n in per_suit.items():
        if n >= 5:
            high = _straight_high(suits[s])
            if high == 14:
                return Category.ROYAL_FLUSH, None
            if high is not None:
                best = Category.STRAIGHT_FLUSH
    if best is not None:
        return best, None
    shape = sorted(counts.values(), reverse=True)
    if shape[0] >= 5:
        return Category.FIVE_OF_A_KIND, None
    if shape[0] == 4:
        return Category.FOUR_OF_A_KIND, None
    if shape[0] == 3 and shape[1] >= 2:
        return Category.FULL_HOUSE, None
    if max(per_suit.values()) >= 5:
        return Category.FLUSH, None
    if _straight_high({RANK_VALUE[r] for r in counts}) is not None:
        return Category.STRAIGHT, None
    if shape[0] == 3:
        return Category.THREE_OF_A_KIND, None
    if shape[0] == 2:
        if shape[1] == 2:
            return Category.TWO_PAIR, None
        return Category.ONE_PAIR, next(r for r, n in counts.items() if n == 2)
    return Category.HIGH_CARD, None


def _straight_high(values: set[int]) -> int | None:
    """The top rank of the highest straight among the rank values (ace also low), or None."""
    if 14 in values:
        values = values | {1}
    for top in range(14, 4, -1):
        if top in values and top - 1 in values and top - 2 in values and top - 3 in values and top - 4 in values:
            return top
    return None


def _ranks_high_first(ranks: Sequence[str]) -> tuple[int, ...]:
    return tuple(sorted((RANK_VALUE[r] for r in ranks), reverse=True))


def _pair_rank(category: Category, ranks: Sequence[str]) -> str | None:
    if category is not Category.ONE_PAIR:
        return None
    return next(r for r in ranks if ranks.count(r) == 2)


# --- the paytable -------------------------------------------------------------

#: Paytable rows, weakest first: name in seeds/combate_paytable.csv -> category.
PAYTABLE_HANDS: tuple[tuple[str, Category], ...] = (
    ("pair_of_aces", Category.ONE_PAIR),
    ("two_pair", Category.TWO_PAIR),
    ("three_of_a_kind", Category.THREE_OF_A_KIND),
    ("straight", Category.STRAIGHT),
    ("flush", Category.FLUSH),
    ("full_house", Category.FULL_HOUSE),
    ("four_of_a_kind", Category.FOUR_OF_A_KIND),
    ("straight_flush", Category.STRAIGHT_FLUSH),
    ("royal_flush", Category.ROYAL_FLUSH),
)


@dataclasses.dataclass(frozen=True)
class Paytable:
    """What each qualifying hand pays, "to 1", on the third (poker) bet.

    Defaults are rules.md's; a table's own values come from
    ``seeds/combate_paytable.csv``.  Five of a kind pays as four of a kind.
    """

    pair_of_aces: float = 1
    two_pair: float = 2
    three_of_a_kind: float = 3
    straight: float = 4
    flush: float = 5
    full_house: float = 7
    four_of_a_kind: float = 20
    straight_flush: float = 50
    royal_flush: float = 100

    @classmethod
    def from_mapping(cls, values: Mapping[str, float]) -> "Paytable":
        unknown = set(values) - {name for name, _ in PAYTABLE_HANDS}
        if unknown:
            raise ValueError(f"unknown paytable hands: {sorted(unknown)}")
        return cls(**{k: float(v) for k, v in values.items()})

    def pays(self, category: Category) -> float:
        if category is Category.FIVE_OF_A_KIND:
            category = Category.FOUR_OF_A_KIND
        for name, cat in PAYTABLE_HANDS:
            if cat is category:
                pays: float = getattr(self, name)      # a field named after the row
                return pays
        raise KeyError(category)


DEFAULT_PAYTABLE = Paytable()


def qualifies(hand: PokerHand) -> bool:
    """Document 001 I: "Toda mano con un par de Ases o mayor resultará ganadora"."""
    return category_qualifies(hand.category, hand.pair_rank)


def category_qualifies(category: Category, pair_rank: str | None) -> bool:
    """:func:`qualifies` from the best hand's category and pair rank alone (:func:`best_category`)."""
    if category is Category.ONE_PAIR:
        return pair_rank == "A"
    return category > Category.ONE_PAIR


def poker_multiplier(hand: PokerHand, paytable: Paytable = DEFAULT_PAYTABLE) -> float | None:
    """What the hand pays to 1 on ``paytable``, or ``None`` when it loses."""
    return paytable.pays(hand.category) if qualifies(hand) else None
