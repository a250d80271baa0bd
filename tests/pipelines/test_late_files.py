"""Issue 35, item 5: a late file costs what it changes.

A night that reads a late file of an earlier day replays from that day on, day after day, and stops
at the first later day the run did not change whose day before ended with exactly the state the
lake holds (``pitwatch.pipelines.lake_run.replay_days``); a run that replays more than its night says so
before it starts; ``--day`` older than the lake's last night is exit 2 unless ``--rebuild-from``
names it.  Whole rows compared with one run over every file (``tests/pipelines/test_one_way.py``:
runs over parts give the lake of one run over all of it)."""
from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.lake import Lake
from tests import lake_rows
from tests.pipelines.late_week import DAYS, build

TABLES = ("events", "findings", "rounds", "packs")
LATE_BY = 2      # each day's held-back file arrives this many nights later


def _lake(lake) -> dict:
    return {t: lake_rows.rows(lake, t) for t in TABLES}


def _night(day, inbox, lake, *extra, quiet=True):
    result = CliRunner().invoke(main, ["run", "--day", day, "--inbox", str(inbox), "--lake", str(lake), *extra]
                                + (["--quiet"] if quiet else []))
    assert result.exit_code == 0, result.output
    return result


def _held_back(inbox):
    """One file of every day (a different device kind from day to day), the repeat's table's among them."""
    out = {}
    kinds = ("SHOE-", "DT-", "SHF-")
    for k, day in enumerate(DAYS):
        files = sorted((inbox / day).glob(f"{kinds[k % len(kinds)]}*.jsonl"), key=lambda f: -f.stat().st_size)
        out[day] = files[0]
    return out


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    """The simulated week, the lake of one run over all of it, and a lake of nightly runs whose
    every day had a file arrive ``LATE_BY`` nights late (the last ones on a rerun of the last night)."""
    base = tmp_path_factory.mktemp("late-week")
    inbox = build(base)
    one = base / "one"
    files = sorted(str(p) for p in inbox.rglob("*.jsonl"))
    r = CliRunner().invoke(main, ["run", *files, "--lake", str(one), "--devices", str(inbox / "devices.csv"), "--quiet"])
    assert r.exit_code == 0, r.output
    reference = _lake(one)
    held = _held_back(inbox)
    saved = {day: path.read_bytes() for day, path in held.items()}
    for path in held.values():
        path.unlink()
    lake = base / "nightly"
    said = []
    for n, day in enumerate(DAYS):
        if n >= LATE_BY:
            late = DAYS[n - LATE_BY]
            held[late].write_bytes(saved[late])
        said.append(_night(day, inbox, lake, quiet=False).output)
    for day in DAYS[-LATE_BY:]:
        held[day].write_bytes(saved[day])
    said.append(_night(DAYS[-1], inbox, lake, quiet=False).output)
    return base, inbox, reference, lake, said


@pytest.mark.slow
def test_a_week_of_late_files_equals_one_run_over_every_file(week):
    base, inbox, reference, lake, said = week
    rules = {r[1] for r in reference["findings"]}
    assert len(rules) >= 10, rules
    repeats = [r for r in lake_rows.dicts(base / "one", "findings") if r["rule_id"] == "UNSHUFFLED_SEQUENCE"
               and r["table_id"] == "BAC-09"]
    assert repeats, "BAC-09's packs must repeat BAC-01's (a repeat across two tables)"
    assert _lake(lake) == reference
    runs = [r for r in lake_rows.run_records(lake)]
    assert all(r["status"] == "succeeded" for r in runs)
    # the nights that read a late file said so before replaying (the early stop's own tests are below:
    # here the late files, a terminal's among them, change their table's state for good, see docs/nightly.md)
    late_nights = said[LATE_BY:]
    assert all("this run replays up to 3 gaming days" in out for out in late_nights[:-1]), late_nights
    assert "this run replays up to 2 gaming days" in late_nights[-1]       # the last night again: its late day


@pytest.fixture
def nightly_copy(week, tmp_path):
    base, inbox, reference, lake, _said = week
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    # the lake names its inbox's files by absolute path: the test changes that inbox, put back after
    import os

    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in inbox.rglob("*") if p.is_file()}
    yield inbox, copy, reference
    for path in sorted(set(p for p in inbox.rglob("*") if p.is_file()) - set(before), reverse=True):
        path.unlink()
    for path, (data, mtime) in before.items():
        if path.read_bytes() != data or path.stat().st_mtime_ns != mtime:
            path.write_bytes(data)
            os.utime(path, ns=(mtime, mtime))


def _files_of(lake, day: str) -> set[str]:
    from pitwatch.lake import delta
    from pitwatch.lake import versions as lake_versions

    versions = lake_versions.pinned_versions(Lake.at(lake))
    return {p for name in TABLES for p in delta.files_at(Lake.at(lake), name, versions[name])
            if f"replay-{day}-" in p}


@pytest.mark.slow
def test_a_late_file_that_changes_no_state_replays_its_day_and_the_night_only(nightly_copy):
    """A late file whose lines the lake already holds (a device's upload sent again under another
    name): its day is replayed, ends as the lake holds it, and the days up to the night stand."""
    inbox, lake, reference = nightly_copy
    source = sorted((inbox / DAYS[0]).glob("DT-*.jsonl"))[0]
    (inbox / DAYS[0] / "zz-resent.jsonl").write_bytes(b"".join(source.read_bytes().splitlines(True)[:200]))
    before = {d: _files_of(lake, d) for d in DAYS}
    result = _night(DAYS[-1], inbox, lake, quiet=False)
    record = lake_rows.last_run(lake)
    assert [d.isoformat() for d in record["gaming_days"]] == [DAYS[0], DAYS[-1]]
    assert all(_files_of(lake, d) == before[d] for d in DAYS[1:-1])        # not read again, not rewritten
    assert _lake(lake) == reference
    # said before the replay started: days, tables, an estimate
    said = [line for line in result.output.splitlines() if "this run replays up to" in line]
    assert len(said) == 1, result.output
    assert f"up to 7 gaming days ({DAYS[0]} … {DAYS[-1]}), not only {DAYS[-1]}" in said[0]
    assert f"2 days it changed ({DAYS[0]}, {DAYS[-1]})" in said[0]
    assert "every table (3)" in said[0] and "estimate:" in said[0]


