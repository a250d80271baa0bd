"""Who must act first in seven-card stud, stud hi-lo and razz (document 004 D, E, H).

Pure functions over up cards, seats and stack sizes; no events, no state.
The plug-in :mod:`pitwatch.rules.stud` feeds them what the dealer terminal recorded.

Document 004 (RP-10, German original) says:

* D: "Werden zwei oder mehrere übereinstimmende High-Hands bei Stud (oder
  Stud-8) oder Low-Hands bei Razz gezeigt, beginnt das Setzen bei der Hand mit
  der High-Card nach Farbe."
* E: "Wenn ein Spieler, der die niedrigste Karte nach Farbe erhalten hat, mit
  der Ante bereits All-In ist, beginnt das Setzen links von ihm."
* H: "… weniger als die 'erforderliche Anzahl' (Anzahl der verbleibenden
  Spieler + Burn-Karten + letzte Karte, die nicht ausgeteilt wird) …"

Showing hands are ranked here, not by a library.  pokerkit 0.7.7 ranks stud
and razz showing hands in private lookups (``pokerkit.state.
_HighHandOpeningLookup`` / ``_LowHandOpeningLookup``) and breaks an exact tie
on 4th–7th street by *seat position* (``entries.index(max(entries))``), where
004 D requires the hand holding the highest card by suit.  Rather than build on
a private class and patch its tie-break, the ~30 lines of ranking live here;
the tests compare them with pokerkit's lookups over every rank multiset of one
to four cards (so the library still vouches for the order of hands) and test
the suit tie-break explicitly.

Ranking (docs/spec/rules.md, ``FIRST_TO_ACT``): stud, stud8: quads > trips > two
pair > pair > high card, ranks compared A high, no straights or flushes.
Razz: the lowest ace-to-five hand.  rules.md words it "fewer paired cards is
better, then the lower highest card, then the next"; read with 004 D's
"Low-Hands bei Razz" this is the standard razz low order, which is also
pokerkit's: no pair < one pair < two pair < trips < quads, and within a class
the pair (trips …) rank is compared before the odd cards.  So 5-5-K shows a
better razz hand than 9-9-2, and two pair a better one than trips.

An unknown up card (``None``) is never guessed (rules.md, "Counting and
matching"): every function answers :data:`UNDECIDED` unless all values the
unknown cards could take lead to the same seat.
"""
from __future__ import annotations

import functools
from itertools import combinations
from typing import Callable, ClassVar, Collection, Iterable, Mapping, Sequence, cast

from pitwatch.schemas.contract import RANKS, SUITS
from pitwatch.schemas.contract import STUD_GAMES as GAMES

ALL_CARDS = frozenset(r + s for r in RANKS for s in SUITS)

_HIGH_RANK = {r: v for v, r in enumerate("23456789TJQKA", start=2)}  # A high
_LOW_RANK = {r: v for v, r in enumerate(RANKS, start=1)}  # A low (razz)
_SUIT = {s: v for v, s in enumerate(SUITS)}
_MAX_ENUMERATED_UNKNOWNS = 2  # per seat; beyond this a seat can be anything

# A showing hand's strength: its class and its ranks (see _class_and_ranks).
_Strength = tuple[int, tuple[int, ...]]
# A priority's answer (first_to_act_priority's, bring_in_priority's): a tuple, compared only with the
# answers of the same priority; a priority as _bounds and possible_leaders call it: on (game, cards tuple).
_Priority = tuple[object, ...]
_PriorityFn = Callable[[str, tuple[str, ...]], _Priority]


class _Undecided:
    """The answer depends on an unreadable card (rules.md: never guessed)."""

    _instance: ClassVar[_Undecided | None] = None

    def __new__(cls) -> _Undecided:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDECIDED"

    def __reduce__(self) -> tuple[type[_Undecided], tuple[()]]:
        return (_Undecided, ())


UNDECIDED = _Undecided()


def is_low_game(game: str) -> bool:
    """Razz is dealt for the low hand: A low, the highest card brings in."""
    if game not in GAMES:
        raise ValueError(f"not a stud game: {game!r}")
    return game == "razz"


def card_order(game: str, card: str) -> tuple[int, int]:
    """(rank, suit) of a card, ranks A high in stud/stud8 and A low in razz."""
    ranks = _LOW_RANK if is_low_game(game) else _HIGH_RANK
    return ranks[card[0]], _SUIT[card[1]]


