"""A clean simulated floor follows the written procedures (checked independently of the simulator)."""
from __future__ import annotations

import collections

import pytest

from pitwatch.simulator.baccarat import banker_draws

RANK_HIGH = {r: i for i, r in enumerate("23456789TJQKA", 2)}
RANK_LOW = {r: i for i, r in enumerate("A23456789TJQK", 1)}
SUIT = {s: i for i, s in enumerate("cdhs")}


def points(card):
    return min(RANK_LOW[card[0]], 10) % 10


def rounds_of(evs):
    by = collections.OrderedDict()
    for e in evs:
        if e.round_id:
            by.setdefault(e.round_id, []).append(e)
    return by


def test_baccarat_tableau_reproduces_the_exact_eight_deck_outcome_counts():
    """docs/design-notes.md: over all 416P6 card orders, banker/player/tie counts; right only if the tableau is."""
    counts = [128] + [32] * 9
    wins = collections.Counter()

    def draw(n_left, cls):
        return counts[cls], n_left

    def rest(n_left, used):  # unused positions of the six: falling factorial
        w = 1
        for k in range(6 - used):
            w *= n_left - k
        return w

    for p1 in range(10):
        w1 = counts[p1]
        counts[p1] -= 1
        for b1 in range(10):
            w2 = w1 * counts[b1]
            counts[b1] -= 1
            for p2 in range(10):
                w3 = w2 * counts[p2]
                counts[p2] -= 1
                for b2 in range(10):
                    w4 = w3 * counts[b2]
                    counts[b2] -= 1
                    p, b = (p1 + p2) % 10, (b1 + b2) % 10
                    if p >= 8 or b >= 8:
                        wins[(p > b) - (p < b)] += w4 * rest(412, 4)
                    elif p <= 5:
                        for p3 in range(10):
                            w5 = w4 * counts[p3]
                            counts[p3] -= 1
                            pp = (p + p3) % 10
                            if banker_draws(b, p3):
                                for b3 in range(10):
                                    bb = (b + b3) % 10
                                    wins[(pp > bb) - (pp < bb)] += w5 * counts[b3] * rest(410, 6)
                            else:
                                wins[(pp > b) - (pp < b)] += w5 * rest(411, 5)
                            counts[p3] += 1
                    elif banker_draws(b, None):
                        for b3 in range(10):
                            bb = (b + b3) % 10
                            wins[(p > bb) - (p < bb)] += w4 * counts[b3] * rest(411, 5)
                    else:
                        wins[(p > b) - (p < b)] += w4 * rest(412, 4)
                    counts[b2] += 1
                counts[p2] += 1
            counts[b1] += 1
        counts[p1] += 1
    assert wins[-1] == 2_292_252_566_437_888  # banker
    assert wins[1] == 2_230_518_282_592_256   # player
    assert wins[0] == 475_627_426_473_216     # tie


def test_baccarat_coups_follow_the_tableau_and_pay_by_the_rules(clean_floor):
    checked = 0
    for table in clean_floor.tables("baccarat"):
        for rid, evs in rounds_of(clean_floor.dealer(table)).items():
            cards = [e for e in evs if e.type == "card_dealt"]
            assert [c.target for c in cards[:4]] == ["player", "banker", "player", "banker"]
            p = (points(cards[0].card) + points(cards[2].card)) % 10
            b = (points(cards[1].card) + points(cards[3].card)) % 10
            natural = p >= 8 or b >= 8
            extra = cards[4:]
            p3 = None
            if not natural and p <= 5:
                assert extra and extra[0].target == "player"
                p3 = points(extra.pop(0).card)
                p = (p + p3) % 10
            b_should = not natural and (b <= 5 if p3 is None else
                                        b <= 2 or (b == 3 and p3 != 8) or (b == 4 and 2 <= p3 <= 7)
                                        or (b == 5 and 4 <= p3 <= 7) or (b == 6 and 6 <= p3 <= 7))
            assert [c.target for c in extra] == (["banker"] if b_should else [])
            if b_should:
                b = (b + points(extra[0].card)) % 10
            winner = "tie" if p == b else "player" if p > b else "banker"
            bets = {(e.seat, e.spot): e.amount for e in evs if e.type == "bet_placed"}
            for pay in (e for e in evs if e.type == "payout"):
                amt = bets[(pay.seat, pay.spot)]
                want = (8 * amt if winner == "tie" else -amt) if pay.spot == "tie" else \
                    0 if winner == "tie" else (amt * (0.95 if pay.spot == "banker" else 1) if pay.spot == winner else -amt)
                assert abs(pay.amount - want) <= 0.005, (rid, pay.seat, pay.spot)
            assert evs.index(next(e for e in evs if e.type == "bets_closed")) < evs.index(cards[0])
            checked += 1
    assert checked > 300


