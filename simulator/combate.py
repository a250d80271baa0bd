"""Combate (high card + blackjack + six-card poker) from a 6-deck shoe, by document 001.

Three bets per seat, three phases, each settled right to left (descending
seat; a split seat's hand 2 before its hand 1, as the example does):

1. Combate: one card face up to each seat, ascending, then one to the dealer;
   higher rank wins (A high, suits do not count), a tie loses half the bet.
2. Blackjack (:mod:`pitwatch.simulator.blackjack`): one more card face up to
   each seat, the dealer's second card face down, each seat acts ascending
   (hits face up; split only two aces, one card each; double on two cards),
   then the dealer.
3. Poker: face down, seat by seat ascending, each seat gets every card it
   needs to hold six (all its hands together); the player declares five
   (``hand_declared``, usually the best, sometimes not: cards speak) and the
   best five of six is paid by the default paytable.

The pack stays in the shoe for many rounds and is replaced when fewer than
70 cards remain (``shoe_emptied`` then a new ``shuffle_completed`` …).

Reading: the misdeal fault gives the last seat that needs poker cards one
card too few (so the dealt order stays a prefix of the right one: no
``DEAL_ORDER``); its poker bet is settled on the five cards it holds.
"""
from __future__ import annotations

from pitwatch.schemas.contract import THREE_BETS
from pitwatch.simulator import blackjack as bj
from pitwatch.simulator.cards import CARD_HIGH, Pack, other_card
from pitwatch.simulator.clock import SECOND
from pitwatch.simulator.devices import Port
from pitwatch.simulator.packs import PackPrep, emit_shuffle, offer_pack_faults
from pitwatch.simulator.poker import best_five, combate_multiplier
from pitwatch.simulator.table import TableSim

ROUND_FAULTS = ("CARDS_BEFORE_BETS_CLOSED", "DEAL_ORDER", "CARD_FACE", "MISDEAL", "PAYOUT", "SETTLEMENT_ORDER",
                "ILLEGAL_DOUBLE", "ILLEGAL_SPLIT", "SIX_CARD_RULE", "DEALER_DRAWING", "SHOE_CARD_MISMATCH",
                "UNACCOUNTED_CARD")
AMOUNTS = (5, 10, 10, 25, 25, 50, 100)


class Round:
    __slots__ = ("rid", "seats", "bets", "n", "closed", "dealer_first", "hole_up", "short_last", "corrupt",
                 "swap_settle", "target", "mode", "dealer_flip", "mismatch_at", "hidden_after", "unread_at")

    def __init__(self, rid: str, seats: list[int], bets: dict):
        self.rid = rid
        self.seats = seats
        self.bets = bets
        self.n = 0
        self.closed = "ok"
        self.dealer_first = self.hole_up = self.short_last = self.swap_settle = False
        self.corrupt = 0     # the phase whose payouts get one wrong line
        self.dealer_flip = False
        self.target: int | None = None   # seat a phase-2 fault is played at
        self.mode: str | None = None     # six_not_paid, six_collected, illegal_double, split_pair, split_ace_hit
        self.mismatch_at = self.hidden_after = self.unread_at = -1


