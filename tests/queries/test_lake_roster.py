"""Issue 42, deliverable 4: the dealers' roster kept in the lake (``pitwatch dealers import``), so
``sql``, ``query`` and ``export-duckdb`` show names without ``--dealers`` — through the real CLI.

Keeping and refusing rosters: over the small hand-built lake (tests/queries/lakes.py).  Names in
answers: over a lake a real ``pitwatch run`` wrote from a simulated floor (a one-off run, which
keeps no roster), against the roster the simulator wrote for that floor (its ``dealers.csv``)."""
from __future__ import annotations

import csv
import json
import os
import shutil
import stat

import duckdb
import pytest

from pitwatch.inputs.dealers import load_roster
from pitwatch.lake import Lake
from tests.conftest import run_pitwatch as pitwatch
from tests.pipelines.test_devices import _lake_bytes
from tests.queries.lakes import build_lake

ROSTER = "id,name,shift\nD-1,Ana Rivera,swing\nD-2,Luis Vega,grave\n"


@pytest.fixture
def lake(tmp_path) -> str:
    return build_lake(str(tmp_path / "lake"))


@pytest.fixture
def roster(tmp_path):
    path = tmp_path / "dealers.csv"
    path.write_text(ROSTER, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def floor_lake(tmp_path_factory):
    """A simulated floor (its roster in ``dealers.csv``) and the lake one ``pitwatch run`` of its day wrote."""
    from pitwatch.simulator.floor import simulate

    base = tmp_path_factory.mktemp("floor")
    simulate(base / "floor", tables={"baccarat": 1, "three_bet_poker": 1}, hours=0.5, seed=5,
             faults={"BURN_SKIPPED": 0.5}, workers=1)
    day = next(d for d in (base / "floor").iterdir() if d.is_dir())
    r = pitwatch("run", day, "--lake", base / "lake", "--quiet")
    assert r.returncode == 0, r.stderr
    assert not (base / "lake" / "_roster").exists()      # a one-off run keeps no roster
    return base / "lake", base / "floor" / "dealers.csv", day.name


@pytest.fixture
def run_lake(floor_lake, tmp_path):
    """A copy of the floor's lake for one test, the floor's roster and its day."""
    lake, roster, day = floor_lake
    shutil.copytree(lake, tmp_path / "lake", symlinks=True)
    return str(tmp_path / "lake"), roster, day


def _roster_records(lake) -> list[dict]:
    """The roster each succeeded runs record names, newest first."""
    from pitwatch.lake import runs

    out = []
    for r in runs.records_newest_first(Lake.at(lake)):
        options = json.loads(r["options"] or "{}")
        if r["status"] == "succeeded" and options.get("dealers"):
            out.append(options["dealers"])
    return out


def _names(lake, day, *extra) -> dict:
    r = pitwatch("query", "findings_per_dealer", "--lake", lake, "--format", "csv",
                 "--param", f"from_day={day}", "--param", f"to_day={day}", *extra)
    assert r.returncode == 0, r.stderr
    return {row["dealer_id"]: row["dealer_name"] for row in csv.DictReader(r.stdout.splitlines())}


def test_an_imported_roster_is_kept_byte_for_byte_read_only_and_named_in_a_chained_record(lake, roster):
    r = pitwatch("dealers", "import", roster, "--lake", lake)
    assert r.returncode == 0, r.stderr
    sha = load_roster(str(roster)).sha256
    kept = os.path.join(lake, "_roster", f"dealers-{sha}.csv")
    assert r.stdout == f"dealers roster {roster}: kept in the lake as version 1 (2 dealers, _roster/dealers-{sha}.csv)\n"
    assert os.listdir(os.path.join(lake, "_roster")) == [os.path.basename(kept)]
    assert open(kept, "rb").read() == roster.read_bytes()
    assert not os.stat(kept).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert _roster_records(lake) == [{"path": str(roster), "sha256": sha, "rows": 2,
                                      "kept": f"_roster/dealers-{sha}.csv", "version": 1, "from": "given"}]
    show = pitwatch("dealers", "show", "--lake", lake)
    assert show.returncode == 0, show.stderr
    assert show.stdout.splitlines()[1:] == ["D-1,Ana Rivera,swing", "D-2,Luis Vega,grave"]


def test_the_same_roster_again_keeps_its_version_and_writes_nothing(lake, roster):
    assert pitwatch("dealers", "import", roster, "--lake", lake).returncode == 0
    before = _lake_bytes(lake)
    again = pitwatch("dealers", "import", roster, "--lake", lake)
    assert again.returncode == 0, again.stderr
    assert again.stdout == f"dealers roster {roster}: the lake's version 1, unchanged\n"
    assert {k: v for k, v in _lake_bytes(lake).items() if not k.startswith("_runs.lock")} == \
        {k: v for k, v in before.items() if not k.startswith("_runs.lock")}


def _floor_names(roster) -> dict:
    with open(roster, newline="", encoding="utf-8") as f:
        return {row["id"]: row["name"] for row in csv.DictReader(f)}


@pytest.mark.slow
def test_a_changed_roster_is_the_next_version_and_the_names_follow_it(run_lake, tmp_path):
    lake, roster, day = run_lake
    assert pitwatch("dealers", "import", roster, "--lake", lake).returncode == 0
    names = _floor_names(roster)
    renamed, gone = sorted(_names(lake, day))[:2]       # two dealers who dealt that day
    second = tmp_path / "v2.csv"          # one renamed, another gone, the columns in another order
    second.write_text("id,shift,name\n" + "".join(f"{d},day,{'New Name' if d == renamed else n}\n"
                                                  for d, n in names.items() if d != gone), encoding="utf-8")
    r = pitwatch("dealers", "import", second, "--lake", lake)
    assert r.returncode == 0, r.stderr
    assert "kept in the lake as version 2" in r.stdout
    assert [d["version"] for d in _roster_records(lake)] == [2, 1]
    assert len(os.listdir(os.path.join(lake, "_roster"))) == 2
    shown = _names(lake, day)
    assert shown == {d: ("New Name" if d == renamed else "" if d == gone else names[d]) for d in shown}


HOSTILE = {
    "a wrong header": (b"dealer,name\nD-1,Ana\n", "the header is 'dealer,name'"),
    "an id twice": (b"id,name,shift\nD-1,Ana,day\nD-1,Eve,day\n", "dealer D-1 on line 2 and again on line 3"),
    "not UTF-8": (b"id,name,shift\nD-1,\xff\xfe,day\n", "not UTF-8"),
    "a missing id": (b"id,name,shift\n,Ana,day\n", "line 2 has no id"),
    "empty": (b"", "empty"),
    "a header and no dealer": (b"id,name,shift\n", "no dealer in it"),
    "a header and blank lines": (b"id,name,shift\n\n  ,  ,  \n", "no dealer in it"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_bad_roster_is_one_error_line_and_the_lakes_bytes_are_unchanged(lake, tmp_path, case):
    data, said = HOSTILE[case]
    bad = tmp_path / "bad.csv"
    bad.write_bytes(data)
    before = _lake_bytes(lake)
    r = pitwatch("dealers", "import", bad, "--lake", lake)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"Error: dealers file {bad}: ") and said in r.stderr
    assert r.stderr.count("\n") == 1
    assert _lake_bytes(lake) == before


def test_a_folder_or_a_missing_file_is_refused_and_nothing_is_written(lake, tmp_path):
    before = _lake_bytes(lake)
    for given, said in ((tmp_path, "is a folder"), (tmp_path / "nope.csv", "no such file")):
        r = pitwatch("dealers", "import", given, "--lake", lake)
        assert r.returncode == 2 and said in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert _lake_bytes(lake) == before


def test_an_import_into_a_folder_that_is_not_a_lake_is_refused_and_the_folder_left_byte_identical(tmp_path, roster):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "tables.jsonl").write_text('{"event": "x"}\n')
    (inbox / "dealers.csv").write_text(ROSTER)
    before = _lake_bytes(inbox)
    r = pitwatch("dealers", "import", roster, "--lake", inbox)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"Error: {inbox} is not a pitwatch lake") and r.stderr.count("\n") == 1
    assert _lake_bytes(inbox) == before and sorted(os.listdir(inbox)) == ["dealers.csv", "tables.jsonl"]


