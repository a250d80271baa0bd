"""``pitwatch vacuum`` (issue 26, "Retention"): history leaves the lake only through it, past the
retention, legal holds honoured, under the lake's lock, with a ``runs`` record of what it removed.

Real Delta tables (``deltalake.write_deltalake``, partitioned by ``gaming_day``, days replaced with
a ``predicate`` overwrite so that their earlier files are removed from the table but stay on disk),
the ``pitwatch vacuum`` command (in this process; one test runs it as a real process), the lake's bytes compared before and after.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from pitwatch.cli import exits
from pitwatch.lake import Lake
from tests.conftest import run_pitwatch as pitwatch
from tests.conftest import run_pitwatch_process

ROOT = Path(__file__).resolve().parents[2]
PROPERTIES = {"delta.enableExpiredLogCleanup": "false", "delta.deletedFileRetentionDuration": "interval 2555 days",
              "delta.logRetentionDuration": "interval 2555 days"}
DAYS = ("2026-11-26", "2026-11-27", "2026-11-28")
HELD = "2026-11-28"


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def rows(table: str, day: str, n: int, night: int) -> pa.Table:
    return pa.table({"gaming_day": pa.array([_dt.date.fromisoformat(day)] * n, pa.date32()),
                     "event_id": [f"{table}-{day}-{night}-{i}" for i in range(n)],
                     "night": pa.array([night] * n, pa.int64())})


def replay(path: Path, table: str, day: str, n: int, night: int) -> None:
    """A replayed day: that day's partition overwritten, its earlier file removed from the table."""
    write_deltalake(str(path), rows(table, day, n, night), mode="overwrite", partition_by=["gaming_day"],
                    predicate=f"gaming_day = '{day}'")


def data_files(table: Path) -> set[str]:
    return {str(p.relative_to(table)) for p in table.rglob("*.parquet") if "_delta_log" not in p.parts}


def current_files(table: Path) -> set[str]:
    return set(DeltaTable(str(table)).get_add_actions(flatten=True).column("path").to_pylist())


