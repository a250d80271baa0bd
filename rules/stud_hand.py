"""One stud, stud hi-lo or razz hand replayed against document 004 (RP-10).

:class:`StudHand` is a view over one round's state, a :class:`StudHandState` record (the
engine keeps it as ``rnd.game_state`` and checkpoints it with msgspec).  ``feed(ev)`` takes the
round's dealer events in order; what broke the procedure of docs/spec/rules.md
("stud, stud8, razz") is collected in :attr:`StudHand.findings` (dicts:
``rule_id``, ``expected``, ``actual``, ``evidence`` refs, ``seat``), checks an
unreadable card left open in :attr:`StudHand.undecided`.  ``DEAL_ORDER``,
``CARD_FACE`` and ``MISDEAL`` are answered as the engine asks them
(:meth:`allowed_targets`, :meth:`expected_face`, :meth:`expected_holdings`);
with ``shared_checks=True`` (standalone use) the hand checks the first two
itself.  Showing hands and the short-stack branches: :mod:`pitwatch.rules.stud_showing`.

How document 004 is read here (the German decides where rules.md is silent):

* A 3rd-street down card exposed before the seat's third card is that seat's
  up card ("ist die offene Karte des Spielers und die 3rd Street wird an diesen
  Spieler verdeckt ausgeteilt. Der Spieler kann das Bring-In sein").  Its third
  card must come down; dealt up it is ``EXPOSED_CARD`` (A) only, not also
  ``CARD_FACE``.  An exposure after the seat's third card is not "bei der
  ersten Ausgabe" and changes nothing.
* ``EXPOSED_CARD`` (B): a ``card_exposed`` on 7th street while two or more
  live players are not all-in ("wenn noch Bet-Einsätze in dieser Hand möglich
  sind") needs one more 7th-street card to that seat before the next
  ``player_action`` or the end of the round; that replacement is in order.
  A 7th-street card *dealt* face up is ``CARD_FACE``.
* A card to a dead hand on 4th street or later is ``CARD_TO_DEAD_HAND`` ("Auf
  der 4th Street werden keine Karten an eine Hand ausgeteilt, die nicht mehr im
  Spiel ist") and neither ``DEAL_ORDER`` nor ``MISDEAL``: one fault, one finding.
* 3rd street goes to the seats that posted an ante (an absent player's seat
  is dealt in, then its cards are "gepasst", 004 C); with no ante recorded, to
  the occupied seats.  A burn counts for the street only if no other card
  follows it, and a ``reshuffle`` needs a burn after it ("Der neue Stapel wird
  abgehoben, eine Burn-Karte gelegt").
* 7th street: the first to act is judged on the 6th-street up cards of the
  seats still live (004 H D), so if that seat folded on 6th the next best
  showing hand acts first.
* ``SHORT_DECK_PROCEDURE`` compares what the dealer did before the first
  7th-street action with the branch the stack called for, normal dealing
  included (a reshuffle or community card from a big enough stack is
  "anything else" too).  A reshuffle must add the 3 burns ("mit den 3
  vorherigen Burn-Karten") and, when it gives ``card_count``, hold exactly the
  stack plus 3.  ``MISDEAL`` holdings follow the form the dealer chose (a
  community card, or one card per live seat), so a wrong branch is one finding.
* ``FOURTH_STREET_DOUBLE``: a ``bet`` of ``big_bet`` on 4th street while any
  live seat shows a pair ("wenn ein Paar gezeigt wird").
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, Iterable, TypedDict, Unpack

import msgspec

from pitwatch.rules.finding import ref
from pitwatch.rules.game import seat_of
from pitwatch.rules.state import Ref
from pitwatch.rules.stud_showing import (
    ALL_CARDS,
    BRANCH_WORDS,
    UNDECIDED,
    bring_in_seat,
    first_to_act_seat,
    short_deck_branch,
    short_deck_followed,
)
from pitwatch.rules.words import amount, place, places
from pitwatch.rules.words import cards as n_cards
from pitwatch.rules.words import street as street_name
from pitwatch.wording import plural

if TYPE_CHECKING:
    from pitwatch.schemas.events import Event

_FACE_ON_STREET = {4: "up", 5: "up", 6: "up", 7: "down"}  # expected_face after 3rd street
_only = functools.lru_cache(maxsize=256)(lambda seat: (f"seat:{seat}",))  # allowed_targets: that seat only


# --- the round's records ----------------------------------------------------------
class UpCard(msgspec.Struct, array_like=True, gc=False):
    """A card a seat shows: the ``street`` it was dealt (or exposed) on, the ``card`` (None:
    unreadable) and its evidence."""

    street: int
    card: str | None
    ref: Ref


class Reshuffle(msgspec.Struct, array_like=True, gc=False):
    """A ``reshuffle`` before 7th street: the burns it added back and the cards of the new stack."""

    burns_added: int
    card_count: int


class SeventhStreet(msgspec.Struct, gc=False):
    """7th street as the dealer began it: the ``stack`` left (None: unknown), the ``live`` seats
    then, the reshuffles made, whether the branch of 004 H has been ``judged``, and the evidence
    of the dealer's 7th-street events (cards, reshuffles, exposed cards)."""

    stack: int | None = None
    live: int = 0
    reshuffles: list[Reshuffle] = msgspec.field(default_factory=list)
    judged: bool = False
    events: list[Ref] = msgspec.field(default_factory=list)


