"""Limit betting in seven-card stud (tournament), and who must act first (document 004 D, E).

Amounts follow the user's example floor (``tests/data/clean-floor-2h.jsonl.gz``): ``bring_in`` and ``bet`` the
size, ``call`` the chips needed to match, ``complete`` the chips that make
the bring-in a full small bet, ``raise`` the size of the raise.  A player
whose chips do not cover a call calls all-in (``all_in: true``).  Four bets
make a cap.  Clean play never bets the big bet on 4th street (004 F).
"""
from __future__ import annotations

from pitwatch.simulator.poker import best_showing, bring_in_card_key


class Seat:
    __slots__ = ("seat", "stack", "up", "down", "live", "all_in", "absent", "exposed")

    def __init__(self, seat: int, stack: int):
        self.seat = seat
        self.stack = stack
        self.up: list[str] = []
        self.down: list[str] = []
        self.live = True
        self.all_in = False
        self.absent = False
        self.exposed = None


def left_of(order: list[int], seat: int, ok) -> int | None:
    """The first seat after ``seat`` (ascending, wrapping) satisfying ``ok``."""
    i = order.index(seat)
    for k in range(1, len(order) + 1):
        s = order[(i + k) % len(order)]
        if ok(s):
            return s
    return None


def bring_in_seat(order, up_of: dict, live: set, all_in: set, razz: bool) -> int | None:
    cands = [s for s in order if s in live]
    if not cands:
        return None
    best = min(cands, key=lambda s: min(bring_in_card_key(c, razz) for c in up_of[s]))
    if best in all_in:
        return left_of(order, best, lambda s: s in live and s not in all_in)
    return best


def first_to_act(order, boards: dict, all_in: set, razz: bool, standard: bool = False) -> int | None:
    best = best_showing(boards, razz, standard)
    if best is not None and best in all_in:
        return left_of(order, best, lambda s: s in boards and s not in all_in)
    return best


class Betting:
    """One street of limit betting; emits through ``act(seat, action, amount, all_in)``."""

    def __init__(self, table, seats: dict[int, Seat], order: list[int], size: int, act):
        self.table = table
        self.seats = seats
        self.order = order
        self.size = size
        self.act = act
        self.rng = table.rng

    def active(self) -> list[int]:
        return [s for s in self.order if self.seats[s].live and not self.seats[s].all_in]

    def run(self, first: int, street: int, bring: int = 0, force_checks_until: int | None = None,
            big_bet_by: int | None = None, never_folds: int | None = None, folds_first: int | None = None) -> None:
        seats, rng = self.seats, self.rng
        actors = self.active()
        if len(actors) < 2 or first not in actors:
            return
        i = actors.index(first)
        ring = actors[i:] + actors[:i]
        contrib = {s: 0 for s in ring}
        level = 0
        bets = 0
        completed = False
        to_act = list(ring)
        if bring:
            s = ring[0]
            self._put(s, "bring_in", bring, contrib, bring, street)
            level = bring
            to_act = ring[1:] + [s]
        while to_act:
            s = to_act.pop(0)
            st = seats[s]
            if not st.live or st.all_in:
                continue
            if sum(1 for x in ring if seats[x].live) < 2:
                return
            owe = level - contrib[s]
            r = rng.random()
            if owe == 0 and street == 3 and level > 0 and not completed:
                continue  # everyone just called the bring-in: no option
            if folds_first == s:
                folds_first = None
                self.act(s, "fold", None, False, street)
                st.live = False
                continue
            if owe == 0 and (level == 0 or street > 3 or completed):
                if big_bet_by is not None and s == big_bet_by:
                    action, amount = "bet", self.table.big_bet
                elif force_checks_until is not None or r < 0.6 or level > 0:
                    action, amount = "check", None
                else:
                    action, amount = "bet", self.size
                if action == "check":
                    self.act(s, "check", None, False, street)
                    continue
                self._put(s, "bet", amount, contrib, amount, street)
                level, bets = amount, 1
                force_checks_until = None
                to_act = [x for x in ring[ring.index(s) + 1:] + ring[:ring.index(s)]]
                continue
            if street == 3 and not completed and level == bring:
                choice = "fold" if r < 0.12 else ("call" if r < 0.75 else "complete")
            else:
                choice = "fold" if r < 0.07 else ("call" if r < 0.88 or bets >= 4 else "raise")
            if choice == "fold" and (s == never_folds or owe == 0):
                choice = "call"
            if choice != "fold" and st.stack <= owe:
                self._put(s, "call", st.stack, contrib, None, street)
                continue
            if choice == "fold":
                self.act(s, "fold", None, False, street)
                st.live = False
                continue
            if choice == "call":
                self._put(s, "call", owe, contrib, None, street)
                continue
            new_level = self.size if choice == "complete" else level + self.size
            need = new_level - contrib[s]
            if st.stack <= need:
                self._put(s, "call", min(owe, st.stack), contrib, None, street)
                continue
            self._put(s, choice, need if choice == "complete" else self.size, contrib, need, street)
            level = new_level
            bets += 1
            completed = True
            to_act = [x for x in ring[ring.index(s) + 1:] + ring[:ring.index(s)]]

    def _put(self, s: int, action: str, amount: int, contrib: dict, chips: int | None, street: int) -> None:
        st = self.seats[s]
        chips = amount if chips is None else chips
        chips = min(chips, st.stack)
        st.stack -= chips
        contrib[s] += chips
        all_in = st.stack == 0
        if all_in:
            st.all_in = True
        self.table.pot += chips
        self.act(s, action, amount if action != "call" else chips, all_in, street)
