"""Hold against theory: the seeds' figures and the ``hold`` query over a lake small enough to check by hand.

The theory (``seeds/hold_outcomes.csv``) is derived here again by exact enumeration of
punto banco from eight full decks; the query's every figure over the hand-made lake below is
worked out in this file from the definitions of ``queries/README.md`` ("Hold against theory").
"""
from __future__ import annotations

import csv
import datetime as dt
import decimal
import math
from fractions import Fraction

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.lake import Lake
from pitwatch.lake.parquet import file_schema, write_partition
from pitwatch.queries.catalog import run_query
from pitwatch.schemas.arrow import rows_to_table
from pitwatch.seeds import read_csv, settings_for
from pitwatch.simulator.baccarat import banker_draws

DAY = dt.date(2026, 11, 28)
UTC = dt.timezone.utc


# ---------------------------------------------------------------- the theory


def punto_banco_outcomes(decks: int = 8) -> dict[str, Fraction]:
    """P(player wins), P(banker wins), P(tie) of one coup from a full shoe, exactly: every order of
    the (up to six) cards a coup takes, weighted by its probability without replacement."""
    counts = [16 * decks] + [4 * decks] * 9          # points 0 (T J Q K) and 1 … 9
    out = {"player": Fraction(0), "banker": Fraction(0), "tie": Fraction(0)}

    def settle(p: int, b: int, weight: Fraction) -> None:
        out["tie" if p == b else "player" if p > b else "banker"] += weight

    def deal(cards: list, left: int, weight: Fraction) -> None:
        for v in range(10):
            if counts[v]:
                w = weight * Fraction(counts[v], left)
                counts[v] -= 1
                play(cards + [v], left - 1, w)
                counts[v] += 1

    def play(cards: list, left: int, weight: Fraction) -> None:
        if len(cards) < 4:
            return deal(cards, left, weight)
        p, b = (cards[0] + cards[2]) % 10, (cards[1] + cards[3]) % 10
        if len(cards) == 4:
            if p >= 8 or b >= 8:
                return settle(p, b, weight)
            if p <= 5:
                return deal(cards, left, weight)                 # the player's third card
            if banker_draws(b, None):
                return deal(cards + [None], left, weight)        # the player stood: the banker's third card
            return settle(p, b, weight)
        p3 = cards[4]
        p = p if p3 is None else (p + p3) % 10
        if len(cards) == 5:
            if banker_draws(b, p3):
                return deal(cards, left, weight)
            return settle(p, b, weight)
        return settle(p, (b + cards[5]) % 10, weight)

    deal([], 52 * decks, Fraction(1))
    return out


def test_seed_outcomes_are_the_exact_enumeration_of_eight_deck_punto_banco():
    exact = punto_banco_outcomes(8)
    assert sum(exact.values()) == 1
    rows = [r for r in read_csv("hold_outcomes.csv") if r["game"] == "baccarat"]
    assert {r["outcome"] for r in rows} == set(exact)
    for r in rows:
        assert float(r["probability"]) == pytest.approx(float(exact[r["outcome"]]), abs=1e-15)


def test_seed_nets_are_what_the_baccarat_settings_pay():
    pays = settings_for("*")
    player, banker, tie = (float(pays[k]) for k in ("player_pays", "banker_pays", "tie_pays"))
    want = {("player", "player"): player, ("player", "banker"): -1, ("player", "tie"): -1,
            ("banker", "player"): -1, ("banker", "banker"): banker, ("banker", "tie"): -1,
            ("tie", "player"): 0, ("tie", "banker"): 0, ("tie", "tie"): tie}
    got = {(r["outcome"], r["spot"]): float(r["net"]) for r in read_csv("hold_outcomes.csv")
           if r["game"] == "baccarat"}
    assert got == want


def test_house_edges_are_the_published_eight_deck_figures():
    """The edges seeds/README.md quotes follow from the file: player 1.235 %, banker 1.058 %, tie 14.36 %."""
    probs = {r["outcome"]: float(r["probability"]) for r in read_csv("hold_outcomes.csv")}
    nets = {(r["outcome"], r["spot"]): float(r["net"]) for r in read_csv("hold_outcomes.csv")}
    edge = {s: -sum(probs[o] * nets[o, s] for o in probs) for s in ("player", "banker", "tie")}
    assert round(100 * edge["player"], 3) == 1.235
    assert round(100 * edge["banker"], 3) == 1.058
    assert round(100 * edge["tie"], 2) == 14.36


