"""Feed health end to end: ``pitwatch run --devices``, the nightly form's ``INBOX/devices.csv``,
``pitwatch rules``, and the example floor (no registry) still clean — real processes, real lakes."""
from __future__ import annotations

import json

import pytest

from pitwatch.lake import Lake
from pitwatch.simulator import simulate
from pitwatch.simulator.truth import compare, lake_findings, read_truth
from tests.conftest import run_pitwatch_process as pitwatch  # a real process: runs
from tests.data import CLEAN_FLOOR

EXAMPLE = CLEAN_FLOOR                 # the clean example floor, gzipped (tests/data)


def test_rules_lists_the_feed_health_rules():
    r = pitwatch("rules", "--format", "json")
    rows = {row["rule_id"]: row for row in map(json.loads, r.stdout.splitlines())}
    assert r.returncode == 0
    assert rows["SHOE_SILENT"]["severity"] == "major" and rows["UNKNOWN_DEVICE"]["severity"] == "critical"
    assert rows["SHOE_SILENT"]["games"] == ["baccarat", "three_bet_poker", "combate"]
    assert "UNKNOWN_DEVICE" in pitwatch("rules", "--game", "razz").stdout


@pytest.fixture(scope="module")
def faulty_floor(tmp_path_factory):
    """One shoe table of each game for 2 h, with both feed faults: OUT/<day>/…, devices.csv, truth.jsonl."""
    out = tmp_path_factory.mktemp("floor") / "inbox"
    simulate(out, tables={"baccarat": 1, "three_bet_poker": 1, "combate": 1}, hours=2.0, seed=3,
             faults={"SHOE_SILENT": 0.3, "UNKNOWN_DEVICE": 1.0})
    return out


def _rules(lake) -> dict:
    out: dict = {}
    for f in lake_findings(Lake.at(lake)):
        out[f["rule_id"]] = out.get(f["rule_id"], 0) + 1
    return out


@pytest.mark.slow
def test_run_with_devices_raises_both_faults_exactly_as_the_truth_says(faulty_floor, tmp_path):
    days = sorted(d for d in faulty_floor.iterdir() if d.is_dir())
    lake = tmp_path / "lake"
    r = pitwatch("run", *days, "--devices", faulty_floor / "devices.csv", "--lake", lake, "--quiet")
    assert r.returncode == 0, r.stderr
    result = compare(lake_findings(Lake.at(lake)), read_truth(faulty_floor / "truth.jsonl"))
    assert set(result) == {"SHOE_SILENT", "UNKNOWN_DEVICE"}
    assert all(c.matches and c.found for c in result.values()), {k: (c.missed, c.extra) for k, c in result.items()}
    # without the registry: UNKNOWN_DEVICE is off, SHOE_SILENT still sees the shoe that wrote before
    bare = tmp_path / "bare"
    assert pitwatch("run", *days, "--lake", bare, "--quiet").returncode == 0
    assert _rules(bare) == {"SHOE_SILENT": result["SHOE_SILENT"].found}


@pytest.mark.slow
def test_the_nightly_form_reads_inbox_devices_csv(faulty_floor, tmp_path):
    day = sorted(d.name for d in faulty_floor.iterdir() if d.is_dir())[0]
    lake = tmp_path / "lake"
    r = pitwatch("run", "--day", day, "--inbox", faulty_floor, "--lake", lake, "--quiet")
    assert r.returncode == 0, r.stderr
    truth = [t for t in read_truth(faulty_floor / "truth.jsonl") if t["rule_id"] == "UNKNOWN_DEVICE"]
    found = [f for f in lake_findings(Lake.at(lake)) if f["rule_id"] == "UNKNOWN_DEVICE"]
    assert sorted((f["table_id"], f["device_id"]) for f in found) == sorted((t["table_id"], t["device_id"])
                                                                             for t in truth)


@pytest.mark.slow
def test_the_example_floor_without_a_registry_still_raises_nothing(tmp_path):
    assert not (EXAMPLE.parent / "devices.csv").exists()
    lake = tmp_path / "lake"
    r = pitwatch("run", EXAMPLE, "--lake", lake, "--quiet")
    assert r.returncode == 0, r.stderr
    assert lake_findings(Lake.at(lake)) == []
