"""``--as-of RUN_ID|TIMESTAMP`` on ``pitwatch sql``, ``query`` and ``export-duckdb`` (issue 26, part 3).

Two real nightly-style runs (real ``pitwatch run`` processes: Beam, Delta commits) on one lake,
night 2026-11-28 then night 2026-11-29; the first night's findings are taken whole (every column,
as JSON) right after the first run; after the second, ``--as-of <first run id>`` and ``--as-of
<a time between the runs>`` give exactly those rows again, the default gives the latest.  Every
refusal (unknown run id, a run that did not succeed, a malformed time, a time before the first
run) is one ``Error:`` line, exit 2, and leaves the lake's bytes as they were.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import pytest

from pitwatch.lake import Lake
from tests.conftest import run_pitwatch_process as pitwatch  # a real process: runs

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = "FROM findings ORDER BY finding_id"
pytestmark = pytest.mark.slow     # the module's lake is written by two real runs (Beam pipelines)


def lake_bytes(lake: Path) -> dict[str, bytes]:
    return {str(p.relative_to(lake)): p.read_bytes() for p in sorted(lake.rglob("*")) if p.is_file()}


def sql_json(lake, statement, *extra) -> list[dict]:
    done = pitwatch("sql", statement, "--lake", lake, "--format", "json", *extra)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]   # JSON lines, one row each


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """The lake after two runs, the first night's findings as read right after its run, the run ids."""
    from pitwatch.simulator import simulate

    base = tmp_path_factory.mktemp("as_of")
    faults = {"SHOE_CARD_MISMATCH": 1.0, "BURN_SKIPPED": 0.3}
    simulate(base / "n1", tables={"baccarat": 1}, hours=0.5, seed=3, faults=faults, workers=1)
    simulate(base / "n2", tables={"baccarat": 1}, hours=0.5, seed=4, faults=faults, workers=1,
             start=dt.datetime(2026, 11, 29, 20, 0, tzinfo=dt.timezone.utc))
    lake = base / "lake"
    first = pitwatch("run", base / "n1" / "2026-11-28", "--lake", lake)
    assert first.returncode == 0, first.stderr
    night1 = sql_json(lake, FINDINGS)
    rounds1 = sql_json(lake, "FROM rounds ORDER BY ALL")
    second = pitwatch("run", base / "n2" / "2026-11-29", "--lake", lake)
    assert second.returncode == 0, second.stderr
    runs = sql_json(lake, "SELECT run_id, status, ended FROM runs ORDER BY started")
    assert [r["status"] for r in runs] == ["succeeded", "succeeded"]
    return {"lake": lake, "night1": night1, "rounds1": rounds1, "runs": runs, "base": base}


def test_the_default_reads_the_latest_run_and_differs_from_the_first_night(nights):
    latest = sql_json(nights["lake"], FINDINGS)
    assert nights["night1"], "the first night has findings (the simulator's faults)"
    days = {f["gaming_day"] for f in latest}
    assert days == {"2026-11-28", "2026-11-29"}
    assert [f for f in latest if f["gaming_day"] == "2026-11-28"] == nights["night1"]
    assert len(latest) > len(nights["night1"])


def test_as_of_the_first_run_id_returns_the_first_nights_rows_whole(nights):
    run1 = nights["runs"][0]["run_id"]
    assert sql_json(nights["lake"], FINDINGS, "--as-of", run1) == nights["night1"]
    assert sql_json(nights["lake"], "FROM rounds ORDER BY ALL", "--as-of", run1) == nights["rounds1"]