def test_an_import_into_a_lake_is_recorded(lake, roster):
    r = pitwatch("dealers", "import", roster, "--lake", lake)
    assert r.returncode == 0, r.stderr
    assert [d["version"] for d in _roster_records(lake)] == [1]


def test_show_on_a_lake_without_a_roster_says_so(lake):
    r = pitwatch("dealers", "show", "--lake", lake)
    assert r.returncode == 2
    assert r.stderr.startswith("Error: the lake ") and "keeps no dealers roster" in r.stderr


@pytest.mark.slow
def test_query_and_sql_show_the_lakes_names_without_a_flag(run_lake):
    lake, roster, day = run_lake
    before = _names(lake, day)
    assert before and set(before.values()) == {""}          # no roster kept: the shipped one, empty
    assert pitwatch("dealers", "import", roster, "--lake", lake).returncode == 0
    names = _floor_names(roster)
    assert _names(lake, day) == {d: names[d] for d in before}
    r = pitwatch("sql", "select id, name, shift from seeds_dealers order by id", "--lake", lake, "--format", "csv")
    with open(roster, newline="", encoding="utf-8") as f:
        assert list(csv.DictReader(r.stdout.splitlines())) == sorted(csv.DictReader(f), key=lambda x: x["id"])


@pytest.mark.slow
def test_a_dealers_file_given_still_overrides_the_lakes_roster(run_lake, tmp_path):
    lake, roster, day = run_lake
    assert pitwatch("dealers", "import", roster, "--lake", lake).returncode == 0
    one = sorted(_names(lake, day))[0]
    other = tmp_path / "other.csv"
    other.write_text(f"id,name,shift\n{one},Somebody Else,day\n", encoding="utf-8")
    assert {d: n for d, n in _names(lake, day, "--dealers", other).items() if n} == {one: "Somebody Else"}


