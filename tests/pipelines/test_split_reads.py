"""One large file read in ranges by every worker (issue 40, deliverable 2): the lake is the one a
whole read of the file writes, row for row, and the SHA-256 recorded is of the bytes read.

Ranges are made small here (``RANGE_BYTES``) so that the two-hour floor, as one time-ordered file,
is cut in several; the runs are real (Beam's embedded runner, Delta tables).  The attacks: a file
changed between the launcher's read and a range's; a row of rejected lines across a range's end
(the rejects-in-a-row guard must stop the read where a whole read stops it); lines a whole read
takes its slow way (blank, ``\\r\\n``, a byte-order mark, not an object, too long).
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from pitwatch.inputs import ranges
from pitwatch.lake import Lake
from pitwatch.pipelines.batch import run_batch
from pitwatch.schemas.limits import MAX_LINE_BYTES
from tests import lake_rows

FLOOR = Path(__file__).resolve().parents[1] / "data" / "clean-floor-2h.jsonl.gz"
TABLES = ("events", "rejects", "rounds", "packs", "findings")
SMALL = 256 << 10


def _floor() -> bytes:
    with gzip.open(FLOOR, "rb") as f:
        return f.read()


def _run(path: Path, lake: Path, split: bool, monkeypatch, max_rejects: int = 10_000):
    monkeypatch.setattr(ranges, "RANGE_BYTES", SMALL if split else 1 << 40)
    return run_batch([str(path)], Lake.at(lake), beam_args=["--runner=FnApiRunner"],
                     max_rejects_in_a_row=max_rejects)


def _same_lakes(split: Path, whole: Path) -> None:
    def whole_rows(lake, table):        # a damaged file's rejects row has no line: sorted by its text
        return sorted(lake_rows.dicts(lake, table, with_runs=False), key=lambda row: json.dumps(row, sort_keys=True, default=str))

    for table in TABLES:
        assert whole_rows(split, table) == whole_rows(whole, table), table
    a, b = lake_rows.run_records(split)[-1], lake_rows.run_records(whole)[-1]
    for key in ("inputs", "lines_read", "accepted", "rejected", "duplicates", "findings", "damage"):
        assert a[key] == b[key], key


# --- the launcher's read ------------------------------------------------------------------------

def test_the_ranges_cover_the_file_at_line_ends_numbered_as_a_whole_read_numbers_them(tmp_path):
    data = _floor()
    path = tmp_path / "floor.jsonl"
    path.write_bytes(data)
    planned = ranges.plan_ranges(str(path), SMALL)
    assert planned is not None and len(planned) == round(len(data) / SMALL)   # no range under half the size
    assert [r.index for r in planned] == list(range(len(planned))) and {r.count for r in planned} == {len(planned)}
    assert planned[0].start == 0 and planned[-1].end == len(data)
    for a, b in zip(planned, planned[1:]):
        assert a.end == b.start and data[a.end - 1:a.end] == b"\n"
    for r in planned:
        assert r.first_line == data[:r.start].count(b"\n") + 1
        assert r.sha256 == hashlib.sha256(data[r.start:r.end]).hexdigest()
        assert ranges.read_range(r) == data[r.start:r.end]
    assert planned[0].fingerprint == {"path": str(path), "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    assert all(r.fingerprint is None for r in planned[1:])


@pytest.mark.parametrize("what", ["gzip magic", "a line too long", "small"])
def test_a_file_a_range_cannot_read_as_a_whole_read_does_is_not_split(what, tmp_path):
    data = _floor()
    if what == "gzip magic":
        data = b"\x1f\x8b" + data
    elif what == "a line too long":
        data = data[:len(data) // 2] + b"{" + b" " * MAX_LINE_BYTES + b"}\n" + data[len(data) // 2:]
    else:
        data = data[:SMALL * 2 - 1]
    path = tmp_path / "floor.jsonl"
    path.write_bytes(data)
    assert ranges.plan_ranges(str(path), SMALL) is None


def test_a_range_whose_bytes_changed_since_the_launcher_read_them_is_not_read(tmp_path):
    path = tmp_path / "floor.jsonl"
    path.write_bytes(_floor())
    planned = ranges.plan_ranges(str(path), SMALL)
    with open(path, "r+b") as f:
        f.seek(planned[1].start + 10)
        f.write(b"X")
    assert ranges.read_range(planned[0]) is not None
    assert ranges.read_range(planned[1]) is None


@pytest.mark.parametrize("reports, again, again_without_guard", [
    ([["f", 0, 2, "read", 0, 5, False], ["f", 1, 2, "read", 4, 0, False]], [], []),
    ([["f", 0, 2, "read", 0, 5, False], ["f", 1, 2, "read", 5, 0, False]], ["f"], []),   # 5 + 5 = the limit
    ([["f", 0, 3, "read", 0, 4, False], ["f", 1, 3, "read", 3, 3, True], ["f", 2, 3, "read", 3, 0, False]],
     ["f"], []),
    ([["f", 0, 2, "read", 0, 0, False], ["f", 1, 2, "tripped", 0, 10, False]], ["f"], ["f"]),
    ([["f", 0, 2, "changed", 0, 0, False], ["f", 1, 2, "read", 0, 0, False]], ["f"], ["f"]),
    ([["f", 1, 2, "read", 0, 0, False]], ["f"], ["f"]),                                 # a range missing
    ([["g", 0, 1, "read", 0, 0, False], ["f", 0, 2, "read", 0, 9, False], ["f", 1, 2, "read", 9, 0, False]],
     ["f"], []),
])
def test_which_split_files_are_read_again_whole(reports, again, again_without_guard):
    assert ranges.whole_reads_needed(reports, 10) == again
    # no guard (0): only a change, a range that stopped, or a gap reads again
    assert ranges.whole_reads_needed(reports, 0) == again_without_guard


# --- real runs: the split read against the whole read ----------------------------------------------

@pytest.mark.slow
def test_one_time_ordered_file_read_in_ranges_writes_the_lake_a_whole_read_writes(tmp_path, monkeypatch):
    lines = _floor().splitlines(keepends=True)
    # lines a whole read takes its slow way, spread over the ranges: the same numbers, rejects, events
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    for at in range(700, len(lines), 1500):
        lines.insert(at, b"\n")
        lines.insert(at + 1, lines[at + 2].rstrip(b"\n") + b"\r\n")
        lines.insert(at + 2, b"null\n")
        lines.insert(at + 3, b'{"event_id": "broken"\n')
    path = tmp_path / "floor.jsonl"
    path.write_bytes(b"".join(lines))
    assert len(ranges.plan_ranges(str(path), SMALL)) >= 10
    split = _run(path, tmp_path / "split", True, monkeypatch)
    whole = _run(path, tmp_path / "whole", False, monkeypatch)
    assert split.status == whole.status == "succeeded"
    assert split.rejected == whole.rejected > 0 and split.accepted == whole.accepted > 13_000
    _same_lakes(tmp_path / "split", tmp_path / "whole")
    recorded = lake_rows.run_records(tmp_path / "split")[-1]["inputs"]
    assert [(i["path"], i["sha256"], i["bytes"]) for i in recorded] == \
        [(str(path), hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size)]


@pytest.mark.slow
def test_a_row_of_rejected_lines_across_a_range_end_stops_the_read_where_a_whole_read_stops_it(tmp_path, monkeypatch):
    data = _floor()
    path = tmp_path / "floor.jsonl"
    path.write_bytes(data)
    target = ranges.plan_ranges(str(path), SMALL)[1].start + SMALL   # where the second range's end is sought
    at = data.rfind(b"\n", 0, target - 600) + 1               # a line some 30 short lines before it
    junk = b'{"not": "an event"}\n' * 60                       # 60 rejected lines in a row
    path.write_bytes(data[:at] + junk + data[at:])
    planned = ranges.plan_ranges(str(path), SMALL)
    assert at + 20 * 10 < planned[1].end < at + len(junk) - 20 * 10    # the row crosses the range's end: under 50 either side
    split = _run(path, tmp_path / "split", True, monkeypatch, max_rejects=50)
    whole = _run(path, tmp_path / "whole", False, monkeypatch, max_rejects=50)
    assert split.damaged_files == whole.damaged_files == 1
    _same_lakes(tmp_path / "split", tmp_path / "whole")


@pytest.mark.slow
def test_a_file_changed_between_the_launchers_read_and_a_ranges_is_read_again_whole(tmp_path, monkeypatch):
    """The recorded SHA-256 is of the bytes read: the file's as the whole read read them, not the
    launcher's of bytes since changed."""
    data = _floor()
    path = tmp_path / "floor.jsonl"
    path.write_bytes(data)
    real = ranges.plan_ranges

    def plan_then_change(p, range_bytes=None):
        planned = real(p, range_bytes)
        line = data.index(b'"ts"', planned[2].start)           # a line of the third range gets a broken ts
        with open(p, "r+b") as f:
            f.seek(line + 6)
            f.write(b"X")
        return planned

    monkeypatch.setattr(ranges, "plan_ranges", plan_then_change)
    split = _run(path, tmp_path / "split", True, monkeypatch)
    monkeypatch.setattr(ranges, "plan_ranges", real)
    changed = path.read_bytes()
    assert changed != data
    whole = _run(path, tmp_path / "whole", False, monkeypatch)
    assert split.rejected == whole.rejected == 1
    _same_lakes(tmp_path / "split", tmp_path / "whole")
    recorded = lake_rows.run_records(tmp_path / "split")[-1]["inputs"]
    assert recorded[0]["sha256"] == hashlib.sha256(changed).hexdigest()
