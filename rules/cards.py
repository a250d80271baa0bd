"""Cards: ranks, suits, baccarat values and the punto banco tableau, new-deck runs.

A card is the contract's two-character code (``"Td"``) or ``None`` when
unreadable.  An unreadable card is never guessed: :func:`verdicts` evaluates
a check for every value the unknown cards could take, so a caller can tell a
decided answer (the same for all) from an undecided one.
"""
from __future__ import annotations

import itertools
from typing import Callable, Hashable, Sequence, TypeVar

from pitwatch.schemas.contract import RANKS  # new-deck order, ace low

RANK_INDEX = {r: i for i, r in enumerate(RANKS)}

_Answer = TypeVar("_Answer", bound=Hashable)

# One representative card per baccarat value 0..9 (T J Q K all count 0).
BACCARAT_VALUE_CARDS = ("Tc", "Ac", "2c", "3c", "4c", "5c", "6c", "7c", "8c", "9c")


def rank(card: str) -> str:
    return card[0]


def suit(card: str) -> str:
    return card[1]


def baccarat_value(card: str) -> int:
    """A = 1, 2-9 their pip, T J Q K = 0."""
    i = RANK_INDEX[card[0]] + 1
    return i if i < 10 else 0


def baccarat_total(cards: Sequence[str]) -> int:
    return sum(baccarat_value(c) for c in cards) % 10


def player_draws(player_total: int, banker_total: int) -> bool:
    """Player draws on 0-5, stands on 6-7; nobody draws against a natural (8, 9)."""
    if player_total >= 8 or banker_total >= 8:
        return False
    return player_total <= 5


def banker_draws(banker_total: int, player_total: int, player_third: str | None, player_drew: bool) -> bool:
    """The banker's side of the tableau (rules.md DRAWING_RULE).

    If the player stood, banker draws on 0-5.  If the player drew card p:
    0-2 draw; 3 unless p is 8; 4 if p is 2-7; 5 if p is 4-7; 6 if p is 6-7; 7 never.
    """
    if player_total >= 8 or banker_total >= 8:
        return False
    if not player_drew:
        return banker_total <= 5
    assert player_third is not None       # the player drew: its third card is known
    p = baccarat_value(player_third)
    if banker_total <= 2:
        return True
    if banker_total == 3:
        return p != 8
    if banker_total == 4:
        return 2 <= p <= 7
    if banker_total == 5:
        return 4 <= p <= 7
    if banker_total == 6:
        return p in (6, 7)
    return False


def coup(shoe: Sequence[str]) -> tuple[list[str], list[str]]:
    """Deal one coup from ``shoe`` (P B P B, then thirds by the tableau): (player, banker)."""
    player, banker = [shoe[0], shoe[2]], [shoe[1], shoe[3]]
    nxt = 4
    pt, bt = baccarat_total(player), baccarat_total(banker)
    drew = player_draws(pt, bt)
    if drew:
        player.append(shoe[nxt])
        nxt += 1
    if banker_draws(bt, pt, player[2] if drew else None, drew):
        banker.append(shoe[nxt])
    return player, banker


def verdicts(cards: Sequence[str | None], check: Callable[[list[str]], _Answer],
             alphabet: Sequence[str] = BACCARAT_VALUE_CARDS, limit: int = 4) -> set[_Answer] | None:
    """The set of answers of ``check`` over every value the unknown (None) cards could take.

    Returns None when more than ``limit`` cards are unknown (too many to enumerate:
    treat as undecided).  A one-element set is a decided answer.
    """
    unknown = [i for i, c in enumerate(cards) if c is None]
    if len(unknown) > limit:
        return None
    if not unknown:
        return {check([c for c in cards if c is not None])}
    out: set[_Answer] = set()
    filled: list[str] = [c if c is not None else "" for c in cards]     # each "" is filled below
    for combo in itertools.product(alphabet, repeat=len(unknown)):
        for i, c in zip(unknown, combo):
            filled[i] = c
        out.add(check(filled))
    return out


def new_deck_run(cards: Sequence[str | None], length: int = 8) -> int | None:
    """Start offset of the first run of ``length`` consecutive cards of one suit in
    consecutive ascending or descending rank (A 2 … K, no wrapping); an unreadable
    card breaks a run.  None when there is none."""
    up = down = 1
    for i in range(1, len(cards)):
        a, b = cards[i - 1], cards[i]
        if a is None or b is None or a[1] != b[1]:
            up = down = 1
            continue
        step = RANK_INDEX[b[0]] - RANK_INDEX[a[0]]
        up = up + 1 if step == 1 else 1
        down = down + 1 if step == -1 else 1
        if up >= length or down >= length:
            return i - length + 1
    return None
