"""Cards, decks and the pack (a shuffled stack of one or more decks).

A :class:`Pack` is the physical stack in the shoe or in the dealer's hand:
cards are drawn from the top (``pos``).  Nothing here knows about events.

``rig`` reorders the *undrawn* part of a pack (swapping a wanted card to the
top).  The simulator uses it to make a situation a fault needs (a six-card
hand, a pair of aces, an up pair on 4th street) or to steer clear of a
situation the rule text leaves ambiguous.  A rigged pack is still a
permutation of the same cards, so nothing downstream can tell.
"""
from __future__ import annotations

import random

from pitwatch.schemas.contract import RANKS, SUITS

DECK: tuple[str, ...] = tuple(r + s for r in RANKS for s in SUITS)

# rank value with the ace high (2..14) and low (1..13), suit order 0..3
HIGH = {r: (14 if r == "A" else i + 1) for i, r in enumerate(RANKS)}
LOW = {r: i + 1 for i, r in enumerate(RANKS)}
SUIT = {s: i for i, s in enumerate(SUITS)}

# per card code, for speed
CARD_HIGH = {c: HIGH[c[0]] for c in DECK}
CARD_LOW = {c: LOW[c[0]] for c in DECK}
CARD_SUIT = {c: SUIT[c[1]] for c in DECK}
# baccarat points (T J Q K = 0), burn value (A = 1, T J Q K = 10), blackjack value (A = 1 here)
BACCARAT_POINTS = {c: (0 if LOW[c[0]] >= 10 else LOW[c[0]]) for c in DECK}
BURN_VALUE = {c: min(LOW[c[0]], 10) for c in DECK}
BJ_VALUE = BURN_VALUE


def decks(n: int) -> list[str]:
    return list(DECK) * n


class Pack:
    """A stack of cards drawn from the top; ``pos`` cards have left it."""

    __slots__ = ("cards", "pos")

    def __init__(self, cards: list[str]):
        self.cards = cards
        self.pos = 0

    @classmethod
    def shuffled(cls, n_decks: int, rng: random.Random) -> "Pack":
        cards = decks(n_decks)
        rng.shuffle(cards)
        return cls(cards)

    def __len__(self) -> int:
        return len(self.cards)

    def remaining(self) -> int:
        return len(self.cards) - self.pos

    def draw(self) -> str:
        card = self.cards[self.pos]
        self.pos += 1
        return card

    def peek(self, ahead: int = 0) -> str | None:
        i = self.pos + ahead
        return self.cards[i] if i < len(self.cards) else None

    def rig(self, wanted, rng: random.Random, offset: int = 0) -> bool:
        """Swap a random undrawn card satisfying ``wanted(card)`` to position pos+offset."""
        at = self.pos + offset
        cards = self.cards
        if at >= len(cards):
            return False
        if wanted(cards[at]):
            return True
        hits = [i for i in range(self.pos, len(cards)) if i != at and wanted(cards[i])
                and not (self.pos <= i < at)]
        if not hits:
            return False
        j = hits[int(rng.random() * len(hits))]
        cards[at], cards[j] = cards[j], cards[at]
        return True

    def swap_later(self, offset: int, rng: random.Random, beyond: int) -> None:
        """Swap the card at pos+offset with a random undrawn card at pos+beyond or later."""
        at = self.pos + offset
        lo = self.pos + beyond
        if lo >= len(self.cards) or at >= len(self.cards):
            return
        j = lo + int(rng.random() * (len(self.cards) - lo))
        self.cards[at], self.cards[j] = self.cards[j], self.cards[at]

    def place_run(self, run: list[str], at: int) -> bool:
        """Move the cards of ``run`` (one copy each) to consecutive places from ``at``."""
        cards = self.cards
        if at + len(run) > len(cards) or at < self.pos:
            return False
        for k, want in enumerate(run):
            dst = at + k
            if cards[dst] == want:
                continue
            try:
                src = cards.index(want, self.pos)
                while at <= src < dst:  # already placed earlier in the run
                    src = cards.index(want, src + 1)
            except ValueError:
                return False
            cards[dst], cards[src] = cards[src], cards[dst]
        return True


def new_deck_run(rng: random.Random, length: int = 8) -> list[str]:
    """A run of one suit in consecutive rank order A 2 … K (either direction), no wrap."""
    suit = SUITS[int(rng.random() * 4)]
    start = int(rng.random() * (13 - length + 1))
    run = [RANKS[start + k] + suit for k in range(length)]
    if rng.random() < 0.5:
        run.reverse()
    return run


def other_card(rng: random.Random, avoid: set[str | None]) -> str:
    """A random card code not in ``avoid``."""
    while True:
        c = DECK[int(rng.random() * 52)]
        if c not in avoid:
            return c