# ---------------------------------------------------------------- a lake to check by hand
#
# BAC-01 (baccarat):  D-1 deals R-1 (player 100 at seat 1, banker 200 at seat 2; the player wins: +100, -200),
#   R-2 (tie 10 and player 100 at seat 1; a tie: +80, push 0) and R-3 (banker 1000, voided: left out);
#   D-2 deals R-4 (banker 100 at seat 3; the banker wins: +95).
# CMB-01 (combate): D-2 deals C-1 (first 100, a double of 100, paid +200): no theory for combate.
# STU-01 (stud): D-3 deals S-1 (antes and raises): players against each other, never in the hold.

_seq = iter(range(1, 10_000))


def _ev(table, dealer, type_, minute, **kw):
    n = next(_seq)
    return {"event_id": f"ev-{n}", "ts": dt.datetime(2026, 11, 28, 20, minute, n % 60, tzinfo=UTC),
            "source": "dealer", "type": type_, "table_id": table, "device_id": f"DT-{table}", "seq": n,
            "dealer_id": dealer, "gaming_day": DAY, **kw}


def _round(table, dealer, rid, game, minute, bets=(), payouts=(), actions=(), voided=False):
    rows = [_ev(table, dealer, "round_started", minute, round_id=rid, game=game, pack_id="P-1")]
    rows += [_ev(table, dealer, "bet_placed", minute, round_id=rid, seat=s, spot=spot, amount=a) for s, spot, a in bets]
    rows += [_ev(table, dealer, "player_action", minute, round_id=rid, seat=s, action=act, amount=a)
             for s, act, a in actions]
    if voided:
        rows.append(_ev(table, dealer, "round_voided", minute, round_id=rid, reason="misdeal"))
    rows += [_ev(table, dealer, "payout", minute, round_id=rid, seat=s, spot=spot, result=res, amount=a)
             for s, spot, res, a in payouts]
    rows.append(_ev(table, dealer, "round_ended", minute, round_id=rid))
    return rows


HAND_EVENTS = (
    _round("BAC-01", "D-1", "R-1", "baccarat", 1, bets=[(1, "player", 100), (2, "banker", 200)],
           payouts=[(1, "player", "win", 100), (2, "banker", "lose", -200)])
    + _round("BAC-01", "D-1", "R-2", "baccarat", 2, bets=[(1, "tie", 10), (1, "player", 100)],
             payouts=[(1, "player", "push", 0), (1, "tie", "win", 80)])
    + _round("BAC-01", "D-1", "R-3", "baccarat", 3, bets=[(2, "banker", 1000)], voided=True)
    + _round("BAC-01", "D-2", "R-4", "baccarat", 4, bets=[(3, "banker", 100)],
             payouts=[(3, "banker", "win", 95)])
    + _round("CMB-01", "D-2", "C-1", "combate", 5, bets=[(1, "first", 100)], actions=[(1, "double", 100)],
             payouts=[(1, "first", "win", 200)])
    + _round("STU-01", "D-3", "S-1", "stud", 6, bets=[(1, "ante", 5), (2, "ante", 5)],
             actions=[(1, "raise", 40), (2, "call", 40)])
)


@pytest.fixture(scope="module")
def hand_lake(tmp_path_factory) -> str:
    lake = str(tmp_path_factory.mktemp("hold-lake"))
    write_partition(Lake.at(lake), "events", DAY, [rows_to_table(HAND_EVENTS, file_schema("events"))], run_id="hand")
    return lake


def _theory() -> tuple[dict, dict]:
    rows = read_csv("hold_outcomes.csv")
    probs = {r["outcome"]: float(r["probability"]) for r in rows if r["game"] == "baccarat"}
    nets = {(r["outcome"], r["spot"]): float(r["net"]) for r in rows if r["game"] == "baccarat"}
    return probs, nets


def expected_and_variance(wagers: dict[str, float]) -> tuple[float, float]:
    """One coup's expected casino win and its variance: the outcome settles every spot at once."""
    probs, nets = _theory()
    wins = {o: -sum(a * nets[o, spot] for spot, a in wagers.items()) for o in probs}
    mean = sum(probs[o] * wins[o] for o in probs)
    return mean, sum(probs[o] * wins[o] ** 2 for o in probs) - mean ** 2


