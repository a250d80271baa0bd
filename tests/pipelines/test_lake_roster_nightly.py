"""Issue 42, deliverable 4: ``INBOX/dealers.csv`` is kept in the lake by the nightly run, later runs
name the lake's roster again, a bad one refuses the night before anything is written, and finding
the lake's roster reads the chain from its head — real ``pitwatch run`` processes, real lakes."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from pitwatch.inputs.dealers import load_roster
from pitwatch.lake import Lake
from tests.pipelines.test_devices import _lake_bytes
from tests.pipelines.test_feed_health_run import faulty_floor, pitwatch  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow


def _rosters(lake) -> list:
    """The ``dealers`` each succeeded batch run's record names, newest first."""
    from pitwatch.lake import runs

    out = []
    for r in runs.records_newest_first(Lake.at(lake)):
        options = json.loads(r["options"] or "{}")
        if r["status"] == "succeeded" and "night" in options:
            out.append(options["dealers"])
    return out


@pytest.fixture(scope="module")
def nightly(faulty_floor, tmp_path_factory):  # noqa: F811 - the imported fixture
    """The floor's first day run in the nightly form; the simulator put its roster in the inbox."""
    assert (faulty_floor / "dealers.csv").is_file()
    day = sorted(d.name for d in faulty_floor.iterdir() if d.is_dir())[0]
    lake = tmp_path_factory.mktemp("nightly") / "lake"
    r = pitwatch("run", "--day", day, "--inbox", faulty_floor, "--lake", lake, "--quiet")
    assert r.returncode == 0, r.stderr
    return lake, day


def test_the_inboxs_roster_is_kept_by_the_nightly_run_and_named_in_its_record(faulty_floor, nightly):  # noqa: F811
    lake, _day = nightly
    roster = load_roster(str(faulty_floor / "dealers.csv"))
    kept = lake / "_roster" / f"dealers-{roster.sha256}.csv"
    assert os.listdir(lake / "_roster") == [kept.name]
    assert kept.read_bytes() == (faulty_floor / "dealers.csv").read_bytes()
    assert _rosters(lake) == [{"path": str(faulty_floor / "dealers.csv"), "sha256": roster.sha256,
                               "rows": roster.table.num_rows, "kept": f"_roster/{kept.name}",
                               "version": 1, "from": "given"}]
    show = pitwatch("dealers", "show", "--lake", lake)
    assert show.returncode == 0, show.stderr
    assert len(show.stdout.splitlines()) == 1 + roster.table.num_rows


def test_a_later_run_without_a_roster_names_the_lakes_and_reads_only_back_to_the_last_batch_run(
        faulty_floor, nightly, tmp_path):  # noqa: F811
    from pitwatch.lake import roster as lake_roster
    from pitwatch.lake import runs

    lake = tmp_path / "lake"
    shutil.copytree(nightly[0], lake, symlinks=True)
    one = sorted((faulty_floor / nightly[1]).glob("DT-*"))[0]
    for _ in range(2):      # the lake ages: each run names the lake's roster again
        r = pitwatch("run", one, "--lake", lake, "--quiet")
        assert r.returncode == 0, r.stderr
    assert [(d["version"], d["from"]) for d in _rosters(lake)] == [(1, "lake"), (1, "lake"), (1, "given")]
    runs.RECORDS_READ[0] = 0
    assert lake_roster.lake_roster(Lake.at(lake))["version"] == 1
    assert runs.RECORDS_READ[0] == 1      # the head's record names it: nothing older is read


def test_a_bad_roster_in_the_inbox_refuses_the_night_and_the_lakes_bytes_are_unchanged(
        faulty_floor, nightly, tmp_path):  # noqa: F811
    inbox = tmp_path / "inbox"
    shutil.copytree(faulty_floor, inbox, symlinks=True)
    (inbox / "dealers.csv").write_bytes(b"id,name,shift\nD-1,Ana,day\nD-1,Eve,day\n")
    lake = tmp_path / "lake"
    shutil.copytree(nightly[0], lake, symlinks=True)
    before = _lake_bytes(lake)
    r = pitwatch("run", "--day", nightly[1], "--inbox", inbox, "--lake", lake, "--quiet")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        f"Error: dealers file {inbox / 'dealers.csv'}: dealer D-1 on line 2 and again on line 3"]
    assert _lake_bytes(lake) == before
