"""One way to write the lake (issue 26): runs over parts of the input give the lake of one run over
all of it, in any order; a file given again replaces its events; two runs never lose each other's
rows.  Whole rows compared: events, findings, rounds, packs."""
from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.lake import Lake
from tests import lake_rows

TABLES = ("events", "findings", "rounds", "packs")


def _run(*args) -> str:
    result = CliRunner().invoke(main, ["run", *map(str, args), "--quiet"])
    assert result.exit_code == 0, result.output
    return result.output


def _lake(lake) -> dict:
    return {t: lake_rows.rows(lake, t) for t in TABLES}


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    """A simulated floor of two gaming days with every fault, and the lake of one run over all of it."""
    from pitwatch.simulator import SPECS, simulate

    base = tmp_path_factory.mktemp("one-way")
    simulate(base / "inbox", tables={"baccarat": 1, "three_bet_poker": 1, "combate": 1}, hours=14, seed=5,
             faults={name: 0.04 for name in SPECS})
    files = sorted(p for p in (base / "inbox").rglob("*.jsonl"))
    _run(*files, "--lake", base / "one", "--devices", base / "inbox" / "devices.csv")
    reference = _lake(base / "one")
    assert len({r[1] for r in reference["findings"]}) >= 5, "the floor must raise findings of several rules"
    assert len({r[-1] for r in reference["events"]}) >= 2, "the floor must span two gaming days"
    return base, files, reference


def _halves(files):
    """Two halves of the floor's files, as two uploads of one night might come: by device."""
    return files[0::2], files[1::2]


@pytest.mark.slow
@pytest.mark.parametrize("order", ["A then B", "B then A"])
def test_halves_of_the_files_in_two_runs_give_the_one_run_lake(floor, tmp_path, order):
    base, files, reference = floor
    first, second = _halves(files)
    if order == "B then A":
        first, second = second, first
    lake = tmp_path / "lake"
    _run(*first, "--lake", lake, "--devices", base / "inbox" / "devices.csv")
    _run(*second, "--lake", lake, "--devices", base / "inbox" / "devices.csv")
    assert _lake(lake) == reference
    runs = lake_rows.run_records(lake)
    assert [r["status"] for r in runs] == ["succeeded", "succeeded"]
    assert sum(r["accepted"] for r in runs) == len(reference["events"])


@pytest.mark.slow
def test_a_file_given_again_with_other_content_replaces_its_events(floor, tmp_path):
    """The file is the unit of correction: a shoe's file first uploaded cut short, then whole."""
    base, files, reference = floor
    shoe = next(f for f in files if f.name.startswith("SHOE-"))
    inbox = tmp_path / "copy"
    shutil.copytree(base / "inbox", inbox)
    mine = [inbox / f.relative_to(base / "inbox") for f in files]
    copy = inbox / shoe.relative_to(base / "inbox")
    whole = copy.read_bytes()
    lines = whole.splitlines(keepends=True)
    copy.write_bytes(b"".join(lines[: len(lines) // 3]))
    lake = tmp_path / "lake"
    _run(*mine, "--lake", lake, "--devices", inbox / "devices.csv")
    cut_short = _lake(lake)
    copy.write_bytes(whole)
    _run(copy, "--lake", lake, "--devices", inbox / "devices.csv")
    again = _lake(lake)
    one = tmp_path / "one"
    _run(*mine, "--lake", one, "--devices", inbox / "devices.csv")
    assert cut_short != again
    assert again == _lake(one)


@pytest.mark.slow
def test_a_rerun_changes_no_row_and_no_byte(floor, tmp_path):
    base, files, reference = floor
    lake = tmp_path / "lake"
    shutil.copytree(base / "one", lake)
    before = lake_rows.data_files(lake)
    _run(*files, "--lake", lake, "--devices", base / "inbox" / "devices.csv")
    assert _lake(lake) == reference
    assert lake_rows.data_files(lake).keys() == before.keys()
    assert lake_rows.data_files(lake) == before


@pytest.mark.slow
def test_a_one_off_run_over_two_files_of_a_replayed_night_loses_nothing(floor, tmp_path):
    """The issue's case: a nightly day, then a one-off run over two of its files."""
    base, files, reference = floor
    days = sorted(d.name for d in (base / "inbox").iterdir() if d.is_dir())
    lake = tmp_path / "lake"
    for day in days:
        result = CliRunner().invoke(main, ["run", "--day", day, "--inbox", str(base / "inbox"), "--lake", str(lake),
                                           "--quiet"])
        assert result.exit_code == 0, result.output
    nightly = _lake(lake)
    assert nightly == reference
    two = sorted((base / "inbox" / days[0]).glob("*.jsonl"))[:2]
    _run(*two, "--lake", lake, "--devices", base / "inbox" / "devices.csv")
    assert _lake(lake) == reference


@pytest.mark.slow
def test_rebuild_from_leaves_no_row_of_the_replaced_runs(floor, tmp_path):
    base, files, reference = floor
    days = sorted(d.name for d in (base / "inbox").iterdir() if d.is_dir())
    lake = tmp_path / "lake"
    for day in days:
        CliRunner().invoke(main, ["run", "--day", day, "--inbox", str(base / "inbox"), "--lake", str(lake), "--quiet"])
    result = CliRunner().invoke(main, ["run", "--day", days[-1], "--inbox", str(base / "inbox"), "--lake", str(lake),
                                       "--rebuild-from", days[0], "--quiet"])
    assert result.exit_code == 0, result.output
    assert _lake(lake) == reference
    last = lake_rows.last_run(lake)["run_id"]
    from pitwatch.lake import delta
    from pitwatch.lake import versions as lake_versions

    versions = lake_versions.pinned_versions(Lake.at(lake))
    for name in TABLES:
        files_now = delta.files_at(Lake.at(lake), name, versions[name])
        assert files_now and all(last in f for f in files_now), (name, files_now)


@pytest.mark.slow
def test_two_runs_started_at_once_give_the_one_run_lake(floor, tmp_path):
    """The issue's case: two `pitwatch run` at once on one lake.  The second waits for the lake's
    lock (pitwatch.lake.lock) and then adds its half: no row of either is lost."""
    import os
    import subprocess
    import sys

    base, files, reference = floor
    first, second = _halves(files)
    lake = tmp_path / "lake"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    procs = [subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "run", *map(str, half), "--lake", str(lake),
                               "--devices", str(base / "inbox" / "devices.csv"), "--quiet"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for half in (first, second)]
    outs = [p.communicate(timeout=900) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert _lake(lake) == reference
    runs = lake_rows.run_records(lake)
    assert [r["status"] for r in runs] == ["succeeded", "succeeded"]
    assert sum(r["accepted"] for r in runs) == len(reference["events"])