def read_sorted(table: Path | str, version: int | None = None, day: str | None = None) -> list[dict]:
    dt = DeltaTable(str(table), version=version)
    filters = [("gaming_day", "=", _dt.date.fromisoformat(day))] if day else None
    return sorted(dt.to_pyarrow_table(filters=filters).to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.fixture
def lake(tmp_path) -> Path:
    """events and findings over three days, each day replayed twice after its first night (so two earlier
    files per day are removed from each table), and a ``rules`` table (not partitioned) replaced once."""
    lake = tmp_path / "lake"
    for table in ("events", "findings"):
        path = lake / table
        write_deltalake(str(path), pa.concat_tables([rows(table, d, 3, 0) for d in DAYS]), partition_by=["gaming_day"],
                        configuration=PROPERTIES)
        for night in (1, 2):
            for day in DAYS:
                replay(path, table, day, 2 + night, night)
    rules = pa.table({"rule_id": ["BURN_SKIPPED"], "severity": ["major"]})
    write_deltalake(str(lake / "rules"), rules, configuration=PROPERTIES)
    write_deltalake(str(lake / "rules"), rules, mode="overwrite")
    return lake


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pitwatch.toml"
    path.write_text(text)
    return path


def run_records(lake: Path) -> list[dict]:
    """The latest record of every run of the lake (a writer appends one when it starts, one when it ends)."""
    from tests import lake_rows

    return [{**r, "options": json.loads(r["options"])} for r in lake_rows.run_records(lake)]


# --- retention 0 with a hold on one day --------------------------------------------------------------

def test_vacuum_removes_replaced_files_but_a_held_days_and_the_current_version_reads_the_same(lake, tmp_path):
    before_rows = {t: read_sorted(lake / t) for t in ("events", "findings", "rules")}
    before_files = {t: data_files(lake / t) for t in ("events", "findings")}
    current = {t: current_files(lake / t) for t in ("events", "findings")}
    logs = {p: h for p, h in tree(lake).items() if "_delta_log" in p}
    hashes = tree(lake)
    old_held = {t: {f for f in before_files[t] - current[t] if f.startswith(f"gaming_day={HELD}/")}
                for t in before_files}
    old_other = {t: before_files[t] - current[t] - old_held[t] for t in before_files}
    assert all(len(old_held[t]) == 2 and len(old_other[t]) == 4 for t in before_files)   # the fixture did replace
    held_night_0 = read_sorted(lake / "events", version=0, day=HELD)

    cfg = config(tmp_path, f'retention_days = 0\nlegal_holds = ["{HELD}"]\n')
    result = run_pitwatch_process("vacuum", "--lake", lake, "--config", cfg)     # the one real process
    assert result.returncode == exits.DONE, result.stderr

    for t in before_files:
        assert data_files(lake / t) == current[t] | old_held[t]          # the held day's old files remain
        assert not (data_files(lake / t) & old_other[t])                 # every other replaced file is gone
    assert {t: read_sorted(lake / t) for t in before_rows} == before_rows   # the current version: same rows
    after = {p: h for p, h in tree(lake).items() if "_delta_log" in p}
    # the tables' logs untouched; the runs table's only gained the vacuum's own records (chained)
    assert {p: h for p, h in after.items() if not p.startswith("runs/")} == \
        {p: h for p, h in logs.items() if not p.startswith("runs/")}
    assert {p: h for p, h in after.items() if p in logs} == logs
    assert read_sorted(lake / "events", version=0, day=HELD) == held_night_0   # time travel on the held day
    assert {r["night"] for r in held_night_0} == {0}
    with pytest.raises(Exception):                       # the other days of version 0: their files are gone
        read_sorted(lake / "events", version=0, day="2026-11-26")
    assert len(data_files(lake / "rules")) == 2          # a table with no days: kept while a hold is in force

    (rec,) = [r for r in run_records(lake) if r["options"].get("command") == "vacuum"]
    assert rec["status"] == "succeeded" and rec["command"].startswith("pitwatch vacuum --lake ")
    opts = rec["options"]
    assert opts["retention_days"] == 0 and opts["legal_holds"] == [HELD]
    for t in before_files:
        entry = opts["tables"][t]
        removed = {f["path"] for f in entry["files"]}
        assert removed == {f"{t}/{f}" for f in old_other[t]} and entry["removed"] == 4
        assert all(f["sha256"] == hashes[f["path"]] for f in entry["files"])   # what each removed file held
        assert entry["bytes"] == sum(f["bytes"] for f in entry["files"]) > 0
        assert {f["path"] for f in entry["kept_files"]} == {f"{t}/{f}" for f in old_held[t]}
        assert {f["kept"] for f in entry["kept_files"]} == {f"legal hold on {HELD}"}
    assert opts["tables"]["rules"]["removed"] == 0 and opts["tables"]["rules"]["kept"] == 1
    assert f"run {rec['run_id']}: succeeded" in result.stdout


def test_dry_run_lists_what_it_would_remove_and_changes_nothing(lake, tmp_path):
    before = tree(lake)
    old = data_files(lake / "events") - current_files(lake / "events")
    result = pitwatch("vacuum", "--lake", lake, "--dry-run", "--retention-days", "0", "--hold", HELD)
    assert result.returncode == exits.DONE, result.stderr
    assert tree(lake) == before and not (lake / "runs").exists()       # no removal, no record, no lock file
    listed = {line.split("would remove ", 1)[1] for line in result.stdout.splitlines()
              if line.startswith("    would remove ")}
    kept = {line.split("kept ", 1)[1].split(":")[0] for line in result.stdout.splitlines()
            if line.startswith("    kept ")}
    assert {p for p in listed if p.startswith("events/")} == {f"events/{f}" for f in old if HELD not in f}
    assert {p for p in kept if p.startswith("events/")} == {f"events/{f}" for f in old if HELD in f}
    assert "dry run: nothing removed" in result.stdout


def test_retention_keeps_files_removed_more_recently_than_it(lake, tmp_path):
    data = {p: h for p, h in tree(lake).items() if p.endswith(".parquet") and "runs/" not in p}
    result = pitwatch("vacuum", "--lake", lake, "--retention-days", "1", "--no-config-holds")
    assert result.returncode == exits.DONE, result.stderr
    assert {p: h for p, h in tree(lake).items() if p.endswith(".parquet") and not p.startswith("runs/")} == data
    (rec,) = [r for r in run_records(lake) if r["options"].get("command") == "vacuum"]
    assert rec["status"] == "succeeded" and all(t["removed"] == 0 for t in rec["options"]["tables"].values())


def test_with_no_hold_a_table_without_days_is_vacuumed_too(lake, tmp_path):
    current = current_files(lake / "rules")
    result = pitwatch("vacuum", "--lake", lake, "--retention-days", "0", "--no-config-holds")
    assert result.returncode == exits.DONE, result.stderr
    assert data_files(lake / "rules") == current
    assert data_files(lake / "events") == current_files(lake / "events")


def test_a_range_hold_in_the_config_and_a_hold_flag_add_up(lake, tmp_path):
    cfg = config(tmp_path, 'retention_days = 0\nlegal_holds = ["2026-11-25..2026-11-26"]\n')
    result = pitwatch("vacuum", "--lake", lake, "--config", cfg, "--hold", "2026-11-27")
    assert result.returncode == exits.DONE, result.stderr
    left = data_files(lake / "events") - current_files(lake / "events")
    assert {f.split("/")[0] for f in left} == {"gaming_day=2026-11-26", "gaming_day=2026-11-27"}
    assert not any(f.startswith(f"gaming_day={HELD}/") for f in left)
    (rec,) = [r for r in run_records(lake) if r["options"].get("command") == "vacuum"]
    assert rec["options"]["legal_holds"] == ["2026-11-25..2026-11-26", "2026-11-27"]


# --- the lock --------------------------------------------------------------------------------------

def test_vacuum_takes_the_lake_lock_and_exits_4_with_the_lake_unchanged(lake, tmp_path):
    from tests.pipelines.test_lake_lock import start_holder

    holder = start_holder(lake)
    try:
        before = tree(lake)
        result = pitwatch("vacuum", "--lake", lake, "--retention-days", "0", "--no-config-holds",
                          "--lock-timeout", "1")
        assert tree(lake) == before
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == exits.LOCKED, result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"Error: the lake {lake} is locked by run ")


