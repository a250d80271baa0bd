"""Document 003 (baccarat shoe procedure) and the tableau: each rule raised, and not raised."""
from __future__ import annotations

from tests.rules.stream import Baccarat, rule_ids


def full_shoe(**cut) -> Baccarat:
    """A pack by the book: the cutting card surfaces in coup 1, last coup announced, one more coup."""
    b = Baccarat()
    b.prepare(from_back=410, **cut)  # burn of 6 cards (5h + 5), cutting card after card 6
    b.coup(announce=True)
    b.coup()
    b.empty()
    return b


def test_003_a_pack_by_the_book_raises_nothing():
    b = full_shoe()
    assert b.replay() == []
    rows = b.last_replay.drain_packs()
    assert rows[0]["cut_card_surfaced_at"] == 6 and rows[0]["burn_count"] == 6


def test_003_4_1_cards_from_an_unshuffled_pack():
    b = Baccarat()
    b.shuffle(shuffler=False, dealer=False)
    b.cut()
    b.load()
    b.burn()
    b.coup()
    assert rule_ids(b.replay()) == ["UNSHUFFLED_PACK"]


def test_003_4_1_a_shuffler_report_alone_is_a_shuffle():
    b = Baccarat()
    b.shuffle(dealer=False)
    b.cut()
    b.load()
    b.burn()
    b.coup()
    assert b.replay() == []


def test_003_4_2_riffle_requested_but_not_done():
    b = Baccarat()
    b.shuffle(preshuffled=True, dealer=False)
    b.dealer("riffle_requested", by="seat:3")
    b.cut()
    b.load()
    b.burn()
    b.coup()
    assert rule_ids(b.replay()) == ["RIFFLE_SKIPPED"]


def test_003_4_2_riffle_done_before_the_cut():
    b = Baccarat()
    b.shuffle(preshuffled=True, dealer=False)
    b.dealer("riffle_requested", by="seat:3")
    b.dealer("shuffle", pack_id="P-1", method="riffle")
    b.cut()
    b.load()
    b.burn()
    b.coup()
    assert b.replay() == []


def test_003_4_3_1_first_pack_is_cut_by_the_first_player_to_the_table():
    b = Baccarat(seats=(5, 2))  # seat 5 sat first
    b.prepare(by="seat:2", offers=("seat:2",))
    b.coup()
    f = b.replay()
    assert rule_ids(f) == ["CUT_OFFER"] and f[0].expected == "the cut offered to seat 5, the designated player"
    assert f[0].actual == "it was offered to seat 2"
    ok = Baccarat(seats=(5, 2))
    ok.prepare(by="seat:5", offers=("seat:5",))
    ok.coup()
    assert ok.replay() == []


def test_003_4_3_2_later_packs_are_cut_by_the_lowest_occupied_seat():
    b = Baccarat(seats=(5, 2))
    b.prepare(by="seat:5", offers=("seat:5",))
    b.coup()
    b.empty()
    b.prepare("P-2", by="seat:5", offers=("seat:5",))
    b.coup()
    f = b.replay()
    assert rule_ids(f) == ["CUT_OFFER"] and f[0].pack_id == "P-2"
    ok = Baccarat(seats=(5, 2))
    ok.prepare(by="seat:5", offers=("seat:5",))
    ok.coup()
    ok.empty()
    ok.prepare("P-2", by="seat:2", offers=("seat:2",))
    ok.coup()
    assert ok.replay() == []


def test_003_4_4_after_a_refusal_the_offer_moves_clockwise():
    ok = Baccarat(seats=(2, 3, 7))
    ok.prepare(by="supervisor", offers=("seat:2", "seat:3", "seat:7", "supervisor"),
               refusals=("seat:2", "seat:3", "seat:7"))
    ok.coup()
    assert ok.replay() == []
    skip = Baccarat(seats=(2, 3, 7))
    skip.prepare(by="seat:7", offers=("seat:2", "seat:7"), refusals=("seat:2",))
    skip.coup()
    assert rule_ids(skip.replay()) == ["CUT_OFFER"]


