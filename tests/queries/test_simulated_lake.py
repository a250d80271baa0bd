"""The investigations over a simulated floor with injected BURN_SKIPPED faults (end to end, slow).

The injected faults must come back as findings: a run that writes none fails this test.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.lake import Lake

pytestmark = pytest.mark.slow


def test_injected_burn_faults_show_up_in_the_investigations(tmp_path):
    from pitwatch.queries.catalog import run_query
    from pitwatch.queries.lake_views import connect, run_sql

    out, lake = tmp_path / "floor", tmp_path / "lake"
    sim = CliRunner().invoke(main, ["simulate", "--out", str(out), "--fault", "BURN_SKIPPED=1"])
    assert sim.exit_code == 0, sim.output
    run = CliRunner().invoke(main, ["run", str(out), "--lake", str(lake), "--quiet"])
    assert run.exit_code == 0, run.output
    truth = [json.loads(l) for l in (out / "truth.jsonl").read_text().splitlines() if "BURN_SKIPPED" in l]
    assert truth, "the simulator injected no BURN_SKIPPED"

    con = connect(Lake.at(lake))
    (written,), = run_sql(con, "SELECT count(*) FROM findings WHERE rule_id = 'BURN_SKIPPED'")[1]
    assert written >= len(truth), f"{len(truth)} BURN_SKIPPED injected, {written} found"
    (first, last), = run_sql(con, "SELECT min(d), max(d) FROM (SELECT unnest(gaming_days) AS d FROM runs)")[1]
    days = {"from_day": str(first), "to_day": str(last)}

    cols, rows = run_query(con, "findings_by_rule", days)
    by_rule = {r[cols.index("rule_id")]: r[cols.index("findings")] for r in rows}
    assert by_rule.get("BURN_SKIPPED", 0) >= len(truth)

    cols, rows = run_query(con, "dealer_rule_repeats", {"to_day": str(last), "rule_id": "BURN_SKIPPED",
                                                        "days": str((last - first).days + 1)})
    assert sum(r[cols.index("findings")] for r in rows) >= len(truth)

    packs = sorted({t["pack_id"] for t in truth if t.get("pack_id")})
    for pack_id in packs[:3]:
        table_id = run_sql(con, "SELECT any_value(table_id) FROM packs WHERE pack_id = $p", {"p": pack_id})[1][0][0]
        cols, rows = run_query(con, "pack_custody", {"table_id": table_id, "pack_id": pack_id})
        assert ("finding", "BURN_SKIPPED") in {(r[cols.index("stage")], r[cols.index("type")]) for r in rows}
