"""The command line: every command has --help with an example; output formats are pinned."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from pitwatch.cli import COMMANDS, main
from pitwatch.cli.render import render

AVAILABLE = sorted(main.list_commands(None))


def test_every_registered_command_module_exists():
    assert AVAILABLE == sorted(COMMANDS), "a command is registered whose module does not exist"


@pytest.mark.parametrize("name", AVAILABLE)
def test_every_command_has_help_with_an_example(name):
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.output and f"pitwatch {name}" in result.output


def test_top_level_help_lists_the_commands():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in AVAILABLE:
        assert f"  {name} " in result.output


def test_unknown_command_is_an_error_not_a_traceback():
    result = subprocess.run([sys.executable, "-m", "pitwatch.cli", "nosuch"], capture_output=True, text=True)
    assert result.returncode == 2 and "No such command 'nosuch'" in result.stderr and "Traceback" not in result.stderr


def test_render_formats_are_pinned():
    cols, rows = ["rule_id", "n", "games"], [["BURN_COUNT", 3, ["baccarat"]], ["PAYOUT", None, []]]
    assert render(cols, rows, "table") == (
        "rule_id     n  games\n"
        "----------  -  ----------\n"
        "BURN_COUNT  3  [baccarat]\n"
        "PAYOUT         []\n")
    assert render(cols, rows, "csv") == "rule_id,n,games\nBURN_COUNT,3,[baccarat]\nPAYOUT,,[]\n"
    assert render(cols, rows, "json") == (
        '{"rule_id":"BURN_COUNT","n":3,"games":["baccarat"]}\n{"rule_id":"PAYOUT","n":null,"games":[]}\n')


def test_a_large_float_is_printed_in_full_not_in_exponent_form():
    cols, rows = ["table_id", "handle"], [["BAC-01", 1457080.0], ["BAC-02", 25000000.5]]
    assert render(cols, rows, "table") == (
        "table_id  handle\n"
        "--------  ----------\n"
        "BAC-01    1457080\n"
        "BAC-02    25000000.5\n")
    assert render(cols, rows, "csv") == "table_id,handle\nBAC-01,1457080\nBAC-02,25000000.5\n"


def test_a_small_float_keeps_its_short_form():
    assert render(["hold_pct"], [[0.1], [2.5], [-3.0]], "csv") == "hold_pct\n0.1\n2.5\n-3\n"


@pytest.mark.parametrize("value", [0.1, 1 / 3, -0.0, 1457080.0, 1457080.25, 123456789.123, 2.0 ** 60, 1e-7, -12.5, 1e300])
def test_a_float_in_csv_reads_back_as_the_same_float(value):
    cell = render(["v"], [[value]], "csv").splitlines()[1]
    assert repr(float(cell)) == repr(value)
    if abs(value) < 1e16:
        assert "e+" not in cell, cell


def test_rules_lists_the_catalogue_in_every_format():
    from pitwatch.rules.catalog import RULES

    out = CliRunner().invoke(main, ["rules", "--format", "json"]).output
    rows = [json.loads(l) for l in out.splitlines()]
    assert [r["rule_id"] for r in rows] == [r.rule_id for r in RULES]
    csv_out = CliRunner().invoke(main, ["rules", "--format", "csv", "--game", "baccarat", "--severity", "critical"]).output
    assert csv_out.splitlines()[0] == "rule_id,title,severity,games,source,summary"
    assert all(",critical," in l for l in csv_out.splitlines()[1:]) and len(csv_out.splitlines()) > 2


def test_verify_help_names_what_it_checks_beyond_the_tables():
    text = " ".join(CliRunner().invoke(main, ["verify", "--help"]).output.split())
    assert "reviews" in text and "chain" in text
    assert "roster" in text and "device registr" in text