class Combate(TableSim):
    shoe_port: Port     # every table of this game deals from a shoe (floor.py)
    game = "combate"
    decks = 6
    max_seat = 7
    min_players = 1
    max_players = 6
    rounds_per_hour = 40.0
    speed = 0.4

    def __init__(self, cfg):
        super().__init__(cfg)
        assert self.shoe_port is not None
        self.shuffler = cfg.shuffler
        self.pack: Pack | None = None
        self.prev_order = None

    # ------------------------------------------------------------- pack
    def new_pack(self) -> None:
        rng = self.rng
        if self.pack is not None:
            self.empty_shoe()
        self.faults.begin_pack()
        pid = self.new_pack_id(2)
        copy = self.prev_order if len(self.seated) >= 2 else None
        prep = PackPrep(pid, Pack.shuffled(6, rng), 6, run_at=0 if len(self.seated) >= 2 else None, copy_from=copy)
        offer_pack_faults(self, prep)
        self.pid, self.pack, self.shoe_index = pid, prep.pack, 0
        self.last_stream = -100
        self.pack_clean = len(prep.pack) == 312
        emit_shuffle(self, prep, self.shuffler, "machine")
        self.device(self.shoe_port, "shoe_loaded", f'"pack_id":"{pid}","card_count":{len(self.pack)}',
                    8 * SECOND, 25 * SECOND)

    def empty_shoe(self) -> None:
        assert self.pack is not None
        self.device(self.shoe_port, "shoe_emptied", f'"pack_id":"{self.pid}","remaining":{len(self.pack) - self.shoe_index}',
                    5 * SECOND, 15 * SECOND)
        self.prev_order = self.pack.cards if self.pack_clean and self.pack.pos >= 20 else None
        self.pack = None

    def finish(self) -> None:
        if self.pack is not None:
            self.empty_shoe()

    # ------------------------------------------------------------- cards
    def card(self, r: Round, target: str, face: str, hand: int | None = None, want=None) -> str:
        pack = self.pack
        assert pack is not None     # cards are drawn from the pack in the shoe
        if want is not None:
            pack.rig(want, self.rng)
        card = pack.draw()
        k = r.n
        r.n += 1
        if k != r.unread_at:
            self.shoe_index += 1
            self.device(self.shoe_port, "card_drawn", f'"pack_id":"{self.pid}","index":{self.shoe_index},"card":"{card}"',
                        1200, 2200)
        else:
            self.wait(1200, 2200)
        shown = card
        if k == r.mismatch_at:
            shown = other_card(self.faults.rng, {*pack.cards[max(0, pack.pos - 4):pack.pos + 3]})
        h = f',"hand":{hand}' if hand else ""
        self.dealer("card_dealt", f',"pack_id":"{self.pid}","round_id":"{r.rid}","target":"{target}"{h},'
                    f'"face":"{face}","card":"{shown}"', 100, 600)
        if k == 0 and r.closed == "late":
            self.dealer("bets_closed", f',"round_id":"{r.rid}"', 300, 1200)
        if k == r.hidden_after:
            hidden = pack.peek(0)
            if hidden is not None and hidden not in {shown, *pack.cards[max(0, pack.pos - 3):pack.pos],
                                                     *pack.cards[pack.pos + 1:pack.pos + 4]}:
                self.card_hidden()
                self.faults.fire("UNACCOUNTED_CARD", "hidden_card", [("UNACCOUNTED_CARD", {"round_id": r.rid})])
        return shown

    def card_hidden(self) -> None:
        assert self.pack is not None
        card = self.pack.draw()
        self.shoe_index += 1
        self.device(self.shoe_port, "card_drawn", f'"pack_id":"{self.pid}","index":{self.shoe_index},"card":"{card}"',
                    800, 1500)

    def pay(self, r: Round, lines) -> None:
        """Emit payouts ``[seat, hand, spot, result, amount]`` (one phase, already in order)."""
        for seat, hand, spot, result, amount in lines:
            h = f',"hand":{hand}' if hand else ""
            self.dealer("payout", f',"round_id":"{r.rid}","seat":{seat},"spot":"{spot}"{h},"result":"{result}",'
                        f'"amount":{amount}', 1000, 2800)

    def corrupt(self, r: Round, lines, phase: int) -> None:
        if r.corrupt != phase:
            return
        plain = [ln for ln in lines if not ln[1]]
        if not plain:
            return
        ln = plain[int(self.faults.rng.random() * len(plain))]
        seat, _, spot, result, amount = ln
        bet = r.bets[seat][spot]
        if result == "win":
            ln[4] = amount + bet
            variant = "overpaid"
        elif result == "lose":
            ln[3], ln[4] = "push", 0
            variant = "loss_not_collected"
        else:
            ln[3], ln[4] = "lose", -bet
            variant = "collected_in_full"
        r.corrupt = 0
        self.faults.fire("PAYOUT", variant, [("PAYOUT", {"round_id": r.rid, "seat": seat, "spot": spot})])

    # ------------------------------------------------------------- a round
    def play_round(self) -> None:
        rng = self.rng
        self.maybe_seq_gap()
        if self.pack is None or self.pack.remaining() < 70:
            self.new_pack()
        rid = self.start_round_ids(4, "R")   # after its pack: with reuse_ids, rounds are numbered per pack
        seats = list(self.seated)
        bets = {s: {spot: AMOUNTS[int(rng.random() * len(AMOUNTS))] for spot in THREE_BETS}
                for s in seats}
        r = Round(rid, seats, bets)
        self.dealer("round_started", f',"pack_id":"{self.pid}","round_id":"{rid}","game":"combate"', 5 * SECOND, 15 * SECOND)
        for s in seats:
            for spot, amount in bets[s].items():
                self.dealer("bet_placed", f',"round_id":"{rid}","seat":{s},"spot":"{spot}","amount":{amount}', 1000, 3000)
        if self.faults:
            self.faults.inject(ROUND_FAULTS, r)
        if r.closed == "ok":
            self.dealer("bets_closed", f',"round_id":"{rid}"', 1500, 4000)
        held = self.phase_combate(r)
        self.phase_blackjack(r, held)
        self.phase_poker(r, held)
        self.dealer("round_ended", f',"round_id":"{rid}"', 2 * SECOND, 6 * SECOND)

    def want_for(self, r: Round, seat: int, step: int):
        """The rig a phase-2 fault needs for ``seat``'s card number ``step`` (0: Combate card)."""
        if seat != r.target:
            return None
        mode = r.mode
        if mode in ("six_not_paid", "six_collected"):
            return lambda c: c[0] in "23"
        if mode == "illegal_double":
            return lambda c: c[0] in "2345" if step < 2 else c[0] in "234"
        if mode == "split_ace_hit" and step < 2:
            return lambda c: c[0] == "A"
        if mode == "split_pair" and step == 1:
            rank = self._pair_rank
            return lambda c: c[0] == rank
        if mode == "split_pair" and step == 0:
            return lambda c: c[0] in "6789T"
        return None

    def phase_combate(self, r: Round) -> dict:
        held = {}
        dealer_at = len(r.seats) - 1 if r.dealer_first else len(r.seats)
        up = None
        for i, s in enumerate(r.seats + [None]):
            if i == dealer_at and up is None:
                up = self.card(r, "dealer", "up")
            if s is not None:
                held[s] = [self.card(r, f"seat:{s}", "up", want=self.want_for(r, s, 0))]
                if r.mode == "split_pair" and s == r.target:
                    self._pair_rank = held[s][0][0]
        if up is None:
            up = self.card(r, "dealer", "up")
        self._dealer = [up]
        lines = []
        for s in reversed(r.seats):
            bet = r.bets[s]["first"]
            a, b = CARD_HIGH[held[s][0]], CARD_HIGH[up]
            lines.append([s, None, "first", *(("win", bet) if a > b else ("lose", -bet) if a < b
                                                 else ("half_lose", -bj.half(bet)))])
        if r.swap_settle and len(lines) >= 2:
            lines[0], lines[1] = lines[1], lines[0]
        self.corrupt(r, lines, 1)
        self.t += 3 * SECOND
        self.pay(r, lines)
        return held

    def phase_blackjack(self, r: Round, held: dict) -> None:
        hands = {}
        for s in r.seats:
            c = self.card(r, f"seat:{s}", "up", want=self.want_for(r, s, 1))
            held[s].append(c)
            hands[s] = [bj.Hand(s, list(held[s]))]
        dealer = self._dealer + [self.card(r, "dealer", "up" if r.hole_up else "down")]
        up = dealer[0]
        for s in r.seats:
            self.play_seat(r, s, hands[s], held, up)
        every = [h for s in r.seats for h in hands[s]]
        if bj.total(dealer)[0] != 21 and any(h.live for h in every):
            flip = r.dealer_flip
            while True:
                hit = bj.dealer_should_hit(dealer)
                if flip:
                    flip, hit = False, not hit
                    self.faults.fire("DEALER_DRAWING", "hits_17_or_more" if hit else "stands_below_17",
                                     [("DEALER_DRAWING", {"round_id": r.rid})])
                if not hit:
                    break
                dealer.append(self.card(r, "dealer", "up"))
        self.t += 3 * SECOND
        lines = []
        for s in reversed(r.seats):
            hs = hands[s]
            for h in reversed(hs):
                result, amount = bj.settle(h, r.bets[s]["second"], dealer)
                if s == r.target and h.six and r.mode == "six_not_paid":
                    self.faults.fire("SIX_CARD_RULE", "not_paid", [("SIX_CARD_RULE", {"round_id": r.rid})])
                    continue
                if s == r.target and h.six and r.mode == "six_collected":
                    result, amount = "lose", -r.bets[s]["second"]
                    self.faults.fire("SIX_CARD_RULE", "collected",
                                     [("SIX_CARD_RULE", {"round_id": r.rid}),
                                      ("PAYOUT", {"round_id": r.rid, "seat": s, "spot": "second"})])
                lines.append([s, h.no if len(hs) > 1 else None, "second", result, amount])
        self.corrupt(r, lines, 2)
        self.pay(r, lines)

    def act(self, r: Round, seat: int, action: str, amount=None, hand: int | None = None) -> None:
        h = f',"hand":{hand}' if hand else ""
        a = f',"amount":{amount}' if amount is not None else ""
        self.dealer("player_action", f',"round_id":"{r.rid}","seat":{seat}{h},"action":"{action}"{a}', 2000, 6000)

    def play_seat(self, r: Round, s: int, hs: list, held: dict, up: str) -> None:
        h = hs[0]
        mode = r.mode if s == r.target else None
        bet = r.bets[s]["second"]
        if h.blackjack:
            return
        a, b = h.cards
        if (a[0] == "A" and b[0] == "A") or (mode == "split_pair" and a[0] == b[0]):
            self.act(r, s, "split", bet)
            h1, h2 = bj.Hand(s, [a], 1, True), bj.Hand(s, [b], 2, True)
            for hand in (h1, h2):
                c = self.card(r, f"seat:{s}", "up", hand=hand.no)
                hand.cards.append(c)
                held[s].append(c)
            hs[:] = [h1, h2]
            if mode == "split_ace_hit":
                self.act(r, s, "hit", hand=1)
                c = self.card(r, f"seat:{s}", "up", hand=1)
                h1.cards.append(c)
                held[s].append(c)
            if mode in ("split_ace_hit", "split_pair"):
                self.faults.fire("ILLEGAL_SPLIT", mode, [("ILLEGAL_SPLIT", {"round_id": r.rid})])
            return
        force = mode in ("six_not_paid", "six_collected", "illegal_double")
        while True:
            if h.six or h.bust:
                return
            t = h.value
            if mode == "illegal_double" and len(h.cards) == 3:
                self.act(r, s, "double", bet)
                h.doubled = True
                c = self.card(r, f"seat:{s}", "up")
                h.cards.append(c)
                held[s].append(c)
                self.faults.fire("ILLEGAL_DOUBLE", "three_cards", [("ILLEGAL_DOUBLE", {"round_id": r.rid})])
                return
            if not force and t == 21:
                self.act(r, s, "stand")
                return
            if not force and bj.wants_double(h, up, self.rng.random()):
                self.act(r, s, "double", bet)
                h.doubled = True
                c = self.card(r, f"seat:{s}", "up")
                h.cards.append(c)
                held[s].append(c)
                return
            if force or bj.wants_hit(h, up, self.rng.random()):
                self.act(r, s, "hit")
                c = self.card(r, f"seat:{s}", "up", want=self.want_for(r, s, len(h.cards)))
                h.cards.append(c)
                held[s].append(c)
                continue
            self.act(r, s, "stand")
            return

    def phase_poker(self, r: Round, held: dict) -> None:
        rng = self.rng
        needs = [[s, 6 - len(held[s])] for s in r.seats]
        if r.short_last:
            last = [n for n in needs if n[1] >= 1]
            if last:
                last[-1][1] -= 1
                self.faults.fire("MISDEAL", "last_seat_short", [("MISDEAL", {"round_id": r.rid})])
        for s, need in needs:
            for _ in range(need):
                held[s].append(self.card(r, f"seat:{s}", "down"))
        values = {}
        for s in r.seats:
            value, five = best_five(held[s])
            values[s] = value
            if len(held[s]) == 6 and rng.random() < 0.1:
                five = list(held[s])
                five.pop(int(rng.random() * 6))
            self.dealer("hand_declared", f',"round_id":"{r.rid}","seat":{s},"cards":[' +
                        ",".join(f'"{c}"' for c in five) + "]", 3 * SECOND, 9 * SECOND)
        lines = []
        for s in reversed(r.seats):
            bet = r.bets[s]["third"]
            mult = combate_multiplier(values[s])
            lines.append([s, None, "third", *(("win", mult * bet) if mult else ("lose", -bet))])
        self.corrupt(r, lines, 3)
        self.pay(r, lines)
