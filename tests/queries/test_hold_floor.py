"""Hold against theory over simulated floors, end to end (``pitwatch simulate`` → ``pitwatch run`` →
``pitwatch query hold``): a dealer working with a player stands out, and no dealer of a clean floor does.

The threshold is the one ``queries/README.md`` ("Hold against theory") tells an analyst to use when
comparing k rows: |z| > Φ⁻¹(1 − 0.05 / 2k) (Bonferroni, a 5 % chance for the whole table that any
row of a clean floor passes it).
"""
from __future__ import annotations

import json
import math
from statistics import NormalDist

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.simulator.truth import read_hold_skew

pytestmark = pytest.mark.slow

TABLES = "baccarat=2"
HOURS = "8"
P = "0.8"


def threshold(rows: int, alpha: float = 0.05) -> float:
    return NormalDist().inv_cdf(1 - alpha / (2 * rows))


def _floor(tmp_path, name, seed, *fault, tables=TABLES, hours=HOURS):
    out, lake = tmp_path / f"{name}-floor", tmp_path / f"{name}-lake"
    sim = CliRunner().invoke(main, ["simulate", "--out", str(out), "--tables", tables, "--hours", hours,
                                    "--seed", str(seed), "--workers", "1", *fault])
    assert sim.exit_code == 0, sim.output
    days = sorted(str(p) for p in out.iterdir() if p.is_dir())     # OUT/<day>/: not OUT's truth files
    run = CliRunner().invoke(main, ["run", *days, "--lake", str(lake), "--devices", str(out / "devices.csv"),
                                    "--quiet"])
    assert run.exit_code == 0, run.output
    assert _query(lake, "select count(*) as n from rejects") == [{"n": 0}]
    return out, lake


def _query(lake, sql_or_name, *params):
    args = (["query", sql_or_name] if not sql_or_name.startswith("select") else ["sql", sql_or_name])
    result = CliRunner().invoke(main, [*args, "--lake", str(lake), "--format", "json", *params])
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def _hold(lake):
    return _query(lake, "hold", "--param", "from_day=2026-11-28", "--param", "to_day=2026-11-28")


def _findings(lake):
    return _query(lake, "select rule_id, table_id, round_id, pack_id from findings order by all")


def test_a_dealer_working_with_a_player_stands_out_by_hold_alone(tmp_path):
    out, lake = _floor(tmp_path, "skew", 3, "--fault", f"HOLD_SKEW={P}")
    _, clean_lake = _floor(tmp_path, "clean", 3)
    (truth,) = read_hold_skew(out)

    # no rule sees it: the same findings as the same floor without the fault (none), no PAYOUT among them
    assert _findings(lake) == _findings(clean_lake) == []
    assert (out / "truth.jsonl").read_bytes() == b""

    rows = _hold(lake)
    limit = threshold(len(rows))
    skewed = [r for r in rows if (r["table_id"], r["dealer_id"]) == (truth["table_id"], truth["dealer_id"])]
    (dealer,) = skewed
    assert dealer["z"] < -limit, (dealer, limit)
    others = [r for r in rows if r is not dealer]
    assert len(others) >= 8
    assert all(abs(r["z"]) <= limit for r in others), (others, limit)
    # the casino lost what the truth says the arranged coups cost it, within the noise of the other coups
    shortfall = dealer["theo_win"] - dealer["win"]
    assert abs(shortfall - truth["arranged_extra_win"]) <= 3 * dealer["sd"], (shortfall, truth, dealer["sd"])
    assert dealer["hold_pct"] < 0 < dealer["theo_hold_pct"]


@pytest.mark.parametrize("seed", [1, 2, 4])
def test_no_dealer_of_a_clean_floor_stands_out_beyond_chance(tmp_path, seed):
    _, lake = _floor(tmp_path, "clean", seed)
    rows = _hold(lake)
    assert len(rows) >= 8 and all(r["priced_rounds"] == r["rounds"] > 0 for r in rows)
    limit = threshold(len(rows))
    assert all(abs(r["z"]) <= limit for r in rows), [(r["dealer_id"], r["z"]) for r in rows]
    # over many rows the z-scores look like draws of a standard normal: mean near 0, spread near 1
    zs = [r["z"] for r in rows]
    mean = sum(zs) / len(zs)
    assert abs(mean) < 3 / math.sqrt(len(zs))


def test_the_floor_s_hold_per_table_adds_its_dealers(tmp_path):
    _, lake = _floor(tmp_path, "tables", 1)
    per_dealer = _hold(lake)
    per_table = _query(lake, "hold", "--param", "from_day=2026-11-28", "--param", "to_day=2026-11-28",
                       "--param", "by=table")
    for row in per_table:
        mine = [r for r in per_dealer if r["table_id"] == row["table_id"]]
        assert row["rounds"] == sum(r["rounds"] for r in mine)
        assert row["handle"] == pytest.approx(sum(r["handle"] for r in mine))
        assert row["win"] == pytest.approx(sum(r["win"] for r in mine))
        assert row["sd"] == pytest.approx(math.sqrt(sum(r["sd"] ** 2 for r in mine)), rel=1e-3)
    rounds = _query(lake, "select count(*) as n from rounds where not voided")
    assert sum(r["rounds"] for r in per_table) == rounds[0]["n"]


def test_hold_skew_among_procedure_faults_adds_no_finding(tmp_path):
    """With every baccarat fault injected as well, the batch raises exactly the truth of those faults:
    the arranged coups add none (and the skewed dealer still stands out)."""
    from pitwatch.lake import Lake
    from pitwatch.simulator.truth import compare, lake_findings, read_truth

    out, lake = _floor(tmp_path, "mixed", 5, "--faults", "0.03", "--fault", f"HOLD_SKEW={P}")
    truth = read_truth(out / "truth.jsonl")
    assert len(truth) > 20
    result = compare(lake_findings(Lake.at(lake)), truth)
    assert all(c.matches for c in result.values()), {r: (c.missed, c.extra) for r, c in result.items() if not c.matches}
    (skew,) = read_hold_skew(out)
    assert skew["arranged"] > 50
    rows = _hold(lake)
    (dealer,) = [r for r in rows if (r["table_id"], r["dealer_id"]) == (skew["table_id"], skew["dealer_id"])]
    assert dealer["z"] < -threshold(len(rows))


def test_three_bet_poker_tables_of_a_demo_like_floor_show_no_made_up_hold(tmp_path):
    """The demo's floor has three_bet_poker tables, whose terminal writes no payouts: their win and
    hold % are unknown (NULL), every round unsettled; the baccarat table beside them keeps its hold."""
    _, lake = _floor(tmp_path, "demo-like", 1, tables="baccarat=1,three_bet_poker=1", hours="2")
    rows = {r["game"]: r for r in _query(lake, "hold", "--param", "from_day=2026-11-28",
                                         "--param", "to_day=2026-11-28", "--param", "by=table")}
    tbp, bac = rows["three_bet_poker"], rows["baccarat"]
    assert tbp["rounds"] == tbp["unsettled_rounds"] > 0 and tbp["handle"] > 0
    assert (tbp["win"], tbp["hold_pct"], tbp["priced_rounds"], tbp["z"]) == (None, None, 0, None)
    assert bac["unsettled_rounds"] == 0 and bac["win"] is not None and bac["hold_pct"] is not None
    assert bac["priced_rounds"] == bac["rounds"] > 0
