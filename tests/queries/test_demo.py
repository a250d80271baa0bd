"""``pitwatch demo`` ends as an analyst would (issue 42, deliverable 7): it keeps the floor's roster
in the lake, reviews two findings through ``pitwatch review``, prints ``open_findings``, one
dealer's ``dealer_scorecard`` and the floor's ``hold``, and verifies the lake; then (issue 43,
deliverable 6) it writes the day's report beside the lake and prints ``pitwatch serve`` with a demo
user.  Each step's
output is checked against the lake it left and the simulator's ground truth.  Slow: the demo runs
the batch."""
from __future__ import annotations

import csv
import io
import json
import re
import shlex

import pytest

from tests.conftest import run_pitwatch_process
from tests.queries.test_hold_floor import threshold

pytestmark = pytest.mark.slow
LAKE = "demo/lake"


def pitwatch(cwd, *args):
    return run_pitwatch_process(*args, cwd=cwd, timeout=300)


def rows(cwd, *args) -> list[dict]:
    result = pitwatch(cwd, *args, "--lake", LAKE, "--format", "csv")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return list(csv.DictReader(io.StringIO(result.stdout)))


def step(stdout: str, n: int) -> str:
    """The output of step n/10 of the demo, up to the next step."""
    return stdout.split(f"\n{n}/10 ", 1)[1].split(f"\n{n + 1}/10 ", 1)[0]


def typed(text: str) -> list[list[str]]:
    """The commands a step prints (``$ pitwatch …``), as argument lists."""
    return [shlex.split(line.strip()[2:])[1:] for line in text.splitlines() if line.strip().startswith("$ pitwatch ")]