# card_order of every card, by is_low_game: what the priorities below look up per card
_ORDER_OF = {low: {c: ((_LOW_RANK if low else _HIGH_RANK)[c[0]], _SUIT[c[1]]) for c in ALL_CARDS}
             for low in (False, True)}


def _orders(low: bool, cards: list[str]) -> list[tuple[int, int]]:
    """card_order of each card, as card_order reads it: by its first two characters, so a
    code the per-line decoder lets through with more after it (``"As\\n"``) still ranks."""
    known = _ORDER_OF[low]
    try:
        return [known[c] for c in cards]
    except KeyError:
        return [known[c[:2]] for c in cards]


# --- showing hands -------------------------------------------------------------

_HIGH_CARD, _PAIR, _TWO_PAIR, _TRIPS, _QUADS = range(5)


def _class_and_ranks(ranks: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """Hand class and the ranks ordered by (count, rank) descending."""
    counts: dict[int, int] = {}
    for r in ranks:
        counts[r] = counts.get(r, 0) + 1
    if counts and len(counts) == len(ranks):  # no rank twice: what follows gives this
        return _HIGH_CARD, tuple(sorted(counts, reverse=True))
    ordered = sorted(counts, key=lambda r: (counts[r], r), reverse=True)
    shape = sorted(counts.values(), reverse=True)
    if shape[0] >= 4:
        cls = _QUADS
    elif shape[0] == 3:
        cls = _TRIPS
    elif shape[0] == 2:
        cls = _TWO_PAIR if len(shape) > 1 and shape[1] == 2 else _PAIR
    else:
        cls = _HIGH_CARD
    return cls, tuple(r for r in ordered for _ in range(counts[r]))


def showing_strength(game: str, cards: Iterable[str]) -> _Strength:
    """How good the up cards show: a bigger value is a better showing hand.

    stud, stud8: the high hand (A high).  razz: the ace-to-five low hand, so a
    bigger value is a *lower* hand.  Only compare hands of equal card count.
    """
    cards = list(cards)
    if not cards:
        raise ValueError("a showing hand needs at least one up card")
    low = is_low_game(game)
    return _strength(low, [r for r, _s in _orders(low, cards)])


def _strength(low: bool, ranks: Sequence[int]) -> _Strength:
    """:func:`showing_strength` from the cards' ranks (A low in razz, ``low``; else A high)."""
    cls, ordered = _class_and_ranks(ranks)
    if low:
        return (-cls, tuple(-r for r in ordered))
    return (cls, ordered)


def first_to_act_priority(game: str, cards: Iterable[str]) -> tuple[_Strength, tuple[tuple[int, int], ...]]:
    """Total order of showing hands on 4th-7th street: the biggest acts first.

    Equal hands are ordered by their highest single card by suit (004 D: "die
    Hand mit der High-Card nach Farbe"; in razz the ace is low here too), then,
    only possible with several decks, by their next cards.
    """
    cards = list(cards)
    if not cards:
        raise ValueError("a showing hand needs at least one up card")
    low = is_low_game(game)
    orders = sorted(_orders(low, cards), reverse=True)
    return (_strength_of_ranks(low, tuple([r for r, _s in orders])), tuple(orders))


@functools.lru_cache(maxsize=8192)
def _strength_of_ranks(low: bool, ranks: tuple[int, ...]) -> _Strength:
    """:func:`_strength`, remembered: it does not depend on the order of the ranks, so a hand's
    ranks sorted are a key shared by every hand of those ranks (~2,400 of up to four cards)."""
    return _strength(low, ranks)


def bring_in_priority(game: str, cards: Iterable[str]) -> tuple[int, int]:
    """Total order of 3rd-street up cards: the biggest must bring it in.

    stud, stud8: the lowest card (A high), a rank tie to the lower suit
    (clubs < diamonds < hearts < spades).  razz: the highest card (A low), a
    rank tie to the higher suit.  A seat showing more than one up card (only
    after a dealing error) is judged by its card that comes first.
    """
    if is_low_game(game):
        return max(card_order(game, c) for c in cards)
    return max((-r, -s) for r, s in (card_order(game, c) for c in cards))


# --- deciding with unknown cards ----------------------------------------------


def _bounds(priority: _PriorityFn, game: str, cards: Sequence[str | None],
            unseen: frozenset[str]) -> tuple[_Priority | None, _Priority | None]:
    """The lowest and highest priority the seat's up cards could have.

    ``None`` stands for no bound (the seat could be anything).
    """
    known = tuple(c for c in cards if c is not None)
    missing = len(cards) - len(known)
    priority = _CACHED.get(priority, priority)  # the same hands recur
    if missing == 0:
        p = priority(game, known)
        return p, p
    if missing > _MAX_ENUMERATED_UNKNOWNS:
        return None, None
    values = [priority(game, known + extra)
              for extra in combinations(sorted(unseen), missing)]
    if not values:
        return None, None
    return min(values), max(values)


@functools.lru_cache(maxsize=16384)
def _cached_first_to_act(game: str, cards: tuple[str, ...]) -> tuple[_Strength, tuple[tuple[int, int], ...]]:
    return first_to_act_priority(game, cards)


@functools.lru_cache(maxsize=16384)
def _cached_bring_in(game: str, cards: tuple[str, ...]) -> tuple[int, int]:
    return bring_in_priority(game, cards)


# this module's priorities (pure functions of game and cards) with their answers remembered; cards as a tuple
_CACHED: dict[_PriorityFn, _PriorityFn] = {first_to_act_priority: _cached_first_to_act,
                                           bring_in_priority: _cached_bring_in}


def possible_leaders(priority: _PriorityFn, game: str, hands: Mapping[int, Sequence[str | None]],
                     unseen: Collection[str] | None = None) -> set[int]:
    """Seats whose hand may be the biggest, whatever the unknown cards are.

    A seat may lead unless some other seat certainly beats it (the other's
    lowest possible value is above the seat's highest; equal values, possible
    only with several decks, leave both in).  Cards are treated as
    independent between seats, so the set is never smaller than the truth:
    an answer drawn from it is never a guess.
    """
    known = _CACHED.get(priority)
    if known is not None:
        # every card known: a seat's bounds are one value, and it leads unless a bigger one shows
        values: dict[int, _Priority] = {}
        for seat, cards in hands.items():
            if None in cards:
                break
            values[seat] = known(game, cast("tuple[str, ...]", tuple(cards)))  # no None: checked above
        else:
            top = max(values.values(), default=None)
            # top is None only when there is no seat (and so no value) at all
            return {seat for seat, value in values.items() if top is None or not top > value}
    if unseen is None:
        seen = {c for cards in hands.values() for c in cards if c is not None}
        unseen = ALL_CARDS - seen
    unseen = frozenset(unseen)
    bounds = {seat: _bounds(priority, game, list(cards), unseen)
              for seat, cards in hands.items()}
    # another seat certainly beats this one when its lowest value is above this one's highest; a
    # seat's own lowest is never above its own highest, so the biggest lowest of all seats decides
    top = max((low for low, _ in bounds.values() if low is not None), default=None)
    return {seat for seat, (_, high) in bounds.items() if top is None or high is None or not top > high}


def next_seat_to_act(seat: int, live_seats: Collection[int],
                     all_in: Collection[int]) -> int | None:
    """``seat`` itself, or if it is all-in the next live seat to its left.

    Left of the dealer's seat N is N+1 (ascending, wrapping: events.md
    numbers seats in dealing order).  ``None`` when every live seat is all-in.
    """
    if seat in live_seats and seat not in all_in:
        return seat  # the loop's first candidate: the usual case
    order = sorted(set(live_seats) | {seat})
    start = order.index(seat)
    for step in range(len(order)):
        candidate = order[(start + step) % len(order)]
        if candidate in live_seats and candidate not in all_in:
            return candidate
    return None


def _decide(priority: _PriorityFn, game: str, hands: Mapping[int, Sequence[str | None]], all_in: Collection[int],
            unseen: Collection[str] | None) -> int | _Undecided | None:
    if not hands:
        return None
    leaders = possible_leaders(priority, game, hands, unseen)
    answers = {next_seat_to_act(s, hands.keys(), all_in) for s in leaders}
    if len(answers) != 1:
        return UNDECIDED
    return answers.pop()


def bring_in_seat(game: str, up_cards: Mapping[int, Sequence[str | None]],
                  all_in: Collection[int] = (), unseen: Collection[str] | None = None) -> int | _Undecided | None:
    """The seat whose action must open 3rd street (rules.md ``BRING_IN``; 004 D, E).

    ``up_cards``: every live seat of the hand (dead hands left out) with its
    3rd-street up card(s), ``None`` for unreadable ones.  ``all_in``: seats
    that went all-in with their ante; the bring-in then passes to the next
    live seat to the left that is not all-in.  ``unseen``: the cards an
    unknown up card could be (default: a 52-card deck less the known up cards).
    Returns the seat, ``None`` if nobody can act, or :data:`UNDECIDED`.
    """
    return _decide(bring_in_priority, game, up_cards, all_in, unseen)


def first_to_act_seat(game: str, up_cards: Mapping[int, Sequence[str | None]],
                      all_in: Collection[int] = (), unseen: Collection[str] | None = None) -> int | _Undecided | None:
    """The seat that must act first on 4th-6th street (rules.md ``FIRST_TO_ACT``).

    ``up_cards``: every live seat with all its up cards so far (a 3rd-street
    down card that was exposed is an up card).  On 7th street pass the 6th
    street up cards of the seats still live: 004 H D says the first to act
    on 6th is first on 7th, and a 7th-street card never counts.
    Returns the seat, ``None`` if nobody can act, or :data:`UNDECIDED`.
    """
    return _decide(first_to_act_priority, game, up_cards, all_in, unseen)


# --- 7th street from a short stack (004 H) --------------------------------------

NORMAL, RESHUFFLE_WITH_BURNS, COMMUNITY_CARD, RESHUFFLE_COMMUNITY_CARD = "normal", "A", "B", "C"
PREVIOUS_BURNS = 3  # the burns of 4th, 5th and 6th street


def required_cards(live_seats: int) -> int:
    """004 H: "Anzahl der verbleibenden Spieler + Burn-Karten + letzte Karte"."""
    return live_seats + 2


def short_deck_branch(stack: int, live_seats: int) -> str:
    """What the dealer must do before 7th street with ``stack`` cards left.

    ``NORMAL``: enough cards, burn and deal one down to each live seat.
    ``"A"`` (stack + 3 burns suffice): reshuffle the stack with the three
    previous burns, burn, one card to each seat.  ``"B"`` (at least 3 cards):
    burn and one community card, no reshuffle.  ``"C"`` (fewer than 3):
    reshuffle with the three burns, burn, one community card.
    """
    if stack < 0 or live_seats < 0:
        raise ValueError("stack and live seats cannot be negative")
    required = required_cards(live_seats)
    if stack >= required:
        return NORMAL
    if stack + PREVIOUS_BURNS >= required:
        return RESHUFFLE_WITH_BURNS
    if stack >= 3:
        return COMMUNITY_CARD
    return RESHUFFLE_COMMUNITY_CARD


BRANCH_WORDS = {  # what the dealer should do, as a finding says it
    NORMAL: "burn and deal one card down to each live seat",
    RESHUFFLE_WITH_BURNS: "reshuffle the stack with the 3 previous burns, burn and deal one card to each live seat "
                          "(procedure A)",
    COMMUNITY_CARD: "burn and deal one community card, without reshuffling (procedure B)",
    RESHUFFLE_COMMUNITY_CARD: "reshuffle the stack with the 3 previous burns, burn and deal one community card "
                              "(procedure C)",
}


def short_deck_followed(branch: str, stack: int, reshuffles: Sequence[Sequence[int | None]], community_cards: int,
                        seat_cards: int) -> bool:
    """Whether what the dealer did before 7th-street betting is the ``branch``.

    ``reshuffles``: ``(burns_added, card_count)`` of each ``reshuffle``; a
    right one adds the 3 burns ("mit den 3 vorherigen Burn-Karten") and, when
    it says how many cards it gathered, holds exactly ``stack`` + 3.
    """
    good_reshuffle = False
    if len(reshuffles) == 1:
        (burns, count), = reshuffles
        good_reshuffle = burns == PREVIOUS_BURNS and (count is None or count == stack + PREVIOUS_BURNS)
    if branch == NORMAL:
        return not reshuffles and community_cards == 0
    if branch == RESHUFFLE_WITH_BURNS:
        return good_reshuffle and community_cards == 0
    if branch == COMMUNITY_CARD:
        return not reshuffles and community_cards == 1 and seat_cards == 0
    return good_reshuffle and community_cards == 1 and seat_cards == 0
