"""The run summary an operator reads (issue 24): counts explained where they differ, no wording slips."""
from __future__ import annotations

from pitwatch.cli.run import render_summary
from pitwatch.pipelines.batch import RunSummary
from pitwatch.wording import plural


def _summary(**kw) -> RunSummary:
    base = dict(run_id="R", lake="L", inputs=[{"path": "a", "sha256": "x", "bytes": 1}], lines_read=1, accepted=1,
                rejected=0, duplicates=0, gaming_days=["2026-11-29"], rows={"events": 1, "findings": 81},
                findings=81, findings_by_severity={"critical": 1, "major": 80}, status="succeeded", seconds=1.0,
                replay_day="2026-11-29",
                rows_by_day={"events": {"2026-11-29": 1}, "findings": {"2026-11-28": 2, "2026-11-29": 79}})
    base.update(kw)
    return RunSummary(**base)


def test_rows_filed_under_another_gaming_day_are_explained():
    text = render_summary(_summary())
    (line,) = [l for l in text.splitlines() if l.strip().startswith("findings") and "rows" in l]
    assert line == ("    findings          81 rows  (2 under 2026-11-28, 79 under 2026-11-29: 2 rows filed under another"
                    " gaming day than 2026-11-29; a finding carries the gaming day of the event that completed it)")
    (events,) = [l for l in text.splitlines() if l.strip().startswith("events")]
    assert events == "    events              1 row"         # all under the replayed day: nothing to explain


def test_one_is_singular():
    text = render_summary(_summary())
    assert "  inputs      1 file, 1 byte" in text
    assert plural(1, "deck") == "1 deck" and plural(6, "deck") == "6 decks" and plural(1_204, "row") == "1,204 rows"
    assert plural(2, "match", "matches") == "2 matches"
