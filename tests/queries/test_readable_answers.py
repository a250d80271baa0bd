"""Issue 29 items 3-5 as an analyst meets them, through the ``pitwatch`` command over the small lake
(in this process; the terminal tests run real processes on a pseudo-terminal).

* hints instead of empty answers (``no table bac-07; did you mean BAC-07?`` on stderr, exit 0);
* ``--format text`` (one block per record, only non-empty columns), the default when a table is
  wider than the terminal and stdout is one; scripts (stdout not a terminal) keep ``table``;
* dealers by name: ``seeds/dealers.csv`` or ``--dealers FILE``; a bad file is one error line (exit 2);
* the simulator writes ``dealers.csv`` for the dealers it uses.

Every test checks that the lake, the seeds and the dealers file are byte-identical afterwards.
"""
from __future__ import annotations

import csv
import json
import os
import pty
import select
import subprocess
import sys

import pytest

from tests.conftest import run_pitwatch as pitwatch  # in this process; the terminal tests start real ones
from tests.queries.test_read_only import SEEDS, tree

ENV = dict(os.environ)


@pytest.fixture
def untouched(lake, dealers_file):
    before = tree(lake, SEEDS, os.path.dirname(dealers_file))
    yield
    assert tree(lake, SEEDS, os.path.dirname(dealers_file)) == before


# ---------------------------------------------------------------- hints instead of empty answers

HINTS = {
    "table id in lower case": (["round_replay", "table_id=bac-07", "round_id=R-1"],
                               "no table bac-07; did you mean BAC-07?\n"),
    "rule id misspelt": (["dealer_rule_repeats", "to_day=2026-11-28", "rule_id=BURN_SKIPED"],
                         "no rule BURN_SKIPED; did you mean BURN_SKIPPED?\n"),
    "rule id in lower case": (["dealer_rule_repeats", "to_day=2026-11-28", "rule_id=burn_skipped"],
                              "no rule burn_skipped; did you mean BURN_SKIPPED?\n"),
    "no such rule": (["dealer_rule_repeats", "to_day=2026-11-28", "rule_id=NOT_A_RULE"],
                     "no rule NOT_A_RULE; `pitwatch rules` lists the rule ids\n"),
    "round id of another form": (["round_replay", "table_id=BAC-07", "round_id=BAC-07-0014"],
                                 "no round BAC-07-0014; round ids look like R-1\n"),
    "round of another table": (["round_replay", "table_id=BAC-07", "round_id=R-10"],
                               "no round R-10 at table BAC-07: it is a round of another table\n"),
    "table and round both wrong": (["round_replay", "table_id=bac-07", "round_id=r-1"],
                                   "no table bac-07; did you mean BAC-07?\n"
                                   "no round r-1; did you mean R-1?\n"),
    "pack id in lower case": (["pack_custody", "table_id=BAC-07", "pack_id=p-1"],
                              "no pack p-1; did you mean P-1?\n"),
    "severity capitalised": (["findings_evidence", "gaming_day=2026-11-28", "severity=Critical"],
                             "no severity Critical; did you mean critical?\n"),
    "no such severity": (["findings_evidence", "gaming_day=2026-11-28", "severity=urgent"],
                         "no severity urgent; severities are critical, major, minor, info\n"),
    "no such table": (["table_day_summary", "table_id=XYZ", "from_day=2026-11-27", "to_day=2026-11-28"],
                      "no table XYZ; table ids look like TBP-02\n"),
}


@pytest.mark.parametrize("case", list(HINTS))
def test_an_empty_answer_says_which_parameter_matches_nothing(lake, untouched, case):
    (name, *params), hint = HINTS[case]
    args = ["query", name, "--lake", lake]
    for p in params:
        args += ["--param", p]
    result = pitwatch(*args, "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1          # the header: the answer itself is empty, as before
    assert result.stderr == hint


@pytest.mark.parametrize("args", [
    ["dealer_rule_repeats", "to_day=2026-11-28", "rule_id=PAYOUT"],          # a real rule with no finding
    ["round_replay", "table_id=BAC-08", "round_id=R-1"],                     # R-1 is BAC-07's
])
def test_a_real_value_gets_no_hint_unless_it_is_elsewhere(lake, untouched, args):
    name, *params = args
    result = pitwatch("query", name, "--lake", lake, *[x for p in params for x in ("--param", p)])
    assert result.returncode == 0
    expected = "" if name == "dealer_rule_repeats" else "no round R-1 at table BAC-08: it is a round of another table\n"
    assert result.stderr == expected


def test_an_answer_with_rows_gets_no_hint(lake, untouched):
    result = pitwatch("query", "round_replay", "--lake", lake, "--param", "table_id=BAC-07", "--param", "round_id=R-1")
    assert result.returncode == 0 and result.stderr == "" and "round_started" in result.stdout


# ---------------------------------------------------------------- --format text

NULLS_SQL = ("select 'BAC-07' as table_id, null as pack_id, '' as note, [] as cards, 0 as findings, "
             "'line one' || chr(10) || 'line two' as detail "
             "union all select 'TBP-02', 'TP-1', 'ok', ['Ah', 'Kd'], 2, null order by table_id")


def test_text_format_is_one_block_per_record_with_only_the_columns_that_have_a_value(lake, untouched):
    result = pitwatch("sql", NULLS_SQL, "--lake", lake, "--format", "text")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "table_id: BAC-07\n"
        "findings: 0\n"
        "detail:   line one\n"
        "          line two\n"
        "\n"
        "table_id: TBP-02\n"
        "pack_id:  TP-1\n"
        "note:     ok\n"
        "cards:    [Ah, Kd]\n"
        "findings: 2\n")


