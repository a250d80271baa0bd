"""``pitwatch watch`` as a real process over growing files: the batch's findings, live, exactly once."""
from __future__ import annotations

import collections
import signal

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from pitwatch.lake.parquet import file_schema
from pitwatch.schemas.arrow import RUN_STAMPS
from tests.watch.conftest import append_lines
from tests.watch.equivalence import assert_alerts_are_rows
from tests.watch.scenario import interleave


def _ids(alerts) -> list[str]:
    return sorted(a["finding_id"] for a in alerts)


def _lake_alert_ids(lake, live_only: bool = False) -> list[str]:
    """The ids of the lake's alerts of findings (``live_only``: of the live-only alerts), and the schema."""
    part = ds.partitioning(pa.schema([("gaming_day", pa.date32())]), flavor="hive")
    t = ds.dataset(str(lake / "alerts"), format="parquet", partitioning=part).to_table()
    rows = t.select(["finding_id", "live_only"]).to_pylist()
    return sorted(r["finding_id"] for r in rows if bool(r["live_only"]) == live_only), t.schema


@pytest.mark.slow
def test_live_alerts_are_the_batch_findings(tmp_path, scenario, batch_ids, batch_rows, start_watch):
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    feeds.mkdir()
    w = start_watch(feeds, "--lake", lake, "--alerts-file", tmp_path / "alerts.jsonl",
                    "--finalize-at-stop", "--with-trigger")
    order = interleave(scenario, seed=1)
    append_lines(feeds, order)          # files appear while it runs: picked up from the folder
    w.caught_up(len(order))
    # UNSHUFFLED_PACK comes before the end of input, once the gap wait (5 s) after its first card ran out
    w.wait_for(lambda: any(a["rule_id"] == "UNSHUFFLED_PACK" for a in w.alerts), "the early UNSHUFFLED_PACK")
    live_before_end = _ids(w.alerts)
    assert w.stop(signal.SIGTERM) == 0
    # every finding the batch writes, raised once, with the same finding_id and every column
    assert _ids(w.alerts) == batch_ids
    assert_alerts_are_rows(w.alerts, batch_rows["findings"])
    # before the end of input everything was already out, the "no shuffle" decision too (pitwatch.live.early)
    assert live_before_end == batch_ids
    assert all(a["trigger"] is not None for a in w.alerts if a["rule_id"] != "UNSHUFFLED_PACK")
    # the other sinks hold the same alerts, with the findings columns
    with open(tmp_path / "alerts.jsonl") as f:
        assert sorted(a["finding_id"] for a in map(__import__("json").loads, f) if not a.get("live_only")) == batch_ids
    lake_ids, schema = _lake_alert_ids(lake)
    assert lake_ids == batch_ids
    with open(tmp_path / "alerts.jsonl") as f:          # the live-only alerts are in the table too
        assert _lake_alert_ids(lake, live_only=True)[0] == sorted(
            a["finding_id"] for a in map(__import__("json").loads, f) if a.get("live_only"))
    # every findings column but the batch run's stamps (an alert is no run's: schemas.arrow.RUN_STAMPS)
    assert set(file_schema("findings").names) - set(RUN_STAMPS) <= set(schema.names)
    assert not set(RUN_STAMPS) & set(schema.names)
    assert any("4 duplicates" in e for e in w.errors)


def test_alert_comes_the_moment_its_evidence_is_complete(tmp_path, scenario, start_watch):
    """BURN_SKIPPED at the first card of the first coup; CUT_PLACEMENT at the cut."""
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    w = start_watch(feeds, "--lake", lake, "--with-trigger", "--reorder-wait", "0")
    dealer = scenario["DT-1-BAC-A"]
    cut = next(i for i, line in enumerate(dealer) if '"type": "cut"' in line)
    append_lines(feeds, [("DT-1-BAC-A", line) for line in dealer[:cut + 1]])
    w.wait_for(lambda: any(a["rule_id"] == "CUT_PLACEMENT" for a in w.alerts), "CUT_PLACEMENT")
    alert = next(a for a in w.alerts if a["rule_id"] == "CUT_PLACEMENT")
    assert alert["trigger"]["line"] == cut + 1  # the cut line itself
    assert alert["trigger"]["event_id"] in alert["event_ids"]
    assert w.stop() == 0


@pytest.mark.slow
def test_kill_9_and_restart_loses_and_repeats_nothing(tmp_path, scenario, batch_ids, start_watch):
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    order = interleave(scenario, seed=2)
    cuts = [len(order) * 2 // 5, len(order) * 3 // 4]
    args = [feeds, "--lake", lake, "--alerts-file", tmp_path / "alerts.jsonl", "--finalize-at-stop"]
    runs = []
    # 1st run: no checkpoint before the kill (a restart replays from the start and must drop what was sent)
    w = start_watch(*args, "--checkpoint-every", "3600")
    append_lines(feeds, order[:cuts[0]])
    w.caught_up(cuts[0])
    assert w.stop(signal.SIGKILL) == -signal.SIGKILL
    runs.append(w.alerts)
    # 2nd run: checkpoints often; killed while lines are still arriving
    w = start_watch(*args, "--checkpoint-every", "0.05")
    w.caught_up(cuts[0])
    append_lines(feeds, order[cuts[0]:cuts[1]])
    w.wait_for(lambda: len(runs[0]) + len(w.alerts) > len(runs[0]), "an alert after the restart")
    assert w.stop(signal.SIGKILL) == -signal.SIGKILL
    runs.append(w.alerts)
    # 3rd run: the rest of the input, then a clean stop
    w = start_watch(*args, "--checkpoint-every", "0.05")
    append_lines(feeds, order[cuts[1]:])
    w.caught_up(len(order))
    assert w.stop() == 0
    runs.append(w.alerts)
    stdout_ids = [a["finding_id"] for run in runs for a in run]
    repeats = [i for i, n in collections.Counter(stdout_ids).items() if n > 1]
    assert sorted(set(stdout_ids)) == batch_ids          # none lost
    assert runs[0] and runs[1] or runs[2]
    # stdout: at most the one alert a kill can catch between its write and its journal record
    assert len(repeats) <= 1
    with open(tmp_path / "alerts.jsonl") as f:            # the file sink is read back: exactly once
        assert sorted(a["finding_id"] for a in map(__import__("json").loads, f) if not a.get("live_only")) == batch_ids
    lake_ids, _schema = _lake_alert_ids(lake)              # lake batches: exactly once
    assert lake_ids == batch_ids


@pytest.mark.slow
def test_duplicate_lines_do_not_repeat_alerts(tmp_path, scenario, batch_ids, start_watch):
    """Every line delivered twice (a re-sent file): the same alerts, once each."""
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    w = start_watch(feeds, "--lake", lake, "--finalize-at-stop")
    order = interleave(scenario, seed=3)
    append_lines(feeds, order)
    append_lines(tmp_path / "feeds" / "resent", order)
    w.caught_up(2 * len(order))
    assert w.stop() == 0
    assert _ids(w.alerts) == batch_ids
