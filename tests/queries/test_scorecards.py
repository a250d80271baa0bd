"""Issue 42, deliverable 3: the named queries ``dealer_scorecard`` and ``table_health`` against a
simulated floor's ground truth — real ``pitwatch run`` processes into one lake, the answers read
through ``pitwatch query``, the expected rows computed here from the floor itself: its event files
(which dealer dealt which round, when it started and ended, the seats dealt) and its
``truth.jsonl`` (the findings the injected faults must raise)."""
from __future__ import annotations

import collections
import csv
import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from pitwatch.config import SEVERITIES
from pitwatch.rules.catalog import rule
from pitwatch.simulator.truth import read_truth
from tests.conftest import run_pitwatch as pitwatch
from tests.pipelines.test_feed_health_run import faulty_floor  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow

UTC = dt.timezone.utc
NIGHT1, NIGHT2 = "2026-11-28", "2026-11-29"
# faults keyed by a round, so each truth line has the dealer of its round
ROUND_FAULTS = {"DEAL_ORDER": 0.06, "PAYOUT": 0.04, "MISDEAL": 0.06, "STUB_MISCOUNT": 0.1}


def _ts(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def floor_rounds(day_folder: Path) -> list[dict]:
    """Every round of a simulated gaming day, from the dealer terminals' lines: its table, dealer,
    start and end, and the hands dealt (the seats dealt cards; in baccarat, whose cards go to the
    player and banker boxes, the seats that bet)."""
    rounds: dict[tuple, dict] = {}
    for path in sorted(day_folder.glob("DT-*.jsonl")):
        for line in path.read_text().splitlines():
            e = json.loads(line)
            if not e.get("round_id"):
                continue
            r = rounds.setdefault((e["table_id"], e["round_id"]), {
                "table_id": e["table_id"], "round_id": e["round_id"], "gaming_day": day_folder.name,
                "bet": set(), "dealt": set()})
            if e["type"] == "round_started":
                r["dealer_id"], r["started"] = e.get("dealer_id"), _ts(e["ts"])
            elif e["type"] == "round_ended":
                r["ended"] = _ts(e["ts"])
            elif e["type"] == "bet_placed":
                r["bet"].add(e["seat"])
            elif e["type"] == "card_dealt" and str(e.get("target", "")).startswith("seat:"):
                r["dealt"].add(int(e["target"][5:]))
    for r in rounds.values():
        r["hands"] = len(r["dealt"] or r["bet"])
    return list(rounds.values())


def stint_hours(rounds: list[dict]) -> dict[str, float]:
    """Hours per dealer: each run of consecutive rounds (by start) at one table on one day by one
    dealer, from its first start to its last end."""
    hours: dict[str, float] = collections.Counter()
    by_table = collections.defaultdict(list)
    for r in rounds:
        by_table[(r["table_id"], r["gaming_day"])].append(r)
    for table_rounds in by_table.values():
        table_rounds.sort(key=lambda r: (r["started"], r["round_id"]))
        stint: list[dict] = []
        for r in [*table_rounds, None]:
            if stint and (r is None or r["dealer_id"] != stint[0]["dealer_id"]):
                hours[stint[0]["dealer_id"]] += (max(x["ended"] for x in stint)
                                                 - stint[0]["started"]).total_seconds() / 3600
                stint = []
            if r is not None:
                stint.append(r)
    return hours


def query(lake, name, **params) -> list[dict]:
    args = [a for k, v in params.items() for a in ("--param", f"{k}={v}")]
    r = pitwatch("query", name, "--lake", lake, "--format", "json", *args)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    """Two nights of one floor (the same dealers; faults keyed by round), each run into one lake;
    each night's rounds and truth."""
    from pitwatch.simulator.floor import simulate

    base = tmp_path_factory.mktemp("scorecards")
    tables = {"baccarat": 1, "three_bet_poker": 1}
    simulate(base / "n1", tables=tables, hours=1.0, seed=3, faults=ROUND_FAULTS, workers=1)
    simulate(base / "n2", tables=tables, hours=0.75, seed=3, faults=ROUND_FAULTS, workers=1,
             start=dt.datetime(2026, 11, 29, 20, 0, tzinfo=UTC))
    lake = base / "lake"
    for folder in (base / "n1" / NIGHT1, base / "n2" / NIGHT2):
        r = pitwatch("run", folder, "--lake", lake, "--quiet")
        assert r.returncode == 0, r.stderr
    r = pitwatch("dealers", "import", base / "n1" / "dealers.csv", "--lake", lake)
    assert r.returncode == 0, r.stderr
    _review(lake, base)
    nights = {NIGHT1: base / "n1", NIGHT2: base / "n2"}
    return lake, {d: (floor_rounds(f / d), read_truth(f / "truth.jsonl")) for d, f in nights.items()}, \
        base / "n1" / "dealers.csv"


def _findings(lake) -> list[dict]:
    r = pitwatch("sql", "select finding_id, dealer_id, gaming_day::varchar as gaming_day, status from findings "
                 "order by finding_id", "--lake", lake, "--format", "json")
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def _review(lake, base: Path) -> None:
    """Through ``pitwatch review``: every other finding confirmed, the others of night 2 dismissed
    or left open, then one confirmed finding dismissed on a second look (its latest review counts)."""
    found = _findings(lake)
    rows = ["finding_id,disposition,by,reason,note,video,amount"]
    for i, f in enumerate(found):
        if i % 2 == 0:
            rows.append(f"{f['finding_id']},confirmed,Ana Supervisor,DEALER_ERROR,seen on camera 4,,")
        elif i % 3 == 0:
            rows.append(f"{f['finding_id']},dismissed,Ana Supervisor,DEVICE_FAULT,,,")
    (base / "reviews.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    r = pitwatch("review", "--from", base / "reviews.csv", "--lake", lake)
    assert r.returncode == 0, r.stderr
    second_look = found[0]["finding_id"]
    r = pitwatch("review", second_look, "--disposition", "dismissed", "--by", "Luis Manager", "--reason", "PATRON",
                 "--lake", lake)
    assert r.returncode == 0, r.stderr


def _confirmed(lake) -> dict[tuple, int]:
    """(dealer, gaming day) -> findings whose latest review confirmed them, as the reviews above made them:
    every even-numbered finding but the first."""
    out: dict[tuple, int] = collections.Counter()
    for i, f in enumerate(_findings(lake)):
        if i % 2 == 0 and i > 0:
            out[(f["dealer_id"], f["gaming_day"])] += 1
    return out


def _expected_dealers(rounds: list[dict], truth: list[dict]) -> dict[str, dict]:
    dealer_of = {(r["table_id"], r["round_id"]): r["dealer_id"] for r in rounds}
    hours = stint_hours(rounds)
    out: dict[str, dict] = {}
    for r in rounds:
        d = out.setdefault(r["dealer_id"], {"rounds": 0, "hands": 0, "findings": collections.Counter(),
                                            "rules": collections.Counter()})
        d["rounds"] += 1
        d["hands"] += r["hands"]
    for t in truth:
        d = out[dealer_of[(t["table_id"], t["round_id"])]]
        d["findings"][rule(t["rule_id"]).severity] += 1
        d["rules"][t["rule_id"]] += 1
    for dealer, d in out.items():
        d["hours"] = hours[dealer]
    return out


def test_the_week_raises_its_truth_and_every_finding_has_its_rounds_dealer(week):
    _lake, nights, _roster = week
    for rounds, truth in nights.values():
        assert truth and all(t["round_id"] for t in truth)
        dealers = {(r["table_id"], r["round_id"]) for r in rounds}
        assert all((t["table_id"], t["round_id"]) in dealers for t in truth)


def test_dealer_scorecard_is_the_floors_rounds_hours_hands_and_findings_beside_the_night_before(week):
    lake, nights, roster = week
    rows = query(lake, "dealer_scorecard", from_day=NIGHT2, to_day=NIGHT2)
    now, before = _expected_dealers(*nights[NIGHT2]), _expected_dealers(*nights[NIGHT1])
    with open(roster, newline="", encoding="utf-8") as f:
        names = {r["id"]: r["name"] for r in csv.DictReader(f)}
    assert sorted(r["dealer_id"] for r in rows) == sorted(now)
    assert set(now) & set(before), "the same dealers work both nights"
    for row in rows:
        want, then = now[row["dealer_id"]], before.get(row["dealer_id"])
        sev = want["findings"]
        assert (row["dealer_name"], row["from_day"], row["to_day"]) == (names[row["dealer_id"]], NIGHT2, NIGHT2)
        assert (row["rounds"], row["hands"], row["findings"]) == (want["rounds"], want["hands"], sum(sev.values()))
        assert (row["critical"], row["major"], row["minor"], row["info"]) == (
            sev["critical"], sev["major"], sev["minor"], sev["info"])
        assert row["hours"] == round(want["hours"], 2)
        assert row["rounds_per_hour"] == round(want["rounds"] / want["hours"], 1)
        assert row["hands_per_hour"] == round(want["hands"] / want["hours"], 1)
        assert row["findings_per_100_rounds"] == round(100 * sum(sev.values()) / want["rounds"], 2)
        top = sorted(want["rules"].items(), key=lambda kv: (-kv[1], SEVERITIES.index(rule(kv[0]).severity), kv[0]))[:3]
        assert row["top_rules"] == (", ".join(f"{r} ({n})" for r, n in top) or None)
        if then is None:
            assert row["previous_rounds"] is None and row["change_findings_per_100_rounds"] is None
            continue
        assert (row["previous_rounds"], row["previous_findings"]) == (then["rounds"], sum(then["findings"].values()))
        assert row["previous_hours"] == round(then["hours"], 2)
        assert row["change_findings_per_100_rounds"] == round(
            100 * sum(sev.values()) / want["rounds"] - 100 * sum(then["findings"].values()) / then["rounds"], 2)
        assert row["change_rounds_per_hour"] == round(
            want["rounds"] / want["hours"] - then["rounds"] / then["hours"], 1)


def test_dealer_scorecard_counts_the_errors_the_reviews_confirmed(week):
    lake, nights, _roster = week
    confirmed = _confirmed(lake)
    assert sum(confirmed.values()) >= 3
    statuses = collections.Counter(f["status"] for f in _findings(lake))
    assert statuses["confirmed"] == sum(confirmed.values()) and statuses["dismissed"] and statuses["open"]
    now, before = _expected_dealers(*nights[NIGHT2]), _expected_dealers(*nights[NIGHT1])
    rows = query(lake, "dealer_scorecard", from_day=NIGHT2, to_day=NIGHT2)
    assert any(r["confirmed_errors"] for r in rows)
    for row in rows:
        dealer = row["dealer_id"]
        mine, then = confirmed[(dealer, NIGHT2)], confirmed[(dealer, NIGHT1)]
        assert row["confirmed_errors"] == mine
        assert row["confirmed_errors_per_100_rounds"] == round(100 * mine / now[dealer]["rounds"], 2)
        if dealer in before:
            assert row["previous_confirmed_errors_per_100_rounds"] == round(100 * then / before[dealer]["rounds"], 2)
            assert row["change_confirmed_errors_per_100_rounds"] == round(
                100 * mine / now[dealer]["rounds"] - 100 * then / before[dealer]["rounds"], 2)


def test_dealer_scorecard_of_one_dealer_is_that_dealers_row_and_a_day_nobody_dealt_is_empty(week):
    lake, _nights, _roster = week
    every = query(lake, "dealer_scorecard", from_day=NIGHT2, to_day=NIGHT2)
    one = every[-1]["dealer_id"]
    assert query(lake, "dealer_scorecard", from_day=NIGHT2, to_day=NIGHT2, dealer_id=one) == [every[-1]]
    assert query(lake, "dealer_scorecard", from_day="2026-11-30", to_day="2026-11-30") == []


def test_dealer_scorecard_over_two_days_counts_both_and_compares_with_the_two_before(week):
    lake, nights, _roster = week
    rows = query(lake, "dealer_scorecard", from_day=NIGHT1, to_day=NIGHT2)
    both = _expected_dealers(nights[NIGHT1][0] + nights[NIGHT2][0], nights[NIGHT1][1] + nights[NIGHT2][1])
    assert {r["dealer_id"]: (r["rounds"], r["findings"]) for r in rows} == {
        d: (w["rounds"], sum(w["findings"].values())) for d, w in both.items()}
    assert all(r["previous_rounds"] is None for r in rows)     # nobody dealt on 11-26 and 11-27


@pytest.fixture(scope="module")
def health(faulty_floor, tmp_path_factory):  # noqa: F811 - the imported fixture
    """The feed-fault floor (a shoe silent, a rogue device) in the nightly form, with two hostile
    lines added: one naming table BAC-01, one naming none."""
    base = tmp_path_factory.mktemp("health")
    inbox = base / "inbox"
    shutil.copytree(faulty_floor, inbox, symlinks=True)
    day = sorted(d.name for d in inbox.iterdir() if d.is_dir())[0]
    (inbox / day / "hostile.jsonl").write_text(
        '{"event_id":"x-1","table_id":"BAC-01","source":"dealer","type":"no_such_type","seq":1}\n'
        "this is not JSON\n")
    r = pitwatch("run", "--day", day, "--inbox", inbox, "--lake", base / "lake", "--quiet")
    assert r.returncode == 0, r.stderr
    return base / "lake", inbox, day


def test_table_health_is_the_floors_rounds_hours_findings_feed_faults_and_rejects(health):
    lake, inbox, day = health
    rounds, truth = floor_rounds(inbox / day), read_truth(inbox / "truth.jsonl")
    assert {t["rule_id"] for t in truth} >= {"SHOE_SILENT", "UNKNOWN_DEVICE"}
    rows = {r["table_id"]: r for r in query(lake, "table_health", from_day=day, to_day=day)}
    assert set(rows) == {r["table_id"] for r in rounds} | {None}
    assert rows.pop(None) == {**{k: 0 for k in rows["BAC-01"] if k not in ("table_id", "games", "hours",
                                                                            "rounds_per_hour", "hands_per_hour")},
                              "table_id": None, "games": None, "hours": None, "rounds_per_hour": None,
                              "hands_per_hour": None, "rejected_lines": 1}
    for table, row in rows.items():
        mine = [r for r in rounds if r["table_id"] == table]
        hours = (max(r["ended"] for r in mine) - min(r["started"] for r in mine)).total_seconds() / 3600
        hands = sum(r["hands"] for r in mine)
        found = [t for t in truth if t["table_id"] == table]
        severities = collections.Counter(rule(t["rule_id"]).severity for t in found)
        assert (row["days"], row["rounds"], row["hands"], row["findings"]) == (1, len(mine), hands, len(found))
        assert row["hours"] == round(hours, 2)
        assert (row["rounds_per_hour"], row["hands_per_hour"]) == (round(len(mine) / hours, 1), round(hands / hours, 1))
        assert (row["critical"], row["major"], row["minor"], row["info"]) == (
            severities["critical"], severities["major"], severities["minor"], severities["info"])
        assert row["shoe_silent_packs"] == sum(t["rule_id"] == "SHOE_SILENT" for t in found)
        assert row["unknown_devices"] == len({t["device_id"] for t in found if t["rule_id"] == "UNKNOWN_DEVICE"})
        assert row["devices_silent_live"] == 0           # no watcher wrote this lake
        assert row["rejected_lines"] == (1 if table == "BAC-01" else 0)


def test_table_health_of_one_table_is_that_tables_row(health):
    lake, _inbox, day = health
    every = {r["table_id"]: r for r in query(lake, "table_health", from_day=day, to_day=day)}
    assert query(lake, "table_health", from_day=day, to_day=day, table_id="BAC-01") == [every["BAC-01"]]
    assert query(lake, "table_health", from_day=day, to_day=day, table_id="NO-SUCH") == []