def _hold(lake, by="table_dealer"):
    from pitwatch.queries.lake_views import connect

    con = connect(Lake.at(lake))
    try:
        columns, rows = run_query(con, "hold", {"from_day": "2026-11-28", "to_day": "2026-11-28", "by": by})
    finally:
        con.close()
    # money comes as DECIMAL(18, 2): compared here as the float of its cents
    return [{c: float(v) if isinstance(v, decimal.Decimal) else v for c, v in zip(columns, r)} for r in rows]


def test_money_is_shown_to_the_cent_never_in_exponent_form(hand_lake):
    result = CliRunner().invoke(main, ["query", "hold", "--lake", hand_lake, "--param", "from_day=2026-11-28",
                                       "--param", "to_day=2026-11-28", "--param", "by=table"])
    assert result.exit_code == 0, result.stderr
    assert " 510.00 " in result.stdout and " -75.00 " in result.stdout
    assert "e+" not in result.stdout


def test_hold_per_table_and_dealer_is_what_the_definitions_give(hand_lake):
    e1, v1 = expected_and_variance({"player": 100, "banker": 200})
    e2, v2 = expected_and_variance({"tie": 10, "player": 100})
    e4, v4 = expected_and_variance({"banker": 100})
    d1_theo, d1_sd = e1 + e2, math.sqrt(v1 + v2)
    d2_theo, d2_sd = e4, math.sqrt(v4)
    rows = _hold(hand_lake)
    assert rows == [
        {"table_id": "BAC-01", "game": "baccarat", "dealer_id": "D-2", "dealer_name": None, "rounds": 1,
         "unsettled_rounds": 0, "handle": 100.0, "win": -95.0, "hold_pct": -95.0, "priced_rounds": 1, "theo_win": round(d2_theo, 2),
         "theo_hold_pct": round(100 * d2_theo / 100, 3), "sd": round(d2_sd, 2),
         "z": round((-95 - d2_theo) / d2_sd, 2)},
        {"table_id": "BAC-01", "game": "baccarat", "dealer_id": "D-1", "dealer_name": None, "rounds": 2,
         "unsettled_rounds": 0, "handle": 410.0, "win": 20.0, "hold_pct": round(100 * 20 / 410, 3), "priced_rounds": 2,
         "theo_win": round(d1_theo, 2), "theo_hold_pct": round(100 * d1_theo / 410, 3), "sd": round(d1_sd, 2),
         "z": round((20 - d1_theo) / d1_sd, 2)},
        # the double adds to the handle; combate has no theory yet, so no z
        {"table_id": "CMB-01", "game": "combate", "dealer_id": "D-2", "dealer_name": None, "rounds": 1,
         "unsettled_rounds": 0, "handle": 200.0, "win": -200.0, "hold_pct": -100.0, "priced_rounds": 0, "theo_win": None,
         "theo_hold_pct": None, "sd": None, "z": None},
    ]


def test_hold_per_dealer_adds_the_tables_and_prices_only_rounds_with_a_theory(hand_lake):
    e4, v4 = expected_and_variance({"banker": 100})
    rows = {r["dealer_id"]: r for r in _hold(hand_lake, by="dealer")}
    assert set(rows) == {"D-1", "D-2"}      # D-3 dealt only stud: no hold
    d2 = rows["D-2"]
    assert (d2["table_id"], d2["game"], d2["rounds"], d2["handle"], d2["win"], d2["priced_rounds"]) == (
        None, "mixed", 2, 300.0, -295.0, 2 - 1)
    # z compares the priced rounds' win (-95, not -295) with their theory
    assert d2["z"] == round((-95 - e4) / math.sqrt(v4), 2)
    assert d2["theo_hold_pct"] == round(100 * e4 / 100, 3)


def test_hold_per_table(hand_lake):
    rows = {r["table_id"]: r for r in _hold(hand_lake, by="table")}
    assert set(rows) == {"BAC-01", "CMB-01"}
    assert (rows["BAC-01"]["dealer_id"], rows["BAC-01"]["rounds"], rows["BAC-01"]["handle"],
            rows["BAC-01"]["win"]) == (None, 3, 510.0, -75.0)


def test_a_voided_round_is_not_in_the_hold(hand_lake):
    rows = _hold(hand_lake)
    assert sum(r["rounds"] for r in rows if r["table_id"] == "BAC-01") == 3
    assert 1000.0 not in {r["handle"] for r in rows}


