"""The README's investigation examples run as written on the demo's lake, and every example of
``pitwatch sql/query --help`` and of the queries' headers names ids of the real form (issue 29):
each returns rows on a simulated lake, with no hint.  Slow: ``pitwatch demo`` runs the batch."""
from __future__ import annotations

import csv
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pitwatch.lake import Lake
from pitwatch.queries import load_queries
from tests.conftest import run_pitwatch_process

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ)


def pitwatch(args, cwd) -> subprocess.CompletedProcess:
    return run_pitwatch_process(*args, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def demo(demo_run) -> Path:
    """The folder ``pitwatch demo`` ran in: its lake has the roster and the demo's two reviews."""
    cwd, _ = demo_run
    assert (cwd / "demo" / "feeds" / "dealers.csv").is_file()
    return cwd


# answer no row on a lake no corrected replay changed (the demo's): run, and answer only their header
EMPTY_ON_THE_DEMO = {"orphan_reviews"}


def readme_commands(section: str = "## Investigations") -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split(f"\n{section}\n", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("pitwatch ")]


def test_the_readme_examples_run_as_written_on_the_demo_lake(demo):
    commands = readme_commands()
    assert len(commands) >= 6
    for line in commands:
        args = shlex.split(line, comments=True)[1:]
        result = pitwatch(args, demo)
        assert result.returncode == 0, (line, result.stderr)
        if "R-0054" in line:     # the one written to show a hint
            assert result.stderr == ("no table bac-01; did you mean BAC-01?\n"
                                     "no round R-0054; round ids look like BAC-01-0054\n")
        elif args[0] == "query" and "--list" not in args:
            assert result.stderr == "" and len(result.stdout.splitlines()) > 2, line
    named = [shlex.split(c)[1:] for c in commands if " query dealer_rule_repeats " in c][0]
    rows = pitwatch([*named, "--format", "csv"], demo).stdout.splitlines()
    header = rows[0].split(",")
    assert all(r.split(",")[header.index("dealer_name")] for r in rows[1:])    # every dealer has a name


def help_examples(command: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pitwatch.cli", command, "--help"], capture_output=True,
                         text=True, env=ENV, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip().startswith(f"pitwatch {command} ")]


def _demo_as_of(lake: str, example: str) -> str:
    from pitwatch.lake import parquet as lake_mod
    from pitwatch.lake import runs
    from pitwatch.queries.as_of import RUN_ID

    # the last batch run: a review's or a roster import's record succeeds too, but names no table versions
    last = [r for r in runs.latest_records(lake_mod.read_table(Lake.at(lake), "runs"))
            if r["status"] == "succeeded" and r["table_versions"]][-1]
    return last["run_id"] if RUN_ID.match(example) else last["ended"].isoformat()


def test_every_help_and_header_example_finds_rows_on_a_simulated_lake(demo):
    examples = help_examples("query") + help_examples("sql")
    examples += [e for q in load_queries().values() for e in q.examples]
    lake, dealers = str(demo / "demo" / "lake"), str(demo / "demo" / "feeds" / "dealers.csv")
    checked = 0
    for example in examples:
        args = shlex.split(example)[1:]
        if "--list" in args or "-" in args:
            continue
        args = [lake if a == "lake" else dealers if a == "dealers.csv" else a for a in args]
        if "--as-of" in args:     # the example's run id or night: the demo lake's own (it ran today)
            at = args.index("--as-of") + 1
            args[at] = _demo_as_of(lake, args[at])
        if "--format" not in args:
            args += ["--format", "csv"]
        result = pitwatch(args, demo)
        assert result.returncode == 0, (example, result.stderr)
        if args[0] == "query" and args[1] in EMPTY_ON_THE_DEMO:
            assert result.stderr == "" and len(result.stdout.splitlines()) == 1, example
            continue
        preview = "--limit" in args and result.stdout.count("\n") == 1 + int(args[args.index("--limit") + 1])
        assert result.stderr == (f"the first {args[args.index('--limit') + 1]} rows shown (--limit "
                                 f"{args[args.index('--limit') + 1]}); there are more\n" if preview else ""), example
        if args[:2] == ["query", "findings_changed_since"]:
            # the demo's lake is one run's: no later run changed a day, so the answer is rightly empty (its
            # rows on a lake of two nights: tests/pipelines/test_finding_changes.py); the header, no hint
            assert result.stdout.splitlines() == [result.stdout.splitlines()[0]], example
            assert result.stdout.startswith("run_id,run_started,change,gaming_day,finding_id,"), example
        elif "text" in args:
            assert result.stdout.strip() and result.stdout != "(no rows)\n", example
        else:
            assert len(result.stdout.splitlines()) > 1, example
        checked += 1
    assert checked >= 12


def test_the_analyst_s_round_trip_runs_as_written_after_make_demo(demo, tmp_path):
    """README's five commands, pasted in order after ``make demo`` (on a copy of its folder: the review
    writes to the lake): the finding shown open is confirmed, becomes an incident record and counts
    as the dealer's second confirmed error (the demo confirmed the first)."""
    shutil.copytree(demo / "demo", tmp_path / "demo")
    commands = [shlex.split(c)[1:] for c in readme_commands("## The analyst's round trip")]
    assert [c[0] if c[0] != "query" else c[1] for c in commands] == [
        "open_findings", "round_replay", "review", "incidents", "dealer_scorecard"]
    out = []
    for args in commands:
        result = pitwatch(args, tmp_path)
        assert result.returncode == 0, (args, result.stderr)
        assert args[0] != "query" or len(result.stdout.splitlines()) > 2, args
        out.append(result)
    finding = commands[2][1]
    assert finding in out[0].stdout                      # shown open first
    assert "round_started" in out[1].stdout and "[VOID_NOT_DECLARED (critical)]" in out[1].stdout
    assert out[2].stdout == f"{finding}: confirmed (review " + out[2].stdout.split("(review ", 1)[1]
    assert out[2].stdout.endswith(", by M.Ortiz)\n")
    records = list(csv.DictReader((tmp_path / "incidents-2026-11-28.csv").open(encoding="utf-8", newline="")))
    (record,) = [r for r in records if r["finding_id"] == finding]
    assert (record["disposition"], record["reason"], record["dealer_id"]) == ("confirmed", "DEALER_ERROR", "D-1106")
    assert len(records) == 2                              # the demo's confirmed one and this one; dismissed: none
    card = dict(line.split(":", 1) for line in out[4].stdout.splitlines())
    assert card["confirmed_errors"].strip() == "2" and card["dealer_id"].strip() == "D-1106"
    again = pitwatch(["query", "open_findings", "--lake", "demo/lake", "--format", "csv"], tmp_path)
    assert finding not in again.stdout and again.returncode == 0
