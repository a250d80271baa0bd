"""One read is the evidence (issue 37, deliverable 2): each attack replayed as written, with real runs.

* A file appended to during its run: the SHA-256 the run records for it is of exactly the bytes it
  read (the lines read and rejected account for every byte under it), the bytes written after its
  read began are not read, and the file is named (the summary, the run record's damage, a
  ``rejects`` row with the reason).
* An accepted line's card edited after its run, then a conflicting copy given to a later run: the
  reject quotes what the earlier run accepted, rebuilt from the lake's columns and labelled so,
  never the file as it is now; the lake's ``events`` rows of the earlier run are unchanged.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.inputs import stored as input_bytes
from tests import lake_rows

FLOOR = Path(__file__).resolve().parents[1] / "data" / "clean-floor-2h.jsonl.gz"


def _floor_lines() -> list[bytes]:
    with gzip.open(FLOOR, "rb") as f:
        return f.read().splitlines(keepends=True)


def _run(*args) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["run", *map(str, args)], catch_exceptions=False)
    return result.exit_code, result.output


def _appending_open(monkeypatch, target: Path, more: bytes) -> list:
    """``open_stored`` whose first read of ``target`` appends ``more`` to it once that read returns
    (a device still writing the file while the run reads it)."""
    real = input_bytes.open_stored
    done: list = []

    class Appending:
        def __init__(self, f):
            self.f = f

        def read(self, n=-1):
            data = self.f.read(n)
            if not done:
                done.append(len(data))
                with open(target, "ab") as out:
                    out.write(more)
            return data

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def opened(path):
        f = real(path)
        return Appending(f) if Path(path) == target and not done else f

    monkeypatch.setattr(input_bytes, "open_stored", opened)
    return done


@pytest.mark.slow
def test_a_file_appended_to_during_its_run_records_the_hash_of_what_was_read(tmp_path, monkeypatch):
    lines = _floor_lines()
    first, later = b"".join(lines[:10_000]), b"".join(lines[10_000:10_500])
    target = tmp_path / "in" / "floor.jsonl"
    target.parent.mkdir()
    target.write_bytes(first)
    lake = tmp_path / "lake"
    appended = _appending_open(monkeypatch, target, later)
    code, out = _run(target.parent, "--lake", lake)
    assert appended and appended[0] < len(first)        # the append came during the read
    assert target.read_bytes() == first + later

    record = lake_rows.run_records(lake)[-1]
    assert record["inputs"] == [{"path": str(target), "sha256": hashlib.sha256(first).hexdigest(),
                                 "bytes": len(first)}]
    # every line under the hash is read (accepted, rejected or a duplicate), no line after it
    assert record["lines_read"] == 10_000
    assert record["accepted"] + record["rejected"] + record["duplicates"] == 10_000
    assert record["bytes_not_read"] == len(later) and record["damaged_files"] == 1
    [damage] = record["damage"]
    assert damage["path"] == str(target) and damage["offset"] == len(first)
    assert "it changed while it was read" in damage["reason"] and f"{len(later)} bytes written" in damage["reason"]
    # the summary names the file, and its changed part is a rejects row with the reason
    assert f"damaged     {target}: damaged file: it changed while it was read" in out
    rows = [r for r in lake_rows.dicts(lake, "rejects") if r["file"] == str(target) and r["line"] is None]
    assert len(rows) == 1 and "it changed while it was read" in rows[0]["reason"]
    facts = json.loads(rows[0]["raw"])["input_damaged"]        # INPUT_DAMAGED's: of the bytes read, only
    assert facts["sha256"] == hashlib.sha256(first).hexdigest() and facts["bytes_not_read"] == len(later)
    assert facts["last"]["event_id"] == json.loads(lines[9_999])["event_id"]
    events = lake_rows.table(lake, "events", ["file", "line"])
    assert events.num_rows == record["accepted"] and max(events.column("line").to_pylist()) <= 10_000

    # the next run reads the whole file, under the same name: its rows replaced, no damage left
    monkeypatch.undo()
    code, out = _run(target.parent, "--lake", lake)
    record = lake_rows.run_records(lake)[-1]
    assert record["inputs"][0]["sha256"] == hashlib.sha256(first + later).hexdigest()
    assert record["lines_read"] == 10_500 and record["damaged_files"] == 0


def _events_by_line(lake) -> dict:
    return {(r["file"], r["line"]): r for r in lake_rows.dicts(lake, "events")}


@pytest.mark.slow
def test_a_conflict_quotes_what_the_earlier_run_accepted_not_the_file_as_it_is_now(tmp_path):
    from pitwatch.pipelines.ingest import REBUILT
    from tests.conftest import line

    first = tmp_path / "night1" / "a.jsonl"
    first.parent.mkdir()
    lines = [line(seq=n, event_id=f"ev-{n}", index=n, card="7h") for n in range(1, 6)]
    lines[2] = line(seq=3, event_id="ev-3", index=3, card="Qs", shoe_note="kept")    # an unknown field too
    first.write_text("\n".join(lines) + "\n")
    lake = tmp_path / "lake"
    code, _out = _run(first, "--lake", lake, "--quiet")
    assert code == 0
    before = _events_by_line(lake)
    assert before[(str(first), 3)]["card"] == "Qs"

    # after its run, the accepted line's card is edited in the file; a later run gives a conflicting copy
    first.write_text(first.read_text().replace('"Qs"', '"2c"'))
    second = tmp_path / "night2" / "b.jsonl"
    second.parent.mkdir()
    copy = line(seq=3, event_id="ev-3", index=3, card="Kd")
    second.write_text(copy + "\n")
    code, _out = _run(second, "--lake", lake, "--quiet")

    rejects = {(r["file"], r["line"]): r for r in lake_rows.dicts(lake, "rejects")}
    earlier, later = rejects[(str(first), 3)], rejects[(str(second), 1)]
    assert "conflicting" in earlier["reason"] and "conflicting" in later["reason"]
    # the earlier copy: as the lake held it, rebuilt and labelled; never the edited card
    assert earlier["raw"].startswith(REBUILT)
    quoted = json.loads(earlier["raw"][len(REBUILT):])
    assert quoted["card"] == "Qs" and quoted["shoe_note"] == "kept" and "2c" not in earlier["raw"]
    original = json.loads(lines[2])
    assert {k: v for k, v in quoted.items() if k != "ts"} == {k: v for k, v in original.items() if k != "ts"}
    assert quoted["ts"] == original["ts"]
    # the run's own copy: the line it read
    assert later["raw"] == copy
    # the lake's other events are the earlier run's rows, unchanged; the conflicting event left them
    after = _events_by_line(lake)
    assert (str(first), 3) not in after
    assert after == {k: v for k, v in before.items() if k != (str(first), 3)}


def test_a_copy_of_the_runs_own_file_changed_after_its_read_is_quoted_rebuilt(tmp_path):
    """The run's own copies are read again for their text, checked against the digest its read
    recorded: a file edited since gives the rebuilt copy, labelled, never the edited line."""
    from pitwatch.pipelines.ingest import REBUILT_CHANGED, FetchRawLines, ReadChunks
    from tests.conftest import line

    path = tmp_path / "a.jsonl"
    path.write_text(line(seq=1, event_id="ev-1", card="Qs") + "\n" + line(seq=2, event_id="ev-2") + "\n")
    fingerprint = list(ReadChunks(100).process(str(path)))[-1][2]
    row = {"file": str(path), "line": 1, "event_id": "ev-1", "table_id": "BAC-07", "device_id": "SHOE-1",
           "seq": 1, "reason": "conflicting duplicate", "rebuilt": '{"card":"Qs"}'}
    fetch = FetchRawLines({str(path): fingerprint})
    [[same]] = list(fetch.process((str(path), [row])))
    assert same["raw"] == line(seq=1, event_id="ev-1", card="Qs") and "rebuilt" not in same
    path.write_text(path.read_text().replace('"Qs"', '"2c"'))
    [[changed]] = list(fetch.process((str(path), [row])))
    assert changed["raw"] == REBUILT_CHANGED + '{"card":"Qs"}'
    [[carried]] = list(FetchRawLines({}).process((str(path), [row])))     # an earlier run's copy: never read
    assert carried["raw"].startswith("rebuilt from the lake: ")


@pytest.mark.slow
def test_an_earlier_runs_file_edited_since_does_not_decide_a_duplicate(tmp_path):
    """Copies whose decoded columns agree are compared as parsed JSON, their lines read again: an
    earlier run's file is read only if it still hashes to what that run recorded.  Its unknown field
    edited after its run, an identical copy of the accepted line in a later run is a duplicate (the
    earlier copy stays), not a conflict that would take the accepted event out of the lake."""
    from tests.conftest import line

    first = tmp_path / "night1" / "a.jsonl"
    first.parent.mkdir()
    accepted = line(seq=1, event_id="ev-1", shoe_note="kept")
    first.write_text(accepted + "\n" + line(seq=2, event_id="ev-2") + "\n")
    lake = tmp_path / "lake"
    assert _run(first, "--lake", lake, "--quiet")[0] == 0
    before = _events_by_line(lake)

    first.write_text(first.read_text().replace('"kept"', '"edited"'))
    second = tmp_path / "night2" / "b.jsonl"
    second.parent.mkdir()
    second.write_text(accepted + "\n")
    assert _run(second, "--lake", lake, "--quiet")[0] == 0
    record = lake_rows.run_records(lake)[-1]
    assert record["lines_read"] == 1 and record["duplicates"] == 1 and record["rejected"] == 0
    assert _events_by_line(lake) == before
    assert not [r for r in lake_rows.dicts(lake, "rejects") if r["line"] is not None]


# --- the readers, without a run: each hashes exactly what it read, up to where it stopped


def _read(path: Path) -> list:
    from pitwatch.pipelines.ingest import ReadChunks

    return list(ReadChunks(1_000).process(str(path)))


@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz", "a.parquet"])
def test_each_reader_records_the_digest_of_the_bytes_it_read(tmp_path, name):
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = _floor_lines()[:3_000]
    path = tmp_path / name
    if name.endswith(".parquet"):
        rows = [json.loads(x) for x in lines]
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=700)
    else:
        data = b"".join(lines)
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    stored = path.read_bytes()
    out = _read(path)
    assert [kind for _p, kind, _i in out][-1] == "read" and "damage" not in [kind for _p, kind, _i in out]
    assert out[-1][2] == {"path": str(path), "sha256": hashlib.sha256(stored).hexdigest(), "bytes": len(stored)}
    assert sum(len(items) for _p, kind, items in out if kind not in ("read", "damage")) == 3_000


def test_a_damaged_files_digest_is_of_the_bytes_before_its_damage(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    stored = gzip.compress(b"".join(_floor_lines()[:3_000]))
    path.write_bytes(stored[: len(stored) // 2] + b"\x00" * 64)      # corrupt after the middle
    out = _read(path)
    damage, fingerprint = out[-2][2], out[-1][2]
    assert out[-2][1] == "damage" and fingerprint["bytes"] == damage.offset
    assert fingerprint["sha256"] == damage.sha256 == hashlib.sha256(path.read_bytes()[:damage.offset]).hexdigest()


def test_a_parquet_file_appended_to_while_arrow_reads_it(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet"
    pq.write_table(pa.Table.from_pylist([json.loads(x) for x in _floor_lines()[:2_000]]), path, row_group_size=500)
    stored = path.read_bytes()
    _appending_open(monkeypatch, path, b"more bytes a device wrote")
    out = _read(path)
    damage, fingerprint = out[-2][2], out[-1][2]
    assert "it changed while it was read" in damage.what and damage.bytes_not_read == len(b"more bytes a device wrote")
    assert fingerprint == {"path": str(path), "sha256": hashlib.sha256(stored).hexdigest(), "bytes": len(stored)}
    assert sum(len(items) for _p, kind, items in out if kind == "parquet") == 2_000


def test_the_rejects_in_a_row_guard_records_the_bytes_up_to_its_stop(tmp_path):
    from pitwatch.pipelines.ingest import TAG_COUNTS, ReadAndDecode
    from pitwatch.schemas.decode import GamingDayConfig

    path = tmp_path / "bad.jsonl"
    data = b"{}\n" * 100 + b"".join(_floor_lines()[:10])
    path.write_bytes(data)
    counts = [o.value for o in ReadAndDecode(1_000, GamingDayConfig(), max_rejects=20).process(str(path))
              if getattr(o, "tag", None) == TAG_COUNTS]
    [damage] = [d for c in counts for d in c.get("damage", [])]
    [fingerprint] = [i for c in counts for i in c.get("inputs", [])]
    assert damage["offset"] == 60 and fingerprint["bytes"] == 60      # after the 20th line of 3 bytes
    assert fingerprint["sha256"] == hashlib.sha256(data[:60]).hexdigest()
