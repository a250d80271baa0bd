"""Issue 42's "Done when", end to end: a simulated week of nightly runs through the real CLI (procedure
faults, a dealer working with a player, a late file), reviews recorded through ``pitwatch review``, and
every answer an analyst gets checked against the simulator's ground truth and the reviews recorded:
``open_findings``, ``review_log``, ``findings_changed_since``, ``dealer_scorecard``, ``table_health``,
``hold``, ``pitwatch incidents``, a re-replay that keeps the reviews, ``orphan_reviews``, ``verify``.

The week (``tests/pipelines/late_week.simulate_week``): two baccarat tables, 1.5 h a night for seven
nights; wrong payouts, skipped burns and shallow cuts every night; on night 6 the first table's first
dealer arranges the coups for a player (``HOLD_SKEW``).  Night 3's file of BAC-01's shoe is held back and
dropped into night 3's folder before night 5's run: night 3 sees BAC-01's packs dealt with the shoe
silent, night 4 a gap in the shoe's seq, and night 5 replays from night 3 and removes those findings."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from statistics import NormalDist

import pytest

from pitwatch.cli import exits
from pitwatch.rules.catalog import RULE_BY_ID
from pitwatch.seeds import read_csv
from pitwatch.simulator.truth import compare
from tests import lake_rows
from tests.conftest import run_pitwatch
from tests.pipelines.late_week import DAYS, simulate_week, write_registry
from tests.pipelines.test_verify import verify

pytestmark = pytest.mark.slow

FAULTS = {"PAYOUT": 0.02, "BURN_SKIPPED": 0.5, "CUT_PLACEMENT": 0.5}
SKEW_NIGHT = 5                    # night 6 (k = 5): HOLD_SKEW at BAC-01
# a coup is the skewed dealer's opportunity only when no other fault took it or its pack: that night, wrong
# payouts alone (simulator/hold_skew.py)
SKEW_FAULTS = {"PAYOUT": 0.02, "HOLD_SKEW": 1.0}
LATE_DAY, LATE_NIGHT = DAYS[2], DAYS[4]
SEVERITY_ORDER = {"critical": 0, "major": 1, "minor": 2, "info": 3}


def pitwatch(*args):
    result = run_pitwatch(*args)
    assert result.returncode == exits.DONE, (args, result.stderr)
    return result


def query(lake: Path, name: str, *params: str) -> list[dict]:
    args = [a for p in params for a in ("--param", p)]
    out = pitwatch("query", name, "--lake", lake, "--format", "json", *args).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def findings(lake: Path) -> dict[str, dict]:
    """The findings view as analysts see it (status and review columns), by finding_id."""
    out = pitwatch("sql", "select * from findings", "--lake", lake, "--format", "json").stdout
    return {r["finding_id"]: r for r in map(json.loads, out.splitlines())}


def night(inbox: Path, lake: Path, day: str, *extra) -> str:
    pitwatch("run", "--day", day, "--inbox", inbox, "--lake", lake, "--quiet", *extra)
    return lake_rows.last_run(lake)["run_id"]


def record(lake: Path, reviews: list[tuple]) -> None:
    """``pitwatch review`` once per ``(finding_id, disposition, reason, by, note, video, amount)``."""
    for fid, disposition, reason, by, note, video, amount in reviews:
        extra = ["--reason", reason]
        extra += ["--note", note] if note else []
        extra += ["--video", video] if video else []
        extra += ["--amount", str(amount)] if amount is not None else []
        pitwatch("review", fid, "--lake", lake, "--disposition", disposition, "--by", by, *extra)


def truth(base: Path, day: str) -> list[dict]:
    return [json.loads(line) for line in (base / "truth" / f"{day}.jsonl").read_text().splitlines()]


def mismatches(found: list[dict], expected: list[dict]) -> dict:
    return {r: (c.missed, c.extra) for r, c in compare(found, expected).items() if not c.matches}


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    base = tmp_path_factory.mktemp("analyst-week")
    inbox, registry = simulate_week(base, {"baccarat": 2}, 1.5,
                                    lambda k: SKEW_FAULTS if k == SKEW_NIGHT else FAULTS, seed=60)
    write_registry(inbox, registry)
    lake = base / "lake"
    (shoe,) = [d for d, row in registry.items() if row[1:3] == ["shoe", "BAC-01"]]
    late = inbox / LATE_DAY / f"{shoe}.jsonl"
    held = late.read_bytes()
    late.unlink()
    runs, after = {}, {}
    for k, day in enumerate(DAYS):
        if day == LATE_NIGHT:
            late.write_bytes(held)                   # uploaded two nights late
        runs[day] = night(inbox, lake, day)
        after[day] = findings(lake)
        if k == 3:
            reviewed_early = _early_reviews(lake, after[day])
    later = _late_reviews(base, lake, after[DAYS[-1]])
    return {"base": base, "inbox": inbox, "lake": lake, "runs": runs, "after": after,
            "reviews": reviewed_early + later}


def _pick(rows: dict, rule: str, day: str, n: int = 0) -> dict:
    chosen = sorted((f for f in rows.values() if f["rule_id"] == rule and f["gaming_day"] == day),
                    key=lambda f: (f["ts"], f["finding_id"]))
    assert len(chosen) > n, (rule, day, len(chosen))
    return chosen[n]


def _early_reviews(lake: Path, rows: dict) -> list[tuple]:
    """After night 4: a finding night 5 will remove (a pack of night 3 dealt with BAC-01's shoe silent), a wrong payout
    of night 1 confirmed with everything, a skipped burn of night 2 dismissed (reviewed again later)."""
    gone = _pick(rows, "SHOE_SILENT", LATE_DAY)
    payout = _pick(rows, "PAYOUT", DAYS[0])
    burn = _pick(rows, "BURN_SKIPPED", DAYS[1])
    done = [
        (gone["finding_id"], "confirmed", "DEVICE_FAULT", "A. Ortiz", "shoe unplugged", None, None),
        (payout["finding_id"], "confirmed", "DEALER_ERROR", "A. Ortiz", "paid 25 too much", "CAM-12/clip-881", 25.0),
        (burn["finding_id"], "dismissed", "DEVICE_FAULT", "B. Vega", None, None, None),
    ]
    record(lake, done)
    return done


def _late_reviews(base: Path, lake: Path, rows: dict) -> list[tuple]:
    """After night 7: the night-2 burn reviewed again (confirmed: the latest wins), a night-1 cut escalated,
    and a batch file: two confirmed, one dismissed."""
    burn = _pick(rows, "BURN_SKIPPED", DAYS[1])
    cut = _pick(rows, "CUT_PLACEMENT", DAYS[0])
    done = [(burn["finding_id"], "confirmed", "TRAINING", "C. Díaz", "trainee, second look", None, None),
            (cut["finding_id"], "escalated", "PATRON", "C. Díaz", "the player cut, see floor log", "CAM-3", -40.5)]
    record(lake, done)
    batch = [(_pick(rows, "PAYOUT", DAYS[0], 1)["finding_id"], "confirmed", "DEALER_ERROR", "B. Vega", "", "", 10.0),
             (_pick(rows, "PAYOUT", DAYS[5])["finding_id"], "confirmed", "DEALER_ERROR", "B. Vega", "short paid", "", None),
             (_pick(rows, "BURN_SKIPPED", DAYS[6])["finding_id"], "dismissed", "PROCEDURE_VARIANT", "B. Vega", "", "",
              None)]
    path = base / "reviews.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("finding_id", "disposition", "by", "reason", "note", "video", "amount"))
        w.writerows((fid, d, by, reason, note, video, "" if amount is None else amount)
                    for fid, d, reason, by, note, video, amount in batch)
    pitwatch("review", "--from", path, "--lake", lake)
    return done + [(fid, d, reason, by, note or None, video or None, amount) for fid, d, reason, by, note, video, amount
                   in batch]


def _roster(week) -> dict[str, str]:
    """The roster dropped in the inbox: dealer id -> name."""
    with open(week["inbox"] / "dealers.csv", newline="") as f:
        return {r["id"]: r["name"] for r in csv.DictReader(f)}


def _latest(reviews: list[tuple]) -> dict[str, tuple]:
    return {r[0]: r for r in reviews}


# -- each night against the truth, and what the late file changed ------------------------------

def test_every_day_of_the_week_raises_its_truth(week):
    final = list(week["after"][DAYS[-1]].values())
    for day in DAYS:
        mine = [f for f in final if f["gaming_day"] == day]
        assert mismatches(mine, truth(week["base"], day)) == {}, day
    assert {f["rule_id"] for f in final} >= {"PAYOUT", "BURN_SKIPPED", "CUT_PLACEMENT"}


def test_before_the_late_file_the_shoe_was_silent_on_night_3_and_its_seq_jumped_on_night_4(week):
    before = list(week["after"][DAYS[3]].values())
    silent = mismatches([f for f in before if f["gaming_day"] == LATE_DAY], truth(week["base"], LATE_DAY))
    assert set(silent) == {"SHOE_SILENT"} and silent["SHOE_SILENT"][0] == []
    assert {k[1] for k in silent["SHOE_SILENT"][1]} == {"BAC-01"}
    gap = mismatches([f for f in before if f["gaming_day"] == DAYS[3]], truth(week["base"], DAYS[3]))
    assert set(gap) == {"SEQ_GAP"} and gap["SEQ_GAP"][0] == [] and len(gap["SEQ_GAP"][1]) == 1


def test_findings_changed_since_night_4_is_what_night_5_changed_on_nights_3_and_4(week):
    before, after = week["after"][DAYS[3]], week["after"][LATE_NIGHT]
    removed = sorted(fid for fid, f in before.items() if fid not in after)
    added = sorted(fid for fid, f in after.items() if fid not in before and f["gaming_day"] != LATE_NIGHT)
    assert {(before[fid]["gaming_day"], before[fid]["rule_id"]) for fid in removed} == {
        (LATE_DAY, "SHOE_SILENT"), (DAYS[3], "SEQ_GAP")}
    changes = query(week["lake"], "findings_changed_since", f"since={week['runs'][DAYS[3]]}")
    night5 = [c for c in changes if c["run_id"] == week["runs"][LATE_NIGHT]]
    expected = [{"change": "removed", "gaming_day": before[fid]["gaming_day"], "finding_id": fid, "rule_id": before[fid]["rule_id"],
                 "severity": before[fid]["severity"], "table_id": before[fid]["table_id"],
                 "round_id": before[fid]["round_id"], "dealer_id": before[fid]["dealer_id"], "ts": before[fid]["ts"]}
                for fid in removed]
    expected += [{"change": "added", "gaming_day": after[fid]["gaming_day"], "finding_id": fid,
                  "rule_id": after[fid]["rule_id"], "severity": after[fid]["severity"],
                  "table_id": after[fid]["table_id"], "round_id": after[fid]["round_id"],
                  "dealer_id": after[fid]["dealer_id"], "ts": after[fid]["ts"]} for fid in added]
    shown = [{k: c[k] for k in expected[0]} for c in night5]
    assert shown == sorted(expected, key=lambda r: (r["gaming_day"], r["table_id"], r["ts"], r["rule_id"],
                                                     r["finding_id"], r["change"]))     # the query's order
    # nights 6 and 7 wrote their own days only: no change of theirs
    assert night5 == changes


# -- reviews: status, open_findings, review_log, orphans -----------------------------------------

def test_open_findings_are_exactly_the_findings_not_decided_most_severe_then_oldest_first(week):
    latest = _latest(week["reviews"])
    rows = findings(week["lake"])
    roster = _roster(week)
    expected = sorted((f for fid, f in rows.items() if latest.get(fid, (0, "escalated"))[1] == "escalated"),
                      key=lambda f: (SEVERITY_ORDER[f["severity"]], f["ts"], f["finding_id"]))
    shown = query(week["lake"], "open_findings")
    assert shown == [{**{k: f[k] for k in shown[0] if k != "dealer_name"}, "dealer_name": roster[f["dealer_id"]]}
                     for f in expected]
    assert [(r["status"], r["reviewed_by"]) for r in shown if r["status"] != "open"] == [("escalated", "C. Díaz")]
    assert len(shown) == len(rows) - 5       # 8 reviews of 7 findings: one escalated, one gone, five decided


def test_every_finding_s_status_is_its_latest_review(week):
    latest = _latest(week["reviews"])
    rows = findings(week["lake"])
    log = {}
    for r in reversed(query(week["lake"], "review_log")):       # oldest first: the last one of a finding wins
        log[r["finding_id"]] = r["reviewed_at"]
    assert {fid: (f["status"], f["reviewed_by"], f["reviewed_at"]) for fid, f in rows.items() if f["status"] != "open"} \
        == {fid: (r[1], r[3], log[fid]) for fid, r in latest.items() if fid in rows}


def test_review_log_holds_every_review_newest_first(week):
    log = query(week["lake"], "review_log")
    final = week["after"][DAYS[-1]]
    reasons = {r["code"]: r for r in read_csv("review_reasons.csv")}
    seen = {**week["after"][DAYS[3]], **final}          # the removed finding as it was when reviewed
    assert [{k: r[k] for k in r if k not in ("reviewed_at", "review_id")} for r in log] == [
        {"reviewer": by, "finding_id": fid, "disposition": disposition, "reason": reason,
         "reason_title": reasons[reason]["title"], "error_type": reasons[reason]["error_type"], "note": note,
         "video": video, "amount": amount, "rule_id": seen[fid]["rule_id"], "table_id": seen[fid]["table_id"],
         "gaming_day": seen[fid]["gaming_day"], "finding_exists": fid in final}
        for fid, disposition, reason, by, note, video, amount in reversed(week["reviews"])]
    times = [r["reviewed_at"] for r in log]
    assert times == sorted(times, reverse=True) and len(set(r["review_id"] for r in log)) == len(log)


def test_the_review_of_a_finding_the_late_file_removed_is_an_orphan(week):
    gone = week["reviews"][0]
    assert gone[0] not in week["after"][DAYS[-1]]
    orphans = query(week["lake"], "orphan_reviews")
    assert [(r["finding_id"], r["rule_id"], r["table_id"], r["gaming_day"], r["disposition"]) for r in orphans] == [
        (gone[0], "SHOE_SILENT", "BAC-01", LATE_DAY, "confirmed")]


# -- scorecards and hold ----------------------------------------------------------------------

def _rounds_by(inbox: Path, field: str, days=DAYS) -> dict[str, int]:
    """Rounds started per dealer or table on ``days``, counted from the terminals' files."""
    counts: dict[str, int] = {}
    for day in days:
        for path in (inbox / day).glob("DT-*.jsonl"):
            for line in path.read_text().splitlines():
                ev = json.loads(line)
                if ev["type"] == "round_started":
                    counts[ev[field]] = counts.get(ev[field], 0) + 1
    return counts


def test_dealer_scorecard_counts_each_dealer_s_rounds_findings_and_confirmed_errors(week):
    rows = query(week["lake"], "dealer_scorecard", f"from_day={DAYS[0]}", f"to_day={DAYS[-1]}")
    rounds = _rounds_by(week["inbox"], "dealer_id")
    assert len(rounds) >= 10                 # each night's session has dealers of its own
    final = week["after"][DAYS[-1]]
    found: dict[str, int] = {}
    for f in final.values():
        found[f["dealer_id"]] = found.get(f["dealer_id"], 0) + 1
    confirmed: dict[str, int] = {}
    for fid, r in _latest(week["reviews"]).items():
        if r[1] == "confirmed" and fid in final:
            confirmed[final[fid]["dealer_id"]] = confirmed.get(final[fid]["dealer_id"], 0) + 1
    assert sum(confirmed.values()) == 4      # the night-3 one is gone, the night-2 burn confirmed on a second look
    roster = _roster(week)
    assert {r["dealer_id"]: (r["dealer_name"], r["rounds"], r["findings"], r["confirmed_errors"]) for r in rows} == {
        d: (roster[d], n, found.get(d, 0), confirmed.get(d, 0)) for d, n in rounds.items()}
    for r in rows:
        assert r["confirmed_errors_per_100_rounds"] == pytest.approx(
            100 * confirmed.get(r["dealer_id"], 0) / r["rounds"], abs=0.005)


def test_dealer_scorecard_of_the_last_three_nights_stands_beside_the_three_before(week):
    rows = query(week["lake"], "dealer_scorecard", f"from_day={DAYS[4]}", f"to_day={DAYS[6]}")
    now, before = _rounds_by(week["inbox"], "dealer_id", DAYS[4:]), _rounds_by(week["inbox"], "dealer_id", DAYS[1:4])
    assert {r["dealer_id"]: (r["rounds"], r["previous_rounds"]) for r in rows} == {
        d: (n, before.get(d)) for d, n in now.items()}
    assert any(r["previous_rounds"] for r in rows) and not all(r["previous_rounds"] for r in rows)


def test_table_health_counts_each_table_s_rounds_and_findings(week):
    rows = query(week["lake"], "table_health", f"from_day={DAYS[0]}", f"to_day={DAYS[-1]}")
    rounds = _rounds_by(week["inbox"], "table_id")
    assert set(rounds) == {"BAC-01", "BAC-02"}
    expected: dict[str, dict[str, int]] = {}
    for day in DAYS:
        for t in truth(week["base"], day):
            sev = RULE_BY_ID[t["rule_id"]].severity
            expected.setdefault(t["table_id"], {}).setdefault(sev, 0)
            expected[t["table_id"]][sev] += 1
    assert {r["table_id"]: (r["rounds"], {s: r[s] for s in SEVERITY_ORDER if r.get(s)}, r["rejected_lines"])
            for r in rows} == {t: (n, expected.get(t, {}), 0) for t, n in rounds.items()}


def test_hold_singles_out_the_dealer_working_with_a_player_and_no_other(week):
    skew = json.loads((week["base"] / "truth" / f"{DAYS[SKEW_NIGHT]}-hold_skew.json").read_text())
    (truth_row,) = skew
    assert truth_row["arranged"] >= 20, truth_row
    rows = query(week["lake"], "hold", f"from_day={DAYS[0]}", f"to_day={DAYS[-1]}")
    limit = NormalDist().inv_cdf(1 - 0.05 / (2 * len(rows)))          # queries/README.md, "Hold against theory"
    (dealer,) = [r for r in rows if (r["table_id"], r["dealer_id"]) == (truth_row["table_id"], truth_row["dealer_id"])]
    assert dealer["z"] < -limit, (dealer, limit)
    others = [r for r in rows if r is not dealer]
    assert all(abs(r["z"]) <= limit for r in others), [(r["dealer_id"], r["z"]) for r in others]


# -- incidents --------------------------------------------------------------------------------

def test_incidents_of_night_1_are_its_confirmed_and_escalated_findings_with_the_roster_s_names(week):
    out = pitwatch("incidents", "--day", DAYS[0], "--lake", week["lake"], "--format", "json").stdout
    records = json.loads(out)
    final = week["after"][DAYS[-1]]
    roster = _roster(week)
    latest = _latest(week["reviews"])
    expected = {fid: r for fid, r in latest.items()
                if fid in final and final[fid]["gaming_day"] == DAYS[0] and r[1] in ("confirmed", "escalated")}
    assert len(expected) == 3
    assert {r["finding_id"]: (r["disposition"], r["reason"], r["reviewer"], r["note"], r["video"], r["amount"],
                              r["rule_id"], r["table_id"], r["dealer_id"], r["dealer_name"]) for r in records} == {
        fid: (r[1], r[2], r[3], r[4], r[5], r[6], final[fid]["rule_id"], final[fid]["table_id"],
              final[fid]["dealer_id"], roster[final[fid]["dealer_id"]]) for fid, r in expected.items()}
    for r in records:
        f = final[r["finding_id"]]
        assert r["incident_number"] == f"PW-{DAYS[0].replace('-', '')}-{r['finding_id'][:12]}"
        assert (r["type"], r["severity"], r["gaming_day"], r["seat"], r["round_id"], r["pack_id"]) == (
            RULE_BY_ID[f["rule_id"]].title, f["severity"], DAYS[0], f["seat"], f["round_id"], f["pack_id"])
        assert r["evidence"]
        for where in r["evidence"]:                        # each names a line of the inbox about this table
            path, _, number = where.rpartition(":")
            assert Path(path).parent == week["inbox"] / DAYS[0]
            event = json.loads(Path(path).read_text().splitlines()[int(number) - 1])
            assert event["table_id"] == f["table_id"]


# -- a re-replay keeps the reviews; verify covers them ------------------------------------------

def test_a_re_replay_of_night_2_keeps_the_reviews_of_its_findings(week, tmp_path):
    lake = tmp_path / "lake"
    shutil.copytree(week["lake"], lake)
    before = findings(lake)
    night(week["inbox"], lake, DAYS[1], "--rebuild-from", DAYS[1])
    after = findings(lake)
    assert after == before                  # whole rows: status, reviewer, the runs that wrote them
    assert {f["status"] for f in after.values()} >= {"confirmed", "escalated", "dismissed", "open"}


def test_verify_passes_the_week_and_names_an_edited_review(week, tmp_path):
    result, report = verify(week["lake"])
    assert result.returncode == exits.DONE and report["problems"] == [], report["problems"]
    lake = tmp_path / "lake"
    shutil.copytree(week["lake"], lake)
    import pyarrow as pa
    import pyarrow.parquet as pq

    payout = week["reviews"][1][0]
    (path,) = [p for p in (lake / "reviews").glob("*.parquet")
               if payout in pq.read_table(p, columns=["finding_id"]).column(0).to_pylist()]
    rows = [{**r, "amount": 2.5} if r["finding_id"] == payout else r for r in pq.read_table(path).to_pylist()]
    (edited,) = [r["review_id"] for r in rows if r["finding_id"] == payout]
    schema = pq.read_schema(path)
    path.chmod(0o644)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    result, report = verify(lake)
    assert result.returncode == exits.NOT_INTACT
    assert any(p["kind"] == "changed" and p["what"] == f"reviews/{path.name}"
               and f"review {edited} of finding {payout}" in p["detail"] for p in report["problems"]), report["problems"]