# TBP-01 (three_bet_poker, its terminal writes no payouts): D-5 deals T-1 (ante 10, pair plus 5) and T-2
#   (ante 20); D-5 also deals B-1 at BAC-02 (banker 100; the banker wins: +95), a settled round.
# BAC-02's D-6 deals B-2 with no bet at all (nothing to settle: a win of exactly 0, settled).
UNSETTLED_EVENTS = (
    _round("TBP-01", "D-5", "T-1", "three_bet_poker", 7, bets=[(1, "ante", 10), (1, "pair_plus", 5)])
    + _round("TBP-01", "D-5", "T-2", "three_bet_poker", 8, bets=[(2, "ante", 20)])
    + _round("BAC-02", "D-5", "B-1", "baccarat", 9, bets=[(3, "banker", 100)], payouts=[(3, "banker", "win", 95)])
    + _round("BAC-02", "D-6", "B-2", "baccarat", 10)
)


@pytest.fixture(scope="module")
def unsettled_lake(tmp_path_factory) -> str:
    lake = str(tmp_path_factory.mktemp("unsettled-lake"))
    write_partition(Lake.at(lake), "events", DAY, [rows_to_table(UNSETTLED_EVENTS, file_schema("events"))],
                    run_id="hand")
    return lake


def test_rounds_with_wagers_and_no_payout_have_no_win_nor_hold(unsettled_lake):
    rows = {r["table_id"]: r for r in _hold(unsettled_lake, by="table")}
    tbp = rows["TBP-01"]
    assert (tbp["rounds"], tbp["unsettled_rounds"], tbp["handle"], tbp["win"], tbp["hold_pct"],
            tbp["priced_rounds"], tbp["theo_win"], tbp["z"]) == (2, 2, 35.0, None, None, 0, None, None)


def test_a_settled_round_keeps_its_win_beside_unsettled_ones(unsettled_lake):
    d5 = {r["dealer_id"]: r for r in _hold(unsettled_lake, by="dealer")}["D-5"]
    # three rounds, two unsettled: the win and hold % are the baccarat coup's alone
    assert (d5["rounds"], d5["unsettled_rounds"], d5["handle"], d5["win"], d5["hold_pct"], d5["priced_rounds"]) == (
        3, 2, 135.0, -95.0, -95.0, 1)


def test_a_round_without_a_wager_is_settled_at_zero(unsettled_lake):
    d6 = {r["dealer_id"]: r for r in _hold(unsettled_lake, by="table_dealer")}["D-6"]
    assert (d6["rounds"], d6["unsettled_rounds"], d6["handle"], d6["win"], d6["hold_pct"]) == (1, 0, 0.0, 0.0, None)


def test_every_settled_row_of_the_hand_lake_has_no_unsettled_round(hand_lake):
    assert {r["unsettled_rounds"] for r in _hold(hand_lake, by="dealer")} == {0}


@pytest.mark.parametrize("day", ["2026-11-28", "2026-11-20"])   # a day with rounds, and one without
def test_hold_by_an_unknown_grouping_is_one_error_line(hand_lake, day):
    result = CliRunner().invoke(main, ["query", "hold", "--lake", hand_lake, "--param", f"from_day={day}",
                                       "--param", f"to_day={day}", "--param", "by=croupier"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert "croupier" in result.stderr


def test_hold_over_days_without_a_round_is_empty(hand_lake):
    result = CliRunner().invoke(main, ["query", "hold", "--lake", hand_lake, "--param", "from_day=2026-11-20",
                                       "--param", "to_day=2026-11-20", "--format", "json"])
    assert (result.exit_code, result.stdout) == (0, "")


def test_hold_from_the_command_line_shows_the_rows(hand_lake, tmp_path):
    roster = tmp_path / "dealers.csv"
    roster.write_text("id,name,shift\nD-1,Ana Rivera,swing\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["query", "hold", "--lake", hand_lake, "--param", "from_day=2026-11-28",
                                       "--param", "to_day=2026-11-28", "--format", "csv", "--dealers", str(roster)])
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(result.stdout.splitlines()))
    assert [(r["table_id"], r["dealer_id"], r["dealer_name"]) for r in rows] == [
        ("BAC-01", "D-2", ""), ("BAC-01", "D-1", "Ana Rivera"), ("CMB-01", "D-2", "")]
