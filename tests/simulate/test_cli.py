"""``pitwatch simulate``: help with an example, one-line errors, a summary at the end."""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from pitwatch.cli import main


def run(*args):
    return CliRunner().invoke(main, ["simulate", *args])


def test_help_has_an_example():
    r = run("--help")
    assert r.exit_code == 0
    assert "pitwatch simulate --out day/" in r.output and "--fault RULE_ID=RATE" in r.output


def test_writes_files_truth_and_prints_a_summary(tmp_path):
    out = tmp_path / "day"
    r = run("--out", str(out), "--tables", "baccarat=1,stud=1", "--hours", "0.5", "--fault", "BRING_IN=1")
    assert r.exit_code == 0, r.output
    assert "events:" in r.output and "faults injected:" in r.output and "BRING_IN" in r.output
    truth = [orjson.loads(x) for x in (out / "truth.jsonl").read_bytes().splitlines()]
    assert truth and {t["rule_id"] for t in truth} == {"BRING_IN"}
    assert len(list(out.glob("*/*.jsonl"))) >= 4


def test_writes_the_device_registry_and_both_feed_faults(tmp_path):
    from pitwatch.inputs.devices import load_registry

    out = tmp_path / "day"
    r = run("--out", str(out), "--tables", "baccarat=1", "--hours", "4", "--fault", "SHOE_SILENT=1",
            "--fault", "UNKNOWN_DEVICE=1")
    assert r.exit_code == 0, r.output
    assert f"device registry: {out / 'devices.csv'}" in r.output
    listed = {row[0] for row in load_registry(str(out / "devices.csv")).rows}
    writers = {p.stem for p in out.glob("*/*.jsonl")}
    truth = [orjson.loads(x) for x in (out / "truth.jsonl").read_bytes().splitlines()]
    assert {t["rule_id"] for t in truth} == {"SHOE_SILENT", "UNKNOWN_DEVICE"}
    rogue = {t["device_id"] for t in truth if t["rule_id"] == "UNKNOWN_DEVICE"}
    assert len(rogue) == 1 and writers - listed == rogue     # every other device that wrote is listed


@pytest.mark.parametrize("args, words", [
    (["--tables", "poker=2"], "unknown game 'poker'"),
    (["--tables", "baccarat=x"], "whole number"),
    (["--fault", "NOT_A_RULE=1"], "unknown rule 'NOT_A_RULE'"),
    (["--fault", "PAYOUT=2"], "between 0 and 1"),
    (["--faults", "often"], "must be a number"),
    (["--start", "yesterday"], "not an ISO time"),
])
def test_user_mistakes_give_one_error_line(tmp_path, args, words):
    r = run("--out", str(tmp_path / "x"), *args)
    assert r.exit_code == 2
    errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and words in errors[0]
    assert "Traceback" not in r.output


def test_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "old.txt").write_text("x")
    r = run("--out", str(tmp_path))
    assert r.exit_code == 2 and "not empty" in r.output


def test_list_faults_names_every_injectable_rule_then_the_faults_without_a_rule():
    from pitwatch.simulator.faults import FAULT_NAMES, QUIET

    r = run("--list-faults")
    assert r.exit_code == 0
    assert [ln.split()[0] for ln in r.output.splitlines()] == list(FAULT_NAMES) + list(QUIET)