@pytest.mark.slow
def test_a_late_file_that_changes_a_days_state_reaches_the_next_day(nightly_copy, tmp_path):
    """A late file of a device the lake never saw (its seq position is carried): its day ends in
    another state than the lake's, so the next day is replayed too; the lake equals one run over
    every file."""
    inbox, lake, _reference = nightly_copy
    source = sorted((inbox / DAYS[1]).glob("SHF-*.jsonl"), key=lambda p: -p.stat().st_size)[0]
    late = inbox / DAYS[1] / "SHF-0001.jsonl"
    late.write_text(source.read_text().replace(source.stem, "SHF-0001").replace("sh-", "sx-"))
    _night(DAYS[-1], inbox, lake)
    record = lake_rows.last_run(lake)
    days = [d.isoformat() for d in record["gaming_days"]]
    assert days[:2] == [DAYS[1], DAYS[2]] and days[-1] == DAYS[-1], days
    assert _lake(lake) == _one_run(inbox, tmp_path / "one")


def _one_run(inbox, lake) -> dict:
    files = sorted(str(p) for p in inbox.rglob("*.jsonl"))
    r = CliRunner().invoke(main, ["run", *files, "--lake", str(lake), "--devices", str(inbox / "devices.csv"), "--quiet"])
    assert r.exit_code == 0, r.output
    return _lake(lake)


def _repeats_at(lake, table_id: str) -> list[tuple]:
    return sorted((r["gaming_day"], r["finding_id"]) for r in lake_rows.dicts(lake, "findings")
                  if r["rule_id"] == "UNSHUFFLED_SEQUENCE" and r["table_id"] == table_id)


@pytest.mark.slow
def test_a_late_file_that_changes_a_pack_only_runs_the_repeat_check_on_the_later_days(nightly_copy, tmp_path):
    """BAC-01's shoe file of day one corrected (a card it had read twice taken out): the tables and
    devices end the day as the lake holds them, the carried pack index does not.  The days up to
    the night are not replayed: the cross-pack repeat check alone runs on each, and on day three it
    moves BAC-09's repeat of that pack (a repeat across two tables); events, rounds and packs of
    those days are not rewritten.  Whole rows equal one run over every file."""
    import json

    inbox, lake, _reference = nightly_copy
    shoe = inbox / DAYS[0] / "SHOE-9343.jsonl"
    lines = shoe.read_text().splitlines()
    draws = [i for i, raw in enumerate(lines) if json.loads(raw)["type"] == "card_drawn"]
    shoe.write_text("\n".join(lines[:draws[2]] + lines[draws[2] + 1:]) + "\n")
    repeats_before = _repeats_at(lake, "BAC-09")
    kept = {name: {p for p in _files_in(lake, name) if "replay-" + DAYS[0] not in p and "replay-" + DAYS[-1] not in p}
            for name in ("events", "rounds", "packs", "findings")}
    result = _night(DAYS[-1], inbox, lake, quiet=False)
    checked = [line for line in result.output.splitlines() if "the cross-pack repeat check ran again" in line]
    assert [d for d in DAYS[1:-1] if any(f"gaming day {d}: not replayed" in line for line in checked)] == DAYS[1:-1], \
        result.output
    for name in ("events", "rounds", "packs"):
        assert kept[name] <= _files_in(lake, name), name          # the later days' files stand
    assert not kept["findings"] & _files_in(lake, "findings")     # their findings files were rewritten
    assert _repeats_at(lake, "BAC-09") != repeats_before
    assert _lake(lake) == _one_run(inbox, tmp_path / "one")


def _files_in(lake, name: str) -> set[str]:
    from pitwatch.lake import delta
    from pitwatch.lake import versions as lake_versions

    return set(delta.files_at(Lake.at(lake), name, lake_versions.pinned_versions(Lake.at(lake))[name]))


@pytest.mark.slow
def test_day_older_than_the_last_night_is_exit_2_unless_rebuild_from_names_it(nightly_copy):
    inbox, lake, reference = nightly_copy
    before = lake_rows.data_files(lake)
    runs_before = len(lake_rows.run_records(lake))
    old = DAYS[4]
    result = CliRunner().invoke(main, ["run", "--day", old, "--inbox", str(inbox), "--lake", str(lake)])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: --day {old} is older than the lake's last night {DAYS[-1]}: it would replay the 2 nights after "
        f"it as well; a night's run reads late files of earlier days by itself (run --day {DAYS[-1]} or a later "
        f"day), or give --rebuild-from {old} to replay from {old} on\n")
    other = CliRunner().invoke(main, ["run", "--day", old, "--inbox", str(inbox), "--lake", str(lake),
                                      "--rebuild-from", DAYS[3]])
    assert other.exit_code == 2 and other.output.startswith(f"Error: --day {old} is older")
    assert lake_rows.data_files(lake) == before and len(lake_rows.run_records(lake)) == runs_before
    _night(old, inbox, lake, "--rebuild-from", old)
    record = lake_rows.last_run(lake)
    assert [d.isoformat() for d in record["gaming_days"]] == DAYS[4:]     # through the lake's last night
    assert _lake(lake) == reference