def test_baccarat_packs_burn_cut_and_last_coup(clean_floor):
    packs = 0
    for table in clean_floor.tables("baccarat"):
        term = clean_floor.dealer(table)
        shoe = clean_floor.table(table, "shoe")
        seated, first_seated, pack_n = set(), None, 0
        for i, e in enumerate(term):
            if e.type == "player_seated":
                seated.add(e.seat)
                first_seated = first_seated or e.seat
            elif e.type == "player_left":
                seated.discard(e.seat)
            elif e.type == "cut_offered" and (i == 0 or term[i - 1].type not in ("cut_offered", "cut_refused")):
                pack_n += 1
                assert e.to == f"seat:{first_seated if pack_n == 1 else min(seated)}"
            elif e.type == "cut":
                assert 52 <= e.position <= e.stack_size - 52
            elif e.type == "cut_card_inserted":
                assert e.from_back >= 20
                drawn = [s for s in shoe if s.type == "cut_card_drawn" and s.pack_id == e.pack_id]
                for d in drawn:
                    assert d.index == e.stack_size - e.from_back
        for pid in sorted({e.pack_id for e in shoe}):
            pevs = [e for e in term if e.pack_id == pid and e.type == "card_dealt"]
            burns = [e for e in pevs if e.target == "burn"]
            assert burns[0].face == "up" and len(burns) == 1 + min(RANK_LOW[burns[0].card[0]], 10)
            assert all(b.face == "down" for b in burns[1:])
            cut = [s for s in shoe if s.pack_id == pid and s.type == "cut_card_drawn"]
            if cut:  # the coup drawing card index+1 surfaced it; one more coup after it, announced
                dealt = [e for e in pevs]
                surfacing = dealt[cut[0].index].round_id
                rounds = list(dict.fromkeys(e.round_id for e in dealt if e.round_id))
                assert rounds[-2:][0] == surfacing
                k = next(i for i, e in enumerate(term) if e.type == "round_ended" and e.round_id == surfacing)
                assert term[k + 1].type == "last_coup_announced"
            packs += 1
    assert packs >= 4


def test_three_bet_poker_single_deck_packs_deal_order_and_stub_counts(clean_floor):
    for table in clean_floor.tables("three_bet_poker"):
        shoe = clean_floor.table(table, "shoe")
        loaded = [e for e in shoe if e.type == "shoe_loaded"]
        assert loaded and {e.card_count for e in loaded} == {52}
        drawn = collections.Counter(e.pack_id for e in shoe if e.type == "card_drawn")
        uncounted = 0
        for rid, evs in rounds_of(clean_floor.dealer(table)).items():
            bets = collections.Counter(e.seat for e in evs if e.type == "bet_placed")
            eligible = sorted(s for s, n in bets.items() if n == 3)
            cards = [e for e in evs if e.type == "card_dealt"]
            assert [c.target for c in cards] == ([f"seat:{s}" for s in eligible] + ["community"]) * 3
            assert {c.face for c in cards} == {"down"}
            counted = [e for e in evs if e.type == "stub_counted"]
            for c in counted:
                assert c.stub == 52 - drawn[c.pack_id] and c.stub + c.layout == 52
            uncounted = 0 if counted else uncounted + 1
            assert uncounted <= 4
        discards = [e for e in clean_floor.dealer(table) if e.type == "stub_discarded"]
        assert discards and not any(e.exposed for e in discards)


def test_combate_phases_six_cards_and_right_to_left_settlement(clean_floor):
    for table in clean_floor.tables("combate"):
        for rid, evs in rounds_of(clean_floor.dealer(table)).items():
            held = collections.Counter(e.target for e in evs if e.type == "card_dealt" and e.target != "dealer")
            seats = sorted({e.seat for e in evs if e.type == "bet_placed"})
            assert held == {f"seat:{s}": 6 for s in seats}
            for spot in ("first", "second", "third"):
                order = [e.seat for e in evs if e.type == "payout" and e.spot == spot]
                assert order == sorted(order, reverse=True)
            up = [e for e in evs if e.type == "card_dealt"][:len(seats) + 1]
            assert [e.target for e in up] == [f"seat:{s}" for s in seats] + ["dealer"]
            for pay in (e for e in evs if e.type == "payout" and e.spot == "first"):
                mine = next(c.card for c in up if c.target == f"seat:{pay.seat}")
                a, b = RANK_HIGH[mine[0]], RANK_HIGH[up[-1].card[0]]
                assert pay.result == ("win" if a > b else "lose" if a < b else "half_lose")


@pytest.mark.parametrize("game", ["stud", "stud8", "razz"])
def test_stud_burns_every_street_and_brings_in_the_right_seat(clean_floor, game):
    razz = game == "razz"
    hands = 0
    for table in clean_floor.tables(game):
        for rid, evs in rounds_of(clean_floor.dealer(table)).items():
            cards = [e for e in evs if e.type in ("card_dealt", "reshuffle")]
            street = None
            for c in cards:
                if c.type == "card_dealt" and c.street != street:
                    assert c.target == "burn", (rid, c.street)
                    street = c.street
            third = [c for c in cards if c.type == "card_dealt" and c.street == 3 and c.target != "burn"]
            exposed = {e.target: e.card for e in evs if e.type == "card_exposed" and e.street == 3}
            absent = {f"seat:{e.seat}" for e in evs if e.type == "player_absent"}
            all_in = {f"seat:{e.seat}" for e in evs if e.type == "bet_placed" and e.all_in}
            up = {c.target: c.card for c in third if c.face == "up"}
            up.update(exposed)
            cand = {t: c for t, c in up.items() if t not in absent}
            key = (lambda c: (-RANK_LOW[c[0]], -SUIT[c[1]])) if razz else (lambda c: (RANK_HIGH[c[0]], SUIT[c[1]]))
            right = min(cand, key=lambda t: key(cand[t]))
            if right in all_in:
                order = sorted(cand, key=lambda t: int(t[5:]))
                i = order.index(right)
                right = next(order[(i + k) % len(order)] for k in range(1, len(order))
                             if order[(i + k) % len(order)] not in all_in)
            first = next(e for e in evs if e.type == "player_action")
            assert first.action == "bring_in" and f"seat:{first.seat}" == right, rid
            pack = next(e.pack_id for e in evs if e.type == "round_started")
            assert {e.pack_id for e in evs if e.type == "reshuffle"} <= {pack + "-R"}
            assert {e.pack_id for e in cards if e.type == "card_dealt"} <= {pack, pack + "-R"}
            hands += 1
    assert hands > 20