class StudHandState(msgspec.Struct, gc=False):
    """One stud, stud8 or razz hand as the dealing goes (the round's state, ``rnd.game_state``).

    ``game`` is None until the hand is begun (:func:`new_hand_state`).  Seats are ints; the maps
    are keyed by ``str(seat)`` / ``str(street)``: ``count`` street -> seat -> cards dealt to the
    seat on that street; ``up`` seat -> the cards it shows; ``street_live`` street -> the live
    seats dealt that street; ``replaced`` / ``dead_cards`` seat -> cards replacing an exposed
    7th-street card / cards dealt to its dead hand; ``dead_refs`` / ``exposed_refs`` seat -> the
    evidence of its fold or absence / of its exposed card.  ``known``: every card seen (a single
    deck: what an unreadable card cannot be); ``expected``: the seats still owed a card on
    ``street``; ``acted``: the streets whose first action was judged; ``fired``: rules raised
    (once per round)."""

    game: str | None = None
    small_bet: float | None = None
    big_bet: float | None = None
    occupied: list[int] = msgspec.field(default_factory=list)
    decks: int | None = 1
    pack_id: str | None = None
    cards_left: int | None = None
    antes: list[int] = msgspec.field(default_factory=list)
    all_in: list[int] = msgspec.field(default_factory=list)
    ante_all_in: list[int] = msgspec.field(default_factory=list)
    absent: list[int] = msgspec.field(default_factory=list)
    folded: list[int] = msgspec.field(default_factory=list)
    dealt_in: list[int] = msgspec.field(default_factory=list)
    count: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)
    up: dict[str, list[UpCard]] = msgspec.field(default_factory=dict)
    exposed_third: list[int] = msgspec.field(default_factory=list)
    known: list[str] = msgspec.field(default_factory=list)
    street: int | None = None
    burned: bool = False
    expected: list[int] = msgspec.field(default_factory=list)
    acted: list[int] = msgspec.field(default_factory=list)
    replacement_due: int | None = None
    replaced: dict[str, int] = msgspec.field(default_factory=dict)
    dead_cards: dict[str, int] = msgspec.field(default_factory=dict)
    seventh: SeventhStreet | None = None
    street_live: dict[str, list[int]] = msgspec.field(default_factory=dict)
    community: int = 0
    ended: bool = False
    fired: list[str] = msgspec.field(default_factory=list)
    dead_refs: dict[str, Ref] = msgspec.field(default_factory=dict)
    exposed_refs: dict[str, Ref] = msgspec.field(default_factory=dict)


class HandFinding(TypedDict):
    """A finding as :attr:`StudHand.findings` collects it (the plug-in emits it)."""

    rule_id: str
    expected: str
    actual: str
    evidence: list[Ref]
    seat: int | None


class _HandOptions(TypedDict, total=False):
    """:func:`new_hand_state`'s keyword arguments (what :meth:`StudHand.start` passes on)."""

    small_bet: float | None
    big_bet: float | None
    seats: Iterable[int]
    pack_id: str | None
    cards_left: int | None
    decks: int | None