def test_003_4_4_supervisor_cuts_while_a_seat_was_not_offered():
    b = Baccarat(seats=(2, 3))
    b.prepare(by="supervisor", offers=("seat:2",), refusals=("seat:2",))
    b.coup()
    assert rule_ids(b.replay()) == ["CUT_OFFER"]


def test_003_4_4_cut_by_someone_other_than_the_last_person_offered():
    b = Baccarat(seats=(2, 3))
    b.prepare(by="seat:3", offers=("seat:2",))
    b.coup()
    assert rule_ids(b.replay()) == ["CUT_OFFER"]


def test_003_4_5_cut_one_deck_from_either_end():
    for position, want in ((51, ["CUT_PLACEMENT"]), (52, []), (364, []), (365, ["CUT_PLACEMENT"])):
        b = Baccarat()
        b.prepare(position=position)
        b.coup()
        assert rule_ids(b.replay()) == want, position


def test_003_4_6_cutting_card_at_least_twenty_from_the_back():
    for from_back, want in ((19, ["CUT_CARD_PLACEMENT"]), (20, [])):
        b = Baccarat()
        b.prepare(from_back=from_back)
        b.coup()
        assert rule_ids(b.replay()) == want, from_back


def test_003_4_6_cutting_card_surfaces_where_it_was_inserted():
    b = Baccarat()
    b.shuffle()
    b.cut(from_back=410)
    b.cut_at = 8  # the shoe finds it two cards later than recorded
    b.load()
    b.burn()
    b.coup(announce=True)  # card 9, right after the cutting card, is in this coup
    b.coup()
    assert rule_ids(b.replay()) == ["CUT_CARD_MISMATCH"]
    assert "CUT_CARD_MISMATCH" not in rule_ids(full_shoe().replay())


def test_003_4_7_burn_first_card_face_up():
    b = Baccarat()
    b.shuffle()
    b.cut()
    b.load()
    b.burn(first_face="down")
    b.coup()
    assert rule_ids(b.replay()) == ["BURN_COUNT"]


def test_003_4_7_2_burn_as_many_face_down_as_the_first_card_value():
    for down, want in ((4, ["BURN_COUNT"]), (5, []), (6, ["BURN_COUNT"])):
        b = Baccarat()
        b.shuffle()  # first card 5h
        b.cut()
        b.load()
        b.burn(face_down=down)
        b.coup()
        assert rule_ids(b.replay()) == want, down


def test_003_4_8_ten_jack_queen_king_count_ten():
    b = Baccarat()
    b.shuffle(first="Qs")
    b.cut()
    b.load()
    b.burn(face_down=10)
    b.coup()
    assert b.replay() == []


def test_003_4_7_no_burn_before_the_first_coup():
    b = Baccarat()
    b.shuffle()
    b.cut()
    b.load()
    b.coup()
    assert rule_ids(b.replay()) == ["BURN_SKIPPED"]


def test_003_4_7_unreadable_first_burn_card_is_undecided():
    b = Baccarat()
    b.shuffle()
    b.cut()
    b.load()
    first = b.draw()
    b.deal("burn", None, "up")
    for _ in range(3):  # wrong for a 5h, but the terminal did not know the card
        b.draw()
        b.deal("burn", None, "down")
    b.coup()
    assert b.replay() == []
    assert first == "5h"
    assert b.last_replay.drain_rounds()[0]["undecided"] == ["BURN_COUNT"]


def test_003_4_9_last_coup_announced_after_the_cutting_card():
    b = Baccarat()
    b.prepare(from_back=410)
    b.coup()  # the cutting card surfaced in this coup; no announcement
    b.coup()
    b.empty()
    f = b.replay()
    assert rule_ids(f) == ["LAST_COUP_NOT_ANNOUNCED"] and f[0].pack_id == "P-1"


def test_003_4_9_one_more_coup_then_replace_the_cards():
    b = Baccarat()
    b.prepare(from_back=410)
    b.coup(announce=True)
    b.coup()
    b.coup()  # one too many
    b.empty()
    assert rule_ids(b.replay()) == ["COUPS_AFTER_CUT_CARD"]


