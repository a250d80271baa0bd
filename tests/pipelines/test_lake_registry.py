"""The device registry kept in the lake (rules.md "Feed health", version 2.1; issue 36): a one-off
run into a nightly lake replays with the lake's registry, a new registry is its next version, a
kept registry changed or removed is refused and named by verify — real processes, real lakes."""
from __future__ import annotations

import json
import os
import stat

import pytest

from pitwatch.inputs.devices import load_registry, parse_rows, write_registry
from pitwatch.lake import Lake
from pitwatch.simulator.truth import lake_findings
from tests.pipelines.test_devices import _lake_bytes
from tests.pipelines.test_feed_health_run import faulty_floor, pitwatch  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow


def _run_records(lake) -> list[dict]:
    from pitwatch.lake import runs

    return [r for r in runs.records_newest_first(Lake.at(lake)) if r["status"] == "succeeded" and not runs.is_watcher(r)]


def _devices(record) -> dict | None:
    return json.loads(record["options"])["devices"]


def _unknown(lake) -> list[dict]:
    return sorted((f for f in lake_findings(Lake.at(lake)) if f["rule_id"] == "UNKNOWN_DEVICE"),
                  key=lambda f: f["finding_id"])


@pytest.fixture(scope="module")
def nightly_lake(faulty_floor, tmp_path_factory):  # noqa: F811 - the imported fixture
    """The floor's first day run in the nightly form, which reads INBOX/devices.csv."""
    day = sorted(d.name for d in faulty_floor.iterdir() if d.is_dir())[0]
    lake = tmp_path_factory.mktemp("nightly") / "lake"
    r = pitwatch("run", "--day", day, "--inbox", faulty_floor, "--lake", lake, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "kept in the lake as version 1" in r.stdout
    return lake, day


def _copy(lake, tmp_path):
    import shutil

    out = tmp_path / "lake"
    shutil.copytree(lake, out, symlinks=True)
    return out


def test_the_nightly_registry_is_kept_in_the_lake_byte_for_byte(faulty_floor, nightly_lake):  # noqa: F811
    lake, _day = nightly_lake
    data = (faulty_floor / "devices.csv").read_bytes()
    registry = load_registry(str(faulty_floor / "devices.csv"))
    kept = lake / "_registry" / f"devices-{registry.sha256}.csv"
    assert sorted(os.listdir(lake / "_registry")) == [kept.name]
    assert kept.read_bytes() == data
    assert not os.stat(kept).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)     # read-only
    assert _devices(_run_records(lake)[0]) == {
        "path": str(faulty_floor / "devices.csv"), "sha256": registry.sha256, "rows": len(registry.rows),
        "kept": f"_registry/{kept.name}", "version": 1, "from": "given"}


def test_a_one_off_run_into_a_nightly_lake_keeps_the_lakes_registry(faulty_floor, nightly_lake, tmp_path):  # noqa: F811
    """Issue 36: `pitwatch run inbox/D/DT-….jsonl --lake <the nightly lake>` re-supplied one unchanged
    file with no --devices; the day was replayed without the registry and a critical UNKNOWN_DEVICE
    disappeared.  Now the day is replayed with the lake's registry: the same findings, row for row."""
    lake = _copy(nightly_lake[0], tmp_path)
    before = _unknown(lake)
    assert before, "the faulty floor raises UNKNOWN_DEVICE with its registry"
    dealer = sorted((faulty_floor / nightly_lake[1]).glob("DT-*"))[0]
    r = pitwatch("run", dealer, "--lake", lake)
    assert r.returncode == 0, r.stderr
    assert "registry    device registry: the lake's version 1 (_registry/devices-" in r.stdout
    assert "device registry: the lake's version 1" in r.stderr
    assert _unknown(lake) == before
    record = _run_records(lake)[0]
    assert _devices(record)["from"] == "lake" and _devices(record)["version"] == 1
    assert len(os.listdir(lake / "_registry")) == 1