# --- mistakes and attacks: one Error line, nothing removed -----------------------------------------

@pytest.mark.parametrize("text, message", [
    ('legal_holds = "2026-11-28"\n', "legal_holds must be a list of days"),
    ('legal_holds = ["2026-11-31"]\n', "a held day must be YYYY-MM-DD"),
    ('legal_holds = ["2026-11-28..2026-11-01"]\n', "must not end before it starts"),
    ('legal_holds = [20261128]\n', "a held day must be text"),
    ('retention_days = "7"\n', "retention_days must be a whole number"),
    ('retention_days = -1\n', "retention_days must be a whole number"),
    ('retention_days = 100000000000000000\n', "retention_days must be a whole number of days from 0 to 36500"),
    ('retention_days = 7\nlegal_hold = ["2026-11-28"]\n', "did you mean legal_holds?"),
])
def test_a_bad_retention_or_legal_hold_in_the_config_is_exit_2_and_nothing_removed(lake, tmp_path, text, message):
    before = tree(lake)
    result = pitwatch("vacuum", "--lake", lake, "--config", config(tmp_path, text))
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr.startswith("Error: config file ") and message in result.stderr
    assert result.stderr.count("\n") == 1 and tree(lake) == before


@pytest.mark.parametrize("args, message", [
    (["--retention-days", "0"], "give --config FILE"),
    (["--retention-days", "0", "--no-config-holds", "--hold", "28/11/2026"], "--hold: a held day must be"),
    (["--retention-days", "-3", "--no-config-holds"], "Invalid value for '--retention-days'"),
    (["--retention-days", "99999999999", "--no-config-holds"], "Invalid value for '--retention-days'"),
    (["--retention-days", "0", "--no-config-holds", "--config", "{cfg}"], "--no-config-holds goes without"),
])
def test_vacuum_mistakes_are_exit_2_and_nothing_removed(lake, tmp_path, args, message):
    cfg = config(tmp_path, "retention_days = 0\n")
    before = tree(lake)
    result = pitwatch("vacuum", "--lake", lake, *[a.replace("{cfg}", str(cfg)) for a in args])
    assert result.returncode == exits.USAGE, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert tree(lake) == before


# --- a lake on an object store (S3: moto's server, tests/object_store.py) --------------------------

