"""``pitwatch watch --local`` (issues 29, 43): alerts in their table's local time (the lake's zone, or the
table's ``[display.tables]`` zone), whichever device wrote the evidence; the same instants as UTC."""
from __future__ import annotations

import datetime as _dt
import json
import signal

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from tests.watch.conftest import append_lines
from tests.watch.scenario import interleave

PR = _dt.timezone(_dt.timedelta(hours=-4))


def _in_puerto_rico(line: str) -> str:
    """The line with its ``ts`` written as a Puerto Rico terminal writes it (``-04:00``)."""
    row = json.loads(line)
    when = _dt.datetime.fromisoformat(row["ts"].replace("Z", "+00:00"))
    row["ts"] = when.astimezone(PR).isoformat(timespec="milliseconds")
    return json.dumps(row)


def _parse(text: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.slow
def test_watch_local_shows_every_alert_in_its_tables_zone_whichever_device_wrote(tmp_path, scenario, start_watch):
    devices = {d: [_in_puerto_rico(x) for x in lines] if d.startswith("DT-") else lines
               for d, lines in scenario.items()}
    feeds, lake = tmp_path / "feeds", tmp_path / "lake"
    feeds.mkdir()
    w = start_watch(feeds, "--lake", lake, "--finalize-at-stop", "--local", "--timezone", "America/Puerto_Rico")
    order = interleave(devices, seed=3)
    append_lines(feeds, order)
    w.caught_up(len(order))
    assert w.stop(signal.SIGTERM) == 0
    assert w.alerts
    for a in w.alerts:      # the shoes write Z, the terminals -04:00: one zone for the table
        assert a["ts"].endswith("-04:00") and a["evidence_from"].endswith("-04:00"), a
        assert _parse(a["evidence_from"]) <= _parse(a["ts"])
    assert {a["ts_offset"] for a in w.alerts} >= {-240, 0}
    assert w.provisional                                  # the provisional card alerts too
    for a in w.provisional:
        assert a["ts"].endswith("-04:00"), a
    # the lake's alerts/ hold the same instants (UTC), whatever --local showed
    part = ds.partitioning(pa.schema([("gaming_day", pa.date32())]), flavor="hive")
    stored = {r["finding_id"]: r for r in ds.dataset(str(lake / "alerts"), format="parquet",
                                                      partitioning=part).to_table().to_pylist()}
    for a in w.alerts:
        assert stored[a["finding_id"]]["ts"] == _parse(a["ts"])
        assert stored[a["finding_id"]]["ts_offset"] == a["ts_offset"]
