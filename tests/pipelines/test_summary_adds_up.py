"""A summary that adds up (issue 36): every count the run prints and logs is true — files given,
files read, the input files of each day the lake held, rows written per table — checked against
the lake's own rows; one line per phase, each file's own line only with --verbose.  Real
processes, a real lake, two nights and a late file."""
from __future__ import annotations

import re
import shutil
from collections import Counter

import pytest

from pitwatch.simulator import simulate
from tests import lake_rows
from tests.conftest import run_pitwatch_process

pytestmark = pytest.mark.slow
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z pitwatch: ")
TABLES = ("events", "rounds", "packs", "findings", "rejects")


def pitwatch(*args):
    r = run_pitwatch_process(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    return r, [STAMP.sub("", line) for line in r.stderr.splitlines() if STAMP.match(line)]


def table_rows(stdout: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2).replace(",", ""))
            for m in re.finditer(r"^    (\w+) +([\d,]+) rows", stdout, re.M)}


def lake_counts(lake, days) -> dict[str, int]:
    return {name: sum(1 for r in lake_rows.dicts(lake, name) if str(r["gaming_day"]) in days) for name in TABLES}


def lines_in(paths) -> int:
    return sum(1 for p in paths for line in p.read_bytes().splitlines() if line.strip())


@pytest.fixture(scope="module")
def two_days(tmp_path_factory):
    inbox = tmp_path_factory.mktemp("summary") / "inbox"
    simulate(inbox, tables={"baccarat": 1, "stud": 1}, hours=12, seed=11, faults={})   # 20:00 to 08:00: two days
    days = sorted(d.name for d in inbox.iterdir() if d.is_dir())
    assert len(days) == 2
    return inbox, days


def test_two_nights_and_a_late_file_the_summary_adds_up(two_days, tmp_path):
    source, (first, second) = two_days
    inbox = tmp_path / "inbox"
    shutil.copytree(source, inbox)
    lake = tmp_path / "lake"
    files = sorted((inbox / first).iterdir())

    r, log = pitwatch("run", "--day", first, "--inbox", inbox, "--lake", lake)
    assert f"  inputs      {len(files)} files, {sum(f.stat().st_size for f in files):,} bytes" in r.stdout
    read = lines_in(files)
    assert f"  lines read  {read:,} = accepted {read:,} + rejected 0 + duplicates 0" in r.stdout
    assert f"read {len(files)} input files ({sum(f.stat().st_size for f in files):,} bytes): {read:,} lines, " \
           "0 rejected" in log
    assert f"gaming day {first}: events of {len(files)} input files of this run and 0 input files the lake " \
           "held (state from none: a fresh start)" in log
    assert table_rows(r.stdout) == lake_counts(lake, {first})
    assert not [line for line in log if line.startswith(("read /", "replayed ", "wrote "))]    # not per file

    # a late file for the first night: two lines that are no events, three copies of lines it has
    late = inbox / first / "DT-LATE.jsonl"
    dealer = next(f for f in files if f.name.startswith("DT-"))
    late.write_bytes(b"not json\n{\"type\": 7}\n" + b"".join(dealer.read_bytes().splitlines(True)[:3]))
    r, log = pitwatch("run", "--day", second, "--inbox", inbox, "--lake", lake)
    night = sorted((inbox / second).iterdir())
    again = sorted((inbox / first).iterdir())      # a changed folder is read again whole (docs/nightly.md)
    given = again + night
    assert f"  inputs      {len(given)} files, {sum(f.stat().st_size for f in given):,} bytes" in r.stdout
    read = lines_in(given)
    record = lake_rows.last_run(lake)
    assert (record["lines_read"], record["rejected"], record["duplicates"]) == (read, 2, 3)
    assert f"  lines read  {read:,} = accepted {read - 5:,} + rejected 2 + duplicates 3" in r.stdout
    assert f"gaming day {first}: events of {len(again)} input files of this run and 0 input files the lake " \
           "held (state from none: a fresh start)" in log
    assert f"gaming day {second}: events of {len(night)} input files of this run and 0 input files the lake " \
           f"held (state from {first})" in log
    written = table_rows(r.stdout)
    assert written == lake_counts(lake, {first, second})           # both days, whole, rejects too
    assert written["rejects"] == 2
    per_day = Counter(str(r["gaming_day"]) for r in lake_rows.dicts(lake, "rejects"))
    assert per_day == {second: 2}           # a run's rejected lines go under its last day


def test_verbose_shows_each_file_and_table(two_days, tmp_path):
    inbox, (first, _second) = two_days
    r, log = pitwatch("run", inbox / first, "--lake", tmp_path / "lake", "--verbose")
    files = sorted((inbox / first).iterdir())
    assert sorted(line.split(":")[0][len("read "):] for line in log if line.startswith("read /")) == \
        [str(f) for f in files]
    assert any(line.startswith("replayed BAC-") for line in log)
    assert any(line.startswith(f"wrote events/gaming_day={first}: ") for line in log)


def test_a_one_off_late_file_counts_the_input_files_the_lake_held(two_days, tmp_path):
    """Issue 36: `1 file the lake held, 13 new files` when the lake held 13: the day's line counts
    input files, the run's and the lake's, not staged pieces."""
    inbox, (first, _second) = two_days
    files = sorted((inbox / first).iterdir())
    lake = tmp_path / "lake"
    pitwatch("run", *files, "--lake", lake, "--quiet")
    late = tmp_path / "DT-LATE.jsonl"
    late.write_bytes(b"".join(files[0].read_bytes().splitlines(True)[:3]))      # three copies the lake holds
    r, log = pitwatch("run", late, "--lake", lake)
    assert f"gaming day {first}: events of 1 input file of this run and {len(files)} input files the lake held " \
           "(state from none: a fresh start)" in log
    assert "  lines read  3 = accepted 0 + rejected 0 + duplicates 3" in r.stdout
    assert table_rows(r.stdout) == lake_counts(lake, {first})