def new_hand_state(game: str, *, small_bet: float | None = None, big_bet: float | None = None,
                   seats: Iterable[int] = (),
                   pack_id: str | None = None, cards_left: int | None = None,
                   decks: int | None = 1) -> StudHandState:
    """The state of a hand about to be dealt."""
    return StudHandState(
        game=game, small_bet=None if small_bet is None else float(small_bet),
        big_bet=None if big_bet is None else float(big_bet), occupied=sorted(set(seats)),
        decks=decks, pack_id=pack_id, cards_left=cards_left)


class StudHand:
    """A view over one round's :class:`StudHandState` (see the module docstring)."""

    def __init__(self, state: StudHandState, shared_checks: bool = False) -> None:
        self.s = state
        self.shared_checks = shared_checks
        self.findings: list[HandFinding] = []
        self.undecided: set[str] = set()

    @classmethod
    def start(cls, game: str, shared_checks: bool = True, **kwargs: Unpack[_HandOptions]) -> "StudHand":
        return cls(new_hand_state(game, **kwargs), shared_checks)

    # --- reading the state ---------------------------------------------------------
    def live_seats(self) -> list[int]:
        s = self.s
        absent, folded = s.absent, s.folded
        return [x for x in sorted(s.dealt_in) if x not in absent and x not in folded]

    def dealt(self, street: int | None, seat: int) -> int:
        return self.s.count.get(str(street), {}).get(str(seat), 0)

    def _up_cards(self, through: int) -> dict[int, list[str | None]]:
        up, hands = self.s.up, {}
        for x in self.live_seats():  # a loop, not nested comprehensions: asked on every first action
            shown = up.get(str(x))
            hands[x] = [u.card for u in shown if u.street <= through] if shown else []
        return hands

    def _up_refs(self, seats: Iterable[int | None], through: int) -> list[Ref]:
        return [u.ref for x in seats if x is not None for u in self.s.up.get(str(x), []) if u.street <= through]

    def _unseen(self) -> frozenset[str]:
        return ALL_CARDS - set(self.s.known) if self.s.decks == 1 else ALL_CARDS

    def _fire(self, rule_id: str, expected: str, actual: str, evidence: Iterable[Ref], seat: int | None = None) -> None:
        if rule_id not in self.s.fired:  # at most once per round
            self.s.fired.append(rule_id)
            self.findings.append({"rule_id": rule_id, "expected": expected, "actual": actual,
                                  "evidence": list(evidence), "seat": seat})

    def _undecided(self, rule_id: str) -> None:
        self.undecided.add(rule_id)

    def _street_order(self, street: int | None) -> list[int]:
        if street == 3:
            return sorted(self.s.antes) * 3 or self.s.occupied * 3
        return self.live_seats()

    # --- what the procedure wants of the next card (asked before it is applied) ----
    def _to_dead_hand(self, seat: int | None, street: int | None) -> bool:
        """A card to ``seat`` (``seat_of`` its target) on ``street`` goes to a dead hand."""
        s = self.s  # a dead hand: absent or folded (asked up to three times a card)
        return seat is not None and (street or 0) >= 4 and (seat in s.absent or seat in s.folded)

    def _replacement(self, seat: int | None, street: int | None) -> bool:
        """A card to ``seat`` on ``street`` replaces its exposed 7th-street card (004 B)."""
        return street == 7 and seat is not None and self.s.replacement_due == seat and self.dealt(7, seat) > 0

    def allowed_targets(self, ev: Event) -> tuple[str, ...] | None:
        """Targets the card ``ev`` may go to (``DEAL_ORDER``); None: not checked."""
        target, street, seat = ev.target, ev.street, seat_of(ev.target)
        if ev.type != "card_dealt" or target == "burn" or self._to_dead_hand(seat, street) \
                or self._replacement(seat, street):
            return None
        if target == "community" and street == 7:
            return None  # SHORT_DECK_PROCEDURE judges community cards
        s = self.s
        if street == 3 and not s.antes and not s.occupied:
            return None
        expected = s.expected if street == s.street else self._street_order(street)
        return _only(expected[0]) if expected else ()

    def expected_face(self, ev: Event) -> str | None:
        """``up`` / ``down`` for the card ``ev`` (``CARD_FACE``); None: not checked."""
        seat, street = seat_of(ev.target), ev.street
        if ev.type != "card_dealt" or seat is None or self._to_dead_hand(seat, street):
            return None
        if street == 3:
            third = self.dealt(3, seat) == 2
            if third and seat in self.s.exposed_third:
                return None  # EXPOSED_CARD (A)
            return "up" if third else "down"
        return _FACE_ON_STREET.get(street)

    def expected_holdings(self) -> dict[str, int]:
        """Cards each position must hold at the end (``MISDEAL``): see the module docstring."""
        want: dict[str, int] = {}
        for street, live in self.s.street_live.items():
            if street == "3" and not live:  # nobody known to be in the hand: take who was dealt in
                live = self.s.dealt_in
            if street == "7" and self.s.community:
                want["community"] = 1
                continue
            for x in live:
                want[f"seat:{x}"] = want.get(f"seat:{x}", 0) + (3 if street == "3" else 1)
        for seat_key, n in self.s.replaced.items():
            want[f"seat:{seat_key}"] = want.get(f"seat:{seat_key}", 0) + n
        return want

    def holdings_excluded(self) -> dict[str, int]:
        """Cards already reported as ``CARD_TO_DEAD_HAND``, left out of ``MISDEAL``."""
        return {f"seat:{x}": n for x, n in self.s.dead_cards.items()}

    # --- events ----------------------------------------------------------------------
    def feed(self, ev: Event, cards_left: int | None = None) -> None:
        """Take the round's next dealer event (``cards_left``: override the stack count)."""
        if cards_left is not None:
            self.s.cards_left = cards_left
        handler = _HANDLERS.get(ev.type)
        if handler is None or self.s.ended:
            return
        if self.shared_checks and ev.type == "card_dealt":
            allowed = self.allowed_targets(ev)
            if allowed is not None and ev.target not in allowed:
                self._fire("DEAL_ORDER", f"on {street_name(ev.street)} the next card should go to {places(allowed)}"
                           if allowed else f"no further card on {street_name(ev.street)}",
                           f"it went to {place(ev.target)}", [ref(ev)], seat_of(ev.target))
            face = self.expected_face(ev)
            if face is not None and ev.face != face:
                self._fire("CARD_FACE", f"on {street_name(ev.street)} the card to {place(ev.target)} should be "
                           f"dealt face {face}", f"it was dealt face {ev.face}", [ref(ev)], seat_of(ev.target))
        handler(self, ev)

    def _add(self, key: str, seat: int | None) -> None:
        seats: list[int] = getattr(self.s, key)     # one of the state's seat lists
        if seat is not None and seat not in seats:
            seats.append(seat)

    def _on_bet_placed(self, ev: Event) -> None:
        if ev.spot == "ante":
            self._add("antes", ev.seat)
            if ev.all_in:
                self._add("ante_all_in", ev.seat)
                self._add("all_in", ev.seat)

    def _on_player_absent(self, ev: Event) -> None:
        self._add("absent", ev.seat)
        self.s.dead_refs.setdefault(str(ev.seat), ref(ev))

    def _on_reshuffle(self, ev: Event) -> None:
        self._begin_seventh(ev).reshuffles.append(Reshuffle(ev.burns_added, ev.card_count))
        self.s.pack_id, self.s.cards_left, self.s.burned = ev.pack_id, ev.card_count, False

    def _on_card_dealt(self, ev: Event) -> None:
        s, street, target, card = self.s, ev.street, ev.target, ev.card
        seat = seat_of(target)
        if street == 7:
            self._begin_seventh(ev)
        if s.cards_left is not None and ev.pack_id in (None, s.pack_id):
            s.cards_left -= 1
        if card and card not in s.known:
            s.known.append(card)
        if target == "burn":
            s.burned = True
            return
        if street != s.street:
            self._begin_street(ev)
        s.burned = False
        if target == "community" and street == 7:
            s.community += 1
            return
        if seat is None:
            return
        if self._to_dead_hand(seat, street):
            why = "the player was absent" if seat in s.absent else "the player folded"
            s.dead_cards[str(seat)] = s.dead_cards.get(str(seat), 0) + 1
            self._fire("CARD_TO_DEAD_HAND", f"no card to seat {seat}: its hand is dead ({why})",
                       f"seat {seat} was dealt a card on {street_name(street)}", [ref(ev), s.dead_refs[str(seat)]],
                       seat)
            return
        if self._replacement(seat, street):
            s.replacement_due = None  # 004 B: the exposed card is replaced
            s.replaced[str(seat)] = s.replaced.get(str(seat), 0) + 1
            return
        key, face = str(seat), ev.face  # the seat's key in the state's dicts
        if street == 3 and seat in s.exposed_third and self.dealt(3, seat) == 2 and face == "up":
            self._fire("EXPOSED_CARD", f"seat {seat}'s exposed down card counts as its up card, and its third "
                       "card on 3rd street is dealt down", "the third card was dealt face up",
                       [s.exposed_refs[key], ref(ev)], seat)
        expected = s.expected
        if expected and expected[0] == seat:
            expected.pop(0)
        elif seat in expected:
            expected.remove(seat)
        if street == 3:
            self._add("dealt_in", seat)
        counts = s.count.setdefault(str(street), {})
        counts[key] = counts.get(key, 0) + 1
        if face == "up" and street is not None and street <= 6:
            s.up.setdefault(key, []).append(UpCard(street, card, ref(ev)))

    def _begin_street(self, ev: Event) -> None:
        s, street = self.s, ev.street
        s.street = street
        if not s.burned:
            self._fire("BURN_SKIPPED", f"a burn before the first card of {street_name(street)}",
                       f"{street_name(street)} began with a card to {place(ev.target)} and no burn", [ref(ev)])
        s.expected = self._street_order(street)
        s.street_live[str(street)] = sorted(set(s.expected))
        if street == 7 and ev.target == "community":
            s.street_live["7"] = []

    def _on_card_exposed(self, ev: Event) -> None:
        s, seat = self.s, seat_of(ev.target)
        if seat is None:
            return
        if ev.card and ev.card not in s.known:
            s.known.append(ev.card)
        if ev.street == 3 and self.dealt(3, seat) < 3 and seat not in s.exposed_third:
            s.exposed_third.append(seat)
            s.exposed_refs[str(seat)] = ref(ev)
            s.up.setdefault(str(seat), []).append(UpCard(3, ev.card, ref(ev)))
        elif ev.street == 7:
            if s.seventh is not None:
                s.seventh.events.append(ref(ev))
            if len([x for x in self.live_seats() if x not in s.all_in]) >= 2:
                s.replacement_due = seat
                s.exposed_refs[str(seat)] = ref(ev)

    def _on_player_action(self, ev: Event) -> None:
        self._replacement_due(ev, "the next action")
        s, street = self.s, ev.street
        if street == 7 and s.seventh is not None and not s.seventh.judged:
            self._judge_seventh(ev)
        if street is not None and street not in s.acted:
            s.acted.append(street)
            self._check_first_action(ev)
        if street == 4 and ev.action == "bet":
            self._check_fourth_street_double(ev)
        if ev.action == "fold":
            self._add("folded", ev.seat)
            s.dead_refs.setdefault(str(ev.seat), ref(ev))
        if ev.all_in:
            self._add("all_in", ev.seat)

    def _on_round_ended(self, ev: Event) -> None:
        self._replacement_due(ev, "the end of the round")
        if self.s.seventh is not None and not self.s.seventh.judged:
            self._judge_seventh(ev)
        self.s.ended = True

    _on_round_voided = _on_round_ended

    def _replacement_due(self, ev: Event, before: str) -> None:
        seat = self.s.replacement_due
        if seat is not None:
            self._fire("EXPOSED_CARD", f"seat {seat}'s exposed card on 7th street replaced while betting "
                       "is still possible", f"no replacement card came before {before}",
                       [self.s.exposed_refs[str(seat)], ref(ev)], seat)
            self.s.replacement_due = None

    # --- first action on each street --------------------------------------------------
    def _check_first_action(self, ev: Event) -> None:
        street, seat = ev.street, ev.seat
        if not 3 <= street <= 7:
            return
        # a seat missing an up card (a misdeal) is judged as if that card were unreadable
        hands = self._up_cards(min(street, 6))
        width = max(map(len, hands.values()), default=0) or 1
        unknown = False
        for cards in hands.values():  # padded in place: _up_cards made the lists
            if len(cards) < width:
                cards += [None] * (width - len(cards))
            unknown = unknown or None in cards
        unseen = self._unseen() if unknown else ()  # () if unused
        if street == 3:
            rule, what, pick, all_in = "BRING_IN", "the bring-in should be made", bring_in_seat, self.s.ante_all_in
        else:
            rule, what, pick, all_in = "FIRST_TO_ACT", "the first action should be", first_to_act_seat, self.s.all_in
        game = self.s.game
        assert game is not None, "a hand's first actions are judged once it began (game known)"
        right = pick(game, hands, all_in, unseen)
        if right is UNDECIDED:
            self._undecided(rule)
        elif right is not None and right != seat:
            assert isinstance(right, int)      # a seat: UNDECIDED and None are handled above
            shown = ", ".join(f"seat {x} {' '.join(c or '(unreadable)' for c in cs)}" for x, cs in sorted(hands.items()))
            action = (ev.action or "an action").replace("_", "-")
            self._fire(rule, f"on {street_name(street)} {what} by seat {right}, given the up cards ({shown})",
                       f"seat {seat} acted first, with a {action}" if ev.action else f"seat {seat} acted first",
                       [ref(ev)] + self._up_refs([seat, right], min(street, 6)), seat)

    def _check_fourth_street_double(self, ev: Event) -> None:
        big = self.s.big_bet
        if big is None or ev.amount is None or abs(float(ev.amount) - big) > 0.005:
            return
        pairs, maybe = [], False
        for seat, cards in self._up_cards(4).items():
            known = [c[0] for c in cards if c]
            if len(set(known)) < len(known):
                pairs.append(seat)
            elif len(known) < len(cards) and len(cards) >= 2:
                maybe = True
        if pairs:
            self._fire("FOURTH_STREET_DOUBLE", f"no double bet on 4th street while seat {pairs[0]} shows a "
                       "pair", f"seat {ev.seat} bet {amount(ev.amount)}, the big bet",
                       [ref(ev)] + self._up_refs(pairs[:1], 4), ev.seat)
        elif maybe:
            self._undecided("FOURTH_STREET_DOUBLE")

    # --- 7th street from a short stack -------------------------------------------------
    def _begin_seventh(self, ev: Event) -> SeventhStreet:
        s = self.s
        if s.seventh is None:
            s.seventh = SeventhStreet(stack=s.cards_left, live=len(self.live_seats()))
        s.seventh.events.append(ref(ev))
        return s.seventh

    def _judge_seventh(self, ev: Event) -> None:
        s, sv = self.s, self.s.seventh
        assert sv is not None, "judged only once 7th street began (both callers check)"
        sv.judged = True
        stack = sv.stack
        if stack is None:
            self._undecided("SHORT_DECK_PROCEDURE")
            return
        branch = short_deck_branch(stack, sv.live)
        reshuffles, community = sv.reshuffles, s.community
        seat_cards = sum(s.count.get("7", {}).values())
        done = [(r.burns_added, r.card_count) for r in reshuffles]
        if not short_deck_followed(branch, stack, done, community, seat_cards):
            shuffles = " and ".join(f"a reshuffle of {n_cards(n)} adding {plural(b, 'burn')}" for b, n in done)
            self._fire("SHORT_DECK_PROCEDURE",
                       f"with {n_cards(stack)} left for {plural(sv.live, 'live seat')} ({sv.live + 2} "
                       f"needed), the dealer should {BRANCH_WORDS[branch]}",
                       f"the dealer made {shuffles or 'no reshuffle'} and dealt "
                       f"{plural(community, 'community card') if community else 'no community card'} "
                       f"and {n_cards(seat_cards)} to seats", sv.events + [ref(ev)])


_HANDLERS: dict[str, Callable[[StudHand, Event], None]] = {  # feed's, by type
    name[4:]: fn for name, fn in vars(StudHand).items() if name.startswith("_on_")}