def test_the_demo_s_steps_are_numbered_and_verify_comes_before_the_report(demo_run):
    _, result = demo_run
    out = result.stdout
    assert out.startswith("1/10 simulating ")
    assert [line.split(" ", 1)[0] for line in out.splitlines() if line[:2].rstrip("/").isdigit()
            and "/10 " in line[:6]] == [f"{n}/10" for n in range(1, 11)]
    verified = step(out, 9)
    assert verified.startswith(f"checking the evidence, the reviews included: pitwatch verify --lake {LAKE}\n")
    assert f"lake {LAKE}: intact" in verified
    table = step(out, 4).split("-----\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(table) > 20 and all(line.split()[-1] == "yes" for line in table)   # the batch found the truth


def test_the_demo_writes_the_day_s_report_beside_the_lake(demo_run):
    cwd, result = demo_run
    (command,) = typed(step(result.stdout, 10))
    assert command == ["report", "--day", "2026-11-28", "--lake", LAKE, "--out", "demo/report-2026-11-28.html"]
    page = (cwd / "demo/report-2026-11-28.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "2026-11-28" in page and "<svg" in page
    # self-contained: nothing is fetched from anywhere (src/href only to #… or data:)
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)["']""", page)
    assert all(r.startswith(("#", "data:")) for r in refs), [r for r in refs if not r.startswith(("#", "data:"))]


def test_the_demo_prints_the_console_command_with_a_user_who_can_log_in(demo_run):
    from pitwatch.console.auth import password_matches, read_users

    cwd, result = demo_run
    said = re.search(r"user demo, password (\S+); its users are in (\S+)\):\n  pitwatch serve --lake (\S+) ",
                     result.stdout)
    assert said is not None, result.stdout[-800:]
    password, users, lake = said.groups()
    assert lake == LAKE and users == "demo/lake.users.json"
    user = read_users(str(cwd / users))["demo"]
    assert user.role == "reviewer" and password_matches(user, password)
    assert not password_matches(user, password + "x")


def test_the_roster_is_kept_in_the_lake_so_names_show_without_dealers(demo_run):
    cwd, result = demo_run
    assert typed(step(result.stdout, 3)) == [["dealers", "import", "demo/feeds/dealers.csv", "--lake", LAKE]]
    shown = pitwatch(cwd, "dealers", "show", "--lake", LAKE)
    assert shown.returncode == 0, shown.stderr
    kept = shown.stdout.splitlines()[1:]
    assert kept == (cwd / "demo/feeds/dealers.csv").read_text(encoding="utf-8").splitlines()[1:]


def test_the_demo_reviews_two_findings_through_pitwatch_review(demo_run):
    cwd, result = demo_run
    commands = typed(step(result.stdout, 5))
    assert [c[0] for c in commands] == ["review", "review"]
    reviews = rows(cwd, "sql", "select finding_id, disposition, reason, reviewer, note, video from reviews "
                               "order by reviewed_at")
    asked = [{"finding_id": c[1], **{k: c[c.index(f"--{k}") + 1] for k in ("disposition", "reason", "note", "video")},
              "reviewer": c[c.index("--by") + 1]} for c in commands]
    assert reviews == asked
    assert [r["disposition"] for r in reviews] == ["confirmed", "dismissed"]
    assert reviews[0]["reason"] == "DEALER_ERROR" and reviews[0]["note"] and reviews[0]["video"]
    # the reviewed findings are the lake's, and their status is the review's
    status = rows(cwd, "sql", "select finding_id, status, reviewed_by from findings where status <> 'open' "
                              "order by status")
    assert status == [{"finding_id": c[1], "status": c[3], "reviewed_by": "M.Ortiz"} for c in commands]
    # each command printed is the one that ran: typed again, it is the same review, refused
    for command in commands:
        again = pitwatch(cwd, *command)
        assert again.returncode == 2 and again.stderr.startswith("Error: "), again.stderr
        assert len(again.stderr.splitlines()) == 1


def test_open_findings_leave_out_the_two_reviewed_and_keep_every_other(demo_run):
    cwd, result = demo_run
    reviewed = {c[1] for c in typed(step(result.stdout, 5))}
    still_open = rows(cwd, "query", "open_findings")
    every = rows(cwd, "sql", "select finding_id from findings")
    assert {r["finding_id"] for r in still_open} == {r["finding_id"] for r in every} - reviewed
    assert len(still_open) == len(every) - 2
    printed = step(result.stdout, 6)
    assert typed(printed) == [["query", "open_findings", "--lake", LAKE, "--local", "--limit", "5",
                               "--format", "text"]]
    shown = [line.split()[-1] for line in printed.splitlines() if line.startswith("finding_id:")]
    assert shown == [r["finding_id"] for r in still_open[:5]]
    assert "the first 5 rows shown (--limit 5); there are more\n" in result.stderr     # a preview: stderr says so


def test_the_scorecard_is_of_the_dealer_whose_error_was_confirmed(demo_run):
    cwd, result = demo_run
    confirmed = typed(step(result.stdout, 5))[0][1]
    (finding,) = rows(cwd, "sql", f"select dealer_id, gaming_day from findings where finding_id = '{confirmed}'")
    printed = step(result.stdout, 7)
    (command,) = typed(printed)
    assert f"dealer_id={finding['dealer_id']}" in command
    (card,) = rows(cwd, *command[:-2])     # the same query, as CSV
    assert card["dealer_id"] == finding["dealer_id"] and card["dealer_name"]
    assert card["confirmed_errors"] == "1"
    fields = dict(line.split(":", 1) for line in printed.splitlines() if ":" in line and not line.startswith(" "))
    assert {k: v.strip() for k, v in fields.items() if k in card} == {k: v for k, v in card.items() if v != ""}


def test_the_hold_table_shows_the_skewed_dealer_beyond_chance_and_no_other(demo_run):
    cwd, result = demo_run
    (skew,) = json.loads((cwd / "demo/feeds/hold_skew.json").read_text(encoding="utf-8"))
    printed = step(result.stdout, 8)
    (command,) = typed(printed)
    answer = pitwatch(cwd, *[a for a in command if a not in ("--limit", "8")], "--format", "json")
    assert answer.returncode == 0, answer.stderr
    answered = [json.loads(line) for line in answer.stdout.splitlines()]
    hold = [r for r in answered if r["z"] is not None]      # the rows with a theory (not TBP, combate yet)
    assert len(hold) >= 12 and all(r["game"] in ("three_bet_poker", "combate") for r in answered if r not in hold)
    limit = threshold(len(hold))
    (dealer,) = [r for r in hold if (r["table_id"], r["dealer_id"]) == (skew["table_id"], skew["dealer_id"])]
    assert dealer["z"] < -limit and dealer["dealer_name"]
    assert all(abs(r["z"]) <= limit for r in hold if r is not dealer), limit
    # printed most improbable first: the skewed dealer's row heads the table
    first_row = printed.splitlines()[4].split()
    assert first_row[:3] == [skew["table_id"], "baccarat", skew["dealer_id"]]
    assert first_row[-1] == f"{dealer['z']:g}"


def test_a_demo_without_faults_reviews_nothing_and_no_dealer_stands_out(tmp_path):
    """The must-not of the above: with no procedure fault and no HOLD_SKEW there is nothing to review
    (the demo says so, and writes no review) and no dealer's hold beyond chance; the lake is intact."""
    result = pitwatch(tmp_path, "demo", "--faults", "0", "--hold-skew", "0", "--hours", "0.5")
    assert result.returncode == 0, result.stderr
    assert "nothing to review" in step(result.stdout, 5) and typed(step(result.stdout, 5)) == []
    assert rows(tmp_path, "sql", "select count(*) as n from reviews") == [{"n": "0"}]
    assert not (tmp_path / "demo/feeds/hold_skew.json").exists()
    hold = [r for r in rows(tmp_path, "query", "hold", "--param", "from_day=2026-11-28", "--param",
                            "to_day=2026-11-28") if r["z"] != ""]
    assert len(hold) >= 4 and all(abs(float(r["z"])) <= threshold(len(hold)) for r in hold)
    assert f"lake {LAKE}: intact" in step(result.stdout, 9)
