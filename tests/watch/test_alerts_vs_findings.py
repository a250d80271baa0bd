"""The named query ``alerts_vs_findings`` on a lake the batch and a watcher both wrote (real processes):
the three groups, and ``pitwatch verify`` on that lake (exit 0; exit 5 after a byte flip of an
alerts file)."""
from __future__ import annotations

import csv
import datetime
import io
import json
import os

import pytest

from pitwatch.lake import Lake
from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave, write_batch_input
from tests.watch.test_alerts_table import data_commits, pitwatch


@pytest.mark.slow
def test_a_days_alerts_against_the_batchs_findings_give_the_three_groups(tmp_path, scenario, start_watch):
    from pitwatch.lake.parquet import read_table
    from pitwatch.pipelines.batch import run_batch

    lake = tmp_path / "lake"
    # the batch saw table BAC-B only; the watcher sees both tables but BAC-B's feeds only up to the
    # card drawn and never recorded (its lines from then on never reach it): so some alerts are
    # confirmed (BAC-B's UNSHUFFLED_PACK, at its first card), the BAC-A ones are not (the batch never
    # saw that table), and the UNACCOUNTED_CARD finding was never alerted
    table_b = {d: lines for d, lines in scenario.items() if d.endswith("BAC-B")}
    assert table_b and len(table_b) < len(scenario)
    write_batch_input(table_b, tmp_path / "in")
    run_batch([str(tmp_path / "in")], Lake.at(lake))
    found = read_table(Lake.at(lake), "findings").to_pylist()
    feeds = tmp_path / "feeds"
    unaccounted = [f for f in found if f["rule_id"] == "UNACCOUNTED_CARD"]
    assert len(unaccounted) == 1
    cut = unaccounted[0]["evidence_from"] or unaccounted[0]["ts"]

    def reached(device, line):
        return not device.endswith("BAC-B") or datetime.datetime.fromisoformat(json.loads(line)["ts"]) < cut
    order = [(d, line) for d, line in interleave(scenario, seed=2) if reached(d, line)]
    w = start_watch(feeds, "--lake", lake, "--commit-every", "0.5")
    append_lines(feeds, order)
    w.caught_up(len(order))
    # BAC-B has no shuffler: its UNSHUFFLED_PACK is raised --gap-wait seconds of the watcher's clock after
    # its first card (live/early.py), a race with the gap's release that "caught up" reports
    unshuffled = {f["finding_id"] for f in found if f["rule_id"] == "UNSHUFFLED_PACK"}
    w.wait_for(lambda: unshuffled <= {a.get("finding_id") for a in w.alerts if isinstance(a, dict)},
               "BAC-B's UNSHUFFLED_PACK alert")
    assert w.stop() == 0
    alerted = {a["finding_id"]: a for a in w.alerts}
    findings = {f["finding_id"]: f for f in found}
    days = sorted({a["gaming_day"] for a in w.alerts} | {str(f["gaming_day"]) for f in found})
    got = {"confirmed": set(), "not confirmed": set(), "never alerted": set(), "live only": set()}
    announced = {}
    for day in days:
        out = pitwatch("query", "alerts_vs_findings", "--lake", lake, "--param", f"gaming_day={day}", "--format", "csv")
        assert out.returncode == 0, out.stderr
        for row in csv.DictReader(io.StringIO(out.stdout)):
            assert row["finding_id"] not in set().union(*got.values())      # one row per alert or finding
            got[row["outcome"]].add(row["finding_id"])
            if row["announced_finding_id"]:
                announced[row["finding_id"]] = row["announced_finding_id"]
    assert got["confirmed"] == set(alerted) & set(findings) != set()
    assert got["not confirmed"] == set(alerted) - set(findings) != set()
    assert got["never alerted"] == set(findings) - set(alerted) != set()
    assert {alerted[i]["table_id"] for i in got["not confirmed"]} == {"BAC-A"}
    assert {findings[i]["rule_id"] for i in got["never alerted"]} == {"UNACCOUNTED_CARD"}
    # the live-only alerts apart (BAC-A's switched card: provisional, then its final alert's finding)
    assert got["live only"] == {a["finding_id"] for a in w.provisional} != set()
    finals = {a["provisional_id"]: a["finding_id"] for a in w.alerts if a.get("provisional_id")}
    assert announced == {p: f for p, f in finals.items() if p in got["live only"]} != {}
    # the lake the batch and the watcher wrote is intact; an alerts file edited is found
    ok = pitwatch("verify", "--lake", lake)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    flipped = lake / "alerts" / data_commits(lake)[-1]["adds"][0]
    data = bytearray(flipped.read_bytes())
    data[-20] ^= 0x40
    os.chmod(flipped, 0o644)
    flipped.write_bytes(bytes(data))
    bad = pitwatch("verify", "--lake", lake)
    assert bad.returncode == 5, bad.stdout + bad.stderr
    assert f"alerts/{data_commits(lake)[-1]['adds'][0]}" in bad.stdout