def test_text_format_of_no_rows(lake, untouched):
    result = pitwatch("sql", "select * from findings where false", "--lake", lake, "--format", "text")
    assert (result.returncode, result.stdout, result.stderr) == (0, "(no rows)\n", "")


def test_query_in_text_format(lake, dealers_file, untouched):
    result = pitwatch("query", "findings_per_dealer", "--lake", lake, "--dealers", dealers_file, "--format", "text",
                      "--param", "from_day=2026-11-28", "--param", "to_day=2026-11-28")
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("\n\n")
    assert blocks[0] == ("dealer_id:      D-1\ndealer_name:    Ana Rivera\nrounds:         2\ntables:         1\n"
                         "findings:       4\ncritical:       1\nmajor:          3\nminor:          0\ninfo:           0\n"
                         "per_100_rounds: 200")
    assert blocks[1].splitlines()[:2] == ["dealer_id:      D-2", "dealer_name:    Luis Vega"]
    assert blocks[2].splitlines()[:2] == ["dealer_id:      D-3", "rounds:         8"]   # D-3: no name, no line
    assert len(blocks) == 3


def on_a_terminal(args, columns: int) -> str:
    """stdout of ``pitwatch ARGS`` run on a pseudo-terminal ``columns`` wide."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pitwatch.cli", *args], stdout=slave, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env={**ENV, "COLUMNS": str(columns)})
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output within 60 s")
        try:
            chunk = os.read(master, 65536)
        except OSError:     # the terminal closed: the process is done
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(60) == 0, proc.stderr.read()
    os.close(master)
    return out.decode().replace("\r\n", "\n")


WIDE = ["sql", "select rule_id, severity, table_id, pack_id, round_id, dealer_id, expected, actual, source "
        "from findings where rule_id = 'SHOE_CARD_MISMATCH'"]


def test_a_table_wider_than_the_terminal_prints_as_text(lake, untouched):
    out = on_a_terminal([*WIDE, "--lake", lake], columns=60)
    assert out.startswith("rule_id:   SHOE_CARD_MISMATCH\nseverity:  critical\ntable_id:  BAC-07\n")
    assert "-----" not in out


def test_a_table_that_fits_the_terminal_stays_a_table(lake, untouched):
    out = on_a_terminal([*WIDE, "--lake", lake], columns=400)
    assert out.splitlines()[0].split() == ["rule_id", "severity", "table_id", "pack_id", "round_id", "dealer_id",
                                           "expected", "actual", "source"]
    assert out.splitlines()[1].startswith("------------------  --------")


def test_a_script_keeps_the_table_whatever_the_width(lake, untouched):
    result = pitwatch(*WIDE, "--lake", lake, env={"COLUMNS": "20"})   # stdout is a pipe
    assert result.returncode == 0
    assert result.stdout.splitlines()[0].startswith("rule_id             severity  table_id")


# ---------------------------------------------------------------- dealers by name

def test_dealer_names_come_from_the_dealers_file(lake, dealers_file, untouched):
    result = pitwatch("query", "findings_per_dealer", "--lake", lake, "--dealers", dealers_file, "--format", "csv",
                      "--param", "from_day=2026-11-27", "--param", "to_day=2026-11-28")
    assert result.returncode == 0, result.stderr
    names = {row["dealer_id"]: row["dealer_name"] for row in csv.DictReader(result.stdout.splitlines())}
    assert names == {"D-1": "Ana Rivera", "D-2": "Luis Vega", "D-3": ""}


def test_pack_custody_and_evidence_show_the_dealer_by_name(lake, dealers_file, untouched):
    custody = pitwatch("query", "pack_custody", "--lake", lake, "--dealers", dealers_file, "--format", "csv",
                       "--param", "table_id=BAC-07", "--param", "pack_id=P-1")
    rows = list(csv.DictReader(custody.stdout.splitlines()))
    assert {(r["dealer_id"], r["dealer_name"]) for r in rows if r["dealer_id"]} == {("D-1", "Ana Rivera")}
    evidence = pitwatch("query", "findings_evidence", "--lake", lake, "--dealers", dealers_file, "--format", "csv",
                        "--param", "gaming_day=2026-11-28")
    rows = list(csv.DictReader(evidence.stdout.splitlines()))
    assert rows and {r["dealer_name"] for r in rows if r["dealer_id"] == "D-1"} == {"Ana Rivera"}


def test_the_shipped_dealers_seed_is_an_empty_roster(lake, untouched):
    result = pitwatch("sql", "describe seeds_dealers", "--lake", lake, "--format", "csv")
    assert [line.split(",")[:2] for line in result.stdout.splitlines()[1:]] == [
        ["id", "VARCHAR"], ["name", "VARCHAR"], ["shift", "VARCHAR"]]
    assert pitwatch("sql", "select count(*) as n from seeds_dealers", "--lake", lake,
                    "--format", "csv").stdout == "n\n0\n"


def test_sql_sees_the_given_dealers_file(lake, dealers_file, untouched):
    result = pitwatch("sql", "from seeds_dealers order by id", "--lake", lake, "--dealers", dealers_file,
                      "--format", "csv")
    assert result.stdout == "id,name,shift\nD-1,Ana Rivera,swing\nD-2,Luis Vega,grave\n"


BAD_DEALERS = {
    "not UTF-8": (b"id,name,shift\nD-1,Jos\xe9,day\n", "not UTF-8 (byte 21)"),
    "a column missing": (b"id,name\nD-1,Ana\n", "the header is 'id,name'; it must name the columns id, name and shift"),
    "a column more": (b"id,name,shift,pin\nD-1,Ana,day,1234\n",
                      "the header is 'id,name,shift,pin'; it must name the columns id, name and shift"),
    "an id twice": (b"id,name,shift\nD-1,Ana,day\nD-1,Luis,day\n", "dealer D-1 on line 2 and again on line 3"),
    "no id": (b"id,name,shift\n,Ana,day\n", "line 2 has no id"),
    "a short line": (b"id,name,shift\nD-1,Ana\n", "line 2 has 2 fields, not 3"),
    "empty": (b"", "empty; the first line must be the header id,name,shift"),
    "binary": (b"\x00\x01\x02", "the header is"),
}


@pytest.mark.parametrize("case", list(BAD_DEALERS))
def test_a_bad_dealers_file_is_one_error_line(lake, untouched, tmp_path, case):
    data, message = BAD_DEALERS[case]
    path = tmp_path / "dealers.csv"
    path.write_bytes(data)
    result = pitwatch("query", "findings_per_dealer", "--lake", lake, "--dealers", str(path),
                      "--param", "from_day=2026-11-27", "--param", "to_day=2026-11-28")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"Error: dealers file {path}: {message}") and result.stderr.count("\n") == 1
    assert path.read_bytes() == data


def test_a_dealers_file_that_is_not_there(lake, untouched, tmp_path):
    result = pitwatch("sql", "select 1", "--lake", lake, "--dealers", str(tmp_path / "none.csv"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Error: " in result.stderr


def test_the_simulator_writes_the_dealers_it_uses(tmp_path):
    out = tmp_path / "floor"
    sim = pitwatch("simulate", "--out", str(out), "--tables", "baccarat=1,stud=1", "--hours", "0.3", "--workers", "1")
    assert sim.returncode == 0, sim.stderr
    from pitwatch.queries.dealers import read_dealers

    roster = read_dealers(str(out / "dealers.csv")).to_pylist()
    used = set()
    for path in out.glob("*/*.jsonl"):
        for line in path.read_text().splitlines():
            if '"dealer_id"' in line:
                import json
                dealer = json.loads(line).get("dealer_id")
                if dealer:
                    used.add(dealer)
    assert used and used <= {r["id"] for r in roster}
    assert all(r["name"] and r["shift"] == "swing" for r in roster)    # the default start, 20:00 UTC
    assert (out / "dealers.csv").read_text().startswith("id,name,shift\n")


# ---------------------------------------------------------------- hostile text in a readable answer

def test_a_dealer_name_cannot_drive_the_terminal(lake, untouched, tmp_path):
    """A roster line that clears the screen and reverses the text: table, text and csv show it
    escaped (issue 37: csv kept it raw), json keeps the exact text, escaped by JSON."""
    path = tmp_path / "dealers.csv"
    path.write_bytes("id,name,shift\nD-1,Ana\x1b[2J\u202eareviR,day\n".encode())
    base = ["sql", "select name from seeds_dealers", "--lake", lake, "--dealers", str(path)]
    assert pitwatch(*base, "--format", "text").stdout == "name: Ana\\x1b[2J\\u202eareviR\n"
    assert pitwatch(*base, "--format", "table").stdout.splitlines()[2] == "Ana\\x1b[2J\\u202eareviR"
    assert pitwatch(*base, "--format", "csv").stdout == "name\nAna\\x1b[2J\\u202eareviR\n"
    assert json.loads(pitwatch(*base, "--format", "json").stdout) == {"name": "Ana\x1b[2J\u202eareviR"}


def test_one_row_cut_says_row_not_rows(lake, untouched):
    result = pitwatch("sql", "select * from rounds", "--lake", lake, "--max-rows", "1", "--format", "csv")
    assert result.returncode == 3
    assert result.stderr.startswith("Error: the output was cut at 1 row (--max-rows 1); there are more")
