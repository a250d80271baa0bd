"""HOLD_SKEW: one dealer arranges the cards for a confederate; the streams stay procedurally perfect.

The batch and the ``hold`` query over such a floor are tested in ``tests/queries/test_hold_floor.py``.
"""
from __future__ import annotations

import collections

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.simulator.baccarat import coup_winner
from pitwatch.simulator.cards import BACCARAT_POINTS
from pitwatch.simulator.faults import build_rates
from pitwatch.simulator.truth import read_hold_skew
from tests.simulate.conftest import make_floor

GAMES = {"baccarat": 2}
P = 0.8


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    return make_floor(tmp_path_factory.mktemp("skew"), tables=GAMES, hours=4, seed=3, faults={"HOLD_SKEW": P})


@pytest.fixture(scope="module")
def unskewed(tmp_path_factory):
    return make_floor(tmp_path_factory.mktemp("noskew"), tables=GAMES, hours=4, seed=3)


def _rounds(floor, table_id):
    """Per round of the table: its dealer, bets, cards by hand, payouts (from the terminal's events)."""
    rounds: dict[str, dict] = {}
    for e in floor.dealer(table_id):
        if not e.round_id:
            continue
        r = rounds.setdefault(e.round_id, {"dealer": e.dealer_id, "bets": [], "cards": [], "payouts": []})
        if e.type == "bet_placed":
            r["bets"].append((e.seat, e.spot, float(e.amount)))
        elif e.type == "card_dealt" and e.target in ("player", "banker"):
            r["cards"].append((e.target, e.card))
        elif e.type == "payout":
            r["payouts"].append((e.seat, e.spot, e.result, float(e.amount)))
    return rounds


def _winner(cards) -> str:
    p = sum(BACCARAT_POINTS[c] for t, c in cards if t == "player") % 10
    b = sum(BACCARAT_POINTS[c] for t, c in cards if t == "banker") % 10
    return "tie" if p == b else "player" if p > b else "banker"


def test_hold_skew_raises_no_finding_and_says_who_in_its_own_truth(skewed):
    assert skewed.truth == []
    assert skewed.rejects == []
    (truth,) = read_hold_skew(skewed.out)
    first_dealer = skewed.dealer("BAC-01")[0].dealer_id      # on duty when the table opened
    assert (truth["table_id"], truth["dealer_id"], truth["spot"], truth["p"]) == ("BAC-01", first_dealer, "player", P)
    assert truth["seat"] is not None
    assert 0 < truth["arranged"] <= truth["opportunities"]
    # about P of the opportunities arranged (binomial, 4 standard deviations)
    n = truth["opportunities"]
    assert abs(truth["arranged"] - P * n) <= 4 * (n * P * (1 - P)) ** 0.5
    assert truth["expected_extra_win"] > 0 and truth["arranged_extra_win"] > 0


def test_every_payout_of_the_skewed_table_is_what_its_cards_say(skewed):
    rounds = _rounds(skewed, "BAC-01")
    assert len(rounds) > 100
    for rid, r in rounds.items():
        winner = _winner(r["cards"])
        for seat, spot, result, amount in r["payouts"]:
            bet = next(a for s, sp, a in r["bets"] if (s, sp) == (seat, spot))
            if spot == "tie":
                want = ("win", 8 * bet) if winner == "tie" else ("lose", -bet)
            elif winner == "tie":
                want = ("push", 0)
            elif spot == winner:
                want = ("win", bet * 0.95 if spot == "banker" else bet)
            else:
                want = ("lose", -bet)
            assert (result, amount) == pytest.approx(want), (rid, seat, spot)


def test_the_skewed_dealer_s_player_hand_wins_far_more_often_and_the_others_do_not(skewed):
    (truth,) = read_hold_skew(skewed.out)
    wins: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in _rounds(skewed, "BAC-01").values():
        wins[r["dealer"]][_winner(r["cards"])] += 1
    share = {d: c["player"] / sum(c.values()) for d, c in wins.items()}
    # arranged with probability P, else a fair coup (player 44.6 %): P + (1 - P) * 0.446 = 0.89
    assert share.pop(truth["dealer_id"]) > 0.8
    assert all(s < 0.6 for s in share.values()), share


