"""Issue 37's DST case as written, through a real ``pitwatch run``: America/New_York, cutoff 01:30.

On the main of that day 05:45Z (01:45 EDT) fell in gaming day 11-01 and 06:15Z (01:15 EST, half
an hour later) in 10-31: the day went backwards. Both are day 11-01 now, in the rows and in the
partition folders (``tests/schemas/test_gaming_day_dst.py`` sweeps every change of eight zones).
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests import lake_rows
from tests.conftest import line


@pytest.mark.slow
def test_the_repeated_hour_holding_the_cutoff_files_both_lines_under_one_day(tmp_path):
    feed, lake = tmp_path / "shoe.jsonl", tmp_path / "lake"
    feed.write_text("\n".join(line(seq=s, device_id="SHOE-1", event_id=f"e{s}", ts=ts) for s, ts in
                              ((1, "2026-11-01T05:20:00Z"), (2, "2026-11-01T05:45:00Z"),
                               (3, "2026-11-01T06:15:00Z"), (4, "2026-11-02T06:45:00Z"))) + "\n")
    done = subprocess.run([sys.executable, "-m", "pitwatch.cli", "run", str(feed), "--lake", str(lake),
                           "--timezone", "America/New_York", "--cutoff", "01:30"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    days = {r["event_id"]: str(r["gaming_day"]) for r in lake_rows.dicts(str(lake), "events")}
    assert days == {"e1": "2026-10-31", "e2": "2026-11-01", "e3": "2026-11-01", "e4": "2026-11-02"}
    folders = sorted(p.parent.name for p in (lake / "events").glob("gaming_day=*/*.parquet"))
    assert folders == ["gaming_day=2026-10-31", "gaming_day=2026-11-01", "gaming_day=2026-11-02"]
