"""INPUT_DAMAGED (rules.md "Feed health", 2.1): a file not read to its end is a major finding, whole rows.

The facts and the finding are checked without Beam first; then real ``pitwatch run`` processes
(exit 1 under ``--fail-on major``, 0 without), a file that held nothing before its damage, a
corrupt Parquet row group, the day replayed again by a late file (the finding stays) and the
file sent again whole (it goes); the watcher's alert for the same file has the batch's
``finding_id`` and row: tests/watch/test_input_damaged_live.py.
"""
from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pitwatch.inputs.damage import damage_facts, damage_finding, damage_of
from pitwatch.rules.finding import finding_id
from pitwatch.schemas.decode import GamingDayConfig
from tests import lake_rows
from tests.conftest import event
from tests.pipelines.test_damaged_files import bad_second_row_group

ROOT = Path(__file__).resolve().parents[2]
UTC = _dt.timezone.utc


def dealer_events(n: int = 400) -> list[dict]:
    """A dealer terminal's day: DT-1 opens BAC-07 and takes bets; DT-2 writes for BAC-08 from line 3."""
    out = [event("table_opened", 1, device_id="DT-1", event_id="DT-1-1")]
    seqs = {"DT-1": 1, "DT-2": 0}       # each device numbers its own events
    for i in range(2, n + 1):
        device, table = ("DT-2", "BAC-08") if i % 3 == 0 else ("DT-1", "BAC-07")
        seqs[device] += 1
        out.append(event("bet_placed", seqs[device], device_id=device, table_id=table, event_id=f"{device}-{i}",
                         ts=f"2026-11-28T20:{i // 60 % 60:02d}:{i % 60:02d}.000Z"))
    return out


def dealer_bytes(n: int = 400) -> bytes:
    return ("\n".join(json.dumps(e) for e in dealer_events(n)) + "\n").encode()


