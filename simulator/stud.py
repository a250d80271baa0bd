"""Seven-card stud, stud hi-lo (stud8) and razz tournaments, by document 004.

One single-deck pack per hand, shuffled by the deck machine (or by hand),
dealt by hand (no shoe).  Antes (a short stack may be all-in with its ante);
3rd street: burn, two cards down and one up to every seat in the hand, one
per pass, ascending (an absent player's seat is dealt in, then its hand is
dead: ``player_absent``); the bring-in is the lowest up card (razz: the
highest, ace low), suit breaking ties, or the next seat to its left when that
seat is all-in with its ante.  4th-6th: burn, one up card to each live seat;
the best showing hand acts first (:mod:`pitwatch.simulator.stud_betting`).
7th: burn, one down card, unless the stack is short (004 H): required =
live seats + 2; (A) reshuffle the stack with the 4th-6th burns, burn, one card
each; (B) burn, one ``community`` card face up; (C) reshuffle, burn, one
community card.  The first to act on 6th acts first on 7th.

Exposed cards: a 3rd-street down card exposed becomes the up card and the
third card is dealt down (004 A); a 7th-street card exposed while betting is
possible is replaced at the end of the pass (004 B).

Readings (see the module docstrings of ``poker`` and ``stud_betting`` too):
the fault "3rd-street exposure still dealt up" makes the exposing seat fold
at once and is only injected where its two up cards cannot change the
bring-in; an absent seat is never the bring-in under either reading (dead
hands counted or not); in razz, boards where the text's order and the usual
lowball order would pick different first actors are avoided by reordering
undrawn cards; the card-to-dead-hand fault deals the dead seat in its place
in the ascending pass (as a dealer does by habit), which keeps the live seats
in order: ``CARD_TO_DEAD_HAND`` only.  Stud has no ``MISDEAL`` fault (rules.md gives no
stud card counts).
"""
from __future__ import annotations

from pitwatch.simulator.cards import DECK, Pack
from pitwatch.simulator.clock import MINUTE, SECOND
from pitwatch.simulator.faults import STUD, injects
from pitwatch.simulator.packs import PackPrep, emit_shuffle, offer_pack_faults
from pitwatch.simulator.stud_betting import Betting, Seat, bring_in_seat, first_to_act, left_of
from pitwatch.simulator.table import TableSim

LEVELS = ((400, 800, 50, 100), (600, 1200, 100, 150), (800, 1600, 100, 200), (1000, 2000, 150, 250))
ROUND_FAULTS = ("BURN_SKIPPED", "DEAL_ORDER", "CARD_FACE", "EXPOSED_CARD", "CARD_TO_DEAD_HAND", "BRING_IN",
                "FIRST_TO_ACT", "FOURTH_STREET_DOUBLE", "SHORT_DECK_PROCEDURE")


class Hand:
    """The plan of one hand, with the faults armed for it."""

    def __init__(self, rid: str):
        self.rid = rid
        self.burns: list[str] = []
        self.first6: int | None = None
        self.skip_burn = self.swap4 = self.face6 = self.exposed_a = self.exposed_b = False
        self.dead_card = self.wrong_bring_in = self.double4 = self.short_wrong = False
        self.wrong_first = 0