def test_as_of_a_time_between_the_runs_returns_the_first_night(nights):
    ended1 = dt.datetime.fromisoformat(nights["runs"][0]["ended"].replace("Z", "+00:00"))
    ended2 = dt.datetime.fromisoformat(nights["runs"][1]["ended"].replace("Z", "+00:00"))
    between = ended1 + (ended2 - ended1) / 2
    assert sql_json(nights["lake"], FINDINGS, "--as-of", between.isoformat()) == nights["night1"]
    # the same moment written in the casino's offset and with Z: the same night
    at_minus4 = between.astimezone(dt.timezone(dt.timedelta(hours=-4))).isoformat()
    assert sql_json(nights["lake"], FINDINGS, "--as-of", at_minus4) == nights["night1"]
    # the moment the first run ended is already that night; after the second run ended, the latest
    assert sql_json(nights["lake"], FINDINGS, "--as-of", ended1.isoformat()) == nights["night1"]
    after = (ended2 + dt.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert sql_json(nights["lake"], FINDINGS, "--as-of", after) == sql_json(nights["lake"], FINDINGS)


def test_query_as_of_the_first_run_returns_the_first_nights_findings(nights):
    run1 = nights["runs"][0]["run_id"]
    args = ("query", "findings_by_rule", "--lake", nights["lake"], "--param", "from_day=2026-11-28",
            "--param", "to_day=2026-11-29", "--format", "json")
    then = pitwatch(*args, "--as-of", run1)
    now = pitwatch(*args)
    assert then.returncode == 0 and now.returncode == 0, then.stderr + now.stderr
    expected = {}
    for f in nights["night1"]:
        expected[f["rule_id"]] = expected.get(f["rule_id"], 0) + 1
    assert {r["rule_id"]: r["findings"] for r in [json.loads(x) for x in then.stdout.splitlines()]} == expected
    assert [json.loads(x) for x in then.stdout.splitlines()] != [json.loads(x) for x in now.stdout.splitlines()]


def test_export_duckdb_as_of_copies_the_pinned_versions_and_names_the_run(nights, tmp_path):
    run1 = nights["runs"][0]["run_id"]
    out = tmp_path / "night1.duckdb"
    done = pitwatch("export-duckdb", "--lake", nights["lake"], "--out", out, "--as-of", run1)
    assert done.returncode == 0, done.stderr
    assert run1 in done.stdout
    con = duckdb.connect(str(out), read_only=True)
    try:
        cur = con.execute(FINDINGS)
        cols = [d[0] for d in cur.description]
        rows = [dict(zip(cols, r)) for r in cur.fetchall()]
        assert [r["finding_id"] for r in rows] == [f["finding_id"] for f in nights["night1"]]
        assert [str(r["gaming_day"]) for r in rows] == [f["gaming_day"] for f in nights["night1"]]
        assert [r["event_ids"] for r in rows] == [f["event_ids"] for f in nights["night1"]]
        assert con.execute("SELECT run_id, as_of FROM pitwatch_export").fetchall() == [(run1, run1)]
    finally:
        con.close()
    latest = tmp_path / "latest.duckdb"
    assert pitwatch("export-duckdb", "--lake", nights["lake"], "--out", latest).returncode == 0
    con = duckdb.connect(str(latest), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM findings").fetchone()[0] == len(sql_json(nights["lake"], FINDINGS))
        assert con.execute("SELECT run_id, as_of FROM pitwatch_export").fetchall() == [
            (nights["runs"][1]["run_id"], None)]
    finally:
        con.close()


def _write_failed_run(lake: Path) -> str:
    """A run record of a run that failed (as a run whose counts did not reconcile leaves it)."""
    from pitwatch.lake import runs

    now = dt.datetime.now(dt.timezone.utc)
    meta = {"run_id": runs.new_run_id(now), "command": "pitwatch run x.jsonl", "started": now.isoformat(),
            "versions": runs.versions(), "options": "{}"}
    runs.write_run_record(Lake.at(lake), runs.run_record(meta, "running"))
    runs.write_run_record(Lake.at(lake), runs.run_record(meta, "failed: the counts did not reconcile", ended=now))
    return meta["run_id"]


@pytest.mark.parametrize("command", ["sql", "query", "export-duckdb"])
def test_every_refused_as_of_is_one_error_line_exit_2_and_the_lake_unchanged(nights, command, tmp_path):
    lake = nights["lake"]
    first_started = nights["runs"][0]["ended"]
    before_first = (dt.datetime.fromisoformat(first_started.replace("Z", "+00:00"))
                    - dt.timedelta(days=1)).isoformat()
    cases = {
        "20261128T070001Z-0badc0de": "no run of this lake has that id",
        "yesterday": "not a run id of this lake nor a time",
        "2026-13-01T00:00:00Z": "not a run id of this lake nor a time",
        " 2026-11-29": "not a run id of this lake nor a time",
        "'; DROP TABLE findings; --": "not a run id of this lake nor a time",
        before_first: "before the lake's first successful run ended",
    }
    head = {"sql": ("sql", "FROM findings", "--lake", lake),
            "query": ("query", "findings_by_rule", "--lake", lake, "--param", "from_day=2026-11-28",
                      "--param", "to_day=2026-11-29"),
            "export-duckdb": ("export-duckdb", "--lake", lake, "--out", tmp_path / "x.duckdb")}[command]
    before = lake_bytes(lake)
    for as_of, said in cases.items():
        done = pitwatch(*head, "--as-of", as_of)
        assert done.returncode == 2, (as_of, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and said in lines[0], (as_of, done.stderr)
        assert "Traceback" not in done.stderr and done.stdout == ""
    assert lake_bytes(lake) == before
    assert not (tmp_path / "x.duckdb").exists()


def test_as_of_a_run_that_did_not_succeed_is_refused_saying_its_status(nights, tmp_path):
    import shutil

    lake = tmp_path / "lake"
    shutil.copytree(nights["lake"], lake)
    failed = _write_failed_run(lake)
    before = lake_bytes(lake)
    done = pitwatch("sql", "FROM findings", "--lake", lake, "--as-of", failed)
    assert done.returncode == 2
    assert done.stderr.startswith(f"Error: --as-of {failed}: that run did not succeed (status: failed: the counts")
    assert len(done.stderr.strip().splitlines()) == 1
    assert lake_bytes(lake) == before
    # a failed run since does not move the default: still the last successful run's rows
    assert sql_json(lake, FINDINGS) == sql_json(nights["lake"], FINDINGS)


def test_help_shows_as_of_with_an_example():
    for command in ("sql", "query", "export-duckdb"):
        done = pitwatch(command, "--help")
        assert done.returncode == 0
        assert "--as-of RUN_ID|TIME" in done.stdout
        assert "--as-of 2026-11-29T07:00:00Z" in done.stdout or "--as-of 20261128T070001Z-1a2b3c4d" in done.stdout
