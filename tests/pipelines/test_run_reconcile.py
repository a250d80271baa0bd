"""A run whose lines or rows do not add up is recorded as failed and commits nothing."""
from __future__ import annotations

import pytest

from pitwatch.lake.runs import unreconciled

GOOD = {"lines_read": 10, "accepted": 7, "rejected": 2, "duplicates": 1, "damaged_files": 0}
WRITTEN = [("events", "2026-11-28", 4), ("events", "2026-11-29", 3), ("rejects", "2026-11-29", 2),
           ("rounds", "2026-11-28", 1), ("rules", None, 27)]
FILES = [{"table": t, "path": f"gaming_day={d}/replay-{d}-r.parquet"} for t, d, _ in WRITTEN]
TOTALS = {"staged_events": 8, "staged_rejects": 2, "files": FILES}


def test_a_run_that_adds_up_passes():
    assert unreconciled(GOOD, WRITTEN, TOTALS) is None


def test_events_the_lake_held_count_beside_the_runs_own():
    """A day replayed again writes the events it held (carried) with the run's new ones."""
    written = [("events", "2026-11-28", 4 + 5), *WRITTEN[1:]]
    assert unreconciled(GOOD, written, {**TOTALS, "carried": 5}) is None
    assert "the events files hold 12 rows, the run counted 7" in unreconciled(GOOD, written, TOTALS)


@pytest.mark.parametrize("record, written, totals, reason", [
    ({**GOOD, "duplicates": 0}, WRITTEN, TOTALS, "counts do not reconcile: read 10 != accepted 7"),
    (GOOD, WRITTEN, {**TOTALS, "files": FILES + FILES[2:3]},
     "file written twice in one run, rows may be lost: rejects/gaming_day=2026-11-29/replay-2026-11-29-r.parquet"),
    (GOOD, [w for w in WRITTEN if w[1] != "2026-11-29" or w[0] != "events"], TOTALS,
     "the events files hold 4 rows, the run counted 7"),
    (GOOD, [w for w in WRITTEN if w[0] != "rejects"], TOTALS, "the rejects files hold 0 rows, the run counted 2"),
    (GOOD, WRITTEN, {**TOTALS, "staged_events": 9}, "9 events were read, 8 decided"),
])
def test_lines_or_rows_lost_fail_the_run(record, written, totals, reason):
    assert reason in unreconciled(record, written, totals)