class Stud(TableSim):
    game = "stud"
    razz = False
    decks = 1
    max_seat = 8
    min_players = 6
    max_players = 8
    rounds_per_hour = 30.0
    speed = 0.3

    def __init__(self, cfg):
        super().__init__(cfg)
        self.machine = cfg.shuffler
        self.stacks: dict[int, int] = {}
        self.level = 0
        self.next_level = self.t + 40 * MINUTE
        self.prev_order = None
        self.pot = 0

    def on_seated(self, seat: int) -> None:
        r = self.rng.random()
        self.stacks[seat] = 30 + int(r * 300) if r < 0.04 else 2000 + int(self.rng.random() * 28000)

    def on_left(self, seat: int) -> None:
        self.stacks.pop(seat, None)

    def leave_rate(self) -> float:
        return 0.02

    def join_rate(self) -> float:
        return 0.3  # tournament tables are kept full

    def between_rounds(self) -> None:
        for s in [s for s in self.seated if self.stacks.get(s, 0) <= 0]:
            self.unseat_player(s)
        super().between_rounds()
        while len(self.seated) < self.min_players:
            self.seat_player()

    # ------------------------------------------------------------- cards
    def deal(self, h: Hand, target: str, face: str, street: int) -> str:
        card = self.pack.draw()
        self.dealer("card_dealt", f',"pack_id":"{self.pid}","round_id":"{h.rid}","target":"{target}","face":"{face}",'
                    f'"card":"{card}","street":{street}', 500, 1400)
        return card

    def burn(self, h: Hand, street: int) -> str:
        card = self.pack.draw()
        self.dealer("card_dealt", f',"pack_id":"{self.pid}","round_id":"{h.rid}","target":"burn","face":"down",'
                    f'"card":null,"street":{street}', 500, 1400)
        return card

    def act(self, h: Hand):
        def emit(seat, action, amount, all_in, street):
            a = f',"amount":{amount}' if amount is not None else ""
            x = ',"all_in":true' if all_in else ""
            self.dealer("player_action", f',"round_id":"{h.rid}","seat":{seat},"action":"{action}"{a}{x},'
                        f'"street":{street}', 2 * SECOND, 9 * SECOND)
        return emit

    # ------------------------------------------------------------- a hand
    def play_round(self) -> None:
        rng = self.rng
        self.maybe_seq_gap()
        self.faults.begin_pack()
        if self.t >= self.next_level and self.level < len(LEVELS) - 1:
            self.level += 1
            self.next_level = self.t + 40 * MINUTE
        small, big, ante, bring = LEVELS[self.level]
        self.small, self.big_bet = small, big
        order = list(self.seated)
        pid = self.new_pack_id(3)
        rid = self.start_round_ids(3, "H")   # after its pack: with reuse_ids, rounds are numbered per pack
        by_hand = rng.random() < 0.06
        copy = self.prev_order if len(order) >= 4 else None
        prep = PackPrep(pid, Pack.shuffled(1, rng), 1, has_checker=not by_hand,
                        run_at=1 if len(order) >= 3 else None, copy_from=copy, spare=46 - 7 * len(order))
        h = Hand(rid)
        if self.faults:
            offer_pack_faults(self, prep)
            self.faults.inject(ROUND_FAULTS, h)
        self.pack, self.pid = prep.pack, pid
        emit_shuffle(self, prep, None if by_hand else self.machine, "hand" if by_hand else "machine",
                     lead=(5000, 30000))
        self.dealer("round_started", f',"pack_id":"{pid}","round_id":"{rid}","game":"{self.game}",'
                    f'"small_bet":{small},"big_bet":{big}', 5 * SECOND, 15 * SECOND)
        seats = {s: Seat(s, self.stacks[s]) for s in order}
        self.pot = 0
        for s in order:
            st = seats[s]
            amount = min(ante, st.stack)
            st.stack -= amount
            self.pot += amount
            st.all_in = st.stack == 0
            x = ',"all_in":true' if st.all_in else ""
            self.dealer("bet_placed", f',"round_id":"{rid}","seat":{s},"spot":"ante","amount":{amount}{x}', 1000, 3000)
        self.third_street(h, seats, order, bring)
        for street in (4, 5, 6):
            if sum(1 for s in order if seats[s].live) < 2:
                break
            self.street(h, seats, order, street)
        if sum(1 for s in order if seats[s].live) >= 2:
            self.seventh(h, seats, order)
        live = [s for s in order if seats[s].live] or order
        seats[live[int(rng.random() * len(live))]].stack += self.pot
        for s in order:
            self.stacks[s] = seats[s].stack
        self.dealer("round_ended", f',"round_id":"{rid}"', 8 * SECOND, 30 * SECOND)
        clean = not self.faults.round_busy and len(prep.pack) == 52
        self.prev_order = prep.pack.cards if clean and len(order) >= 4 else None

    def third_street(self, h: Hand, seats: dict, order: list, bring: int) -> None:
        rng, pack, razz = self.rng, self.pack, self.razz
        if h.skip_burn:
            self.faults.fire("BURN_SKIPPED", "third_street", [("BURN_SKIPPED", {"round_id": h.rid})])
        else:
            self.burn(h, 3)
        n = len(order)
        base = pack.pos
        cards = {s: [pack.cards[base + p * n + i] for p in range(3)] for i, s in enumerate(order)}
        all_in = {s for s in order if seats[s].all_in}
        live = set(order)
        up_of = {s: [cards[s][2]] for s in order}
        exposed, x, xp = None, None, 0
        if h.exposed_a:
            x = order[int(self.faults.rng.random() * n)]
            xp = int(self.faults.rng.random() * 2)
            readings = [bring_in_seat(order, {**up_of, x: ups}, live, all_in, razz)
                        for ups in ([cards[x][xp]], [cards[x][2]], [cards[x][xp], cards[x][2]])]
            if x in all_in or len(set(readings)) != 1 or readings[0] == x:
                h.exposed_a, x = False, None
            else:
                exposed = "A"
                up_of[x] = [cards[x][xp], cards[x][2]]
        elif rng.random() < 0.02:
            x, xp, exposed = order[int(rng.random() * n)], int(rng.random() * 2), "clean"
            up_of[x] = [cards[x][xp]]
        for p in range(3):
            for s in order:
                face = "up" if p == 2 and not (s == x and exposed == "clean") else "down"
                c = self.deal(h, f"seat:{s}", face, 3)
                (seats[s].up if face == "up" else seats[s].down).append(c)
                if s == x and p == xp:
                    self.dealer("card_exposed", f',"round_id":"{h.rid}","target":"seat:{s}","card":"{c}","street":3',
                                1000, 3000)
                    seats[s].down.remove(c)
                    seats[s].up.insert(0, c)
        if exposed == "A":
            self.faults.fire("EXPOSED_CARD", "third_card_still_up", [("EXPOSED_CARD", {"round_id": h.rid})])
        if exposed is None and n >= 4 and rng.random() < 0.03:
            a = order[int(rng.random() * n)]
            with_a = bring_in_seat(order, up_of, live, all_in, razz)
            without = bring_in_seat(order, up_of, live - {a}, all_in, razz)
            if with_a == without and with_a != a:
                self.dealer("player_absent", f',"round_id":"{h.rid}","seat":{a}', 1500, 4000)
                seats[a].live, seats[a].absent = False, True
                live.discard(a)
        first = bring_in_seat(order, up_of, live, all_in, razz)
        if first is None:
            return
        if h.wrong_bring_in:
            others = [s for s in order if s in live and s not in all_in and s != first]
            if others:
                first = others[int(self.faults.rng.random() * len(others))]
                self.faults.fire("BRING_IN", "wrong_seat", [("BRING_IN", {"round_id": h.rid})])
        self.t += 2 * SECOND
        Betting(self, seats, order, self.small, self.act(h)).run(first, 3, bring=bring,
                                                                 folds_first=x if exposed == "A" else None)

    def boards_first(self, boards: dict, order, all_in) -> tuple:
        """First to act under the rule text and, for razz, under the usual lowball order."""
        text = first_to_act(order, boards, all_in, self.razz)
        std = first_to_act(order, boards, all_in, self.razz, standard=True) if self.razz else text
        return text, std

    def street(self, h: Hand, seats: dict, order: list, n: int) -> None:
        fr = self.faults.rng
        pack = self.pack
        live = [s for s in order if seats[s].live]
        all_in = {s for s in live if seats[s].all_in}
        h.burns.append(self.burn(h, n))
        recipients = list(live)
        dead_first = None
        if n == 4 and h.dead_card:
            dead = [s for s in order if not seats[s].live]
            if dead:  # dealt "by habit" in its seat's place in the pass
                dead_first = dead[int(fr.random() * len(dead))]
                recipients = sorted(recipients + [dead_first])
        if n == 4 and h.swap4 and len(recipients) >= 2:
            recipients[0], recipients[1] = recipients[1], recipients[0]
            self.faults.fire("DEAL_ORDER", "fourth_street_swap", [("DEAL_ORDER", {"round_id": h.rid})])
        pair_seat = None
        if n == 4 and h.double4:
            active = [s for s in live if s not in all_in]
            if len(active) >= 2:
                pair_seat = active[int(fr.random() * len(active))]
                rank = seats[pair_seat].up[0][0]
                pack.rig(lambda c: c[0] == rank, fr, recipients.index(pair_seat))
        if self.razz:  # steer clear of boards the two razz orders would read differently
            for _ in range(30):
                boards = {s: seats[s].up + [pack.peek(recipients.index(s))] for s in live}
                text, std = self.boards_first(boards, order, all_in)
                if text == std:
                    break
                pack.swap_later(int(fr.random() * len(recipients)), fr, len(recipients))
        face_down = None
        if n == 6 and h.face6:
            # a seat whose down card cannot change who acts first, whatever it is taken for
            for s in live:
                boards = {t: seats[t].up + [pack.peek(recipients.index(t))] for t in live}
                picks: set[int | None] = set()
                for x in (None, *DECK):
                    board = {**boards, s: seats[s].up + ([x] if x else [])}
                    picks.update(self.boards_first(board, order, all_in))
                    if len(picks) > 1:
                        break
                if len(picks) == 1 and s not in picks:
                    face_down = s
                    break
            if face_down is not None:
                self.faults.fire("CARD_FACE", "sixth_street_down", [("CARD_FACE", {"round_id": h.rid})])
        for s in recipients:
            face = "down" if s == face_down else "up"
            c = self.deal(h, f"seat:{s}", face, n)
            (seats[s].up if face == "up" else seats[s].down).append(c)
        if dead_first is not None:
            self.faults.fire("CARD_TO_DEAD_HAND", "fourth_street", [("CARD_TO_DEAD_HAND", {"round_id": h.rid})])
        boards = {s: seats[s].up for s in live}
        first = first_to_act(order, boards, all_in, self.razz)
        if n == 6:
            h.first6 = first
        if first is None:
            return
        kw = {}
        if pair_seat is not None and seats[pair_seat].up[0][0] == seats[pair_seat].up[1][0]:
            kw = {"force_checks_until": pair_seat, "big_bet_by": pair_seat}
            self.faults.fire("FOURTH_STREET_DOUBLE", "big_bet_with_pair", [("FOURTH_STREET_DOUBLE", {"round_id": h.rid})])
        if h.wrong_first == n:
            others = [s for s in live if s not in all_in and s != first]
            if len(others) >= 1 and len(live) - len(all_in) >= 2:
                first = others[int(fr.random() * len(others))]
                self.faults.fire("FIRST_TO_ACT", f"street_{n}", [("FIRST_TO_ACT", {"round_id": h.rid})])
        self.t += 2 * SECOND
        size = self.small if n == 4 else self.big_bet
        Betting(self, seats, order, size, self.act(h)).run(first, n, never_folds=first if n == 6 else None, **kw)

    def seventh(self, h: Hand, seats: dict, order: list) -> None:
        rng = self.rng
        live = [s for s in order if seats[s].live]
        all_in = {s for s in live if seats[s].all_in}
        betting_possible = len(live) - len(all_in) >= 2
        left = self.pack.remaining()
        need = len(live) + 2
        proc = "normal" if left >= need else "A" if left + 3 >= need else "B" if left >= 3 else "C"
        do = proc
        if h.short_wrong:
            if proc == "B":
                do = "C"
            elif proc == "A" and left == len(live) + 1:
                do = "normal"
            if do != proc:
                self.faults.fire("SHORT_DECK_PROCEDURE", f"{do}_instead_of_{proc}",
                                 [("SHORT_DECK_PROCEDURE", {"round_id": h.rid})])
        if do in ("A", "C"):
            stack = self.pack.cards[self.pack.pos:] + h.burns[-3:]
            rng.shuffle(stack)
            self.pid = self.ids.sub_pack("-R")     # the main pack's id + "-R"
            self.pack = Pack(stack)
            self.dealer("reshuffle", f',"pack_id":"{self.pid}","round_id":"{h.rid}","card_count":{len(stack)},'
                        f'"burns_added":3', 20 * SECOND, 45 * SECOND)
        self.burn(h, 7)
        if do in ("B", "C"):
            self.deal(h, "community", "up", 7)
        else:
            exposed = None
            if do == "normal" and (h.exposed_b or rng.random() < 0.02) and self.pack.remaining() > len(live):
                exposed = live[int(rng.random() * len(live))]
            for s in live:
                c = self.deal(h, f"seat:{s}", "down", 7)
                seats[s].down.append(c)
                if s == exposed:
                    self.dealer("card_exposed", f',"round_id":"{h.rid}","target":"seat:{s}","card":"{c}","street":7',
                                1000, 3000)
            if exposed is not None and betting_possible:
                if h.exposed_b:
                    self.faults.fire("EXPOSED_CARD", "seventh_not_replaced", [("EXPOSED_CARD", {"round_id": h.rid})])
                else:
                    seats[exposed].down.append(self.deal(h, f"seat:{exposed}", "down", 7))
        first = h.first6
        if first is None or not betting_possible:
            return
        if seats[first].all_in or not seats[first].live:
            first = left_of(order, first, lambda s: seats[s].live and not seats[s].all_in)
        if first is None:
            return
        self.t += 2 * SECOND
        Betting(self, seats, order, self.big_bet, self.act(h)).run(first, 7)


class Stud8(Stud):
    game = "stud8"


class Razz(Stud):
    game = "razz"
    razz = True


# ------------------------------------------------------------------ faults
def _sets(flag: str):
    """A fault that only marks the hand: the dealing code does the rest."""
    def inject(table: Stud, h: Hand) -> bool:
        setattr(h, flag, True)
        return True
    return inject


for _rule, _flag in (("BURN_SKIPPED", "skip_burn"), ("DEAL_ORDER", "swap4"), ("CARD_FACE", "face6"),
                     ("CARD_TO_DEAD_HAND", "dead_card"), ("BRING_IN", "wrong_bring_in"),
                     ("FOURTH_STREET_DOUBLE", "double4"), ("SHORT_DECK_PROCEDURE", "short_wrong")):
    injects(_rule, *STUD)(_sets(_flag))


@injects("EXPOSED_CARD", *STUD)
def _exposed(table: Stud, h: Hand) -> bool:
    if table.faults.rng.random() < 0.5:
        h.exposed_a = True
    else:
        h.exposed_b = True
    return True


@injects("FIRST_TO_ACT", *STUD)
def _first_to_act(table: Stud, h: Hand) -> bool:
    h.wrong_first = 4 if table.faults.rng.random() < 0.5 else 5
    return True
