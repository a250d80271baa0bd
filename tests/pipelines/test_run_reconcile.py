"""A run whose lines or rows do not add up is recorded as failed, never as a good run."""
from __future__ import annotations

import pytest

from pipelines.runs import unreconciled

GOOD = {"lines_read": 10, "accepted": 7, "rejected": 2, "duplicates": 1}
WRITTEN = [("events", "2026-11-28", 4), ("events", "2026-11-29", 3), ("rejects", "2026-11-29", 2),
           ("rounds", "2026-11-28", 1), ("rules", None, 27)]


def test_a_run_that_adds_up_passes():
    assert unreconciled(GOOD, WRITTEN) is None


@pytest.mark.parametrize("record, written, reason", [
    ({**GOOD, "duplicates": 0}, WRITTEN, "counts do not reconcile: read 10 != accepted 7"),
    (GOOD, WRITTEN + [("rejects", "2026-11-29", 0)], "written twice in one run, rows may be lost: rejects/gaming_day=2026-11-29"),
    (GOOD, [w for w in WRITTEN if w[1] != "2026-11-29" or w[0] != "events"], "the events partitions hold 4 rows, the run counted 7"),
    (GOOD, [w for w in WRITTEN if w[0] != "rejects"], "the rejects partitions hold 0 rows, the run counted 2"),
])
def test_lines_or_rows_lost_fail_the_run(record, written, reason):
    assert reason in unreconciled(record, written)
