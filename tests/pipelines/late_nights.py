"""Two nights for the change tests (tests/pipelines/test_finding_changes.py, tests/queries/test_investigations.py):
the clean example split at an 08:00 cutoff (``tests/pipelines/test_nightly.py``); night 1 runs 2026-11-27
with the dealer terminal's file of BAC-01 missing, three lines of its shoe's file missing (a ``SEQ_GAP``)
and a line of another shoe's file (a ``SEQ_GAP`` that stays); night 2 runs 2026-11-28 and brings the
terminal's file and the three lines (in a file of their own) late: the cut the terminal recorded is found
too shallow (``CUT_PLACEMENT`` added to 2026-11-27) and the gap is filled (``SEQ_GAP`` removed from it)."""
from __future__ import annotations

from tests import lake_rows
from tests.pipelines.test_nightly import _faulty_floor, _invoke, _write_inbox

DAY1, DAY2 = "2026-11-27", "2026-11-28"


def _findings(lake) -> dict[str, dict]:
    return {r["finding_id"]: r for r in lake_rows.dicts(lake, "findings")}


def build(base):
    """``(base, inbox, lake, findings after night 1, findings after night 2, run 1's id, run 2's id)``
    (findings by ``finding_id``, whole rows)."""
    inbox, lake = base / "inbox", base / "lake"
    _write_inbox(inbox, _faulty_floor())
    shoe, terminal = inbox / DAY1 / "SHOE-4000.jsonl", inbox / DAY1 / "DT-BAC01.jsonl"
    lines = shoe.read_bytes().splitlines(True)
    middle = len(lines) // 2
    gap = lines[middle:middle + 3]
    shoe.write_bytes(b"".join(lines[:middle] + lines[middle + 3:]))
    held = terminal.read_bytes()
    terminal.unlink()
    other = inbox / DAY1 / "SHOE-6604.jsonl"          # a gap of another shoe that no late file fills
    kept = other.read_bytes().splitlines(True)
    other.write_bytes(b"".join(kept[:len(kept) // 2] + kept[len(kept) // 2 + 1:]))
    _invoke("--day", DAY1, "--inbox", inbox, "--lake", lake)
    night1 = _findings(lake)
    (inbox / DAY1 / "SHOE-4000-late.jsonl").write_bytes(b"".join(gap))
    terminal.write_bytes(held)
    _invoke("--day", DAY2, "--inbox", inbox, "--lake", lake)
    run1, run2 = (r["run_id"] for r in lake_rows.run_records(lake))
    return base, inbox, lake, night1, _findings(lake), run1, run2
