"""Punto banco from an 8-deck shoe, by document 003 (and its faults).

A pack's life: shuffle (at the table: ``shuffle_completed`` + dealer
``shuffle``; or a pre-shuffled pack from the back room, riffled when a player
or the supervisor asks) → cut offered (the first pack after ``table_opened``
to the first player seated, later packs to the lowest occupied seat;
refusals pass the offer on clockwise, ascending and wrapping; the supervisor
cuts when every player refused) → cut at least one deck from either end →
cutting card 20 or more cards from the back → loaded → burn (first card face
up, then its value face down; A = 1, T J Q K = 10) → coups → the cutting card
surfaces during the coup that draws the card after it → ``last_coup_announced``
after that coup → exactly one more coup → stub out (``shoe_emptied``).

A coup: bets, ``bets_closed``, player, banker, player, banker, the player's
third card if the tableau says so, then the banker's; payouts by ascending
seat (player wins 1:1, banker 0.95:1, tie 8:1 with player and banker bets
pushed).

Readings: a pack with no burn at all raises ``BURN_SKIPPED`` only (there is
no first burn card for ``BURN_COUNT`` to judge); a skipped announcement or an
extra coup is recorded as a finding only once the next coup actually starts.
"""
from __future__ import annotations

from pitwatch.simulator.cards import BACCARAT_POINTS, BURN_VALUE, Pack, other_card
from pitwatch.simulator.clock import SECOND
from pitwatch.simulator.devices import Port
from pitwatch.simulator.hold_skew import HoldSkew
from pitwatch.simulator.packs import PackPrep, emit_shuffle, offer_pack_faults
from pitwatch.simulator.table import TableSim

PACK_FAULTS = ("CUT_OFFER", "CUT_PLACEMENT", "CUT_CARD_PLACEMENT", "CUT_CARD_MISMATCH", "RIFFLE_SKIPPED",
               "BURN_SKIPPED", "BURN_COUNT", "LAST_COUP_NOT_ANNOUNCED", "COUPS_AFTER_CUT_CARD")
ROUND_FAULTS = ("CARDS_BEFORE_BETS_CLOSED", "DEAL_ORDER", "DRAWING_RULE", "PAYOUT",
                "SHOE_CARD_MISMATCH", "UNACCOUNTED_CARD")
MAIN_BETS = (100, 200, 300, 500, 500, 1000, 1000, 2000, 2500, 5000)
TIE_BETS = (25, 50, 100)


def banker_draws(b: int, p3: int | None) -> bool:
    """The punto banco tableau for the banker (``p3``: the player's third card's points, None if he stood)."""
    if p3 is None:
        return b <= 5
    if b <= 2:
        return True
    if b == 3:
        return p3 != 8
    if b == 4:
        return 2 <= p3 <= 7
    if b == 5:
        return 4 <= p3 <= 7
    if b == 6:
        return 6 <= p3 <= 7
    return False


def coup_winner(cards: list[str]) -> str | None:
    """``player``, ``banker`` or ``tie``: the coup dealt from ``cards`` by the tableau (P B P B, then the
    third cards); None when the cards run out first."""
    pts = [BACCARAT_POINTS[c] for c in cards[:6]]
    if len(pts) < 4:
        return None
    p, b = (pts[0] + pts[2]) % 10, (pts[1] + pts[3]) % 10
    nxt = 4
    if p < 8 and b < 8:
        p3 = None
        if p <= 5:
            if len(pts) <= nxt:
                return None
            p3 = pts[nxt]
            p, nxt = (p + p3) % 10, nxt + 1
        if banker_draws(b, p3):
            if len(pts) <= nxt:
                return None
            b = (b + pts[nxt]) % 10
    return "tie" if p == b else "player" if p > b else "banker"