def test_the_confederate_bets_on_player_whenever_his_dealer_deals(skewed):
    (truth,) = read_hold_skew(skewed.out)
    for r in _rounds(skewed, "BAC-01").values():
        mine = [(spot, a) for s, spot, a in r["bets"] if s == truth["seat"] and spot != "tie"]
        if r["dealer"] == truth["dealer_id"]:
            assert mine == [("player", 5000.0)]


def test_hold_skew_leaves_the_other_tables_as_they_were(skewed, unskewed):
    """BAC-02's own devices write the same bytes with or without the fault (BAC-01 shares a back-room
    shuffler with it, whose file interleaves both tables' packs by time)."""
    assert read_hold_skew(unskewed.out) == []
    for device in ("DT-BAC02",):
        (a,) = skewed.out.glob(f"*/{device}.jsonl")
        (b,) = unskewed.out.glob(f"*/{device}.jsonl")
        assert a.read_bytes() == b.read_bytes()
    assert (skewed.out / "dealers.csv").read_bytes() == (unskewed.out / "dealers.csv").read_bytes()


def test_coup_winner_follows_the_tableau():
    assert coup_winner(["9h", "2c", "Kd", "3s"]) == "player"          # a natural 9 against 5: no third card
    assert coup_winner(["2h", "9c", "3d", "Ts", "4c"]) == "banker"    # player 5 draws, banker's natural stands
    assert coup_winner(["Th", "Tc", "5d", "5s", "Ah", "Kc"]) == "player"   # 5 v 5: player draws A (6), banker 5 stands
    assert coup_winner(["2h", "2c"]) is None


def test_the_fault_mix_never_holds_a_dealer_working_with_a_player():
    assert "HOLD_SKEW" not in build_rates(0.05, None)
    assert build_rates(None, {"HOLD_SKEW": 0.3}) == {"HOLD_SKEW": 0.3}


def test_hold_skew_is_asked_for_by_name_on_the_command_line(tmp_path):
    listed = CliRunner().invoke(main, ["simulate", "--list-faults"])
    assert "HOLD_SKEW" in [ln.split()[0] for ln in listed.output.splitlines()]
    bad = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path / "x"), "--fault", "HOLD_SKEW=2"])
    assert bad.exit_code == 2 and "HOLD_SKEW=2" in bad.output
    ok = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path / "y"), "--tables", "baccarat=1", "--hours", "1",
                                   "--fault", "HOLD_SKEW=0.5", "--workers", "1"])
    assert ok.exit_code == 0, ok.output
    assert "hold_skew.json" in ok.output and read_hold_skew(tmp_path / "y")[0]["p"] == 0.5


@pytest.mark.parametrize("tables", ["stud=1", "three_bet_poker=1,combate=1", "stud=1,baccarat=0"])
def test_hold_skew_on_a_floor_without_baccarat_is_one_error_line(tmp_path, tables):
    out = tmp_path / "x"
    result = CliRunner().invoke(main, ["simulate", "--out", str(out), "--tables", tables, "--hours", "1",
                                       "--fault", "HOLD_SKEW=0.5", "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert result.stderr == ("Error: HOLD_SKEW arranges baccarat coups and the floor has no baccarat table "
                             "(add one to --tables, e.g. baccarat=1)\n")
    assert result.stdout == "" and not out.exists()      # nothing written, nothing claimed


def test_hold_skew_refused_by_the_simulator_itself_without_baccarat(tmp_path):
    from pitwatch.simulator import simulate

    with pytest.raises(ValueError, match="no baccarat table"):
        simulate(tmp_path / "x", tables={"stud": 1}, hours=1, faults={"HOLD_SKEW": 0.5})
    assert not (tmp_path / "x").exists()
