"""The README's investigation examples run as written on the demo's lake, and every example of
``pitwatch sql/query --help`` and of the queries' headers names ids of the real form (issue 29):
each returns rows on a simulated lake, with no hint.  Slow: ``pitwatch demo`` runs the batch."""
from __future__ import annotations

import os
import shlex
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


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## Investigations", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
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