def s3_tree(server, lake: str) -> dict[str, str]:
    """The lake's objects on the S3 server: path inside the lake -> SHA-256 (:func:`tree`'s form: files
    only; a key ending in ``/`` is the empty "folder" pyarrow keeps when it removes a folder's last file,
    as the folder stays on disk)."""
    bucket, prefix = lake[len("s3://"):].split("/", 1)
    return {k[len(prefix) + 1:]: hashlib.sha256(v).hexdigest() for k, v in server.keys(bucket).items()
            if k.startswith(prefix + "/") and not k.endswith("/")}


def test_a_dry_run_on_an_s3_lake_says_what_it_says_on_disk_and_changes_no_object(lake, s3_lake, s3_server):
    from tests.object_store import copy_lake, same_but_the_lake

    copy_lake(lake, s3_lake)
    before = s3_tree(s3_server, s3_lake)
    assert before == tree(lake)
    args = ("--dry-run", "--retention-days", "0", "--hold", HELD)
    on_disk, on_s3 = pitwatch("vacuum", "--lake", lake, *args), pitwatch("vacuum", "--lake", s3_lake, *args)
    assert on_disk.returncode == on_s3.returncode == exits.DONE, on_s3.stderr
    assert "    would remove events/gaming_day=" in on_s3.stdout
    assert same_but_the_lake(on_s3.stdout, s3_lake) == same_but_the_lake(on_disk.stdout, lake)
    assert s3_tree(s3_server, s3_lake) == before


def test_vacuum_of_an_s3_lake_removes_exactly_the_objects_it_removes_from_disk(lake, s3_lake, s3_server, tmp_path):
    from tests.object_store import copy_lake, same_but_the_lake

    copy_lake(lake, s3_lake)
    before = tree(lake)
    cfg = config(tmp_path, f'retention_days = 0\nlegal_holds = ["{HELD}"]\n')
    on_disk = pitwatch("vacuum", "--lake", lake, "--config", cfg)
    on_s3 = pitwatch("vacuum", "--lake", s3_lake, "--config", cfg)
    assert on_disk.returncode == on_s3.returncode == exits.DONE, on_s3.stderr
    (disk_rec,), (s3_rec,) = ([r for r in run_records(at) if r["options"].get("command") == "vacuum"]
                              for at in (lake, s3_lake))
    assert s3_rec["options"]["tables"] == disk_rec["options"]["tables"]      # every file, size and SHA-256
    assert same_but_the_lake(on_s3.stdout, s3_lake, s3_rec["run_id"]) == \
        same_but_the_lake(on_disk.stdout, lake, disk_rec["run_id"])
    after_disk, after_s3 = tree(lake), s3_tree(s3_server, s3_lake)
    assert len(after_disk) < len(before)                                    # it did remove files
    # the runs table holds each its own run's record; _runs.lock is the runs chain's flock file, on disk only
    not_runs = lambda t: {p: h for p, h in t.items() if not p.startswith("runs/") and p != "_runs.lock"}  # noqa: E731
    assert not_runs(after_s3) == not_runs(after_disk)                       # the same objects left, same bytes
    for t in ("events", "findings", "rules"):          # the current versions read the same rows (delta-rs)
        assert read_sorted(f"{s3_lake}/{t}") == read_sorted(lake / t) != []


def test_a_missing_s3_lake_is_exit_2_and_nothing_created(s3_lake, s3_server):
    result = pitwatch("vacuum", "--lake", s3_lake, "--no-config-holds")
    assert result.returncode == exits.USAGE
    assert result.stderr == f"Error: the lake {s3_lake} does not exist\n"
    assert s3_tree(s3_server, s3_lake) == {}


def test_a_missing_lake_or_one_with_no_delta_table_is_exit_2_and_not_created(tmp_path):
    missing = pitwatch("vacuum", "--lake", tmp_path / "nope", "--no-config-holds")
    assert missing.returncode == exits.USAGE and "does not exist" in missing.stderr
    assert not (tmp_path / "nope").exists()
    (tmp_path / "old" / "events" / "gaming_day=2026-11-28").mkdir(parents=True)
    old = pitwatch("vacuum", "--lake", tmp_path / "old", "--no-config-holds")
    assert old.returncode == exits.USAGE and "no Delta table" in old.stderr and "pitwatch migrate" in old.stderr