@pytest.mark.slow
def test_a_kept_roster_that_was_changed_is_refused_by_query_and_named_by_verify(run_lake):
    lake, roster, day = run_lake
    assert pitwatch("dealers", "import", roster, "--lake", lake).returncode == 0
    folder = os.path.join(lake, "_roster")
    kept = os.path.join(folder, os.listdir(folder)[0])
    intact = pitwatch("verify", "--lake", lake, "--format", "json")
    assert intact.returncode == 0, intact.stdout
    assert json.loads(intact.stdout)["checked"]["rosters"] == 1
    os.chmod(kept, 0o644)
    with open(kept, "ab") as f:
        f.write(b"D-9,Someone Else,day\n")
    r = pitwatch("query", "findings_per_dealer", "--lake", lake, "--param", f"from_day={day}",
                 "--param", f"to_day={day}")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"Error: the lake's dealers roster _roster/{os.path.basename(kept)} was changed")
    after = pitwatch("verify", "--lake", lake, "--format", "json")
    assert after.returncode == 5
    problems = json.loads(after.stdout)["problems"]
    assert [(p["kind"], p["what"]) for p in problems] == [("changed", f"_roster/{os.path.basename(kept)}")]
    assert "a dealers roster kept in the lake was changed" in problems[0]["detail"]


@pytest.mark.slow
def test_the_export_holds_the_lakes_names(run_lake, tmp_path):
    lake, roster, day = run_lake
    assert pitwatch("dealers", "import", roster, "--lake", lake).returncode == 0
    out = tmp_path / "audit.duckdb"
    r = pitwatch("export-duckdb", "--lake", lake, "--out", out)
    assert r.returncode == 0, r.stderr
    con = duckdb.connect(str(out), read_only=True)
    try:
        rows = con.execute(f"select dealer_id, dealer_name from findings_per_dealer(DATE '{day}', DATE '{day}') "
                           "order by dealer_id").fetchall()
    finally:
        con.close()
    names = _floor_names(roster)
    assert rows and rows == [(d, names[d]) for d, _ in rows]