def test_a_new_registry_is_the_next_version_and_later_runs_use_it(faulty_floor, nightly_lake, tmp_path):  # noqa: F811
    lake = _copy(nightly_lake[0], tmp_path)
    rows = list(parse_rows((faulty_floor / "devices.csv").read_text()))
    write_registry(tmp_path / "v2.csv", rows[:-1])     # a device retired: another registry
    day_files = sorted((faulty_floor / nightly_lake[1]).iterdir())
    r = pitwatch("run", *day_files, "--devices", tmp_path / "v2.csv", "--lake", lake, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "kept in the lake as version 2" in r.stdout
    assert len(os.listdir(lake / "_registry")) == 2
    # the same bytes again: still version 2, nothing more kept
    r = pitwatch("run", *day_files, "--devices", tmp_path / "v2.csv", "--lake", lake, "--quiet")
    assert r.returncode == 0 and "the lake's version 2" in r.stdout, r.stderr
    # no registry given: the lake's version 2
    r = pitwatch("run", day_files[0], "--lake", lake, "--quiet")
    assert r.returncode == 0 and "the lake's version 2" in r.stdout, r.stderr
    assert [_devices(rec)["version"] for rec in _run_records(lake)[:3]] == [2, 2, 2]
    verify = pitwatch("verify", "--lake", lake, "--format", "json")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert json.loads(verify.stdout)["checked"]["registries"] == 2


def test_a_kept_registry_that_was_changed_is_refused_and_verify_names_it(nightly_lake, faulty_floor, tmp_path):  # noqa: F811
    lake = _copy(nightly_lake[0], tmp_path)
    kept = next((lake / "_registry").iterdir())
    os.chmod(kept, 0o644)
    kept.write_bytes(kept.read_bytes().replace(b"\n", b"\nDT-FORGED,dealer,BAC-01,,\n", 1))
    before = _lake_bytes(lake)
    dealer = sorted((faulty_floor / nightly_lake[1]).glob("DT-*"))[0]
    r = pitwatch("run", dealer, "--lake", lake, "--quiet")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"Error: the lake's device registry _registry/{kept.name} was changed")
    assert r.stderr.count("\n") == 1
    assert _lake_bytes(lake) == before
    verify = pitwatch("verify", "--lake", lake, "--format", "json")
    assert verify.returncode == 5
    problems = json.loads(verify.stdout)["problems"]
    assert [(p["kind"], p["what"]) for p in problems] == [("changed", f"_registry/{kept.name}")]


def test_a_kept_registry_removed_is_named_by_verify(nightly_lake, tmp_path):
    lake = _copy(nightly_lake[0], tmp_path)
    kept = next((lake / "_registry").iterdir())
    kept.unlink()
    verify = pitwatch("verify", "--lake", lake, "--format", "json")
    assert verify.returncode == 5
    problems = json.loads(verify.stdout)["problems"]
    assert [(p["kind"], p["what"]) for p in problems] == [("removed", f"_registry/{kept.name}")]
    assert "names it as the device registry it used" in problems[0]["detail"]


def test_a_lake_without_a_registry_runs_as_before(faulty_floor, tmp_path):  # noqa: F811
    day = sorted(d for d in faulty_floor.iterdir() if d.is_dir())[0]
    lake = tmp_path / "lake"
    r = pitwatch("run", *sorted(day.iterdir()), "--lake", lake, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "  registry  " not in r.stdout and not (lake / "_registry").exists()
    assert _devices(_run_records(lake)[0]) is None
    assert _unknown(lake) == []


def test_a_lake_whose_runs_used_a_registry_it_does_not_keep_says_so(nightly_lake, faulty_floor, tmp_path):  # noqa: F811
    """A lake written before 2.1: its last run recorded a registry (path, SHA-256, rows) but the lake
    keeps no copy.  A run given none says that the replayed days lose UNKNOWN_DEVICE, in the log
    and the summary, and asks for --devices (the record appended as such a run's, through the
    lake's own chained append)."""
    import datetime as _dt

    from pitwatch.lake import runs

    lake = _copy(nightly_lake[0], tmp_path)
    now = _dt.datetime.now(_dt.timezone.utc)
    meta = {"run_id": runs.new_run_id(now), "command": "pitwatch run old", "started": now.isoformat(),
            "versions": runs.versions(), "options": json.dumps(
                {"night": None, "devices": {"path": "/etc/pitwatch/devices.csv", "sha256": "ab" * 32, "rows": 9}})}
    runs.write_run_record(Lake.at(lake), runs.run_record(meta, "succeeded", ended=now))
    dealer = sorted((faulty_floor / nightly_lake[1]).glob("DT-*"))[0]
    r = pitwatch("run", dealer, "--lake", lake)
    assert r.returncode == 0, r.stderr
    said = (f"no device registry: the lake's last run {meta['run_id']} used /etc/pitwatch/devices.csv "
            "(SHA-256 abababababab…), which the lake does not keep (written before version 2.1); "
            "the replayed days lose UNKNOWN_DEVICE: give --devices FILE")
    assert f"  registry    {said}" in r.stdout
    assert any(line.endswith(f"pitwatch: {said}") for line in r.stderr.splitlines()), r.stderr
    assert _devices(_run_records(lake)[0]) is None


def test_a_registry_write_killed_halfway_is_a_leftover_not_tampering(nightly_lake, tmp_path):
    """Review: a run or watcher killed between writing the registry's temporary file and linking it
    left a file verify called 'added' (exit 5) on an honest lake."""
    lake = _copy(nightly_lake[0], tmp_path)
    kept = next((lake / "_registry").iterdir())
    (lake / "_registry" / f"{kept.name}.tmp-4242").write_bytes(kept.read_bytes()[:10])
    verify = pitwatch("verify", "--lake", lake, "--format", "json")
    assert verify.returncode == 0, verify.stdout
    assert [(f["kind"], f["what"]) for f in json.loads(verify.stdout)["leftovers"]] == [
        ("registry being kept", f"_registry/{kept.name}.tmp-4242")]