def test_tableau_drawing_rule_raised_when_the_player_stands_on_five():
    b = Baccarat()
    b.prepare(cards=None)
    # force a player 5 (no natural), banker 3: player must draw
    b.cards[b.pos:b.pos + 6] = ["2c", "Kd", "3h", "3s", "9c", "4d"]
    b.coup(targets=["player", "banker", "player", "banker"], payouts={(2, "player"): ("win", 100)})
    f = b.replay()
    assert rule_ids(f) == ["DRAWING_RULE"] and "stood on 5" in f[0].actual


def test_tableau_banker_three_does_not_draw_against_a_player_eight():
    b = Baccarat()
    b.prepare()
    b.cards[b.pos:b.pos + 6] = ["2c", "Kd", "3h", "3s", "8c", "4d"]
    b.coup()  # the builder deals by the tableau: player draws 8c, banker stands on 3
    assert b.replay() == []
    wrong = Baccarat()
    wrong.prepare()
    wrong.cards[wrong.pos:wrong.pos + 6] = ["2c", "Kd", "3h", "3s", "8c", "4d"]
    wrong.coup(targets=["player", "banker", "player", "banker", "player", "banker"])
    assert rule_ids(wrong.replay()) == ["DRAWING_RULE"]


def test_deal_order_player_banker_player_banker():
    b = Baccarat()
    b.prepare()
    b.cards[b.pos:b.pos + 6] = ["9c", "Kd", "8h", "Ts", "8c", "4d"]  # two naturals: no draws
    b.coup(targets=["banker", "player", "player", "banker"])
    f = b.replay()
    assert rule_ids(f) == ["DEAL_ORDER"] and f[0].round_id == "R-1"


def test_payout_banker_win_pays_0_95():
    b = Baccarat()
    b.prepare()
    b.cards[b.pos:b.pos + 6] = ["2c", "Kd", "3h", "9s", "Kc", "4d"]  # player 5 draws K: 5; banker 9
    b.coup(payouts={(3, "banker"): ("win", 100)})
    f = b.replay()
    assert rule_ids(f) == ["PAYOUT"]
    assert (f[0].seat, f[0].spot, f[0].expected, f[0].actual) == (
        3, "banker", "seat 3's banker bet should be settled as a win paying 95", "it was settled as a win paying 100")


def test_payout_tie_pays_eight_and_pushes_player_and_banker():
    b = Baccarat()
    b.prepare()
    b.cards[b.pos:b.pos + 6] = ["9c", "9d", "Th", "Ts", "8c", "4d"]
    b.coup(bets=((2, "player", 100), (3, "tie", 10), (5, "banker", 50)))
    assert b.replay() == []
    bad = Baccarat()
    bad.prepare()
    bad.cards[bad.pos:bad.pos + 6] = ["9c", "9d", "Th", "Ts", "8c", "4d"]
    bad.coup(bets=((2, "player", 100), (3, "tie", 10)),
             payouts={(2, "player"): ("lose", -100), (3, "tie"): ("win", 90)})
    f = bad.replay()
    assert rule_ids(f) == ["PAYOUT", "PAYOUT"]
    assert {(x.seat, x.spot) for x in f} == {(2, "player"), (3, "tie")}


def test_cards_before_bets_closed():
    b = Baccarat()
    b.prepare()
    b.coup(bets_closed=False)
    f = b.replay()
    assert rule_ids(f) == ["CARDS_BEFORE_BETS_CLOSED"]


def test_unreadable_coup_card_leaves_drawing_and_payout_undecided():
    b = Baccarat()
    b.prepare()
    b.round_no += 1
    b.dealer("round_started", round_id="R-1", game="baccarat", pack_id="P-1")
    b.dealer("bet_placed", round_id="R-1", seat=2, spot="player", amount=100)
    b.dealer("bets_closed", round_id="R-1")
    for target, card in zip(["player", "banker", "player", "banker"], ["2c", "Kd", None, "7s"]):
        b.draw()
        b.deal(target, card, "up", "R-1")
    b.dealer("payout", round_id="R-1", seat=2, spot="player", result="win", amount=100)
    b.dealer("round_ended", round_id="R-1")
    f = [x for x in b.replay() if x.rule_id not in ("SHOE_CARD_MISMATCH",)]
    assert f == []
    assert b.last_replay.drain_rounds()[0]["undecided"] == ["DRAWING_RULE", "PAYOUT"]