def truncated(folder: Path, name: str = "DT-1.jsonl.gz") -> tuple[Path, bytes]:
    """A dealer terminal's gzip cut in the middle (the rest never arrived); its whole bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    whole = gzip.compress(dealer_bytes())
    path = folder / name
    path.write_bytes(whole[: len(whole) // 2])
    return path, whole


def micros(text: str) -> int:
    return int(_dt.datetime.fromisoformat(text).timestamp() * 1_000_000)


def expected_row(path: Path, events: int, last_seq: int) -> dict:
    """The whole INPUT_DAMAGED row of the truncated dealer file ``path`` (``events`` lines read)."""
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()       # truncated: the damage is at its end
    last_dev = "DT-2" if last_seq % 3 == 0 else "DT-1"
    ts = _dt.datetime(2026, 11, 28, 20, last_seq // 60 % 60, last_seq % 60, tzinfo=UTC)
    return {
        "finding_id": finding_id("INPUT_DAMAGED", None, [path.name, sha], ()), "rule_id": "INPUT_DAMAGED",
        "title": "Input file damaged: audit incomplete", "severity": "major", "game": None, "table_id": "BAC-07",
        "pack_id": None, "round_id": None, "seat": None, "spot": None, "device_id": "DT-1", "dealer_id": None,
        "ts": ts, "gaming_day": _dt.date(2026, 11, 28),
        "expected": "every input file read to its end: the day's audit complete",
        "actual": (f"{path.name} cannot be read past byte {len(data):,} (gzip data ends before its stream does: "
                   f"the file is truncated); {events} events read before it, from 2 devices DT-1, DT-2 at "
                   f"2 tables BAC-07, BAC-08; 0 bytes after it not read; SHA-256 of the bytes read {sha}"),
        "event_ids": sorted(["DT-1-1", f"{last_dev}-{last_seq}"]), "source": "integrity",
        "evidence": sorted([{"device_id": "DT-1", "event_id": "DT-1-1"},
                            {"device_id": last_dev, "event_id": f"{last_dev}-{last_seq}"}],
                           key=lambda e: (e["device_id"], e["event_id"])),
        "ts_offset": 0, "evidence_from": _dt.datetime(2026, 11, 28, 20, 0, 1, tzinfo=UTC),
        "pack_use": None, "round_use": None,      # a file's finding names no pack and no round
    }


# --- the facts and the finding, no Beam ------------------------------------------------------------

def test_a_truncated_dealer_file_gives_its_facts_and_one_finding(tmp_path):
    path, _whole = truncated(tmp_path)
    config = GamingDayConfig()
    damage = damage_of(str(path))
    assert damage is not None and damage.offset == path.stat().st_size
    facts = damage_facts(damage, config)
    assert facts["name"] == "DT-1.jsonl.gz" and facts["tables"] == ["BAC-07", "BAC-08"]
    assert facts["devices"] == ["DT-1", "DT-2"] and facts["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert facts["first"]["event_id"] == "DT-1-1" and 100 < facts["events"] < 400
    f = damage_finding(facts, _dt.date(2030, 1, 1), config)      # the run's day: not used, a line was read
    last_seq = int(facts["last"]["event_id"].split("-")[-1])
    assert f.to_row() == expected_row(path, facts["events"], last_seq)


def test_an_intact_file_has_no_damage(tmp_path):
    path = tmp_path / "ok.jsonl.gz"
    path.write_bytes(gzip.compress(dealer_bytes()))
    assert damage_of(str(path)) is None


def test_a_file_with_nothing_read_before_the_damage_has_no_table_and_the_runs_day(tmp_path):
    path = tmp_path / "junk.jsonl.gz"
    path.write_bytes(b"not gzip at all")
    config = GamingDayConfig("06:00", "America/Puerto_Rico")
    facts = damage_facts(damage_of(str(path)), config)
    assert facts["tables"] == [] and facts["first"] is None and facts["offset"] == 0
    assert facts["sha256"] == hashlib.sha256(b"").hexdigest()       # no byte read before the damage
    f = damage_finding(facts, _dt.date(2026, 11, 28), config)
    assert f.table_id is None and f.device_id is None and f.gaming_day == _dt.date(2026, 11, 28)
    assert f.ts == config.day_start_micros(_dt.date(2026, 11, 28)) == micros("2026-11-28T10:00:00+00:00")
    assert f.event_ids == () and f.evidence == () and f.finding_id == finding_id(
        "INPUT_DAMAGED", None, ["junk.jsonl.gz", hashlib.sha256(b"").hexdigest()], ())


def test_the_key_is_the_file_not_its_folder(tmp_path):
    a, _ = truncated(tmp_path / "a")
    b = tmp_path / "b" / "DT-1.jsonl.gz"
    b.parent.mkdir()
    b.write_bytes(a.read_bytes())
    config = GamingDayConfig()
    ids = {damage_finding(damage_facts(damage_of(str(p)), config), _dt.date(2026, 11, 28), config).finding_id
           for p in (a, b)}
    assert len(ids) == 1


# --- real runs ------------------------------------------------------------------------------------

def run(*args, expect: int | None = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", *map(str, args), "--quiet"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if expect is not None:
        assert done.returncode == expect, (done.stdout, done.stderr[-3000:])
    return done


def damaged_rows(lake) -> list[dict]:
    return [r for r in lake_rows.dicts(lake, "findings") if r["rule_id"] == "INPUT_DAMAGED"]


def _written_by(run_id: str) -> dict:
    """The lake row's run columns: a finding of the lake's only run was first written and last changed by it."""
    return {"first_seen_run": run_id, "last_changed_run": run_id}


def _same_ts(row: dict) -> dict:
    return {**row, "ts": row["ts"].astimezone(UTC), "evidence_from": row["evidence_from"]
            and row["evidence_from"].astimezone(UTC)}


@pytest.mark.slow
def test_a_run_over_a_truncated_dealer_file_fails_on_major_with_one_finding(tmp_path):
    path, _whole = truncated(tmp_path / "in")
    failed = run(tmp_path / "in", "--lake", tmp_path / "lake1", "--fail-on", "major", expect=1)
    assert "findings    1 (major 1)" in failed.stdout
    assert ("audit       incomplete for 2026-11-28: 1 input file could not be read to the end, the lines after "
            "the damage are not audited (INPUT_DAMAGED, major)") in failed.stdout
    assert "1 finding of severity major or higher" in failed.stderr
    run(tmp_path / "in", "--lake", tmp_path / "lake2", expect=0)         # without --fail-on: exit 0
    for lake in ("lake1", "lake2"):
        rows = damaged_rows(tmp_path / lake)
        assert len(rows) == 1 and lake_rows.dicts(tmp_path / lake, "findings") == rows
        run_record = lake_rows.last_run(tmp_path / lake)
        events = run_record["accepted"]
        assert _same_ts(rows[0]) == {**expected_row(path, events, events),   # bet seq = line number here
                                     **_written_by(run_record["run_id"])}
        damage = [r for r in lake_rows.dicts(tmp_path / lake, "rejects") if r["line"] is None]
        assert len(damage) == 1 and damage[0]["gaming_day"] == _dt.date(2026, 11, 28)
        assert json.loads(damage[0]["raw"])["input_damaged"]["sha256"] in rows[0]["actual"]


@pytest.mark.slow
def test_a_file_with_nothing_before_its_damage_and_an_intact_one(tmp_path):
    """The intact file raises nothing; the damaged one: table_id null, the run's day (its files' last)."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "ok.jsonl.gz").write_bytes(gzip.compress(dealer_bytes(50)))
    (folder / "junk.jsonl.gz").write_bytes(b"not gzip at all")
    run(folder, "--lake", tmp_path / "lake", "--fail-on", "major", expect=1)
    rows = damaged_rows(tmp_path / "lake")
    assert lake_rows.dicts(tmp_path / "lake", "findings") == rows and len(rows) == 1
    sha = hashlib.sha256(b"").hexdigest()
    assert _same_ts(rows[0]) == {
        "finding_id": finding_id("INPUT_DAMAGED", None, ["junk.jsonl.gz", sha], ()), "rule_id": "INPUT_DAMAGED",
        "title": "Input file damaged: audit incomplete", "severity": "major", "game": None, "table_id": None,
        "pack_id": None, "round_id": None, "seat": None, "spot": None, "device_id": None, "dealer_id": None,
        "ts": _dt.datetime(2026, 11, 28, 6, 0, tzinfo=UTC), "gaming_day": _dt.date(2026, 11, 28),
        "expected": "every input file read to its end: the day's audit complete",
        "actual": (f"junk.jsonl.gz cannot be read past byte 0 (it is not gzip data); 0 events read before it, "
                   f"from no device at no table; 15 bytes after it not read; SHA-256 of the bytes read {sha}"),
        "event_ids": [], "source": "integrity", "evidence": [], "ts_offset": None, "evidence_from": None,
        "pack_use": None, "round_use": None, **_written_by(lake_rows.last_run(tmp_path / "lake")["run_id"])}


