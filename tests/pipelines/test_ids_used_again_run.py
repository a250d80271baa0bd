"""Ids used again through ``pitwatch run`` (issue 36): a real run into a real lake.

* A ``round_started`` naming a round still open is rejected with the reason: its line leaves
  the day's ``events`` for ``rejects`` (its raw text, file and line), counted once, and
  accepted + rejected + duplicates = read still holds, in the summary and in ``runs``.
* A feed whose second pack is named like the first and whose round numbers restart writes, row
  for row, the lake rows of the same feed with unique ids once (id, use) is mapped back.
"""
from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner

from pitwatch.cli import main
from pitwatch.schemas.contract import FIELDS
from pitwatch.schemas.events import datetime_to_micros, micros_to_datetime
from tests import lake_rows
from tests.rules.test_ids_used_again import as_unique, two_packs

pytestmark = pytest.mark.slow


def jsonl(events) -> bytes:
    """Contract lines of engine events (ts as the devices write it)."""
    out = []
    for ev in events:
        row = {k: v for k, v in ev.to_row().items() if k in FIELDS and v is not None}
        row["ts"] = micros_to_datetime(ev.ts).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        out.append(json.dumps(row))
    return ("\n".join(out) + "\n").encode()


def renumbered(events):
    """The events with each device's seq counted again in their order (1, 2, …)."""
    seq: dict = {}
    out = []
    for ev in events:
        seq[ev.device_id] = seq.get(ev.device_id, 0) + 1
        out.append(ev._replace(seq=seq[ev.device_id]))
    return out


def run(inbox, lake):
    result = CliRunner().invoke(main, ["run", str(inbox), "--lake", str(lake)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_round_started_naming_an_open_round_moves_from_events_to_rejects(tmp_path):
    events = list(two_packs("P-2").events)
    at = next(i for i, e in enumerate(events) if e.type == "bets_closed" and e.round_id == "R-2")
    again = events[at]._replace(event_id="dt-again", type="round_started", game="baccarat", pack_id="P-1")
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "floor.jsonl").write_bytes(jsonl(renumbered(events[:at] + [again] + events[at:])))
    out = run(inbox, tmp_path / "lake")
    n = len(events) + 1
    assert f"lines read  {n:,} = accepted {n - 1:,} + rejected 1 + duplicates 0" in out, out
    rejects = lake_rows.dicts(tmp_path / "lake", "rejects")
    assert [(r["event_id"], r["line"], r["device_id"]) for r in rejects] == [("dt-again", at + 1, "DT-1")]
    assert "still open" in rejects[0]["reason"] and json.loads(rejects[0]["raw"])["event_id"] == "dt-again"
    kept = lake_rows.dicts(tmp_path / "lake", "events")
    assert len(kept) == n - 1 and "dt-again" not in {r["event_id"] for r in kept}
    record = lake_rows.last_run(tmp_path / "lake")
    assert (record["lines_read"], record["accepted"], record["rejected"], record["duplicates"]) == (n, n - 1, 1, 0)
    # the rounds are those of the feed without the line
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "floor.jsonl").write_bytes(jsonl(renumbered(events)))
    run(alone, tmp_path / "lake-alone")
    for name in ("rounds", "packs", "findings"):
        assert lake_rows.rows(tmp_path / "lake", name) == lake_rows.rows(tmp_path / "lake-alone", name), name


def test_a_feed_using_pack_and_round_ids_again_writes_the_unique_feeds_rows(tmp_path):
    reused, unique = tmp_path / "reused", tmp_path / "unique"
    for folder, second, restart in ((reused, "P-1", True), (unique, "P-2", False)):
        folder.mkdir()
        (folder / "floor.jsonl").write_bytes(jsonl(two_packs(second, restart_rounds=restart).events))
        run(folder, tmp_path / f"lake-{folder.name}")
    packs_back = {("P-1", 2): "P-2"}
    rounds_back = {("R-1", 2): "R-4", ("R-2", 2): "R-5", ("R-3", 2): "R-6"}
    got = {name: lake_rows.dicts(tmp_path / "lake-reused", name, with_runs=False) for name in ("packs", "rounds", "findings")}
    want = {name: lake_rows.dicts(tmp_path / "lake-unique", name, with_runs=False) for name in ("packs", "rounds", "findings")}
    assert sorted((p["pack_id"], p["pack_use"]) for p in got["packs"]) == [("P-1", 1), ("P-1", 2)]
    assert sorted(r["round_use"] for r in got["rounds"]) == [1, 1, 1, 2, 2, 2]
    assert all(p["pack_use"] == 1 for p in want["packs"]) and all(r["round_use"] == 1 for r in want["rounds"])
    for name in ("packs", "rounds"):
        assert as_unique(got[name], packs_back, rounds_back) == as_unique(want[name], {}, {}), name
    assert as_unique(got["findings"], packs_back, rounds_back, ["finding_id"]) == \
        as_unique(want["findings"], {}, {}, ["finding_id"])
    assert isinstance(got["packs"][0]["gaming_day"], dt.date)


def test_a_refused_line_stays_one_reject_when_its_night_is_replayed_again(tmp_path):
    """Nightly: the refused line's night read again whole (a late file came) rejects it again, once:
    one row of ``rejects``, and each run's counts add up."""
    from tests.pipelines.test_state_v1_lake import NIGHT_1, NIGHT_2, two_nights
    from tests.watch.scenario import event_json

    events = list(two_nights().events)
    at = next(i for i, e in enumerate(events) if e.type == "bets_closed" and e.round_id == "R-2")
    again = events[at]._replace(event_id="dt-again", type="round_started", game="baccarat", pack_id="P-1")
    events = renumbered(events[:at] + [again] + events[at:])
    cut = datetime_to_micros(dt.datetime(2026, 11, 29, 6, 0, tzinfo=dt.timezone.utc))
    inbox, lake = tmp_path / "inbox", tmp_path / "lake"
    for ev in events:
        f = inbox / (NIGHT_1 if ev.ts < cut else NIGHT_2) / f"{ev.device_id}.jsonl"
        f.parent.mkdir(parents=True, exist_ok=True)
        with f.open("a") as out:
            out.write(json.dumps(event_json(ev)) + "\n")

    def night(day):
        result = CliRunner().invoke(main, ["run", "--day", day, "--inbox", str(inbox), "--lake", str(lake)],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output

    night(NIGHT_1)
    (inbox / NIGHT_1 / "LATE.jsonl").write_text("not json\n")
    night(NIGHT_2)
    rejects = lake_rows.dicts(lake, "rejects")
    assert sorted((r["event_id"] or "", str(r["gaming_day"])) for r in rejects) == [
        ("", NIGHT_2), ("dt-again", NIGHT_1)]
    n = len(events)
    assert [(r["lines_read"], r["accepted"], r["rejected"], r["duplicates"]) for r in lake_rows.run_records(lake)] \
        == [(sum(1 for e in events if e.ts < cut), sum(1 for e in events if e.ts < cut) - 1, 1, 0),
            (n + 1, n - 1, 2, 0)]
    assert len(lake_rows.dicts(lake, "events")) == n - 1