def test_a_replaced_file_swapped_for_a_link_is_left_alone_and_its_target_untouched(lake, tmp_path):
    victim = tmp_path / "not-the-lakes.txt"
    victim.write_text("a file outside the lake")
    old = sorted(data_files(lake / "events") - current_files(lake / "events"))[0]
    (lake / "events" / old).unlink()
    (lake / "events" / old).symlink_to(victim)
    result = pitwatch("vacuum", "--lake", lake, "--retention-days", "0", "--no-config-holds")
    assert result.returncode == exits.DONE, result.stderr
    assert victim.read_text() == "a file outside the lake" and (lake / "events" / old).is_symlink()
    (rec,) = [r for r in run_records(lake) if r["options"].get("command") == "vacuum"]
    (kept,) = rec["options"]["tables"]["events"]["kept_files"]
    assert kept["path"] == f"events/{old}" and "left alone" in kept["kept"]


def test_a_vacuum_interrupted_after_its_first_table_records_exactly_what_it_removed(lake, tmp_path):
    """SIGINT/SIGTERM reach the command as KeyboardInterrupt (pitwatch.cli.common): here it arrives as
    the first table is done; the record says interrupted and lists that table's removed files, no more."""
    from pitwatch.lake import vacuum

    class StopAfterFirstTable:
        def info(self, *args):
            raise KeyboardInterrupt("SIGTERM")

    old = {t: data_files(lake / t) - current_files(lake / t) for t in ("events", "findings")}
    with pytest.raises(KeyboardInterrupt):
        vacuum.vacuum(Lake.at(lake), 0, vacuum.LegalHolds(), "pitwatch vacuum (test)", StopAfterFirstTable())
    assert not (data_files(lake / "events") & old["events"])        # the first table (sorted): done
    assert data_files(lake / "findings") >= old["findings"]         # the next one: untouched
    (rec,) = [r for r in run_records(lake) if r["options"].get("command") == "vacuum"]
    assert rec["status"] == "interrupted" and rec["ended"] is not None
    tables = rec["options"]["tables"]
    assert {f["path"] for f in tables["events"]["files"]} == {f"events/{f}" for f in old["events"]}
    assert tables["findings"]["removed"] == 0


def test_a_vacuum_whose_lease_is_taken_mid_way_removes_nothing_more(lake, s3_lake, s3_server, monkeypatch):
    """On an object store the lease is renewed by a thread that only notes a loss: vacuum's deletions
    went on while another writer held the lake.  It now asks before each table (review of issue 44)."""
    import logging

    from pitwatch.lake import lock as lake_lock
    from pitwatch.lake import vacuum as lake_vacuum
    from pitwatch.lake.vacuum import LegalHolds
    from tests.object_store import copy_lake

    copy_lake(lake, s3_lake)
    at = Lake.at(s3_lake)
    bucket, prefix = s3_lake[len("s3://"):].split("/", 1)
    real_remove, removed = lake_vacuum._remove, []

    def remove_then_lose_the_lease(lake_, path):
        real_remove(lake_, path)
        removed.append(path)
        if len(removed) == 1:               # another writer takes the lake (the lease replaced)
            s3_server.client().put_object(Bucket=bucket, Key=f"{prefix}/{lake_lock.LEASE_OBJECT}",
                                          Body=b'{"holder": {"command": "another writer"}}')

    monkeypatch.setattr(lake_vacuum, "_remove", remove_then_lose_the_lease)
    log = logging.getLogger("pitwatch.test_vacuum")
    plans = lake_vacuum.plan(at, 0, LegalHolds.parse([HELD]))
    tables = [p.table for p in plans if p.remove]
    assert len(tables) >= 2, tables                 # the lease is lost after the first table's first file
    with pytest.raises(lake_lock.LeaseLost):
        with lake_lock.hold(at, lake_lock.new_holder("pitwatch vacuum"), 0, log):
            lake_vacuum.vacuum(at, 0, LegalHolds.parse([HELD]), "pitwatch vacuum", log)
    assert removed and all(f"/{tables[0]}/" in r for r in removed)         # the first table's only
    assert not any(f"/{t}/" in r for r in removed for t in tables[1:])    # nothing of the later tables