@pytest.mark.slow
def test_a_corrupt_parquet_row_group(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "DT-1.parquet"
    _meta, start, data = bad_second_row_group(path, dealer_events(300))
    run(folder, "--lake", tmp_path / "lake", "--fail-on", "major", expect=1)
    rows = damaged_rows(tmp_path / "lake")
    assert len(rows) == 1
    row = rows[0]
    sha = hashlib.sha256(bytes(data[:start])).hexdigest()
    assert row["finding_id"] == finding_id("INPUT_DAMAGED", None, ["DT-1.parquet", sha], ())
    assert (row["table_id"], row["device_id"], row["gaming_day"]) == ("BAC-07", "DT-1", _dt.date(2026, 11, 28))
    assert row["actual"].startswith(f"DT-1.parquet cannot be read past byte {start:,} (Parquet row group 2 of 3 "
                                    f"cannot be read (")
    assert "; 100 events read before it, from 2 devices DT-1, DT-2 at 2 tables BAC-07, BAC-08; " in row["actual"]
    assert row["event_ids"] == ["DT-1-1", "DT-1-100"] and row["ts"] == _dt.datetime(2026, 11, 28, 20, 1, 40, tzinfo=UTC)


@pytest.mark.slow
def test_a_late_replay_keeps_the_finding_and_the_whole_file_sent_again_drops_it(tmp_path):
    path, whole = truncated(tmp_path / "in")
    lake = tmp_path / "lake"
    run(tmp_path / "in", "--lake", lake)
    first = damaged_rows(lake)
    assert len(first) == 1
    late = tmp_path / "late"
    late.mkdir()
    (late / "DT-9.jsonl").write_text("\n".join(
        json.dumps(event("bet_placed", i, device_id="DT-9", table_id="BAC-09", event_id=f"late-{i}"))
        for i in range(1, 4)) + "\n")
    replayed = run(late, "--lake", lake, "--fail-on", "major", expect=1)        # the day replayed again
    assert "gaming days 2026-11-28" in replayed.stdout
    assert "audit       incomplete for 2026-11-28: 1 input file" in replayed.stdout     # an earlier run's file
    assert damaged_rows(lake) == first
    path.write_bytes(whole)            # the casino sends the whole file again, under its name
    again = run(tmp_path / "in", "--lake", lake, "--fail-on", "major", expect=0)
    assert "audit       incomplete" not in again.stdout
    assert damaged_rows(lake) == [] and lake_rows.last_run(lake)["damaged_files"] == 0
    assert [r for r in lake_rows.dicts(lake, "rejects") if r["line"] is None] == []