class Coup:
    __slots__ = ("rid", "closed", "swap", "flip", "corrupt", "mismatch_at", "hidden_after", "n")

    def __init__(self, rid: str):
        self.rid = rid
        self.closed = "ok"
        self.swap = False
        self.flip = False
        self.corrupt = False
        self.mismatch_at = -1
        self.hidden_after = -1
        self.n = 0


class Baccarat(TableSim):
    shoe_port: Port     # every table of this game deals from a shoe (floor.py)
    game = "baccarat"
    decks = 8
    max_seat = 9
    min_players = 2
    max_players = 8
    rounds_per_hour = 70.0
    speed = 0.7

    def __init__(self, cfg):
        super().__init__(cfg)
        assert self.shoe_port is not None
        self.shuffler = cfg.shuffler
        self.backroom = cfg.backroom
        self.pack: Pack | None = None
        self.prev_order: list | None = None
        self.prev_drawn = 0
        self.skew: HoldSkew | None = None    # HOLD_SKEW at this table (set by the floor)

    # ------------------------------------------------------------- the pack
    def prepare_pack(self) -> None:
        rng = self.rng
        self.faults.begin_pack()
        pid = self.new_pack_id(2)
        pack = Pack.shuffled(8, rng)
        n = len(pack)
        copy = None
        if self.prev_order is not None and len(self.prev_order) == 416:
            k = 52 + int(rng.random() * 150)
            if k + 60 < self.prev_drawn:
                copy = self.prev_order[k:] + self.prev_order[:k]
        prep = PackPrep(pid, pack, 8, run_at=20 + int(rng.random() * 250), copy_from=copy)
        prep.flags = {"cut_pos": 52 + int(rng.random() * (n - 103)), "from_back": 20 + int(rng.random() * 50),
                      "preshuffled": self.backroom is not None and rng.random() < 0.15,
                      "riffle": rng.random() < 0.4, "offer": "ok", "burn": "ok", "end": "ok"}
        prep.flags["from_back_recorded"] = prep.flags["from_back"]
        offer_pack_faults(self, prep, PACK_FAULTS)
        f = prep.flags
        n = prep.card_count
        self.pid, self.pack, self.flags = pid, prep.pack, f
        self.cut_at = n - f["from_back"]
        self.surfaced = False
        self.surfaced_now = False
        self.after: int | None = None     # coups played since the cut card came out (None: not yet)
        self.extra = 1
        self.shoe_index = 0
        self.last_stream = -100
        self.clean_pack = prep.card_count == 416 and not self.faults.pack_busy
        pre = f["preshuffled"] and prep.record_shuffle
        emit_shuffle(self, prep, self.backroom if pre else self.shuffler, None if pre else "machine", pre)
        if pre and f["riffle"]:
            who = "supervisor" if rng.random() < 0.3 else f"seat:{self.seated[int(rng.random() * len(self.seated))]}"
            self.dealer("riffle_requested", f',"pack_id":"{pid}","by":"{who}"', 2 * SECOND, 8 * SECOND)
            if f["riffle"] != "skip":
                self.dealer("shuffle", f',"pack_id":"{pid}","method":"riffle"', 10 * SECOND, 30 * SECOND)
        self.cut(n)
        self.dealer("cut_card_inserted", f',"pack_id":"{pid}","from_back":{f["from_back_recorded"]},"stack_size":{n}',
                    4 * SECOND, 15 * SECOND)
        self.device(self.shoe_port, "shoe_loaded", f'"pack_id":"{pid}","card_count":{n}', 8 * SECOND, 25 * SECOND)
        self.burn()

    def cut(self, n: int) -> None:
        rng, f, pid = self.rng, self.flags, self.pid
        occupied = list(self.seated)
        designated = self.first_seated if self.pack_no == 1 and self.first_seated in occupied else occupied[0]
        i = occupied.index(designated)
        order = occupied[i:] + occupied[:i]
        offer = f["offer"]
        cutter = None
        if offer == "wrong_first":
            order = [s for s in order if s != designated]
            order = [order[int(rng.random() * len(order))]]
        for k, seat in enumerate(order):
            self.dealer("cut_offered", f',"pack_id":"{pid}","to":"seat:{seat}"', 2 * SECOND, 6 * SECOND)
            last = k == len(order) - 1
            refuse = offer == "supervisor_early" or (offer == "ok" and rng.random() < (0.3 if last else 0.12))
            if offer in ("wrong_first", "wrong_cutter"):
                refuse = False
            if not refuse:
                cutter = f"seat:{seat}"
                if offer == "wrong_cutter":
                    others = [s for s in occupied if s != seat]
                    cutter = f"seat:{others[int(rng.random() * len(others))]}"
                break
            self.dealer("cut_refused", f',"pack_id":"{pid}","by":"seat:{seat}"', 2 * SECOND, 6 * SECOND)
            if offer == "supervisor_early":
                break
        if cutter is None:
            self.dealer("cut_offered", f',"pack_id":"{pid}","to":"supervisor"', 5 * SECOND, 30 * SECOND)
            cutter = "supervisor"
        self.dealer("cut", f',"pack_id":"{pid}","by":"{cutter}","position":{f["cut_pos"]},"stack_size":{n}',
                    4 * SECOND, 15 * SECOND)

    def draw(self) -> str:
        pack = self.pack
        assert pack is not None     # cards are drawn from the pack in the shoe
        if not self.surfaced and pack.pos == self.cut_at:
            self.device(self.shoe_port, "cut_card_drawn", f'"pack_id":"{self.pid}","index":{self.shoe_index}', 300, 900)
            self.surfaced = self.surfaced_now = True
            if self.flags.get("mismatch"):
                self.faults.fire("CUT_CARD_MISMATCH", "moved_cutting_card", [("CUT_CARD_MISMATCH", {"pack_id": self.pid})])
        card = pack.draw()
        self.shoe_index += 1
        self.device(self.shoe_port, "card_drawn", f'"pack_id":"{self.pid}","index":{self.shoe_index},"card":"{card}"',
                    1200, 2400)
        return card

    def near(self, skip: int = 0) -> list:
        """The cards drawn just before and to be drawn just after the current place (alignment context)."""
        assert self.pack is not None
        cards, pos = self.pack.cards, self.pack.pos
        return cards[max(0, pos - 3):pos] + cards[pos + skip:pos + skip + 3]

    def burn(self) -> None:
        mode = self.flags["burn"]
        if mode == "skip":
            return
        first = self.draw()
        if mode == "face_down":
            self.dealer("card_dealt", f',"pack_id":"{self.pid}","target":"burn","face":"down","card":null', 150, 700)
        else:
            self.dealer("card_dealt", f',"pack_id":"{self.pid}","target":"burn","face":"up","card":"{first}"', 150, 700)
        count = BURN_VALUE[first]
        if mode == "count_off":
            count = count + 1 if count == 1 or self.faults.rng.random() < 0.5 else count - 1
        for _ in range(count):
            self.draw()
            self.dealer("card_dealt", f',"pack_id":"{self.pid}","target":"burn","face":"down","card":null', 150, 700)
        self.t += 10 * SECOND + int(10 * SECOND * self.rng.random())

    def end_pack(self) -> None:
        assert self.pack is not None
        self.device(self.shoe_port, "shoe_emptied", f'"pack_id":"{self.pid}","remaining":{self.pack.remaining()}',
                    5 * SECOND, 15 * SECOND)
        if self.clean_pack:
            self.prev_order, self.prev_drawn = self.pack.cards, self.pack.pos
        else:
            self.prev_order = None
        self.pack = None
        self.t += 90 * SECOND + int(120 * SECOND * self.rng.random())

    def finish(self) -> None:
        if self.pack is not None:
            self.end_pack()

    # ------------------------------------------------------------- a coup
    def play_round(self) -> None:
        if self.pack is None:
            self.prepare_pack()
        after = self.after
        if after == 0 and self.flags.get("unannounced"):
            self.faults.fire("LAST_COUP_NOT_ANNOUNCED", "not_announced",
                             [("LAST_COUP_NOT_ANNOUNCED", {"pack_id": self.pid})])
        if after == 1:
            self.faults.fire("COUPS_AFTER_CUT_CARD", "two_more_coups", [("COUPS_AFTER_CUT_CARD", {"pack_id": self.pid})])
        self.surfaced_now = False
        self.coup()
        if after is not None:
            self.after = after + 1
            if self.after == self.extra:
                self.end_pack()
        elif self.surfaced_now:
            end = self.flags["end"]
            if end == "no_announce":
                self.flags["unannounced"] = True
            else:
                self.dealer("last_coup_announced", f',"pack_id":"{self.pid}"', 2 * SECOND, 6 * SECOND)
            self.after = 0
            self.extra = 2 if end == "extra_coup" else 1

    def coup(self) -> None:
        rng = self.rng
        rid = self.start_round_ids(4)
        self.maybe_seq_gap()
        c = Coup(rid)
        self.dealer("round_started", f',"pack_id":"{self.pid}","round_id":"{rid}","game":"baccarat"',
                    5 * SECOND, 15 * SECOND)
        bets = []
        for seat in self.seated:
            if rng.random() < 0.85:
                bets.append((seat, "player" if rng.random() < 0.45 else "banker",
                             MAIN_BETS[int(rng.random() * len(MAIN_BETS))]))
            if rng.random() < 0.06:
                bets.append((seat, "tie", TIE_BETS[int(rng.random() * 3)]))
        if not bets:
            seat = self.seated[int(rng.random() * len(self.seated))]
            bets.append((seat, "banker", MAIN_BETS[int(rng.random() * len(MAIN_BETS))]))
        rng.shuffle(bets)
        skew = self.skew
        if skew is not None:
            if skew.seat is None:    # the confederate: the first seat taken, who never leaves
                skew.seat = self.staying = self.first_seated
            if not skew.on_duty(self.dealer_id, self.seated):
                skew = None
            else:
                skew.bet(bets)
        for seat, spot, amount in bets:
            self.dealer("bet_placed", f',"round_id":"{rid}","seat":{seat},"spot":"{spot}","amount":{amount}', 1000, 4000)
        if self.faults:
            self.faults.inject(ROUND_FAULTS, c)
        if skew is not None and not self.faults.round_busy and not self.faults.pack_busy:
            extra = skew.decide(bets)
            if extra is not None and self.arrange_coup("player", skew.rng):
                skew.arranged_coup(extra)
        if c.closed == "ok":
            self.dealer("bets_closed", f',"round_id":"{rid}"', 1500, 4000)
        hands: dict[str, list[str]] = {"player": [], "banker": []}
        order = ("banker", "player", "player", "banker") if c.swap else ("player", "banker", "player", "banker")
        for target in order:
            self.deal(c, target, hands)
        p = (BACCARAT_POINTS[hands["player"][0]] + BACCARAT_POINTS[hands["player"][1]]) % 10
        b = (BACCARAT_POINTS[hands["banker"][0]] + BACCARAT_POINTS[hands["banker"][1]]) % 10
        natural = p >= 8 or b >= 8
        p_draws = not natural and p <= 5
        flip_banker = False
        variant = None
        if c.flip:
            if natural:
                p_draws, variant = True, "draw_on_natural"
            elif self.faults.rng.random() < 0.5:
                p_draws = not p_draws
                variant = "player_draws" if p_draws else "player_stands"
            else:
                flip_banker = True
        p3 = BACCARAT_POINTS[self.deal(c, "player", hands)] if p_draws else None
        b_draws = False if natural else banker_draws(b, p3)
        if flip_banker:
            b_draws = not b_draws
            variant = "banker_draws" if b_draws else "banker_stands"
        if b_draws:
            self.deal(c, "banker", hands)
        if c.flip:
            assert variant is not None      # every flip above names its variant
            self.faults.fire("DRAWING_RULE", variant, [("DRAWING_RULE", {"round_id": rid})])
        self.settle(c, bets, hands)
        self.dealer("round_ended", f',"round_id":"{rid}"', 2 * SECOND, 5 * SECOND)

    def arrange_coup(self, side: str, rng) -> bool:
        """HOLD_SKEW: swap undrawn cards of the pack (one of the next six with one of the 54 after them)
        until the coup dealt from it is won by ``side``; the pack keeps its cards, so the shoe and the
        terminal see the same cards and every payout follows them.  False if no swap did it."""
        assert self.pack is not None
        cards, pos = self.pack.cards, self.pack.pos
        room = min(len(cards), pos + 60) - (pos + 6)
        for _ in range(400):
            if coup_winner(cards[pos:pos + 6]) == side:
                return True
            if room <= 0:
                return False
            i, j = pos + int(rng.random() * 6), pos + 6 + int(rng.random() * room)
            cards[i], cards[j] = cards[j], cards[i]
        return False

    def deal(self, c: Coup, target: str, hands: dict) -> str:
        card = self.draw()
        shown = card
        if c.n == c.mismatch_at:
            shown = other_card(self.faults.rng, {card, *self.near()})
            self.faults.fire("SHOE_CARD_MISMATCH", "switched_card",
                             [("SHOE_CARD_MISMATCH", {"pack_id": self.pid, "round_id": c.rid})])
        hands[target].append(shown)
        self.dealer("card_dealt", f',"pack_id":"{self.pid}","round_id":"{c.rid}","target":"{target}","face":"up",'
                    f'"card":"{shown}"', 150, 700)
        if c.n == 0 and c.closed == "late":
            self.dealer("bets_closed", f',"round_id":"{c.rid}"', 300, 1200)
        if c.n == c.hidden_after:
            assert self.pack is not None
            hidden = self.pack.peek(0)
            if hidden is not None and hidden not in self.near(skip=1) and self.pack.pos != self.cut_at:
                self.draw()
                self.faults.fire("UNACCOUNTED_CARD", "hidden_card", [("UNACCOUNTED_CARD", {"round_id": c.rid})])
        c.n += 1
        return shown

    def settle(self, c: Coup, bets, hands) -> None:
        p = sum(BACCARAT_POINTS[x] for x in hands["player"]) % 10
        b = sum(BACCARAT_POINTS[x] for x in hands["banker"]) % 10
        winner = "tie" if p == b else ("player" if p > b else "banker")
        lines = []
        for seat, spot, amount in sorted(bets, key=lambda x: (x[0], x[1] == "tie")):
            if spot == "tie":
                result, net = ("win", 8 * amount) if winner == "tie" else ("lose", -amount)
            elif winner == "tie":
                result, net = "push", 0
            elif spot == winner:
                result, net = "win", (amount * 95 / 100 if spot == "banker" else amount)
            else:
                result, net = "lose", -amount
            lines.append([seat, spot, result, net, amount])
        if c.corrupt and lines:
            line = lines[int(self.faults.rng.random() * len(lines))]
            seat, spot, result, net, amount = line
            if result == "win":
                line[3] = net + amount
                variant = "overpaid"
            elif result == "push":
                line[2], line[3] = "lose", -amount
                variant = "push_collected"
            else:
                line[2], line[3] = "push", 0
                variant = "loss_not_collected"
            self.faults.fire("PAYOUT", variant, [("PAYOUT", {"round_id": c.rid, "seat": seat, "spot": spot})])
        for seat, spot, result, net, _ in lines:
            self.dealer("payout", f',"round_id":"{c.rid}","seat":{seat},"spot":"{spot}","result":"{result}",'
                        f'"amount":{net}', 1000, 3000)
